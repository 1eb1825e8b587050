// What the joint-coordinate formulations (dca, hdca) share on top of dc_core.hpp and
// joint_space.hpp: where each joint's handle is, the handle coefficients of a single body, and a
// joint's rows in both the tree (D) form and the loop-closing (absolute constraint) form.
#pragma once

#include <span>
#include <type_traits>
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

/// Per model joint (of `joint_count`): its place in `loop_joints`, -1 for the others. What a
/// formulation keeps of the loop-closing joints alone is held per loop, not per model joint (a
/// chain has none; a constraint block per joint cost 1.4 KB a body).
std::vector<int> loop_slots(int joint_count, const std::vector<int>& loop_joints);

/// The handle point of every model joint: a tree joint's point o, a loop-closing joint's child
/// frame origin.
void handle_points(const Model& model, const JointLayout& layout, const JointMotions& motion,
                   const SystemState& bodies, std::vector<Vec3>& points);

/// The mobility of one body at its handles in their rows (a dc::LeafBlocks::InRows leaf):
///     K~_hk = G_h S(l_h)' M^-1 S(l_k) G_k' = E_h M^-1 E_k'      (paper 001 Eqs. 15-16; 004 Eq. 13)
/// with M^-1 = diag(I / m, J^-1) (J global; a 1 x 1 J^-1 in the plane), l_h = handle point -
/// centre of mass and G_h the rows of handle h's joint on this body's side. A row g = [g_v; g_w]
/// of G_h gives the row S(l_h) g = [g_v; g_w + l_h x g_v] of E_h (the load g moved to the centre
/// of mass), so K~_hk = E_v,h E_v,k' / m + (E_w,h J^-1) E_w,k'. Spatial (Dim 6) and planar
/// (Dim 3, l x g the scalar cross product) on any scalar; `rows` are the pass's joint rows.
template <class S, int Dim>
using HandleArm = std::conditional_t<Dim == 6, Vec3T<S>, Vec2T<S>>;
template <class S, int Dim>
using AngularInverse = Eigen::Matrix<S, Dim == 6 ? 3 : 1, Dim == 6 ? 3 : 1>;
template <class S, int Dim>
void mobility_rows(S inverse_mass, const AngularInverse<S, Dim>& J_inverse, std::span<const HandleArm<S, Dim>> l,
                   const std::vector<dc::JointRows<S, Dim>>& rows, typename dc::HandleTree<S, Dim>::Node& leaf);

/// Tree joint in D form: G_c = D', G_p = -D', r = D' bias (bias = kappa for accelerations, 0 for
/// velocities). A joint whose D is [I; 0] by construction (TreeJoint::unit_constraints) keeps the
/// unit rows it has from the pass before, and its r is the head of the bias, without reading D.
void tree_rows(const TreeJoint& joint, const JointMotions& motion, int k, const Vec6& bias, Rows6& rows);

/// Loop-closing joint: its absolute constraint rows J_P V_P + J_C V_C (centre-of-mass twists)
/// moved to the handle point o: G = J S(-l)'. `rhs` is the right-hand side in centre-of-mass
/// terms; with `acceleration`, the handles' centripetal terms are added to it.
void loop_rows(const ConstraintBlock& block, const Vec3& point, const BodyState& P, const BodyState& C,
               const ConstraintVector& rhs, bool acceleration, Rows6& rows);

}  // namespace treedyn::jc
