// One model under every formulation: each row is checked against independent figures (the
// reference run separately, the methods' orders of accuracy, constraints and energy).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "support.hpp"
#include "treedyn/compare.hpp"
#include "treedyn/model_json.hpp"

namespace {

using namespace treedyn;

const CompareRow& row(const CompareReport& report, const std::string& name) {
  for (const CompareRow& r : report.rows)
    if (r.formulation == name) return r;
  throw std::runtime_error("no row " + name);
}

Model pendulum() { return read_model_file(test::model_path("spatial_double_pendulum")); }

CompareOptions over(double t_end) {
  CompareOptions o;
  o.t_end = t_end;
  return o;
}

}  // namespace

// Paper 000's spatial double pendulum (conservative, no loops) under all six formulations, 1 s.
// Bounds: dca and hdca run dopri5 at rtol = atol = 1e-6, so 1e-4 m over 1 s leaves a factor 100
// for the global error (measured 2e-6 to 6e-6 m); the fixed-step methods run at the model file's
// step h = 0.01 (ali3 second order, half- and fully-implicit first order) and measured 4.2e-4,
// 1.7e-2 and 3.9e-2 m: bounded here by 2e-3, 3e-2 and 6e-2 m, which only catch gross breakage —
// their order, the independent check, is the next test. Position-level constraints: every method is index 3 or integrates joint
// coordinates, so 1e-6 m bounds them all (measured <= 5e-9). The fixed-step runs are checked by
// their refined companions (RunOptions::verify): fully-implicit's 3.9e-2 m is beyond the accuracy
// check's 1e-2 of the 1.73 m length, so compare, given no step, runs it again at the step its
// estimate advises (2.0e-3 s: 8.0e-3 m, ok); each fixed-step run's estimate is its deviation from
// the reference within a factor 2 (measured 0.97-1.0: Richardson-scaled).
TEST(Compare, DoublePendulumRunsUnderEveryFormulationWithinItsAccuracy) {
  const CompareReport report = compare_formulations(share(pendulum()), over(1.0));
  ASSERT_EQ(report.rows.size(), formulation_catalog().size());
  for (const CompareRow& r : report.rows) {
    // every run ok: backward Euler at the papers' step (3.8e-2 m estimated, against 1.7e-2 m) is
    // run again at the step its estimate advises, compare being given no step (choose_step)
    EXPECT_EQ(r.status, "ok") << r.formulation << ": " << r.message;
    EXPECT_EQ(r.result.step_tries.size(), r.formulation == "fully-implicit" ? 1u : 0u) << r.formulation;
    const ErrorEstimate& e = r.result.error_estimate;
    if (r.formulation == "ali3" || r.formulation == "half-implicit" || r.formulation == "fully-implicit") {
      ASSERT_TRUE(e.made()) << r.formulation;
      std::printf("%s: estimate %.3g m, deviation from the reference %.3g m\n", r.formulation.c_str(), e.position,
                  r.position_deviation);
      EXPECT_GT(e.position, 0.5 * r.position_deviation) << r.formulation;
      EXPECT_LT(e.position, 2.0 * r.position_deviation) << r.formulation;
    }
    EXPECT_DOUBLE_EQ(r.result.t_reached, 1.0) << r.formulation;
    EXPECT_LT(r.result.constraint_error_max.position, 1e-6) << r.formulation;
    if (r.formulation != "reference") {
      EXPECT_DOUBLE_EQ(r.deviation_until, 1.0) << r.formulation;
    }
  }
  EXPECT_TRUE(std::isnan(row(report, "reference").position_deviation));
  EXPECT_LT(row(report, "dca").position_deviation, 1e-4);
  EXPECT_LT(row(report, "hdca").position_deviation, 1e-4);
  EXPECT_LT(row(report, "ali3").position_deviation, 2e-3);
  EXPECT_LT(row(report, "half-implicit").position_deviation, 3e-2);
  EXPECT_LT(row(report, "fully-implicit").position_deviation, 6e-2);
  // Energy: the trapezoidal rule and symplectic Euler keep it (bounded drift), backward Euler
  // drains it; the adaptive methods keep it to their tolerance.
  EXPECT_LT(row(report, "dca").result.energy_drift_max, 1e-3);
  EXPECT_LT(row(report, "hdca").result.energy_drift_max, 1e-3);
  EXPECT_GT(row(report, "fully-implicit").result.energy_drift_max, row(report, "half-implicit").result.energy_drift_max);
}

