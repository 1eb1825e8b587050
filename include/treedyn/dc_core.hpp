// treedyn — the divide-and-conquer core shared by the joint-coordinate formulations (dca, hdca,
// spatial and planar, float and double).
//
// Every (physical or compound) body relates a kinematic quantity x at each of its handles
// (acceleration for dca, velocity for hdca) to the loads f applied at its handles:
//     x_i = sum_j K_ij f_j + b_i                      (paper 001 Eqs. 15-16; 004 Eqs. 11-12)
// A handle is a joint; the joint's two bodies see it through rows G_p, G_c:
//     G_p x_p + G_c x_c = r,     f_p = G_p' lambda,   f_c = G_c' lambda
// (for a joint eliminated in joint coordinates G_c = D', G_p = -D', r = 0 for hdca,
// r = D' kappa for dca, so that f_c = D lambda = -f_p: Newton's third law, paper 001 Eq. 25).
//
// Assembly of bodies A and B into C eliminates the loads of the joints E between them, and of the
// joints to ground of A or B when it is a leaf (one-sided: the sum below then has one side). With
// m rows in E,
//     Z = sum_{s in A,B} G_s K^s_EE G_s'                        (m x m)
//     Y_i = K^s_{iE} G_s'   for every remaining handle i       (Dim x m)
//     beta_hat = Z^+ (r - sum_s G_s b^s_E)
//     K^C_ij = [same side] K^s_ij - Y_i Z^+ Y_j',   b^C_i = b^s_i + Y_i beta_hat
// For one joint between two two-handle bodies this is paper 001's Eqs. 27-36 (W = -D Z^-1 D',
// beta = -D beta_hat) in the leaner form of paper 004, Eqs. 27-37 (W^A, W^B, beta_hat: the
// m-dimensional intermediates). Disassembly recovers
//     lambda = beta_hat - Z^+ sum_j Y_j' f_j
// and the children take f = G' lambda at their eliminated handles (each node pulls its handles'
// loads from its parent in its own disassembly: HandleTree::pull_loads). The base connection is the same
// elimination of the root's handles against ground (which has no handle equations):
//     lambda = Z^+ (r - G b)                                   (paper 001 Eqs. 43-45)
// Here it is left with the handles of a one-body model only: the joints to ground are eliminated
// the same way, one-sided, where their body's leaf joins its sibling, so that they do not ride up
// to the root (N ground pivots would make the root's Z a dense 5N x 5N system; topology.hpp).
// Z^+ is a Cholesky solve, or the minimum-norm solution when Z is singular (redundant loops).
//
// In the handles' rows. Every load at a handle i is f_i = G_i' lambda_i, G_i the rows of its joint
// on the side the body holds (m_i of them: 3 for a spherical joint, 5 for a revolute one), and an
// elimination reads K and b only through G: G_i K_ij G_j' and G_i b_i. So a node keeps only
// those, K~_ij = G_i K_ij G_j' (m_i x m_j) and b~_i = G_i b_i, and its loads as the multipliers
// lambda_i; the equations above become
//     Z = sum_s K~^s_EE,   Y~_i = K~^s_iE (m_i x m),   beta_hat = Z^+ (r - sum_s b~^s_E),
//     K~^C_ij = [same side] K~^s_ij - Y~_i Z^+ Y~_j',   b~^C_i = b~^s_i + Y~_i beta_hat,
//     lambda = beta_hat - Z^+ sum_j Y~_j' lambda_j
// (the same numbers up to round-off: for unit rows, G = +-[I 0], exactly the leading blocks of
// the Dim-sized ones). Every inner node is held so, and so is a leaf of a joint-coordinate
// formulation (LeafBlocks::InRows): it fills K~ and b~ itself, from the factors of its blocks
// (K_ij = S(l_i)' M^-1 S(l_j): K~_ij = E_i M^-1 E_j', E_i = G_i S(l_i)'), and reads its loads
// f_i = G_i' lambda_i through load(). A spherical chain's node holds 6 x 6 scalars where
// Dim-sized blocks took 4 x 36, and its products are 3 x 3. A leaf of an absolute-coordinate
// formulation (LeafBlocks::Shared) keeps its one K and b and the sum f of its handles' loads, per
// Dim; G is applied where a parent reads it.
//
// Glossary (symbol -> code): K_ij -> SharedLeaf::K (xi_ij in 001/004, Phi_ij in Featherstone's
// DCA), b_i -> SharedLeaf::b (xi_i0; bias accelerations), sum_i f_i -> SharedLeaf::f (T_i:
// impulses; forces) at a Shared leaf;
// K~, b~, lambda_i -> K_hat(), b_hat(), f_hat() at a node in rows; Z, Y_i, beta_hat, lambda (sigma)
// as named. All per-node storage is sized once by HandleTree's constructor; a node's K~, b~, f~
// below its subtree's root are alive only within a pass (Node::K_r).
#pragma once

#include <algorithm>
#include <array>
#include <cassert>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "treedyn/linalg.hpp"
#include "treedyn/model.hpp"
#include "treedyn/parallel.hpp"
#include "treedyn/topology.hpp"

namespace treedyn::dc {

template <class S, int Dim>
struct Types {
  using Vec = Eigen::Matrix<S, Dim, 1>;
  using Mat = Eigen::Matrix<S, Dim, Dim>;
  /// Dim x Dim, row-major: the unit rows' constants (JointRows::kUnit), whose first m rows are
  /// the m x Dim rows of a joint with m rows.
  using RowsMat = Eigen::Matrix<S, Dim, Dim, Eigen::RowMajor>;
  /// A joint's m x Dim rows G where JointRows holds them (views: nested by value in expressions).
  /// At most Dim rows: products with them make fixed-capacity temporaries, never heap ones.
  using RowsN = Eigen::Matrix<S, Eigen::Dynamic, Dim, Eigen::RowMajor, Dim, Dim>;
  using RowsMap = Eigen::Map<RowsN>;
  using ConstRowsMap = Eigen::Map<const RowsN>;
};

/// A joint's equations as its two bodies see them: G_p x_p + G_c x_c + c lambda = r, in the first
/// `rows` rows; the remaining rows of G_p, G_c and r are zero. The compliance c is zero for a hard
/// constraint; the augmented Lagrangian of paper 000 gives every joint c = 1/alpha (the I/alpha of
/// its matrix C, Eq. 35), which keeps Z positive definite even when the constraints are redundant
/// or singular.
///
/// Storage: r and the scalars in place; G_p and G_c on the heap in exactly the rows there are,
/// one block of 2 x rows x Dim (G_p's rows, then G_c's: 288 bytes for a ball joint's 3 rows in
/// double, where two Dim x Dim blocks took 576), made the first time they are written
/// (edit_G_p(), edit_G_c()) and kept, so that a pass that rewrites them allocates nothing (a
/// joint whose row count grows gets a larger block, its rows kept). Unit rows (below) have none:
/// a spherical chain's joints are 80 bytes each, and the pass reads r and the flags from
/// contiguous memory. Arm rows (below) keep only their arms and axes there (12 numbers at most,
/// where G takes 36 for a ball joint and 60 for a revolute one).
/// Copies are deep.
template <class S, int Dim>
struct JointRows {
  using RowsMat = typename Types<S, Dim>::RowsMat;
  using RowsMap = typename Types<S, Dim>::RowsMap;            // rows x Dim, contiguous
  using ConstRowsMap = typename Types<S, Dim>::ConstRowsMap;
  typename Types<S, Dim>::Vec r = Types<S, Dim>::Vec::Zero();
  S compliance = S(0);
  int rows = 0;
  /// G_c = [I 0] and G_p = -G_c exactly (a tree joint whose constraint subspace is the first
  /// `rows` axes: spherical, fixed). The kernels then take blocks of K and b where they would
  /// multiply by G, with the same result. Only set_tree_rows sets the flag, and it keeps rows it
  /// finds flagged: rows that were set by set_tree_rows are rewritten only after reset() (which
  /// clears it). Loop rows, written in place, are never flagged.
  /// (Cleared by hand, rows that were unit rows read as zero until written.)
  bool unit_rows = false;
  /// A joint's rows in absolute (centre-of-mass twist) coordinates that keep a point together and
  /// at most two axes perpendicular (ball, universal and revolute joints), held as the two arms
  /// l_p, l_c (the joint's point less each body's centre of mass, global) and the k = rows - 3
  /// axis rows w_i: on each side G = s [I, -skew(l); 0, W], W's rows w_i', s = unit_sign (-1 on
  /// the p side), Dim 6 only. The kernels apply them by cross and dot products; G_p() and G_c()
  /// refuse them (no G is stored): arm_G() writes one out. Only set_arm_rows and hold_as_arms set
  /// the flag; reset() clears it.
  bool arm_rows = false;
  static constexpr int kMaxArmAxes = 2;

