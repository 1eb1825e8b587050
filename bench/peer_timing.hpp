// One right-hand side of a treedyn formulation against a peer engine's forward dynamics of the
// same system at the same state, measured in one run and interleaved: each iteration times one
// treedyn right-hand side and then one peer evaluation, so a noisy machine slows both alike. The
// reported (manual) time is treedyn's; the counters give both per evaluation and their ratio.
// Used by bench_simbody.cpp and bench_mujoco.cpp.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <string>

#include "treedyn/formulations.hpp"

namespace treedyn::bench {

/// Times ode.rhs(0, y) against peer_evaluate(); counters treedyn_us, <peer>_us and ratio
/// (treedyn / peer, per evaluation).
template <class PeerEvaluate>
void time_against_peer(benchmark::State& state, OdeSystem& ode, const Eigen::VectorXd& y, const std::string& peer,
                       PeerEvaluate&& peer_evaluate) {
  using Clock = std::chrono::steady_clock;
  Eigen::VectorXd ydot(y.size());
  double treedyn_s = 0.0, peer_s = 0.0;
  for (auto _ : state) {
    const auto t0 = Clock::now();
    ode.rhs(0.0, y, ydot);
    benchmark::DoNotOptimize(ydot.data());
    const auto t1 = Clock::now();
    peer_evaluate();
    benchmark::ClobberMemory();
    const auto t2 = Clock::now();
    const double td = std::chrono::duration<double>(t1 - t0).count();
    treedyn_s += td;
    peer_s += std::chrono::duration<double>(t2 - t1).count();
    state.SetIterationTime(td);
  }
  const auto iterations = static_cast<double>(state.iterations());
  state.counters["treedyn_us"] = 1e6 * treedyn_s / iterations;
  state.counters[peer + "_us"] = 1e6 * peer_s / iterations;
  state.counters["ratio"] = treedyn_s / peer_s;
}

}  // namespace treedyn::bench
