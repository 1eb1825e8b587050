#include "treedyn/topology.hpp"

#include <Eigen/SparseCore>
#include <Eigen/SparseCholesky>
#include <Eigen/Eigenvalues>
#include <Eigen/OrderingMethods>
#include <Eigen/SparseQR>
#ifdef TREEDYN_HAVE_SPQR
#include <Eigen/SPQRSupport>
#endif
#include <stdexcept>
#include <cmath>
#include <utility>
#include <algorithm>
#include <deque>
#include <functional>
#include <limits>

#include "treedyn/kinematics.hpp"

namespace treedyn {
namespace {

/// The loop part of the constraint Jacobian at a state. The spanning tree's joint equations are
/// independent (each tree joint brings a new body, and a joint's rows have full rank on its
/// child), so rank J = rows(J_t) + rank(J_l P_t), where J_l holds the loop-closing joints' and
/// drivers' rows and P_t projects onto the null space of J_t:
///   rank(J_l P_t) = rank(S),  S = J_l J_l' - J_l J_t' (J_t J_t')^-1 J_t J_l'
/// (S sparse: a sparse Cholesky of J_t J_t', whose factor follows the spanning tree, solved for
/// the sparse J_t J_l'). Returns rows(J_t) and S (empty without loops or drivers).
std::pair<int, Eigen::SparseMatrix<double>> loop_complement(const Model& model, const std::vector<char>& in_tree,
                                                            const SystemState& state) {
  const ConstraintSet constraints(model);
  if (constraints.rows() == 0) return {0, {}};
  std::vector<ConstraintBlock> blocks;
  constraints.evaluate(0.0, state, blocks, ConstraintParts::without_jdot());
  std::vector<Eigen::Triplet<double>> tree_entries, loop_entries;
  int tree_rows = 0, loop_rows = 0;
  for (int k = 0; k < constraints.block_count(); ++k) {
    const ConstraintBlock& b = blocks[static_cast<std::size_t>(k)];
    const bool tree = k < model.joint_count() && in_tree[static_cast<std::size_t>(k)];
    int& row0 = tree ? tree_rows : loop_rows;
    auto& entries = tree ? tree_entries : loop_entries;
    for (int r = 0; r < b.size(); ++r)
      for (int c = 0; c < 6; ++c) {
        if (b.parent != kGround && b.J_P(r, c) != 0.0) entries.emplace_back(row0 + r, 6 * b.parent + c, b.J_P(r, c));
        if (b.child != kGround && b.J_C(r, c) != 0.0) entries.emplace_back(row0 + r, 6 * b.child + c, b.J_C(r, c));
      }
    row0 += b.size();
  }
  if (loop_rows == 0) return {tree_rows, {}};
  const int n6 = 6 * model.body_count();
  Eigen::SparseMatrix<double> Jt(tree_rows, n6), Jl(loop_rows, n6);
  Jt.setFromTriplets(tree_entries.begin(), tree_entries.end());
  Jl.setFromTriplets(loop_entries.begin(), loop_entries.end());
  Eigen::SparseMatrix<double> S = Jl * Jl.transpose();
  if (tree_rows > 0) {
    Eigen::SimplicialLDLT<Eigen::SparseMatrix<double>> ldlt(Jt * Jt.transpose());
    const Eigen::SparseMatrix<double> JtJl = Jt * Jl.transpose();
    const Eigen::SparseMatrix<double> X = ldlt.solve(JtJl);
    S = S - Eigen::SparseMatrix<double>(JtJl.transpose() * X);
  }
  return {tree_rows, S};
}

/// Eigenvalues of S, largest first (squared singular values of J_l P_t).
Eigen::VectorXd loop_eigenvalues(const Eigen::SparseMatrix<double>& S) {
  if (S.rows() == 0) return {};
  return Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(Eigen::MatrixXd(S), Eigen::EigenvaluesOnly).eigenvalues().reverse();
}

/// Rows of the loop-closing joints and drivers (those not in the spanning tree).
int loop_row_count(const Model& model, const std::vector<char>& in_tree) {
  const ConstraintSet constraints(model);
  int rows = constraints.rows();
  for (int j = 0; j < model.joint_count(); ++j)
    if (in_tree[static_cast<std::size_t>(j)]) rows -= joint_constraint_count(model.joints[static_cast<std::size_t>(j)].type);
  return rows;
}

/// Dense rank of J: the spanning tree's rows, plus S's eigenvalues above kRankCutoff times its
/// largest (cubic in the loop rows).
int dense_jacobian_rank(const Model& model, const std::vector<char>& in_tree) {
  const auto [tree_rows, S] = loop_complement(model, in_tree, initial_state(model));
  if (S.rows() == 0) return tree_rows;
  const Eigen::VectorXd eig = loop_eigenvalues(S);
  const double largest = std::max(eig.cwiseAbs().maxCoeff(), 1e-300);
  return tree_rows + static_cast<int>((eig.array() > kRankCutoff * largest).count());
}

#ifdef TREEDYN_HAVE_SPQR
/// Sparse rank of J by SuiteSparseQR (Heath's rank detection in a multifrontal QR, COLAMD order)
/// of J' at the initial configuration: a column of J' (an equation) whose remaining norm falls
/// below sqrt(kRankCutoff) times the largest equation's norm is dependent. That is the singular
/// value counterpart of the dense cutoff on S's eigenvalues. Linear in a ladder's loops: 0.12 s
/// at 4,000 loops (docs/benchmarks.md "Ladders").
int sparse_jacobian_rank(const Model& model, const std::vector<char>&) {
  const ConstraintSet constraints(model);
  if (constraints.rows() == 0) return 0;
  std::vector<ConstraintBlock> blocks;
  constraints.evaluate(0.0, initial_state(model), blocks, ConstraintParts::without_jdot());
  Eigen::SparseMatrix<double> J;
  Eigen::VectorXd phi, phi_t, gamma;
  constraints.stack(blocks, J, phi, phi_t, gamma);
  const Eigen::SparseMatrix<double> Jtransposed = J.transpose();
  double largest = 1e-300;
  for (int c = 0; c < Jtransposed.outerSize(); ++c) largest = std::max(largest, Jtransposed.col(c).norm());
  Eigen::SPQR<Eigen::SparseMatrix<double>> qr;
  qr.setPivotThreshold(std::sqrt(kRankCutoff) * largest);
  qr.compute(Jtransposed);
  if (qr.info() != Eigen::Success) throw std::runtime_error("Topology: SuiteSparseQR could not factor the constraint Jacobian");
  return static_cast<int>(qr.rank());
}
#else
/// Sparse rank of J without SuiteSparseQR: Eigen's SparseQR of S in the loops' own order. R's
/// diagonal stands for S's eigenvalues (S is symmetric positive semi-definite): a column whose
/// remaining norm falls below the cutoff times S's largest column norm counts as dependent.
/// Slower than SuiteSparseQR (Eigen shifts its rows at each dependent column: about cubic in a
/// ladder's loops, 1.4 s at 1,000 loops) and O(rows x loop rows) for S itself.
int sparse_jacobian_rank(const Model& model, const std::vector<char>& in_tree) {
  const auto [tree_rows, S] = loop_complement(model, in_tree, initial_state(model));
  if (S.rows() == 0) return tree_rows;
  double largest = 1e-300;
  for (int c = 0; c < S.outerSize(); ++c) largest = std::max(largest, S.col(c).norm());
  Eigen::SparseQR<Eigen::SparseMatrix<double>, Eigen::NaturalOrdering<int>> qr;
  qr.setPivotThreshold(kRankCutoff * largest);
  Eigen::SparseMatrix<double> compressed = S;
  compressed.makeCompressed();
  qr.compute(compressed);
  return tree_rows + static_cast<int>(qr.rank());
}
#endif

/// Rank of the constraint Jacobian at the initial configuration. Without loop-closing joints or
/// drivers it is the spanning tree's row count, with nothing to evaluate (loop_complement): a
/// chain of 65,536 bodies evaluated every joint's rows for it, 0.7 s of its set-up.
int initial_jacobian_rank(const Model& model, const std::vector<char>& in_tree, RankMethod method) {
  const int loop_rows = loop_row_count(model, in_tree);
  if (loop_rows == 0) return model.constraint_equation_count();
  if (method == RankMethod::Automatic) method = loop_rows <= kDenseRankRows ? RankMethod::Dense : RankMethod::Sparse;
  return method == RankMethod::Dense ? dense_jacobian_rank(model, in_tree) : sparse_jacobian_rank(model, in_tree);
}

int other_end(const Joint& j, int body) { return j.parent == body ? j.child : j.parent; }

}  // namespace

Topology::Topology(const Model& model, RankMethod rank_method)
    : body_count_(model.body_count()),
      equations_(model.constraint_equation_count()),
      tree_joint_of_(static_cast<std::size_t>(model.body_count()), -1),
      tree_parent_of_(static_cast<std::size_t>(model.body_count()), kNoBody),
      body_joint_offset_(static_cast<std::size_t>(model.body_count()) + 1, 0) {
  std::vector<int> ground_joints;
  for (const Joint& joint : model.joints)  // each body's joint count, then their offsets
    for (int b : {joint.parent, joint.child})
      if (b != kGround) ++body_joint_offset_[static_cast<std::size_t>(b) + 1];
  for (std::size_t b = 1; b < body_joint_offset_.size(); ++b) body_joint_offset_[b] += body_joint_offset_[b - 1];
  body_joints_.resize(body_joint_offset_.back());
  std::vector<std::size_t> filled(body_joint_offset_.begin(), body_joint_offset_.end() - 1);
  for (int j = 0; j < model.joint_count(); ++j) {  // in joint order: each body's list ascends
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    for (int b : {joint.parent, joint.child}) {
      if (b == kGround) ground_joints.push_back(j);
      else body_joints_[filled[static_cast<std::size_t>(b)]++] = j;
    }
  }
  constexpr int kGroundComponent = -2, kUnreached = -1;
  std::vector<int> component(static_cast<std::size_t>(body_count_), kUnreached);
  std::vector<char> in_tree(model.joints.size(), 0);
  std::vector<int> depth_of(static_cast<std::size_t>(body_count_), 0);  // tree joints from the root
  // Breadth-first spanning forest: from ground first, then from each unreached body.
  auto grow = [&](int start, int component_id) {
    std::deque<int> queue{start};
    while (!queue.empty()) {
      const int body = queue.front();
      queue.pop_front();
      for (int j : body == kGround ? std::span<const int>(ground_joints) : joints_of(body)) {
        const Joint& joint = model.joints[static_cast<std::size_t>(j)];
        if (in_tree[static_cast<std::size_t>(j)]) continue;
        const int next = other_end(joint, body);
        if (next == kGround || component[static_cast<std::size_t>(next)] != kUnreached) continue;
        component[static_cast<std::size_t>(next)] = component_id;
        in_tree[static_cast<std::size_t>(j)] = 1;
        tree_joints_.push_back(j);
        tree_joint_of_[static_cast<std::size_t>(next)] = j;
        tree_parent_of_[static_cast<std::size_t>(next)] = body;
        const int depth = (body == kGround ? 0 : depth_of[static_cast<std::size_t>(body)]) + 1;
        depth_of[static_cast<std::size_t>(next)] = depth;
        depth_ = std::max(depth_, depth);
        queue.push_back(next);
      }
    }
  };
  grow(kGround, kGroundComponent);
  for (int b = 0; b < body_count_; ++b) {
    if (component[static_cast<std::size_t>(b)] != kUnreached) continue;
    const int id = static_cast<int>(floating_.size());
    component[static_cast<std::size_t>(b)] = id;
    grow(b, id);
    floating_.emplace_back();
  }
  for (int b = 0; b < body_count_; ++b)
    if (component[static_cast<std::size_t>(b)] >= 0) floating_[static_cast<std::size_t>(component[static_cast<std::size_t>(b)])].push_back(b);
  for (int j = 0; j < model.joint_count(); ++j)
    if (!in_tree[static_cast<std::size_t>(j)]) loop_joints_.push_back(j);
  rank_ = rank_method == RankMethod::None ? -1 : initial_jacobian_rank(model, in_tree, rank_method);
}

double Topology::loop_conditioning(const Model& model, const SystemState& state) const {
  std::vector<char> in_tree(model.joints.size(), 1);
  for (int j : loop_joints_) in_tree[static_cast<std::size_t>(j)] = 0;
  const auto [tree_rows, S] = loop_complement(model, in_tree, state);
  const Eigen::VectorXd eig = loop_eigenvalues(S);
  const int k = ranked() - tree_rows;  // the loop rows' singular values that count at t0
  if (k <= 0 || eig.size() < k || !(eig(0) > 0.0)) return 1.0;
  return std::sqrt(std::max(eig(k - 1), 0.0) / eig(0));
}

// ---------------------------------------------------------------------------------------------

namespace {

/// Levels of a balanced binary tree over n leaves: ceil(log2 n).
int ceil_log2(std::size_t n) {
  int levels = 0;
  while ((std::size_t{1} << levels) < n) ++levels;
  return levels;
}

}  // namespace

AssemblyTree::AssemblyTree(const Model& model, const Topology& topology, int threads)
    : leaf_of_(static_cast<std::size_t>(model.body_count()), -1) {
  if (topology.body_count() != model.body_count())
    throw std::invalid_argument("AssemblyTree: the topology is of another model (" + std::to_string(topology.body_count()) +
                                " bodies; the model has " + std::to_string(model.body_count()) + ")");
  const auto n = static_cast<std::size_t>(model.body_count());
  Context ctx{topology, std::vector<std::vector<int>>(n), {}, std::vector<char>(n, 0), std::vector<char>(n, 0)};
  for (int j = 0; j < model.joint_count(); ++j) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    ctx.ends.emplace_back(joint.parent, joint.child);
    if (joint.parent != kGround && joint.child != kGround) {
      ctx.neighbours[static_cast<std::size_t>(joint.parent)].push_back(joint.child);
      ctx.neighbours[static_cast<std::size_t>(joint.child)].push_back(joint.parent);
    }
  }
  // Start from the bodies in spanning-tree order (ground side first), then floating ones.
  std::vector<int> order;
  std::vector<char> listed(static_cast<std::size_t>(model.body_count()), 0);
  for (int j : topology.tree_joints()) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    for (int b : {joint.parent, joint.child})
      if (b != kGround && !listed[static_cast<std::size_t>(b)]) {
        listed[static_cast<std::size_t>(b)] = 1;
        order.push_back(b);
      }
  }
  for (int b = 0; b < model.body_count(); ++b)
    if (!listed[static_cast<std::size_t>(b)]) order.push_back(b);
  // Height budget: the halves' ceil(log2 n) levels and two more, which splits at one joint may
  // take (MuJoCo's humanoid: one more level kept a third of the time those splits save, two all
  // of it; docs/benchmarks.md, "Against MuJoCo").
  root_ = build(order, ctx, ceil_log2(order.size()) + 2);
  number_in_postorder();
  attach_joints(model);
  links_.reserve(nodes_.size());
  for (const AssemblyNode& a : nodes_) links_.push_back({a.left, a.right, a.body});
  levels_.assign(static_cast<std::size_t>(height() + 1), {});
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) levels_[static_cast<std::size_t>(node(id).height)].push_back(id);
  cut_subtrees(threads);
}

