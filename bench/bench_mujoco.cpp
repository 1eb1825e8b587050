// One right-hand side of treedyn's dca and hdca against MuJoCo's forward dynamics (mj_forward,
// Debian's MuJoCo 2.2.2) on the same MJCF file at the same state, measured in one run and
// interleaved (peer_timing.hpp). treedyn's model is its import of the file MuJoCo loads; MuJoCo
// runs with what treedyn does not model switched off (peers/mujoco_peer.hpp: no contacts, limits,
// passive forces, actuators), so both compute the same accelerations:
// tests/import/test_import_mjcf.cpp checks it at random states on the chains and on humanoid.xml
// (not on 22_humanoids.xml, whose humanoids are of the same build). State: the file's qpos0 at
// rest.
//
//   build/bench/treedyn_bench_mujoco --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
//
// Models:
//   Chain/n      paper 000's spherical chain of n links (peers::chain_mjcf), n up to 96: MuJoCo
//                2.2's XML reader nests at most 100 elements, one <body> a link.
//   Humanoids/k  MuJoCo's humanoid.xml (k = 1: 16 bodies, 27 degrees of freedom) and
//                22_humanoids.xml (k = 22: 352 bodies, 22 separate trees), each ankle's two hinges
//                made one pair at one point (as the import test's exact variant) so that treedyn
//                imports the same 16 bodies a humanoid without connector bodies.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "mujoco_peer.hpp"
#include "peer_timing.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/model_import.hpp"

namespace {

using namespace treedyn;

std::string temporary_file(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

/// MuJoCo's humanoid file with its ankles made exact (peers::with_exact_ankles), written to a
/// temporary file.
std::string humanoids_with_exact_ankles(int k) {
  const std::string source = std::string("/usr/share/mujoco/model/humanoid/") + (k == 1 ? "humanoid.xml" : "22_humanoids.xml");
  std::ifstream in(source);
  if (!in) throw std::runtime_error("cannot read " + source + " (Debian's libmujoco-samples)");
  std::stringstream buffer;
  buffer << in.rdbuf();
  return temporary_file("treedyn_bench_humanoids" + std::to_string(k) + ".xml", peers::with_exact_ankles(buffer.str(), k));
}

void against_mujoco(benchmark::State& state, const std::string& formulation, const std::string& path) {
  const ImportedModel imported = import_mjcf_file(path);
  FormulationSettings settings;
  settings.threading.threads = 1;
  const auto f = make_formulation(formulation, share(imported.model), settings);
  const peers::MjModelPtr m = peers::mujoco_model(path);
  const peers::MjDataPtr d(mj_makeData(m.get()), mj_deleteData);  // qpos0, at rest
  bench::time_against_peer(state, *f->ode(), f->ode_state(), "mujoco", [&] { mj_forward(m.get(), d.get()); });
  state.counters["bodies"] = imported.model.body_count();
  state.counters["dofs"] = m->nv;
}

void chain(benchmark::State& state, const std::string& formulation) {
  const int n = static_cast<int>(state.range(0));
  against_mujoco(state, formulation, temporary_file("treedyn_bench_chain" + std::to_string(n) + ".xml", peers::chain_mjcf(n)));
}

void humanoids(benchmark::State& state, const std::string& formulation) {
  against_mujoco(state, formulation, humanoids_with_exact_ankles(static_cast<int>(state.range(0))));
}

void DcaAgainstMujocoChain(benchmark::State& state) { chain(state, "dca"); }
void HdcaAgainstMujocoChain(benchmark::State& state) { chain(state, "hdca"); }
void DcaAgainstMujocoHumanoids(benchmark::State& state) { humanoids(state, "dca"); }
void HdcaAgainstMujocoHumanoids(benchmark::State& state) { humanoids(state, "hdca"); }

}  // namespace

// The minimum time counts treedyn's share only: at 96 links MuJoCo's takes 45 times as long, so
// 0.1 s of treedyn's keeps a repetition near 5 s (thousands of interleaved pairs).
BENCHMARK(DcaAgainstMujocoChain)->ArgName("n")->Arg(16)->Arg(32)->Arg(64)->Arg(96)->MinTime(0.1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(HdcaAgainstMujocoChain)->ArgName("n")->Arg(16)->Arg(32)->Arg(64)->Arg(96)->MinTime(0.1)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(DcaAgainstMujocoHumanoids)->ArgName("k")->Arg(1)->Arg(22)->UseManualTime()->Unit(benchmark::kMicrosecond);
BENCHMARK(HdcaAgainstMujocoHumanoids)->ArgName("k")->Arg(1)->Arg(22)->UseManualTime()->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