  JointRows() = default;
  JointRows(const JointRows& o)
      : r(o.r), compliance(o.compliance), rows(o.rows), unit_rows(o.unit_rows), arm_rows(o.arm_rows) {
    copy_G(o);
  }
  JointRows& operator=(const JointRows& o) {  // into the storage held (a pass's copy allocates nothing)
    if (this == &o) return *this;
    r = o.r;
    compliance = o.compliance;
    rows = o.rows;
    unit_rows = o.unit_rows;
    arm_rows = o.arm_rows;
    copy_G(o);
    return *this;
  }
  JointRows(JointRows&&) noexcept = default;
  JointRows& operator=(JointRows&&) noexcept = default;

  /// The `rows` x Dim rows as the bodies see them: for unit rows -[I 0] and [I 0] (shared
  /// constants), for rows never written zero. A view, valid until the rows are next written or
  /// their count changes.
  ConstRowsMap G_p() const { return read(true); }
  ConstRowsMap G_c() const { return read(false); }
  /// Arm rows without axes: a ball joint's 3 rows, G = s [I, -skew(l)] on each side (see
  /// arm_rows), r zero.
  void set_arm_rows(const Vec3T<S>& l_p, const Vec3T<S>& l_c) { hold_arms(3, l_p, l_c); }
  /// Holds a joint's n rows G_p = J_p, G_c = J_c (n x Dim, J_p unread if `p_grounded`) as arm rows
  /// if they have that form exactly: J_c = [I, -skew(l_c); 0, W], J_p = -[I, -skew(l_p); 0, W]
  /// with the same W, 3 to 5 rows. Returns false, holding nothing, for any other rows. r zero.
  template <class DP, class DC>
  bool hold_as_arms(const Eigen::MatrixBase<DP>& J_p, const Eigen::MatrixBase<DC>& J_c, int n, bool p_grounded) {
    if constexpr (Dim != 6) {
      return false;
    } else {
      if (n < 3 || n > 3 + kMaxArmAxes) return false;
      Vec3T<S> l_p = Vec3T<S>::Zero(), l_c;
      if (!point_rows_arm(J_c, S(1), l_c) || (!p_grounded && !point_rows_arm(J_p, S(-1), l_p))) return false;
      for (int i = 3; i < n; ++i)
        for (int c = 0; c < 3; ++c)
          if (J_c(i, c) != S(0) || (!p_grounded && (J_p(i, c) != S(0) || J_p(i, 3 + c) != -J_c(i, 3 + c)))) return false;
      S* axes = hold_arms(n, l_p, l_c);
      for (int i = 3; i < n; ++i)
        for (int c = 0; c < 3; ++c) axes[3 * (i - 3) + c] = J_c(i, 3 + c);
      return true;
    }
  }
  /// The arm of one side (arm rows).
  Eigen::Map<const Vec3T<S>> arm(bool p_side) const {
    assert(arm_rows);
    return Eigen::Map<const Vec3T<S>>(G_.get() + (p_side ? 0 : 3));
  }
  /// Axis row w_i (i < rows - 3) of arm rows, the same on both sides (G's angular part s w_i').
  Eigen::Map<const Vec3T<S>> axis(int i) const {
    assert(arm_rows && i >= 0 && i < rows - 3);
    return Eigen::Map<const Vec3T<S>>(G_.get() + 6 + 3 * i);
  }
  /// One side's arm rows written out as G (rows x Dim), for a kernel that multiplies by G.
  void arm_G(bool p_side, RowsMat& G) const {
    assert(arm_rows);
    if constexpr (Dim == 6) {
      const S s = unit_sign(p_side);
      G.setZero();
      G.template block<3, 3>(0, 0) = s * Mat3T<S>::Identity();
      G.template block<3, 3>(0, 3) = -s * skew(Vec3T<S>(arm(p_side)));
      for (int i = 3; i < rows; ++i) G.template block<1, 3>(i, 3) = s * axis(i - 3).transpose();
    }
  }
  /// The sign of unit rows on each side: G_p = -[I 0], G_c = [I 0].
  static S unit_sign(bool p_side) { return p_side ? S(-1) : S(1); }
  /// For writing them, `rows` x Dim (made zero on first use; set `rows` first). Not for unit
  /// rows: reset() them first.
  RowsMap edit_G_p() { return RowsMap(write(), rows, Dim); }
  RowsMap edit_G_c() { return RowsMap(write() + capacity_ * Dim, rows, Dim); }

  /// Zeroes everything and sets the row count.
  void reset(int n) {
    zero_G();
    r.setZero();
    rows = n;
    unit_rows = false;
    arm_rows = false;
  }
  /// True when these are the unit rows set_tree_rows found for n rows and `unit_at_every_state`
  /// says D stays [I; 0] (the caller knows it: TreeJoint::unit_constraints, a spherical or fixed
  /// joint): they are the rows set_tree_rows would keep, without D's entries compared again.
  bool keeps_unit_rows(bool unit_at_every_state, int n) const { return unit_at_every_state && unit_rows && rows == n; }
  /// A tree joint's rows D' (V_c - V_p) = r from its constraint subspace D (Dim x n): G_c = D',
  /// G_p = -D', r zero. Rows that are already the unit rows of the same D == [I; 0] (a spherical
  /// joint's, pass after pass) are kept as they are: only r is cleared; with
  /// `unit_at_every_state`, without comparing D's entries (keeps_unit_rows). Unit rows write no G.
  template <class Derived>
  void set_tree_rows(const Eigen::MatrixBase<Derived>& D, bool unit_at_every_state = false) {
    if (keeps_unit_rows(unit_at_every_state, static_cast<int>(D.cols()))) {
      r.setZero();  // the pass's path for a ball joint: small enough to inline
      return;
    }
    rewrite_tree_rows(D);
  }

 private:
  /// set_tree_rows past its first test: compares D with [I; 0] and writes what differs.
  template <class Derived>
  void rewrite_tree_rows(const Eigen::MatrixBase<Derived>& D) {
    const int n = static_cast<int>(D.cols());
    bool unit = true;  // D == [I; 0] exactly (an element loop: Eigen's isIdentity costs more than the rest)
    for (int c = 0; c < n && unit; ++c)
      for (int i = 0; i < Dim; ++i)
        if (D(i, c) != (i == c ? S(1) : S(0))) {
          unit = false;
          break;
        }
    if (unit && unit_rows && rows == n) {
      r.setZero();
      return;
    }
    reset(n);
    if (unit) {
      unit_rows = true;
      return;
    }
    edit_G_c().topRows(n) = D.transpose();
    edit_G_p().topRows(n) = -D.transpose();
  }

