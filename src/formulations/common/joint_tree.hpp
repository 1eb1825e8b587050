// What the joint-coordinate formulations (dca, hdca) share on top of dc_core.hpp and
// joint_space.hpp: where each joint's handle is, the handle coefficients of a single body, and a
// joint's rows in both the tree (D) form and the loop-closing (absolute constraint) form.
#pragma once

#include <span>
#include <vector>

#include "treedyn/dc_core.hpp"
#include "treedyn/joint_space.hpp"

namespace treedyn::jc {

using Rows6 = dc::JointRows<double, 6>;

/// Joint sides for the divide-and-conquer core: tree joints oriented tree parent -> tree child
/// with 6 - dof rows, loop-closing joints as in the model with their constraint equations.
struct JointLayout {
  std::vector<dc::JointSides> sides;  // per model joint
  std::vector<int> tree_index;        // per model joint: its index in JointSpace::tree(), -1 if loop-closing
};
JointLayout make_layout(const Model& model, const JointSpace& joints);

/// The handle point of every model joint: a tree joint's point o, a loop-closing joint's child
/// frame origin.
void handle_points(const Model& model, const JointLayout& layout, const std::vector<JointMotion>& motion,
                   const SystemState& bodies, std::vector<Vec3>& points);

/// Mobility blocks of one body at its handles: K_hk = S(l_h)' M^-1 S(l_k), with
/// M^-1 = diag(I / m, J^-1) (global) and l_h = handle point - centre of mass.
template <class S>
void body_mobility(S inverse_mass, const Mat3T<S>& J_inverse, std::span<const Vec3T<S>> l,
                   typename dc::HandleTree<S, 6>::Node& leaf);

/// Tree joint in D form: G_c = D', G_p = -D', r = D' bias (bias = kappa for accelerations, 0 for
/// velocities).
void tree_rows(const JointMotion& motion, const Vec6& bias, Rows6& rows);

/// Loop-closing joint: its absolute constraint rows J_P V_P + J_C V_C (centre-of-mass twists)
/// moved to the handle point o: G = J S(-l)'. `rhs` is the right-hand side in centre-of-mass
/// terms; with `acceleration`, the handles' centripetal terms are added to it.
void loop_rows(const ConstraintBlock& block, const Vec3& point, const BodyState& P, const BodyState& C,
               const ConstraintVector& rhs, bool acceleration, Rows6& rows);

}  // namespace treedyn::jc
