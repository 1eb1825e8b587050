// Model import (issue 30): reading MuJoCo's sample models through MuJoCo's compiler into a
// treedyn Model, against MuJoCo's own mj_loadXML of the same file measured in the same run (the
// part of an import that is MuJoCo's: parsing and compiling). Needs libmujoco-samples.
//   build/bench/treedyn_bench_import
#include <benchmark/benchmark.h>
#include <mujoco/mujoco.h>

#include "treedyn/model_import.hpp"

namespace {

const char* const kModels[] = {"/usr/share/mujoco/model/humanoid/humanoid.xml",
                               "/usr/share/mujoco/model/humanoid100/humanoid100.xml"};

/// treedyn's whole import: MuJoCo's compile, the mapping, ModelBuilder's validation.
void ImportMjcf(benchmark::State& state) {
  const char* path = kModels[state.range(0)];
  int bodies = 0;
  for (auto _ : state) {
    const treedyn::ImportedModel m = treedyn::import_mjcf_file(path);
    bodies = m.model.body_count();
    benchmark::DoNotOptimize(bodies);
  }
  state.SetLabel(std::string(path).substr(std::string(path).rfind('/') + 1) + ", " + std::to_string(bodies) + " bodies");
}

/// MuJoCo's own load and compile of the same file (the floor under the import).
void MujocoLoadXml(benchmark::State& state) {
  const char* path = kModels[state.range(0)];
  for (auto _ : state) {
    char error[1000];
    mjModel* m = mj_loadXML(path, nullptr, error, sizeof error);
    benchmark::DoNotOptimize(m);
    mj_deleteModel(m);
  }
  state.SetLabel(std::string(path).substr(std::string(path).rfind('/') + 1));
}

BENCHMARK(ImportMjcf)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);
BENCHMARK(MujocoLoadXml)->DenseRange(0, 1)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
