// The shared divide-and-conquer core (dc::HandleTree) against a dense solve of the same linear
// system, on random trees, loops and redundant rows, before any formulation is involved.
//
// The system: every body i has handles h (its joints with rows); at each handle
//   x_h = sum_k K_hk f_k + b_h,   with K_hk = T_h' M_i^-1 T_k and b_h = T_h' beta_i
// (T_h a random invertible 6 x 6 "arm" of the handle, M_i a random positive definite matrix; for
// LeafBlocks::Shared every T_h = I), and every joint j ties its bodies by
//   G_p x_p + G_c x_c + c lambda_j = r_j,   f = G' lambda on each side.
// Dense: with J~ the rows G T_h' on each body's x_i = M_i^-1 sum_h T_h f_h + beta_i,
//   (J~ M^-1 J~' + C) lambda = r - J~ beta,   x_i = beta_i + M_i^-1 J~' lambda,
// solved by a complete orthogonal decomposition (minimum-norm lambda when rows are redundant:
// then only x, which is unique, is compared). The right-hand sides are those of a random state,
// so that redundant hard rows are consistent, as a mechanism's are.
#include <gtest/gtest.h>

#include <Eigen/QR>
#include <Eigen/SVD>
#include <limits>
#include <map>
#include <mutex>
#include <random>
#include <set>

#include "allocation_counter.hpp"
#include "support.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"

using namespace treedyn;