// build() numbers the nodes in pre-order (a parent before its subtree). The passes visit each
// subtree in post-order, so with that numbering every inner node's record, here and in the
// formulations' trees (HandleTree::Node, indexed alike), lies a whole subtree back from the one
// visited before it: on large trees, a read from memory that the prefetchers had not foreseen.
// Numbered in post-order, a subtree's nodes are a run of consecutive ids that the assembly visits
// forwards and the disassembly backwards.
void AssemblyTree::number_in_postorder() {
  std::vector<int> order;  // old ids in post-order
  order.reserve(nodes_.size());
  append_postorder(root_, order);
  std::vector<int> new_id(nodes_.size(), -1);
  for (std::size_t k = 0; k < order.size(); ++k) new_id[static_cast<std::size_t>(order[k])] = static_cast<int>(k);
  auto renumber = [&](int id) { return id < 0 ? id : new_id[static_cast<std::size_t>(id)]; };
  std::vector<AssemblyNode> renumbered(nodes_.size());
  for (std::size_t k = 0; k < order.size(); ++k) {
    AssemblyNode& n = renumbered[k] = std::move(nodes_[static_cast<std::size_t>(order[k])]);
    n.left = renumber(n.left);
    n.right = renumber(n.right);
    n.parent = renumber(n.parent);
  }
  nodes_ = std::move(renumbered);
  for (int& leaf : leaf_of_) leaf = renumber(leaf);
  root_ = renumber(root_);
  for (AssemblyNode& n : nodes_)  // children before parents: a subtree's ids run from its left child's first
    n.first = n.is_leaf() ? static_cast<int>(&n - nodes_.data()) : node(n.left).first;
}

