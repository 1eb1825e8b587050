// Time of one right-hand-side evaluation of the joint-coordinate formulations on the n-link
// spherical chain of paper 000, Sect. 4.4 (n = 2 ... 1024), with 1 and 2 threads.
//
// The formulation's ODE right-hand side is called directly, at the initial state.
//
//   build/bench/treedyn_bench --benchmark_filter=Rhs
#include <benchmark/benchmark.h>

#include "treedyn/formulations.hpp"
#include "treedyn/generators.hpp"

namespace {

using namespace treedyn;

void rhs(benchmark::State& state, const std::string& formulation) {
  const Model model = make_chain(static_cast<int>(state.range(0)), JointType::Spherical);
  FormulationSettings settings;
  settings.threads = static_cast<int>(state.range(1));
  auto f = make_formulation(formulation, model, settings);
  OdeSystem& ode = *f->ode();
  const Eigen::VectorXd y = f->ode_state();
  Eigen::VectorXd ydot(y.size());
  for (auto _ : state) {
    ode.rhs(0.0, y, ydot);
    benchmark::DoNotOptimize(ydot.data());
  }
  state.counters["bodies"] = static_cast<double>(state.range(0));
  state.counters["per_body"] =
      benchmark::Counter(static_cast<double>(state.range(0)) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::OneK::kIs1000);
}

void DcaRhs(benchmark::State& state) { rhs(state, "dca"); }

}  // namespace

BENCHMARK(DcaRhs)->ArgsProduct({benchmark::CreateRange(2, 1024, 2), {1, 2}})->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
