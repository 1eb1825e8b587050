// Paper 002's study (Sect. 3) under treedyn's half-implicit and fully-implicit integrators:
// convergence order (Fig. 2), energy of the double pendulum (Fig. 3), CPU time and Newton
// iterations (Figs. 4-6), the slider-crank's driving torque with friction (Fig. 9) and the scaling
// of N-link spinning-bar chains (Fig. 8).
//
//   build/bench/treedyn_paper002 [--output DIR] [--models DIR] [--max-bodies N] [--repeats R]
//
// Writes, in DIR (default results/paper002):
//   convergence.csv  model, scheme, h, status, RMS error (positions for the double pendulum against
//                    the reference formulation; velocities for the driven mechanisms against their
//                    kinematic solution), on a 0.01 s grid over 8 s
//   energy.csv       the double pendulum's total energy every 0.01 s, h = 1e-3, both schemes
//   friction.csv     the crank's driving torque every 1e-3 s for mu = 0, 0.2, 0.4
//   timing.csv, scaling.csv, summary.md
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "study.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/projection.hpp"

namespace {

using namespace treedyn;
using study::run;
using study::sci;

const char* const kSchemes[] = {"half-implicit", "fully-implicit"};
const double kGrid = 0.01;  // sampling interval of every error measure

FormulationSettings implicit(double h, ImplicitOptions::LinearSolver solver = ImplicitOptions::LinearSolver::Tree) {
  FormulationSettings s;
  s.dt = h;
  s.implicit.linear_solver = solver;
  return s;
}

/// The quantity whose error Fig. 2 plots, per sample: bar 2's z position (double pendulum), the
/// slider's x velocity (slider-crank), link 2's velocity (four-link).
std::vector<double> observed(const std::string& name, const Model& m, const std::vector<SystemState>& states) {
  std::vector<double> out;
  for (const SystemState& s : states) {
    if (name == "hi_double_pendulum") out.push_back(s[static_cast<std::size_t>(m.body_index("bar2"))].r.z());
    else if (name == "slider_crank") out.push_back(s[static_cast<std::size_t>(m.body_index("slider"))].v.x());
    else out.push_back(s[static_cast<std::size_t>(m.body_index("link2"))].v.norm());
  }
  return out;
}

/// The exact answer on the grid: the reference formulation at rtol = atol = 1e-12 for the free
/// double pendulum; the kinematic solution (Phi = 0 and J V = -Phi_t by projection to 1e-13) for
/// the driven mechanisms, which have no degree of freedom left.
std::vector<SystemState> exact_states(const std::string& name, const Model& m, double t_end) {
  std::vector<SystemState> states;
  if (name == "hi_double_pendulum") {
    FormulationSettings ref;
    ref.rtol = ref.atol = 1e-12;
    Recording rec;
    run(m, "reference", ref, t_end, kGrid, &rec);
    for (const Snapshot& s : rec.snapshots) states.push_back(s.bodies);
    return states;
  }
  ConstraintProjector projector(m);
  SystemState s = initial_state(m);
  const long n = std::lround(t_end / kGrid);
  for (long k = 0; k <= n; ++k) {
    const double t = static_cast<double>(k) * kGrid;
    projector.project(t, s, 1e-13, 50);
    states.push_back(s);
  }
  return states;
}

double rms_difference(const std::vector<double>& a, const std::vector<double>& b) {
  double sum = 0.0;
  const std::size_t n = std::min(a.size(), b.size());
  for (std::size_t k = 0; k < n; ++k) sum += (a[k] - b[k]) * (a[k] - b[k]);
  return std::sqrt(sum / static_cast<double>(n));
}

/// Least-squares slope of log(error) against log(h).
double slope(const std::vector<double>& h, const std::vector<double>& e) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  const double n = static_cast<double>(h.size());
  for (std::size_t k = 0; k < h.size(); ++k) {
    const double x = std::log(h[k]), y = std::log(e[k]);
    sx += x, sy += y, sxx += x * x, sxy += x * y;
  }
  return (n * sxy - sx * sy) / (n * sxx - sx * sx);
}

