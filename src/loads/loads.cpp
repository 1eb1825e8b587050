#include "treedyn/loads.hpp"

namespace treedyn {
namespace {

Vec3 global_point(const SystemState& s, int body, const Vec3& local) {
  const BodyState& b = state_of(s, body);
  return b.r + b.q * local;
}

Vec3 point_velocity(const SystemState& s, int body, const Vec3& global) {
  const BodyState& b = state_of(s, body);
  return b.v + b.w.cross(global - b.r);
}

void add_wrench(std::vector<Vec6>& wrenches, const SystemState& s, int body, const Vec3& force, const Vec3& point) {
  if (body == kGround) return;
  wrenches[static_cast<std::size_t>(body)] += wrench_at_com(force, point, state_of(s, body).r);
}

}  // namespace

AppliedLoads::AppliedLoads(const Model& model, const ExternalLoads* external)
    : model_(&model),
      external_(external),
      model_gravity_only_(model.springs.empty() && model.rotational_springs.empty() && model.body_forces.empty() &&
                          model.body_torques.empty() && model.actuators.empty()),
      angle_reference_(model.rotational_springs.size() + model.actuators.size(), 0.0),
      mass_(model.bodies.size()) {
  for (std::size_t b = 0; b < model.bodies.size(); ++b) mass_[b] = model.bodies[b].mass;
  if (!angle_reference_.empty()) update_angle_references(initial_state(model));  // no angles, no state made
}

AppliedLoads::SpringKinematics AppliedLoads::spring_kinematics(const SpringDamper& s, const SystemState& state) const {
  SpringKinematics k;
  k.xa = global_point(state, s.body_a, s.point_a);
  k.xb = global_point(state, s.body_b, s.point_b);
  const Vec3 delta = k.xb - k.xa;
  k.length = delta.norm();
  k.e = k.length > 1e-12 ? Vec3(delta / k.length) : Vec3::Zero();
  k.rate = k.e.dot(point_velocity(state, s.body_b, k.xb) - point_velocity(state, s.body_a, k.xa));
  return k;
}

CoordinateMeasure AppliedLoads::coordinate(int joint, int coord, const SystemState& state, std::size_t slot) const {
  const Joint& j = model_->joints[static_cast<std::size_t>(joint)];
  return measure_coordinate(j, coord, state_of(state, j.parent), state_of(state, j.child), &angle_reference_[slot]);
}

void AppliedLoads::add_joint_load(int joint, const CoordinateMeasure& m, double tau, const SystemState& state,
                                  std::vector<Vec6>& wrenches) const {
  const Joint& j = model_->joints[static_cast<std::size_t>(joint)];
  if (m.rotation) {
    for (auto [body, sign] : {std::pair{j.child, 1.0}, std::pair{j.parent, -1.0}})
      if (body != kGround) wrenches[static_cast<std::size_t>(body)].tail<3>() += sign * tau * m.axis;
  } else {
    add_wrench(wrenches, state, j.child, tau * m.axis, m.point);
    add_wrench(wrenches, state, j.parent, -tau * m.axis, m.point);
  }
}

Vec6 AppliedLoads::weight(int body) const {
  const Vec3 f = mass(body) * model_->gravity;
  return Vec6(f.x(), f.y(), f.z(), 0.0, 0.0, 0.0);  // from its entries: copied by pairs
}

void AppliedLoads::evaluate(double t, const SystemState& state, std::vector<Vec6>& wrenches) const {
  const Model& m = *model_;
  wrenches.resize(state.size());
  for (std::size_t i = 0; i < state.size(); ++i) wrenches[i] = weight(static_cast<int>(i));
  for (const SpringDamper& s : m.springs) {
    const SpringKinematics k = spring_kinematics(s, state);
    Vec3 f_on_a;  // pulls a towards b when stretched
    if (k.length > 1e-12) {
      f_on_a = tension(s, k) * k.e;
    } else {  // coincident points: direction undefined, use the linear spring-damper law
      f_on_a = s.stiffness * (k.xb - k.xa) +
               s.damping * (point_velocity(state, s.body_b, k.xb) - point_velocity(state, s.body_a, k.xa));
    }
    add_wrench(wrenches, state, s.body_a, f_on_a, k.xa);
    add_wrench(wrenches, state, s.body_b, -f_on_a, k.xb);
  }
  for (std::size_t i = 0; i < m.rotational_springs.size(); ++i) {
    const RotationalSpringDamper& s = m.rotational_springs[i];
    const CoordinateMeasure c = coordinate(s.joint, s.coordinate, state, i);
    add_joint_load(s.joint, c, torque(s, c), state, wrenches);
  }
  for (const BodyForce& f : m.body_forces) {
    const BodyState& b = state_of(state, f.body);
    const Vec3 dir = f.frame == LoadFrame::Body ? Vec3(b.q * f.vector) : f.vector;
    add_wrench(wrenches, state, f.body, f.function.value(t) * dir, b.r + b.q * f.point);
  }
  for (const BodyTorque& f : m.body_torques) {
    const BodyState& b = state_of(state, f.body);
    const Vec3 dir = f.frame == LoadFrame::Body ? Vec3(b.q * f.vector) : f.vector;
    wrenches[static_cast<std::size_t>(f.body)].tail<3>() += f.function.value(t) * dir;
  }
  const std::size_t slot0 = m.rotational_springs.size();
  for (std::size_t i = 0; i < m.actuators.size(); ++i) {
    const JointActuator& a = m.actuators[i];
    add_joint_load(a.joint, coordinate(a.joint, a.coordinate, state, slot0 + i), a.function.value(t), state, wrenches);
  }
  if (external_ && external_->active()) external_->add_to(t, state, wrenches);
}

void AppliedLoads::element_loads(double t, const SystemState& state, std::vector<ElementLoad>& out) const {
  const Model& m = *model_;
  out.clear();
  for (const SpringDamper& s : m.springs) {
    const SpringKinematics k = spring_kinematics(s, state);
    out.push_back({k.length, tension(s, k)});
  }
  for (std::size_t i = 0; i < m.rotational_springs.size(); ++i) {
    const RotationalSpringDamper& s = m.rotational_springs[i];
    const CoordinateMeasure c = coordinate(s.joint, s.coordinate, state, i);
    out.push_back({c.value, torque(s, c)});
  }
  const std::size_t slot0 = m.rotational_springs.size();
  for (std::size_t i = 0; i < m.actuators.size(); ++i) {
    const JointActuator& a = m.actuators[i];
    out.push_back({coordinate(a.joint, a.coordinate, state, slot0 + i).value, a.function.value(t)});
  }
}

double AppliedLoads::potential_energy(const SystemState& state) const {
  const Model& m = *model_;
  double V = 0.0;
  for (std::size_t i = 0; i < state.size(); ++i) V -= m.bodies[i].mass * m.gravity.dot(state[i].r);
  for (const SpringDamper& s : m.springs) {
    const double stretch = spring_kinematics(s, state).length - s.free_length;
    V += 0.5 * s.stiffness * stretch * stretch;
  }
  for (std::size_t i = 0; i < m.rotational_springs.size(); ++i) {
    const RotationalSpringDamper& s = m.rotational_springs[i];
    const double twist = coordinate(s.joint, s.coordinate, state, i).value - s.free_angle;
    V += 0.5 * s.stiffness * twist * twist;
  }
  return V;
}

double AppliedLoads::nonconservative_power(double t, const SystemState& state) const {
  const Model& m = *model_;
  double power = 0.0;
  for (const SpringDamper& s : m.springs) {
    const double rate = spring_kinematics(s, state).rate;
    power -= s.damping * rate * rate;
  }
  for (std::size_t i = 0; i < m.rotational_springs.size(); ++i) {
    const RotationalSpringDamper& s = m.rotational_springs[i];
    const double rate = coordinate(s.joint, s.coordinate, state, i).rate;
    power -= s.damping * rate * rate;
  }
  for (const BodyForce& f : m.body_forces) {
    const BodyState& b = state_of(state, f.body);
    const Vec3 dir = f.frame == LoadFrame::Body ? Vec3(b.q * f.vector) : f.vector;
    power += f.function.value(t) * dir.dot(point_velocity(state, f.body, b.r + b.q * f.point));
  }
  for (const BodyTorque& f : m.body_torques) {
    const BodyState& b = state_of(state, f.body);
    const Vec3 dir = f.frame == LoadFrame::Body ? Vec3(b.q * f.vector) : f.vector;
    power += f.function.value(t) * dir.dot(b.w);
  }
  const std::size_t slot0 = m.rotational_springs.size();
  for (std::size_t i = 0; i < m.actuators.size(); ++i) {
    const JointActuator& a = m.actuators[i];
    power += a.function.value(t) * coordinate(a.joint, a.coordinate, state, slot0 + i).rate;
  }
  if (external_) power += external_->power(t, state);
  return power;
}

void AppliedLoads::update_angle_references(const SystemState& state) {
  const Model& m = *model_;
  for (std::size_t i = 0; i < m.rotational_springs.size(); ++i) {
    const auto& s = m.rotational_springs[i];
    angle_reference_[i] = coordinate(s.joint, s.coordinate, state, i).value;
  }
  const std::size_t slot0 = m.rotational_springs.size();
  for (std::size_t i = 0; i < m.actuators.size(); ++i) {
    const auto& a = m.actuators[i];
    angle_reference_[slot0 + i] = coordinate(a.joint, a.coordinate, state, slot0 + i).value;
  }
  if (external_) external_->track(state);
}

}  // namespace treedyn