// The subtree under `id` in post-order (children before parents, left before right), appended.
void AssemblyTree::append_postorder(int id, std::vector<int>& out) const {
  std::vector<std::pair<int, bool>> stack{{id, false}};  // (node, its children pushed)
  while (!stack.empty()) {
    const auto [top, expanded] = stack.back();
    stack.pop_back();
    const AssemblyNode& n = node(top);
    if (n.is_leaf() || expanded) {
      out.push_back(top);
      continue;
    }
    stack.push_back({top, true});
    stack.push_back({n.right, false});
    stack.push_back({n.left, false});
  }
}

void AssemblyTree::cut_subtrees(int threads) {
  int split = 0;  // levels above the cut
  while ((1 << split) < threads) ++split;
  if (threads > 1 && (threads & (threads - 1)) != 0) split += 2;
  const int cut = std::max(0, height() - split);
  std::function<void(int)> visit = [&](int id) {  // left to right
    const AssemblyNode& n = node(id);
    if (n.height <= cut) {
      subtrees_.emplace_back();
      append_postorder(id, subtrees_.back());
      return;
    }
    visit(n.left);
    visit(n.right);
  };
  visit(root_);
  upper_levels_.assign(static_cast<std::size_t>(std::max(0, height() - cut)), {});
  for (int h = cut + 1; h <= height(); ++h)
    for (int id : levels_[static_cast<std::size_t>(h)]) upper_levels_[static_cast<std::size_t>(h - cut - 1)].push_back(id);
}

