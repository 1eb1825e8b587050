// treedyn — measures of a simulation computed from absolute body states only, by the same code
// for every formulation: energies, the work of non-conservative loads, and the violation of every
// joint's constraints at position, velocity and acceleration level.
#pragma once

#include <vector>

#include "treedyn/formulation.hpp"
#include "treedyn/loads.hpp"

namespace treedyn {

struct ConstraintErrors {
  double position = 0.0, velocity = 0.0, acceleration = 0.0;  // Euclidean norms of Phi, Phi_dot, Phi_ddot
};

struct MetricsSample {
  double t = 0.0;
  double kinetic = 0.0, potential = 0.0, total = 0.0;
  /// Work of non-conservative loads since the first sample (trapezoidal rule over samples).
  double work_nonconservative = 0.0;
  /// total - total(t0) - work_nonconservative; NaN when some work is unknown (drivers without
  /// reported efforts).
  double energy_drift = 0.0;
  ConstraintErrors max;                // largest over joints and drivers
  std::vector<ConstraintErrors> joints;  // per joint, then per driver
  std::vector<AppliedLoads::ElementLoad> elements;  // per force element (AppliedLoads::element_loads)
};

double kinetic_energy(const Model& model, const SystemState& state);
/// One body's kinetic energy in `state` (the sum's terms above, in body order).
double kinetic_energy(const Body& body, const BodyState& state);

/// The scales of a model that a run is judged by (docs/cli.md, "Self-judgement") and that
/// defaults are chosen from (dca's Baumgarte stabilisation).
struct ModelScales {
  double length = 0.0;  // m: the extent of the bodies' centres of mass and ground-joint locations at
                        // t0, or the largest radius of gyration when larger (a single body)
  double energy = 0.0;  // J: the largest of kinetic_max, potential_range and total mass x |gravity| x length
  double speed = 0.0;   // m/s: sqrt(2 energy / total mass); 0 for a massless model
};

/// The scales from the model and what a run saw: its largest kinetic energy and its potential
/// energy's range (both 0 before a run: the model's own bound, gravity's work over the length,
/// still gives a scale).
ModelScales model_scales(const Model& model, double kinetic_max, double potential_range);

/// Lifetime: a Metrics refers to its model and external loads, which must outlive it.
class Metrics {
 public:
  /// `external`: loads applied from outside the model, whose work enters the energy balance (may
  /// be null: none).
  explicit Metrics(const Model& model, const ExternalLoads* external = nullptr);
  explicit Metrics(const Model&&, const ExternalLoads* = nullptr) = delete;
  /// Evaluates a sample; successive calls accumulate the work of non-conservative loads.
  MetricsSample evaluate(const Snapshot& snapshot);
  /// The same into `out`, whose per-joint and per-element vectors are reused: a run that keeps
  /// one sample allocates nothing per sample once they are sized.
  void evaluate(const Snapshot& snapshot, MetricsSample& out);
  /// Errors of every constraint block at one state (accelerations taken from the state).
  std::vector<ConstraintErrors> constraint_errors(double t, const SystemState& state) const;
  /// The same into `out` (resized to the blocks; its storage reused).
  void constraint_errors(double t, const SystemState& state, std::vector<ConstraintErrors>& out) const;
  /// Gravity's potential and the energy stored in the model's springs.
  double potential_energy(const SystemState& state) const { return loads_.potential_energy(state); }

 private:
  double power(const Snapshot& s) const;

  const Model* model_;
  AppliedLoads loads_;
  ConstraintSet constraints_;
  bool first_ = true;
  double t_prev_ = 0.0, power_prev_ = 0.0, work_ = 0.0, energy0_ = 0.0;
};

}  // namespace treedyn
