// treedyn — joint reactions and driver efforts from the multipliers of the absolute-coordinate
// constraint equations (kinematics.hpp), shared by the formulations that solve for them.
#pragma once

#include "treedyn/formulation.hpp"

namespace treedyn {

/// out.reactions (one per joint, on the child, torque about the child's joint-frame origin) and
/// out.driver_efforts from multipliers lambda laid out as `constraints` lays out its rows: the
/// load on body i of block k is -J_i' lambda_k (twist form, at the centre of mass).
void reactions_from_multipliers(const ConstraintSet& constraints, const std::vector<ConstraintBlock>& blocks,
                                const Eigen::Ref<const Eigen::VectorXd>& lambda, const SystemState& state,
                                Snapshot& out);
/// The same, evaluating each block's Jacobians at (t, state) in turn (ConstraintSet::visit_block:
/// for a formulation that keeps no blocks, ali3).
void reactions_from_multipliers(const ConstraintSet& constraints, double t, const Eigen::Ref<const Eigen::VectorXd>& lambda,
                                const SystemState& state, Snapshot& out);

}  // namespace treedyn
