// treedyn — the Model: an immutable, validated description of a multibody system.
//
// A Model is produced by ModelBuilder::build() (include/treedyn/model_builder.hpp) or by the JSON
// reader (include/treedyn/model_json.hpp), which goes through the builder. Every reference between
// items is an index; the implicit fixed body `ground` has index kGround.
//
// Geometry is stored in canonical form: joint frames and attachment points are given in the
// body's own (centroidal) frame, whatever form the user gave them in.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "treedyn/spatial.hpp"
#include "treedyn/time_function.hpp"

namespace treedyn {

inline constexpr int kGround = -1;
inline constexpr const char* kGroundName = "ground";

/// A problem in a model: the message names the item and says what is wrong.
class ModelError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---------------------------------------------------------------------------------------------
// Bodies

struct Shape {
  enum class Type { None, Box, Cylinder, Sphere };
  Type type = Type::None;
  Vec3 size = Vec3::Zero();  // box: full edge lengths along the body axes
  double radius = 0.0;       // cylinder, sphere
  double length = 0.0;       // cylinder
  int axis = 2;              // cylinder: body axis along its length (0 = x, 1 = y, 2 = z)
  bool operator==(const Shape&) const = default;
};

struct Body {
  std::string name;
  double mass = 0.0;
  Mat3 inertia = Mat3::Zero();  // centroidal inertia in the body frame
  Vec3 position = Vec3::Zero();                // centre of mass, global, at t0
  Quat orientation = Quat::Identity();         // body -> global, at t0
  Vec3 velocity = Vec3::Zero();                // of the centre of mass, global, at t0
  Vec3 angular_velocity = Vec3::Zero();        // global, at t0
  Shape shape;
  bool operator==(const Body& o) const {
    return name == o.name && mass == o.mass && inertia == o.inertia && position == o.position &&
           orientation.coeffs() == o.orientation.coeffs() && velocity == o.velocity &&
           angular_velocity == o.angular_velocity && shape == o.shape;
  }
};

// ---------------------------------------------------------------------------------------------
// Joints

enum class JointType { Revolute, Prismatic, Cylindrical, Universal, Spherical, Planar, Fixed, Free };

/// A frame fixed on a body: origin and axes (columns) in the body frame; for ground, global.
struct Frame {
  Vec3 origin = Vec3::Zero();
  Mat3 rotation = Mat3::Identity();
  bool operator==(const Frame&) const = default;
};

/// A joint connects the frame on its parent to the frame on its child. At a joint coordinate of
/// zero the two frames coincide. Joint axes are frame axes:
///   revolute, prismatic, cylindrical: z;  planar: normal z, sliding along x and y;
///   universal: first axis z of the parent frame, second axis x of the child frame.
struct Joint {
  std::string name;
  JointType type = JointType::Revolute;
  int parent = kGround;
  int child = kGround;
  Frame parent_frame;
  Frame child_frame;
  bool operator==(const Joint&) const = default;
};

/// A scalar joint coordinate that actuators, rotational springs, friction and drivers act on.
struct JointCoordinate {
  enum class Kind { Rotation, Translation };
  enum class Axis { ParentX, ParentY, ParentZ, ChildX };
  Kind kind;
  Axis axis;
};

const char* to_string(JointType type);
std::optional<JointType> joint_type_from_string(const std::string& name);
/// Degrees of freedom the joint allows (free: 6).
int joint_dof(JointType type);
/// Number of scalar constraint equations in absolute coordinates (6 - dof).
inline int joint_constraint_count(JointType type) { return 6 - joint_dof(type); }
/// The scalar coordinates of a joint that loads and drivers may act on (empty for spherical,
/// fixed and free joints, whose rotations are not scalar coordinates). A view of constant tables
/// (valid for the program's life): the loads and drivers measure them in every right-hand side,
/// which allocates nothing.
std::span<const JointCoordinate> joint_coordinates(JointType type);

// ---------------------------------------------------------------------------------------------
// Force elements and drivers

/// Point-to-point spring-damper between two bodies (either may be ground).
struct SpringDamper {
  std::string name;
  int body_a = kGround;
  Vec3 point_a = Vec3::Zero();  // in body_a's frame (global if ground)
  int body_b = kGround;
  Vec3 point_b = Vec3::Zero();
  double stiffness = 0.0, damping = 0.0, free_length = 0.0;
  bool operator==(const SpringDamper&) const = default;
};

/// Torsional spring-damper on a rotation coordinate of a joint.
struct RotationalSpringDamper {
  std::string name;
  int joint = 0;
  int coordinate = 0;
  double stiffness = 0.0, damping = 0.0, free_angle = 0.0;
  bool operator==(const RotationalSpringDamper&) const = default;
};

enum class LoadFrame { Global, Body };

/// Force vector * f(t) on a body, at a point of the body (its centre of mass by default).
struct BodyForce {
  std::string name;
  int body = 0;
  Vec3 vector = Vec3::Zero();
  TimeFunction function = TimeFunction::constant(1.0);
  LoadFrame frame = LoadFrame::Global;  // frame of `vector`
  Vec3 point = Vec3::Zero();            // application point, body frame
  bool operator==(const BodyForce&) const = default;
};

/// Torque vector * f(t) on a body.
struct BodyTorque {
  std::string name;
  int body = 0;
  Vec3 vector = Vec3::Zero();
  TimeFunction function = TimeFunction::constant(1.0);
  LoadFrame frame = LoadFrame::Global;
  bool operator==(const BodyTorque&) const = default;
};

/// Generalised force f(t) along a joint coordinate (a torque for rotations, a force for
/// translations), acting on the child and, reversed, on the parent.
struct JointActuator {
  std::string name;
  int joint = 0;
  int coordinate = 0;
  TimeFunction function;
  bool operator==(const JointActuator&) const = default;
};

/// Coulomb friction coefficient on a joint; used by formulations that support it (paper 002,
/// Sect. 3.4), ignored with a warning by the others.
struct JointFriction {
  std::string name;
  int joint = 0;
  double coefficient = 0.0;
  bool operator==(const JointFriction&) const = default;
};

/// Rheonomic constraint: a joint coordinate prescribed as a function of time.
struct Driver {
  std::string name;
  int joint = 0;
  int coordinate = 0;
  TimeFunction function;
  bool operator==(const Driver&) const = default;
};

/// Optional defaults a model file may carry for `treedyn simulate`, and what a run takes where
/// neither its caller nor the file says (the command line, `treedyn compare` and Python's
/// simulate all take them from here).
struct SimulationDefaults {
  static constexpr double kTEnd = 10.0;  // s
  static constexpr double kDt = 0.01;    // s: fixed-step runs' step, adaptive runs' output interval
  static constexpr const char* kFormulation = "reference";

