// treedyn — the graph of a model and the assembly tree every divide-and-conquer formulation runs on.
//
// The problem. A divide-and-conquer formulation (DCA, HDCA, ALi3-DCA) eliminates joints pairwise:
// it writes equations for each body at its handles, assembles two (compound) bodies into one by
// eliminating the loads of the joints between them, and repeats up a binary tree until one body is
// left, whose remaining handles meet the ground. The tree decides both the cost (the number and
// size of the handles each node carries) and the parallelism (the height of the tree).
//
// Required: every joint between bodies is eliminated at exactly one node, the lowest node holding
// both its bodies; a joint to ground at the parent of its body's leaf, one-sided (ground has no
// equations), so that no node above carries it: a model with many ground pivots (a ladder of
// coupled four-bars) keeps few handles per node (the root's handles when the model is one body);
// the tree serves chains, trees, single and coupled loops alike. Desired: height ceil(log2 n)
// for n bodies, and few handles per node.
//
// How: recursive bisection. A node's bodies are ordered by breadth-first search inside the node and
// split into a first and a second half; the search is started from each body in turn (up to 64
// bodies; larger nodes start from the body nearest the ground) and the split whose halves carry
// the fewest handles is kept. For a chain the halves are sub-chains (one joint eliminated per
// node, two handles); for a loop they are arcs; for a tree the first half is a connected
// neighbourhood.
#pragma once

#include <span>
#include <string>
#include <stdexcept>
#include <vector>

#include "treedyn/kinematics.hpp"
#include "treedyn/model.hpp"

namespace treedyn {

/// "No body": the tree parent of a floating sub-system's first body.
inline constexpr int kNoBody = -2;

/// How Topology ranks the constraint Jacobian J (Topology::jacobian_rank). Dense: the spanning
/// tree's rows plus the eigenvalues of the loops' dense complement S above kRankCutoff times its
/// largest (cubic in the loop rows). Sparse: SuiteSparseQR of J' (linear on a ladder of loops),
/// an equation whose remaining norm falls below sqrt(kRankCutoff) times the largest equation's
/// norm being dependent; in a build without SuiteSparseQR, Eigen's SparseQR of S (slower).
/// Automatic: Dense up to kDenseRankRows loop rows. None: not ranked, for what needs only the
/// spanning tree (the Simulator's CoordinateMap): jacobian_rank(), mobility(),
/// redundant_constraints() and loop_conditioning() then throw std::logic_error.
enum class RankMethod { Automatic, Dense, Sparse, None };
inline constexpr int kDenseRankRows = 300;
inline constexpr double kRankCutoff = 1e-10;  // on eigenvalues of S: 1e-5 on the singular values of J_l P_t

class Topology {
 public:
  /// `rank_method`: how jacobian_rank() is found (RankMethod; tests compare the two).
  explicit Topology(const Model& model, RankMethod rank_method = RankMethod::Automatic);

  /// Joints of the spanning tree grown from ground (then from each floating sub-system's first
  /// body), in the order the search reached them.
  const std::vector<int>& tree_joints() const { return tree_joints_; }
  /// Loop-closing joints: those not in the spanning tree (cut joints of the joint-coordinate
  /// formulations).
  const std::vector<int>& loop_joints() const { return loop_joints_; }
  /// Spanning-tree joint through which each body is reached (-1 for a floating sub-system's root).
  int tree_joint_of(int body) const { return tree_joint_of_[static_cast<std::size_t>(body)]; }
  /// The body on the ground side of a body's tree joint (kGround, or kNoBody for a floating root).
  int tree_parent_of(int body) const { return tree_parent_of_[static_cast<std::size_t>(body)]; }
  /// Joints touching each body, ascending (a view of one array that holds every body's, body
  /// after body, valid while the topology lives).
  std::span<const int> joints_of(int body) const {
    const auto b = static_cast<std::size_t>(body);
    return {body_joints_.data() + body_joint_offset_[b], body_joint_offset_[b + 1] - body_joint_offset_[b]};
  }
  /// Bodies of each connected sub-system that has no joint to ground.
  const std::vector<std::vector<int>>& floating_subsystems() const { return floating_; }

