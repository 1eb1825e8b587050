// URDF through liburdfdom (urdf::parseURDF): links, inertials, joints, visuals. URDF's tree has
// no loop-closing joints; treedyn reads the <constraint> elements proposed for urdfdom (ros/urdfdom
// pull request 264) as loop joints, with TinyXML, the parser urdfdom itself uses, and urdfdom's own
// pose reader:
//   <constraint name="..." type="revolute">
//     <parent link="A"/> <parent_origin xyz="..." rpy="..."/> <parent_axis xyz="..."/>
//     <child link="B"/>  <child_origin xyz="..." rpy="..."/>  <child_axis xyz="..."/>
//   </constraint>
// The origins are the joint frame on each link, in that link's frame; the axes are given in those
// joint frames (parent_axis: the joint axis; child_axis: a universal joint's second axis).
// The root link is welded to the world (ROS's convention for a fixed base) unless it is named
// "world"; a floating base is a `floating` joint from a link named "world".
#include "treedyn/model_import.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "import/link_tree.hpp"

#ifdef TREEDYN_HAVE_URDFDOM
#include <console_bridge/console.h>
#include <urdf_parser/urdf_parser.h>
#endif

namespace treedyn {

#ifndef TREEDYN_HAVE_URDFDOM
ImportedModel import_urdf_file(const std::string& path, const ImportOptions&) { importing::not_built(path, "URDF", "liburdfdom-dev"); }
#else

namespace {

using namespace importing;

Vec3 vec3(const urdf::Vector3& v) { return {v.x, v.y, v.z}; }
Pose pose(const urdf::Pose& p) {
  return {vec3(p.position), Quat(p.rotation.w, p.rotation.x, p.rotation.y, p.rotation.z).normalized().toRotationMatrix()};
}

/// Collects what urdfdom reports through console_bridge while it parses (it returns only null).
class ConsoleCapture : public console_bridge::OutputHandler {
 public:
  ConsoleCapture() : lock_(mutex()) { console_bridge::useOutputHandler(this); }
  ~ConsoleCapture() override { console_bridge::restorePreviousOutputHandler(); }
  void log(const std::string& text, console_bridge::LogLevel level, const char*, int) override {
    if (level >= console_bridge::CONSOLE_BRIDGE_LOG_ERROR) errors += (errors.empty() ? "" : "; ") + text;
  }
  std::string errors;

 private:
  static std::mutex& mutex() {
    static std::mutex m;
    return m;
  }
  std::lock_guard<std::mutex> lock_;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ModelError(path + ": cannot open the model file");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

class UrdfMapper {
 public:
  UrdfMapper(const urdf::ModelInterface& urdf, const std::string& path, const ImportOptions& options) : urdf_(urdf) {
    tree_.source = path;
    source_ = path;
    tree_.name = urdf.getName().empty() ? std::filesystem::path(path).stem().string() : urdf.getName();
    tree_.description = "imported from " + std::filesystem::path(path).filename().string() + " (URDF)";
    tree_.world = "world";
    tree_.gravity = options.default_gravity;
    dir_ = std::filesystem::path(path).parent_path();
  }

  LinkTree map(const TiXmlElement* robot) {
    const urdf::LinkConstSharedPtr root = urdf_.getRoot();
    if (!root) throw ModelError(tree_.source + ": the URDF has no root link");
    if (root->name != tree_.world) {
      add_link(*root, Pose{});
      tree_.joints.push_back({root->name + "_to_world", "the root link '" + root->name + "' (welded to the world)",
                              JointType::Fixed, tree_.world, root->name, Pose{}, Pose{}});
    } else if (root->inertial && root->inertial->mass > 0.0) {
      warnings_.push_back(tree_.source + ": the link 'world' is the world: its inertial data is ignored");
    }
    add_children(*root, Pose{});
    for (const TiXmlElement* c = robot->FirstChildElement("constraint"); c; c = c->NextSiblingElement("constraint"))
      add_constraint(*c);
    return std::move(tree_);
  }

  std::vector<std::string> warnings() const {
    LeftOut left;
    left.counted("limits of", "joints", limited_);
    left.counted("damping or friction of", "joints", damped_);
    left.counted("mimic couplings of", "joints (the joints move freely)", mimic_);
    left.counted("collision geometry of", "links", colliding_);
    std::vector<std::string> out = warnings_;
    for (const std::string& w : left.warning(source_)) out.push_back(w);
    if (!missing_meshes_.empty())
      out.push_back(source_ + ": mesh files not found (those links are drawn as their inertia boxes): " + listed(missing_meshes_, 4));
    return out;
  }

