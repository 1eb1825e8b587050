// treedyn — a whole run: a loop over the Simulator's advance_to (one code path with stepping
// from C++), which samples it, computes the metrics, hands each sample to the writers, and turns
// a failure into a result that says when and what.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "treedyn/formulation.hpp"
#include "treedyn/metrics.hpp"
#include "treedyn/simulator.hpp"

namespace treedyn {

struct RunOptions {
  double t_end = 1.0;
  double dt = 0.01;      // fixed-step formulations: the step; adaptive ones: the output interval
  int sample_every = 1;  // write every k-th step (the final time is always written)
  /// Asked after every interval (and before the first): true ends the run there with status
  /// "interrupted", the samples so far kept (Ctrl-C in Python, a signal in the command line).
  std::function<bool()> stop;
};

/// Receives every sample as it is taken (the CSV writers).
class SampleSink {
 public:
  virtual ~SampleSink() = default;
  virtual void write(const Snapshot& snapshot, const MetricsSample& metrics, const SolverStats& stats) = 0;
};

/// A sink that keeps every sample in memory (tests, studies).
struct Recording : SampleSink {
  std::vector<Snapshot> snapshots;
  std::vector<MetricsSample> metrics;
  void write(const Snapshot& s, const MetricsSample& m, const SolverStats&) override {
    snapshots.push_back(s);
    metrics.push_back(m);
  }
};

struct SimulationResult {
  std::string status = "ok";  // "ok", "failed" or "interrupted"
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
  std::vector<std::string> warnings;
  std::map<std::string, double> stage_seconds;
  std::map<std::string, double> diagnostics;  // Formulation::diagnostics() at the end of the run
  bool ok() const { return status == "ok"; }
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

/// Throws SimulationError naming the first body whose state is not finite.
void check_finite(const Model& model, const Snapshot& snapshot);

}  // namespace treedyn
