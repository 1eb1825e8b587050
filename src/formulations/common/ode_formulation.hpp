// What every formulation that integrates an ODE y' = f(t, y) shares (reference, dca, hdca): the
// integrator, the time and state, statistics, the per-stage timer that counts only inside
// advance_to and step, and the restarts after set_state and loads_changed.
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <utility>

#include "treedyn/errors.hpp"
#include "treedyn/formulation.hpp"
#include "treedyn/integrators.hpp"
#include "treedyn/stage_timer.hpp"

namespace treedyn {

class OdeFormulation : public Formulation, protected OdeSystem {
 public:
  std::string integrator() const override { return integrator_->name(); }
  double time() const override { return t_; }
  void advance_to(double t) override {
    const StageTimer::Scope counting(timer_);
    try {
      integrator_->advance(t, y_);
    } catch (const Interrupted&) {
      back_to_last_output();
      throw;
    }
    t_ = t;
  }
  void step() override {
    const StageTimer::Scope counting(timer_);
    try {
      t_ = integrator_->step(y_);
    } catch (const Interrupted&) {
      back_to_last_output();
      throw;
    }
  }
  void set_state(double t, const SystemState& bodies) override {
    state_of_bodies(bodies, y_, std::numeric_limits<double>::infinity());  // checked by the caller
    t_ = t;
    restart_at(bodies);
  }
  void loads_changed() override { integrator_->reset(t_, y_); }
  SolverStats stats() const override {
    const IntegratorStats& s = integrator_->stats();
    return {s.steps, s.rhs_evaluations, 0, s.projections, s.error_test_failures};
  }
  std::vector<std::string> warnings() const override { return warnings_; }
  std::map<std::string, double> stage_seconds() const override { return timer_.seconds(); }
  OdeSystem* ode() override { return this; }
  Eigen::VectorXd ode_state() const override { return y_; }

 protected:
  OdeFormulation(std::shared_ptr<const Model> model, std::shared_ptr<const ExternalLoads> external, StageTimer timer)
      : Formulation(std::move(model), std::move(external)), timer_(std::move(timer)) {}

  /// The formulation's state y of absolute body states (positions and velocities). Throws
  /// ModelError naming the joint if they violate a joint of its coordinates by more than
  /// `tolerance` (infinite: not checked).
  virtual void state_of_bodies(const SystemState& bodies, Eigen::VectorXd& y, double tolerance) = 0;
  /// Loads that unwrap angles continuously start again from these states.
  virtual void restart_loads(const SystemState& bodies) = 0;
  /// The integrator asks the formulation's interrupt check (Formulation::set_interrupt).
  bool interrupted() override { return interrupt_requested(); }

  /// Creates the integrator and starts it at (0, y0). Throws std::invalid_argument for an unknown
  /// integrator name.
  void start(const std::string& integrator, double dt, double rtol, double atol, Eigen::VectorXd y0) {
    IntegratorOptions io;
    io.step = dt;
    io.rtol = rtol;
    io.atol = atol;
    y_ = std::move(y0);
    integrator_ = make_integrator(integrator, *this, io);
    integrator_->reset(0.0, y_);
  }

  StageTimer timer_;
  std::vector<std::string> warnings_;
  double t_ = 0.0;
  Eigen::VectorXd y_;

 private:
  /// The angle references and the integrator started again at (t_, y_), whose bodies are `bodies`.
  void restart_at(const SystemState& bodies) {
    restart_loads(bodies);
    integrator_->reset(t_, y_);
  }
  /// After an interrupt inside the integrator, which had stepped on from (t_, y_): started again
  /// there (restart_at, as set_state does), so that the formulation goes on from its last output.
  void back_to_last_output() {
    SystemState bodies_now;
    bodies(bodies_now);
    restart_at(bodies_now);
  }

  std::unique_ptr<Integrator> integrator_;
};

}  // namespace treedyn