// The deviation from the reference is the methods' global error: halving the step divides it by
// 2^p, p = 2 for ali3's trapezoidal rule and 1 for the Euler methods of paper 002. Measured
// ratios 3.8-4.1 and 1.96-2.0 from h = 0.01 to 1.25e-3; the bands allow +-15 % / +-10 %.
TEST(Compare, DeviationsShrinkAtEachMethodsOrder) {
  auto deviations = [](double h) {
    CompareOptions o = over(1.0);
    o.formulations = {"ali3", "half-implicit", "fully-implicit"};
    o.dt = h;
    o.sample_interval = 0.01;  // the same sample times for both steps
    return compare_formulations(share(pendulum()), o);
  };
  const CompareReport coarse = deviations(0.005), fine = deviations(0.0025);
  const double ali3 = row(coarse, "ali3").position_deviation / row(fine, "ali3").position_deviation;
  EXPECT_NEAR(ali3, 4.0, 0.6);
  for (const char* euler : {"half-implicit", "fully-implicit"})
    EXPECT_NEAR(row(coarse, euler).position_deviation / row(fine, euler).position_deviation, 2.0, 0.2) << euler;
}

// The deviation is taken at equal times: recomputed here from two plain runs, sample by sample.
TEST(Compare, DeviationIsTheLargestBodyDistanceAtCommonTimes) {
  const Model model = pendulum();
  CompareOptions o = over(0.5);
  o.formulations = {"dca"};
  const CompareReport report = compare_formulations(share(model), o);
  RunOptions run{0.5, 0.01, 1, {}, {}};
  Recording ref, dca;
  Simulator reference(share(model), "reference", suggested_settings(model, "reference", o));
  Simulator dca_run(share(model), "dca", suggested_settings(model, "dca", o));
  run_simulation(reference, run, &ref);
  run_simulation(dca_run, run, &dca);
  ASSERT_EQ(ref.snapshots.size(), dca.snapshots.size());
  double expected = 0.0;
  for (std::size_t k = 0; k < ref.snapshots.size(); ++k) {
    ASSERT_DOUBLE_EQ(ref.snapshots[k].t, dca.snapshots[k].t);
    for (std::size_t i = 0; i < ref.snapshots[k].bodies.size(); ++i)
      expected = std::max(expected, (ref.snapshots[k].bodies[i].r - dca.snapshots[k].bodies[i].r).norm());
  }
  EXPECT_GT(expected, 0.0);
  EXPECT_DOUBLE_EQ(row(report, "dca").position_deviation, expected);
  // The history holds the same distance at every sample time, and its CSV one line per time.
  const auto& history = row(report, "dca").deviation_history;
  ASSERT_EQ(history.size(), ref.snapshots.size());
  EXPECT_DOUBLE_EQ(history[10].first, ref.snapshots[10].t);
  EXPECT_DOUBLE_EQ(history[10].second, std::max((ref.snapshots[10].bodies[0].r - dca.snapshots[10].bodies[0].r).norm(),
                                                (ref.snapshots[10].bodies[1].r - dca.snapshots[10].bodies[1].r).norm()));
  const std::string csv = compare_deviation_csv(report);
  EXPECT_EQ(csv.rfind("t,dca\n0,0\n", 0), 0u) << csv.substr(0, 40);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + static_cast<long>(history.size()));
}

// A formulation that cannot take the model, and one that diverges, get their rows; the others run.
TEST(Compare, RefusalsAndFailuresAreReportedWhileTheOthersRun) {
  const Model crank = read_model_file(test::model_path("slider_crank"));  // a driver: dca and hdca refuse it
  CompareOptions o = over(0.5);
  o.alpha = 10.0;  // far too weak a penalty for ali3 at h = 0.01 (paper 000 uses 1e6)
  const CompareReport report = compare_formulations(share(crank), o);
  for (const char* refused : {"dca", "hdca"}) {
    EXPECT_EQ(row(report, refused).status, "unsupported");
    EXPECT_NE(row(report, refused).message.find("drivers"), std::string::npos) << row(report, refused).message;
  }
  const CompareRow& ali3 = row(report, "ali3");
  EXPECT_EQ(ali3.status, "failed");
  EXPECT_NE(ali3.message.find("Newton-Raphson diverged"), std::string::npos) << ali3.message;
  EXPECT_LT(ali3.result.failure_time, 0.5);
  for (const char* ok : {"reference", "half-implicit", "fully-implicit"}) EXPECT_EQ(row(report, ok).status, "ok") << ok;
  const std::string md = compare_markdown(report);
  EXPECT_NE(md.find("| ali3 | failed at"), std::string::npos) << md;
  EXPECT_NE(md.find("dca (unsupported): dca: drivers"), std::string::npos) << md;
}

TEST(Compare, NoReferenceRunBeyondTheBodyLimit) {
  CompareOptions o = over(0.2);
  o.formulations = {"reference", "hdca"};
  o.reference_max_bodies = 1;
  const CompareReport report = compare_formulations(share(pendulum()), o);
  EXPECT_EQ(row(report, "reference").status, "skipped");
  EXPECT_EQ(row(report, "hdca").status, "ok");
  EXPECT_TRUE(std::isnan(row(report, "hdca").position_deviation));
  EXPECT_NE(report.reference_note.find("2 bodies > 1"), std::string::npos) << report.reference_note;
}

