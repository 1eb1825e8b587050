#include "joint_tree.hpp"

#include <array>
#include <cassert>

namespace treedyn::jc {

JointLayout make_layout(const Model& model, const JointSpace& joints) {
  JointLayout layout;
  layout.sides.resize(model.joints.size());
  layout.tree_index.assign(model.joints.size(), -1);
  for (std::size_t k = 0; k < joints.tree().size(); ++k) {
    const TreeJoint& t = joints.tree()[k];
    if (t.joint < 0) continue;  // virtual free joint: no loads
    layout.tree_index[static_cast<std::size_t>(t.joint)] = static_cast<int>(k);
    layout.sides[static_cast<std::size_t>(t.joint)] = {t.parent, t.child, 6 - t.nv};
  }
  for (std::size_t j = 0; j < model.joints.size(); ++j)
    if (layout.tree_index[j] < 0) {
      const Joint& joint = model.joints[j];
      layout.sides[j] = {joint.parent, joint.child, joint_constraint_count(joint.type)};
    }
  return layout;
}

std::vector<int> loop_slots(int joint_count, const std::vector<int>& loop_joints) {
  std::vector<int> slot(static_cast<std::size_t>(joint_count), -1);
  for (std::size_t i = 0; i < loop_joints.size(); ++i) slot[static_cast<std::size_t>(loop_joints[i])] = static_cast<int>(i);
  return slot;
}

void handle_points(const Model& model, const JointLayout& layout, const JointMotions& motion,
                   const SystemState& bodies, std::vector<Vec3>& points) {
  points.resize(model.joints.size());
  for (std::size_t j = 0; j < model.joints.size(); ++j) {
    const int k = layout.tree_index[j];
    if (k >= 0) {
      points[j] = motion[static_cast<std::size_t>(k)].point;
    } else {
      const Joint& joint = model.joints[j];
      const BodyState& C = state_of(bodies, joint.child);
      points[j] = C.r + C.q * joint.child_frame.origin;
    }
  }
}

namespace {

// The moment about the centre of mass of a handle row's force part g_v at the arm l: l x g_v
// (planar: the scalar l_x g_y - l_y g_x). Row g of G_h gives the row [g_v; g_w + l x g_v] of E_h.
template <class S, int Dim, class RowV>
Eigen::Matrix<S, 1, Dim == 6 ? 3 : 1> arm_moment(const HandleArm<S, Dim>& l, const RowV& g_v) {
  if constexpr (Dim == 6) return l.cross(Vec3T<S>(g_v.transpose())).transpose();
  else return Eigen::Matrix<S, 1, 1>(l.x() * g_v(1) - l.y() * g_v(0));
}

// mobility_rows with every handle of M rows (M fixed: a chain of one joint type), or of any
// (M = Eigen::Dynamic, at most Dim).
template <class S, int Dim, int M>
void mobility_rows_sized(S inverse_mass, const AngularInverse<S, Dim>& J_inverse, std::span<const HandleArm<S, Dim>> l,
                         const std::vector<dc::JointRows<S, Dim>>& rows, typename dc::HandleTree<S, Dim>::Node& leaf) {
  constexpr int V = Dim == 6 ? 3 : 2, W = Dim - V;  // linear and angular components
  using Tree = dc::HandleTree<S, Dim>;
  using Linear = typename Tree::template Rows<M, V>;
  using Angular = typename Tree::template Rows<M, W>;
  auto arm_rows = [&](int h, Linear& E_v, Angular& E_w) {  // E_h = G_h S(l_h)', row by row
    const auto G = Tree::handle_rows(leaf, h, rows);
    const auto m = G.rows();
    E_v = G.template block<M, V>(0, 0, m, V);
    E_w = G.template block<M, W>(0, V, m, W);
    const HandleArm<S, Dim>& arm = l[static_cast<std::size_t>(h)];
    for (Eigen::Index r = 0; r < m; ++r) E_w.row(r) += arm_moment<S, Dim>(arm, E_v.row(r));
  };
  auto K_hat = leaf.K_hat();
  const int h = leaf.size();
  Linear E_va, E_vc;
  Angular E_wa, E_wc;
  for (int a = 0; a < h; ++a) {
    arm_rows(a, E_va, E_wa);
    const Angular P = E_wa * J_inverse;  // E_w,a J^-1
    for (int c = a; c < h; ++c) {
      if (c != a) arm_rows(c, E_vc, E_wc);
      const Linear& Ev = c == a ? E_va : E_vc;
      const Angular& Ew = c == a ? E_wa : E_wc;
      auto K = K_hat.template block<M, M>(leaf.o(a), leaf.o(c), E_va.rows(), Ev.rows());
      K.noalias() = inverse_mass * (E_va * Ev.transpose());
      K.noalias() += P * Ew.transpose();
      if (c != a) K_hat.template block<M, M>(leaf.o(c), leaf.o(a), Ev.rows(), E_va.rows()) = K.transpose();
    }
  }
}

// mobility_rows for a leaf whose handles have differing rows (a robot's body with a hinge, a
// universal joint and a weld; at most kMixedHandles of them): each handle's arm rows E_h and
// P_h = E_w,h J^-1 made once (not once per pair), then every block K~_ac entry by entry,
// K~_ac(i, j) = E_v,a(i, :) E_v,c(j, :)' / m + P_a(i, :) E_w,c(j, :)', sums of V and W terms
// where Eigen's dynamic-size products took most of this leaf's time (perf on MuJoCo's humanoid).
// Returns false for more handles (the caller's dynamic-size path).
constexpr int kMixedHandles = 8;

template <class S, int Dim>
bool mobility_rows_mixed(S inverse_mass, const AngularInverse<S, Dim>& J_inverse, std::span<const HandleArm<S, Dim>> l,
                         const std::vector<dc::JointRows<S, Dim>>& rows, typename dc::HandleTree<S, Dim>::Node& leaf) {
  constexpr int V = Dim == 6 ? 3 : 2, W = Dim - V;  // linear and angular components
  using Tree = dc::HandleTree<S, Dim>;
  const int h = leaf.size();
  if (h > kMixedHandles) return false;
  struct Arm {
    Eigen::Matrix<S, Dim, V> E_v;  // the handle's first m rows
    Eigen::Matrix<S, Dim, W> E_w, P;
    int m;
  };
  std::array<Arm, kMixedHandles> arms;
  for (int a = 0; a < h; ++a) {  // E_h = G_h S(l_h)', row by row
    Arm& e = arms[static_cast<std::size_t>(a)];
    const auto G = Tree::handle_rows(leaf, a, rows);
    e.m = static_cast<int>(G.rows());
    const HandleArm<S, Dim>& arm = l[static_cast<std::size_t>(a)];
    for (int r = 0; r < e.m; ++r) {
      e.E_v.row(r) = G.template block<1, V>(r, 0);
      e.E_w.row(r) = G.template block<1, W>(r, V);
      e.E_w.row(r) += arm_moment<S, Dim>(arm, e.E_v.row(r));
      e.P.row(r).noalias() = e.E_w.row(r) * J_inverse;  // E_w,h J^-1
    }
  }
  auto K_hat = leaf.K_hat();
  for (int a = 0; a < h; ++a) {
    const Arm& A = arms[static_cast<std::size_t>(a)];
    for (int c = a; c < h; ++c) {
      const Arm& C = arms[static_cast<std::size_t>(c)];
      for (int i = 0; i < A.m; ++i)
        for (int j = 0; j < C.m; ++j) {
          const S k = inverse_mass * A.E_v.row(i).dot(C.E_v.row(j)) + A.P.row(i).dot(C.E_w.row(j));
          K_hat(leaf.o(a) + i, leaf.o(c) + j) = k;
          if (c != a) K_hat(leaf.o(c) + j, leaf.o(a) + i) = k;
        }
    }
  }
  return true;
}

// Every handle a spherical joint's unit rows (G = s [I 0], s = -1 on the p side, 3 rows):
// E_h = s_h [I, -L_h] with L = skew(l), so K~_hk = s_h s_k (I / m - L_h J^-1 L_k), the leading
// 3 x 3 block of S(l_h)' M^-1 S(l_k). By cross products: P_h = L_h J^-1 has columns
// l_h x J^-1(:, j), and row i of -P_h L_k is l_k x P_h(i, :).
template <class S>
bool spherical_unit_rows(const std::vector<dc::JointRows<S, 6>>& rows, const typename dc::HandleTree<S, 6>::Node& leaf) {
  for (int j : leaf.handles()) {
    const dc::JointRows<S, 6>& r = rows[static_cast<std::size_t>(j)];
    if (!r.unit_rows || r.rows != 3) return false;
  }
  return true;
}

// H: the leaf's handle count if fixed at compile time (2, a chain's inner body), else
// Eigen::Dynamic; every handle has 3 rows, so handle a's rows start at 3 a. The signs go into the
// arms, s_h l_h (negation is exact, so s_a s_c K~_ac comes out bit for bit as if multiplied after).
template <class S, int H>
void spherical_mobility_rows(S inverse_mass, const Mat3T<S>& J_inverse, std::span<const Vec3T<S>> l,
                             typename dc::HandleTree<S, 6>::Node& leaf) {
  using V3 = Vec3T<S>;
  constexpr int R = H == Eigen::Dynamic ? Eigen::Dynamic : 3 * H;
  assert(leaf.rows() == 3 * leaf.size());
  Eigen::Map<Eigen::Matrix<S, R, R>> K_hat(leaf.rows_at, leaf.rows(), leaf.rows());
  const int h = H == Eigen::Dynamic ? leaf.size() : H;
  auto signed_arm = [&](int a) {
    const V3& la = l[static_cast<std::size_t>(a)];
    return leaf.holds_p()[static_cast<std::size_t>(a)] != 0 ? V3(-la) : la;  // unit_sign: -1 on the p side
  };
  for (int a = 0; a < h; ++a) {
    const V3 la = signed_arm(a);
    const S sa = dc::HandleTree<S, 6>::unit_sign(leaf.holds_p()[static_cast<std::size_t>(a)] != 0);
    Mat3T<S> P;
    for (int j = 0; j < 3; ++j) P.col(j) = la.cross(V3(J_inverse.col(j)));
    for (int c = a; c < h; ++c) {
      const V3 lc = signed_arm(c);
      const S sign = sa * dc::HandleTree<S, 6>::unit_sign(leaf.holds_p()[static_cast<std::size_t>(c)] != 0);
      auto K = K_hat.template block<3, 3>(3 * a, 3 * c);
      for (int i = 0; i < 3; ++i) K.row(i) = lc.cross(V3(P.row(i).transpose())).transpose();
      K.diagonal().array() += sign * inverse_mass;
      if (c != a) K_hat.template block<3, 3>(3 * c, 3 * a) = K.transpose();
    }
  }
}

}  // namespace

template <class S, int Dim>
void mobility_rows(S inverse_mass, const AngularInverse<S, Dim>& J_inverse, std::span<const HandleArm<S, Dim>> l,
                   const std::vector<dc::JointRows<S, Dim>>& rows, typename dc::HandleTree<S, Dim>::Node& leaf) {
  if constexpr (Dim == 6)
    if (spherical_unit_rows<S>(rows, leaf))
      return leaf.size() == 2 ? spherical_mobility_rows<S, 2>(inverse_mass, J_inverse, l, leaf)
                              : spherical_mobility_rows<S, Eigen::Dynamic>(inverse_mass, J_inverse, l, leaf);
  // uniform_rows() is 0 when the handles' rows differ: mobility_rows_mixed, or the dynamic sizes.
  if (leaf.uniform_rows() == 0 && mobility_rows_mixed<S, Dim>(inverse_mass, J_inverse, l, rows, leaf)) return;
  dc::HandleTree<S, Dim>::with_rows(leaf.uniform_rows(),
                                    [&]<int M>() { mobility_rows_sized<S, Dim, M>(inverse_mass, J_inverse, l, rows, leaf); });
}

#define TREEDYN_MOBILITY_ROWS(S, Dim)                                                                           \
  template void mobility_rows<S, Dim>(S, const AngularInverse<S, Dim>&, std::span<const HandleArm<S, Dim>>, \
                                      const std::vector<dc::JointRows<S, Dim>>&, dc::HandleTree<S, Dim>::Node&);
TREEDYN_MOBILITY_ROWS(double, 6)
TREEDYN_MOBILITY_ROWS(float, 6)
TREEDYN_MOBILITY_ROWS(double, 3)
TREEDYN_MOBILITY_ROWS(float, 3)
#undef TREEDYN_MOBILITY_ROWS

void tree_rows(const TreeJoint& joint, const JointMotions& motion, int k, const Vec6& bias, Rows6& rows) {
  const int n = 6 - motion[static_cast<std::size_t>(k)].nv;
  if (rows.keeps_unit_rows(joint.unit_constraints, n)) {  // D' bias = bias.head(n); the rest of r stays zero
    for (int i = 0; i < n; ++i) rows.r(i) = bias(i);
    return;
  }
  rows.set_tree_rows(motion.D(k));
  subspace_project(motion.D(k), n, bias, rows.r);
}

void loop_rows(const ConstraintBlock& block, const Vec3& point, const BodyState& P, const BodyState& C,
               const ConstraintVector& rhs, bool acceleration, Rows6& rows) {
  const int n = block.size();
  rows.reset(n);
  rows.r.head(n) = rhs;
  auto side = [&](const ConstraintRows& J, const BodyState& body, bool grounded, Rows6::RowsMap G) {
    if (grounded) return;
    const Vec3 l = point - body.r;
    G.topLeftCorner(n, 3) = J.leftCols<3>();
    G.topRightCorner(n, 3).noalias() = J.leftCols<3>() * skew(l);
    G.topRightCorner(n, 3) += J.rightCols<3>();
    if (acceleration) rows.r.head(n).noalias() += J.leftCols<3>() * body.w.cross(body.w.cross(l));
  };
  side(block.J_P, P, block.parent == kGround, rows.edit_G_p());
  side(block.J_C, C, block.child == kGround, rows.edit_G_c());
}

}  // namespace treedyn::jc
