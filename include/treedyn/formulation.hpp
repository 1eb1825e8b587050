// treedyn — the small interface between the Simulator and any formulation.
//
// A formulation owns its coordinates and workspaces. The Simulator only asks it to step, to
// advance to a time, to restart from a state and to report the state in absolute terms
// (BodyState, Snapshot), which the common metrics, writers and joint coordinates use.
//
// Lifetime: a formulation holds its Model and its ExternalLoads by shared pointer, so both live
// as long as it does (make_formulation, formulations.hpp). Threads: one formulation is used by one
// thread at a time (it owns the workspaces its passes write); many formulations may share one
// Model on many threads.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "treedyn/external_loads.hpp"
#include "treedyn/integrators.hpp"
#include "treedyn/kinematics.hpp"

namespace treedyn {

class ThreadGovernor;  // parallel.hpp

/// Reaction of a joint on its child body: force, and torque about the child's joint-frame origin,
/// global frame.
struct JointReaction {
  Vec3 force = Vec3::Zero();
  Vec3 torque = Vec3::Zero();
};

struct Snapshot {
  double t = 0.0;
  SystemState bodies;                   // positions, velocities and accelerations
  std::vector<JointReaction> reactions;  // one per joint, or empty if not computed
  std::vector<double> driver_efforts;    // generalised force each driver applies, or empty
  double extra_power = 0.0;             // power of loads applied beyond the model's (e.g. friction)
};

struct SolverStats {
  long steps = 0;  // accepted
  long rhs_evaluations = 0;
  long newton_iterations = 0;
  long projections = 0;
  long rejected_steps = 0;  // adaptive integrators: steps their error test refused and retried shorter
};

class Formulation {
 public:
  virtual ~Formulation() = default;
  Formulation(const Formulation&) = delete;
  Formulation& operator=(const Formulation&) = delete;

  virtual std::string name() const = 0;
  /// The time integration scheme in use (for summaries).
  virtual std::string integrator() const = 0;
  virtual double time() const = 0;
  /// Advances to t (>= time()). Throws SimulationError when it cannot. Adaptive integrators may
  /// step past t internally and interpolate back to it.
  virtual void advance_to(double t) = 0;
  /// One step of the formulation's own: the fixed step dt of fixed-step integrators, ali3 and the
  /// implicit integrators; one internal step of an adaptive integrator, as long as its error
  /// control allows. Throws SimulationError when it cannot.
  virtual void step() = 0;
  /// A check asked while the formulation advances: before each of its steps (ali3, the implicit
  /// integrators, fixed-step methods) and each right-hand side of an adaptive integrator, which
  /// may take many steps inside one advance_to. When it returns true, advance_to and step throw
  /// Interrupted (errors.hpp) and the formulation is at its last completed output (ODE
  /// formulations: their integrator and angle references started again there, as set_state
  /// does) or step, from which it goes on when advanced again. Empty (the default): never asked.
  /// Asked from the thread that advances; it should be cheap (a flag), as it may be asked every
  /// few microseconds.
  void set_interrupt(std::function<bool()> check) { interrupt_ = std::move(check); }
  /// Restarts at time t from absolute body states (positions and velocities; accelerations are
  /// recomputed), which must satisfy the joints: the caller checks them (Simulator::set_state).
  /// Adaptive integrators start afresh (a new first step, order 1 for adams and bdf). The
  /// counters in stats() go on.
  virtual void set_state(double t, const SystemState& bodies) = 0;
  /// The loads applied from outside changed without a change of state (ExternalLoads): an
  /// integrator whose history assumes smooth loads restarts at the current state (the adaptive
  /// ones, as after set_state), ali3 recomputes its accelerations and multipliers. The default
  /// does nothing (every step evaluates the loads afresh).
  virtual void loads_changed() {}
  /// Positions and velocities of the bodies at time() (accelerations left zero): cheaper than
  /// snapshot().
  virtual void bodies(SystemState& out) = 0;
  /// The state at time(), accelerations and reactions included.
  virtual void snapshot(Snapshot& out) = 0;
  virtual SolverStats stats() const = 0;
  /// Model features this formulation ignores, and similar notices (read after a run: notices
  /// about the run itself may be added while it goes).
  virtual std::vector<std::string> warnings() const { return {}; }
  /// Wall-clock seconds per stage (for a profile), if the formulation keeps them.
  virtual std::map<std::string, double> stage_seconds() const { return {}; }
  /// Figures of the run that only this formulation has (ali3: the largest Euler-parameter
  /// normalisation error), for summaries.
  virtual std::map<std::string, double> diagnostics() const { return {}; }
  /// The choice between the tree passes' threads and one thread (parallel.hpp), for formulations
  /// that run on threads and time them (Threading::fallback); null otherwise.
  virtual const ThreadGovernor* thread_governor() const { return nullptr; }
  /// For formulations that integrate an ODE: the system and its current state (benchmarks time
  /// the right-hand side alone). Null for step-based formulations.
  virtual OdeSystem* ode() { return nullptr; }
  virtual Eigen::VectorXd ode_state() const { return {}; }

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }
  /// Loads applied from outside the model (may be null: none).
  const ExternalLoads* external_loads() const { return external_.get(); }

 protected:
  /// Throws std::invalid_argument for a null model or external loads made for another model.
  Formulation(std::shared_ptr<const Model> model, std::shared_ptr<const ExternalLoads> external);
  /// What the interrupt check (set_interrupt) says now; false without one.
  bool interrupt_requested() const { return interrupt_ && interrupt_(); }

 private:
  std::shared_ptr<const Model> model_;
  std::shared_ptr<const ExternalLoads> external_;
  std::function<bool()> interrupt_;
};

}  // namespace treedyn