namespace {

/// Breadth-first order of `bodies` inside the subset, each component from its first listed body
/// (`start` is listed first); the number of components into `components` when given. The order
/// is its own queue: a body is listed when it is reached.
std::vector<int> bfs_order(const std::vector<int>& bodies, int start, const std::vector<std::vector<int>>& neighbours,
                           std::vector<char>& member, std::vector<char>& seen, int* components = nullptr) {
  for (int b : bodies) {
    member[static_cast<std::size_t>(b)] = 1;
    seen[static_cast<std::size_t>(b)] = 0;
  }
  std::vector<int> order;
  order.reserve(bodies.size());
  int found = 0;
  auto visit = [&](int first) {
    if (seen[static_cast<std::size_t>(first)]) return;
    ++found;
    seen[static_cast<std::size_t>(first)] = 1;
    order.push_back(first);
    for (std::size_t k = order.size() - 1; k < order.size(); ++k)
      for (int n : neighbours[static_cast<std::size_t>(order[k])])
        if (member[static_cast<std::size_t>(n)] && !seen[static_cast<std::size_t>(n)]) {
          seen[static_cast<std::size_t>(n)] = 1;
          order.push_back(n);
        }
  };
  visit(start);
  for (int b : bodies) visit(b);
  for (int b : bodies) member[static_cast<std::size_t>(b)] = 0;
  if (components) *components = found;
  return order;
}

/// Number of joints with exactly one end among `bodies`: the handles of a node holding them
/// (joints to ground are not: they are eliminated just above their body's leaf).
int handle_count(const std::vector<int>& bodies, const Topology& topology, const std::vector<std::pair<int, int>>& ends,
                 std::vector<char>& member) {
  for (int b : bodies) member[static_cast<std::size_t>(b)] = 1;
  int count = 0;
  for (int b : bodies)
    for (int j : topology.joints_of(b)) {
      const auto [p, c] = ends[static_cast<std::size_t>(j)];
      if (p < 0 || c < 0) continue;
      if (member[static_cast<std::size_t>(p)] != member[static_cast<std::size_t>(c)]) ++count;  // once: from the end inside
    }
  for (int b : bodies) member[static_cast<std::size_t>(b)] = 0;
  return count;
}

/// The splits of `bodies` at one joint: for each joint inside the subset whose two ends no other
/// path inside it connects (a bridge of the subset's graph), the bodies on one side, in
/// breadth-first order, then the rest; with the size of the first part. What a node joined at
/// one joint eliminates alone (the single-joint kernel) where halves of a breadth-first order
/// may cut a branched tree at several (MuJoCo's humanoid: its hips and an elbow at once). For a
/// small subset: each candidate joint costs a search of the subset.
std::vector<std::pair<std::vector<int>, std::size_t>> single_joint_splits(const std::vector<int>& bodies,
                                                                          const std::vector<std::vector<int>>& neighbours,
                                                                          std::vector<char>& member, std::vector<char>& seen) {
  std::vector<std::pair<std::vector<int>, std::size_t>> splits;
  for (int b : bodies) member[static_cast<std::size_t>(b)] = 1;
  for (int u : bodies)
    for (int v : neighbours[static_cast<std::size_t>(u)]) {
      const auto& around = neighbours[static_cast<std::size_t>(u)];
      if (v <= u || !member[static_cast<std::size_t>(v)] || std::count(around.begin(), around.end(), v) != 1) continue;
      for (int b : bodies) seen[static_cast<std::size_t>(b)] = 0;
      std::vector<int> side{u};  // reached from u without the joint u-v
      seen[static_cast<std::size_t>(u)] = 1;
      for (std::size_t k = 0; k < side.size(); ++k) {
        const int b = side[k];
        for (int n : neighbours[static_cast<std::size_t>(b)])
          if (member[static_cast<std::size_t>(n)] && !seen[static_cast<std::size_t>(n)] && !(b == u && n == v)) {
            seen[static_cast<std::size_t>(n)] = 1;
            side.push_back(n);
          }
      }
      if (seen[static_cast<std::size_t>(v)]) continue;  // another path: not a bridge
      const std::size_t first = side.size();
      for (int b : bodies)
        if (!seen[static_cast<std::size_t>(b)]) side.push_back(b);
      splits.emplace_back(std::move(side), first);
    }
  for (int b : bodies) member[static_cast<std::size_t>(b)] = 0;
  return splits;
}

}  // namespace

