// SDFormat through libsdformat (sdf::Root::Load): one model, from the file's <model> or from its
// world's only model. Poses are resolved by libsdformat's pose graph into the model frame; joint
// axes into the joint frame. SDFormat's joints form a graph, so a joint whose child already has a
// parent closes a loop: treedyn's spanning tree takes care of that. A link that is no joint's
// child floats (SDFormat's convention): it gets a free joint to the world; a static model is
// welded to it.
//
// In a shared libtreedyn this file is its own module, libtreedyn_sdf.so, which sdf_module.cpp
// loads the first time a .sdf file is read: libsdformat and ignition-math compile about twenty
// std::regex when they are loaded (some 300 million instructions, about 0.05 s, and 0.7 s under
// the sanitizers), which every program linked with libtreedyn paid at its start. In a static
// libtreedyn it is compiled in (TREEDYN_SDF_IN_LIBRARY).
#include "treedyn/model_import.hpp"

#include <filesystem>
#include <set>

#include "import/link_tree.hpp"

#ifdef TREEDYN_HAVE_SDFORMAT
#include <sdf/sdf.hh>
#endif

namespace treedyn {

#ifndef TREEDYN_HAVE_SDFORMAT
ImportedModel import_sdf_file(const std::string& path, const ImportOptions&) { importing::not_built(path, "SDFormat", "libsdformat-dev"); }
#else

namespace {

using namespace importing;

Vec3 vec3(const ignition::math::Vector3d& v) { return {v.X(), v.Y(), v.Z()}; }
Pose pose(const ignition::math::Pose3d& p) {
  const auto& q = p.Rot();
  return {vec3(p.Pos()), Quat(q.W(), q.X(), q.Y(), q.Z()).normalized().toRotationMatrix()};
}

std::string errors_text(const sdf::Errors& errors, const std::string& path) {
  std::string text;
  for (const sdf::Error& e : errors) {
    text += "\n  " + e.FilePath().value_or(path);
    if (e.LineNumber()) text += ":" + std::to_string(*e.LineNumber());
    text += ": " + e.Message();
  }
  return text;
}

class SdfMapper {
 public:
  SdfMapper(const sdf::Model& model, const std::string& path, const Vec3& gravity) : model_(model) {
    tree_.source = path;
    source_ = path;
    tree_.name = model.Name();
    tree_.description = "imported from " + std::filesystem::path(path).filename().string() + " (SDFormat)";
    tree_.world = "world";
    tree_.gravity = gravity;
  }

  LinkTree map() {
    if (model_.ModelCount() > 0)
      throw ModelError(tree_.source + ": model '" + model_.Name() + "' holds nested models, which treedyn does not import");
    for (uint64_t i = 0; i < model_.LinkCount(); ++i) add_link(*model_.LinkByIndex(i));
    std::set<std::string> children;
    for (uint64_t i = 0; i < model_.JointCount(); ++i) {
      add_joint(*model_.JointByIndex(i));
      children.insert(model_.JointByIndex(i)->ChildLinkName());
    }
    for (const Link& l : std::vector<Link>(tree_.links))  // links no joint holds: floating, or static
      if (!children.count(l.name))
        tree_.joints.push_back({l.name + (model_.Static() ? "_static" : "_free"), "link '" + l.name + "' (no parent joint)",
                                model_.Static() ? JointType::Fixed : JointType::Free, tree_.world, l.name, l.pose, Pose{}});
    return std::move(tree_);
  }

  std::vector<std::string> warnings() const {
    LeftOut left;
    left.counted("limits of", "joints", limited_);
    left.counted("damping, friction or springs of", "joints", damped_);
    left.counted("collision geometry of", "links", colliding_);
    return left.warning(source_);
  }

 private:
  Pose resolved(const sdf::SemanticPose& p, const std::string& who) const {
    ignition::math::Pose3d out;
    const sdf::Errors e = p.Resolve(out, "__model__");
    if (!e.empty()) throw ModelError(tree_.source + ": " + who + ": its pose cannot be resolved:" + errors_text(e, tree_.source));
    return pose(out);
  }

  void add_link(const sdf::Link& s) {
    Link l;
    l.name = s.Name();
    l.element = "link '" + l.name + "'";
    l.pose = resolved(s.SemanticPose(), l.element);
    const ignition::math::Inertiald& in = s.Inertial();
    l.mass = in.MassMatrix().Mass();
    l.inertial = pose(in.Pose());
    const auto& I = in.MassMatrix().Moi();
    for (int r = 0; r < 3; ++r)
      for (int c = 0; c < 3; ++c) l.inertia(r, c) = I(r, c);
    if (s.CollisionCount() > 0) colliding_.push_back(l.name);
    tree_.links.push_back(l);
  }

