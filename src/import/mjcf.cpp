// MJCF through MuJoCo's own compiler: mj_loadXML reads the file (includes, defaults, inertia from
// geoms) exactly as MuJoCo does; the compiled mjModel's bodies, joints, inertias and equality
// constraints are mapped onto a link tree at the reference configuration qpos0.
//
// MuJoCo composes a body's joints in order, each in the frame the earlier ones turned
// (mj_kinematics): R = R0 Rot(a1, q1) Rot(a2, q2) ... about their anchors. One treedyn joint does
// the same when the joints are one hinge, slide, ball or free joint; two hinges at one anchor
// with perpendicular axes (universal: first axis in the parent, second in the child); a hinge
// and a slide along one axis (cylindrical); three hinges at one anchor with independent axes
// (spherical: the same motion, other coordinates). Any other combination goes through connector
// bodies (ImportOptions::connector_mass_fraction), an approximation the warnings state.
#include "treedyn/model_import.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <utility>

#include "import/link_tree.hpp"

#ifdef TREEDYN_HAVE_MUJOCO
#include <mujoco/mujoco.h>
#endif

namespace treedyn {

#ifndef TREEDYN_HAVE_MUJOCO
ImportedModel import_mjcf_file(const std::string& path, const ImportOptions&) { importing::not_built(path, "MJCF", "libmujoco-dev"); }
#else

namespace {

using namespace importing;

std::string number(double x) {
  std::ostringstream s;
  s << x;  // 1e-06, not to_string's 0.000001
  return s.str();
}

Vec3 vec3(const mjtNum* v) { return {v[0], v[1], v[2]}; }
Mat3 rotation(const mjtNum* wxyz) { return Quat(wxyz[0], wxyz[1], wxyz[2], wxyz[3]).normalized().toRotationMatrix(); }

struct Compiled {
  std::unique_ptr<mjModel, void (*)(mjModel*)> m{nullptr, mj_deleteModel};
  std::unique_ptr<mjData, void (*)(mjData*)> d{nullptr, mj_deleteData};
};

Compiled compile(const std::string& path) {
  if (!std::filesystem::exists(path)) throw ModelError(path + ": cannot open the model file");
  char error[1000] = "";
  Compiled c;
  c.m.reset(mj_loadXML(path.c_str(), nullptr, error, sizeof error));
  if (!c.m) throw ModelError(path + ": MuJoCo could not read the MJCF file: " + std::string(error));
  c.d.reset(mj_makeData(c.m.get()));  // qpos = qpos0
  mj_kinematics(c.m.get(), c.d.get());
  return c;
}

class MjcfMapper {
 public:
  MjcfMapper(const mjModel& m, const mjData& d, const std::string& path, const ImportOptions& options)
      : m_(m), d_(d), options_(options) {
    tree_.source = path;
    source_ = path;
    const std::string model_name = m.names[0] ? std::string(m.names) : std::filesystem::path(path).stem().string();
    tree_.name = model_name;
    tree_.description = "imported from " + std::filesystem::path(path).filename().string() + " (MJCF, MuJoCo " +
                        mj_versionString() + ")";
    tree_.world = kGroundName;
    tree_.gravity = vec3(m.opt.gravity);
  }

  LinkTree map() {
    for (int b = 1; b < m_.nbody; ++b) add_body(b);
    for (int e = 0; e < m_.neq; ++e) add_equality(e);
    return std::move(tree_);
  }
  const std::vector<std::string>& connectors() const { return connectors_; }

 private:
  std::string body_name(int b) const {
    if (b == 0) return kGroundName;
    const char* n = mj_id2name(&m_, mjOBJ_BODY, b);
    return n ? n : "body" + std::to_string(b);
  }
  std::string joint_name(int j) const {
    const char* n = mj_id2name(&m_, mjOBJ_JOINT, j);
    return n ? n : body_name(m_.jnt_bodyid[j]) + "_joint" + std::to_string(j - m_.body_jntadr[m_.jnt_bodyid[j]]);
  }
  Pose body_pose(int b) const { return {vec3(d_.xpos + 3 * b), rotation(d_.xquat + 4 * b)}; }

