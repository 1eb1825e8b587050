// treedyn — a whole run: a loop over the Simulator's advance_to (one code path with stepping
// from C++), which samples it, computes the metrics, hands each sample to the writers, and turns
// a failure into a result that says when and what.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "treedyn/formulation.hpp"
#include "treedyn/metrics.hpp"
#include "treedyn/simulator.hpp"

namespace treedyn {

/// The thresholds a completed run is judged by, each relative to a scale of the model and the run
/// itself (Judgement): a check that fails turns the run's status from "ok" into "warning", with
/// its reason. 0 switches a check off.
/// The defaults catch gross departures, not a method's ordinary error: index-3 methods (ali3's
/// penalty, half- and fully-implicit) keep velocity constraints only to O(h), and symplectic Euler's
/// energy oscillates by O(h); both stay well inside these (the test suite's runs at the papers'
/// settings do).
struct JudgementOptions {
  double energy = 0.1;       // |energy drift| (beyond the work of non-conservative loads) / energy range
  double position = 1e-2;    // largest position constraint error / characteristic length
  double velocity = 0.1;     // largest velocity constraint error / characteristic speed
  double quaternion = 1e-6;  // largest | |Euler parameters| - 1 | of any body
  double accuracy = 1e-2;    // the error estimate's largest body position difference / characteristic length
  /// Closed loops' conditioning (Topology::loop_conditioning, 1: far from, 0: at a singular
  /// position) below which a run is near a singular position, where assembly branches meet and a
  /// run can change branch with every constraint kept: such a run is checked by a refined
  /// companion from then on (ErrorEstimate), or is a warning when none can be made. 0: not watched.
  double branch = 0.1;
};

/// The run's error as a refined run measures it: the same run beside it at half the step
/// (fixed-step integrators, ali3, half- and fully-implicit) or at a hundredth of the tolerances
/// (adaptive integrators), compared at every sample. A method of order p at half the step leaves
/// 1/2^p of its error, so the difference is scaled by 2^p / (2^p - 1) (Richardson): twice the
/// difference for first-order methods, 4/3 for ali3's trapezoidal rule, 16/15 for rk4; 1 for a
/// hundredth of the tolerances. Tolerance is not accuracy over long runs; this measures it.
struct ErrorEstimate {
  std::string refinement;  // what the companion run changed ("dt 0.005 s (halved)"; after a singular position of
                           // the loops: "the reference formulation (rtol 1e-10, ...)"); empty: not made
  double factor = 1.0;     // 2^p / (2^p - 1) applied to the differences below (1: adaptive)
  int order = 0;           // fixed step: the method's order p; 0: the tolerances were refined
  double setting = 0.0;    // the run's step (fixed step) or rtol (adaptive), for the advice of a failed check
  double position = 0.0;   // m: largest distance between a body's centres of mass in the two runs, x factor
  double coordinate = 0.0; // largest difference of a joint coordinate (rad, m, or an Euler parameter), x factor;
                           // 0 against another formulation (its coordinates may differ in sign)
  double energy = 0.0;     // J: largest difference of the total energy, x factor
  double t_compared = 0.0; // the last time compared (t_end unless the companion stopped)
  double t_from = 0.0;     // the first time compared (later than t0 when a singular position started it)
  std::string reason;      // why it was made: "asked", "fixed step", or the singular position that called for it
  std::string note;        // why the estimate is incomplete or was not made
  bool made() const { return !refinement.empty(); }
};

/// What a run was judged by: the scales, and each check's value against its threshold.
struct Judgement {
  double energy_range = 0.0;  // J: the largest of the run's largest kinetic energy, its potential's range (both
                              // over its samples) and total mass x |gravity| x length
  double length = 0.0;        // m: the bodies' and ground joints' extent at t0, or the largest radius of gyration
  double speed = 0.0;         // m/s: sqrt(2 energy_range / total mass)
  struct Check {
    std::string name;                   // "energy", "position", "velocity", "quaternion", "accuracy", "branch"
    double value = 0.0, threshold = 0.0;  // in the check's units (J, m, m/s, -); threshold 0: not checked
    bool passed = true;
    std::string note;  // why a check could not be made, when it could not
  };
  std::vector<Check> checks;
};

struct RunOptions {
  double t_end = 1.0;
  double dt = 0.01;      // fixed-step formulations: the step; adaptive ones: the output interval
  int sample_every = 1;  // write every k-th step (the final time is always written)
  /// Asked after every interval (and before the first), and inside each as the simulator's
  /// interrupt check (Simulator::set_interrupt: before each step and each right-hand side of an
  /// adaptive integrator, which may take millions of steps inside one interval where its steps
  /// collapse): true ends the run with status "interrupted", the samples so far kept (Ctrl-C in
  /// Python, a signal in the command line). The simulator's own check is restored after the run.
  std::function<bool()> stop;
  JudgementOptions judge;  // how a completed run is judged (status "ok" or "warning")
  /// Runs a refined companion beside the run and reports how far the two part (ErrorEstimate;
  /// about twice the cost or more). Needs a simulator without inputs from outside the model.
  bool estimate_error = false;
  /// Without estimate_error, a companion is still made where the run cannot vouch for itself: a
  /// fixed-step run (ali3, half- and fully-implicit, euler/rk4/symplectic-euler), which controls no
  /// error of its own, from the start (about three times the cost); any run from where it comes
  /// near a singular position of its closed loops (JudgementOptions::branch). false: never (the
  /// CLI's --no-estimate-error): a fixed-step run's status then says nothing of its accuracy, and a
  /// passage near a singular position is a warning.
  bool verify = true;
  /// A companion that has taken more than this many times the run's steps (at least 50) is
  /// stopped at the next sample, said in its note, the run a warning: a refined run normally takes
  /// 2 to 2.5 times, far more means the problem is stiff or singular there. Checked at samples only:
  /// a companion that grinds within one output interval runs to its end first.
  double companion_step_ratio = 20.0;
  /// The caller left the step to the run (the CLI without --dt, Python without dt): a fixed-step
  /// run whose error estimate fails the accuracy check, with a step that would meet it
  /// (accuracy_advice), is made again from its start at that step, rounded down to a whole
  /// fraction of the step before (so the samples fall where they did), at most kStepRetries times
  /// and not below kSmallestStepFraction of the first step. The sink is asked to restart
  /// (SampleSink::restart; one that cannot stops the retries); the result lists the runs before
  /// (SimulationResult::step_tries). Not for a run that came near a singular position of its
  /// loops, which no step settles, nor one whose estimate could not be made; no further step after
  /// one whose estimate did not even halve.
  bool choose_step = false;
};

/// RunOptions::choose_step: at most this many runs again at smaller steps ...
inline constexpr int kStepRetries = 2;
/// ... each step at least this fraction of the first one (a smaller one is advised, not run).
inline constexpr double kSmallestStepFraction = 1e-3;

/// Receives every sample as it is taken (the CSV writers).
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  virtual void write(const Snapshot& snapshot, const MetricsSample& metrics, const SolverStats& stats) = 0;
  /// Forgets every sample written so far: the run is made again from its start
  /// (RunOptions::choose_step). false: this sink cannot, and the run is not made again.
  virtual bool restart() { return false; }
};