  Vec3 axis(const sdf::Joint& j, unsigned index, const std::string& who) const {
    const sdf::JointAxis* a = j.Axis(index);
    if (!a) throw ModelError(tree_.source + ": " + who + ": no <axis" + (index ? "2" : "") + ">");
    ignition::math::Vector3d xyz;
    const sdf::Errors e = a->ResolveXyz(xyz, j.Name());
    if (!e.empty()) throw ModelError(tree_.source + ": " + who + ": its axis cannot be resolved:" + errors_text(e, tree_.source));
    return vec3(xyz);
  }

  void add_joint(const sdf::Joint& j) {
    const std::string who = "joint '" + j.Name() + "'";
    Mat3 R = Mat3::Identity();
    JointType t = JointType::Revolute;
    switch (j.Type()) {
      case sdf::JointType::REVOLUTE:
      case sdf::JointType::CONTINUOUS: R = importing::frame_with_z(axis(j, 0, who), who); break;
      case sdf::JointType::PRISMATIC:
        t = JointType::Prismatic;
        R = importing::frame_with_z(axis(j, 0, who), who);
        break;
      case sdf::JointType::BALL: t = JointType::Spherical; break;
      case sdf::JointType::FIXED: t = JointType::Fixed; break;
      case sdf::JointType::UNIVERSAL:
      case sdf::JointType::REVOLUTE2: {
        const Vec3 a1 = axis(j, 0, who), a2 = axis(j, 1, who);
        if (std::abs(a1.normalized().dot(a2.normalized())) > 1e-9)
          throw ModelError(tree_.source + ": " + who + ": its two axes are not perpendicular; treedyn's universal joint needs them so");
        t = JointType::Universal;
        R = importing::frame_with_z(a1, who, a2);
        break;
      }
      case sdf::JointType::SCREW: throw ModelError(tree_.source + ": " + who + ": screw joints cannot be represented in treedyn");
      case sdf::JointType::GEARBOX: throw ModelError(tree_.source + ": " + who + ": gearbox joints cannot be represented in treedyn");
      default: throw ModelError(tree_.source + ": " + who + ": unknown joint type");
    }
    const Pose frame = resolved(j.SemanticPose(), who) * Pose{Vec3::Zero(), R};  // in the model frame
    const std::string parent = j.ParentLinkName(), child = j.ChildLinkName();
    auto on = [&](const std::string& link) {
      if (link == tree_.world) return frame;
      for (const Link& l : tree_.links)
        if (l.name == link) return l.pose.inverse() * frame;
      throw ModelError(tree_.source + ": " + who + " names an unknown link '" + link + "'");
    };
    tree_.joints.push_back({j.Name(), who, t, parent, child, on(parent), on(child)});
    for (unsigned k = 0; k < 2; ++k)
      if (const sdf::JointAxis* a = j.Axis(k)) {
        if (a->Lower() > -1e16 || a->Upper() < 1e16) limited_.push_back(j.Name());
        if (a->Damping() != 0.0 || a->Friction() != 0.0 || a->SpringStiffness() != 0.0) damped_.push_back(j.Name());
      }
  }

  const sdf::Model& model_;
  LinkTree tree_;
  std::string source_;  // tree_ is moved out by map(); warnings() comes after
  std::vector<std::string> limited_, damped_, colliding_;
};

ImportedModel read_sdf(const std::string& path) {
  if (!std::filesystem::exists(path)) throw ModelError(path + ": cannot open the model file");
  sdf::Console::Instance()->SetQuiet(true);  // its errors come back in `errors`, named below
  sdf::Root root;
  const sdf::Errors errors = root.Load(path);
  if (!errors.empty()) throw ModelError(path + ": libsdformat could not read the file:" + errors_text(errors, path));
  const sdf::Model* model = root.Model();
  Vec3 gravity{0.0, 0.0, -9.8};  // SDFormat's default
  if (!model && root.WorldCount() > 0) {
    const sdf::World* world = root.WorldByIndex(0);
    gravity = vec3(world->Gravity());
    if (world->ModelCount() != 1)
      throw ModelError(path + ": world '" + world->Name() + "' holds " + std::to_string(world->ModelCount()) +
                       " models; treedyn imports a file with one model");
    model = world->ModelByIndex(0);
  }
  if (!model) throw ModelError(path + ": no <model> in the file");
  SdfMapper mapper(*model, path, gravity);
  LinkTree tree = mapper.map();
  return {importing::build_model(std::move(tree)), mapper.warnings()};
}

}  // namespace

#ifdef TREEDYN_SDF_IN_LIBRARY
ImportedModel import_sdf_file(const std::string& path, const ImportOptions&) { return read_sdf(path); }
#else
/// The module's entry (sdf_module.cpp looks it up by this name): the model read from `path`
/// into `out`. C linkage for an unmangled name; errors are thrown as ModelError, as in-library.
extern "C" [[gnu::visibility("default")]] void treedyn_read_sdf(const std::string& path, ImportedModel& out) {
  out = read_sdf(path);
}
#endif

#endif

}  // namespace treedyn