  /// Sets the flag and n rows, r zero, stores the arms, and returns where the n - 3 axes go.
  S* hold_arms(int n, const Vec3T<S>& l_p, const Vec3T<S>& l_c) {
    static_assert(Dim == 6, "JointRows: arm rows are spatial");
    r.setZero();
    unit_rows = arm_rows = false;
    rows = 1;  // the storage's: one row a side (2 Dim numbers) holds arms and two axes; write() keeps G_ when larger
    S* arms = write();
    rows = n;
    arm_rows = true;
    Eigen::Map<Vec3T<S>> to_p(arms), to_c(arms + 3);
    to_p = l_p;
    to_c = l_c;
    return arms + 6;
  }
  /// Whether J's first 3 rows are s [I, -skew(l)] exactly, and l.
  template <class D>
  static bool point_rows_arm(const Eigen::MatrixBase<D>& J, S s, Vec3T<S>& l) {
    for (int i = 0; i < 3; ++i)
      for (int c = 0; c < 3; ++c)
        if (J(i, c) != (i == c ? s : S(0))) return false;
    if (J(0, 3) != S(0) || J(1, 4) != S(0) || J(2, 5) != S(0)) return false;
    l = Vec3T<S>(-s * J(2, 4), -s * J(0, 5), -s * J(1, 3));  // -s skew(l): (2,4) = -s l_x, (0,5) = -s l_y, (1,3) = -s l_z
    return J(1, 5) == -J(2, 4) && J(2, 3) == -J(0, 5) && J(0, 4) == -J(1, 3);
  }

  std::unique_ptr<S[]> G_;  // G_p's capacity_ rows, then G_c's, each Dim wide
  /// Rows G_ holds a side: at least `rows` once written (a count raised by hand reads as zero
  /// until the rows are next written, which keeps those written before).
  int capacity_ = 0;

  /// G_ with room for `rows` rows a side; a joint's rows kept when it grows (the rest zero).
  S* write() {
    assert(!unit_rows && !arm_rows && "JointRows: unit and arm rows are not written in place; reset() them first");
    assert(rows >= 0 && rows <= Dim);
    if (!G_ || capacity_ < rows) {
      std::unique_ptr<S[]> grown(new S[static_cast<std::size_t>(2 * rows * Dim)]());
      if (G_)
        for (int side = 0; side < 2; ++side)
          std::copy_n(G_.get() + side * capacity_ * Dim, capacity_ * Dim, grown.get() + side * rows * Dim);
      G_ = std::move(grown);
      capacity_ = rows;
    }
    return G_.get();
  }
  ConstRowsMap read(bool p_side) const {
    if (arm_rows) throw std::logic_error("dc::JointRows: arm rows hold no G (arm_G() writes it out)");
    if (unit_rows) return ConstRowsMap(kUnit[static_cast<std::size_t>(rows)][p_side ? 1 : 0].data(), rows, Dim);
    if (!G_ || capacity_ < rows) return ConstRowsMap(kUnit[0][0].data(), rows, Dim);  // kUnit[0]: zero (rows never written)
    return ConstRowsMap(G_.get() + (p_side ? 0 : capacity_ * Dim), rows, Dim);
  }
  /// Zeroes the rows G_ holds, in place.
  void zero_G() {
    if (G_) std::fill_n(G_.get(), 2 * capacity_ * Dim, S(0));
  }
  /// o's rows into G_ (allocating only where G_'s size differs from o's), or zero where o has none.
  void copy_G(const JointRows& o) {
    if (!o.G_) {
      zero_G();  // reads as o's: zero (or o's unit rows)
      return;
    }
    if (!G_ || capacity_ != o.capacity_) {
      G_.reset(new S[static_cast<std::size_t>(2 * o.capacity_ * Dim)]);
      capacity_ = o.capacity_;
    }
    std::copy_n(o.G_.get(), 2 * capacity_ * Dim, G_.get());
  }
  /// kUnit[n][side]: [I 0] (c side) or -[I 0] (p side) in the first n rows, zero below. A static
  /// member, not a function's static: no initialisation guard in the kernels that read rows.
  static std::array<std::array<RowsMat, 2>, Dim + 1> unit_blocks() {
    std::array<std::array<RowsMat, 2>, Dim + 1> b;
    for (int m = 0; m <= Dim; ++m)
      for (int side = 0; side < 2; ++side) {
        b[static_cast<std::size_t>(m)][static_cast<std::size_t>(side)].setZero();
        for (int i = 0; i < m; ++i) b[static_cast<std::size_t>(m)][static_cast<std::size_t>(side)](i, i) = unit_sign(side == 1);
      }
    return b;
  }
  static inline const std::array<std::array<RowsMat, 2>, Dim + 1> kUnit = unit_blocks();
};

/// Which bodies hold a joint's p and c sides, and how many rows it has.
struct JointSides {
  int body_p = kGround, body_c = kGround;
  int rows = 0;
  bool operator==(const JointSides&) const = default;
};

/// The base connection's elimination: the root's handles against ground (paper 001, Eqs. 43, 45),
/// Z and lambda m-dimensional, in storage of its own.
template <class S>
struct BaseElimination {
  Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic> Z;
  Eigen::Matrix<S, Eigen::Dynamic, 1> lambda;
  PsdSolver<S> solver;
  void resize(int m, InverseMethod method) {
    Z.setZero(m, m);
    lambda.setZero(m);
    solver = PsdSolver<S>(m, method);
  }
};

/// The elimination of several joints between a node's children (a loop closing there), m rows in
/// all: paper 004's C, W^A, W^B, beta_hat in dynamic sizes. Column-major, in HandleTree's arenas,
/// h the node's handles, each block from Eigen's alignment:
/// - Z (m x m) and Y_i (Dim x m, its first m_i rows used: handle i's coupling to the eliminated
///   rows) are read only within the node's assembly, so they lie with the node's K~ (in its
///   stack buffer when it has one: other nodes then overwrite them);
/// - beta_hat, lambda (m each) and W_i = Z^+ Y_i' (m x Dim, its first m_i columns used) are kept
///   for bias-only passes and multiplier(), in the node's own storage.
/// The solver keeps Z's factor; it holds its own heap storage, sized once.
template <class S, int Dim>
struct MultipleElimination {
  using MapZ = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>>;
  using MapY = Eigen::Map<Eigen::Matrix<S, Dim, Eigen::Dynamic>>;
  using MapW = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Dim>>;
  using MapV = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, 1>>;
  /// Where the blocks lie, in scalars (HandleTree::multiple_layout sets it from m): Z at Z_at,
  /// the Y_i from y_offset; beta_hat and lambda at kept_at, the W_i from w_offset; a handle's Y_i
  /// and W_i (Dim m scalars each) `stride` apart.
  struct Layout {
    int m = 0;
    std::size_t y_offset = 0, w_offset = 0, stride = 0;
    std::size_t scratch_size(int h) const { return y_offset + static_cast<std::size_t>(h) * stride; }  // Z, the Y_i
    std::size_t kept_size(int h) const { return w_offset + static_cast<std::size_t>(h) * stride; }     // beta_hat, lambda, the W_i
  };
  Layout at;
  S* Z_at = nullptr;
  S* kept_at = nullptr;
  PsdSolver<S> solver;
  MapZ Z() const { return {Z_at, at.m, at.m}; }
  MapY Y(int i) const { return {Z_at + at.y_offset + static_cast<std::size_t>(i) * at.stride, Dim, at.m}; }
  MapV beta_hat() const { return {kept_at, at.m}; }
  MapV lambda() const { return {kept_at + at.m, at.m}; }
  MapW W(int i) const { return {kept_at + at.w_offset + static_cast<std::size_t>(i) * at.stride, at.m, Dim}; }
};

/// Most handles a node may have for the single-joint kernel's stack storage.
inline constexpr int kMaxSingleHandles = 8;

/// A loop f(i), i in [0, count), that solve() runs before the assembly in the same parallel
/// region (see Parallel::pass); for example the joints' rows of the pass.
template <class F>
struct Prologue {
  int count;
  F f;
};
struct NoPrologue {
  int count = 0;
  void (*f)(int) = [](int) {};
};

/// How a leaf holds its K and b. In joint coordinates (dca, hdca) every pair of handles has its
/// own block, K_ij = S(l_i)' M^-1 S(l_j): the leaf is held in its handles' rows (InRows) and its
/// formulation fills K~ = G K G' and b~ = G b (set_leaf_bias) itself, reading its loads through
/// load(). In absolute coordinates (ali3, implicit) the bodies' coordinates are those of the
/// centre of mass and the joints' rows carry the arms, so K_ij is the same matrix for every pair:
/// the leaf stores it once per Dim (Shared; less memory on long chains, no copies per pass), with
/// its one b and the sum of its handles' loads f, and G is applied where its parent reads it.
/// SharedBlockDiagonal: Shared, with every leaf's K = diag(k I, K_w) in space (Dim 6), held as
/// k and the 3 x 3 K_w (10 numbers where K takes 36): a body's inverse spatial inertia about its
/// centre of mass, scaled (ali3 without geometric stiffness). Its parents' products skip the
/// zero blocks.
enum class LeafBlocks { InRows, Shared, SharedBlockDiagonal };

/// Whether a tree's passes may be bias-only (solve_bias). Such a pass reads each single-joint
/// elimination's Z^+ from the last full assembly. A tree made for full passes only (dca, hdca)
/// does not keep it: an m x m block a node less to hold, and to write at every assembly, which at
/// 65,536 bodies goes to memory.
enum class BiasPasses { Allowed, Never };

template <class S, int Dim>
class HandleTree {
 public:
  using T = Types<S, Dim>;
  using Vec = typename T::Vec;
  using Mat = typename T::Mat;
  using Multiple = MultipleElimination<S, Dim>;
  /// A block in handles' rows (m_i x m_j, m_i <= Dim) of fixed or dynamic size, on the stack.
  template <int R, int C>
  using Rows = Eigen::Matrix<S, R, C, R == 1 && C != 1 ? Eigen::RowMajor : Eigen::ColMajor,
                             R == Eigen::Dynamic ? Dim : R, C == Eigen::Dynamic ? Dim : C>;

