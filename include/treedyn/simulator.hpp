// treedyn — the Simulator: one run of one model under one formulation, stepped from the caller's
// loop (a controller, an estimator, an optimiser), in the manner of MuJoCo's mjData with mj_step
// and of Pinocchio's Data.
//
//   auto model = std::make_shared<const treedyn::Model>(treedyn::read_model_file("pendulum.json"));
//   treedyn::Simulator sim(model, "dca");
//   while (sim.time() < 10.0) {
//     const Eigen::VectorXd q = sim.q(), qd = sim.qd();
//     sim.set_joint_effort("pin", Eigen::VectorXd::Constant(1, -kp * q(0) - kd * qd(0)));
//     sim.step();
//   }
//
// Model and run state. The Model is immutable and shared: the Simulator holds it by
// shared_ptr<const Model>, so it lives as long as any simulator (or formulation) using it, and a
// temporary model cannot be passed. Everything a run writes (the formulation's coordinates and
// workspaces, the inputs, the state caches) belongs to the Simulator.
//
// Threads. One Model may be shared by any number of simulators on any number of threads: nothing
// writes to it. One Simulator is used by one thread at a time (every member may write its
// caches); its formulation may run its tree passes on several OpenMP threads
// (FormulationSettings::threading), which does not change the host program's thread count or
// affinity unless Threading::pin is set.
//
// State. q and qd are the joint coordinates and rates of CoordinateMap (coordinate_map.hpp):
// every joint in model order, loop-closing joints included, then a free joint per floating
// sub-system. Angles are continuous through any number of turns from the first read of q on (or
// once a load function is set): from then, every accepted step keeps their reference current
// (a measure of every angle per step, which whole runs that never read q do not pay); a first
// read gives each angle nearest its value in the state last set. Body poses and twists are the
// absolute states of kinematics.hpp. Reading is cheap after the first read at a state (cached
// until the state changes); hdca computes its velocities from its momenta (one tree pass).
//
// Inputs hold until changed: an effort per entry of qd, a wrench per body, and a load function
// of the state (external_loads.hpp, with its cost per call). Changing them restarts the adaptive
// SUNDIALS integrators at the current state (a few short steps; adams and bdf back to order 1),
// and makes ali3 recompute its accelerations and multipliers (one tree pass); the fixed-step
// methods need nothing. Loads of the model file (actuators, springs, body forces) act as well.
//
// Failures. step() and advance_to() throw SimulationError (the time, what, where) when the
// formulation cannot go on. The simulator keeps the state where it stopped, for reading; a
// further step throws std::logic_error until reset() or set_state(). Bad arguments (a wrong
// size, a non-finite value, an unknown joint or body) throw std::invalid_argument naming the item,
// and change nothing.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "treedyn/coordinate_map.hpp"
#include "treedyn/external_loads.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/metrics.hpp"
#include "treedyn/projection.hpp"

namespace treedyn {

/// What set_state does with a state that violates the joints (loop closures, drivers) by more
/// than the simulator's state tolerance.
enum class StateFix {
  Refuse,  // throw std::invalid_argument listing the violations (the CLI without --assemble)
  Project, // project it onto the constraints, mass-orthogonally (the CLI's --assemble)
};

struct Energies {
  double kinetic = 0.0, potential = 0.0, total = 0.0;
};

class Simulator {
 public:
  /// Makes the formulation `formulation` (formulation_catalog()) for `model` at the model's
  /// initial state, t = 0. Throws std::invalid_argument for a null model, an unknown formulation
  /// or a bad setting, ModelError for an invalid model or an initial state that violates the
  /// joints by more than `state_tolerance` (use assemble_initial_state() first to project it).
  Simulator(std::shared_ptr<const Model> model, const std::string& formulation, const FormulationSettings& settings = {},
            double state_tolerance = 1e-6);
  Simulator(const Model&&, const std::string&, const FormulationSettings& = {}, double = 1e-6) = delete;
  ~Simulator();
  Simulator(const Simulator&) = delete;
  Simulator& operator=(const Simulator&) = delete;

  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& model_ptr() const { return model_; }
  const std::string& formulation_name() const { return formulation_name_; }
  /// The settings the formulation was made with.
  const FormulationSettings& settings() const { return settings_; }
  /// The formulation itself (its statistics, warnings, ODE), for what the Simulator does not say.
  Formulation& formulation() { return *formulation_; }
  const Formulation& formulation() const { return *formulation_; }
  const CoordinateMap& coordinates() const { return *map_; }

