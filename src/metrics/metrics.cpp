#include "treedyn/metrics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace treedyn {

double kinetic_energy(const Model& model, const SystemState& state) {
  double T = 0.0;
  for (std::size_t i = 0; i < state.size(); ++i) T += kinetic_energy(model.bodies[i], state[i]);
  return T;
}

double kinetic_energy(const Body& b, const BodyState& s) {
  const Mat3 A = s.q.toRotationMatrix();
  return 0.5 * b.mass * s.v.squaredNorm() + 0.5 * s.w.dot(A * b.inertia * A.transpose() * s.w);
}

namespace {

double characteristic_length(const Model& model) {
  Vec3 low = Vec3::Constant(INFINITY), high = Vec3::Constant(-INFINITY);
  double gyration = 0.0;
  auto extend = [&](const Vec3& p) { low = low.cwiseMin(p), high = high.cwiseMax(p); };
  for (const Body& b : model.bodies) {
    extend(b.position);
    if (b.mass > 0.0) gyration = std::max(gyration, std::sqrt(b.inertia.trace() / b.mass));
  }
  for (const Joint& j : model.joints)
    if (j.parent == kGround) extend(j.parent_frame.origin);
  return std::max(model.bodies.empty() ? 0.0 : (high - low).norm(), gyration);
}

}  // namespace

ModelScales model_scales(const Model& model, double kinetic_max, double potential_range) {
  double mass = 0.0;
  for (const Body& b : model.bodies) mass += b.mass;
  ModelScales s;
  s.length = characteristic_length(model);
  s.energy = std::max({kinetic_max, potential_range, mass * model.gravity.norm() * s.length});
  s.speed = mass > 0.0 ? std::sqrt(2.0 * s.energy / mass) : 0.0;
  return s;
}

Metrics::Metrics(const Model& model, const ExternalLoads* external)
    : model_(&model), loads_(model, external), constraints_(model) {}

namespace {

/// The norms of Phi, Phi_q V + Phi_t and Phi_q A - gamma of an evaluated block (a ConstraintBlock,
/// or a ball joint's PointBlock in fixed sizes).
template <class Block>
ConstraintErrors block_errors(const Block& b, const SystemState& state) {
  Vec6 V_P = Vec6::Zero(), V_C = Vec6::Zero(), A_P = Vec6::Zero(), A_C = Vec6::Zero();
  const BodyState& P = state_of(state, b.parent);
  const BodyState& C = state_of(state, b.child);
  V_P << P.v, P.w;
  V_C << C.v, C.w;
  A_P << P.a, P.alpha;
  A_C << C.a, C.alpha;
  ConstraintErrors e;
  e.position = b.phi.norm();
  e.velocity = (b.J_P * V_P + b.J_C * V_C + b.phi_t).norm();
  e.acceleration = (b.J_P * A_P + b.J_C * A_C - b.gamma).norm();
  return e;
}

}  // namespace

std::vector<ConstraintErrors> Metrics::constraint_errors(double t, const SystemState& state) const {
  std::vector<ConstraintErrors> errors;
  constraint_errors(t, state, errors);
  return errors;
}

void Metrics::constraint_errors(double t, const SystemState& state, std::vector<ConstraintErrors>& out) const {
  out.assign(static_cast<std::size_t>(constraints_.block_count()), ConstraintErrors{});
  for (int k = 0; k < constraints_.block_count(); ++k) {
    constraints_.visit_block(k, t, state, ConstraintParts::without_jdot(), [&](const auto& b) {
      if (b.size() > 0) out[static_cast<std::size_t>(k)] = block_errors(b, state);
    });
  }
}

double Metrics::power(const Snapshot& s) const {
  const Model& m = *model_;
  double p = loads_.nonconservative_power(s.t, s.bodies) + s.extra_power;
  if (m.drivers.empty()) return p;
  if (s.driver_efforts.size() != m.drivers.size()) return std::numeric_limits<double>::quiet_NaN();
  for (std::size_t d = 0; d < m.drivers.size(); ++d) {
    const Driver& drv = m.drivers[d];
    const Joint& j = m.joints[static_cast<std::size_t>(drv.joint)];
    p += s.driver_efforts[d] *
         measure_coordinate(j, drv.coordinate, state_of(s.bodies, j.parent), state_of(s.bodies, j.child)).rate;
  }
  return p;
}

MetricsSample Metrics::evaluate(const Snapshot& s) {
  MetricsSample out;
  evaluate(s, out);
  return out;
}

void Metrics::evaluate(const Snapshot& s, MetricsSample& out) {
  out.t = s.t;
  out.kinetic = kinetic_energy(*model_, s.bodies);
  out.potential = loads_.potential_energy(s.bodies);
  out.total = out.kinetic + out.potential;
  const double p = power(s);
  if (first_) {
    energy0_ = out.total;
    first_ = false;
  } else {
    work_ += 0.5 * (p + power_prev_) * (s.t - t_prev_);
  }
  t_prev_ = s.t;
  power_prev_ = p;
  loads_.element_loads(s.t, s.bodies, out.elements);  // before the references move: the angles the potential used
  loads_.update_angle_references(s.bodies);
  out.work_nonconservative = work_;
  out.energy_drift = out.total - energy0_ - work_;
  constraint_errors(s.t, s.bodies, out.joints);
  out.max = ConstraintErrors{};
  for (const ConstraintErrors& e : out.joints) {
    out.max.position = std::max(out.max.position, e.position);
    out.max.velocity = std::max(out.max.velocity, e.velocity);
    out.max.acceleration = std::max(out.max.acceleration, e.acceleration);
  }
}

}  // namespace treedyn
