// The time loop: failures end the run with status "failed", a message saying when and what, and
// the samples written so far kept; metrics are those of the common code.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "support.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/result_writer.hpp"

using namespace treedyn;

namespace {

/// A free body pushed by a force that becomes NaN after t = 0.5 s.
Model exploding_model() {
  ModelBuilder b("exploding");
  Body body;
  body.name = "box";
  body.mass = 1;
  body.inertia = Mat3::Identity();
  b.body(body);
  b.joint(JointSpec::at("float", JointType::Free, "ground", "box", {0, 0, 0}));
  b.body_force({"push", "box", Vec3(1, 0, 0),
                TimeFunction::callback([](double t) { return t < 0.5 ? 1.0 : std::nan(""); }), LoadFrame::Global, std::nullopt});
  return b.build();
}

std::size_t lines_in(const std::string& path) {
  std::ifstream in(path);
  std::size_t n = 0;
  for (std::string line; std::getline(in, line);) ++n;
  return n;
}

}  // namespace

TEST(Simulation, DivergenceEndsTheRunWithAMessageAndKeepsTheResults) {
  const Model m = exploding_model();
  const std::string dir = ::testing::TempDir() + "/treedyn_exploding";
  std::filesystem::remove_all(dir);
  for (const char* integrator : {"rk4", "dopri5"}) {
    FormulationSettings s;
    s.integrator = integrator;
    s.dt = 0.01;
    Simulator sim(share(m), "reference", s);
    ResultWriter writer(m, dir);
    RunOptions run;
    run.t_end = 1.0;
    run.dt = 0.01;
    const SimulationResult r = run_simulation(sim, run, &writer);
    writer.finish(r);
    EXPECT_EQ(r.status, "failed") << integrator;
    EXPECT_NE(r.message.find("t = "), std::string::npos) << r.message;
    EXPECT_GE(r.failure_time, 0.5);
    EXPECT_LT(r.failure_time, 0.6);
    // Everything sampled before the failure is on disk (dopri5 steps far past the samples on
    // this smooth problem before it meets the NaN, so it has written fewer).
    EXPECT_EQ(lines_in(dir + "/trajectory.csv"), static_cast<std::size_t>(r.samples) + 1);
    if (std::string(integrator) == "rk4") {
      EXPECT_EQ(r.samples, 50);
    }
    std::ifstream summary(dir + "/summary.json");
    const std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("\"status\": \"failed\""), std::string::npos);
  }
}

// A run that ends where it starts is the initial sample alone, under every formulation (the
// adaptive integrators refuse to advance by nothing, so no step may be asked of them).
TEST(Simulation, AnEndTimeAtTheStartGivesTheInitialSampleAlone) {
  const Model m = read_model_file(test::model_path("four_bar"));
  for (const FormulationInfo& info : formulation_catalog()) {
    Simulator sim(share(m), info.name);
    RunOptions run;
    run.t_end = 0.0;
    const SimulationResult r = run_simulation(sim, run);
    EXPECT_TRUE(r.ok()) << info.name << ": " << r.message;
    EXPECT_EQ(r.samples, 1) << info.name;
    EXPECT_EQ(r.t_reached, 0.0) << info.name;
    EXPECT_EQ(r.stats.steps, 0) << info.name;
  }
}

TEST(Simulation, SummaryAndCsvHoldTheDocumentedFields) {
  const Model m = read_model_file(test::model_path("four_bar"));
  const std::string dir = ::testing::TempDir() + "/treedyn_fields";
  Simulator sim(share(m), "reference");
  ResultWriter writer(m, dir);
  RunOptions run;
  run.t_end = 0.1;
  run.dt = 0.01;
  const SimulationResult r = run_simulation(sim, run, &writer);
  writer.finish(r);
  std::ifstream summary(dir + "/summary.json");
  const std::string text((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  for (const char* key : {"formulation", "integrator", "dt", "t_end", "steps", "wall_seconds", "rhs_evaluations",
                          "newton_iterations", "energy_initial", "energy_final", "energy_drift_max", "constraint_error_max",
                          "status", "message"})
    EXPECT_NE(text.find("\"" + std::string(key) + "\""), std::string::npos) << key;
  std::ifstream metrics(dir + "/metrics.csv");
  std::string header;
  std::getline(metrics, header);
  // Every column names its SI unit.
  for (const char* column : {"t [s],kinetic [J],potential [J],total [J]",
                             "position_error [m|rad],velocity_error [m/s|rad/s],acceleration_error [m/s^2|rad/s^2]",
                             "joint4.acceleration_error [m/s^2|rad/s^2]", "joint1.fx [N]", "joint1.tz [N m]"})
    EXPECT_NE(header.find(column), std::string::npos) << column;
  EXPECT_EQ(lines_in(dir + "/metrics.csv"), 12u);
}

TEST(Metrics, KineticEnergyOfARotatingBody) {
  const Model m = exploding_model();
  SystemState s = initial_state(m);
  s[0].v = Vec3(1, 2, 0);
  s[0].w = Vec3(0, 0, 3);
  EXPECT_DOUBLE_EQ(kinetic_energy(m, s), 0.5 * 5 + 0.5 * 9);
}

TEST(Metrics, ConstraintErrorsAreZeroOnTheManifoldAndGrowOffIt) {
  const Model m = read_model_file(test::model_path("spatial_double_pendulum"));
  Metrics metrics(m);
  SystemState s = initial_state(m);
  for (const auto& e : metrics.constraint_errors(0.0, s)) EXPECT_EQ(e.position, 0.0);
  s[1].r += Vec3(0, 0.001, 0);
  EXPECT_NEAR(metrics.constraint_errors(0.0, s)[1].position, 0.001, 1e-15);
  s[1].a = Vec3(0, 1, 0);  // B accelerating away from A
  EXPECT_NEAR(metrics.constraint_errors(0.0, s)[1].acceleration, 1.0, 1e-15);
}