TEST(Compare, BadRequestsAreRefusedBeforeAnyRun) {
  CompareOptions o = over(0.1);
  o.formulations = {"dca", "featherstone"};
  try {
    compare_formulations(share(pendulum()), o);
    FAIL() << "no error";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown formulation 'featherstone'"), std::string::npos) << e.what();
  }
  o.formulations.clear();
  o.dt = -0.01;
  EXPECT_THROW(compare_formulations(share(pendulum()), o), std::invalid_argument);
}

TEST(Compare, WritesCsvAndEachRunsResults) {
  const std::string dir = ::testing::TempDir() + "/treedyn_compare";
  std::filesystem::remove_all(dir);
  CompareOptions o = over(0.2);
  o.formulations = {"hdca", "half-implicit"};
  const CompareReport report = compare_formulations(share(pendulum()), o, dir);
  for (const char* f : {"reference", "hdca", "half-implicit"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f + "/summary.json")) << f;
  const std::string csv = compare_csv(report);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_EQ(csv.rfind("formulation,status,settings,", 0), 0u);
  EXPECT_NE(csv.find("hdca,ok,\"dopri5, rtol = atol = 1e-06\","), std::string::npos) << csv;
}

// ---------------------------------------------------------------------------------------------

TEST(Scaling, RunsEveryFormulationOnEachChainAndThreadCount) {
  ScalingOptions o;
  o.min_bodies = 2;
  o.max_bodies = 4;
  o.threads = {1, 2};
  o.t_end = 0.1;
  o.compare.reference_max_bodies = 2;
  const ScalingReport report = scaling_study(o);
  ASSERT_EQ(report.rows.size(), 2u * formulation_catalog().size() * 2u);
  for (const ScalingRow& r : report.rows) {
    if (r.formulation == "reference" && r.bodies == 4) {
      EXPECT_EQ(r.status, "skipped");
      continue;
    }
    EXPECT_EQ(r.status, "ok") << r.formulation << " " << r.bodies << ": " << r.message;
    EXPECT_DOUBLE_EQ(r.t_reached, 0.1);
    EXPECT_GT(r.cost(), 0.0);
    // Measured against the reference on the 2-link chain only (the limit); 0.1 s of a chain
    // released from rest: every method within 1 cm (first-order ones at h = 0.01 the furthest).
    if (r.formulation == "reference" || r.bodies > 2) {
      EXPECT_TRUE(std::isnan(r.position_deviation)) << r.formulation << " " << r.bodies;
    } else {
      EXPECT_LT(r.position_deviation, 1e-2) << r.formulation;
    }
  }
  const std::string csv = scaling_csv(report);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 1 + static_cast<long>(report.rows.size()));
  const std::string md = scaling_markdown(report);
  EXPECT_NE(md.find("Speed-up over 1 thread"), std::string::npos) << md;
  EXPECT_NE(md.find("| 4 | 2 | - |"), std::string::npos) << md;  // the skipped reference
}

TEST(Scaling, RunsPredictedBeyondTheBudgetAreSkipped) {
  ScalingOptions o;
  o.min_bodies = 2;
  o.max_bodies = 8;
  o.t_end = 0.05;
  o.budget_seconds = 1e-9;
  o.compare.formulations = {"dca"};
  const ScalingReport report = scaling_study(o);
  ASSERT_EQ(report.rows.size(), 3u);
  EXPECT_EQ(report.rows[0].status, "ok");  // nothing to predict from
  for (int k : {1, 2}) {
    EXPECT_EQ(report.rows[static_cast<std::size_t>(k)].status, "skipped");
    EXPECT_NE(report.rows[static_cast<std::size_t>(k)].message.find("budget"), std::string::npos);
  }
}

// ali3's penalty scales with the total mass over h^2 (docs/results/compare.md, "The penalty"):
// on paper 002's driven mechanisms at h = 1e-3 the rule picks 1e9 (slider-crank, 2.6 kg) and 1e12
// (four-link, 2.8 t), where paper 000's 1e6 diverges within 0.1 s. With it ali3 follows the
// reference: both mechanisms have 0 degrees of freedom, so positions are the constraints' solution
// (measured 2e-12 and 5e-9 m over 8 s; bounded by 1e-6 m over 1 s).
TEST(Compare, Ali3PenaltyFollowsMassAndStepOnDrivenMechanisms) {
  for (const auto& [name, alpha] : {std::pair<std::string, double>{"slider_crank", 1e9}, {"four_link", 1e12}}) {
    const Model model = read_model_file(test::model_path(name));
    CompareOptions o = over(1.0);
    o.formulations = {"ali3"};
    EXPECT_DOUBLE_EQ(suggested_settings(model, "ali3", o).ali3.alpha, alpha) << name;
    const CompareReport report = compare_formulations(share(model), o);
    EXPECT_EQ(row(report, "ali3").status, "ok") << name << ": " << row(report, "ali3").message;
    EXPECT_LT(row(report, "ali3").position_deviation, 1e-6) << name;
  }
}
