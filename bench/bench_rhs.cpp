// Time of one right-hand-side evaluation of the joint-coordinate formulations on the n-link
// spherical chain of paper 000, Sect. 4.4 (n = 2 ... 1024), with 1 and 2 threads.
//
// The formulation's ODE right-hand side is called directly, at the initial state. LoopRhs does
// the same on paper 001's closed loops (its Table 1). Ali3Step times one whole ali3 step
// (Newton-Raphson and both projections) on the same chains, with paper 000's settings and the
// penalty compare suggests for the chain.
//
//   build/bench/treedyn_bench --benchmark_filter=Rhs
//   build/bench/treedyn_bench --benchmark_filter=Ali3Step
#include <benchmark/benchmark.h>

#include "treedyn/compare.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_json.hpp"

namespace {

using namespace treedyn;

void time_rhs(benchmark::State& state, const Model& model, const std::string& formulation, int threads) {
  FormulationSettings settings;
  settings.threads = threads;
  auto f = make_formulation(formulation, model, settings);
  OdeSystem& ode = *f->ode();
  const Eigen::VectorXd y = f->ode_state();
  Eigen::VectorXd ydot(y.size());
  for (auto _ : state) {
    ode.rhs(0.0, y, ydot);
    benchmark::DoNotOptimize(ydot.data());
  }
}

void rhs(benchmark::State& state, const std::string& formulation) {
  time_rhs(state, make_chain(static_cast<int>(state.range(0)), JointType::Spherical), formulation, static_cast<int>(state.range(1)));
  state.counters["bodies"] = static_cast<double>(state.range(0));
  state.counters["per_body"] =
      benchmark::Counter(static_cast<double>(state.range(0)) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::OneK::kIs1000);
}

void DcaRhs(benchmark::State& state) { rhs(state, "dca"); }

const char* const kLoops[] = {"loop4", "loop8", "double_loop8"};
void LoopRhs(benchmark::State& state, const std::string& formulation) {
  const std::string name = kLoops[state.range(0)];
  state.SetLabel(name);
  time_rhs(state, read_model_file(std::string(TREEDYN_MODELS_DIR) + "/" + name + ".json"), formulation, 1);
}
void HdcaLoopRhs(benchmark::State& state) { LoopRhs(state, "hdca"); }
void DcaLoopRhs(benchmark::State& state) { LoopRhs(state, "dca"); }
void HdcaRhs(benchmark::State& state) { rhs(state, "hdca"); }

/// One step from the chain's fall from rest; the run starts again (untimed) every 500 steps,
/// 5 s of the fall, so that long benchmark loops time the same motion.
void Ali3Step(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const Model model = make_chain(n, JointType::Spherical);
  FormulationSettings settings = suggested_settings(model, "ali3", CompareOptions{});
  settings.threads = static_cast<int>(state.range(1));
  std::unique_ptr<Formulation> f;
  int steps = 500;
  for (auto _ : state) {
    if (steps == 500) {
      state.PauseTiming();
      f = make_formulation("ali3", model, settings);
      steps = 0;
      state.ResumeTiming();
    }
    ++steps;
    f->advance_to(steps * settings.dt);
  }
  state.counters["alpha"] = settings.ali3.alpha;
  state.counters["per_body"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::OneK::kIs1000);
}

}  // namespace

BENCHMARK(DcaRhs)->ArgsProduct({benchmark::CreateRange(2, 1024, 2), {1, 2}})->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond);
BENCHMARK(HdcaRhs)->ArgsProduct({benchmark::CreateRange(2, 1024, 2), {1, 2}})->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond);

BENCHMARK(Ali3Step)->ArgsProduct({benchmark::CreateRange(2, 1024, 2), {1, 2}})->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond);

BENCHMARK(HdcaLoopRhs)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(DcaLoopRhs)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