  void add_body(int b) {
    Link l;
    l.name = body_name(b);
    l.element = "body '" + l.name + "'";
    l.mass = m_.body_mass[b];
    l.inertial = {vec3(m_.body_ipos + 3 * b), rotation(m_.body_iquat + 4 * b)};
    l.inertia = vec3(m_.body_inertia + 3 * b).asDiagonal();
    l.pose = body_pose(b);
    if (m_.body_mocapid[b] >= 0) mocap_.push_back(l.name);
    const int parent = m_.body_parentid[b];
    const Pose in_parent = body_pose(parent).inverse() * l.pose;  // the body frame in its parent's
    std::vector<int> joints;
    for (int k = 0; k < m_.body_jntnum[b]; ++k) joints.push_back(m_.body_jntadr[b] + k);
    tree_.links.push_back(l);
    if (joints.empty()) {  // welded to its parent
      tree_.joints.push_back({l.name + "_weld", "body '" + l.name + "' (no joint: welded)", JointType::Fixed,
                              body_name(parent), l.name, in_parent, Pose{}});
      return;
    }
    if (!add_single_joint(b, joints, in_parent)) add_connected_joints(b, joints, in_parent);
  }

  /// The joints of body b as one treedyn joint, if one reproduces them exactly.
  bool add_single_joint(int b, const std::vector<int>& j, const Pose& in_parent) {
    const std::string child = body_name(b), parent = body_name(m_.body_parentid[b]);
    auto type = [&](int k) { return m_.jnt_type[j[static_cast<std::size_t>(k)]]; };
    auto anchor = [&](int k) { return vec3(m_.jnt_pos + 3 * j[static_cast<std::size_t>(k)]); };
    auto axis = [&](int k) { return vec3(m_.jnt_axis + 3 * j[static_cast<std::size_t>(k)]).normalized(); };
    // Anchors count as one point to 1e-9 of the body's offset from its parent (round-off of the
    // file's numbers), not closer.
    const double tolerance = 1e-9 * (1.0 + offset_from_parent(b));
    auto same_anchor = [&](int a, int c) { return (anchor(a) - anchor(c)).norm() <= tolerance; };
    std::string name;
    for (int k : j) name += (name.empty() ? "" : "+") + joint_name(k);
    const std::string element = j.size() == 1 ? "joint '" + name + "'" : "joints '" + name + "' of body '" + child + "'";
    auto add = [&](JointType t, const Vec3& at, const Mat3& R) {
      tree_.joints.push_back({name, element, t, parent, child, in_parent * Pose{at, R}, Pose{at, R}});
      return true;
    };
    const std::size_t n = j.size();
    if (n == 1) {
      const auto [t, R] = joint_of(j[0], element);
      return add(t, t == JointType::Free ? Vec3::Zero() : anchor(0), R);
    }
    const bool all_hinges = std::all_of(j.begin(), j.end(), [&](int k) { return m_.jnt_type[k] == mjJNT_HINGE; });
    if (n == 2 && all_hinges && same_anchor(0, 1) && std::abs(axis(0).dot(axis(1))) <= 1e-12)
      return add(JointType::Universal, anchor(0), importing::frame_with_z(axis(0), element, axis(1)));
    if (n == 2 && type(0) + type(1) == mjJNT_HINGE + mjJNT_SLIDE && axis(0).cross(axis(1)).norm() <= 1e-12) {
      const int hinge = type(0) == mjJNT_HINGE ? 0 : 1;
      return add(JointType::Cylindrical, anchor(hinge), importing::frame_with_z(axis(hinge), element));
    }
    if (n == 3 && all_hinges && same_anchor(0, 1) && same_anchor(0, 2)) {
      Mat3 axes;
      for (int k = 0; k < 3; ++k) axes.col(k) = axis(k);
      if (std::abs(axes.determinant()) > 1e-9) return add(JointType::Spherical, anchor(0), Mat3::Identity());
    }
    return false;
  }

  double offset_from_parent(int b) const { return vec3(m_.body_pos + 3 * b).norm(); }

