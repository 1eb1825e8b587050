// treedyn — absolute body states and the joint constraint equations written on them.
//
// Every formulation reports its state as absolute body states (BodyState); metrics, the writers,
// the reference formulation and the initial-state checks all use the constraint equations below.
//
// Symbols (Haug 1989; paper 000 Eqs. 1-3; paper 002 Eq. 2):
//   Phi      constraint equations Phi(q, t) = 0 of a joint (or driver), one row per scalar equation
//   J        Jacobian of the velocity constraint with respect to body twists V = [v; w] (global
//            frame, at the centre of mass): Phi_dot = J_P V_P + J_C V_C + Phi_t
//   gamma    acceleration right-hand side: J Vdot = gamma, gamma = -(Jdot V) - Phi_tt
//   P, C     the joint's parent and child bodies; s_P, s_C their joint-frame origins relative to
//            the centres of mass (global); d = (r_C + s_C) - (r_P + s_P)
#pragma once

#include <Eigen/SparseCore>
#include <utility>
#include <vector>

#include "treedyn/model.hpp"

namespace treedyn {

/// State of one body: centre of mass, orientation, twist and its derivative, global frame.
struct BodyState {
  Vec3 r = Vec3::Zero();
  Quat q = Quat::Identity();  // body -> global
  Vec3 v = Vec3::Zero();      // velocity of the centre of mass
  Vec3 w = Vec3::Zero();      // angular velocity
  Vec3 a = Vec3::Zero();      // acceleration of the centre of mass
  Vec3 alpha = Vec3::Zero();  // angular acceleration
};
using SystemState = std::vector<BodyState>;

/// The bodies' initial states as given in the model (accelerations zero).
SystemState initial_state(const Model& model);
/// Body `body`'s initial state as given in the model (accelerations zero; ground's, at rest at the
/// origin, for kGround), without making the others'.
BodyState initial_state(const Model& model, int body);

/// State of a body or of ground (index kGround: at rest at the origin).
inline const BodyState& state_of(const SystemState& s, int body) {
  static const BodyState ground{};
  return body == kGround ? ground : s[static_cast<std::size_t>(body)];
}

/// Up to 6 rows of constraint equations with their Jacobian blocks (no heap allocation).
using ConstraintRows = Eigen::Matrix<double, Eigen::Dynamic, 6, Eigen::RowMajor, 6, 6>;
using ConstraintVector = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, 6, 1>;
/// Rows of the Jacobians' rates: on the heap, sized when first evaluated (ConstraintParts::jdot).
using ConstraintRateRows = Eigen::Matrix<double, Eigen::Dynamic, 6, Eigen::RowMajor>;

struct ConstraintBlock {
  int parent = kGround, child = kGround;
  ConstraintVector phi, phi_t, gamma;
  ConstraintRows J_P, J_C;  // d(Phi_dot)/dV_parent, d(Phi_dot)/dV_child
  /// Their time derivatives along the motion (gamma = -Jdot V - ...). Empty until a block is
  /// evaluated with ConstraintParts::jdot, then kept at its size (a block evaluated again
  /// allocates nothing): a formulation that holds a block per joint and never asks for them (ali3,
  /// the implicit and reference formulations) carries 48 bytes for them instead of 592.
  ConstraintRateRows Jdot_P, Jdot_C;
  int size() const { return static_cast<int>(phi.size()); }
};

/// A spherical joint's own block (three point-coincidence rows) in fixed sizes: what
/// ConstraintSet::evaluate_point gives, the same numbers as evaluate_block's ConstraintBlock without
/// its dynamic-size rows (which a pass over many ball joints spends more on than on the rows'
/// arithmetic). Phi_t is zero (the joint does not move its points); no Jdot. J_P, J_C and gamma
/// hold what the last evaluation that asked for them wrote (nothing before: not zeroed, so that a
/// block made for each joint of a pass costs no stores).
struct PointBlock {
  using Rows = Eigen::Matrix<double, 3, 6, Eigen::RowMajor>;
  int parent = kGround, child = kGround;
  Vec3 phi = Vec3::Zero(), phi_t = Vec3::Zero(), gamma;
  Rows J_P, J_C;
  /// The joint's point less each centre of mass (global), with the Jacobians: J_P = [-I, skew(arm_P)],
  /// J_C = [I, -skew(arm_C)] (dc::JointRows::set_arm_rows holds the rows so).
  Vec3 arm_P, arm_C;
  static constexpr int size() { return 3; }
};

/// Which parts of a ConstraintBlock an evaluation fills besides Phi and Phi_t (always): the
/// Jacobians J_P, J_C, the quadratic velocity term gamma, and Jdot_P, Jdot_C. A part left out
/// keeps whatever the block held. An iterative solver that needs only Phi and its Jacobians in
/// an iteration asks for those (gamma and Jdot cost as much as the rest together).
struct ConstraintParts {
  bool jacobians = true;
  bool gamma = true;
  bool jdot = true;
  /// Phi, Phi_t and the Jacobians: what a position- or velocity-level solve needs.
  static constexpr ConstraintParts jacobians_only() { return {.jacobians = true, .gamma = false, .jdot = false}; }
  /// Those and gamma: an acceleration-level solve in absolute coordinates.
  static constexpr ConstraintParts without_jdot() { return {.jacobians = true, .gamma = true, .jdot = false}; }
};

/// The joint's own equations (revolute 5, prismatic 5, cylindrical 4, universal 4, spherical 3,
/// planar 3, fixed 6, free 0).
void joint_constraint(const Joint& joint, const BodyState& P, const BodyState& C, ConstraintBlock& out,
                      ConstraintParts parts = {});

/// One equation prescribing a joint coordinate: Phi = [measured coordinate] - f(t) in a form
/// regular at every angle (rotations: cos f (y_P . x_C) - sin f (x_P . x_C)).
void driver_constraint(const Driver& driver, const Joint& joint, double t, const BodyState& P, const BodyState& C,
                       ConstraintBlock& out, ConstraintParts parts = {});

/// All constraint equations of a model: joints in model order, then drivers. Row offsets are
/// fixed; evaluation allocates nothing once the blocks exist. Refers to its model, which must
/// outlive it.
class ConstraintSet {
 public:
  explicit ConstraintSet(const Model& model);
  explicit ConstraintSet(const Model&&) = delete;  // keeps a reference: not to a temporary
  int rows() const { return rows_; }
  int block_count() const { return static_cast<int>(offsets_.size()); }
  int offset(int block) const { return offsets_[static_cast<std::size_t>(block)]; }
  /// Evaluates `parts` of every block at (t, state).
  void evaluate(double t, const SystemState& state, std::vector<ConstraintBlock>& blocks, ConstraintParts parts = {}) const;
  /// Evaluates block k (joints in model order, then drivers) at (t, state).
  void evaluate_block(int k, double t, const SystemState& state, ConstraintBlock& out, ConstraintParts parts = {}) const;
  /// The same with the states of the block's parent P and child C given (ground's for kGround).
  void evaluate_block(int k, double t, const BodyState& P, const BodyState& C, ConstraintBlock& out,
                      ConstraintParts parts = {}) const;
  /// True if block k (in [0, block_count())) is a spherical joint's own block: evaluate_point may
  /// evaluate it.
  bool is_point(int k) const { return point_[static_cast<std::size_t>(k)] != 0; }
  /// Block k, a spherical joint's own (is_point(k)), at `state`: Phi, Phi_t and, as `parts` asks,
  /// J_P, J_C and gamma, the same numbers as evaluate_block's. Throws std::out_of_range for no
  /// such block, std::invalid_argument naming the joint for another block or parts.jdot.
  void evaluate_point(int k, const SystemState& state, PointBlock& out, ConstraintParts parts) const;
  /// Block k at (t, state), handed to f(block) once evaluated, on the stack: a spherical joint's
  /// own block as a fixed-size PointBlock (evaluate_point), any other as a ConstraintBlock
  /// (evaluate_block), so f takes either (`const auto&`). The same numbers as evaluate_block's;
  /// the fixed sizes where they apply, for a caller that reads a block once (a pass's rows, a
  /// sample's reactions and errors). Allocates nothing unless parts.jdot.
  template <class F>
  [[gnu::always_inline]] inline void visit_block(int k, double t, const SystemState& state, ConstraintParts parts, F&& f) const {
    if (is_point(k)) {
      PointBlock point;
      evaluate_point(k, state, point, parts);
      f(std::as_const(point));
      return;
    }
    ConstraintBlock block;
    evaluate_block(k, t, state, block, parts);
    f(std::as_const(block));
  }
  /// The joint a block belongs to (a driver's joint for a driver block).
  int joint_of_block(int k) const;
  /// Sparse J (rows x 6n) and stacked Phi, Phi_t, gamma from evaluated blocks.
  void stack(const std::vector<ConstraintBlock>& blocks, Eigen::SparseMatrix<double>& J, Eigen::VectorXd& phi,
             Eigen::VectorXd& phi_t, Eigen::VectorXd& gamma) const;
  const Model& model() const { return *model_; }