  struct Eliminated {
    int joint, offset, rows;
    int left, right;  // its handle index in the left and right child (for the base: in the root); -1 on
                      // ground's side of a joint to ground (eliminated one-sided, by the multiple kernel)
    bool p_left;      // the left child (for the base: the root) holds (or, being ground's, would hold) the p side
  };

  /// A Shared leaf's blocks, together (a parent reads K and b, the leaf's disassembly writes f):
  /// b_i, the same at every handle, and f = sum_i G_i' lambda_i, all its formulation reads back;
  /// then K_ij, the same for every pair of handles (in absolute coordinates at the centre of mass
  /// the joints' rows carry the arms), as a full block (SharedLeafK) or, for
  /// LeafBlocks::SharedBlockDiagonal, as diag(k I, K_w) (SharedLeafDiagonalK).
  struct SharedLeaf {
    Vec b = Vec::Zero();
    Vec f = Vec::Zero();
  };
  struct SharedLeafK : SharedLeaf {
    Mat K = Mat::Zero();  // 48 numbers a leaf where a K and a b and f per handle took 60 on a ball-joint chain
  };
  struct SharedLeafDiagonalK : SharedLeaf {
    S k = S(0);                        // K's first three diagonal entries (Dim 6)
    Mat3T<S> K_w = Mat3T<S>::Zero();   // its last 3 x 3 block: 22 numbers a leaf
  };

  struct Node {
    using MapX = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic>>;
    using MapV = Eigen::Map<Eigen::Matrix<S, Eigen::Dynamic, 1>>;
    struct Source {
      int side = 0, index = 0;  // child (0 left, 1 right) and handle index there
    };
    // Where a node's records lie in HandleTree's arenas (laid out in the order the passes visit
    // the nodes), and how many; the accessors below give them as spans. HandleTree's constructor
    // sets every field. A record is one cache line: one of 11 spans took 200 bytes, and loading a
    // child's was the largest cost of a disassembly on long chains.
    //
    // A node in its handles' rows (every inner node; an InRows leaf): with o_i = o(i) and
    // r = rows() the sum of the handles' rows m_i, G_i K_ij G_j' is the (o_i, o_j) block of the
    // r x r matrix K_hat(), G_i b_i and the multipliers lambda_i of handle i's joint
    // (f_i = G_i' lambda_i) the segments at o_i of b_hat() and f_hat(); K~, b~, f~ lie together
    // at rows_at.
    // Lifetime: below a subtree's root (AssemblyTree::subtrees) they live in buffers that other
    // nodes of the subtree reuse (HandleTree::place_in_stack), so they hold a node's values only
    // within a pass: K~ and b~ from the node's assembly (a leaf's fill) to its parent's, f~ from
    // its own disassembly (which pulls it from its parent) to its children's, which pull from it
    // (a leaf in rows copies none: load() reads its loads where its parent holds them, and only a
    // one-body model's root leaf takes its f~ from the base connection); a several-joint elimination's Z and
    // Y lie with them, and hold its values only within its assembly. After a pass, read the
    // joints' loads with multiplier() or joint_load().
    // What a node holds (kind): in its handles' rows (rows_at) with no elimination, a single-joint
    // elimination (single_at; "uniform" where every handle has as many rows as the joint) or a
    // several-joint one (multiple); or, a Shared leaf, its K, b, f at shared_at, K full or as
    // diag(k I, K_w). Each pair of pointers that no node holds together shares its place, and the
    // record is one cache line (64 bytes; 96 with a pointer each and the flags, two lines).
    enum class Kind : std::uint8_t { Rows, RowsSingle, RowsSingleUniform, RowsMultiple, SharedK, SharedDiagonalK };
    union {
      S* rows_at = nullptr;        // in_rows(): K~ (r x r), b~, f~ (above)
      SharedLeaf* shared_at;       // a Shared leaf's blocks (a SharedLeafK, or a SharedLeafDiagonalK where k_diagonal()),
                                   // which its formulation fills (K, b) and reads (f)
    };
    int* offset_at = nullptr;            // h + 1 entries, every node, then h chars: holds_p()
    Source* from_at = nullptr;           // per handle, inner nodes (null for leaves)
    Eliminated* eliminated_at = nullptr; // the joints eliminated between the children (inner nodes)
    // A single-joint elimination's blocks (single()), column-major from single_at, m = this
    // node's m rows and r = rows(): beta_hat and lambda (m each), W = [W_1 ... W_h] (m x r,
    // W_i = Z^+ Y_i' of m x m_i; Y_i lives only inside the kernel), and Z^+ (m x m) where the tree
    // keeps it for bias-only passes (BiasPasses::Allowed). Several joints (or a joint to ground,
    // or many handles): multiple, in multiples_.
    union {
      S* single_at = nullptr;
      Multiple* multiple;
    };
    int* handles_at = nullptr;     // joints (AssemblyNode::handles that have rows), ascending
    int h = 0;                     // handles
    int m = 0;                     // equations eliminated here
    int eliminated_count = 0;
    Kind kind = Kind::Rows;
    bool singular = false;         // a single-joint elimination's Z was singular in the last assembly
    std::int8_t handle_rows = 0;   // the rows every handle has, if they all have as many (uniform_rows()), else 0

