// Every formulation on n-link chains: cost per simulated second as n grows.
#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

#include "compare_internal.hpp"
#include "treedyn/compare.hpp"
#include "treedyn/generators.hpp"

namespace treedyn {
namespace {

void validate(const ScalingOptions& o) {
  compare_detail::validate(o.compare);
  if (o.min_bodies < 1 || o.max_bodies < o.min_bodies)
    throw std::invalid_argument("bodies: need 1 <= min <= max (got " + std::to_string(o.min_bodies) + ".." +
                                std::to_string(o.max_bodies) + ")");
  if (o.threads.empty()) throw std::invalid_argument("threads: give at least one count");
  for (int t : o.threads)
    if (t < 1) throw std::invalid_argument("threads: each count must be at least 1");
  if (!(o.t_end > 0.0)) throw std::invalid_argument("t_end must be positive");
  if (!(o.budget_seconds > 0.0)) throw std::invalid_argument("the budget must be positive");
}

/// Runs one formulation on one chain, unless the reference limit or the budget says not to;
/// measured against `reference` (when there is one) at the common sample times.
ScalingRow run_point(const std::shared_ptr<const Model>& chain, const std::string& name, int threads, const ScalingOptions& o,
                     const ScalingRow* previous, const compare_detail::PositionTrack* reference) {
  ScalingRow row;
  row.bodies = chain->body_count();
  row.threads = threads;
  row.formulation = name;
  if (name == "reference" && row.bodies > o.compare.reference_max_bodies) {
    row.status = "skipped";
    row.message = "more than " + std::to_string(o.compare.reference_max_bodies) + " bodies (dense, O(n^3))";
    return row;
  }
  if (previous && previous->t_reached > 0.0) {
    const double predicted = previous->cost() * o.t_end * row.bodies / previous->bodies;
    if (predicted > o.budget_seconds) {
      row.status = "skipped";
      row.message = "predicted " + compare_detail::fmt(predicted) + " s > budget " + compare_detail::fmt(o.budget_seconds) + " s";
      return row;
    }
  }
  CompareOptions c = o.compare;
  c.threads = threads;
  RunOptions run{o.t_end, compare_detail::sample_interval(c, o.t_end), 1, o.compare.stop, {}};
  run.verify = false;  // a speed study: accuracy is the deviation from the reference, not a companion's
  const CompareRow r = compare_detail::run_row(chain, name, c, run, {}, name == "reference" ? nullptr : reference, nullptr);
  row.status = r.status;
  row.message = r.message;
  row.t_reached = r.result.completed() ? r.result.t_reached : r.status == "failed" ? r.result.failure_time : 0.0;
  row.wall_seconds = r.result.wall_seconds;
  row.steps = r.result.stats.steps;
  row.position_deviation = r.position_deviation;
  return row;
}

/// The reference's positions on a chain at the common sample times; empty beyond the limit.
compare_detail::PositionTrack reference_track(const std::shared_ptr<const Model>& chain, const ScalingOptions& o) {
  compare_detail::PositionTrack track;
  if (chain->body_count() > o.compare.reference_max_bodies) return track;
  RunOptions run{o.t_end, compare_detail::sample_interval(o.compare, o.t_end), 1, o.compare.stop, {}};
  run.verify = false;
  compare_detail::run_row(chain, "reference", o.compare, run, {}, nullptr, &track);
  return track;
}

std::vector<int> sizes(const ScalingOptions& o) {
  std::vector<int> n;
  for (int b = o.min_bodies; b <= o.max_bodies; b *= 2) n.push_back(b);
  return n;
}

/// "- name: settings" for the chains, one line per run of lengths with the same settings (ali3's
/// penalty follows the chain's mass).
std::string settings_lines(const ScalingOptions& o, const std::string& name) {
  std::vector<std::pair<std::string, std::vector<int>>> groups;
  for (int n : sizes(o)) {
    const std::string d = describe_settings(name, suggested_settings(make_chain(n, o.joint), name, o.compare));
    if (groups.empty() || groups.back().first != d) groups.push_back({d, {}});
    groups.back().second.push_back(n);
  }
  std::string out;
  for (const auto& [d, ns] : groups) {
    out += "- " + name;
    if (groups.size() > 1)
      out += ", " + std::to_string(ns.front()) + (ns.size() > 1 ? "-" + std::to_string(ns.back()) : "") + " bodies";
    out += ": " + d + "\n";
  }
  return out;
}

/// The cheapest cost among the runs that reached t_end at (bodies, threads); NaN if none did.
double fastest(const ScalingReport& report, int bodies, int threads) {
  double best = std::numeric_limits<double>::quiet_NaN();
  for (const ScalingRow& r : report.rows)
    if (r.bodies == bodies && r.threads == threads && (r.status == "ok" || r.status == "warning") && !(r.cost() >= best)) best = r.cost();
  return best;
}

const ScalingRow* find(const ScalingReport& report, int bodies, int threads, const std::string& name) {
  for (const ScalingRow& r : report.rows)
    if (r.bodies == bodies && r.threads == threads && r.formulation == name) return &r;
  return nullptr;
}

}  // namespace

ScalingReport scaling_study(const ScalingOptions& options, const std::function<void(const ScalingRow&)>& progress) {
  validate(options);
  ScalingReport report;
  report.options = options;
  const std::vector<std::string> names = compare_detail::formulation_names(options.compare.formulations);
  std::map<std::pair<std::string, int>, ScalingRow> last_run;  // per (formulation, threads)
  for (int n : sizes(options)) {
    const auto chain = std::make_shared<const Model>(make_chain(n, options.joint));
    const compare_detail::PositionTrack reference = reference_track(chain, options);
    for (const std::string& name : names)
      for (int threads : options.threads) {
        const auto key = std::make_pair(name, threads);
        const auto it = last_run.find(key);
        ScalingRow row = run_point(chain, name, threads, options, it == last_run.end() ? nullptr : &it->second,
                                   reference.t.empty() ? nullptr : &reference);
        if (row.t_reached > 0.0) last_run[key] = row;
        if (progress) progress(row);
        const bool interrupted = row.status == "interrupted";
        report.rows.push_back(std::move(row));
        if (interrupted) return report;  // what was measured so far
      }
  }
  return report;
}

std::string scaling_csv(const ScalingReport& report) {
  using namespace compare_detail;
  std::ostringstream s;
  s << "bodies,threads,formulation,status,t_reached,wall_s,steps,wall_per_simulated_s,real_time_factor,"
       "cost_over_fastest,position_deviation_m,message\n";
  for (const ScalingRow& r : report.rows)
    s << r.bodies << "," << r.threads << "," << r.formulation << "," << r.status << "," << csv_number(r.t_reached) << ","
      << csv_number(r.wall_seconds) << "," << r.steps << "," << csv_number(r.cost()) << "," << csv_number(1.0 / r.cost())
      << "," << csv_number(r.cost() / fastest(report, r.bodies, r.threads)) << "," << csv_number(r.position_deviation)
      << "," << csv_field(r.message) << "\n";
  return s.str();
}

std::string scaling_markdown(const ScalingReport& report) {
  using compare_detail::fmt;
  const ScalingOptions& o = report.options;
  const std::vector<std::string> names = compare_detail::formulation_names(o.compare.formulations);
  std::ostringstream s;
  s << "# Scaling: n-link " << to_string(o.joint) << " chains under every formulation\n\n"
    << "`make_chain(n, " << to_string(o.joint) << ")` (paper 000's pendulum chain: 1 m, 1 kg links), " << fmt(o.t_end)
    << " s simulated. Each cell: wall milliseconds per simulated second (1000 / real-time factor), and in brackets "
       "its ratio to the fastest run of the row that reached the end. \"failed at t\": the run stopped there; its cost "
       "is over the time it reached. \"-\": not run (below).\n\n| bodies | threads |";
  for (const auto& n : names) s << " " << n << " |";
  s << "\n|---:|---:|";
  for (std::size_t k = 0; k < names.size(); ++k) s << "---:|";
  s << "\n";
  for (int n : sizes(o))
    for (int t : o.threads) {
      s << "| " << n << " | " << t << " |";
      const double best = fastest(report, n, t);
      for (const auto& name : names) {
        const ScalingRow* r = find(report, n, t, name);
        if (!r || r->t_reached <= 0.0) {
          s << " " << (r && r->status == "unsupported" ? "unsupported" : "-") << " |";
          continue;
        }
        s << " " << fmt(1e3 * r->cost());
        if (!std::isnan(best)) s << " (" << fmt(r->cost() / best, 2) << "x)";
        if (r->status == "failed") s << " failed at " << fmt(r->t_reached) << " s";
        s << " |";
      }
      s << "\n";
    }
  if (o.threads.size() > 1) {
    s << "\nSpeed-up over " << o.threads.front() << " thread" << (o.threads.front() > 1 ? "s" : "")
      << " (cost ratio, runs that reached the same time):\n\n| bodies | threads |";
    for (const auto& n : names) s << " " << n << " |";
    s << "\n|---:|---:|";
    for (std::size_t k = 0; k < names.size(); ++k) s << "---:|";
    s << "\n";
    for (int n : sizes(o))
      for (std::size_t k = 1; k < o.threads.size(); ++k) {
        s << "| " << n << " | " << o.threads[k] << " |";
        for (const auto& name : names) {
          const ScalingRow* base = find(report, n, o.threads.front(), name);
          const ScalingRow* r = find(report, n, o.threads[k], name);
          const bool comparable = base && r && r->t_reached > 0.0 && std::abs(base->t_reached - r->t_reached) < 1e-9;
          s << " " << (comparable ? fmt(base->cost() / r->cost()) : "-") << " |";
        }
        s << "\n";
      }
  }
  s << "\nLargest position deviation from the reference over the run [m], " << o.threads.front() << " thread"
    << (o.threads.front() > 1 ? "s" : "") << " (chains of up to " << o.compare.reference_max_bodies
    << " bodies; a failed run's up to its failure): what each cost above buys.\n\n| bodies |";
  for (const auto& n : names)
    if (n != "reference") s << " " << n << " |";
  s << "\n|---:|";
  for (const auto& n : names)
    if (n != "reference") s << "---:|";
  s << "\n";
  for (int n : sizes(o)) {
    if (n > o.compare.reference_max_bodies) break;
    s << "| " << n << " |";
    for (const auto& name : names) {
      if (name == "reference") continue;
      const ScalingRow* r = find(report, n, o.threads.front(), name);
      s << " " << (r ? fmt(r->position_deviation) : "-") << " |";
    }
    s << "\n";
  }
  s << "\nSettings (as `treedyn compare` chooses them for these chains):\n\n";
  for (const auto& name : names) s << settings_lines(o, name);
  std::string notes;
  for (std::size_t k = 0; k < report.rows.size(); ++k) {  // one line per run, thread counts merged
    const ScalingRow& r = report.rows[k];
    if (r.message.empty() || (k > 0 && report.rows[k - 1].bodies == r.bodies &&
                              report.rows[k - 1].formulation == r.formulation && report.rows[k - 1].message == r.message))
      continue;
    notes += "- " + r.formulation + ", " + std::to_string(r.bodies) + " bodies, " + r.status + ": " + r.message + "\n";
  }
  if (!notes.empty()) s << "\nNot run or failed:\n\n" << notes;
  return s.str();
}

}  // namespace treedyn