namespace {

using Tree = dc::HandleTree<double, 6>;
using Rows = dc::JointRows<double, 6>;

/// A random connected model: body k hangs from ground or an earlier body by a random joint type,
/// then `loops` more joints between random pairs, and `duplicates` spherical joints between the
/// bodies of earlier joints (often redundant rows).
Model random_graph(int bodies, int loops, int duplicates, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  ModelBuilder b("random graph");
  for (int k = 0; k < bodies; ++k) b.body(test::box("b" + std::to_string(k), {u(rng), u(rng), u(rng)}, u(rng)));
  const JointType types[] = {JointType::Revolute, JointType::Prismatic, JointType::Universal, JointType::Spherical,
                             JointType::Planar,   JointType::Fixed,     JointType::Cylindrical};
  auto name = [](int k) { return k < 0 ? std::string("ground") : "b" + std::to_string(k); };
  int joints = 0;
  std::vector<std::pair<int, int>> pairs;
  auto joint = [&](int p, int c, JointType t) {
    const Vec3 axis = Vec3(u(rng), u(rng), u(rng)).normalized();
    b.joint(JointSpec::at("j" + std::to_string(joints++), t, name(p), name(c), {u(rng), u(rng), u(rng)}, axis,
                          t == JointType::Universal ? std::optional<Vec3>(any_perpendicular(axis)) : std::nullopt));
    pairs.emplace_back(p, c);
  };
  for (int k = 0; k < bodies; ++k)
    joint(std::uniform_int_distribution<int>(-1, k - 1)(rng), k, types[std::uniform_int_distribution<int>(0, 6)(rng)]);
  for (int l = 0; l < loops; ++l) {
    const int p = std::uniform_int_distribution<int>(-1, bodies - 2)(rng);
    const int c = std::uniform_int_distribution<int>(p + 1, bodies - 1)(rng);
    joint(p, c, types[std::uniform_int_distribution<int>(0, 4)(rng)]);
  }
  for (int d = 0; d < duplicates; ++d) {
    const auto [p, c] = pairs[static_cast<std::size_t>(std::uniform_int_distribution<int>(0, joints - 1)(rng))];
    joint(p, c, JointType::Spherical);
  }
  return b.build();
}

Mat6 random_spd(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Mat6 A;
  for (int i = 0; i < 36; ++i) A(i) = u(rng);
  return A * A.transpose() + 0.5 * Mat6::Identity();
}

Mat6 random_arm(std::mt19937& rng) {  // a shift matrix S(l) = [I 0; -skew(l) I]-like, invertible
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Mat6 T = Mat6::Identity();
  T.bottomLeftCorner<3, 3>() = skew(Vec3(u(rng), u(rng), u(rng)));
  return T;
}

struct Problem {
  std::vector<dc::JointSides> sides;
  std::vector<Rows> rows;
  std::vector<Mat6> M_inverse;
  std::vector<Vec6> beta;
  std::map<std::pair<int, int>, Mat6> arm;  // (body, joint) -> T_h; identity when shared
};

/// Right-hand sides r that a random state x* satisfies (r = J~ x*): redundant hard rows are then
/// consistent, as a mechanism's are.
void consistent_right_hand_sides(Problem& p, int bodies, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  std::vector<Vec6> x_star(static_cast<std::size_t>(bodies));
  for (Vec6& x : x_star)
    for (int c = 0; c < 6; ++c) x(c) = u(rng);
  for (std::size_t j = 0; j < p.sides.size(); ++j) {
    const auto& s = p.sides[j];
    Rows& r = p.rows[j];
    const int jj = static_cast<int>(j);
    r.r.head(s.rows) = r.G_c().topRows(s.rows) * p.arm.at({s.body_c, jj}).transpose() * x_star[static_cast<std::size_t>(s.body_c)];
    if (s.body_p != kGround)
      r.r.head(s.rows) += r.G_p().topRows(s.rows) * p.arm.at({s.body_p, jj}).transpose() * x_star[static_cast<std::size_t>(s.body_p)];
  }
}

/// Every joint's rows are its twist Jacobians at the model's state (ConstraintSet: what the
/// absolute-coordinate formulations put in the tree), with compliance c; random leaves.
Problem random_problem(const Model& m, bool shared, double compliance, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Problem p;
  const ConstraintSet constraints(m);
  std::vector<ConstraintBlock> blocks;
  constraints.evaluate(0.0, initial_state(m), blocks);
  for (std::size_t j = 0; j < m.joints.size(); ++j) {
    const ConstraintBlock& b = blocks[j];
    const int rows = b.size();
    p.sides.push_back({b.parent, b.child, rows});
    Rows r;
    r.reset(rows);
    if (b.parent != kGround) r.edit_G_p().topRows(rows) = b.J_P;
    r.edit_G_c().topRows(rows) = b.J_C;
    r.compliance = compliance;
    p.rows.push_back(r);
  }
  for (int i = 0; i < m.body_count(); ++i) {
    p.M_inverse.push_back(random_spd(rng).inverse());
    Vec6 b;
    for (int c = 0; c < 6; ++c) b(c) = u(rng);
    p.beta.push_back(b);
    for (std::size_t j = 0; j < m.joints.size(); ++j)
      if (m.joints[j].parent == i || m.joints[j].child == i)
        p.arm[{i, static_cast<int>(j)}] = shared ? Mat6::Identity() : random_arm(rng);
  }
  consistent_right_hand_sides(p, m.body_count(), rng);
  return p;
}

struct Dense {
  Eigen::VectorXd lambda;
  std::vector<Vec6> x;  // per body
  bool redundant;
  double condition;     // of J~ M^-1 J~' + C over its non-zero singular values
};

Dense dense_solve(const Model& m, const Problem& p) {
  const int n = m.body_count();
  std::vector<int> offset;
  int rows = 0;
  for (const auto& s : p.sides) {
    offset.push_back(rows);
    rows += s.rows;
  }
  Eigen::MatrixXd J = Eigen::MatrixXd::Zero(rows, 6 * n), Minv = Eigen::MatrixXd::Zero(6 * n, 6 * n);
  Eigen::VectorXd r(rows), beta(6 * n), c(rows);
  for (std::size_t j = 0; j < p.sides.size(); ++j) {
    const auto& s = p.sides[j];
    const int o = offset[j];
    if (s.body_p != kGround)
      J.block(o, 6 * s.body_p, s.rows, 6) = p.rows[j].G_p().topRows(s.rows) * p.arm.at({s.body_p, static_cast<int>(j)}).transpose();
    J.block(o, 6 * s.body_c, s.rows, 6) = p.rows[j].G_c().topRows(s.rows) * p.arm.at({s.body_c, static_cast<int>(j)}).transpose();
    r.segment(o, s.rows) = p.rows[j].r.head(s.rows);
    c.segment(o, s.rows).setConstant(p.rows[j].compliance);
  }
  for (int i = 0; i < n; ++i) {
    Minv.block<6, 6>(6 * i, 6 * i) = p.M_inverse[static_cast<std::size_t>(i)];
    beta.segment<6>(6 * i) = p.beta[static_cast<std::size_t>(i)];
  }
  Eigen::MatrixXd A = J * Minv * J.transpose();
  A.diagonal() += c;
  const Eigen::CompleteOrthogonalDecomposition<Eigen::MatrixXd> cod(A);
  Dense d;
  d.lambda = cod.solve(r - J * beta);
  d.redundant = cod.rank() < rows;
  const Eigen::VectorXd sv = Eigen::JacobiSVD<Eigen::MatrixXd>(A).singularValues();
  d.condition = sv(0) / sv(cod.rank() - 1);
  const Eigen::VectorXd x = beta + Minv * J.transpose() * d.lambda;
  for (int i = 0; i < n; ++i) d.x.push_back(x.segment<6>(6 * i));
  return d;
}

/// The tree's solve: per body x_i = beta_i + M_i^-1 sum_h T_h f_h (what the leaves' equations
/// mean), and the multipliers.
struct TreeResult {
  std::vector<Vec6> x;
  std::vector<Vec6> lambda;
  std::vector<double> shared_gap;  // per body: a Shared leaf's f against the sum of load() over its handles
};

TreeResult tree_solve(const Model& m, const Problem& p, bool shared, const Parallel& parallel,
                      Tree& core, bool bias_only = false) {
  TreeResult out;
  out.x.assign(static_cast<std::size_t>(m.body_count()), Vec6::Zero());
  out.shared_gap.assign(static_cast<std::size_t>(m.body_count()), 0.0);
  // An InRows leaf is given G_a T_a' M^-1 T_c G_c' and G_a b_a (multiplied out densely here) and
  // gives back G_a' lambda_a; a Shared leaf is given M^-1 and b_a per Dim and gives back f_a.
  auto leaf_in = [&](int i) {
    auto& node = core.leaf(i);
    const auto& Minv = p.M_inverse[static_cast<std::size_t>(i)];
    const int h = node.size();
    for (int a = 0; a < h; ++a) {
      const Mat6& Ta = p.arm.at({i, node.handles()[static_cast<std::size_t>(a)]});
      const Vec6 b = Ta.transpose() * p.beta[static_cast<std::size_t>(i)];
      if (shared) node.set_shared_b(b);  // T_a = I: the same b at every handle
      else core.set_leaf_bias(node, a, b, p.rows);
      if (bias_only) continue;
      if (shared && node.k_diagonal()) {  // Minv = diag(k I, K_w) (BlockDiagonalLeavesGiveTheNumbersOfFullOnes)
        node.set_shared_k(Minv(0, 0), Minv.bottomRightCorner<3, 3>());
        continue;
      }
      if (shared) {
        node.set_shared_k(Minv);
        continue;
      }
      const Eigen::MatrixXd Ga = Tree::handle_rows(node, a, p.rows);
      for (int c = 0; c < h; ++c) {
        const Eigen::MatrixXd Gc = Tree::handle_rows(node, c, p.rows);
        node.K_hat().block(node.o(a), node.o(c), Ga.rows(), Gc.rows()) =
            Ga * Ta.transpose() * Minv * p.arm.at({i, node.handles()[static_cast<std::size_t>(c)]}) * Gc.transpose();
      }
    }
  };
  auto leaf_out = [&](int i) {
    auto& node = core.leaf(i);
    Vec6 load = Vec6::Zero();
    for (int a = 0; a < node.size(); ++a)
      load += p.arm.at({i, node.handles()[static_cast<std::size_t>(a)]}) * core.load(node, a, p.rows);
    if (shared) {  // the sum the leaf holds, and load() handle by handle (T_a = I) beside it
      out.shared_gap[static_cast<std::size_t>(i)] = (node.shared_f() - load).cwiseAbs().maxCoeff() / std::max(1.0, load.cwiseAbs().maxCoeff());
      load = node.shared_f();
    }
    out.x[static_cast<std::size_t>(i)] = p.beta[static_cast<std::size_t>(i)] + p.M_inverse[static_cast<std::size_t>(i)] * load;
  };
  if (bias_only) core.solve_bias(p.rows, parallel, leaf_in, leaf_out);
  else core.solve(p.rows, parallel, leaf_in, leaf_out);
  for (std::size_t j = 0; j < p.sides.size(); ++j) out.lambda.push_back(core.multiplier(static_cast<int>(j)));
  return out;
}

/// Both are backward-stable solves of one system: they agree to about eps times its condition
/// number (1000 eps kappa, relative to the largest entry, below).
void expect_matches_dense(const Model& m, const Problem& p, const TreeResult& t, const std::string& what) {
  const Dense d = dense_solve(m, p);
  // A Shared leaf's summed f is load()'s sum (the same products, summed in handle order; 1e-14:
  // a fixed-size and a dynamic-size product may round differently).
  for (std::size_t i = 0; i < t.shared_gap.size(); ++i) EXPECT_LT(t.shared_gap[i], 1e-14) << what << ", body " << i;
  const double tolerance = 1e3 * std::numeric_limits<double>::epsilon() * d.condition;
  double scale = 1.0, worst = 0.0;
  for (std::size_t i = 0; i < d.x.size(); ++i) {
    scale = std::max(scale, d.x[i].cwiseAbs().maxCoeff());
    worst = std::max(worst, (t.x[i] - d.x[i]).cwiseAbs().maxCoeff());
  }
  EXPECT_LT(worst, tolerance * scale) << what << (d.redundant ? " (redundant rows)" : "") << ", condition " << d.condition;
  EXPECT_LT(tolerance, 1e-4) << what << ": too ill-conditioned to say anything";
  if (d.redundant) return;  // lambda is not unique
  int o = 0;
  const double lambda_scale = std::max(1.0, d.lambda.cwiseAbs().maxCoeff());
  for (std::size_t j = 0; j < p.sides.size(); ++j) {
    const int rows = p.sides[j].rows;
    EXPECT_LT((t.lambda[j].head(rows) - d.lambda.segment(o, rows)).cwiseAbs().maxCoeff(), tolerance * lambda_scale)
        << what << ", joint " << j;
    o += rows;
  }
}

}  // namespace

