// Fixed-step integrators: explicit Euler, classical RK4, semi-implicit (symplectic) Euler.
#include <cmath>

#include "integrators_internal.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/linalg.hpp"

namespace treedyn {
namespace {

class FixedStep : public Integrator {
 public:
  enum class Method { Euler, Rk4, SymplecticEuler };
  FixedStep(Method method, OdeSystem& system, const IntegratorOptions& options)
      : method_(method), sys_(system), opt_(options) {
    if (!(options.step > 0.0)) throw std::invalid_argument("a fixed-step integrator needs a positive step");
    if (method == Method::SymplecticEuler && system.position_size() <= 0)
      throw std::invalid_argument("symplectic-euler needs a state split into positions and velocities/momenta");
    const int n = system.size();
    for (auto* v : {&k1_, &k2_, &k3_, &k4_, &tmp_}) v->resize(n);
  }

  std::string name() const override {
    switch (method_) {
      case Method::Euler: return "euler";
      case Method::Rk4: return "rk4";
      case Method::SymplecticEuler: return "symplectic-euler";
    }
    return "?";
  }

  void reset(double t0, const Eigen::VectorXd& y0) override {
    t_ = t0;
    y_ = y0;
  }

  void advance(double t_out, Eigen::VectorXd& y) override {
    const double eps = 1e-12 * std::max(1.0, std::abs(t_out));
    while (t_out - t_ > eps) {
      if (sys_.interrupted()) throw Interrupted(t_);
      // A remainder that is the step to round-off is the step itself: then advancing takes the
      // steps that step() takes, bit for bit.
      const double remaining = t_out - t_;
      const double h = remaining >= opt_.step * (1.0 - 1e-9) ? opt_.step : remaining;
      take_step(h, (t_out - (t_ + h) <= eps) ? t_out : t_ + h);
    }
    y = y_;
  }

  double step(Eigen::VectorXd& y) override {
    take_step(opt_.step, t_ + opt_.step);
    y = y_;
    return t_;
  }

 private:
  /// One step of h, ending at t_end (t_ + h, or an output time it rounds to).
  void take_step(double h, double t_end) {
    step(h);
    t_ = t_end;
    if (opt_.project && sys_.project(t_, y_) > 0.0) ++stats_.projections;
    if (!y_.allFinite())
      throw SimulationError(t_, name() + ": the state became non-finite, first " +
                                    sys_.describe(static_cast<int>(first_non_finite(y_))));
    sys_.accept_step(t_, y_);
    ++stats_.steps;
  }

  void f(double t, const Eigen::VectorXd& y, Eigen::VectorXd& out) {
    sys_.rhs(t, y, out);
    ++stats_.rhs_evaluations;
  }

  void step(double h) {
    switch (method_) {
      case Method::Euler:
        f(t_, y_, k1_);
        y_ += h * k1_;
        break;
      case Method::Rk4:
        f(t_, y_, k1_);
        tmp_ = y_ + 0.5 * h * k1_;
        f(t_ + 0.5 * h, tmp_, k2_);
        tmp_ = y_ + 0.5 * h * k2_;
        f(t_ + 0.5 * h, tmp_, k3_);
        tmp_ = y_ + h * k3_;
        f(t_ + h, tmp_, k4_);
        y_ += (h / 6.0) * (k1_ + 2.0 * k2_ + 2.0 * k3_ + k4_);
        break;
      case Method::SymplecticEuler: {
        // v_{n+1} = v_n + h vdot(t_n, q_n, v_n);  q_{n+1} = q_n + h qdot(t_n, q_n, v_{n+1})
        const int k = sys_.position_size(), n = static_cast<int>(y_.size());
        f(t_, y_, k1_);
        y_.tail(n - k) += h * k1_.tail(n - k);
        if (!sys_.position_rate(t_, y_, k2_.head(k))) f(t_, y_, k2_);
        y_.head(k) += h * k2_.head(k);
        break;
      }
    }
  }

  Method method_;
  OdeSystem& sys_;
  IntegratorOptions opt_;
  double t_ = 0.0;
  Eigen::VectorXd y_, k1_, k2_, k3_, k4_, tmp_;
};

}  // namespace

std::unique_ptr<Integrator> make_fixed_step(const std::string& name, OdeSystem& system, const IntegratorOptions& options) {
  using M = FixedStep::Method;
  const M method = name == "euler" ? M::Euler : name == "rk4" ? M::Rk4 : M::SymplecticEuler;
  return std::make_unique<FixedStep>(method, system, options);
}

}  // namespace treedyn
