// One right-hand side of treedyn's dca and hdca against Simbody 3.7's forward dynamics
// (realize(Acceleration) from the Position stage) on paper 000's spherical chain, measured in one
// run and interleaved (peer_timing.hpp). The reported time is treedyn's; the counters give both
// per evaluation and their ratio.
// tests/peers/test_simbody.cpp checks that the two compute the same accelerations.
//
//   build/bench/treedyn_bench_simbody --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Instructions per body per right-hand side (callgrind; bench/instructions_per_body.sh):
//   build/bench/treedyn_bench_simbody --evaluate ENGINE N COUNT
// evaluates COUNT right-hand sides of ENGINE (dca, hdca or simbody) on the N-link chain and
// exits; the script runs it under valgrind for two counts and divides the difference.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "peer_timing.hpp"
#include "simbody_chain.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/generators.hpp"

namespace {

using namespace treedyn;

std::unique_ptr<Formulation> chain_formulation(int n, const std::string& formulation) {
  FormulationSettings settings;
  settings.threading.threads = 1;
  return make_formulation(formulation, share(make_chain(n, JointType::Spherical)), settings);
}

void against_simbody(benchmark::State& state, const std::string& formulation) {
  const int n = static_cast<int>(state.range(0));
  const auto f = chain_formulation(n, formulation);
  peers::SimbodyChain chain(n);
  bench::time_against_peer(state, *f->ode(), f->ode_state(), "simbody", [&] { chain.evaluate(); });
  state.counters["bodies"] = n;
}

void DcaAgainstSimbody(benchmark::State& state) { against_simbody(state, "dca"); }
void HdcaAgainstSimbody(benchmark::State& state) { against_simbody(state, "hdca"); }

/// --evaluate ENGINE N COUNT: COUNT evaluations, nothing else (for instruction counts).
int evaluate(const std::string& engine, int n, long count) {
  if (engine == "simbody") {
    peers::SimbodyChain chain(n);
    for (long k = 0; k < count; ++k) chain.evaluate();
    return 0;
  }
  if (engine != "dca" && engine != "hdca") {
    std::fprintf(stderr, "--evaluate: engine must be dca, hdca or simbody, not '%s'\n", engine.c_str());
    return 1;
  }
  const auto f = chain_formulation(n, engine);
  OdeSystem& ode = *f->ode();
  const Eigen::VectorXd y = f->ode_state();
  Eigen::VectorXd ydot(y.size());
  for (long k = 0; k < count; ++k) ode.rhs(0.0, y, ydot);
  benchmark::DoNotOptimize(ydot.data());
  return 0;
}

}  // namespace

BENCHMARK(DcaAgainstSimbody)->ArgName("n")->Arg(16)->Arg(128)->Arg(1024)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(HdcaAgainstSimbody)->ArgName("n")->Arg(16)->Arg(128)->Arg(1024)->UseManualTime()->Unit(benchmark::kMicrosecond);

int main(int argc, char** argv) {
  if (argc >= 2 && std::strcmp(argv[1], "--evaluate") == 0) {
    if (argc != 5 || std::atoi(argv[3]) < 1 || std::atol(argv[4]) < 0) {
      std::fprintf(stderr, "usage: %s --evaluate dca|hdca|simbody N COUNT\n", argv[0]);
      return 1;
    }
    return evaluate(argv[2], std::atoi(argv[3]), std::atol(argv[4]));
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