    bool in_rows() const { return kind < Kind::SharedK; }  // every inner node, InRows leaves
    bool single() const { return kind == Kind::RowsSingle || kind == Kind::RowsSingleUniform; }
    bool uniform() const { return kind == Kind::RowsSingleUniform; }
    bool k_diagonal() const { return kind == Kind::SharedDiagonalK; }
    int size() const { return h; }
    std::span<int> handles() const { return {handles_at, count(h)}; }
    /// Per handle: this node holds the joint's p side (after the offsets, in their arena).
    std::span<char> holds_p() const { return {reinterpret_cast<char*>(offset_at + h + 1), count(h)}; }
    std::span<Source> from() const { return {from_at, from_at != nullptr ? count(h) : 0u}; }
    std::span<Eliminated> eliminated() const { return {eliminated_at, count(eliminated_count)}; }
    int o(int i) const { return offset_at[i]; }
    int rows() const { return offset_at[h]; }
    /// The row count every handle has, if they all have the same (fixed-size fills), else 0.
    int uniform_rows() const {
      if (size() == 0) return 0;
      for (int i = 1; i < size(); ++i)
        if (o(i + 1) - o(i) != o(1)) return 0;
      return o(1);
    }
    /// K~ (r x r) and f~ (r) of a node in rows; empty spans for a Shared leaf.
    std::span<S> K_r() const { return in_rows() ? std::span<S>(rows_at, count(rows() * rows())) : std::span<S>(); }
    std::span<S> f_r() const {
      return in_rows() ? std::span<S>(rows_at + rows() * (rows() + 1), count(rows())) : std::span<S>();
    }
    MapX K_hat() const { return MapX(rows_at, rows(), rows()); }
    MapV b_hat() const { return MapV(rows_at + rows() * rows(), rows()); }
    MapV f_hat() const { return MapV(rows_at + rows() * (rows() + 1), rows()); }
    /// A Shared leaf's K_ij, the same for every pair of its handles (LeafBlocks::Shared).
    void set_shared_k(const Mat& K_all) {
      assert(!in_rows() && !k_diagonal());
      static_cast<SharedLeafK*>(shared_at)->K = K_all;
    }
    /// ... K_ij = diag(k I, K_w) (LeafBlocks::SharedBlockDiagonal, Dim 6).
    void set_shared_k(S k, const Mat3T<S>& K_w) {
      assert(k_diagonal());
      auto* leaf = static_cast<SharedLeafDiagonalK*>(shared_at);
      leaf->k = k;
      leaf->K_w = K_w;
    }
    /// A Shared leaf's b_i, the same at every handle (its body's).
    void set_shared_b(const Vec& b_all) {
      assert(!in_rows());
      shared_at->b = b_all;
    }
    /// ... as its formulation set it (read back on the leaf's way out).
    const Vec& shared_b() const {
      assert(!in_rows());
      return shared_at->b;
    }
    /// A Shared leaf's loads after its disassembly, summed over its handles: sum_i G_i' lambda_i
    /// (zero without handles).
    const Vec& shared_f() const {
      assert(!in_rows());
      return shared_at->f;
    }
    /// A SharedBlockDiagonal leaf's K = diag(k I, K_w) (Dim 6), as its formulation set it.
    const SharedLeafDiagonalK& shared_diagonal() const {
      assert(k_diagonal());
      return *static_cast<const SharedLeafDiagonalK*>(shared_at);
    }
    /// ... and its response to its loads, K f = [k f_v; K_w f_w].
    Vec shared_diagonal_response() const {
      const SharedLeafDiagonalK& leaf = shared_diagonal();
      Vec y;
      y.template head<3>() = leaf.k * leaf.f.template head<3>();
      y.template tail<3>().noalias() = leaf.K_w * leaf.f.template tail<3>();
      return y;
    }

   private:
    static std::size_t count(int k) { return static_cast<std::size_t>(k); }
  };

  /// sides[j]: the bodies and row count (0 to Dim; std::invalid_argument otherwise) of every
  /// model joint j; `method`: how the eliminations invert their matrices; `leaf_blocks`: how a
  /// leaf holds its K and b; `bias_passes`: whether solve_bias() may be called (it throws
  /// std::logic_error on a tree made with BiasPasses::Never). Refers to `tree`, which must outlive it.
  HandleTree(const AssemblyTree& tree, std::vector<JointSides> sides, InverseMethod method = InverseMethod::Cholesky,
             LeafBlocks leaf_blocks = LeafBlocks::InRows, BiasPasses bias_passes = BiasPasses::Allowed);
  HandleTree(const HandleTree&) = delete;  // nodes point into the arenas
  HandleTree& operator=(const HandleTree&) = delete;

  const AssemblyTree& tree() const { return *tree_; }
  /// Whether this tree is what the constructor makes of `tree` with these arguments: another
  /// solver may then run its passes on it instead of holding its own (between this one's
  /// passes, whose blocks it overwrites: only for an owner that rebuilds what it reads at every
  /// pass, as BiasPasses::Never trees do).
  bool made_as(const AssemblyTree& tree, const std::vector<JointSides>& sides, InverseMethod method, LeafBlocks leaf_blocks,
               BiasPasses bias_passes) const {
    return &tree == tree_ && method == method_ && leaf_blocks == leaf_blocks_ && (bias_passes == BiasPasses::Allowed) == keeps_inverse_ &&
           sides == sides_;
  }
  Node& node(int id) { return nodes_[static_cast<std::size_t>(id)]; }
  const Node& node(int id) const { return nodes_[static_cast<std::size_t>(id)]; }
  Node& leaf(int body) { return node(tree_->leaf_of(body)); }
  const JointSides& sides(int joint) const { return sides_[static_cast<std::size_t>(joint)]; }
  /// Handle index of `joint` in a node (-1 if absent).
  static int handle_index(const Node& n, int joint) {
    const auto it = std::lower_bound(n.handles().begin(), n.handles().end(), joint);
    return it != n.handles().end() && *it == joint ? static_cast<int>(it - n.handles().begin()) : -1;
  }

  /// G_i, the m_i x Dim rows of handle i's joint on the side `n` holds (m_i = n.o(i+1) - n.o(i)),
  /// from the pass's joint rows. Refers into `rows`.
  static auto handle_rows(const Node& n, int i, const std::vector<JointRows<S, Dim>>& rows) {
    assert(i >= 0 && i < n.size());
    const JointRows<S, Dim>& j = rows[static_cast<std::size_t>(n.handles()[static_cast<std::size_t>(i)])];
    return rows_of(j, n.holds_p()[static_cast<std::size_t>(i)] != 0).topRows(j.rows);
  }
  /// An InRows leaf's b~_i = G_i b_i from its Dim-sized bias b_i (its formulation calls it in
  /// leaf_in, after the pass's rows are set). Arm rows are not for such leaves: G_p()/G_c() throw.
  void set_leaf_bias(Node& leaf, int i, const Vec& b_i, const std::vector<JointRows<S, Dim>>& rows) const {
    assert(leaf.in_rows() && i >= 0 && i < leaf.size());
    const JointRows<S, Dim>& j = rows[static_cast<std::size_t>(leaf.handles()[static_cast<std::size_t>(i)])];
    const bool p = leaf.holds_p()[static_cast<std::size_t>(i)] != 0;
    S* out = leaf.b_hat().data() + leaf.o(i);
    if (j.unit_rows) {
      for (int k = 0; k < j.rows; ++k) out[k] = unit_sign(p) * b_i(k);
      return;
    }
    typename Node::MapV(out, j.rows).noalias() = rows_of(j, p).topRows(j.rows) * b_i;
  }
  /// The load f_i = G_i' lambda_i at handle i of a leaf (one of this tree's nodes) after its
  /// disassembly, in the pass's leaf_out (an InRows leaf's lambda_i, read where its parent holds
  /// it, is then overwritten by other nodes: joint_load() reads the loads after the pass); a
  /// Shared leaf holds only their sum (Node::shared_f). `rows` must be the pass's.
  Vec load(const Node& leaf, int i, const std::vector<JointRows<S, Dim>>& rows) const {
    Vec f;
    load_into(leaf, i, rows, f);
    return f;
  }
  /// load() written into f, by halves for a ball joint's unit rows: a caller that reads f by
  /// its halves (force, moment) then reads what was stored the same way (a 6-vector copied or
  /// read in pairs across differently sized stores stalls on them).
  void load_into(const Node& leaf, int i, const std::vector<JointRows<S, Dim>>& rows, Vec& f) const {
    assert(i >= 0 && i < leaf.size());
    const int joint = leaf.handles()[static_cast<std::size_t>(i)];
    const JointRows<S, Dim>& j = rows[static_cast<std::size_t>(joint)];
    // A leaf does not copy its handles' loads: they are read where its parent holds them
    // (pull_loads), or, at a root, where the base connection put them (a Shared root: the base's
    // multipliers).
    const bool p_side = leaf.holds_p()[static_cast<std::size_t>(i)] != 0;
    const S* lambda = pulls(leaf)[i];
    if (lambda == nullptr && leaf.in_rows()) lambda = leaf.f_hat().data() + leaf.o(i);
    if (lambda == nullptr) {
      f = joint_load(joint, p_side, rows);
      return;
    }
    rows_load(j, p_side, lambda, f);
  }
  /// The load G_s' lambda that `joint` puts on its body on side s (the p side if `p_side`) as
  /// the last pass left it: what load() read at that body's leaf during the pass, valid after it.
  /// Zero for a joint without rows. `rows` must be the pass's.
  Vec joint_load(int joint, bool p_side, const std::vector<JointRows<S, Dim>>& rows) const {
    assert(joint >= 0 && static_cast<std::size_t>(joint) < sides_.size() && rows.size() == sides_.size());
    const JointRows<S, Dim>& j = rows[static_cast<std::size_t>(joint)];
    Vec f = Vec::Zero();
    if (j.rows == 0) return f;
    const Vec lambda = multiplier(joint);
    rows_load(j, p_side, lambda.data(), f);
    return f;
  }
  /// For unit rows (JointRows::unit_rows): G on the p side is -[I 0], on the c side [I 0].
  static S unit_sign(bool p_side) { return JointRows<S, Dim>::unit_sign(p_side); }
  /// Whether the single-joint kernels (and a leaf's mobility rows) are compiled for m rows as a
  /// fixed size. Each fixed size instantiates every kernel once more, and the kernels' Eigen
  /// expressions are most of the library's compile time (most of CI's), so only the row counts of
  /// the joint types (model.hpp) are: in space 3 (spherical, planar), 4 (universal, cylindrical),
  /// 5 (revolute, prismatic), 6 (fixed); in the plane 2 (revolute, prismatic), 3 (fixed). Single
  /// precision in space (hdca's spatial float instance; paper 004's single precision is planar)
  /// compiles none. Any other node takes the general kernel: the same equations in dynamic sizes.
  static constexpr bool kFixedKernels = Dim == 3 || std::is_same_v<S, double>;
  static constexpr bool fixed_rows(int m) {
    if constexpr (!kFixedKernels) return false;
    else if constexpr (Dim >= 6) return m >= 3 && m <= 6;
    else return m >= 2 && m <= Dim;
  }
  /// Calls f.template operator()<M>() with M = m when m is a fixed_rows count and returns true;
  /// returns false for any other m (the caller takes its general, dynamic-size path). Only the
  /// fixed_rows counts are instantiated.
  template <class F>
  static bool dispatch_rows(int m, F&& f) {
    return [&]<int... I>(std::integer_sequence<int, I...>) {
      return (call_if_fixed<I + 1>(m, f) || ...);
    }(std::make_integer_sequence<int, Dim>{});
  }
  /// dispatch_rows, and f.template operator()<Eigen::Dynamic>() for any other m: a kernel in m's
  /// fixed size where one is compiled, else in dynamic sizes.
  template <class F>
  static void with_rows(int m, F&& f) {
    if (!dispatch_rows(m, f)) f.template operator()<Eigen::Dynamic>();
  }

