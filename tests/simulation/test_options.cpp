// Formulation settings by name (the option catalogue the Python package uses) and the run's stop
// hook: what does not apply is refused with the option's name, never ignored.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <set>

#include "support.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/options.hpp"
#include "treedyn/simulation.hpp"

using namespace treedyn;

namespace {

/// The message of the std::invalid_argument set_option throws, or "" when it does not.
std::string refusal(const std::string& formulation, const std::string& name, const OptionValue& v) {
  FormulationSettings s;
  try {
    set_option(s, formulation, name, v);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Options, EveryCatalogueEntryNamesRealFormulations) {
  std::set<std::string> names;
  for (const FormulationInfo& f : formulation_catalog()) names.insert(f.name);
  for (const OptionInfo& o : option_catalog()) {
    EXPECT_FALSE(o.formulations.empty()) << o.name;
    for (const std::string& f : o.formulations) EXPECT_TRUE(names.count(f)) << o.name << " names " << f;
  }
}

TEST(Options, ValuesReachTheSettings) {
  FormulationSettings s;
  set_option(s, "dca", "integrator", std::string("rk4"));
  set_option(s, "dca", "rtol", 1e-9);
  set_option(s, "dca", "dt", 2e-3);
  EXPECT_EQ(s.integrator, "rk4");
  EXPECT_EQ(s.rtol, 1e-9);
  EXPECT_EQ(s.dt, 2e-3);
  set_option(s, "ali3", "alpha", 1e8);
  set_option(s, "ali3", "newton_max", 7L);
  EXPECT_EQ(s.ali3.alpha, 1e8);
  EXPECT_EQ(s.ali3.newton_max, 7);
  set_option(s, "half-implicit", "newton_max", 9L);
  EXPECT_EQ(s.implicit.newton_max, 9);
}

TEST(Options, WhatDoesNotApplyIsRefusedWithItsName) {
  EXPECT_NE(refusal("ali3", "integrator", std::string("rk4")).find("integrator"), std::string::npos);
  EXPECT_NE(refusal("reference", "alpha", 1e9).find("alpha"), std::string::npos);
  EXPECT_NE(refusal("dca", "no_such_option", 1.0).find("no_such_option"), std::string::npos);
  EXPECT_NE(refusal("dca", "rtol", std::numeric_limits<double>::quiet_NaN()).find("finite"), std::string::npos);
  EXPECT_NE(refusal("dca", "rtol", -1.0).find("positive"), std::string::npos);
  EXPECT_NE(refusal("dca", "integrator", std::string("rk5")).find("one of"), std::string::npos);
  EXPECT_NE(refusal("ali3", "newton_max", 2.5).find("whole number"), std::string::npos);
  EXPECT_EQ(refusal("ali3", "newton_max", 4.0), "");  // a whole number written as a float is one
}

TEST(Options, AStopHookEndsTheRunInterruptedWithItsSamples) {
  FormulationSettings s;
  s.integrator = "rk4";
  s.dt = 0.01;
  Simulator sim(share(read_model_file(test::model_path("four_bar"))), "dca", s);
  Recording recording;
  RunOptions run;
  run.t_end = 1.0;
  run.dt = 0.01;
  // By the run's time, as a person's Ctrl-C comes: the hook is asked between intervals and inside
  // them (by the run and by its refined companion), more often than once an interval.
  run.stop = [&sim] { return sim.time() > 0.295; };
  const SimulationResult r = run_simulation(sim, run, &recording);
  EXPECT_EQ(r.status, "interrupted");
  EXPECT_NEAR(r.t_reached, 0.30, 1e-12);  // 30 intervals taken, the 31st refused
  EXPECT_EQ(recording.snapshots.size(), 31u);  // the initial sample and one per interval
  EXPECT_EQ(r.samples, 31);
  EXPECT_NE(r.message.find("interrupted at t = "), std::string::npos) << r.message;
}

// Inside one output interval too: with dt = t_end the run has a single interval, which an
// adaptive integrator crosses in many steps; the hook stops it there (asked before each
// right-hand side), the initial sample kept, and the simulator's own check back after the run.
TEST(Options, AStopHookIsHeardInsideALongOutputInterval) {
  Simulator sim(share(read_model_file(test::model_path("four_bar"))), "dca");
  Recording recording;
  RunOptions run;
  run.t_end = 10.0;
  run.dt = 10.0;
  run.estimate_error = run.verify = false;
  int asked = 0;
  run.stop = [&asked] { return ++asked > 50; };
  const SimulationResult r = run_simulation(sim, run, &recording);
  EXPECT_EQ(r.status, "interrupted");
  EXPECT_EQ(r.t_reached, 0.0);
  EXPECT_EQ(r.samples, 1);
  EXPECT_EQ(recording.snapshots.size(), 1u);
  EXPECT_LT(r.stats.rhs_evaluations, 60);  // 10 s of the four-bar take hundreds
  EXPECT_NE(r.message.find("inside the output interval to t = 10 s"), std::string::npos) << r.message;
  EXPECT_FALSE(static_cast<bool>(sim.interrupt()));  // the run's hook is not left behind
}