/// The slope over the runs with h <= h_max, or "-" with fewer than two.
std::string fitted(const std::vector<double>& h, const std::vector<double>& e, double h_max) {
  std::vector<double> hs, es;
  for (std::size_t k = 0; k < h.size(); ++k)
    if (h[k] <= h_max * (1.0 + 1e-9)) hs.push_back(h[k]), es.push_back(e[k]);
  return hs.size() > 1 ? sci(slope(hs, es), 3) : "-";
}

/// Fig. 2: convergence over h = 1e-2 ... 1e-4, 8 s.
void convergence(const std::string& models, const std::string& output, std::ostream& md) {
  const std::vector<double> steps = {1e-2, 5e-3, 2e-3, 1e-3, 5e-4, 2e-4, 1e-4};
  std::ofstream csv(output + "/convergence.csv");
  csv << "model,scheme,h,status,rms_error\n";
  md << "| model | measured quantity | scheme | RMS error at h = 1e-2 / 1e-3 / 1e-4 | fitted slope, all h / h <= 1e-3 | "
        "failed runs |\n|---|---|---|---|---|---|\n";
  for (const char* name : {"hi_double_pendulum", "slider_crank", "four_link"}) {
    const Model m = read_model_file(models + "/" + name + ".json");
    const std::vector<double> exact = observed(name, m, exact_states(name, m, 8.0));
    for (const char* scheme : kSchemes) {
      std::vector<double> ok_h, ok_e;
      std::string at[3] = {"-", "-", "-"}, failed;
      for (double h : steps) {
        Recording rec;
        const SimulationResult r = run(m, scheme, implicit(h), 8.0, kGrid, &rec);
        std::vector<SystemState> states;
        for (const Snapshot& s : rec.snapshots) states.push_back(s.bodies);
        const double e = rms_difference(observed(name, m, states), exact);
        csv << name << "," << scheme << "," << h << "," << r.status << "," << e << "\n";
        if (!r.ok()) {
          failed += (failed.empty() ? "" : ", ") + sci(h) + " (t = " + sci(r.failure_time) + ")";
          continue;
        }
        ok_h.push_back(h);
        ok_e.push_back(e);
        if (h == 1e-2) at[0] = sci(e);
        if (h == 1e-3) at[1] = sci(e);
        if (h == 1e-4) at[2] = sci(e);
      }
      md << "| " << name << " | "
         << (std::string(name) == "hi_double_pendulum" ? "bar 2 z [m]"
             : std::string(name) == "slider_crank"     ? "slider x velocity [m/s]"
                                                       : "link 2 speed [m/s]")
         << " | " << scheme << " | " << at[0] << " / " << at[1] << " / " << at[2] << " | "
         << fitted(ok_h, ok_e, 1.0) << " / " << fitted(ok_h, ok_e, 1e-3) << " | " << (failed.empty() ? "none" : failed) << " |\n";
    }
  }
}

/// Fig. 3: the double pendulum's energy over 8 s at h = 1e-3.
void energy(const std::string& models, const std::string& output, std::ostream& md) {
  const Model m = read_model_file(models + "/hi_double_pendulum.json");
  Recording half, fully;
  run(m, "half-implicit", implicit(1e-3), 8.0, kGrid, &half);
  run(m, "fully-implicit", implicit(1e-3), 8.0, kGrid, &fully);
  std::ofstream csv(output + "/energy.csv");
  csv << "t,half_implicit,fully_implicit\n";
  double worst_half = 0.0;
  for (std::size_t k = 0; k < std::min(half.metrics.size(), fully.metrics.size()); ++k) {
    csv << half.metrics[k].t << "," << half.metrics[k].total << "," << fully.metrics[k].total << "\n";
    worst_half = std::max(worst_half, std::abs(half.metrics[k].energy_drift));
  }
  md << "Initial energy " << sci(half.metrics.front().total, 6) << " J. half-implicit: largest |drift| "
     << sci(worst_half) << " J, final drift " << sci(half.metrics.back().energy_drift) << " J; fully-implicit: final drift "
     << sci(fully.metrics.back().energy_drift) << " J.\n";
}

