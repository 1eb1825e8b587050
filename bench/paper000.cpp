// Paper 000's study (Sects. 4-5) under ALi3-DCA: the spatial double pendulum and the redundant
// four-bar against the reference formulation, the 128-link chain for four penalty factors, the
// time split of a step, and the scaling of 10 s runs of n-link chains with 1 and 2 threads.
//
//   build/bench/treedyn_paper000 [--output DIR] [--models DIR] [--max-bodies N] [--threads-max T]
//
// Writes, in DIR (default results/paper000):
//   <model>.csv    spatial_double_pendulum (10 s) and four_bar (30 s) every 0.05 s: body A's
//                  position under ali3 and the reference, the force at joint 1 under both,
//                  constraint errors at three levels and the total energy (paper 000, Figs. 4-7)
//   chain128.csv   every 0.05 s of the alpha = 1e9 runs: energies and constraint errors (Figs. 10-11)
//   summary.md     the tables of docs/results/ali3.md
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "treedyn/compare.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/simulation.hpp"
#include "study.hpp"

namespace {

using namespace treedyn;
using study::run;
using study::sci;

FormulationSettings ali3(double alpha, int newton_max, bool project_accelerations = true, int threads = 1) {
  FormulationSettings s;
  s.dt = 0.01;
  s.threading.threads = threads;
  s.threading.pin = true;
  s.threading.fallback = false;  // the threads' own speed-up is the figure
  s.ali3.alpha = alpha;
  s.ali3.newton_max = newton_max;
  s.ali3.project_accelerations = project_accelerations;
  return s;
}

/// Percentages of the staged time: newton / velocity projection / acceleration projection.
std::string time_split(const SimulationResult& r) {
  double staged = 0.0;
  for (const auto& [stage, seconds] : r.stage_seconds) staged += seconds;
  std::ostringstream out;
  out << std::fixed << std::setprecision(1);
  const char* sep = "";
  for (const char* stage : {"newton", "velocity projection", "acceleration projection"}) {
    const auto it = r.stage_seconds.find(stage);
    out << sep << (it == r.stage_seconds.end() || staged <= 0.0 ? 0.0 : 100.0 * it->second / staged);
    sep = " / ";
  }
  return out.str();
}

/// Paper 000, Sects. 4.2-4.3: one model against the reference.
void small_model(const std::string& models, const std::string& name, double t_end, int newton_max,
                 const std::string& output, std::ostream& md) {
  const Model model = read_model_file(models + "/" + name + ".json");
  FormulationSettings reference;
  reference.rtol = reference.atol = 1e-10;
  Recording a, r;
  const SimulationResult ra = run(model, "ali3", ali3(1e6, newton_max), t_end, 0.05, &a);
  run(model, "reference", reference, t_end, 0.05, &r);
  std::ofstream csv(output + "/" + name + ".csv");
  csv << "t,x_ali3,y_ali3,z_ali3,x_ref,y_ref,z_ref,fx_ali3,fy_ali3,fz_ali3,fx_ref,fy_ref,fz_ref,"
         "position_error,velocity_error,acceleration_error,total_energy\n"
      << std::setprecision(10);
  double dx = 0.0, dx2 = 0.0, df = 0.0, pos = 0.0, vel = 0.0, acc = 0.0, drift = 0.0;
  const std::size_t n = std::min(a.snapshots.size(), r.snapshots.size());
  for (std::size_t k = 0; k < n; ++k) {
    const Vec3 xa = a.snapshots[k].bodies[0].r, xr = r.snapshots[k].bodies[0].r;
    const Vec3 fa = a.snapshots[k].reactions[0].force, fr = r.snapshots[k].reactions[0].force;
    const MetricsSample& m = a.metrics[k];
    csv << a.snapshots[k].t << ',' << xa.x() << ',' << xa.y() << ',' << xa.z() << ',' << xr.x() << ',' << xr.y() << ','
        << xr.z() << ',' << fa.x() << ',' << fa.y() << ',' << fa.z() << ',' << fr.x() << ',' << fr.y() << ',' << fr.z()
        << ',' << m.max.position << ',' << m.max.velocity << ',' << m.max.acceleration << ',' << m.total << '\n';
    dx = std::max(dx, (xa - xr).norm());
    if (a.snapshots[k].t <= 2.0 + 1e-9) dx2 = std::max(dx2, (xa - xr).norm());
    df = std::max(df, (fa - fr).norm());
    pos = std::max(pos, m.max.position);
    vel = std::max(vel, m.max.velocity);
    acc = std::max(acc, m.max.acceleration);
    drift = std::max(drift, std::abs(m.energy_drift));
  }
  md << "| " << name << " | " << t_end << " | " << newton_max << " | " << ra.status << " | " << sci(dx2) << " | "
     << sci(dx) << " | " << sci(df) << " | " << sci(pos) << " | " << sci(vel) << " | " << sci(acc) << " | "
     << sci(drift) << " |\n";
}

/// Paper 000, Sect. 4.4: the 128-link chain for alpha = 1e6 ... 1e9, with both projections and
/// with the velocity projection only.
void chain128(const std::string& models, const std::string& output, std::ostream& md) {
  const Model model = read_model_file(models + "/chain128.json");
  std::ofstream csv(output + "/chain128.csv");
  csv << "projections,alpha,t,kinetic,potential,total,position_error,velocity_error,acceleration_error\n"
      << std::setprecision(10);
  md << "| projections | alpha | status | t reached [s] | min total energy [J] (at t [s]) | final total energy [J] | "
        "max position error [m] | time split newton / velocity / acceleration projection [%] |\n"
        "|---|---:|---|---:|---:|---:|---:|---:|\n";
  for (bool accelerations : {true, false})
    for (double alpha : {1e6, 1e7, 1e8, 1e9}) {
      Recording s;
      const SimulationResult r = run(model, "ali3", ali3(alpha, 3, accelerations), 10.0, 0.05, &s);
      const auto lowest = std::min_element(s.metrics.begin(), s.metrics.end(),
                                           [](const MetricsSample& a, const MetricsSample& b) { return a.total < b.total; });
      double pos = 0.0;
      for (const MetricsSample& m : s.metrics) {
        pos = std::max(pos, m.max.position);
        if (alpha == 1e9)
          csv << (accelerations ? "both" : "velocities") << ',' << alpha << ',' << m.t << ',' << m.kinetic << ','
              << m.potential << ',' << m.total << ',' << m.max.position << ',' << m.max.velocity << ','
              << m.max.acceleration << '\n';
      }
      md << "| " << (accelerations ? "both" : "velocities only") << " | " << sci(alpha) << " | " << r.status << " | "
         << r.t_reached << " | " << sci(lowest->total, 4) << " (" << lowest->t << ") | " << sci(s.metrics.back().total, 4)
         << " | " << sci(pos) << " | " << time_split(r) << " |\n";
    }
}

/// Paper 000, Sect. 5: 10 s of n-link chains, h = 0.01, 3 iterations, both projections, 1 ..
/// threads_max threads. The paper does not give its penalty for these runs; alpha is the one
/// `treedyn compare` picks, the smallest power of ten with alpha h^2/(4 M) >= 50 (1e9 for the
/// 128-link chain, as in Sect. 4.4; docs/results/compare.md, "The penalty alpha of ali3").
void scaling(int max_bodies, int threads_max, std::ostream& md) {
  md << "| bodies | alpha | threads | status | t reached [s] | wall [s] | real-time factor | us per step | speed-up | "
        "efficiency | time split newton / velocity / acceleration projection [%] |\n"
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (int n = 2; n <= max_bodies; n *= 2) {
    const Model model = make_chain(n, JointType::Spherical);
    const double alpha = suggested_settings(model, "ali3", CompareOptions{}).ali3.alpha;
    double serial = 0.0;
    for (int threads = 1; threads <= threads_max; ++threads) {
      const SimulationResult r = run(model, "ali3", ali3(alpha, 3, true, threads), 10.0, 0.5, nullptr);
      const double per_step = r.wall_seconds / static_cast<double>(std::max<long>(1, r.stats.steps));
      if (threads == 1) serial = per_step;
      md << "| " << n << " | " << sci(alpha) << " | " << threads << " | " << r.status << " | " << r.t_reached << " | " << sci(r.wall_seconds)
         << " | " << sci(r.t_reached / r.wall_seconds) << " | " << sci(1e6 * per_step) << " | " << sci(serial / per_step)
         << " | " << sci(serial / per_step / threads) << " | " << time_split(r) << " |\n";
      std::cerr << "scaling: n = " << n << ", threads = " << threads << ": " << r.wall_seconds << " s\n";
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string output = "results/paper000", models = TREEDYN_MODELS_DIR;
  int max_bodies = 1024, threads_max = 2;
  if (!treedyn::study::parse_options(argc, argv, "treedyn_paper000",
                            {{"--output", "DIR", output}, {"--models", "DIR", models}, {"--max-bodies", "N", max_bodies},
                             {"--threads-max", "T", threads_max}}))
    return 1;
  std::filesystem::create_directories(output);
  std::ofstream md(output + "/summary.md");
  md << "## Small models against the reference (alpha = 1e6, h = 0.01)\n\n"
     << "| model | t_end [s] | iterations | status | max abs(x_A - x_A,ref), first 2 s [m] | the same, whole run [m] | "
        "max abs(F_1 - F_1,ref) [N] | position error [m] | velocity error [m/s] | acceleration error [m/s2] | "
        "max abs(energy drift) [J] |\n|---|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|\n";
  small_model(models, "spatial_double_pendulum", 10.0, 3, output, md);
  small_model(models, "four_bar", 30.0, 4, output, md);
  md << "\n## chain128 (h = 0.01, 3 iterations, 10 s)\n\n";
  chain128(models, output, md);
  md << "\n## Scaling: n-link chains, 10 s, h = 0.01, 3 iterations, both projections\n\n";
  scaling(max_bodies, threads_max, md);
  std::cout << "wrote " << output << "/summary.md\n";
  return 0;
}