  /// The assembly, the base connection and the disassembly in one call and one parallel region
  /// (for formulations that do not time them separately): leaf_in(body) fills a leaf's K and b,
  /// leaf_out(body) reads its handle loads f. rows[j] holds every joint's rows; `prologue`, if
  /// given, is a loop over [0, prologue.count) run first in the same region (filling `rows`).
  template <class LeafIn, class LeafOut, class Prologue = NoPrologue>
  void solve(const std::vector<JointRows<S, Dim>>& rows, const Parallel& parallel, LeafIn&& leaf_in, LeafOut&& leaf_out,
             Prologue&& prologue = {}) {
    pass(rows, parallel, leaf_in, leaf_out, prologue, &HandleTree::assemble_node, &HandleTree::connect_base);
  }

  /// The three passes of solve(), for formulations that time them separately. assemble() calls
  /// leaf(body) to fill each leaf's K and b just before its parent uses them; disassemble() calls
  /// leaf(body) once the leaf's loads f are known.
  template <class Leaf>
  void assemble(const std::vector<JointRows<S, Dim>>& rows, const Parallel& parallel, Leaf&& leaf) {
    parallel.assemble(*tree_, [&](int id) { leaf(tree_->link(id).body); }, [&](int id) { assemble_node(id, rows); });
  }
  void connect_base(const std::vector<JointRows<S, Dim>>& rows);
  template <class Leaf>
  void disassemble(const std::vector<JointRows<S, Dim>>& rows, const Parallel& parallel, Leaf&& leaf) {
    parallel.disassemble(*tree_, [&](int id) { disassemble_node(id, rows); }, [&](int id) {
      if (!node(id).in_rows()) pull_loads(id, rows);  // a leaf in rows reads its loads where its parent holds them (load_into)
      leaf(tree_->link(id).body);
    });
  }

  /// solve() with the elimination matrices held, a bias-only pass: leaf_in(body) fills only a
  /// leaf's b. With every K, Z^+ and W kept from the last full assembly and base connection, new
  /// leaf biases b and joint right-hand sides r (the G rows and compliances must be unchanged)
  /// give the new inner biases, beta_hat and base loads:
  ///     beta_hat = Z^+ (r - sum_s G_s b^s_E),   b^C_i = b^s_i + W_i' (r - sum_s G_s b^s_E)
  /// (Y_i Z^+ = W_i' as Z^+ is symmetric). This is paper 000's reuse of the tangent coefficients
  /// delta in the modified Newton iterations and both projections (Sects. 3.2-3.4, Eqs. 39, 54, 69).
  template <class LeafIn, class LeafOut, class Prologue = NoPrologue>
  void solve_bias(const std::vector<JointRows<S, Dim>>& rows, const Parallel& parallel, LeafIn&& leaf_in,
                  LeafOut&& leaf_out, Prologue&& prologue = {}) {
    if (!keeps_inverse_)
      throw std::logic_error("dc::HandleTree::solve_bias: the tree was made with BiasPasses::Never (no Z^+ kept)");
    pass(rows, parallel, leaf_in, leaf_out, prologue, &HandleTree::assemble_bias_node, &HandleTree::connect_base_bias);
  }

  /// True if the last solve met a singular elimination matrix somewhere.
  bool any_singular() const;

  /// The multipliers lambda of a joint (G_p' lambda, G_c' lambda are its loads) after
  /// disassembly, in the first rows entries; zero for a joint without rows.
  Vec multiplier(int joint) const;