/// Figs. 4-6: CPU time of 8 s and mean Newton iterations per step, both schemes, tree and sparse.
void timing(const std::string& models, int repeats, const std::string& output, std::ostream& md) {
  std::ofstream csv(output + "/timing.csv");
  csv << "model,scheme,solver,h,status,seconds,newton_per_step\n";
  md << "| model | h | half-implicit: s (tree / sparse), iterations per step | fully-implicit: s (tree / sparse), "
        "iterations per step | fully / half (tree) |\n|---|---:|---|---|---:|\n";
  for (const char* name : {"hi_double_pendulum", "slider_crank", "four_link"}) {
    const Model m = read_model_file(models + "/" + name + ".json");
    for (double h : {1e-2, 1e-3, 1e-4}) {
      md << "| " << name << " | " << h;
      double tree_seconds[2] = {0, 0};
      for (int s = 0; s < 2; ++s) {
        std::string cell;
        double iterations = 0.0;
        for (auto solver : {ImplicitOptions::LinearSolver::Tree, ImplicitOptions::LinearSolver::Sparse}) {
          double seconds = 0.0;
          SimulationResult r;
          for (int k = 0; k < repeats; ++k) {
            r = run(m, kSchemes[s], implicit(h, solver), 8.0, 8.0);
            seconds += r.wall_seconds / repeats;
          }
          const bool tree = solver == ImplicitOptions::LinearSolver::Tree;
          iterations = static_cast<double>(r.stats.newton_iterations) / static_cast<double>(std::max(1L, r.stats.steps));
          csv << name << "," << kSchemes[s] << "," << (tree ? "tree" : "sparse") << "," << h << "," << r.status << ","
              << seconds << "," << iterations << "\n";
          cell += (cell.empty() ? "" : " / ") + (r.ok() ? sci(seconds) : "failed at " + sci(r.failure_time) + " s");
          if (tree) tree_seconds[s] = r.ok() ? seconds : NAN;
        }
        md << " | " << cell << ", " << sci(iterations) ;
      }
      md << " | " << sci(tree_seconds[1] / tree_seconds[0]) << " |\n";
    }
  }
}

/// Fig. 9: the torque the driver applies to the crank, mu = 0, 0.2, 0.4, h = 1e-3, 2 s.
void friction(const std::string& models, const std::string& output, std::ostream& md) {
  const double mus[] = {0.0, 0.2, 0.4};
  std::vector<Recording> runs(3);
  for (int k = 0; k < 3; ++k) {
    Model m = read_model_file(models + "/slider_crank.json");
    m.frictions.push_back({"slide_friction", m.joint_index("slide"), mus[k]});
    run(m, "half-implicit", implicit(1e-3), 2.0, 1e-3, &runs[static_cast<std::size_t>(k)]);
  }
  std::ofstream csv(output + "/friction.csv");
  csv << "t,torque_mu0,torque_mu0.2,torque_mu0.4\n";
  for (std::size_t i = 0; i < runs[0].snapshots.size(); ++i) {
    csv << runs[0].snapshots[i].t;
    for (const Recording& r : runs) csv << "," << (i < r.snapshots.size() ? r.snapshots[i].driver_efforts[0] : NAN);
    csv << "\n";
  }
  md << "| mu | min torque [N m] | max torque [N m] | dissipated by friction over 2 s [J] |\n|---:|---:|---:|---:|\n";
  for (int k = 0; k < 3; ++k) {
    const Recording& r = runs[static_cast<std::size_t>(k)];
    double lo = INFINITY, hi = -INFINITY, work = 0.0;
    for (const Snapshot& s : r.snapshots) {
      lo = std::min(lo, s.driver_efforts[0]);
      hi = std::max(hi, s.driver_efforts[0]);
      work -= s.extra_power * 1e-3;
    }
    md << "| " << mus[k] << " | " << sci(lo) << " | " << sci(hi) << " | " << sci(work) << " |\n";
  }
}

