// Paper 002's half-implicit integrator (symplectic Euler, index 3, Eqs. 4-12): what it adds to
// the shared core (implicit_core.hpp). One step t_n -> t_n+1 = t_n + h:
//   unknowns x_i = [r_n+1; theta_i], theta = h w_bar_n+1 (Eq. 6), lambda_hat = h^2 lambda_n;
//   e_x = M x + P_n' lambda_hat - M [r_n + h rdot_n; h w_bar_n] - h^2 [f_n; n_bar_n - w_bar x J w_bar]
//                                                                              (Eqs. 5a-b, 7)
//   e_3 = Phi(r_n+1, A_n exp(skew theta), t_n+1)                               (Eqs. 5c-d)
//   quasi-Newton with N = [M P_n'; P_n 0] built once per step (Eq. 12);
//   rdot_n+1 = (r_n+1 - r_n)/h, w_bar_n+1 = theta/h; the accelerations a_n from Eqs. 4a-b.
#include "implicit_core.hpp"

namespace treedyn::implicit {
namespace {

class HalfImplicit final : public Core {
 public:
  HalfImplicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
               std::shared_ptr<const ExternalLoads> external)
      : Core(std::move(model), options, std::move(external), "half-implicit") {}

  std::string integrator() const override { return "symplectic Euler, index 3, Lie-group rotations"; }

 private:
  /// Eqs. 4c-d and 6: the unknowns are the new position and theta = h w_bar_n+1.
  void position_and_velocity(BodyData& b, double h) const override {
    b.r = b.x.head<3>();
    b.v = (b.r - b.r_n) / h;
    b.w_bar = b.x.tail<3>() / h;
  }

  /// Forces and Jacobians of t_n, rows P_n held for the step (Eq. 12); the iterate starts from
  /// the last multipliers, lambda_hat = h^2 lambda, with e_x = 0 (the last accelerations).
  void predict(double h) override {
    applied_forces(t());
    fill_position_rows(true, blocks_n_, state_n_, 1.0);
    mu_ = h * h * lambda_;
    ctx_.parallel.for_each(n_, [&](int i) {
      BodyData& b = body(i);
      Vec6 free;
      free << b.r_n + h * b.v_n, h * b.w_bar_n;
      b.x = free + K_times(b, h * h * b.F - load_on(i, blocks_n_, state_n_));
    });
  }

  double phi_scale(double) const override { return 1.0; }
  bool refactor(int k) const override { return k == 0; }  // quasi-Newton: N of t_n (Eq. 12)
  bool at_iterate() const override { return false; }

  /// e_x of Eqs. 5a-b and 7.
  Vec6 residual(int i, double h) const override {
    const BodyData& b = body(i);
    Vec6 free;
    free << b.r_n + h * b.v_n, h * b.w_bar_n;
    return M_times(model_.bodies[static_cast<std::size_t>(i)], b.x - free) + load_on(i, blocks_n_, state_n_) - h * h * b.F;
  }

  /// a_n from Eqs. 4a-b; lambda_n = lambda_hat / h^2.
  void finish_step(double h) override {
    for (int i = 0; i < n_; ++i) {
      BodyData& b = body(i);
      b.a = (b.v - b.v_n) / h;
      b.wd_bar = (b.w_bar - b.w_bar_n) / h;
    }
    lambda_ = mu_ / (h * h);
  }

  bool reactions_at_start() const override { return true; }  // lambda_n acts through P_n (Eq. 3)
};

}  // namespace

std::unique_ptr<Formulation> make_half_implicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                                                std::shared_ptr<const ExternalLoads> external) {
  return std::make_unique<HalfImplicit>(std::move(model), options, std::move(external));
}

}  // namespace treedyn::implicit
