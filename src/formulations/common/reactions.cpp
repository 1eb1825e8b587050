#include "reactions.hpp"

namespace treedyn {

namespace {

/// Block k's share of out (evaluated as b at `state`).
void block_reaction(const ConstraintSet& constraints, int k, const ConstraintBlock& b,
                    const Eigen::Ref<const Eigen::VectorXd>& lambda, const SystemState& state, Snapshot& out) {
  const Model& model = constraints.model();
  if (b.size() == 0 || b.child == kGround) return;
  const Vec6 w = -b.J_C.transpose() * lambda.segment(constraints.offset(k), b.size());  // at the child's CoM
  const BodyState& C = state_of(state, b.child);
  if (k < model.joint_count()) {
    const Joint& j = model.joints[static_cast<std::size_t>(k)];
    const Vec3 s_C = C.q * j.child_frame.origin;
    out.reactions[static_cast<std::size_t>(k)] = {w.head<3>(), w.tail<3>() - s_C.cross(w.head<3>())};
  } else {
    const Driver& d = model.drivers[static_cast<std::size_t>(k - model.joint_count())];
    const Joint& j = model.joints[static_cast<std::size_t>(d.joint)];
    const CoordinateMeasure m = measure_coordinate(j, d.coordinate, state_of(state, j.parent), C);
    const Vec3 torque_at_point = w.tail<3>() - (m.point - C.r).cross(w.head<3>());
    out.driver_efforts[static_cast<std::size_t>(k - model.joint_count())] =
        m.rotation ? m.axis.dot(torque_at_point) : m.axis.dot(w.head<3>());
  }
}

void clear(const Model& model, Snapshot& out) {
  out.reactions.assign(model.joints.size(), JointReaction{});
  out.driver_efforts.assign(model.drivers.size(), 0.0);
}

}  // namespace

void reactions_from_multipliers(const ConstraintSet& constraints, const std::vector<ConstraintBlock>& blocks,
                                const Eigen::Ref<const Eigen::VectorXd>& lambda, const SystemState& state,
                                Snapshot& out) {
  clear(constraints.model(), out);
  for (int k = 0; k < constraints.block_count(); ++k)
    block_reaction(constraints, k, blocks[static_cast<std::size_t>(k)], lambda, state, out);
}

void reactions_from_multipliers(const ConstraintSet& constraints, double t, const Eigen::Ref<const Eigen::VectorXd>& lambda,
                                const SystemState& state, ConstraintBlock& scratch, Snapshot& out) {
  clear(constraints.model(), out);
  for (int k = 0; k < constraints.block_count(); ++k) {
    constraints.evaluate_block(k, t, state, scratch, ConstraintParts::jacobians_only());
    block_reaction(constraints, k, scratch, lambda, state, out);
  }
}

}  // namespace treedyn