/// Fig. 8: wall time per simulated second of N spinning bars, h = 1e-3, Newton tolerances of the
/// paper's scaling runs (1e-7 half-implicit, 1e-5 fully-implicit).
void scaling(int max_bodies, const std::string& output, std::ostream& md) {
  std::ofstream csv(output + "/scaling.csv");
  csv << "bodies,scheme,solver,t_end,status,seconds_per_simulated_second,newton_per_step\n";
  md << "| N | simulated [s] | half-implicit tree | fully-implicit tree | half-implicit sparse | "
        "fully-implicit sparse | fully / half (tree) |\n|---:|---:|---:|---:|---:|---:|---:|\n";
  for (int n = 1; n <= max_bodies; n *= 2) {
    const Model m = make_spinning_bar_chain(n, 1);
    const double t_end = n <= 32 ? 3.0 : (n <= 256 ? 0.5 : 0.2);
    double per_second[2][2] = {{NAN, NAN}, {NAN, NAN}};
    for (int sv = 0; sv < 2; ++sv) {
      if (sv == 1 && n > 256) continue;  // the sparse LU's fill-in makes it the slow cross-check
      for (int s = 0; s < 2; ++s) {
        FormulationSettings settings =
            implicit(1e-3, sv == 0 ? ImplicitOptions::LinearSolver::Tree : ImplicitOptions::LinearSolver::Sparse);
        settings.implicit.newton_tol = s == 0 ? 1e-7 : 1e-5;
        const SimulationResult r = run(m, kSchemes[s], settings, t_end, t_end);
        const double iterations = static_cast<double>(r.stats.newton_iterations) / static_cast<double>(std::max(1L, r.stats.steps));
        if (r.ok()) per_second[sv][s] = r.wall_seconds / t_end;
        csv << n << "," << kSchemes[s] << "," << (sv == 0 ? "tree" : "sparse") << "," << t_end << "," << r.status << ","
            << per_second[sv][s] << "," << iterations << "\n";
      }
    }
    auto cell = [](double x) { return std::isnan(x) ? std::string("-") : sci(x); };
    md << "| " << n << " | " << t_end << " | " << cell(per_second[0][0]) << " | " << cell(per_second[0][1]) << " | "
       << cell(per_second[1][0]) << " | " << cell(per_second[1][1]) << " | " << cell(per_second[0][1] / per_second[0][0])
       << " |\n";
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string output = "results/paper002", models = TREEDYN_MODELS_DIR;
  int max_bodies = 1024, repeats = 3;
  if (!treedyn::study::parse_options(argc, argv, "treedyn_paper002",
                            {{"--output", "DIR", output}, {"--models", "DIR", models}, {"--max-bodies", "N", max_bodies},
                             {"--repeats", "R", repeats}}))
    return 1;
  std::filesystem::create_directories(output);
  std::ofstream md(output + "/summary.md");
  md << "## Convergence (Fig. 2): 8 s, default Newton tolerances (1e-10; 1e-10/h^2)\n\n";
  convergence(models, output, md);
  md << "\n## Energy of the double pendulum (Fig. 3): h = 1e-3, 8 s\n\n";
  energy(models, output, md);
  md << "\n## CPU time of 8 s and Newton iterations per step (Figs. 4-6), mean of " << repeats << " runs\n\n";
  timing(models, repeats, output, md);
  md << "\n## Slider-crank with Coulomb friction at the slider (Fig. 9): half-implicit, h = 1e-3, 2 s\n\n";
  friction(models, output, md);
  md << "\n## Scaling (Fig. 8): N spinning bars, h = 1e-3, wall seconds per simulated second\n\n";
  scaling(max_bodies, output, md);
  std::cout << "wrote " << output << "/summary.md\n";
  return 0;
}
