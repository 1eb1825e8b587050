// Model files at scale (issue 28): writing and reading the canonical JSON of paper 000's
// spherical chain of n bodies (treedyn generate chain), from memory, so the disk is not timed;
// and read_model_file of the file written once to the temporary directory (so in the page cache:
// what a user's `treedyn simulate chain.json` pays to load it, the disk aside); and one sample's
// rows of the result files; and the set-up between them: the assembly tree, and a Simulator of
// dca, hdca and ali3 (formulation, tree, core, initial accelerations).
//   build/bench/treedyn_bench_model_files --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <memory>

#include "treedyn/generators.hpp"
#include "treedyn/kinematics.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/result_writer.hpp"
#include "treedyn/simulator.hpp"
#include "treedyn/topology.hpp"

namespace {

void WriteModelJson(benchmark::State& state) {
  const treedyn::Model chain = treedyn::make_chain(static_cast<int>(state.range(0)), treedyn::JointType::Spherical);
  std::size_t bytes = 0;
  for (auto _ : state) {
    const std::string text = treedyn::write_model_json(chain);
    bytes = text.size();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["MB"] = static_cast<double>(bytes) / 1e6;
}

void ParseModelJson(benchmark::State& state) {
  const std::string text =
      treedyn::write_model_json(treedyn::make_chain(static_cast<int>(state.range(0)), treedyn::JointType::Spherical));
  for (auto _ : state) {
    const treedyn::Model m = treedyn::parse_model_json(text, "chain.json");
    benchmark::DoNotOptimize(m.bodies.data());
  }
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}

void ReadModelFile(benchmark::State& state) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("treedyn_bench_chain_" + std::to_string(state.range(0)) + "_" + std::to_string(::getpid()) + ".json"))
                               .string();
  const std::string text =
      treedyn::write_model_json(treedyn::make_chain(static_cast<int>(state.range(0)), treedyn::JointType::Spherical));
  std::ofstream(path, std::ios::binary) << text;
  for (auto _ : state) {
    const treedyn::Model m = treedyn::read_model_file(path);
    benchmark::DoNotOptimize(m.bodies.data());
  }
  std::filesystem::remove(path);
  state.counters["MB"] = static_cast<double>(text.size()) / 1e6;
}

// One sample's rows of the result files (trajectory.csv and metrics.csv: 13 numbers a body, 3 a
// joint) as a run writes them, the headers written before the timing.
void WriteResultRow(benchmark::State& state) {
  const treedyn::Model chain = treedyn::make_chain(static_cast<int>(state.range(0)), treedyn::JointType::Spherical);
  const std::string directory = (std::filesystem::temp_directory_path() /
                                 ("treedyn_bench_rows_" + std::to_string(state.range(0)) + "_" + std::to_string(::getpid())))
                                    .string();
  treedyn::Snapshot snapshot;
  snapshot.bodies = treedyn::initial_state(chain);
  treedyn::MetricsSample metrics;
  metrics.joints.assign(chain.joints.size(), treedyn::ConstraintErrors{1.25e-9, 3.5e-8, 0.125});
  {
    treedyn::ResultWriter writer(chain, directory);
    writer.write(snapshot, metrics, {});  // the headers and a first row
    for (auto _ : state) {
      snapshot.t += 1e-3;
      writer.write(snapshot, metrics, {});
    }
  }
  std::filesystem::remove_all(directory);
  state.counters["numbers"] = static_cast<double>(13 * chain.bodies.size() + 3 * chain.joints.size());
}

// The assembly tree of the chain (its split search: AssemblyTree::build).
void AssemblyTreeOfChain(benchmark::State& state) {
  const treedyn::Model chain = treedyn::make_chain(static_cast<int>(state.range(0)), treedyn::JointType::Spherical);
  const treedyn::Topology topology(chain);
  for (auto _ : state) {
    const treedyn::AssemblyTree tree(chain, topology);
    benchmark::DoNotOptimize(tree.root());
  }
}
// A Simulator of the chain, as `treedyn simulate` makes one after loading (dt 0.01 s).
void SimulatorOfChain(benchmark::State& state, const char* formulation) {
  const auto chain = std::make_shared<const treedyn::Model>(
      treedyn::make_chain(static_cast<int>(state.range(0)), treedyn::JointType::Spherical));
  treedyn::FormulationSettings settings;
  settings.dt = 0.01;
  for (auto _ : state) {
    const treedyn::Simulator simulator(chain, formulation, settings);
    benchmark::DoNotOptimize(simulator.time());
  }
}
BENCHMARK(AssemblyTreeOfChain)->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SimulatorOfChain, dca, "dca")->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SimulatorOfChain, hdca, "hdca")->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(SimulatorOfChain, ali3, "ali3")->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK(WriteModelJson)->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK(ParseModelJson)->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK(ReadModelFile)->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);
BENCHMARK(WriteResultRow)->RangeMultiplier(4)->Range(1024, 65536)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