  // Time ----------------------------------------------------------------------------------------
  double time() const { return formulation_->time(); }
  /// Back to the model's initial state at t = 0: inputs zeroed (the load function stays), a
  /// failure forgotten, statistics from zero.
  void reset();
  /// reset(), with the formulation made anew with `settings` (another step or tolerance). Throws
  /// std::invalid_argument for a bad setting, and then changes nothing.
  void reset(const FormulationSettings& settings);
  /// One step of the formulation (Formulation::step: dt for fixed-step methods, ali3 and the
  /// implicit integrators; one adaptive step otherwise). Returns the time reached.
  double step();
  /// Advances to t > time() (adaptive integrators interpolate to it). Throws std::invalid_argument
  /// for t not after time().
  void advance_to(double t);
  /// A check asked while step() and advance_to() run (Formulation::set_interrupt: before each
  /// step and each right-hand side of an adaptive integrator); when it returns true they throw
  /// Interrupted (errors.hpp), a SimulationError that is not a failure: the simulator is at its
  /// last completed output (adaptive integrators: the time() before the call) or step, and goes
  /// on from there. It is kept across reset(settings); empty removes it. A program's Ctrl-C
  /// handler sets a flag this reads; the Python package asks Python for its signals here. For a
  /// check that holds during one call or run only: InterruptScope.
  void set_interrupt(std::function<bool()> check);
  const std::function<bool()>& interrupt() const { return interrupt_; }
  /// True after a step or advance_to failed (until reset() or set_state()).
  bool failed() const { return !failure_.empty(); }
  /// What the failure said.
  const std::string& failure() const { return failure_; }

  // State ---------------------------------------------------------------------------------------
  const Eigen::VectorXd& q() const;
  const Eigen::VectorXd& qd() const;
  /// One joint's coordinates and rates (also of a loop-closing joint, or a floating body's free
  /// joint by the body's name).
  Eigen::VectorXd joint_q(const std::string& joint) const;
  Eigen::VectorXd joint_qd(const std::string& joint) const;
  /// Restarts from q and qd at time(): the bodies are placed from the spanning tree's joints, and
  /// the state is checked against every joint and driver. A state that violates them by more than
  /// the state tolerance (or whose loop-closing joints' entries disagree with where the other
  /// joints put them) is refused or projected (StateFix). Quaternions are normalised. Throws
  /// std::invalid_argument for a wrong size, a non-finite value or a refused state.
  void set_state(const Eigen::VectorXd& q, const Eigen::VectorXd& qd, StateFix fix = StateFix::Refuse);
  /// One joint's coordinates and rates changed, the others kept.
  void set_joint_state(const std::string& joint, const Eigen::VectorXd& q, const Eigen::VectorXd& qd,
                       StateFix fix = StateFix::Refuse);
  /// Body poses and twists at time() (accelerations zero: see snapshot()).
  const SystemState& body_states() const;
  const BodyState& body_state(const std::string& body) const;
  /// Restarts from absolute body states at time(), checked like set_state.
  void set_body_states(const SystemState& bodies, StateFix fix = StateFix::Refuse);

  // Inputs --------------------------------------------------------------------------------------
  /// Efforts, one per entry of qd (CoordinateMap), held until changed.
  void set_effort(const Eigen::VectorXd& effort);
  void set_joint_effort(const std::string& joint, const Eigen::VectorXd& effort);
  /// A force through a body's centre of mass and a torque, global frame, held until changed.
  void set_body_wrench(const std::string& body, const Vec3& force, const Vec3& torque);
  /// A load function of the state (external_loads.hpp); an empty function removes it.
  void set_load_function(LoadFunction function);
  /// Efforts and wrenches back to zero (the load function stays).
  void clear_inputs();
  const Eigen::VectorXd& effort() const { return inputs_->effort(); }
  /// Everything applied from outside the model (the metrics count its work).
  const ExternalLoads& inputs() const { return *inputs_; }

