// treedyn — ODE integrators behind one contract (in the spirit of Chrono's ChIntegrable): a
// system supplies its size, its right-hand side, and optionally a projection onto its invariant
// manifold and a cheap position rate; an integrator advances it to requested output times.
//
//   fixed step:  euler (explicit), rk4 (classical), symplectic-euler (semi-implicit: velocities or
//                momenta first, then positions with the new ones; needs position_size() > 0)
//   adaptive:    dopri5 (ARKODE ERK Dormand-Prince 5(4), MATLAB ode45's method),
//                bs23 (ARKODE ERK Bogacki-Shampine 3(2), ode23's method),
//                adams (CVODE variable-order Adams-Moulton, ode113's kind),
//                bdf (CVODE variable-order BDF; the only one SUNDIALS lets project after every step)
// Every integrator counts its steps and right-hand-side evaluations.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

namespace treedyn {

class OdeSystem {
 public:
  virtual ~OdeSystem() = default;
  virtual int size() const = 0;
  /// ydot = f(t, y). May throw SimulationError.
  virtual void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) = 0;
  /// Moves y onto the system's invariant manifold (constraints, unit quaternions); returns the
  /// largest change made. Default: no projection.
  virtual double project(double /*t*/, Eigen::Ref<Eigen::VectorXd> /*y*/) { return 0.0; }
  /// project() after an accepted step of an adaptive method: may leave y untouched, returning 0,
  /// where it is off the manifold by no more than `tolerance` (a change the step's own accuracy
  /// cannot tell apart), so that a Runge-Kutta method whose last stage is the next step's first
  /// (FSAL: dopri5, bs23) reuses that stage instead of evaluating the right-hand side again.
  /// Returns 0 only if y is left exactly as it was. Default: project().
  virtual double project_step(double t, Eigen::Ref<Eigen::VectorXd> y, double /*tolerance*/) { return project(t, y); }
  /// Number of leading entries of y that are positions whose rate depends on the trailing ones
  /// (symplectic Euler); 0 when the state does not split.
  virtual int position_size() const { return 0; }
  /// Rate of the positions alone, if the system can compute it more cheaply than rhs(); returns
  /// false to make the integrator use rhs().
  virtual bool position_rate(double /*t*/, const Eigen::Ref<const Eigen::VectorXd>& /*y*/,
                             Eigen::Ref<Eigen::VectorXd> /*qdot*/) {
    return false;
  }
  /// What entry `index` of y is, for error messages ("coordinate 2 of joint 'j3'").
  virtual std::string describe(int index) const { return "entry " + std::to_string(index) + " of the state"; }
  /// Called after each accepted step (for bookkeeping such as angle unwrapping).
  virtual void accept_step(double /*t*/, const Eigen::Ref<const Eigen::VectorXd>& /*y*/) {}
  /// Asked by the integrators before each step (fixed-step methods) and each right-hand side
  /// (adaptive ones, which take many steps inside one advance()): true stops the integration, and
  /// advance() or step() throws Interrupted (errors.hpp). Default: never.
  virtual bool interrupted() { return false; }
  /// Error weights of the adaptive integrators: the local error e is accepted when the RMS of
  /// w_i e_i is at most 1. Return false (the default) for w_i = 1 / (rtol |y_i| + atol).
  virtual bool error_weights(const Eigen::Ref<const Eigen::VectorXd>& /*y*/, double /*rtol*/, double /*atol*/,
                             Eigen::Ref<Eigen::VectorXd> /*w*/) {
    return false;
  }
};

struct IntegratorOptions {
  double step = 1e-3;        // fixed-step methods: the step; adaptive: ignored
  double rtol = 1e-6, atol = 1e-6;
  long max_steps = 10'000'000;  // adaptive: most internal steps between two outputs
  bool project = true;       // call OdeSystem::project (fixed step, dopri5, bs23, bdf: each step;
                             // adams: at outputs, restarting when the correction exceeds atol)
};

struct IntegratorStats {
  long steps = 0;
  long rhs_evaluations = 0;
  long error_test_failures = 0;
  long projections = 0;
};

struct IntegratorInfo {
  std::string name;
  bool adaptive;
  std::string description;
};

class Integrator {
 public:
  virtual ~Integrator() = default;
  virtual std::string name() const = 0;
  /// Starts (or restarts) at (t0, y0). A restart keeps the settings and the counters in stats();
  /// an adaptive method starts afresh (a new first step; adams and bdf at order 1), which costs
  /// it a few short steps (SUNDIALS' ReInit: no allocation).
  virtual void reset(double t0, const Eigen::VectorXd& y0) = 0;
  /// Advances to t_out and writes the state there into y. Adaptive methods may step past t_out
  /// internally and interpolate back (and go on from their internal state next time). Throws
  /// SimulationError, or Interrupted when the system asks to stop (OdeSystem::interrupted), y
  /// then untouched; after either, reset() before advancing again.
  virtual void advance(double t_out, Eigen::VectorXd& y) = 0;
  /// One step: the fixed step (`IntegratorOptions::step`) of a fixed-step method, one internal
  /// step of an adaptive one (its size chosen by its error control; `IntegratorOptions::step`
  /// only scales the very first). Writes the state into y and returns the time reached. Throws
  /// SimulationError.
  virtual double step(Eigen::VectorXd& y) = 0;
  const IntegratorStats& stats() const { return stats_; }

 protected:
  IntegratorStats stats_;
};

const std::vector<IntegratorInfo>& integrator_catalog();
bool is_adaptive_integrator(const std::string& name);
/// Throws std::invalid_argument naming the known integrators if `name` is unknown.
std::unique_ptr<Integrator> make_integrator(const std::string& name, OdeSystem& system, const IntegratorOptions& options);

}  // namespace treedyn
