// treedyn — mass-orthogonal projection of absolute body states onto the constraint manifold, and
// the initial-state checks built on it (dense linear algebra: for the reference formulation and
// for one-off model assembly, not for hot loops of large systems).
//
// Positions: Gauss-Newton on min 1/2 dx' M dx subject to Phi(x + dx) = 0, where dx = [dr; dtheta]
// per body (dtheta a global rotation vector) and M = diag(m I, J_global):
//   dx = -M^-1 J' (J M^-1 J')^+ Phi,   repeated until |Phi| is small.
// Velocities: V <- V - M^-1 J' (J M^-1 J')^+ (J V + Phi_t).
// The pseudo-inverse (PsdSolver: a symmetric eigendecomposition when singular) handles redundant
// constraints.
#pragma once

#include <string>
#include <vector>

#include "treedyn/kinematics.hpp"
#include "treedyn/linalg.hpp"

namespace treedyn {

/// J M^-1 J' of a model at a state, factorised for repeated solves: Cholesky while it is positive
/// definite, else a symmetric eigendecomposition (minimum-norm solutions, for redundant
/// constraints and singular positions). Shared by the projector and the reference formulation.
class ConstraintMatrix {
 public:
  explicit ConstraintMatrix(const Model& model);
  explicit ConstraintMatrix(const Model&&) = delete;  // keeps a reference: not to a temporary
  /// Evaluates the constraints, J, M^-1 J' and S = J M^-1 J' at (t, state) and factorises S.
  void factorise(double t, const SystemState& state);
  /// x = S^+ rhs.
  Eigen::VectorXd solve(const Eigen::VectorXd& rhs) const;
  /// out = M^-1 in (6n vectors of twists or wrenches, at the last factorised state).
  void apply_Minv(const Eigen::VectorXd& in, Eigen::VectorXd& out) const;
  const ConstraintSet& constraints() const { return constraints_; }
  const std::vector<ConstraintBlock>& blocks() const { return blocks_; }
  const Eigen::SparseMatrix<double>& J() const { return J_; }
  const Eigen::SparseMatrix<double>& MinvJt() const { return MinvJt_; }
  const Eigen::VectorXd& phi() const { return phi_; }
  const Eigen::VectorXd& phi_t() const { return phi_t_; }
  const Eigen::VectorXd& gamma() const { return gamma_; }

 private:
  const Model* model_;
  ConstraintSet constraints_;
  std::vector<ConstraintBlock> blocks_;
  std::vector<Mat3> inv_inertia_;  // global-frame inverse inertia of each body
  Eigen::SparseMatrix<double> J_, MinvJt_;
  Eigen::MatrixXd S_;
  Eigen::VectorXd phi_, phi_t_, gamma_;
  PsdSolver<double> solver_;
};

class ConstraintProjector {
 public:
  explicit ConstraintProjector(const Model& model);
  explicit ConstraintProjector(const Model&&) = delete;  // keeps a reference: not to a temporary
  /// Projects positions; returns the final max |Phi|. Stops at `tolerance` or after max_iterations.
  double project_positions(double t, SystemState& state, double tolerance = 1e-12, int max_iterations = 20);
  /// Projects velocities onto J V + Phi_t = 0 (at the current positions).
  void project_velocities(double t, SystemState& state);
  /// project_positions, then project_velocities at the projected positions, with one
  /// factorisation of J M^-1 J' fewer: project_positions ends factorised at the positions it
  /// returns, and the velocities' projection reads nothing else (the same numbers as the two calls).
  double project(double t, SystemState& state, double tolerance = 1e-12, int max_iterations = 20);

 private:
  /// The velocities' projection at the last factorised positions.
  void correct_velocities(SystemState& state);
  /// dx = -M^-1 J' (J M^-1 J')^+ rhs, into correction_.
  void correction(const Eigen::VectorXd& rhs);

  ConstraintMatrix matrix_;
  Eigen::VectorXd correction_;
};

/// Violations of the joints and drivers by a state.
struct ConsistencyReport {
  double max_position_error = 0.0, max_velocity_error = 0.0;
  std::vector<std::string> violations;  // one line per violating joint or driver
  bool consistent() const { return violations.empty(); }
};
/// Every joint's and driver's largest violation at (t, state), at position and velocity level; a
/// violation above `tolerance` (or not finite) is listed, its message starting with `which`.
ConsistencyReport check_state(const Model& model, double t, const SystemState& state, double tolerance,
                              const std::string& which = "");
/// The same for the model's initial state at t = 0 ("initial positions violate it by ...").
ConsistencyReport check_initial_state(const Model& model, double tolerance);

/// What --assemble did to each body.
struct AssemblyReport {
  std::vector<double> moved;             // |dr| of each body's centre of mass, m
  std::vector<double> turned;            // rotation angle of each body, rad
  std::vector<double> velocity_change;   // |dv| + |dw| of each body
  double residual_position = 0.0, residual_velocity = 0.0;
  std::string summary(const Model& model) const;
};

/// The state projected onto the constraints at time t (positions, then velocities; drivers
/// included), mass-orthogonally. Throws ModelError if the positions cannot be assembled.
SystemState assemble_state(const Model& model, double t, SystemState state, AssemblyReport& report);
/// Returns the model with its initial state so projected.
Model assemble_initial_state(const Model& model, AssemblyReport& report);

}  // namespace treedyn
