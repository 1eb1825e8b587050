// treedyn — C++ builder API for models.
//
//   ModelBuilder b("pendulum");
//   b.gravity({0, -9.81, 0});
//   b.body({.name = "link", .mass = 1, .inertia = Mat3::Identity(), .position = {0.5, 0, 0}});
//   b.joint(JointSpec::at("pin", JointType::Revolute, "ground", "link", {0, 0, 0}, {0, 0, 1}));
//   Model m = b.build();   // resolves names, converts to canonical form, validates
//
// Items refer to each other by name. build() reports every problem it finds in one ModelError,
// one line per problem, each naming the item.
#pragma once

#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "treedyn/model.hpp"

namespace treedyn {

/// Joint placement given in global coordinates at the initial configuration (the common case):
/// the joint frame has its origin at `location` and its z axis along `axis`; `axis2` is the
/// universal joint's second (child) axis, perpendicular to `axis`, or the direction of the
/// frame's x axis for the other joint types (optional).
struct GlobalPlacement {
  Vec3 location = Vec3::Zero();
  Vec3 axis = Vec3::UnitZ();
  std::optional<Vec3> axis2;
};

/// Joint placement given as a frame on each body (body frames; ground: global).
struct FramePlacement {
  Frame parent;
  Frame child;
};

struct JointSpec {
  std::string name;
  JointType type = JointType::Revolute;
  std::string parent, child;
  std::variant<GlobalPlacement, FramePlacement> placement;

  static JointSpec at(std::string name, JointType type, std::string parent, std::string child,
                      const Vec3& location, const Vec3& axis = Vec3::UnitZ(),
                      std::optional<Vec3> axis2 = std::nullopt) {
    return {std::move(name), type, std::move(parent), std::move(child),
            GlobalPlacement{location, axis, axis2}};
  }
};

/// A point on a body, given either in global coordinates at the initial configuration or in the
/// body's own frame.
struct PointSpec {
  Vec3 value = Vec3::Zero();
  bool global = true;
};

struct SpringDamperSpec {
  std::string name, body_a, body_b;
  PointSpec point_a, point_b;
  double stiffness = 0.0, damping = 0.0;
  std::optional<double> free_length;  // default: the initial distance
};

struct RotationalSpringDamperSpec {
  std::string name, joint;
  int coordinate = 0;
  double stiffness = 0.0, damping = 0.0, free_angle = 0.0;
};

struct BodyForceSpec {
  std::string name, body;
  Vec3 vector = Vec3::Zero();
  TimeFunction function = TimeFunction::constant(1.0);
  LoadFrame frame = LoadFrame::Global;
  std::optional<PointSpec> point;  // default: centre of mass
};

struct BodyTorqueSpec {
  std::string name, body;
  Vec3 vector = Vec3::Zero();
  TimeFunction function = TimeFunction::constant(1.0);
  LoadFrame frame = LoadFrame::Global;
};

struct JointActuatorSpec {
  std::string name, joint;
  int coordinate = 0;
  TimeFunction function;
};

struct JointFrictionSpec {
  std::string name, joint;
  double coefficient = 0.0;
};

struct DriverSpec {
  std::string name, joint;
  int coordinate = 0;
  TimeFunction function;
};

class ModelBuilder {
 public:
  explicit ModelBuilder(std::string name = "model");

  ModelBuilder& name(std::string name);
  ModelBuilder& description(std::string text);
  ModelBuilder& gravity(const Vec3& g);
  ModelBuilder& body(Body body);
  ModelBuilder& joint(JointSpec spec);
  ModelBuilder& spring_damper(SpringDamperSpec spec);
  ModelBuilder& rotational_spring_damper(RotationalSpringDamperSpec spec);
  ModelBuilder& body_force(BodyForceSpec spec);
  ModelBuilder& body_torque(BodyTorqueSpec spec);
  ModelBuilder& joint_actuator(JointActuatorSpec spec);
  ModelBuilder& joint_friction(JointFrictionSpec spec);
  ModelBuilder& driver(DriverSpec spec);
  ModelBuilder& defaults(SimulationDefaults d);
  /// Room for this many bodies and joints (a capacity, as std::vector::reserve: none are added).
  ModelBuilder& reserve(std::size_t bodies, std::size_t joints);

  /// Resolves names, converts placements to body frames and validates; throws ModelError.
  Model build() const&;
  /// The same, moving the builder's bodies into the model rather than copying them (a file's
  /// reader builds once: 19 MB of bodies at 65,536); the builder is left valid but unspecified.
  Model build() &&;

 private:
  Model assemble(std::vector<Body> bodies) const;

  std::string name_, description_;
  Vec3 gravity_ = Vec3::Zero();
  std::vector<Body> bodies_;
  std::vector<JointSpec> joints_;
  std::vector<SpringDamperSpec> springs_;
  std::vector<RotationalSpringDamperSpec> rotational_springs_;
  std::vector<BodyForceSpec> body_forces_;
  std::vector<BodyTorqueSpec> body_torques_;
  std::vector<JointActuatorSpec> actuators_;
  std::vector<JointFrictionSpec> frictions_;
  std::vector<DriverSpec> drivers_;
  SimulationDefaults defaults_;
};

/// Checks a Model's internal consistency (masses, inertias, indices, frames, names, attachment);
/// throws ModelError listing every problem. build() calls it; call it on a hand-edited Model.
void validate(const Model& model);

}  // namespace treedyn
