// Paper 002's fully-implicit integrator (backward Euler, index 3, Eqs. 13-14): what it adds to
// the shared core (implicit_core.hpp). One step t_n -> t_n+1 = t_n + h:
//   unknowns x_i = [rddot; w_bar_dot] at t_n+1 and lambda_n+1;
//   e_x = M x + P_n+1' lambda - [f; n_bar - w_bar x J w_bar]_n+1,   e_3 = Phi_n+1 / h^2;
//   rdot = rdot_n + h rddot, r = r_n + h rdot, w_bar = w_bar_n + h w_bar_dot,
//   A = A_n exp(h skew w_bar)                                                  (Eqs. 14a-d)
//   Newton with N = [M P'; P 0] rebuilt at every iterate: the Jacobians of the reaction forces
//   (as in the paper) and of the applied and gyroscopic forces are dropped, which keeps N
//   symmetric so that the tree can solve it.
#include "implicit_core.hpp"

namespace treedyn::implicit {
namespace {

class FullyImplicit final : public Core {
 public:
  FullyImplicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                std::shared_ptr<const ExternalLoads> external)
      : Core(std::move(model), options, std::move(external), "fully-implicit") {
    if (!model_.springs.empty() || !model_.rotational_springs.empty())
      warnings_.push_back(name() + ": spring and damper Jacobians are left out of the Newton matrix, as paper 002 "
                                   "leaves out the reaction-force Jacobians; stiff springs converge slowly");
  }

  std::string integrator() const override { return "backward Euler, index 3, Lie-group rotations"; }

 private:
  /// Eqs. 14a-c: the unknowns are the accelerations at t_n+1.
  void position_and_velocity(BodyData& b, double h) const override {
    b.v = b.v_n + h * b.x.head<3>();
    b.r = b.r_n + h * b.v;
    b.w_bar = b.w_bar_n + h * b.x.tail<3>();
  }

  /// The iteration starts from the last accelerations (every body's x) and multipliers.
  void predict(double) override { mu_ = lambda_; }

  double phi_scale(double h) const override { return 1.0 / (h * h); }  // e_3 = Phi / h^2
  bool refactor(int) const override { return true; }
  bool at_iterate() const override { return true; }

  /// e_x of Eq. 13 at the iterate.
  Vec6 residual(int i, double) const override {
    const BodyData& b = body(i);
    return M_times(model_.bodies[static_cast<std::size_t>(i)], b.x) + load_on(i, blocks_, state_) - b.F;
  }

  /// The accelerations and multipliers of t_n+1 are the unknowns.
  void finish_step(double) override {
    for (int i = 0; i < n_; ++i) {
      BodyData& b = body(i);
      b.a = b.x.head<3>();
      b.wd_bar = b.x.tail<3>();
    }
    lambda_ = mu_;
  }

  bool reactions_at_start() const override { return false; }
};

}  // namespace

std::unique_ptr<Formulation> make_fully_implicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                                                 std::shared_ptr<const ExternalLoads> external) {
  return std::make_unique<FullyImplicit>(std::move(model), options, std::move(external));
}

}  // namespace treedyn::implicit