// Random trees and graphs with loops, leaves in rows and shared ones, hard and compliant rows:
// the tree's solution is the dense one (and its multipliers too where they are unique).
TEST(TreeSolve, MatchesADenseSolveOnRandomTreesAndLoops) {
  std::mt19937 rng(2024);
  for (int trial = 0; trial < 24; ++trial) {
    const int bodies = 2 + trial % 9, loops = trial % 4 == 0 ? 0 : 1 + trial % 3;
    const Model m = random_graph(bodies, loops, 0, rng);
    const Topology topology(m);
    const AssemblyTree tree(m, topology, 1);
    for (bool shared : {false, true})
      for (double compliance : {0.0, 1e-3}) {
        const Problem p = random_problem(m, shared, compliance, rng);
        Tree core(tree, p.sides, InverseMethod::Cholesky, shared ? dc::LeafBlocks::Shared : dc::LeafBlocks::InRows);
        const TreeResult t = tree_solve(m, p, shared, Parallel{}, core);
        expect_matches_dense(m, p, t,
                             "trial " + std::to_string(trial) + (shared ? ", shared" : ", in rows") + ", c = " +
                                 std::to_string(compliance));
      }
  }
}

// Redundant rows (a joint repeated between the same bodies; the papers' planar loops of spatial
// joints): the minimum-norm eliminations still give the unique x; with compliant rows (ali3)
// every matrix stays positive definite.
TEST(TreeSolve, RedundantRowsGiveTheUniqueSolution) {
  std::mt19937 rng(99);
  for (int trial = 0; trial < 12; ++trial) {
    const Model m = random_graph(3 + trial % 5, trial % 2, 1 + trial % 2, rng);
    const AssemblyTree tree(m, Topology(m), 1);
    for (double compliance : {0.0, 1e-6}) {
      const Problem p = random_problem(m, true, compliance, rng);
      Tree core(tree, p.sides, InverseMethod::Cholesky, dc::LeafBlocks::Shared);
      expect_matches_dense(m, p, tree_solve(m, p, true, Parallel{}, core), "trial " + std::to_string(trial));
      if (compliance == 0.0) {
        EXPECT_TRUE(dense_solve(m, p).redundant) << "trial " << trial;
        EXPECT_TRUE(core.any_singular()) << "trial " << trial;
      }
    }
  }
}