int AssemblyTree::build(std::vector<int> bodies, const Context& ctx, int budget) {
  const int id = static_cast<int>(nodes_.size());
  nodes_.emplace_back();
  if (bodies.size() == 1) {
    nodes_[static_cast<std::size_t>(id)].body = bodies[0];
    leaf_of_[static_cast<std::size_t>(bodies[0])] = id;
    return id;
  }
  // Split a breadth-first order in halves; among the starting bodies tried, keep the split whose
  // halves carry the fewest handles (the most of either first, then the total). A small subset
  // may also split at one joint into unequal parts, kept only where it carries strictly fewer
  // handles than the best halves (a chain's halves are such a split already: chains keep theirs)
  // and its larger part fits the height left (budget - 1 levels; halves always do).
  const std::size_t half = (bodies.size() + 1) / 2;
  const bool small = bodies.size() <= 64;
  std::vector<int> best;
  std::size_t best_split = half;
  std::pair<int, int> best_score{std::numeric_limits<int>::max(), 0};
  auto consider = [&](std::vector<int>&& order, std::size_t split) {
    const auto at = order.begin() + static_cast<std::ptrdiff_t>(split);
    const int a = handle_count({order.begin(), at}, ctx.topology, ctx.ends, ctx.member);
    const int b = handle_count({at, order.end()}, ctx.topology, ctx.ends, ctx.member);
    const std::pair<int, int> score{std::max(a, b), a + b};
    if (score < best_score) {
      best_score = score;
      best = std::move(order);
      best_split = split;
    }
  };
  int components = 0;
  consider(bfs_order(bodies, bodies[0], ctx.neighbours, ctx.member, ctx.seen, &components), half);
  if (small) {
    // No split scores below (ceil(L/2), L): each of the subset's own H handles is a handle of
    // exactly one part, and where the subset is connected every split cuts one of its joints at
    // least, a handle of both parts (L = H + 2; H where it is not). A candidate is kept only if it
    // scores strictly lower, so once the best reaches that bound the rest are not tried: the same
    // tree, without a chain's search of every start and joint (quadratic in the subset's size).
    const int L = handle_count(bodies, ctx.topology, ctx.ends, ctx.member) + (components == 1 ? 2 : 0);
    auto unbeatable = [&] { return best_score == std::pair<int, int>{(L + 1) / 2, L}; };
    for (std::size_t k = 1; k < bodies.size() && !unbeatable(); ++k)
      consider(bfs_order(bodies, bodies[k], ctx.neighbours, ctx.member, ctx.seen), half);
    if (!unbeatable())
      for (auto& [order, split] : single_joint_splits(bodies, ctx.neighbours, ctx.member, ctx.seen))
        if (ceil_log2(std::max(split, order.size() - split)) <= budget - 1) consider(std::move(order), split);
  }
  const auto at = best.begin() + static_cast<std::ptrdiff_t>(best_split);
  const int left = build(std::vector<int>(best.begin(), at), ctx, budget - 1);
  const int right = build(std::vector<int>(at, best.end()), ctx, budget - 1);
  AssemblyNode& n = nodes_[static_cast<std::size_t>(id)];
  n.left = left;
  n.right = right;
  n.height = 1 + std::max(node(left).height, node(right).height);
  nodes_[static_cast<std::size_t>(left)].parent = id;
  nodes_[static_cast<std::size_t>(right)].parent = id;
  return id;
}

