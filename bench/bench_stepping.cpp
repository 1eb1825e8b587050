// The stepping API's own cost (issue 23's targets), measured against what it wraps:
//
//   StepLoop       one Simulator::step() at a time, against the whole-run loop
//                  (run_simulation, sampling only at its ends) over the same steps: chain128
//                  under dca with rk4 at dt 1e-3, and ali3 on the four-bar (dt 0.01, 3 Newton
//                  iterations). Reported per step; the ratio is the stepping overhead.
//   SetStateStep   set_state(q, qd) followed by step() on a 7-joint revolute chain (dca, rk4,
//                  dt 1e-3), against step() alone: the difference is the cost of set_state.
//   Step7          step() alone on the same chain, nothing read: what bench/python_bench.py
//                  compares Python's step() with.
//   RecordedRun    a Simulator made and run_simulation of chain128 (dca, rk4, dt 1e-3, 1 s, a
//                  sample every 10 steps) into a Recording: what Python's simulate() is compared
//                  with.
//   AdvanceOutputs advance_to over 1 s of chain128 under dca with its default dopri5, to an
//                  output every 0.01 s (range 1) or to 0.01 s and 1 s only (range 0): the same
//                  steps, so the difference is what 98 outputs inside steps cost (dopri5's own
//                  interpolant: nothing but the interpolation; ARKODE's Hermite took one
//                  right-hand side each, docs/benchmarks.md "Session 36").
//
//   build/bench/treedyn_bench_stepping --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include "treedyn/compare.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/simulation.hpp"

namespace {

using namespace treedyn;

struct Case {
  ModelPtr model;
  std::string formulation;
  FormulationSettings settings;
};

Case stepping_case(int which) {
  if (which == 0) {
    FormulationSettings s;
    s.integrator = "rk4";
    s.dt = 1e-3;
    return {share(make_chain(128, JointType::Spherical)), "dca", s};
  }
  const ModelPtr four_bar = share(read_model_file(std::string(TREEDYN_MODELS_DIR) + "/four_bar.json"));
  FormulationSettings s = suggested_settings(*four_bar, "ali3", CompareOptions{});
  s.dt = 0.01;
  return {four_bar, "ali3", s};
}

constexpr int kSteps = 200;  // per timed iteration, from the model's initial state

/// step() kSteps times (the simulator reset, untimed, before each iteration).
void StepLoop(benchmark::State& state) {
  const Case c = stepping_case(static_cast<int>(state.range(0)));
  Simulator sim(c.model, c.formulation, c.settings);
  for (auto _ : state) {
    state.PauseTiming();
    sim.reset();
    state.ResumeTiming();
    for (int k = 0; k < kSteps; ++k) sim.step();
    benchmark::DoNotOptimize(sim.time());
  }
  state.SetLabel(c.model->name + ", " + c.formulation);
  state.counters["per_step"] = benchmark::Counter(kSteps * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// The whole-run loop over the same kSteps steps, sampling only at its two ends.
void WholeRun(benchmark::State& state) {
  const Case c = stepping_case(static_cast<int>(state.range(0)));
  Simulator sim(c.model, c.formulation, c.settings);
  RunOptions run;
  run.dt = c.settings.dt;
  run.t_end = kSteps * c.settings.dt;
  run.sample_every = kSteps;
  run.verify = false;  // timed: no refined companion
  for (auto _ : state) {
    state.PauseTiming();
    sim.reset();
    state.ResumeTiming();
    const SimulationResult r = run_simulation(sim, run);
    if (!r.ok()) state.SkipWithError(r.message.c_str());
  }
  state.SetLabel(c.model->name + ", " + c.formulation);
  state.counters["per_step"] = benchmark::Counter(kSteps * static_cast<double>(state.iterations()),
                                                  benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

/// range(0) = 1: set_state(q, qd) then step(); 0: step() alone. The state set is the one read
/// after the first steps, swinging.
void SetStateStep(benchmark::State& state) {
  FormulationSettings s;
  s.integrator = "rk4";
  s.dt = 1e-3;
  Simulator sim(share(make_chain(7, JointType::Revolute)), "dca", s);
  for (int k = 0; k < 100; ++k) sim.step();
  const Eigen::VectorXd q = sim.q(), qd = sim.qd();
  const bool set = state.range(0) != 0;
  int steps = 0;
  for (auto _ : state) {
    if (set) sim.set_state(q, qd);
    sim.step();
    if (++steps == 1000) {  // keep step() alone near the same motion
      state.PauseTiming();
      sim.set_state(q, qd);
      steps = 0;
      state.ResumeTiming();
    }
  }
  state.SetLabel(set ? "set_state + step" : "step");
}

void Step7(benchmark::State& state) {
  FormulationSettings s;
  s.integrator = "rk4";
  s.dt = 1e-3;
  Simulator sim(share(make_chain(7, JointType::Revolute)), "dca", s);
  int steps = 0;
  for (auto _ : state) {
    sim.step();
    if (++steps == 10000) {
      state.PauseTiming();
      sim.reset();
      steps = 0;
      state.ResumeTiming();
    }
  }
}

void RecordedRun(benchmark::State& state) {
  FormulationSettings s;
  s.integrator = "rk4";
  s.dt = 1e-3;
  const ModelPtr model = share(make_chain(128, JointType::Spherical));
  RunOptions run;
  run.t_end = 1.0;
  run.dt = 1e-3;
  run.sample_every = 10;
  run.verify = false;  // timed: no refined companion
  for (auto _ : state) {  // as treedyn.simulate does: a simulator made, run, recorded
    Simulator sim(model, "dca", s);
    Recording recording;
    const SimulationResult r = run_simulation(sim, run, &recording);
    if (!r.ok()) state.SkipWithError(r.message.c_str());
  }
}

void AdvanceOutputs(benchmark::State& state) {
  const ModelPtr model = share(make_chain(128, JointType::Spherical));
  Simulator sim(model, "dca");
  const bool every = state.range(0) == 1;
  long rhs = 0;
  for (auto _ : state) {
    state.PauseTiming();
    sim.reset();
    state.ResumeTiming();
    sim.advance_to(0.01);  // the first output sizes the first step in both
    if (every)
      for (int k = 2; k <= 100; ++k) sim.advance_to(0.01 * k);
    else
      sim.advance_to(1.0);
    benchmark::DoNotOptimize(sim.time());
    rhs = sim.stats().rhs_evaluations;
  }
  state.SetLabel(every ? "an output every 0.01 s" : "outputs at 0.01 and 1 s");
  state.counters["rhs_evaluations"] = static_cast<double>(rhs);
}

}  // namespace

BENCHMARK(AdvanceOutputs)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK(Step7)->Unit(benchmark::kNanosecond);
BENCHMARK(RecordedRun)->Unit(benchmark::kMillisecond);
BENCHMARK(StepLoop)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(WholeRun)->DenseRange(0, 1)->Unit(benchmark::kMicrosecond);
BENCHMARK(SetStateStep)->DenseRange(0, 1)->Unit(benchmark::kNanosecond);

BENCHMARK_MAIN();