// The papers' own loop models (their trees from AssemblyTree), and a bias-only pass after a full
// one: new b and r on the held eliminations give the dense solution of the new right-hand sides.
TEST(TreeSolve, BiasOnlyPassesSolveNewRightHandSidesOnTheHeldEliminations) {
  std::mt19937 rng(5);
  for (const char* name : {"loop4", "loop8", "double_loop8", "four_bar", "chain32"}) {
    const Model m = std::string(name) == "chain32" ? make_chain(32, JointType::Spherical) : read_model_file(test::model_path(name));
    const AssemblyTree tree(m, Topology(m), 1);
    Problem p = random_problem(m, false, 0.0, rng);  // hard rows: the loops' redundant ones exactly singular
    Tree core(tree, p.sides, InverseMethod::Cholesky, dc::LeafBlocks::InRows);
    expect_matches_dense(m, p, tree_solve(m, p, false, Parallel{}, core), name);
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (auto& b : p.beta)
      for (int c = 0; c < 6; ++c) b(c) = u(rng);
    consistent_right_hand_sides(p, m.body_count(), rng);
    expect_matches_dense(m, p, tree_solve(m, p, false, Parallel{}, core, true), std::string(name) + ", bias only");
  }
}

// A tree made for full passes only (BiasPasses::Never, as dca and hdca make theirs) keeps no
// Z^+: its full pass gives the numbers of a tree that keeps it, bit for bit (the same operations;
// only what is stored differs), and it refuses a bias-only pass with a std::logic_error instead
// of reading a Z^+ it never wrote.
TEST(TreeSolve, ATreeForFullPassesOnlyGivesTheSameNumbersAndRefusesBiasOnlyPasses) {
  std::mt19937 rng(23);
  for (const char* name : {"chain32", "loop8"}) {
    const Model m = std::string(name) == "chain32" ? make_chain(32, JointType::Spherical) : read_model_file(test::model_path(name));
    const AssemblyTree tree(m, Topology(m), 1);
    const Problem p = random_problem(m, false, 1e-6, rng);
    Tree kept(tree, p.sides), full_only(tree, p.sides, InverseMethod::Cholesky, dc::LeafBlocks::InRows, dc::BiasPasses::Never);
    const TreeResult a = tree_solve(m, p, false, Parallel{}, kept);
    const TreeResult b = tree_solve(m, p, false, Parallel{}, full_only);
    for (std::size_t i = 0; i < a.x.size(); ++i) EXPECT_EQ(a.x[i], b.x[i]) << name << ", body " << i;
    for (std::size_t j = 0; j < a.lambda.size(); ++j) EXPECT_EQ(a.lambda[j], b.lambda[j]) << name << ", joint " << j;
    EXPECT_THROW(tree_solve(m, p, false, Parallel{}, full_only, true), std::logic_error) << name;
  }
}

// The threaded passes (with the serial threshold lowered so small trees take them) give the
// serial numbers bit for bit.
TEST(TreeSolve, TwoThreadsGiveTheSerialNumbersBitForBit) {
  std::mt19937 rng(17);
  const Model m = random_graph(40, 3, 1, rng);
  const Topology topology(m);
  const Problem p = random_problem(m, false, 1e-6, rng);
  const AssemblyTree tree1(m, topology, 1), tree2(m, topology, 2);
  Tree core1(tree1, p.sides), core2(tree2, p.sides);
  const TreeResult serial = tree_solve(m, p, false, Parallel{}, core1);
  const TreeResult threaded =
      tree_solve(m, p, false, Parallel(Threading{.threads = 2, .min_parallel_bodies = 2}, 1), core2);
  for (std::size_t i = 0; i < serial.x.size(); ++i) EXPECT_EQ(serial.x[i], threaded.x[i]) << "body " << i;
}