  // Outputs at time() ---------------------------------------------------------------------------
  /// Body states with accelerations, every joint's reaction on its child (when the formulation
  /// computes them), driver efforts.
  const Snapshot& snapshot() const;
  /// The reaction of a joint on its child: force, and torque about the child's joint-frame
  /// origin, global. Throws std::invalid_argument for an unknown joint, std::logic_error if the
  /// formulation does not compute reactions.
  JointReaction reaction(const std::string& joint) const;
  Energies energy() const;
  /// Largest violation of the joints and drivers at position, velocity and acceleration level.
  ConstraintErrors constraint_errors() const;
  /// Counters since the last reset().
  SolverStats stats() const;
  /// The formulation's notices, and whether its threads had to give way to one thread (ThreadGovernor).
  std::vector<std::string> warnings() const;
  double state_tolerance() const { return state_tolerance_; }

 private:
  void check_steppable() const;
  /// Runs a stepping call, turning a failure into failure_ (and rethrowing it).
  template <class F>
  void guarded(F&& f);
  void restart(const SystemState& bodies);
  void changed() { ++version_; }
  void inputs_changed();
  /// Whether every joint and driver holds at time() within the state tolerance; with `placed`
  /// (bodies placed from the tree joints' coordinates, which they satisfy by construction) only the
  /// loop-closing joints and the drivers are evaluated.
  bool within_tolerance(const SystemState& bodies, bool placed) const;
  /// Refuses (std::invalid_argument listing the violations) or projects `bodies`; q and qd, when
  /// given, are the coordinates they were placed from (the loop joints' entries are checked).
  void check_or_project(SystemState& bodies, const Eigen::VectorXd* q, const Eigen::VectorXd* qd, StateFix fix) const;

  std::shared_ptr<const Model> model_;
  std::string formulation_name_;
  FormulationSettings settings_;
  double state_tolerance_;
  std::shared_ptr<const CoordinateMap> map_;
  std::unique_ptr<ConstraintSet> constraints_;  // of *model_, for the state checks
  std::vector<int> placed_checks_;              // its blocks that placed bodies may violate: loops, drivers
  mutable ConstraintBlock block_;
  SystemState placed_;
  std::shared_ptr<ExternalLoads> inputs_;
  std::unique_ptr<Formulation> formulation_;
  SolverStats stats_at_reset_;
  std::string failure_;
  std::function<bool()> interrupt_;  // set_interrupt's, given to every formulation made
  // Caches of the state at time(), valid while their version is the current one.
  long version_ = 0;
  mutable long bodies_version_ = -1, q_version_ = -1, snapshot_version_ = -1;
  mutable SystemState bodies_;
  mutable Eigen::VectorXd q_, qd_;
  mutable Snapshot snapshot_;
  mutable std::unique_ptr<Metrics> metrics_;
};

/// A simulator's interrupt check for as long as the scope lives (run_simulation's RunOptions::stop,
/// Python's Ctrl-C during one call): installs `check` (an empty one keeps the simulator's own)
/// and puts back the check the simulator had, however the scope ends. The simulator must outlive it.
class InterruptScope {
 public:
  InterruptScope(Simulator& sim, const std::function<bool()>& check) : sim_(sim), before_(sim.interrupt()) {
    if (check) sim_.set_interrupt(check);
  }
  ~InterruptScope() { sim_.set_interrupt(std::move(before_)); }
  InterruptScope(const InterruptScope&) = delete;
  InterruptScope& operator=(const InterruptScope&) = delete;

 private:
  Simulator& sim_;
  std::function<bool()> before_;
};

}  // namespace treedyn