 private:
  void add_children(const urdf::Link& link, const Pose& link_pose) {
    for (const urdf::JointSharedPtr& j : link.child_joints) {
      const urdf::LinkConstSharedPtr child = urdf_.getLink(j->child_link_name);
      const Pose origin = pose(j->parent_to_joint_origin_transform);
      const Pose child_pose = link_pose * origin;
      add_link(*child, child_pose);
      add_joint(*j, origin);
      add_children(*child, child_pose);
    }
  }

  void add_link(const urdf::Link& u, const Pose& at) {
    Link l;
    l.name = u.name;
    l.element = "link '" + u.name + "'";
    l.pose = at;
    if (u.inertial) {
      const urdf::Inertial& i = *u.inertial;
      l.mass = i.mass;
      if (!(i.mass > 0.0)) l.mass = i.mass == 0.0 ? 0.0 : i.mass;  // negative: reported by build_model
      l.inertial = pose(i.origin);
      l.inertia << i.ixx, i.ixy, i.ixz, i.ixy, i.iyy, i.iyz, i.ixz, i.iyz, i.izz;
    }
    l.shape = shape_of(u, l.inertial);
    if (!u.collision_array.empty()) colliding_.push_back(u.name);
    tree_.links.push_back(l);
  }

  /// The link's visual as a treedyn shape when it is a primitive centred on the centre of mass
  /// with the inertial axes (treedyn's shapes sit there); otherwise none (the inertia box).
  Shape shape_of(const urdf::Link& u, const Pose& inertial) {
    Shape s;
    for (const urdf::VisualSharedPtr& v : u.visual_array) {
      if (!v || !v->geometry) continue;
      if (v->geometry->type == urdf::Geometry::MESH) {
        const auto& mesh = static_cast<const urdf::Mesh&>(*v->geometry);
        std::string file = mesh.filename;
        if (file.rfind("file://", 0) == 0) file = file.substr(7);
        const std::filesystem::path p = std::filesystem::path(file).is_absolute() ? std::filesystem::path(file) : dir_ / file;
        if (file.rfind("package://", 0) == 0 || !std::filesystem::exists(p)) missing_meshes_.push_back(mesh.filename);
        continue;
      }
      if (u.visual_array.size() != 1) continue;
      const Pose rel = inertial.inverse() * pose(v->origin);
      if (rel.p.norm() > 1e-9 || !rel.R.isApprox(Mat3::Identity(), 1e-9)) continue;
      switch (v->geometry->type) {
        case urdf::Geometry::BOX:
          s.type = Shape::Type::Box;
          s.size = vec3(static_cast<const urdf::Box&>(*v->geometry).dim);
          break;
        case urdf::Geometry::SPHERE:
          s.type = Shape::Type::Sphere;
          s.radius = static_cast<const urdf::Sphere&>(*v->geometry).radius;
          break;
        case urdf::Geometry::CYLINDER:
          s.type = Shape::Type::Cylinder;
          s.radius = static_cast<const urdf::Cylinder&>(*v->geometry).radius;
          s.length = static_cast<const urdf::Cylinder&>(*v->geometry).length;
          s.axis = 2;
          break;
        default: break;
      }
    }
    return s;
  }

  JointType type_of(int urdf_type, const std::string& element) const {
    switch (urdf_type) {
      case urdf::Joint::REVOLUTE:
      case urdf::Joint::CONTINUOUS: return JointType::Revolute;
      case urdf::Joint::PRISMATIC: return JointType::Prismatic;
      case urdf::Joint::FLOATING: return JointType::Free;
      case urdf::Joint::PLANAR: return JointType::Planar;
      case urdf::Joint::FIXED: return JointType::Fixed;
      default: throw ModelError(tree_.source + ": " + element + ": unknown joint type");
    }
  }

  void add_joint(const urdf::Joint& j, const Pose& origin) {
    const std::string element = "joint '" + j.name + "'";
    const JointType t = type_of(j.type, element);
    const bool has_axis = t == JointType::Revolute || t == JointType::Prismatic || t == JointType::Planar;
    const Mat3 R = has_axis ? importing::frame_with_z(vec3(j.axis), element) : Mat3::Identity();
    tree_.joints.push_back({j.name, element, t, j.parent_link_name, j.child_link_name, origin * Pose{Vec3::Zero(), R},
                            Pose{Vec3::Zero(), R}});
    if (j.limits && j.type != urdf::Joint::CONTINUOUS && (j.type == urdf::Joint::REVOLUTE || j.type == urdf::Joint::PRISMATIC))
      limited_.push_back(j.name);
    if (j.dynamics && (j.dynamics->damping != 0.0 || j.dynamics->friction != 0.0)) damped_.push_back(j.name);
    if (j.mimic) mimic_.push_back(j.name);
  }