/// A sink that keeps every sample in memory (tests, studies).
struct Recording : SampleSink {
  std::vector<Snapshot> snapshots;
  std::vector<MetricsSample> metrics;
  void write(const Snapshot& s, const MetricsSample& m, const SolverStats&) override {
    snapshots.push_back(s);
    metrics.push_back(m);
  }
  bool restart() override {
    snapshots.clear();
    metrics.clear();
    return true;
  }
};

struct SimulationResult {
  /// "ok"; "warning": it reached t_end but a check of its accuracy failed (message: the reasons;
  /// judgement: the checks); "failed": it stopped (message: why; failure_time: when);
  /// "interrupted": stopped from outside.
  std::string status = "ok";
  std::string message;
  std::string formulation, integrator;
  double dt = 0.0, t_end = 0.0;
  double t_reached = 0.0;     // last time written
  double failure_time = 0.0;  // when a failed run failed (an adaptive integrator may have stepped past t_reached)
  double wall_seconds = 0.0;   // inside the steps (advance_to), failing ones included
  double setup_seconds = 0.0;  // the caller's set-up before the run (model, simulator), when it says (the CLI does)
  double total_seconds = 0.0;  // the caller's whole command, when it says; else 0
  SolverStats stats;
  long samples = 0;
  double energy_initial = 0.0, energy_final = 0.0, energy_drift_max = 0.0;
  ConstraintErrors constraint_error_max;
  std::vector<std::string> warnings;  // notices of the formulation (a status "ok" run may have some)
  Judgement judgement;
  ErrorEstimate error_estimate;  // when RunOptions::estimate_error; judged by JudgementOptions::accuracy
  /// A run made before this one at a larger step (RunOptions::choose_step), and why it was not kept.
  struct StepTry {
    double step = 0.0;            // s
    double error = 0.0;           // m: its error estimate (ErrorEstimate::position)
    double threshold = 0.0;       // m: the accuracy check's bound it exceeded
    double wall_seconds = 0.0;    // its stepping time
    long steps = 0;
  };
  std::vector<StepTry> step_tries;  // oldest first; empty: the first run was kept
  double step = 0.0;  // fixed-step runs: the step taken (s); 0 for adaptive integrators
  std::string step_note;  // choose_step: why a smaller step was not tried, when it was not
  std::map<std::string, double> stage_seconds;
  std::map<std::string, double> diagnostics;  // Formulation::diagnostics() at the end of the run
  bool ok() const { return status == "ok"; }
  /// Reached t_end: "ok" or "warning".
  bool completed() const { return status == "ok" || status == "warning"; }
  double real_time_factor() const { return wall_seconds > 0.0 ? t_reached / wall_seconds : 0.0; }
};