// The nodes below a subtree's root keep their K~, b~ and f~ in stack buffers that other nodes
// reuse, so a leaf's loads can be read only in the pass; after it, joint_load() gives them from
// the multipliers. On random graphs with loops, trees cut for one, two and three threads and
// leaves in rows: every leaf's handle load read in leaf_out is joint_load()'s after the pass, bit
// for bit; and on one thread the tree holds two K~ blocks a depth and the root's.
TEST(TreeSolve, JointLoadsAfterThePassAreTheLoadsTheLeavesReadInIt) {
  std::mt19937 rng(23);
  for (int trial = 0; trial < 6; ++trial) {
    const Model m = random_graph(12 + 7 * trial, trial % 3, trial % 2, rng);
    const Topology topology(m);
    const Problem p = random_problem(m, false, trial % 2 == 0 ? 0.0 : 1e-6, rng);
    for (int threads : {1, 2, 3}) {
      const AssemblyTree tree(m, topology, threads);
      Tree core(tree, p.sides);
      std::map<std::pair<int, int>, Vec6> in_pass;  // (joint, body) -> the load read in leaf_out
      auto leaf_in = [&](int i) {
        auto& node = core.leaf(i);
        for (int a = 0; a < node.size(); ++a) {
          const Mat6& Ta = p.arm.at({i, node.handles()[static_cast<std::size_t>(a)]});
          core.set_leaf_bias(node, a, Ta.transpose() * p.beta[static_cast<std::size_t>(i)], p.rows);
          const Eigen::MatrixXd Ga = Tree::handle_rows(node, a, p.rows);
          for (int c = 0; c < node.size(); ++c) {
            const Eigen::MatrixXd Gc = Tree::handle_rows(node, c, p.rows);
            node.K_hat().block(node.o(a), node.o(c), Ga.rows(), Gc.rows()) =
                Ga * Ta.transpose() * p.M_inverse[static_cast<std::size_t>(i)] * p.arm.at({i, node.handles()[static_cast<std::size_t>(c)]}) * Gc.transpose();
          }
        }
      };
      std::mutex guard;
      auto leaf_out = [&](int i) {
        const auto& node = core.leaf(i);
        for (int a = 0; a < node.size(); ++a) {
          const std::lock_guard<std::mutex> lock(guard);
          in_pass[{node.handles()[static_cast<std::size_t>(a)], i}] = core.load(node, a, p.rows);
        }
      };
      core.solve(p.rows, Parallel(Threading{.threads = threads, .min_parallel_bodies = 2}, 1), leaf_in, leaf_out);
      const std::string what = "trial " + std::to_string(trial) + ", " + std::to_string(threads) + " thread(s)";
      ASSERT_FALSE(in_pass.empty()) << what;
      for (const auto& [key, load] : in_pass) {
        const auto [joint, body] = key;
        const bool p_side = p.sides[static_cast<std::size_t>(joint)].body_p == body;
        EXPECT_EQ(core.joint_load(joint, p_side, p.rows), load) << what << ", joint " << joint << ", body " << body;
      }
      std::set<const double*> K_blocks;
      for (int id = 0; id < static_cast<int>(tree.nodes().size()); ++id)
        if (!core.node(id).K_r().empty()) K_blocks.insert(core.node(id).K_r().data());
      if (threads == 1) {  // one subtree: two buffers a depth and the root's own
        EXPECT_LE(K_blocks.size(), static_cast<std::size_t>(2 * (tree.height() + 1) + 1)) << what << ": the nodes' blocks are not shared";
      }
    }
  }
}

