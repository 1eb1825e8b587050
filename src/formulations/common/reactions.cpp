#include "reactions.hpp"

namespace treedyn {

namespace {

/// Block k's share of out (evaluated as b at `state`: a ConstraintBlock, or a ball joint's
/// PointBlock in fixed sizes).
template <class Block>
void block_reaction(const ConstraintSet& constraints, int k, const Block& b,
                    const Eigen::Ref<const Eigen::VectorXd>& lambda, const SystemState& state, Snapshot& out) {
  const Model& model = constraints.model();
  if (b.size() == 0 || b.child == kGround) return;
  // -J_C' lambda at the child's CoM, as 0 - J_C' lambda: a zero entry is +0 (as Eigen's general
  // product with a factor -1 left it; a fixed-size block's -(...) would print -0).
  const Vec6 w = Vec6::Zero() - b.J_C.transpose() * lambda.segment(constraints.offset(k), b.size());
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
                                const SystemState& state, Snapshot& out) {
  clear(constraints.model(), out);
  for (int k = 0; k < constraints.block_count(); ++k)
    constraints.visit_block(k, t, state, ConstraintParts::jacobians_only(),
                            [&](const auto& b) { block_reaction(constraints, k, b, lambda, state, out); });
}

}  // namespace treedyn