  /// One MuJoCo joint as a treedyn joint type and its frame's rotation (z along the axis).
  std::pair<JointType, Mat3> joint_of(int jk, const std::string& who) const {
    switch (m_.jnt_type[jk]) {
      case mjJNT_FREE: return {JointType::Free, Mat3::Identity()};
      case mjJNT_BALL: return {JointType::Spherical, Mat3::Identity()};
      case mjJNT_HINGE: return {JointType::Revolute, frame_with_z(vec3(m_.jnt_axis + 3 * jk), who)};
      case mjJNT_SLIDE: return {JointType::Prismatic, frame_with_z(vec3(m_.jnt_axis + 3 * jk), who)};
      default: throw ModelError(tree_.source + ": " + who + ": unknown MuJoCo joint type " + std::to_string(m_.jnt_type[jk]));
    }
  }

  /// Joints j1..jk of body b in series through k - 1 connector bodies that share the body's
  /// frame at qpos0, each with a fraction of its mass and inertia.
  void add_connected_joints(int b, const std::vector<int>& j, const Pose& in_parent) {
    const std::string child = body_name(b);
    const double eps = options_.connector_mass_fraction;
    std::string names;
    for (int k : j) names += (names.empty() ? "" : ", ") + ("'" + joint_name(k) + "'");
    if (!(eps > 0.0) || !(eps * static_cast<double>(j.size()) < 0.5))
      throw ModelError(tree_.source + ": body '" + child + "': its joints " + names +
                       " are not one treedyn joint (not at one anchor with perpendicular or independent axes), and"
                       " connector bodies are off (connector_mass_fraction " + number(eps) + ")");
    Link& body = tree_.links.back();
    const Link whole = body;
    const double kept = 1.0 - eps * static_cast<double>(j.size() - 1);
    body.mass *= kept;
    body.inertia *= kept;
    std::string previous = body_name(m_.body_parentid[b]);
    for (std::size_t k = 0; k < j.size(); ++k) {
      const int jk = j[k];
      const std::string name = joint_name(jk);
      const std::string next = k + 1 == j.size() ? child : child + "/" + name;
      if (k + 1 < j.size()) {
        Link c = whole;
        c.name = next;
        c.element = "connector body '" + next + "'";
        c.mass = eps * whole.mass;
        c.inertia = eps * whole.inertia;
        tree_.links.push_back(c);
        connectors_.push_back(next);
      }
      const auto [t, R] = joint_of(jk, "joint '" + name + "'");
      if (t == JointType::Free)
        throw ModelError(tree_.source + ": body '" + child + "': a free joint among other joints (" + names + ")");
      const Pose frame{vec3(m_.jnt_pos + 3 * jk), R};
      tree_.joints.push_back({name, "joint '" + name + "'", t, previous, next, k == 0 ? in_parent * frame : frame, frame});
      previous = next;
    }
  }

  void add_equality(int e) {
    const char* n = mj_id2name(&m_, mjOBJ_EQUALITY, e);
    const std::string name = n ? n : "equality" + std::to_string(e);
    const std::string element = "equality '" + name + "'";
    if (!m_.eq_active[e]) {
      inactive_.push_back(name);
      return;
    }
    const mjtNum* data = m_.eq_data + mjNEQDATA * e;
    const int b1 = m_.eq_obj1id[e], b2 = m_.eq_obj2id[e];
    switch (m_.eq_type[e]) {
      case mjEQ_CONNECT: {  // data: the anchor in body 1's frame, then in body 2's (the compiler's, at qpos0)
        const Pose on1{vec3(data), Mat3::Identity()}, on2{vec3(data + 3), Mat3::Identity()};
        if (b2 == 0) tree_.joints.push_back({name, element, JointType::Spherical, body_name(0), body_name(b1), body_pose(0) * on2, on1});
        else tree_.joints.push_back({name, element, JointType::Spherical, body_name(b1), body_name(b2), on1, on2});
        return;
      }
      case mjEQ_WELD: {
        // data: anchor (3), then body 2's pose in body 1's frame (3 + quaternion 4): the file's
        // relpose, or the compiler's from qpos0. A relpose other than qpos0's is kept, so the
        // initial state then violates the weld and is refused (or assembled) as any other.
        const Pose rel{vec3(data + 3), rotation(data + 6)};
        if (b2 == 0) tree_.joints.push_back({name, element, JointType::Fixed, body_name(0), body_name(b1), rel.inverse(), Pose{}});
        else tree_.joints.push_back({name, element, JointType::Fixed, body_name(b1), body_name(b2), rel, Pose{}});
        return;
      }
      case mjEQ_JOINT: throw ModelError(tree_.source + ": " + element + ": a joint coupling (polynomial) cannot be represented in treedyn");
      case mjEQ_TENDON: throw ModelError(tree_.source + ": " + element + ": a tendon coupling cannot be represented in treedyn");
      default: throw ModelError(tree_.source + ": " + element + ": equality type " + std::to_string(m_.eq_type[e]) + " cannot be represented in treedyn");
    }
  }