// Unit rows (a tree joint's D = [I; 0]: dca's and hdca's spherical and fixed joints): the kernels
// take blocks of K and b instead of multiplying by G (a Shared leaf's, read by its parent), and a
// leaf in rows is given G b and gives back G' lambda as copies. With the flag and without it, the
// same rows give the same numbers, bit for bit, in full and bias-only passes, for leaves in rows
// and Shared ones; and the dense solution.
TEST(TreeSolve, UnitRowsGiveTheNumbersOfTheMultipliedRowsBitForBit) {
  std::mt19937 rng(41);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 12; ++trial) {
    const bool shared = trial % 2 == 1;
    ModelBuilder b("unit rows");
    const int bodies = 3 + 2 * trial;
    for (int k = 0; k < bodies; ++k) b.body(test::box("b" + std::to_string(k), {u(rng), u(rng), u(rng)}, u(rng)));
    for (int k = 0; k < bodies; ++k) {  // a random tree of spherical and fixed joints
      const int parent = std::uniform_int_distribution<int>(-1, k - 1)(rng);
      b.joint(JointSpec::at("j" + std::to_string(k), k % 3 == 2 ? JointType::Fixed : JointType::Spherical,
                            parent < 0 ? "ground" : "b" + std::to_string(parent), "b" + std::to_string(k),
                            {u(rng), u(rng), u(rng)}, Vec3::UnitZ()));
    }
    const Model m = b.build();
    const AssemblyTree tree(m, Topology(m), 1);
    Problem p = random_problem(m, shared, trial % 4 < 2 ? 0.0 : 1e-4, rng);
    for (std::size_t j = 0; j < p.rows.size(); ++j) {  // tree rows D' (x_c - x_p) with D = [I; 0]
      const double compliance = p.rows[j].compliance;
      p.rows[j].set_tree_rows(Eigen::MatrixXd::Identity(6, p.sides[j].rows));
      p.rows[j].compliance = compliance;
      ASSERT_TRUE(p.rows[j].unit_rows) << "joint " << j;
    }
    consistent_right_hand_sides(p, m.body_count(), rng);
    Problem multiplied = p;
    for (Rows& r : multiplied.rows) {  // the same rows written out, -[I 0] and [I 0], and multiplied
      const Eigen::MatrixXd G_p = r.G_p(), G_c = r.G_c();
      r.unit_rows = false;
      r.edit_G_p() = G_p;
      r.edit_G_c() = G_c;
    }
    const auto leaves = shared ? dc::LeafBlocks::Shared : dc::LeafBlocks::InRows;
    Tree unit_core(tree, p.sides, InverseMethod::Cholesky, leaves), multiplied_core(tree, p.sides, InverseMethod::Cholesky, leaves);
    for (const bool bias_only : {false, true}) {
      const TreeResult unit = tree_solve(m, p, shared, Parallel{}, unit_core, bias_only);
      const TreeResult product = tree_solve(m, multiplied, shared, Parallel{}, multiplied_core, bias_only);
      for (std::size_t i = 0; i < unit.x.size(); ++i) EXPECT_EQ(unit.x[i], product.x[i]) << "trial " << trial << ", body " << i;
      for (std::size_t j = 0; j < unit.lambda.size(); ++j)
        EXPECT_EQ(unit.lambda[j], product.lambda[j]) << "trial " << trial << ", joint " << j;
      expect_matches_dense(m, p, unit, "trial " + std::to_string(trial) + (shared ? ", shared" : ", in rows") + (bias_only ? ", bias only" : ""));
    }
  }
}

// Absolute rows that keep a point and at most two axes, G_p = -[I, -skew(l_p); 0, W],
// G_c = [I, -skew(l_c); 0, W] (ball, universal and revolute joints: what ali3 puts in the tree),
// held as their arms and axes (JointRows::hold_as_arms) are applied by cross and dot products
// instead of products with G. Random graphs of every joint type with Shared leaves (ali3's), such
// joints in the tree, in loops and repeated (redundant rows), hard and compliant: hold_as_arms
// takes exactly those three types, arm_G() writes out the very rows, and the solution is the
// written-out rows' to round-off (the same products summed in another order: 1e-12 of the largest
// entry, where both are about 1e-15 off) and the dense one, in full and bias-only passes.
/// Holds joint j's rows as arms (JointRows::hold_as_arms) where they have that form, keeping r
/// and the compliance; whether it did.
bool hold_as_arms(const Problem& written, int j, Rows& r) {
  const int n = r.rows;
  const Vec6 r_held = r.r;
  const double compliance = r.compliance;
  const bool grounded = written.sides[static_cast<std::size_t>(j)].body_p == kGround;
  if (!r.hold_as_arms(Eigen::MatrixXd(r.G_p().topRows(n)), Eigen::MatrixXd(r.G_c().topRows(n)), n, grounded)) return false;
  r.r = r_held;
  r.compliance = compliance;
  return true;
}

TEST(TreeSolve, ArmRowsGiveTheNumbersOfTheRowsTheyHold) {
  std::mt19937 rng(77);
  std::map<JointType, int> held_as_arms;
  for (int trial = 0; trial < 24; ++trial) {
    const Model m = random_graph(3 + trial % 7, trial % 3, trial % 4 == 3 ? 1 : 0, rng);
    const AssemblyTree tree(m, Topology(m), 1);
    const Problem written = random_problem(m, true, trial % 2 == 0 ? 0.0 : 1e-4, rng);
    Problem arms = written;
    for (std::size_t j = 0; j < m.joints.size(); ++j) {
      Rows& r = arms.rows[j];
      const int n = r.rows;
      const bool grounded = written.sides[j].body_p == kGround;
      const Eigen::MatrixXd G_p = r.G_p().topRows(n), G_c = r.G_c().topRows(n);
      const JointType type = m.joints[j].type;
      const bool expected = type == JointType::Spherical || type == JointType::Universal || type == JointType::Revolute;
      ASSERT_EQ(hold_as_arms(written, static_cast<int>(j), r), expected) << "trial " << trial << ", joint " << j << ", " << to_string(type);
      if (!expected) continue;
      EXPECT_EQ(r.r, written.rows[j].r);
      Tree::T::RowsMat G;
      r.arm_G(false, G);
      EXPECT_EQ(Eigen::MatrixXd(G.topRows(n)), G_c) << "trial " << trial << ", joint " << j;
      if (!grounded) {
        r.arm_G(true, G);
        EXPECT_EQ(Eigen::MatrixXd(G.topRows(n)), G_p) << "trial " << trial << ", joint " << j;
      }
      EXPECT_THROW(r.G_c(), std::logic_error);  // no G is held to read
      ++held_as_arms[type];
    }
    Tree arm_core(tree, arms.sides, InverseMethod::Cholesky, dc::LeafBlocks::Shared);
    Tree written_core(tree, written.sides, InverseMethod::Cholesky, dc::LeafBlocks::Shared);
    for (const bool bias_only : {false, true}) {
      const std::string what = "trial " + std::to_string(trial) + (bias_only ? ", bias only" : "");
      const TreeResult with_arms = tree_solve(m, arms, true, Parallel{}, arm_core, bias_only);
      const TreeResult with_G = tree_solve(m, written, true, Parallel{}, written_core, bias_only);
      double scale = 1.0;
      for (const Vec6& x : with_G.x) scale = std::max(scale, x.cwiseAbs().maxCoeff());
      for (std::size_t i = 0; i < with_G.x.size(); ++i)
        EXPECT_LT((with_arms.x[i] - with_G.x[i]).cwiseAbs().maxCoeff(), 1e-12 * scale) << what << ", body " << i;
      expect_matches_dense(m, written, with_arms, what);  // the same system, its G written out
    }
  }
  for (JointType type : {JointType::Spherical, JointType::Universal, JointType::Revolute})
    EXPECT_GT(held_as_arms[type], 3) << to_string(type) << ": the trials did hold such joints so";
}