  std::optional<double> t_end, dt;
  std::optional<std::string> formulation, integrator;

  double t_end_or_fallback() const { return t_end.value_or(kTEnd); }
  double dt_or_fallback() const { return dt.value_or(kDt); }
  std::string formulation_or_fallback() const { return formulation.value_or(kFormulation); }
  bool operator==(const SimulationDefaults&) const = default;
};

// ---------------------------------------------------------------------------------------------

struct Model {
  std::string name;
  std::string description;
  Vec3 gravity = Vec3::Zero();
  std::vector<Body> bodies;
  std::vector<Joint> joints;
  std::vector<SpringDamper> springs;
  std::vector<RotationalSpringDamper> rotational_springs;
  std::vector<BodyForce> body_forces;
  std::vector<BodyTorque> body_torques;
  std::vector<JointActuator> actuators;
  std::vector<JointFriction> frictions;
  std::vector<Driver> drivers;
  SimulationDefaults defaults;

  int body_count() const { return static_cast<int>(bodies.size()); }
  int joint_count() const { return static_cast<int>(joints.size()); }
  /// Index of a body by name (kGround for "ground"); throws ModelError if unknown.
  int body_index(const std::string& name) const;
  int joint_index(const std::string& name) const;
  const std::string& body_name(int index) const;
  /// Total number of scalar joint constraint equations plus driver equations.
  int constraint_equation_count() const;
  bool operator==(const Model&) const = default;
};

/// A model as simulators and formulations hold it: immutable and shared, so that it lives as long
/// as the last of them (treedyn::share(read_model_file(path)) is safe; nothing refers to a
/// temporary). Nothing writes to a shared Model, so any number of threads may read it; the one
/// thing it may run is a TimeFunction callback, which must then be safe to call concurrently.
using ModelPtr = std::shared_ptr<const Model>;
/// Moves a model into shared ownership.
inline ModelPtr share(Model model) { return std::make_shared<const Model>(std::move(model)); }

}  // namespace treedyn
