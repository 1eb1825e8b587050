// One model under every formulation, on common sample times, measured against the reference.
#include "treedyn/compare.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>

#include "compare_internal.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/result_writer.hpp"

namespace treedyn {
namespace {

using compare_detail::PositionTrack;

/// Largest distance of any body from its reference position at the same sample time.
class DeviationSink : public SampleSink {
 public:
  explicit DeviationSink(const PositionTrack& reference) : reference_(reference) {}
  void write(const Snapshot& s, const MetricsSample&, const SolverStats&) override {
    const double tol = 1e-9 * (1.0 + std::abs(s.t));  // both runs sample t0 + k * interval exactly
    const auto it = std::lower_bound(reference_.t.begin(), reference_.t.end(), s.t - tol);
    if (it == reference_.t.end() || std::abs(*it - s.t) > tol) return;  // past the reference's failure
    const auto& r_ref = reference_.r[static_cast<std::size_t>(it - reference_.t.begin())];
    double d = 0.0;
    for (std::size_t i = 0; i < s.bodies.size(); ++i) d = std::max(d, (s.bodies[i].r - r_ref[i]).norm());
    history.emplace_back(*it, d);
  }
  bool restart() override {
    history.clear();
    return true;
  }
  std::vector<std::pair<double, double>> history;  // (reference sample time, largest body distance)