// A leaf's K of the form diag(k I, K_w) (ali3's without geometric stiffness) held as k and K_w
// (LeafBlocks::SharedBlockDiagonal) gives exactly the numbers of the same K held in full: between
// arm rows arm_k leaves out its zero blocks, which add exact zeros, and rows of other kinds read it
// written out. Random graphs of every joint type, ball, universal and revolute joints as arms,
// hard and compliant, full and bias-only passes; and the dense solution.
TEST(TreeSolve, BlockDiagonalLeavesGiveTheNumbersOfFullOnes) {
  std::mt19937 rng(78);
  std::uniform_real_distribution<double> u(0.1, 2.0);
  int arms = 0;
  for (int trial = 0; trial < 24; ++trial) {
    const Model m = random_graph(3 + trial % 7, trial % 3, trial % 4 == 3 ? 1 : 0, rng);
    const AssemblyTree tree(m, Topology(m), 1);
    Problem written = random_problem(m, true, trial % 2 == 0 ? 0.0 : 1e-4, rng);
    for (Mat6& K : written.M_inverse) {
      const Mat6 spd = random_spd(rng);
      K.setZero();
      K.topLeftCorner<3, 3>().diagonal().setConstant(u(rng));
      K.bottomRightCorner<3, 3>() = spd.bottomRightCorner<3, 3>();
    }
    Problem p = written;
    for (std::size_t j = 0; j < m.joints.size(); ++j) arms += hold_as_arms(written, static_cast<int>(j), p.rows[j]) ? 1 : 0;
    Tree full(tree, p.sides, InverseMethod::Cholesky, dc::LeafBlocks::Shared);
    Tree diagonal(tree, p.sides, InverseMethod::Cholesky, dc::LeafBlocks::SharedBlockDiagonal);
    for (const bool bias_only : {false, true}) {
      const std::string what = "trial " + std::to_string(trial) + (bias_only ? ", bias only" : "");
      const TreeResult a = tree_solve(m, p, true, Parallel{}, full, bias_only);
      const TreeResult b = tree_solve(m, p, true, Parallel{}, diagonal, bias_only);
      for (std::size_t i = 0; i < a.x.size(); ++i) EXPECT_EQ(a.x[i], b.x[i]) << what << ", body " << i;
      for (std::size_t j = 0; j < a.lambda.size(); ++j) EXPECT_EQ(a.lambda[j], b.lambda[j]) << what << ", joint " << j;
      expect_matches_dense(m, written, b, what);
    }
  }
  EXPECT_GT(arms, 24) << "the trials held joints as arms";
  const Model chain = random_graph(1, 0, 0, rng);
  const AssemblyTree one(chain, Topology(chain), 1);
  EXPECT_THROW((dc::HandleTree<double, 3>(one, {{kGround, 0, 2}}, InverseMethod::Cholesky, dc::LeafBlocks::SharedBlockDiagonal)),
               std::invalid_argument);  // diag(k I, K_w) is a spatial K
}