void AssemblyTree::attach_joints(const Model& model) {
  // Each node's lists, laid out node after node in id order (the passes' order) in joints_, which
  // the nodes point into: each list in joint order. Two walks over the joints, one to count and one
  // to place, with no list of its own per node or per joint.
  const std::size_t count = nodes_.size();
  for (AssemblyNode& n : nodes_) n.eliminated_count = n.handle_count = 0;
  // visit(j, e, h): e(node) for the node that eliminates joint j, h(node) for each node it is a handle of.
  auto visit = [&](int j, auto&& e, auto&& h) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    if (joint.parent == kGround || joint.child == kGround) {
      // A handle of its body's leaf, eliminated where the leaf joins its sibling (one-sided:
      // ground has no equations of its own); the root's handle when the model is one body.
      const int leaf = leaf_of(joint.parent == kGround ? joint.child : joint.parent);
      h(leaf);
      if (const int up = node(leaf).parent; up != -1) e(up);
      return;
    }
    // Eliminated at the lowest node holding both bodies (post-order: a subtree is a run of ids);
    // a handle of every node below it on the way up from either body's leaf.
    int lca = leaf_of(joint.parent);
    while (!contains(lca, joint.child)) lca = node(lca).parent;
    e(lca);
    for (const int body : {joint.parent, joint.child})
      for (int id = leaf_of(body); id != lca; id = node(id).parent) h(id);
  };
  for (int j = 0; j < model.joint_count(); ++j)
    visit(j, [&](int id) { ++nodes_[static_cast<std::size_t>(id)].eliminated_count; },
          [&](int id) { ++nodes_[static_cast<std::size_t>(id)].handle_count; });
  std::vector<std::size_t> next_eliminated(count), next_handle(count);  // where each list's next joint goes
  std::size_t total = 0;
  for (std::size_t id = 0; id < count; ++id) {
    next_eliminated[id] = total;
    next_handle[id] = total + static_cast<std::size_t>(nodes_[id].eliminated_count);
    total = next_handle[id] + static_cast<std::size_t>(nodes_[id].handle_count);
  }
  joints_.assign(total, -1);  // not resized below: the nodes' pointers stay valid
  for (std::size_t id = 0; id < count; ++id) nodes_[id].joints_at = joints_.data() + next_eliminated[id];
  for (int j = 0; j < model.joint_count(); ++j)
    visit(j, [&](int id) { joints_[next_eliminated[static_cast<std::size_t>(id)]++] = j; },
          [&](int id) { joints_[next_handle[static_cast<std::size_t>(id)]++] = j; });
}