  int body_count() const { return body_count_; }
  /// The most spanning-tree joints between a root (ground, or a floating sub-system's first body)
  /// and a body: 1 for bodies hinged to ground, n for an n-link chain.
  int depth() const { return depth_; }
  int constraint_equations() const { return equations_; }
  /// Gruebler-Kutzbach count: 6 n - (number of constraint equations, drivers included).
  int gruebler_mobility() const { return 6 * body_count_ - equations_; }
  /// Rank of the constraint Jacobian at the initial configuration (tree joints' rows plus the rank
  /// the loop-closing joints and drivers add).
  int jacobian_rank() const { return ranked(); }
  /// Degrees of freedom at the initial configuration: 6 n - rank.
  int mobility() const { return 6 * body_count_ - ranked(); }
  /// Redundant constraint equations: equations - rank (3 for the spatial four-bar).
  int redundant_constraints() const { return equations_ - ranked(); }
  /// How far the loop-closing joints and drivers are from a singular position at `state` (bodies
  /// of `model`, the model this topology was made of): the smallest of the singular values of
  /// their rows (beyond the tree's) that made up the initial rank, over the largest. Near 0 the
  /// constraint Jacobian is losing rank: the mechanism's links align and its mobility changes
  /// there. 1 without loops or drivers. A dense eigenproblem in the loop rows: for diagnosing a
  /// failure, not for every step.
  double loop_conditioning(const Model& model, const SystemState& state) const;

 private:
  int ranked() const {
    if (rank_ < 0) throw std::logic_error("Topology: made with RankMethod::None, so without the Jacobian's rank");
    return rank_;
  }

  int body_count_ = 0, equations_ = 0, rank_ = 0, depth_ = 0;  // rank_ -1: RankMethod::None
  std::vector<int> tree_joints_, loop_joints_, tree_joint_of_, tree_parent_of_;
  std::vector<std::size_t> body_joint_offset_;  // joints_of(b) are body_joints_[offset[b], offset[b + 1])
  std::vector<int> body_joints_;
  std::vector<std::vector<int>> floating_;
};

/// A node of an AssemblyTree. Its joint lists lie in its tree's arrays (a std::vector each cost a
/// heap block a list, 0.25 KB a body with its bodies' list, which AssemblyTree::bodies() now makes
/// on demand), its eliminated joints then its handles, from one pointer and two counts (two spans
/// took 16 bytes more): they live as long as the tree.
struct AssemblyNode {
  int left = -1, right = -1, parent = -1;
  int body = -1;                // the body of a leaf; -1 for inner nodes
  int height = 0;               // 0 for leaves
  int first = -1;               // the smallest id in its subtree: the subtree is the ids first ... its own
  const int* joints_at = nullptr;  // eliminated_count joints, then handle_count, in the tree's joints_
  int eliminated_count = 0, handle_count = 0;
  bool is_leaf() const { return body >= 0; }
  /// Joints between the left and right children, and the joints to ground of a child that is a
  /// leaf (one-sided), ascending.
  std::span<const int> eliminated() const { return {joints_at, static_cast<std::size_t>(eliminated_count)}; }
  /// Joints between these bodies and the rest, ascending: of a leaf, every joint of its body; of
  /// an inner node, none to ground (the root of a one-body model is its leaf).
  std::span<const int> handles() const { return {joints_at + eliminated_count, static_cast<std::size_t>(handle_count)}; }
};

class AssemblyTree {
 public:
  /// `threads`: how many threads the passes will run on, which decides where the tree is cut
  /// into subtrees (subtrees()). `topology` must be the model's (std::invalid_argument if its
  /// body count differs).
  AssemblyTree(const Model& model, const Topology& topology, int threads = 1);
  AssemblyTree(const AssemblyTree&) = delete;  // the nodes' spans point into its own arrays
  AssemblyTree& operator=(const AssemblyTree&) = delete;
  AssemblyTree(AssemblyTree&&) = default;      // a moved vector keeps its elements where they are
  AssemblyTree& operator=(AssemblyTree&&) = default;

