// What paper 002's half-implicit and fully-implicit integrators share: bodies in absolute
// coordinates with a Lie-group rotation update, the constraint rows P = [Phi_r, Pi_bar] grouped per
// joint, the Newton systems [M P'; P 0] solved on the assembly tree (or by sparse LU), explicit
// Coulomb friction, and the Newton loop with its stopping rules. What differs — the unknowns, the
// predictor, the residual, when the Newton matrix is rebuilt, what is reported — each scheme says
// in its own file (half_implicit.cpp, fully_implicit.cpp) through the hooks below. Symbols and
// equations as in include/treedyn/formulations/implicit.hpp.
#pragma once

#include <Eigen/SparseLU>
#include <memory>
#include <string>
#include <vector>

#include "../common/tree_context.hpp"
#include "body_data.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/formulations/implicit.hpp"
#include "treedyn/stage_timer.hpp"

namespace treedyn::implicit {

using Tree = dc::HandleTree<double, 6>;
using Rows = dc::JointRows<double, 6>;

/// Friction on one joint, explicit over a step (implicit.hpp).
struct FrictionLoad {
  int joint = 0;
  double mu = 0.0;
  Vec3 force = Vec3::Zero();  // on the child, at its joint-frame origin, during the step
};

/// The joint axis, the child's joint-frame origin and the sliding velocity of a prismatic or
/// cylindrical joint (axis z of its frames) at a state.
struct Slide {
  Vec3 axis, point;
  double speed;
};
Slide slide_of(const Joint& j, const SystemState& s);

class Core : public Formulation {
 public:
  std::string name() const override { return name_; }
  const ThreadGovernor* thread_governor() const override { return ctx_.parallel.governor(); }
  double time() const override { return t_; }
  SolverStats stats() const override { return stats_; }
  std::vector<std::string> warnings() const override;
  std::map<std::string, double> stage_seconds() const override { return timer_.seconds(); }
  void advance_to(double t_target) override;
  void step() override;
  void set_state(double t, const SystemState& bodies) override;
  void bodies(SystemState& out) override;
  void snapshot(Snapshot& out) override;

 protected:
  /// Sets everything up and computes consistent accelerations and multipliers at t0. Throws
  /// std::invalid_argument for a bad option.
  Core(std::shared_ptr<const Model> model, const ImplicitOptions& options, std::shared_ptr<const ExternalLoads> external,
       std::string name);

  // The scheme's part -------------------------------------------------------------------------
  /// The iterate's position and velocity (r, v, w_bar) from its unknowns x; the core turns A.
  virtual void position_and_velocity(BodyData& b, double h) const = 0;
  /// Before the Newton iteration of a step of h: mu_ and every body's x start where the scheme
  /// says (rows_ may be filled here, as the half-implicit method's held P_n).
  virtual void predict(double h) = 0;
  /// The factor the position constraints are scaled by in the rows (1, or 1/h^2).
  virtual double phi_scale(double h) const = 0;
  /// Whether Newton iteration k (from 0) builds and factorises the matrix anew.
  virtual bool refactor(int k) const = 0;
  /// Whether an iteration evaluates the applied forces and the Jacobians at the iterate (or they
  /// stay those the predictor took).
  virtual bool at_iterate() const = 0;
  /// Residual e_x of body i at the iterate.
  virtual Vec6 residual(int i, double h) const = 0;
  /// After convergence: the reported accelerations and lambda_ from mu_.
  virtual void finish_step(double h) = 0;
  /// Whether the reported multipliers act through the Jacobians of t_n (true) or of t_n+1.
  virtual bool reactions_at_start() const = 0;

  // Shared -----------------------------------------------------------------------------------
  BodyData& body(int i) { return bodies_[static_cast<std::size_t>(i)]; }
  const BodyData& body(int i) const { return bodies_[static_cast<std::size_t>(i)]; }
  /// F = [f; A' n - w_bar x J_bar w_bar] of every body at (t, state_), friction included.
  void applied_forces(double t);
  /// Fills every joint's rows from `blocks` (Jacobians at `state` with `jacobians`) with
  /// r = -scale Phi.
  void fill_position_rows(bool jacobians, const std::vector<ConstraintBlock>& blocks, const SystemState& state, double scale);
  /// P_i' mu in body i's unknowns from `blocks` evaluated at `state`.
  Vec6 load_on(int i, const std::vector<ConstraintBlock>& blocks, const SystemState& state) const;
  double t() const { return t_; }

  const Model& model_;
  ImplicitOptions options_;
  const std::string name_;
  const int n_;
  TreeContext ctx_;
  SystemState state_, state_n_;
  std::vector<ConstraintBlock> blocks_, blocks_n_;  // at the iterate, at t_n
  std::vector<Rows> rows_;
  Eigen::VectorXd lambda_;  // multipliers of the last step (lambda_n or lambda_n+1, by scheme)
  Eigen::VectorXd mu_;      // the Newton iteration's multipliers (lambda_hat or lambda, by scheme)
  std::vector<std::string> warnings_;

 private:
  void check(const ImplicitOptions& o) const;
  void setup_frictions();
  void setup_sparse();
  void update_states();
  void update_frictions();
  void initialise();
  /// One step of h, ending at t1 (t_ + h, or an output time it rounds to).
  void take_step(double h, double t1);
  void newton(double t1, double h);
  void kinematics_from_unknowns(BodyData& b, double h) const;
  void check_finite(const char* what) const;
  /// Solves M_i delta_i + P_i' d = g_i (every body), P delta = r (the joint rows), for the
  /// increments delta and the multipliers d, which it adds to `multipliers`. With `factor` the
  /// Newton matrix is built from rows_ and factorised; otherwise the last factorisation is
  /// reused (only g and r are new).
  void solve(bool factor, Eigen::VectorXd& multipliers);
  void solve_tree(bool factor, Eigen::VectorXd& multipliers);
  void solve_sparse(bool factor, Eigen::VectorXd& multipliers);
  template <class Rhs>
  void fill_rows(bool jacobians, const std::vector<ConstraintBlock>& blocks, const SystemState& state, Rhs&& rhs);
  void evaluate_blocks(double t, const SystemState& state, std::vector<ConstraintBlock>& blocks, ConstraintParts parts);
  static bool at_roundoff_floor(double smallest, int since_smallest, double tol, double size);

  StageTimer timer_;
  std::vector<BodyData> bodies_;
  std::vector<Vec6> wrenches_;
  std::unique_ptr<Tree> core_;
  Eigen::VectorXd d_mu_;    // the multipliers' increment in one iteration
  std::vector<FrictionLoad> frictions_;
  bool sparse_ = false;
  std::vector<int> sparse_offsets_;  // per joint: first row of its multipliers after the 6n body rows
  Eigen::SparseMatrix<double> sparse_N_;
  Eigen::SparseLU<Eigen::SparseMatrix<double>> sparse_lu_;
  Eigen::VectorXd sparse_rhs_, sparse_solution_;
  double t_ = 0.0;
  SolverStats stats_;
  long roundoff_stops_ = 0;
  std::pair<double, double> first_roundoff_stop_{0.0, 0.0};  // t, ||delta q||
  bool warned_singular_ = false;
};

std::unique_ptr<Formulation> make_half_implicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                                                std::shared_ptr<const ExternalLoads> external);
std::unique_ptr<Formulation> make_fully_implicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                                                 std::shared_ptr<const ExternalLoads> external);

}  // namespace treedyn::implicit