 private:
  /// One pass of solve() or solve_bias(): `assemble` (a node's elimination) on the way up, `base`
  /// at the root, the disassembly on the way down, in one parallel region (Parallel::pass).
  template <class LeafIn, class LeafOut, class Prologue>
  void pass(const std::vector<JointRows<S, Dim>>& rows, const Parallel& parallel, LeafIn& leaf_in, LeafOut& leaf_out,
            Prologue& prologue, void (HandleTree::*assemble)(int, const std::vector<JointRows<S, Dim>>&),
            void (HandleTree::*base)(const std::vector<JointRows<S, Dim>>&)) {
    parallel.pass(
        *tree_, prologue.count, prologue.f, [&](int id) { leaf_in(tree_->link(id).body); },
        [&](int id) { (this->*assemble)(id, rows); }, [&] { (this->*base)(rows); },
        [&](int id) { disassemble_node(id, rows); }, [&](int id) {
          if (!node(id).in_rows()) pull_loads(id, rows);  // as in disassemble()
          leaf_out(tree_->link(id).body);
        });
  }
  void take_records(const std::vector<int>& order);
  std::vector<int> place_in_stack();
  void setup_node(int id);
  std::size_t rows_block_size(const Node& n) const;
  /// Where a node's several-joint scratch (Z, Y) starts after its K~, b~, f~ (r (r + 2) scalars).
  static std::size_t scratch_offset(const Node& n) { return aligned(static_cast<std::size_t>(n.rows() * (n.rows() + 2))); }
  /// The layout of an m-row several-joint elimination, each block from Eigen's alignment.
  static typename Multiple::Layout multiple_layout(int m) {
    const auto rows = static_cast<std::size_t>(m);
    return {m, aligned(rows * rows), aligned(2 * rows), aligned(Dim * rows)};
  }
  void assemble_node(int id, const std::vector<JointRows<S, Dim>>& rows);
  template <int M, int MK, int H>
  void eliminate_single(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows);
  template <int M, int MK, int H>
  void recover_single(Node& n);
  void pull_loads(int id, const std::vector<JointRows<S, Dim>>& rows);
  void set_pulls();
  /// Node n's pulls (set_pulls), one a handle, laid out as its handles are.
  const S* const* pulls(const Node& n) const { return pull_arena_.data() + (n.handles_at - handle_arena_.data()); }
  const S** pulls(const Node& n) { return pull_arena_.data() + (n.handles_at - handle_arena_.data()); }
  void eliminate_multiple(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows);
  void disassemble_node(int id, const std::vector<JointRows<S, Dim>>& rows);
  void assemble_bias_node(int id, const std::vector<JointRows<S, Dim>>& rows);
  void connect_base_bias(const std::vector<JointRows<S, Dim>>& rows);
  template <int M, int MK, int H>
  void bias_single(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows);
  void bias_multiple(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows);
  void base_loads(const std::vector<JointRows<S, Dim>>& rows);
  /// G_a v (m_a rows, R if fixed) at handle a of a node; unit rows take a block.
  template <int R = Eigen::Dynamic>
  [[gnu::always_inline]] Rows<R, 1> project(const Node& c, int a, const Vec& v, const std::vector<JointRows<S, Dim>>& rows) const {
    const int m = rows_at(c, a);
    const JointRows<S, Dim>& ja = rows[static_cast<std::size_t>(c.handles()[static_cast<std::size_t>(a)])];
    const bool pa = c.holds_p()[static_cast<std::size_t>(a)] != 0;
    if constexpr (arm_sized(R))
      if (ja.arm_rows) return arm_project<R>(ja, pa, v);
    if (!ja.unit_rows) return rows_of(ja, pa).template block<R, Dim>(0, 0, m, Dim) * v;
    Rows<R, 1> out(m);  // element by element: GCC 12 warns, wrongly, of packet reads past a float 3-vector
    for (int i = 0; i < m; ++i) out(i) = unit_sign(pa) * v(i);
    return out;
  }
  /// f = G' lambda for a joint's rows on one side, lambda its first j.rows entries (load_into,
  /// joint_load); a ball joint's unit rows by halves (load_into's note).
  static void rows_load(const JointRows<S, Dim>& j, bool p_side, const S* lambda, Vec& f) {
    if constexpr (arm_sized(Eigen::Dynamic))
      if (j.arm_rows) return arm_load(j, p_side, Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, 1>>(lambda, j.rows), f);
    if (j.unit_rows) {
      if constexpr (Dim == 6)
        if (j.rows == 3) {
          f.template head<3>() = unit_sign(p_side) * Eigen::Map<const Eigen::Matrix<S, 3, 1>>(lambda);
          f.template tail<3>().setZero();
          return;
        }
      f.setZero();
      for (int k = 0; k < j.rows; ++k) f(k) = unit_sign(p_side) * lambda[k];
      return;
    }
    f.noalias() = rows_of(j, p_side).topRows(j.rows).transpose() * Eigen::Map<const Eigen::Matrix<S, Eigen::Dynamic, 1>>(lambda, j.rows);
  }
  /// G_a' lambda (Dim) at handle a of a node; unit rows fill a block.
  template <class Derived>
  static Vec spread(const Node& c, int a, const Eigen::MatrixBase<Derived>& lambda, const std::vector<JointRows<S, Dim>>& rows) {
    constexpr int R = Derived::RowsAtCompileTime;
    const Eigen::Index m = lambda.size();
    const JointRows<S, Dim>& ja = rows[static_cast<std::size_t>(c.handles()[static_cast<std::size_t>(a)])];
    const bool pa = c.holds_p()[static_cast<std::size_t>(a)] != 0;
    Vec f;
    if constexpr (arm_sized(R))
      if (ja.arm_rows) {
        arm_load(ja, pa, lambda, f);
        return f;
      }
    if (ja.unit_rows) {
      f.setZero();
      for (Eigen::Index i = 0; i < m; ++i) f(i) = unit_sign(pa) * lambda(i);  // as in project()
    } else {
      f.noalias() = rows_of(ja, pa).template block<R, Dim>(0, 0, m, Dim).transpose() * lambda;
    }
    return f;
  }
  /// Whether a kernel whose rows are R (fixed, or Eigen::Dynamic) may meet arm rows: 3 to 5 rows,
  /// in space, in double (the only scalar ali3 runs in; no kernel is compiled for the others).
  static constexpr bool arm_sized(int R) {
    return Dim == 6 && std::is_same_v<S, double> && (R == Eigen::Dynamic || (R >= 3 && R <= 3 + JointRows<S, Dim>::kMaxArmAxes));
  }
  /// Arm rows (JointRows::arm_rows), G = s [I, -L; 0, W] with L = skew(l):
  /// G v = s [v_v - l x v_w; W v_w].
  template <int R>
  [[gnu::always_inline]] static Rows<R, 1> arm_project(const JointRows<S, Dim>& j, bool p_side, const Vec& v) {
    const S s = unit_sign(p_side);
    const Vec3T<S> l = j.arm(p_side), v_w = v.template tail<3>();
    Rows<R, 1> out(j.rows);
    out.template head<3>() = s * (Vec3T<S>(v.template head<3>()) - l.cross(v_w));
    if constexpr (R != 3)  // a ball joint's rows (R = 3) have no axes
      for (int i = 3; i < j.rows; ++i) out(i) = s * j.axis(i - 3).dot(v_w);
    return out;
  }
  /// ... and G' lambda = s [lambda_v; l x lambda_v + W' lambda_w] (L' = -L), lambda_v its first 3.
  template <class Derived>
  static void arm_load(const JointRows<S, Dim>& j, bool p_side, const Eigen::MatrixBase<Derived>& lambda, Vec& f) {
    const Vec3T<S> l = j.arm(p_side), x = lambda.template head<3>();
    const S s = unit_sign(p_side);
    Vec3T<S> moment = l.cross(x);
    for (int i = 3; i < j.rows; ++i) moment += lambda(i) * j.axis(i - 3);
    f.template head<3>() = s * x;
    f.template tail<3>() = s * moment;
  }
  /// ... and G_a K G_b' = s_a s_b [P + Q L_b, Q W_b'; R + T L_b, T W_b'] with [P, Q] = [I, -L_a] K
  /// (P = K11 - L_a K21, Q = K12 - L_a K22; L_a X is l_a x each column of X) and [R, T] = W_a [K21,
  /// K22]; row i of X L_b is x_i x l_b. Into out (rows_a x rows_b).
  template <class Out>
  static void arm_k(Out& out, const JointRows<S, Dim>& ja, bool pa, const Mat& K, const JointRows<S, Dim>& jb, bool pb) {
    const Vec3T<S> la = ja.arm(pa);
    Mat3T<S> P, Q;
    for (int c = 0; c < 3; ++c) {
      P.col(c) = K.template block<3, 1>(0, c) - la.cross(Vec3T<S>(K.template block<3, 1>(3, c)));
      Q.col(c) = K.template block<3, 1>(0, 3 + c) - la.cross(Vec3T<S>(K.template block<3, 1>(3, 3 + c)));
    }
    arm_k_from(out, ja, pa, P, Q, K.template block<3, 3>(3, 0), K.template block<3, 3>(3, 3), jb, pb);
  }
  /// ... for K = diag(k I, K_w) (LeafBlocks::SharedBlockDiagonal): P = k I, Q = -L_a K_w, R = 0,
  /// T = W_a K_w; the same numbers as arm_k on K written out (its zero blocks add exact zeros).
  template <class Out>
  static void arm_k(Out& out, const JointRows<S, Dim>& ja, bool pa, const SharedLeafDiagonalK& K, const JointRows<S, Dim>& jb,
                    bool pb) {
    const Vec3T<S> la = ja.arm(pa);
    Mat3T<S> P = Mat3T<S>::Zero(), Q;
    P.diagonal().setConstant(K.k);
    for (int c = 0; c < 3; ++c) Q.col(c) = Vec3T<S>::Zero() - la.cross(Vec3T<S>(K.K_w.col(c)));  // 0 - x as arm_k rounds it
    arm_k_from(out, ja, pa, P, Q, Mat3T<S>::Zero(), K.K_w, jb, pb);
  }
  /// A SharedBlockDiagonal leaf's K written out.
  static void written_K(const Node& leaf, Mat& K) {
    const auto& held = *static_cast<const SharedLeafDiagonalK*>(leaf.shared_at);
    K.setZero();
    if constexpr (Dim == 6) {
      K.template topLeftCorner<3, 3>().diagonal().setConstant(held.k);
      K.template bottomRightCorner<3, 3>() = held.K_w;
    }
  }
  /// arm_k's blocks from [P, Q] and K21, K22.
  template <class Out, class K21, class K22>
  static void arm_k_from(Out& out, const JointRows<S, Dim>& ja, bool pa, Mat3T<S>& P, const Mat3T<S>& Q, const K21& K_21,
                         const K22& K_22, const JointRows<S, Dim>& jb, bool pb) {
    const Vec3T<S> lb = jb.arm(pb);
    const S s = unit_sign(pa) * unit_sign(pb);
    for (int i = 0; i < 3; ++i) P.row(i) += Vec3T<S>(Q.row(i).transpose()).cross(lb).transpose();
    out.template block<3, 3>(0, 0) = s * P;  // a ball joint's rows: this block alone
    for (int k = 3; k < jb.rows; ++k) out.template block<3, 1>(0, k) = s * (Q * jb.axis(k - 3));
    for (int i = 3; i < ja.rows; ++i) {
      const Vec3T<S> w = ja.axis(i - 3);
      const Vec3T<S> r_i = K_21.transpose() * w, t_i = K_22.transpose() * w;
      out.template block<1, 3>(i, 0) = s * (r_i + t_i.cross(lb)).transpose();
      for (int k = 3; k < jb.rows; ++k) out(i, k) = s * t_i.dot(jb.axis(k - 3));
    }
  }
  /// dispatch_rows for one count M.
  template <int M, class F>
  static bool call_if_fixed(int m, F& f) {
    if constexpr (fixed_rows(M)) {
      if (m != M) return false;
      f.template operator()<M>();
      return true;
    } else {
      (void)m, (void)f;
      return false;
    }
  }
  static typename T::ConstRowsMap rows_of(const JointRows<S, Dim>& r, bool p_side) { return p_side ? r.G_p() : r.G_c(); }
  /// The rows m_i of handle i of a node (its joint's).
  int rows_at(const Node& n, int i) const { return sides_[static_cast<std::size_t>(n.handles()[static_cast<std::size_t>(i)])].rows; }
  /// A child's K_ab, b_a in its handles' rows (G_a K_ab G_b', G_a b_a), RA x RB (fixed, or Dynamic).
  template <int RA = Eigen::Dynamic, int RB = Eigen::Dynamic>
  Rows<RA, RB> k_rows(const Node& c, int a, int b, const std::vector<JointRows<S, Dim>>& rows) const;
  /// The same written into `out` (a matrix or a block of the right size): no temporary copied
  /// after it (whose stores by columns a copy by pairs would wait on).
  template <int RA, int RB, class Out>
  void k_rows_into(Out&& out, const Node& c, int a, int b, const std::vector<JointRows<S, Dim>>& rows) const;
  template <int RA = Eigen::Dynamic>
  Rows<RA, 1> b_rows(const Node& c, int a, const std::vector<JointRows<S, Dim>>& rows) const;
  template <class Derived>
  void put_load(Node& c, int a, const Eigen::MatrixBase<Derived>& lambda, const std::vector<JointRows<S, Dim>>& rows);
  template <int M>
  Eigen::Matrix<S, M, 1> single_rhs(const Eliminated& x, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) const;
  /// Whether a node's elimination is the single-joint kernel's (the constructor gives it a
  /// single_at then); uses_single() reads the answer from the node afterwards.
  static bool takes_single(const Node& n) {
    return n.eliminated().size() == 1 && n.eliminated().front().left >= 0 && n.eliminated().front().right >= 0 &&
           n.size() <= kMaxSingleHandles && fixed_rows(n.eliminated().front().rows);
  }
  static bool uses_single(const Node& n) { return n.single(); }
  /// A single-joint elimination whose every handle has as many rows as the joint (Kind::RowsSingleUniform).
  bool every_handle_as_eliminated(const Node& n) const {
    return std::all_of(n.handles().begin(), n.handles().end(), [&](int j) { return sides_[static_cast<std::size_t>(j)].rows == n.m; });
  }
  /// A node's ints in offset_arena_: h + 1 offsets, then h chars of holds_p in whole ints.
  static std::size_t offset_record_size(int h) {
    const auto handles = static_cast<std::size_t>(h);
    return handles + 1 + (handles + sizeof(int) - 1) / sizeof(int);
  }
  /// A single-joint elimination's blocks (Node::single_at), M its rows (n.m).
  template <int M = Eigen::Dynamic>
  static Eigen::Map<Eigen::Matrix<S, M, 1>> beta_hat_of(const Node& n) { return {n.single_at, n.m}; }
  template <int M = Eigen::Dynamic>
  static Eigen::Map<Eigen::Matrix<S, M, 1>> lambda_of(const Node& n) { return {n.single_at + n.m, n.m}; }
  template <int M>
  static Eigen::Map<Eigen::Matrix<S, M, M>> Z_inverse_of(const Node& n) { return {n.single_at + M * (2 + n.rows()), M, M}; }