// set_tree_rows keeps rows it finds flagged as the unit rows of the same D (a spherical joint's,
// pass after pass) and clears only r; any other D, or another row count, rewrites G_p and G_c.
TEST(TreeSolve, TreeRowsSetAgainAreTheRowsOfTheNewSubspace) {
  auto expect_rows = [](const Rows& r, const Eigen::MatrixXd& D, const char* what) {
    const int n = static_cast<int>(D.cols());
    EXPECT_EQ(r.rows, n) << what;
    const Eigen::MatrixXd G_c = D.transpose();  // the rows there are: n x 6
    EXPECT_EQ(Eigen::MatrixXd(r.G_c()), G_c) << what;
    EXPECT_EQ(Eigen::MatrixXd(r.G_p()), Eigen::MatrixXd(-G_c)) << what;
    EXPECT_TRUE(r.r.isZero(0.0)) << what;
  };
  const Eigen::MatrixXd unit3 = Eigen::MatrixXd::Identity(6, 3), unit2 = Eigen::MatrixXd::Identity(6, 2);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const Eigen::MatrixXd turned = Eigen::HouseholderQR<Eigen::MatrixXd>(Eigen::MatrixXd::NullaryExpr(6, 3, [&] { return u(rng); }))
                                     .householderQ() * Eigen::MatrixXd::Identity(6, 3);
  struct Step {
    const Eigen::MatrixXd* D;
    bool unit;
    const char* what;
  };
  const Step steps[] = {{&unit3, true, "unit rows"},
                        {&unit3, true, "unit rows kept, r cleared"},
                        {&turned, false, "a turned subspace"},
                        {&unit3, true, "unit rows after a turned subspace"},
                        {&unit2, true, "fewer unit rows"}};
  Rows r;
  for (const Step& step : steps) {
    r.r.setConstant(5.0);  // what the last pass left in r
    r.set_tree_rows(*step.D);
    EXPECT_EQ(r.unit_rows, step.unit) << step.what;
    expect_rows(r, *step.D, step.what);
  }
}

TEST(TreeSolve, RefusesAJointWithMoreRowsThanTheTreesDimension) {
  std::mt19937 rng(3);
  const Model m = random_graph(3, 0, 0, rng);
  const AssemblyTree tree(m, Topology(m), 1);
  std::vector<dc::JointSides> sides(m.joints.size());
  for (std::size_t j = 0; j < sides.size(); ++j) sides[j] = {m.joints[j].parent, m.joints[j].child, 2};
  sides[1].rows = 4;
  EXPECT_THROW((dc::HandleTree<double, 3>(tree, sides)), std::invalid_argument);
}

// JointRows holds G_p and G_c in exactly its rows (rows x Dim views): rows written stay when the
// count grows (the new rows zero), reset() zeroes them in place, copies are deep and, into rows
// of the same size, allocate nothing; unit rows and rows never written read as constants.
TEST(JointRows, HoldsExactlyItsRowsKeepsThemAsTheyGrowAndCopiesDeeply) {
  Rows r;
  EXPECT_EQ(r.G_p().rows(), 0);
  r.reset(3);
  EXPECT_EQ(r.G_c().rows(), 3);
  EXPECT_TRUE(r.G_c().isZero(0.0));  // never written: zero
  const Eigen::Matrix<double, 3, 6> P = Eigen::Matrix<double, 3, 6>::Random(), C = Eigen::Matrix<double, 3, 6>::Random();
  r.edit_G_p() = P;
  r.edit_G_c() = C;
  EXPECT_EQ(Eigen::MatrixXd(r.G_p()), Eigen::MatrixXd(P));
  EXPECT_EQ(Eigen::MatrixXd(r.G_c()), Eigen::MatrixXd(C));

  r.rows = 5;  // a count raised by hand: the rows written before are kept when next written
  r.edit_G_c().row(4).setConstant(7.0);
  ASSERT_EQ(r.G_p().rows(), 5);
  EXPECT_EQ(Eigen::MatrixXd(r.G_p().topRows(3)), Eigen::MatrixXd(P));
  EXPECT_EQ(Eigen::MatrixXd(r.G_c().topRows(3)), Eigen::MatrixXd(C));
  EXPECT_TRUE(r.G_p().bottomRows(2).isZero(0.0));
  EXPECT_TRUE(r.G_c().row(3).isZero(0.0));
  EXPECT_TRUE((r.G_c().row(4).array() == 7.0).all());

  Rows copy = r;  // deep
  copy.edit_G_p()(0, 0) = 42.0;
  EXPECT_EQ(r.G_p()(0, 0), P(0, 0));
  EXPECT_EQ(Eigen::MatrixXd(copy.G_c()), Eigen::MatrixXd(r.G_c()));
  copy = r;  // into a block of the same size: in place (counted below)
  r.reset(5);
  EXPECT_EQ(Eigen::MatrixXd(copy.G_p().topRows(3)), Eigen::MatrixXd(P));
  EXPECT_TRUE(r.G_p().isZero(0.0) && r.G_c().isZero(0.0) && r.r.isZero(0.0));  // reset: zero, in place
  EXPECT_EQ(r.G_p().rows(), 5);

  Rows unit;
  unit.set_tree_rows(Eigen::MatrixXd::Identity(6, 3));
  ASSERT_TRUE(unit.unit_rows);
  Eigen::MatrixXd I3 = Eigen::MatrixXd::Zero(3, 6);
  I3.leftCols(3).setIdentity();
  EXPECT_EQ(Eigen::MatrixXd(unit.G_c()), I3);
  EXPECT_EQ(Eigen::MatrixXd(unit.G_p()), Eigen::MatrixXd(-I3));

  TREEDYN_SKIP_UNLESS_ALLOCATIONS_COUNTED();
  test::CountAllocations counting;
  copy = r;
  r.reset(5);
  EXPECT_EQ(counting.count(), 0);
}