 private:
  const PositionTrack& reference_;
};

/// Hands each sample to several sinks (null ones skipped).
struct Tee : SampleSink {
  std::vector<SampleSink*> sinks;
  void write(const Snapshot& s, const MetricsSample& m, const SolverStats& st) override {
    for (SampleSink* k : sinks)
      if (k) k->write(s, m, st);
  }
  bool restart() override {  // all or none: each sink restarts (none of these refuses)
    bool all = true;
    for (SampleSink* k : sinks)
      if (k) all = k->restart() && all;
    return all;
  }
};

/// How the deviations were obtained, or why there are none.
std::string reference_note(const Model& model, const CompareOptions& options, bool with_reference,
                           const CompareRow& reference_row, const PositionTrack& reference) {
  if (!with_reference)
    return "no reference run: " + std::to_string(model.body_count()) + " bodies > " +
           std::to_string(options.reference_max_bodies) +
           " (the dense reference costs O(n^3) per step; raise --reference-max-bodies to run it)";
  std::ostringstream note;
  note << "deviations from `reference` (" << reference_row.settings << ") at the " << reference.t.size()
       << " common sample times";
  if (!reference_row.result.completed())
    note << " up to t = " << (reference.t.empty() ? 0.0 : reference.t.back()) << " s (the reference "
         << reference_row.status << ": " << reference_row.message << ")";
  return note.str();
}

}  // namespace

namespace compare_detail {

/// Runs one formulation; `record` receives its samples, `reference` (if any) measures them.
CompareRow run_row(const std::shared_ptr<const Model>& model_ptr, const std::string& name, const CompareOptions& options,
                   const RunOptions& run, const std::string& output_dir, const PositionTrack* reference,
                   SampleSink* record) {
  const Model& model = *model_ptr;
  CompareRow row;
  row.formulation = name;
  const FormulationSettings settings = suggested_settings(model, name, options);
  row.settings = describe_settings(name, settings);
  std::unique_ptr<Simulator> simulator;
  try {
    simulator = std::make_unique<Simulator>(model_ptr, name, settings);
  } catch (const std::exception& e) {  // options were validated: this is the model's refusal
    row.status = "unsupported";
    row.message = e.what();
    return row;
  }
  std::unique_ptr<ResultWriter> writer;
  if (!output_dir.empty()) writer = std::make_unique<ResultWriter>(model, output_dir + "/" + name, &simulator->coordinates());
  std::unique_ptr<DeviationSink> deviation;
  if (reference) deviation = std::make_unique<DeviationSink>(*reference);
  Tee tee;
  tee.sinks = {writer.get(), record, deviation.get()};
  row.result = run_simulation(*simulator, run, &tee);
  if (!row.result.step_tries.empty())  // RunOptions::choose_step took a smaller step than suggested
    row.settings = describe_settings(name, simulator->settings()) + " (chosen: " + describe_step_choice(row.result) + ")";
  if (writer) writer->finish(row.result);
  row.status = row.result.status;
  row.message = row.result.message;
  if (deviation && !deviation->history.empty()) {
    row.deviation_history = std::move(deviation->history);
    row.position_deviation = 0.0;
    for (const auto& [t, d] : row.deviation_history) row.position_deviation = std::max(row.position_deviation, d);
    row.deviation_until = row.deviation_history.back().first;
  }
  return row;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string quoted = "\"";
  for (char c : s) quoted += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return quoted + "\"";
}

std::string csv_number(double x) { return std::isfinite(x) ? fmt(x, 6) : ""; }

std::string fmt(double x, int digits) {
  if (std::isnan(x)) return "-";
  std::ostringstream s;
  s.precision(digits);
  s << x;
  return s.str();
}

std::vector<std::string> formulation_names(const std::vector<std::string>& requested) {
  std::vector<std::string> names;
  for (const auto& f : formulation_catalog()) names.push_back(f.name);
  if (requested.empty()) return names;
  for (const auto& r : requested)
    if (std::find(names.begin(), names.end(), r) == names.end()) {
      std::string known;
      for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
      throw std::invalid_argument("unknown formulation '" + r + "' (known: " + known + ", or all)");
    }
  return requested;
}

void validate(const CompareOptions& o) {
  auto positive = [](const std::optional<double>& x, const char* what) {
    if (x && !(*x > 0.0)) throw std::invalid_argument(std::string(what) + " must be positive");
  };
  positive(o.t_end, "t_end");
  positive(o.dt, "dt");
  positive(o.rtol, "rtol");
  positive(o.alpha, "alpha");
  positive(o.sample_interval, "the sample interval");
  if (o.threads < 1) throw std::invalid_argument("threads must be at least 1");
}

double sample_interval(const CompareOptions& o, double t_end) {
  return std::min(t_end, o.sample_interval.value_or(std::max(0.01, o.dt.value_or(0.0))));
}

}  // namespace compare_detail

FormulationSettings suggested_settings(const Model& model, const std::string& formulation, const CompareOptions& options) {
  FormulationSettings s;
  s.threading.threads = options.threads;
  s.threading.pin = options.pin_threads;
  if (formulation == "dca" || formulation == "hdca") {
    if (options.rtol) s.rtol = s.atol = *options.rtol;
  } else if (formulation == "ali3") {
    s.dt = options.dt.value_or(model.defaults.dt.value_or(s.ali3.dt));
    s.ali3.alpha = options.alpha ? *options.alpha : ali3_penalty(model, s.dt);  // ali3's own default, named here
  } else if (formulation == "half-implicit" || formulation == "fully-implicit") {
    s.dt = options.dt.value_or(model.defaults.dt.value_or(s.implicit.dt));
  }
  return s;
}

std::string describe_settings(const std::string& f, const FormulationSettings& s) {
  using compare_detail::fmt;
  auto adaptive = [&](const std::string& integrator, double rtol) {
    return s.integrator.value_or(integrator) + ", rtol = atol = " + fmt(s.rtol.value_or(rtol));
  };
  if (f == "reference") return adaptive(s.reference.integrator, s.reference.rtol);
  if (f == "dca") {
    const auto& a = s.dca.baumgarte_alpha;
    const auto& b = s.dca.baumgarte_beta;
    const std::string baumgarte = !a && !b ? "Baumgarte 3/T (the model's time scale)"
                                  : "Baumgarte alpha = " + (a ? fmt(*a) : "3/T") + ", beta = " + (b ? fmt(*b) : "3/T");
    return adaptive(s.dca.integrator, s.dca.rtol) + ", " + baumgarte;
  }
  if (f == "hdca") return adaptive(s.hdca.integrator, s.hdca.rtol);
  if (f == "ali3") {
    const Ali3Options& o = s.ali3;
    const char* projections = o.project_velocities ? (o.project_accelerations ? "both" : "velocities")
                                                   : (o.project_accelerations ? "accelerations" : "none");
    return "h = " + fmt(s.dt) + ", alpha = " + fmt(o.alpha) + ", " + std::to_string(o.newton_max) +
           " iterations, projections " + projections;
  }
  ImplicitOptions o = s.implicit;
  o.scheme = f == "half-implicit" ? ImplicitOptions::Scheme::HalfImplicit : ImplicitOptions::Scheme::FullyImplicit;
  return "h = " + fmt(s.dt) + ", Newton tol " + fmt(o.tolerance(s.dt)) + " (at most " + std::to_string(o.newton_max) +
         "), " + (o.linear_solver == ImplicitOptions::LinearSolver::Tree ? "tree" : "sparse LU");
}

CompareReport compare_formulations(const std::shared_ptr<const Model>& model_ptr, const CompareOptions& options,
                                   const std::string& output_dir, const CompareProgress& progress) {
  if (!model_ptr) throw std::invalid_argument("compare: the model is a null pointer");
  const Model& model = *model_ptr;
  compare_detail::validate(options);
  const std::vector<std::string> names = compare_detail::formulation_names(options.formulations);
  CompareReport report;
  report.model = model.name;
  report.bodies = model.body_count();
  report.threads = options.threads;
  report.t_end = options.t_end.value_or(model.defaults.t_end_or_fallback());
  report.sample_interval = compare_detail::sample_interval(options, report.t_end);
  RunOptions run{report.t_end, report.sample_interval, 1, options.stop, {}};
  run.estimate_error = options.estimate_error;
  run.verify = options.verify;
  run.choose_step = !options.dt;  // the model's step (or the papers'), not the caller's

  compare_detail::PositionTrack reference;
  const bool with_reference = model.body_count() <= options.reference_max_bodies;
  CompareRow reference_row;
  if (with_reference) reference_row = compare_detail::run_row(model_ptr, "reference", options, run, output_dir, nullptr, &reference);
  report.reference_note = reference_note(model, options, with_reference, reference_row, reference);
  const compare_detail::PositionTrack* track = with_reference && !reference.t.empty() ? &reference : nullptr;
  bool interrupted = reference_row.status == "interrupted";
  for (const std::string& name : names) {
    CompareRow row;
    if (interrupted && !(name == "reference" && with_reference)) {
      row.formulation = name;
      row.status = "skipped";
      row.message = "the comparison was interrupted";
    } else if (name != "reference") {
      row = compare_detail::run_row(model_ptr, name, options, run, output_dir, track, nullptr);
    } else if (with_reference) {
      row = reference_row;
    } else {
      row.formulation = name;
      row.settings = describe_settings(name, suggested_settings(model, name, options));
      row.status = "skipped";
      row.message = report.reference_note;
    }
    interrupted = interrupted || row.status == "interrupted";
    if (progress) progress(row);
    if (row.ran()) report.energy_initial = row.result.energy_initial;
    report.rows.push_back(std::move(row));
  }
  return report;
}

std::string CompareRow::converged() const {
  const ErrorEstimate& e = result.error_estimate;
  if (!e.made()) return "";
  if (!e.note.empty() || !result.completed()) return "no";
  for (const Judgement::Check& c : result.judgement.checks)
    if (c.name == "accuracy") return c.passed ? "yes" : "no";
  return "no";
}

std::string compare_csv(const CompareReport& report) {
  using compare_detail::csv_field;
  using compare_detail::csv_number;
  std::ostringstream s;
  s << "formulation,status,settings,wall_s,real_time_factor,t_reached,steps,rhs_evaluations,newton_iterations,"
       "position_deviation_m,energy_drift_J,position_error,velocity_error,acceleration_error,message,error_estimate_m,"
       "converged\n";
  for (const CompareRow& row : report.rows) {
    const SimulationResult& r = row.result;
    const bool ran = row.ran();
    auto number = [&](double x) { return ran ? csv_number(x) : std::string(); };
    s << row.formulation << "," << row.status << "," << csv_field(row.settings) << "," << number(r.wall_seconds) << ","
      << number(r.real_time_factor()) << "," << number(r.t_reached) << "," << (ran ? std::to_string(r.stats.steps) : "")
      << "," << (ran ? std::to_string(r.stats.rhs_evaluations) : "") << ","
      << (ran ? std::to_string(r.stats.newton_iterations) : "") << "," << csv_number(row.position_deviation) << ","
      << number(r.energy_drift_max) << "," << number(r.constraint_error_max.position) << ","
      << number(r.constraint_error_max.velocity) << "," << number(r.constraint_error_max.acceleration) << ","
      << csv_field(row.message) << ","
      << (r.error_estimate.made() ? csv_number(r.error_estimate.position) : std::string()) << "," << row.converged() << "\n";
  }
  return s.str();
}

std::string compare_deviation_csv(const CompareReport& report) {
  std::map<double, std::vector<std::string>> table;  // sample time -> one cell per measured row
  std::vector<const CompareRow*> measured;
  for (const CompareRow& row : report.rows)
    if (!row.deviation_history.empty()) measured.push_back(&row);
  for (std::size_t k = 0; k < measured.size(); ++k)
    for (const auto& [t, d] : measured[k]->deviation_history) {
      auto& cells = table.try_emplace(t, measured.size()).first->second;
      cells[k] = compare_detail::csv_number(d);
    }
  std::ostringstream s;
  s << "t";
  for (const CompareRow* row : measured) s << "," << row->formulation;
  s << "\n";
  for (const auto& [t, cells] : table) {
    s << compare_detail::csv_number(t);
    for (const std::string& c : cells) s << "," << c;
    s << "\n";
  }
  return s.str();
}

std::string compare_markdown(const CompareReport& report) {
  using compare_detail::fmt;
  std::ostringstream s;
  s << "# " << report.model << " under every formulation\n\n"
    << report.bodies << " bodies, " << fmt(report.t_end) << " s, samples every " << fmt(report.sample_interval)
    << " s, " << report.threads << " thread" << (report.threads > 1 ? "s" : "") << "; " << report.reference_note
    << ". Initial energy " << fmt(report.energy_initial, 6) << " J. Wall time counts advancing only (not sampling or "
       "writing); the work of drivers and dampers in the energy balance is integrated over the samples (`--sample` "
       "refines it, at a cost in the adaptive methods' wall time: each output interpolates).\n\n"
    << "| formulation | status | wall [s] | real-time factor | steps | RHS | Newton it. | max position deviation [m] | "
       "max energy drift [J] | max constraint error: position / velocity / acceleration |\n"
    << "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const CompareRow& row : report.rows) {
    const SimulationResult& r = row.result;
    s << "| " << row.formulation << " | " << row.status;
    if (row.status != "ok" && row.status != "warning" && row.status != "failed") {
      s << " | | | | | | | | |\n";
      continue;
    }
    if (row.status == "failed") s << " at " << fmt(r.failure_time) << " s";
    std::string deviation = row.formulation == "reference" ? "(reference)" : fmt(row.position_deviation);
    if (std::isfinite(row.position_deviation) && row.deviation_until < r.t_end - 1e-9)
      deviation += " (to " + fmt(row.deviation_until) + " s)";
    s << " | " << fmt(r.wall_seconds) << " | " << fmt(r.real_time_factor()) << " | " << r.stats.steps << " | "
      << r.stats.rhs_evaluations << " | " << r.stats.newton_iterations << " | " << deviation << " | "
      << (std::isnan(r.energy_drift_max) ? "unknown" : fmt(r.energy_drift_max)) << " | "
      << fmt(r.constraint_error_max.position) << " / " << fmt(r.constraint_error_max.velocity) << " / "
      << fmt(r.constraint_error_max.acceleration) << " |\n";
  }
  s << "\nSettings:\n\n";
  for (const CompareRow& row : report.rows) s << "- " << row.formulation << ": " << row.settings << "\n";
  std::string notes;
  for (const CompareRow& row : report.rows) {
    if (!row.message.empty() && row.status != "skipped") notes += "- " + row.formulation + " (" + row.status + "): " + row.message + "\n";
    for (const std::string& w : row.result.warnings) notes += "- " + row.formulation + " warns: " + w + "\n";
  }
  std::string estimates;
  for (const CompareRow& row : report.rows) {
    const ErrorEstimate& e = row.result.error_estimate;
    if (e.made())
      estimates += "- " + row.formulation + ": " + fmt(e.position) + " m, joint coordinates " + fmt(e.coordinate) +
                   ", energy " + fmt(e.energy) + " J (against " + e.refinement + "): converged " + row.converged() +
                   (e.note.empty() ? "" : " (" + e.note + ")") + "\n";
  }
  if (!estimates.empty())
    s << "\nError estimates (largest body position difference from a refined companion run):\n\n" << estimates;
  if (!notes.empty()) s << "\nNotes:\n\n" << notes;
  return s.str();
}

}  // namespace treedyn
