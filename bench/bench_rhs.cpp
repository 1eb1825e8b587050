// Time of one right-hand-side evaluation of the joint-coordinate formulations on the n-link
// spherical chain of paper 000, Sect. 4.4 (n = 2 ... 1024), with 1 and 2 threads.
//
// The formulation's ODE right-hand side is called directly, at the initial state. LoopRhs does
// the same on paper 001's closed loops (its Table 1). Ali3Step times one whole ali3 step
// (Newton-Raphson and both projections) on the same chains, with paper 000's settings and the
// penalty compare suggests for the chain. TreePass times the shared assembly tree alone (no
// formulation around it) on the same chains, a full pass and a bias-only one.
//
//   build/bench/treedyn_bench --benchmark_filter=Rhs
//   build/bench/treedyn_bench --benchmark_filter=Ali3Step
//   build/bench/treedyn_bench --benchmark_filter=TreePass
#include <benchmark/benchmark.h>

#include "treedyn/compare.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/kinematics.hpp"
#include "treedyn/model_json.hpp"

namespace {

using namespace treedyn;

void time_rhs(benchmark::State& state, const Model& model, const std::string& formulation, int threads) {
  FormulationSettings settings;
  settings.threading.threads = threads;
  settings.threading.pin = true;  // as the command line runs
  settings.threading.fallback = false;  // the threads themselves are timed
  auto f = make_formulation(formulation, share(model), settings);
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
  settings.threading.threads = static_cast<int>(state.range(1));
  settings.threading.pin = true;
  settings.threading.fallback = false;  // the threads themselves are timed
  std::unique_ptr<Formulation> f;
  int steps = 500;
  for (auto _ : state) {
    if (steps == 500) {
      state.PauseTiming();
      f = make_formulation("ali3", share(model), settings);
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

/// One pass of the shared assembly tree (dc::HandleTree, 6-D, as ali3 and the implicit
/// integrators use it) on the n-link chain's spherical joints, with the leaves doing nothing but
/// set their bias and read their loads: the floor under every formulation's pass. Each joint's
/// rows are its constraint block's twist Jacobians at the initial state (ConstraintSet; a chain
/// has one block per joint, no drivers); each leaf's K is its body's inverse spatial inertia at
/// the centre of mass, scaled by h^2/4 (ali3's tangent, Eq. 23). range(1): 1 a full pass
/// (eliminations built), 0 a bias-only pass on the held eliminations (Newton's later
/// iterations, the acceleration projection).
void TreePass(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool full = state.range(1) != 0;
  const Model model = make_chain(n, JointType::Spherical);
  const Topology topology(model);
  const AssemblyTree tree(model, topology, 1);
  const Parallel parallel;
  using Tree = dc::HandleTree<double, 6>;
  const ConstraintSet constraints(model);
  std::vector<ConstraintBlock> blocks;
  constraints.evaluate(0.0, initial_state(model), blocks);
  std::vector<dc::JointSides> sides(model.joints.size());
  std::vector<dc::JointRows<double, 6>> rows(model.joints.size());
  for (int k = 0; k < constraints.block_count(); ++k) {
    const ConstraintBlock& b = blocks[static_cast<std::size_t>(k)];
    const auto j = static_cast<std::size_t>(constraints.joint_of_block(k));
    const int m = b.size();
    sides[j] = {b.parent, b.child, m};
    rows[j].reset(m);
    rows[j].compliance = 1e-9;
    if (b.parent != kGround) rows[j].edit_G_p().topRows(m) = b.J_P;
    rows[j].edit_G_c().topRows(m) = b.J_C;
    rows[j].r.head(m).setConstant(1e-6);
  }
  Tree core(tree, sides, InverseMethod::Cholesky, dc::LeafBlocks::Shared);
  const double s = 0.25 * 0.01 * 0.01;
  std::vector<Tree::Mat> K(static_cast<std::size_t>(n), Tree::Mat::Zero());
  for (int i = 0; i < n; ++i) {
    const Body& b = model.bodies[static_cast<std::size_t>(i)];
    const Mat3 A = b.orientation.toRotationMatrix();
    Tree::Mat& k = K[static_cast<std::size_t>(i)];
    k.topLeftCorner<3, 3>().diagonal().setConstant(s / b.mass);
    k.bottomRightCorner<3, 3>() = s * A * b.inertia.inverse() * A.transpose();
  }
  const Tree::Vec bias = Tree::Vec::Constant(1e-3);
  Tree::Vec sink = Tree::Vec::Zero();
  auto leaf_in_full = [&](int i) {
    auto& node = core.leaf(i);
    node.set_shared_k(K[static_cast<std::size_t>(i)]);
    node.set_shared_b(bias);
  };
  auto leaf_in_bias = [&](int i) { core.leaf(i).set_shared_b(bias); };
  auto leaf_out = [&](int i) { sink += core.leaf(i).shared_f(); };
  core.solve(rows, parallel, leaf_in_full, leaf_out);
  for (auto _ : state) {
    if (full) core.solve(rows, parallel, leaf_in_full, leaf_out);
    else core.solve_bias(rows, parallel, leaf_in_bias, leaf_out);
    benchmark::DoNotOptimize(sink.data());
  }
  if (core.any_singular()) state.SkipWithError("a singular elimination: the rows are wrong");
  state.counters["per_body"] =
      benchmark::Counter(static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate | benchmark::Counter::kInvert, benchmark::Counter::OneK::kIs1000);
}

}  // namespace

BENCHMARK(DcaRhs)->ArgsProduct({benchmark::CreateRange(2, 1024, 2), {1, 2}})->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond);
BENCHMARK(HdcaRhs)->ArgsProduct({benchmark::CreateRange(2, 1024, 2), {1, 2}})->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond);

BENCHMARK(Ali3Step)->ArgsProduct({benchmark::CreateRange(2, 1024, 2), {1, 2}})->ArgNames({"n", "threads"})->Unit(benchmark::kMicrosecond);

BENCHMARK(TreePass)->ArgsProduct({{8, 128, 1024}, {1, 0}})->ArgNames({"n", "full"})->Unit(benchmark::kMicrosecond);

BENCHMARK(HdcaLoopRhs)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);
BENCHMARK(DcaLoopRhs)->DenseRange(0, 2)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