  /// A <constraint> element: a loop-closing joint.
  void add_constraint(const TiXmlElement& c) {
    const char* name = c.Attribute("name");
    const std::string element = "constraint '" + std::string(name ? name : "") + "' (line " + std::to_string(c.Row()) + ")";
    if (!name || !*name) throw ModelError(tree_.source + ": " + element + ": no name");
    const char* type = c.Attribute("type");
    const std::map<std::string, JointType> types{{"revolute", JointType::Revolute},   {"continuous", JointType::Revolute},
                                                  {"prismatic", JointType::Prismatic}, {"fixed", JointType::Fixed},
                                                  {"spherical", JointType::Spherical}, {"ball", JointType::Spherical},
                                                  {"universal", JointType::Universal}, {"cylindrical", JointType::Cylindrical},
                                                  {"planar", JointType::Planar}};
    const auto t = types.find(type ? type : "");
    if (t == types.end())
      throw ModelError(tree_.source + ": " + element + ": unknown type '" + (type ? type : "") +
                       "' (revolute, continuous, prismatic, cylindrical, universal, spherical, planar, fixed)");
    auto end = [&](const char* side) {
      const TiXmlElement* e = c.FirstChildElement(side);
      const char* link = e ? e->Attribute("link") : nullptr;
      if (!link) throw ModelError(tree_.source + ": " + element + ": no <" + side + " link=\"...\"/>");
      if (!urdf_.getLink(link) && link != tree_.world)
        throw ModelError(tree_.source + ": " + element + ": <" + side + "> names an unknown link '" + link + "'");
      return std::string(link);
    };
    auto origin = [&](const std::string& side) {
      urdf::Pose p;
      const TiXmlElement* e = c.FirstChildElement((side + "_origin").c_str());
      if (e && !urdf::parsePose(p, const_cast<TiXmlElement*>(e)))
        throw ModelError(tree_.source + ": " + element + ": <" + side + "_origin> is not a pose (xyz, rpy)");
      return pose(p);
    };
    auto axis = [&](const std::string& side, const Vec3& otherwise) {
      const TiXmlElement* e = c.FirstChildElement((side + "_axis").c_str());
      const char* xyz = e ? e->Attribute("xyz") : nullptr;
      if (!xyz) return otherwise;
      std::istringstream in(xyz);
      Vec3 a;
      if (!(in >> a.x() >> a.y() >> a.z())) throw ModelError(tree_.source + ": " + element + ": <" + side + "_axis xyz> needs three numbers");
      return a;
    };
    const JointType jt = t->second;
    const Vec3 first = axis("parent", Vec3::UnitX());
    Mat3 R = Mat3::Identity();
    if (jt == JointType::Universal) R = importing::frame_with_z(first, element, axis("child", Vec3::Zero()));
    else if (jt != JointType::Fixed && jt != JointType::Spherical) R = importing::frame_with_z(first, element);
    tree_.joints.push_back({name, element, jt, end("parent"), end("child"), origin("parent") * Pose{Vec3::Zero(), R},
                            origin("child") * Pose{Vec3::Zero(), R}});
  }

  const urdf::ModelInterface& urdf_;
  LinkTree tree_;
  std::string source_;  // tree_ is moved out by map(); warnings() comes after
  std::filesystem::path dir_;
  std::vector<std::string> warnings_, limited_, damped_, mimic_, colliding_, missing_meshes_;
};

}  // namespace

ImportedModel import_urdf_file(const std::string& path, const ImportOptions& options) {
  const std::string text = read_text(path);
  TiXmlDocument doc;
  doc.Parse(text.c_str());
  if (doc.Error())
    throw ModelError(path + ":" + std::to_string(doc.ErrorRow()) + ":" + std::to_string(doc.ErrorCol()) +
                     ": malformed XML: " + doc.ErrorDesc());
  const TiXmlElement* robot = doc.FirstChildElement("robot");
  if (!robot) throw ModelError(path + ": not a URDF file (no <robot> element)");
  urdf::ModelInterfaceSharedPtr urdf;
  {
    ConsoleCapture capture;
    urdf = urdf::parseURDF(text);
    if (!urdf) throw ModelError(path + ": urdfdom could not read the URDF: " + (capture.errors.empty() ? "no reason given" : capture.errors));
  }
  UrdfMapper mapper(*urdf, path, options);
  LinkTree tree = mapper.map(robot);
  return {importing::build_model(std::move(tree)), mapper.warnings()};
}

#endif

}  // namespace treedyn