std::vector<int> AssemblyTree::bodies(int id) const {
  std::vector<int> out;
  for (int k = node(id).first; k <= id; ++k)
    if (node(k).is_leaf()) out.push_back(node(k).body);
  std::sort(out.begin(), out.end());
  return out;
}

int AssemblyTree::max_handles() const {
  std::size_t m = 0;
  for (const auto& n : nodes_) m = std::max(m, n.handles().size());
  return static_cast<int>(m);
}

std::string AssemblyTree::to_ascii(const Model& model) const {
  std::string out;
  auto names = [&](std::span<const int> joints) {
    std::string s;
    for (int j : joints) s += (s.empty() ? "" : ",") + model.joints[static_cast<std::size_t>(j)].name;
    return s;
  };
  std::function<void(int, const std::string&, bool, bool)> draw = [&](int id, const std::string& prefix, bool last, bool top) {
    const AssemblyNode& n = node(id);
    out += top ? "" : prefix + (last ? "└── " : "├── ");
    if (n.is_leaf()) {
      out += model.bodies[static_cast<std::size_t>(n.body)].name;
    } else {
      out += "(" + names(n.eliminated()) + ")";
    }
    if (!n.handles().empty() && (top || !n.is_leaf())) out += " handles " + names(n.handles());
    out += "\n";
    if (n.is_leaf()) return;
    const std::string child_prefix = top ? "" : prefix + (last ? "    " : "│   ");
    draw(n.left, child_prefix, false, false);
    draw(n.right, child_prefix, true, false);
  };
  draw(root_, "", true, true);
  return out;
}

}  // namespace treedyn