 public:
  /// One line listing what the file holds that the mapped model leaves out.
  std::vector<std::string> dropped() const {
    std::vector<std::string> limited, damped, springy, armature, friction, contact, actuators, tendons;
    for (int j = 0; j < m_.njnt; ++j) {
      const int dof = m_.jnt_dofadr[j];
      const int ndof = m_.jnt_type[j] == mjJNT_FREE ? 6 : m_.jnt_type[j] == mjJNT_BALL ? 3 : 1;
      bool d = false, a = false, f = false;
      for (int k = dof; k < dof + ndof; ++k) {
        d = d || m_.dof_damping[k] != 0.0;
        a = a || m_.dof_armature[k] != 0.0;
        f = f || m_.dof_frictionloss[k] != 0.0;
      }
      if (m_.jnt_limited[j]) limited.push_back(joint_name(j));
      if (d) damped.push_back(joint_name(j));
      if (a) armature.push_back(joint_name(j));
      if (f) friction.push_back(joint_name(j));
      if (m_.jnt_stiffness[j] != 0.0) springy.push_back(joint_name(j));
    }
    auto name = [&](int type, int id, const char* prefix) {
      const char* n = mj_id2name(&m_, type, id);
      return n ? std::string(n) : prefix + std::to_string(id);
    };
    if (!(m_.opt.disableflags & mjDSBL_CONTACT))
      for (int g = 0; g < m_.ngeom; ++g)
        if (m_.geom_contype[g] || m_.geom_conaffinity[g]) contact.push_back(name(mjOBJ_GEOM, g, "geom"));
    for (int u = 0; u < m_.nu; ++u) actuators.push_back(name(mjOBJ_ACTUATOR, u, "actuator"));
    for (int t = 0; t < m_.ntendon; ++t) tendons.push_back(name(mjOBJ_TENDON, t, "tendon"));
    LeftOut left;
    left.counted("contacts of", "geoms", contact);
    left.counted("limits of", "joints", limited);
    left.counted("damping of", "joints", damped);
    left.counted("stiffness of", "joints", springy);
    left.counted("armature of", "joints", armature);
    left.counted("friction loss of", "joints", friction);
    left.counted("", "actuators", actuators);
    left.counted("", "tendons", tendons);
    left.add("inactive equality constraints", inactive_);
    left.add("mocap motion (mocap bodies are welded where they start)", mocap_);
    return left.warning(source_);  // tree_ is moved out by map()
  }

 private:
  const mjModel& m_;
  const mjData& d_;
  const ImportOptions& options_;
  LinkTree tree_;
  std::string source_;
  std::vector<std::string> connectors_, inactive_, mocap_;
};

}  // namespace

ImportedModel import_mjcf_file(const std::string& path, const ImportOptions& options) {
  Compiled c = compile(path);
  MjcfMapper mapper(*c.m, *c.d, path, options);
  LinkTree tree = mapper.map();
  ImportedModel out{importing::build_model(std::move(tree)), mapper.dropped()};
  if (!mapper.connectors().empty())
    out.warnings.push_back(path + ": joints that no single treedyn joint reproduces are joined through " +
                           std::to_string(mapper.connectors().size()) + " connector bodies (" +
                           importing::listed(mapper.connectors(), 4) + "), each carrying " +
                           number(options.connector_mass_fraction) +
                           " of its body's mass and inertia: the dynamics differ from MuJoCo's massless joint chain by about that fraction");
  return out;
}

#endif

}  // namespace treedyn