/// The most output intervals a run accepts ((t_end - t0) / dt): more is refused up front.
inline constexpr double kMaxRunIntervals = 1e12;

using ProgressCallback = std::function<void(double t, double t_end)>;

/// Runs `simulator` from its current time to options.t_end, sampling at its time and every
/// options.dt after it (fixed-step formulations take their own steps in between). Never throws for
/// a failure of the simulation itself: the result says "failed", when and why, and the samples
/// already written stay written. Throws std::invalid_argument for bad options and
/// std::logic_error for a simulator whose last step failed.
SimulationResult run_simulation(Simulator& simulator, const RunOptions& options, SampleSink* sink = nullptr,
                                const ProgressCallback& progress = {});

/// The judgement of a simulator's state at its time, for a loop that steps it itself (a whole run
/// judges itself: run_simulation): the checks a state answers alone, with JudgementOptions'
/// thresholds and scales — the largest position and velocity constraint errors against the
/// model's length and speed, the Euler parameters' norms — and, given `energy0` (the total energy
/// where the loop started, Simulator::energy().total), the energy's drift since then against the
/// model's energy scale (the largest of the kinetic energy now and gravity's work over the model's
/// length): meaningful only while nothing non-conservative acts, which the caller knows. A
/// simulator whose last step failed is "failed", with its failure. The accuracy a run cannot
/// measure on itself (ErrorEstimate) is not among them. Throws std::invalid_argument for an
/// energy0 that is not finite.
struct StateCheck {
  std::string status = "ok";  // "ok", "warning" (message: the reasons) or "failed"
  std::string message;
  Judgement judgement;
  bool ok() const { return status == "ok"; }
};
StateCheck check_state(const Simulator& simulator, const JudgementOptions& options = {},
                       std::optional<double> energy0 = std::nullopt);

/// RunOptions::choose_step in words: the steps tried and why each was left, and the step kept
/// ("" when the first run was kept and no smaller step was advised).
std::string describe_step_choice(const SimulationResult& result);

/// Throws SimulationError naming the first body whose state is not finite.
void check_finite(const Model& model, const Snapshot& snapshot);

}  // namespace treedyn