  const AssemblyTree* tree_;
  std::vector<JointSides> sides_;
  InverseMethod method_;
  LeafBlocks leaf_blocks_;
  bool keeps_inverse_;  // BiasPasses::Allowed: a single-joint elimination keeps its Z^+
  std::vector<Node> nodes_;
  std::vector<SharedLeafK> shared_arena_;                   // the Shared leaves' blocks, in the passes' order;
  std::vector<SharedLeafDiagonalK> shared_diagonal_arena_;  // or these (SharedBlockDiagonal)
  std::vector<Multiple> multiples_;  // the several-joint eliminations, in the same order
  /// Every node's blocks start at Eigen's largest alignment, in both arenas: Eigen's vectorised
  /// kernels split their work by the alignment of what they read, so a node's numbers would
  /// otherwise depend on where it sits, and trees cut for different thread counts (laid out
  /// differently) would not give the same numbers bit for bit.
  static constexpr std::size_t kAlign = std::max<std::size_t>(1, EIGEN_MAX_ALIGN_BYTES / sizeof(S));
  static std::size_t aligned(std::size_t at) { return (at + kAlign - 1) / kAlign * kAlign; }
  using Arena = std::vector<S, Eigen::aligned_allocator<S>>;
  Arena scalar_arena_;  // the eliminations' kept blocks; K_r, b_r, f_r (and a multiple's Z, Y) of nodes not in the stack
  Arena stack_arena_;   // the stack buffers of place_in_stack, each subtree's from a cache line
  std::vector<std::size_t> stack_offset_;  // where each buffer starts in stack_arena_
  std::vector<int> offset_arena_;  // the nodes' offsets (h + 1 each) and holds_p (h chars each, in whole ints)
  std::vector<int> handle_arena_;  // the nodes' handles, from and eliminated
  std::vector<const S*> pull_arena_;  // where each node's handle finds its load in its parent (set_pulls)
  std::vector<typename Node::Source> from_arena_;
  std::vector<Eliminated> eliminated_arena_;
  struct Base {  // the root's handles eliminated against ground
    std::vector<Eliminated> eliminated;
    int m = 0;
    BaseElimination<S> multiple;
  } base_;
  struct Where {  // where a joint is eliminated: node (-1: the base connection), offset in its lambda
    int node = -1, offset = 0;
  };
  std::vector<Where> where_;
};

}  // namespace treedyn::dc
