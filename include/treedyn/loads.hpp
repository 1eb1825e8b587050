// treedyn — applied loads on absolute body states: gravity, point-to-point and rotational
// spring-dampers, body forces and torques, joint actuators, and the loads applied from outside
// the model (external_loads.hpp: a controller's efforts, wrenches and load function). (Coulomb
// friction depends on joint reactions and is applied by the formulations that support it.)
//
// Lifetime: an AppliedLoads refers to its model and external loads, which must outlive it; it
// cannot be made from a temporary model.
#pragma once

#include <vector>

#include "treedyn/external_loads.hpp"
#include "treedyn/kinematics.hpp"

namespace treedyn {

class AppliedLoads {
 public:
  /// `external`: loads from outside the model added to the model's own (null: none).
  explicit AppliedLoads(const Model& model, const ExternalLoads* external = nullptr);
  AppliedLoads(const Model&&, const ExternalLoads* = nullptr) = delete;

  /// Each body's applied wrench [force; torque about its centre of mass], global frame.
  void evaluate(double t, const SystemState& state, std::vector<Vec6>& wrenches) const;
  /// evaluate(), except under gravity alone when `weights_held` says the wrenches hold the
  /// weights already (they read no state, so they stand until another load comes in). Sets
  /// `weights_held` to gravity_only(). The caller keeps the flag with its vector: false at first
  /// and after writing the vector itself. Returns true if it evaluated.
  bool evaluate_unless_held(double t, const SystemState& state, std::vector<Vec6>& wrenches, bool& weights_held) const {
    const bool held = weights_held && gravity_only() && wrenches.size() == state.size();
    if (!held) evaluate(t, state, wrenches);
    weights_held = gravity_only();
    return !held;
  }
  /// Body i's weight [m g; 0], the part of its wrench that needs no other body's state.
  Vec6 weight(int body) const;
  /// Body i's mass, from an array of the masses (not the model's large body records).
  double mass(int body) const { return mass_[static_cast<std::size_t>(body)]; }
  /// True if gravity is the only load: then weight(i) is every body's whole applied wrench, and
  /// a formulation can compute it body by body (in its parallel passes) instead of evaluate().
  /// False while external loads are applied.
  bool gravity_only() const { return model_gravity_only_ && !(external_ && external_->active()); }

  /// Gravity potential plus the energy stored in springs.
  double potential_energy(const SystemState& state) const;

  /// Power of the non-conservative loads (dampers, body forces and torques, actuators, external
  /// loads).
  double nonconservative_power(double t, const SystemState& state) const;

  /// Each force element's coordinate and load, for the outputs, in model order: every
  /// spring-damper's length [m] and tension [N] (k (L - L0) + c dL/dt: positive pulls its ends
  /// together), then every rotational spring-damper's angle [rad] and torque [N m] on its joint
  /// coordinate (-k (theta - theta0) - c dtheta/dt), then every actuator's coordinate and effort.
  struct ElementLoad {
    double coordinate = 0.0, load = 0.0;
  };
  void element_loads(double t, const SystemState& state, std::vector<ElementLoad>& out) const;

  /// Rotational springs and actuators measure angles continuously through many turns by
  /// unwrapping against the last state given here (call after each accepted step).
  void update_angle_references(const SystemState& state);
  /// True if the model has loads that measure joint angles, or external loads keep joint angles
  /// continuous (so update_angle_references matters).
  bool measures_angles() const {
    return !angle_reference_.empty() || (external_ && external_->tracks_angles());
  }

 private:
  struct SpringKinematics {
    Vec3 xa, xb, e;  // attachment points (global) and unit direction a -> b
    double length, rate;
  };
  SpringKinematics spring_kinematics(const SpringDamper& s, const SystemState& state) const;
  /// The force laws (docs/model-format.md): a spring-damper's tension k (L - L0) + c dL/dt, and a
  /// rotational spring-damper's torque -k (theta - theta0) - c dtheta/dt on its coordinate.
  static double tension(const SpringDamper& s, const SpringKinematics& k) {
    return s.stiffness * (k.length - s.free_length) + s.damping * k.rate;
  }
  static double torque(const RotationalSpringDamper& s, const CoordinateMeasure& c) {
    return -s.stiffness * (c.value - s.free_angle) - s.damping * c.rate;
  }
  CoordinateMeasure coordinate(int joint, int coordinate, const SystemState& state, std::size_t slot) const;
  /// Adds a generalised joint force along a measured coordinate to both bodies of the joint.
  void add_joint_load(int joint, const CoordinateMeasure& m, double generalized_force, const SystemState& state,
                      std::vector<Vec6>& wrenches) const;

  const Model* model_;
  const ExternalLoads* external_;
  bool model_gravity_only_;
  std::vector<double> angle_reference_;  // one slot per rotational spring, then per actuator
  std::vector<double> mass_;             // the bodies' masses, read each evaluation without their large records
};

}  // namespace treedyn
