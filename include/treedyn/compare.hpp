// treedyn — one model under every method. `compare` runs formulations side by side on one model
// and the same sample times and measures each against the dense `reference`; `scaling_study` runs
// them on n-link chains and reports the cost per simulated second as n grows.
#pragma once

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "treedyn/formulations.hpp"
#include "treedyn/simulation.hpp"

namespace treedyn {

/// What a user may set for a comparison; whatever is unset takes suggested_settings' defaults.
struct CompareOptions {
  std::vector<std::string> formulations;  // empty: every formulation of the catalogue, in its order
  std::optional<double> t_end;            // default: the model's, else 10 s
  std::optional<double> dt;               // step of ali3 and half-/fully-implicit (default: the model's, else the papers')
  std::optional<double> rtol;             // rtol = atol of dca and hdca (the reference keeps its own)
  std::optional<double> alpha;            // ali3's penalty
  /// Interval of the common sample times; default max(0.01 s, the step given as dt). The work of
  /// drivers and dampers is integrated over the samples; finer sampling costs the adaptive
  /// integrators an interpolation per output, counted in their wall time.
  std::optional<double> sample_interval;
  int threads = 1;
  bool pin_threads = false;               // Threading::pin (the command line sets it)
  int reference_max_bodies = 64;          // beyond: no reference run (dense, O(n^3) per step)
  /// Each run beside a refined companion (RunOptions::estimate_error; about twice the cost):
  /// the rows say which runs are converged (CompareRow::converged).
  bool estimate_error = false;
  /// RunOptions::verify: fixed-step runs and passages near singular positions checked by a
  /// refined companion even without estimate_error.
  bool verify = true;
  /// Asked between output intervals (RunOptions::stop): true ends the run in progress
  /// ("interrupted", its samples kept) and skips the runs after it; the report holds what was done.
  std::function<bool()> stop;
};

/// The settings a comparison gives `formulation` on `model`: each method's published defaults —
/// reference bdf at 1e-10; dca and hdca dopri5 at 1e-6 (paper 001); ali3 h = 0.01 s, 3 iterations
/// (paper 000), with ali3's own default penalty (ali3_penalty: alpha h^2 / (4 M) >= 50, and
/// alpha h^2 / (4 M D) >= 0.1 on deep trees; docs/results/compare.md);
/// half- and fully-implicit h = 1e-3 s (paper 002) — except that a step the model file sets
/// (its time scale) replaces the papers' steps, and the options the user set apply over all.
FormulationSettings suggested_settings(const Model& model, const std::string& formulation, const CompareOptions& options);

/// One line naming the settings that matter for `formulation` ("dopri5, rtol = atol = 1e-06").
std::string describe_settings(const std::string& formulation, const FormulationSettings& settings);

struct CompareRow {
  std::string formulation;
  std::string settings;  // describe_settings
  /// "ok"; "warning" (it reached t_end but a check of its accuracy failed, see message);
  /// "failed" (the run stopped, see message); "interrupted" (stopped by
  /// CompareOptions::stop); "unsupported" (the formulation refused the model, message says why);
  /// "skipped" (not run, message says why).
  std::string status;
  std::string message;
  SimulationResult result;  // meaningful when ran()
  /// The formulation ran (to the end or not): its result holds figures.
  bool ran() const { return status == "ok" || status == "warning" || status == "failed" || status == "interrupted"; }
  /// With CompareOptions::estimate_error: "yes" when the refined companion reached the end and its
  /// body positions stayed within the accuracy check (JudgementOptions::accuracy of the model's
  /// length), "no" otherwise; "" when no estimate was made.
  std::string converged() const;
  /// Largest |r_i - r_i^ref| over bodies and common sample times up to deviation_until, m; NaN
  /// without a reference (and for the reference itself).
  double position_deviation = std::numeric_limits<double>::quiet_NaN();
  double deviation_until = 0.0;
  /// (t, largest |r_i - r_i^ref| over bodies) at each common sample time; empty without reference.
  std::vector<std::pair<double, double>> deviation_history;
};

struct CompareReport {
  std::string model;
  int bodies = 0;
  double t_end = 0.0, sample_interval = 0.0;
  int threads = 1;
  double energy_initial = 0.0;  // kinetic + potential at t0, J (the scale of the energy drifts)
  std::string reference_note;  // how the deviations were obtained, or why there are none
  std::vector<CompareRow> rows;
};

using CompareProgress = std::function<void(const CompareRow&)>;

/// Runs each formulation from the model's initial state (which must be consistent). Never throws
/// for a formulation's failure: its row says what happened while the others still run. With
/// `output_dir`, each run's trajectory.csv, metrics.csv and summary.json go to output_dir/<name>/.
/// Throws std::invalid_argument for an unknown formulation name or a bad option.
CompareReport compare_formulations(const std::shared_ptr<const Model>& model, const CompareOptions& options,
                                   const std::string& output_dir = {}, const CompareProgress& progress = {});

std::string compare_csv(const CompareReport& report);
/// Deviation from the reference over time: t, then one column per measured formulation.
std::string compare_deviation_csv(const CompareReport& report);
std::string compare_markdown(const CompareReport& report);

// ---------------------------------------------------------------------------------------------

struct ScalingOptions {
  JointType joint = JointType::Spherical;
  int min_bodies = 2, max_bodies = 1024;  // chains of min_bodies, 2 min_bodies, ... up to max_bodies
  std::vector<int> threads = {1};
  double t_end = 1.0;
  /// A run whose wall time, extrapolated linearly in n from the same formulation's previous
  /// size, would exceed this many seconds is skipped (its row says so).
  double budget_seconds = 60.0;
  CompareOptions compare;  // formulations, dt, rtol, alpha, reference_max_bodies (threads, t_end unused)
};

struct ScalingRow {
  int bodies = 0, threads = 1;
  std::string formulation, status, message;  // status as in CompareRow
  double t_reached = 0.0, wall_seconds = 0.0;
  long steps = 0;
  /// Largest |r_i - r_i^ref| at the common sample times, m; NaN beyond the reference's limit.
  double position_deviation = std::numeric_limits<double>::quiet_NaN();
  /// Wall seconds per simulated second over the time reached (failed runs too); NaN if not run.
  double cost() const {
    return t_reached > 0.0 ? wall_seconds / t_reached : std::numeric_limits<double>::quiet_NaN();
  }
};

struct ScalingReport {
  ScalingOptions options;
  std::vector<ScalingRow> rows;
};

/// Runs the formulations on make_chain(n, joint) for every n and thread count, each measured
/// against one reference run per n (up to reference_max_bodies) as in compare_formulations.
/// Never throws for a run's failure.
ScalingReport scaling_study(const ScalingOptions& options, const std::function<void(const ScalingRow&)>& progress = {});

std::string scaling_csv(const ScalingReport& report);
std::string scaling_markdown(const ScalingReport& report);

}  // namespace treedyn
