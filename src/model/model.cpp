#include "treedyn/model.hpp"

namespace treedyn {

const char* to_string(JointType type) {
  switch (type) {
    case JointType::Revolute: return "revolute";
    case JointType::Prismatic: return "prismatic";
    case JointType::Cylindrical: return "cylindrical";
    case JointType::Universal: return "universal";
    case JointType::Spherical: return "spherical";
    case JointType::Planar: return "planar";
    case JointType::Fixed: return "fixed";
    case JointType::Free: return "free";
  }
  return "?";
}

std::optional<JointType> joint_type_from_string(const std::string& name) {
  for (JointType t : {JointType::Revolute, JointType::Prismatic, JointType::Cylindrical, JointType::Universal,
                      JointType::Spherical, JointType::Planar, JointType::Fixed, JointType::Free}) {
    if (name == to_string(t)) return t;
  }
  return std::nullopt;
}

int joint_dof(JointType type) {
  switch (type) {
    case JointType::Revolute:
    case JointType::Prismatic: return 1;
    case JointType::Cylindrical:
    case JointType::Universal: return 2;
    case JointType::Spherical:
    case JointType::Planar: return 3;
    case JointType::Fixed: return 0;
    case JointType::Free: return 6;
  }
  return 0;
}

std::span<const JointCoordinate> joint_coordinates(JointType type) {
  using K = JointCoordinate::Kind;
  using A = JointCoordinate::Axis;
  static constexpr JointCoordinate revolute[] = {{K::Rotation, A::ParentZ}};
  static constexpr JointCoordinate prismatic[] = {{K::Translation, A::ParentZ}};
  static constexpr JointCoordinate cylindrical[] = {{K::Rotation, A::ParentZ}, {K::Translation, A::ParentZ}};
  static constexpr JointCoordinate universal[] = {{K::Rotation, A::ParentZ}, {K::Rotation, A::ChildX}};
  static constexpr JointCoordinate planar[] = {{K::Translation, A::ParentX}, {K::Translation, A::ParentY}, {K::Rotation, A::ParentZ}};
  switch (type) {
    case JointType::Revolute: return revolute;
    case JointType::Prismatic: return prismatic;
    case JointType::Cylindrical: return cylindrical;
    case JointType::Universal: return universal;
    case JointType::Planar: return planar;
    case JointType::Spherical:
    case JointType::Fixed:
    case JointType::Free: return {};
  }
  return {};
}

int Model::body_index(const std::string& name) const {
  if (name == kGroundName) return kGround;
  for (int i = 0; i < body_count(); ++i)
    if (bodies[static_cast<std::size_t>(i)].name == name) return i;
  throw ModelError("unknown body '" + name + "'");
}

int Model::joint_index(const std::string& name) const {
  for (int i = 0; i < joint_count(); ++i)
    if (joints[static_cast<std::size_t>(i)].name == name) return i;
  throw ModelError("unknown joint '" + name + "'");
}

const std::string& Model::body_name(int index) const {
  static const std::string ground = kGroundName;
  return index == kGround ? ground : bodies.at(static_cast<std::size_t>(index)).name;
}

int Model::constraint_equation_count() const {
  int m = static_cast<int>(drivers.size());
  for (const Joint& j : joints) m += joint_constraint_count(j.type);
  return m;
}

}  // namespace treedyn
