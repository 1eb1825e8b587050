// Paper 004's study (Sect. 5): the planar double pendulum and four-bar under planar HDCA in single
// precision with explicit Euler at dt = 1e-4 for 1 s, against the same scheme in double
// precision and against the reference formulation at rtol = atol = 1e-11 (in the role of the
// paper's ADAMS runs).
//
//   build/bench/treedyn_paper004 [--output DIR] [--models DIR]
//
// Writes, in DIR (default results/paper004):
//   <model>.csv     every 5e-3 s: kinetic energy of the float run T, T - T_double, T - T_reference,
//                   the loop's position error (the four-bar's vector loop length |r(q)|) in float
//                   and double, and the first joint's angle and rate (paper 004, Figs. 6-7, 10-13)
//   summary.md      the largest of each over the second, and the wall time of the float run
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "study.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/simulation.hpp"

namespace {

using namespace treedyn;

struct Series : SampleSink {
  std::vector<MetricsSample> metrics;
  std::vector<double> angle, rate;  // the first joint's coordinate and rate (planar: about z)
  const Model* model = nullptr;
  void write(const Snapshot& s, const MetricsSample& m, const SolverStats&) override {
    metrics.push_back(m);
    const Joint& j = model->joints.front();
    const CoordinateMeasure c = measure_coordinate(j, 0, state_of(s.bodies, j.parent), state_of(s.bodies, j.child));
    angle.push_back(c.value);
    rate.push_back(c.rate);
  }
};

SimulationResult run(const Model& model, const std::string& formulation, const FormulationSettings& settings, Series& out) {
  out.model = &model;
  RunOptions options;
  options.t_end = 1.0;
  options.dt = 5e-3;  // output interval (the fixed-step runs step at settings.dt)
  options.verify = false;  // timed; compared with the reference run
  Simulator simulator(share(model), formulation, settings);
  return run_simulation(simulator, options, &out);
}

}  // namespace

int main(int argc, char** argv) {
  std::string output = "results/paper004", models = TREEDYN_MODELS_DIR;
  if (!treedyn::study::parse_options(argc, argv, "treedyn_paper004", {{"--output", "DIR", output}, {"--models", "DIR", models}}))
    return 1;
  std::filesystem::create_directories(output);
  std::ofstream summary(output + "/summary.md");
  summary << "| model | max T [J] | max abs(T_float - T_double) [J] | max abs(T_float - T_reference) [J] | "
             "max abs(T_double - T_reference) [J] | loop error float [m] | loop error double [m] | float run wall [s] |\n"
          << "|---|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const char* name : {"planar_double_pendulum", "planar_four_bar"}) {
    const Model model = read_model_file(models + "/" + name + ".json");
    FormulationSettings single, dbl, reference;
    single.integrator = dbl.integrator = "euler";
    single.dt = dbl.dt = 1e-4;
    single.hdca.planar = dbl.hdca.planar = true;
    single.hdca.single_precision = true;
    single.hdca.inverse = dbl.hdca.inverse = InverseMethod::AdjugateLdup;
    reference.rtol = reference.atol = 1e-11;
    Series f, d, r;
    const SimulationResult rf = run(model, "hdca", single, f);
    const SimulationResult rd = run(model, "hdca", dbl, d);
    const SimulationResult rr = run(model, "reference", reference, r);
    if (!rf.ok() || !rd.ok() || !rr.ok()) {
      std::cerr << name << ": a run failed: " << rf.message << rd.message << rr.message << "\n";
      return 2;
    }
    std::ofstream csv(output + "/" + name + ".csv");
    csv << "t,kinetic_float,kinetic_float_minus_double,kinetic_float_minus_reference,loop_error_float,loop_error_double,"
           "angle_float,rate_float\n";
    double T_max = 0, dTd = 0, dTr = 0, dDr = 0, loop_f = 0, loop_d = 0;
    for (std::size_t k = 0; k < f.metrics.size(); ++k) {
      const double T = f.metrics[k].kinetic, Td = d.metrics[k].kinetic, Tr = r.metrics[k].kinetic;
      csv << f.metrics[k].t << "," << T << "," << T - Td << "," << T - Tr << "," << f.metrics[k].max.position << ","
          << d.metrics[k].max.position << "," << f.angle[k] << "," << f.rate[k] << "\n";
      T_max = std::max(T_max, T);
      dTd = std::max(dTd, std::abs(T - Td));
      dTr = std::max(dTr, std::abs(T - Tr));
      dDr = std::max(dDr, std::abs(Td - Tr));
      loop_f = std::max(loop_f, f.metrics[k].max.position);
      loop_d = std::max(loop_d, d.metrics[k].max.position);
    }
    summary << "| " << name << " | " << T_max << " | " << dTd << " | " << dTr << " | " << dDr << " | " << loop_f << " | "
            << loop_d << " | " << rf.wall_seconds << " |\n";
  }
  std::cout << "wrote " << output << "/{summary.md, planar_double_pendulum.csv, planar_four_bar.csv}\n";
  return 0;
}