  /// The nodes, numbered in post-order (children before parents, left before right; the root
  /// last): a subtree's nodes have consecutive ids.
  const std::vector<AssemblyNode>& nodes() const { return nodes_; }
  const AssemblyNode& node(int id) const { return nodes_[static_cast<std::size_t>(id)]; }
  int root() const { return root_; }
  int height() const { return node(root_).height; }
  int leaf_of(int body) const { return leaf_of_[static_cast<std::size_t>(body)]; }
  /// Whether `body` (kGround: never) is inside node `id`'s subtree.
  bool contains(int id, int body) const {
    if (body == kGround) return false;
    const int leaf = leaf_of(body);
    return leaf >= node(id).first && leaf <= id;
  }
  /// The bodies inside node `id`, ascending (made on each call).
  std::vector<int> bodies(int id) const;
  /// A node's children and body (AssemblyNode's left, right, body) in 12 bytes, for the passes: they
  /// read these at every node, and a 96-byte AssemblyNode a node was 192 bytes a body a pass to bring in.
  struct Link {
    int left = -1, right = -1, body = -1;
    bool is_leaf() const { return body >= 0; }
  };
  const Link& link(int id) const { return links_[static_cast<std::size_t>(id)]; }
  /// levels()[h]: the nodes of height h, ascending (h = 0: the leaves). Nodes of one level are
  /// independent of each other: the parallel passes run a level at a time.
  const std::vector<std::vector<int>>& levels() const { return levels_; }
  /// Largest number of handles on any node.
  int max_handles() const;
  /// For the passes: the tree cut into independent subtrees, each listed in post-order (children
  /// before parents, leaves included), and the nodes above them by height. They are the maximal
  /// subtrees of height at most height() - c: one subtree (c = 0) for one thread, and for T
  /// threads c = log2(T) rounded up (one subtree per thread on a balanced tree), plus 2 when T is
  /// not a power of two (four times as many subtrees as the next power of two, e.g. 16 for three
  /// threads, for the static schedule's balance). Every level above the cut costs the passes a
  /// barrier (1.4 us on the two-core development machine), so the fewer the better.
  const std::vector<std::vector<int>>& subtrees() const { return subtrees_; }
  const std::vector<std::vector<int>>& upper_levels() const { return upper_levels_; }
  /// The tree drawn in ASCII with body and joint names.
  std::string to_ascii(const Model& model) const;

 private:
  struct Context {  // graph data and scratch space for build()
    const Topology& topology;  // each body's joints (Topology::joints_of)
    std::vector<std::vector<int>> neighbours;
    std::vector<std::pair<int, int>> ends;  // (parent, child) of each joint
    mutable std::vector<char> member, seen;
  };
  int build(std::vector<int> bodies, const Context& ctx, int budget);  // budget: the most levels below
  void attach_joints(const Model& model);  // after number_in_postorder: the lists in id order
  void number_in_postorder();
  void append_postorder(int id, std::vector<int>& out) const;
  void cut_subtrees(int threads);

  std::vector<AssemblyNode> nodes_;
  std::vector<int> joints_;  // the nodes' eliminated joints and handles, node after node in id order
  std::vector<Link> links_;  // nodes_' left, right and body, by id
  std::vector<int> leaf_of_;
  std::vector<std::vector<int>> levels_;
  std::vector<std::vector<int>> subtrees_, upper_levels_;
  int root_ = -1;
};

}  // namespace treedyn