 private:
  const Model* model_;
  std::vector<int> offsets_;
  std::vector<char> point_;  // per block: is_point (a pass asks it of every joint, and a Joint record is 240 bytes)
  int rows_ = 0;
};

/// A scalar joint coordinate measured on absolute states, and the direction its generalised
/// force acts along (global unit vector; a torque axis for rotations, a force direction for
/// translations, applied at the child's joint-frame origin).
struct CoordinateMeasure {
  double value = 0.0;
  double rate = 0.0;
  bool rotation = true;
  Vec3 axis = Vec3::UnitZ();
  Vec3 point = Vec3::Zero();  // global application point (child joint-frame origin)
};

/// Measures coordinate `coordinate` of `joint` (see joint_coordinates()). Rotation angles are
/// returned in (-pi, pi] unless `reference` is given, in which case the angle closest to it is
/// returned (continuous through many turns when reference is the previous value).
CoordinateMeasure measure_coordinate(const Joint& joint, int coordinate, const BodyState& P, const BodyState& C,
                                     const double* reference = nullptr);

/// Wrench [force; torque about the centre of mass] that a force `f` at global point `x` exerts on
/// a body whose centre of mass is at r.
inline Vec6 wrench_at_com(const Vec3& f, const Vec3& x, const Vec3& r) {
  Vec6 w;
  w << f, (x - r).cross(f);
  return w;
}

}  // namespace treedyn
