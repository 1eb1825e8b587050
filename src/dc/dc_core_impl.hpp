// treedyn — the definitions of HandleTree's members. Each (scalar, dimension) instance is compiled
// in its own translation unit (dc_<scalar><dim>.cpp): the fixed-size elimination kernels are heavy
// to compile, and separate units build in parallel.
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string>

#include "treedyn/dc_core.hpp"

namespace treedyn::dc {

// A single-joint kernel f.operator()<M, MK, H>() as dispatch_rows calls it, f.operator()<M>(): MK = M
// when every handle of the node has the joint's M rows (Node::uniform: fixed sizes throughout),
// else Eigen::Dynamic; H = 2 when the node is uniform with two handles (an inner node of a chain:
// its offsets and its 2M x 2M blocks are then fixed too), else Eigen::Dynamic.
template <class F>
auto single_sizes(bool uniform, int handles, F&& f) {
  return [&f, uniform, handles]<int M>() {
    if (uniform && handles == 2) f.template operator()<M, M, 2>();
    else if (uniform) f.template operator()<M, M, Eigen::Dynamic>();
    else f.template operator()<M, Eigen::Dynamic, Eigen::Dynamic>();
  };
}

// A node's handles as the kernels read them: with H handles of MK rows each known at compile
// time (a chain's inner node, H = 2), handle i's offset is i MK and the node's r = H MK rows are a
// fixed size; with Eigen::Dynamic, the node's offset arena says. M: the rows of the joint a
// single-joint kernel eliminates (W is M x r).
template <class S, int M, int MK, int H>
struct NodeLayout {
  static constexpr bool fixed = H != Eigen::Dynamic;
  static_assert(!fixed || MK == M, "a fixed handle count needs uniform rows");
  static constexpr int R = fixed ? H * M : Eigen::Dynamic;
  static constexpr int mk = MK;  // each handle's rows, if fixed
  template <class Node>
  static int size(const Node& n) {
    if constexpr (fixed) return H;
    else return n.size();
  }
  template <class Node>
  static int o(const Node& n, int i) {
    if constexpr (fixed) return i * M;
    else return n.o(i);
  }
  /// The rows m_i of handle i.
  template <class Node>
  static int m(const Node& n, int i) {
    if constexpr (MK != Eigen::Dynamic) return MK;
    else return n.o(i + 1) - n.o(i);
  }
  /// r, the node's rows.
  template <class Node>
  static int rows(const Node& n) {
    if constexpr (fixed) return R;
    else return n.rows();
  }
  template <class Node>
  static Eigen::Map<Eigen::Matrix<S, R, R>> K_hat(const Node& n) { return {n.rows_at, rows(n), rows(n)}; }
  template <class Node>
  static Eigen::Map<Eigen::Matrix<S, R, 1>> b_hat(const Node& n) { return {n.rows_at + rows(n) * rows(n), rows(n)}; }
  template <class Node>
  static Eigen::Map<Eigen::Matrix<S, R, 1>> f_hat(const Node& n) { return {n.rows_at + rows(n) * (rows(n) + 1), rows(n)}; }
  template <class Node>
  static Eigen::Map<Eigen::Matrix<S, M, R>> W(const Node& n) { return {n.single_at + 2 * M, M, rows(n)}; }
};

template <class S, int Dim>
HandleTree<S, Dim>::HandleTree(const AssemblyTree& tree, std::vector<JointSides> sides, InverseMethod method,
                               LeafBlocks leaf_blocks, BiasPasses bias_passes)
    : tree_(&tree),
      sides_(std::move(sides)),
      method_(method),
      leaf_blocks_(leaf_blocks),
      keeps_inverse_(bias_passes == BiasPasses::Allowed),
      nodes_(tree.nodes().size()) {
  static_assert(sizeof(void*) != 8 || sizeof(Node) <= 64, "a node's record fits in a cache line");
  for (std::size_t j = 0; j < sides_.size(); ++j)
    if (sides_[j].rows < 0 || sides_[j].rows > Dim)
      throw std::invalid_argument("dc::HandleTree: joint " + std::to_string(j) + " has " + std::to_string(sides_[j].rows) +
                                  " rows; a tree of dimension " + std::to_string(Dim) + " takes 0 to " + std::to_string(Dim));
  // Handles (joints that carry loads), then the arenas in the passes' visiting order: a Shared
  // leaf's K, b, f in Dim blocks together (SharedLeaf; its formulation fills and reads them),
  // every other node's in its handles' rows.
  std::vector<int> order;
  for (const auto& s : tree.subtrees()) order.insert(order.end(), s.begin(), s.end());
  for (const auto& level : tree.upper_levels()) order.insert(order.end(), level.begin(), level.end());
  const bool shared_leaves = leaf_blocks != LeafBlocks::InRows, k_diagonal = leaf_blocks == LeafBlocks::SharedBlockDiagonal;
  if (k_diagonal && Dim != 6)
    throw std::invalid_argument("dc::HandleTree: LeafBlocks::SharedBlockDiagonal holds K = diag(k I, K_w) in space (dimension 6), not " +
                                std::to_string(Dim));
  take_records(order);
  std::size_t shared_size = 0, offset_size = 0;
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    Node& n = node(id);
    offset_size += offset_record_size(n.size());
    const bool in_rows = !tree.node(id).is_leaf() || !shared_leaves;
    n.kind = in_rows ? Node::Kind::Rows : k_diagonal ? Node::Kind::SharedDiagonalK : Node::Kind::SharedK;
    if (!in_rows) ++shared_size;
  }
  if (k_diagonal) shared_diagonal_arena_.assign(shared_size, SharedLeafDiagonalK{});
  else shared_arena_.assign(shared_size, SharedLeafK{});
  offset_arena_.assign(offset_size, 0);
  std::size_t shared_at = 0, o_at = 0;
  for (int id : order) {
    Node& n = node(id);
    const auto h = static_cast<std::size_t>(n.size());
    n.offset_at = offset_arena_.data() + o_at;
    o_at += offset_record_size(n.size());
    for (std::size_t i = 0; i < h; ++i) n.offset_at[i + 1] = n.offset_at[i] + sides_[static_cast<std::size_t>(n.handles()[i])].rows;
    n.handle_rows = static_cast<std::int8_t>(n.uniform_rows());  // at most Dim
    if (n.in_rows()) continue;
    if (k_diagonal) n.shared_at = shared_diagonal_arena_.data() + shared_at++;
    else n.shared_at = shared_arena_.data() + shared_at++;
  }
  for (int id : order) setup_node(id);  // children before parents
  // The K, b, f in rows (r x r, r, r) of the nodes held so, with a several-joint elimination's Z
  // and Y (rows_block_size): a subtree's root and the nodes above in their own storage, every
  // other in a stack buffer (place_in_stack). And what the eliminations keep between passes (not
  // the leaves', half the nodes): a single joint's Z^+, beta_hat, lambda and W (m x m, m, m, m x r),
  // several joints' beta_hat, lambda and W_i (m, m, h blocks m x Dim).
  const std::vector<int> buffer = place_in_stack();
  // Each node's place in the scalar arena, in the passes' order, each block group from Eigen's
  // alignment: its own K, b, f (not in a stack buffer) and its elimination's kept blocks.
  std::vector<std::size_t> rows_at(nodes_.size(), 0), kept_at(nodes_.size(), 0);
  std::size_t multiples = 0, scalar_size = 0;
  for (int id : order) {
    const Node& n = node(id);
    if (!n.in_rows()) continue;
    const auto r = static_cast<std::size_t>(n.rows()), m = static_cast<std::size_t>(n.m);
    if (buffer[static_cast<std::size_t>(id)] < 0) {
      rows_at[static_cast<std::size_t>(id)] = scalar_size = aligned(scalar_size);
      scalar_size += rows_block_size(n);
    }
    if (takes_single(n)) {
      kept_at[static_cast<std::size_t>(id)] = scalar_size = aligned(scalar_size);
      scalar_size += m * (2 + r + (keeps_inverse_ ? m : 0));  // Node::single_at
    } else if (m > 0) {
      ++multiples;
      kept_at[static_cast<std::size_t>(id)] = scalar_size = aligned(scalar_size);
      scalar_size += multiple_layout(n.m).kept_size(n.size());
    }
  }
  multiples_.resize(multiples);
  scalar_arena_.assign(scalar_size, S(0));
  std::size_t mu_at = 0;
  for (int id : order) {
    Node& n = node(id);
    if (!n.in_rows()) continue;
    const int k = buffer[static_cast<std::size_t>(id)];
    S* x = k >= 0 ? stack_arena_.data() + stack_offset_[static_cast<std::size_t>(k)] : scalar_arena_.data() + rows_at[static_cast<std::size_t>(id)];
    n.rows_at = x;  // K~ (r x r), then b~ and f~ (r each): Node::K_hat(), b_hat(), f_hat()
    S* e = scalar_arena_.data() + kept_at[static_cast<std::size_t>(id)];
    if (takes_single(n)) {
      n.kind = every_handle_as_eliminated(n) ? Node::Kind::RowsSingleUniform : Node::Kind::RowsSingle;
      n.single_at = e;
    } else if (n.m > 0) {
      Multiple& several = multiples_[mu_at++];
      n.kind = Node::Kind::RowsMultiple;
      n.multiple = &several;
      several.at = multiple_layout(n.m);
      several.Z_at = x + scratch_offset(n);
      several.kept_at = e;
      several.solver = PsdSolver<S>(n.m, method_);
    }
  }
  set_pulls();
  // Base connection: the root's handles all meet the ground.
  const Node& root = node(tree.root());
  for (int i = 0; i < root.size(); ++i) {
    const int j = root.handles()[static_cast<std::size_t>(i)];
    const int rows = sides_[static_cast<std::size_t>(j)].rows;
    base_.eliminated.push_back({j, base_.m, rows, i, -1, root.holds_p()[static_cast<std::size_t>(i)] != 0});
    base_.m += rows;
  }
  base_.multiple.resize(base_.m, method_);
  where_.resize(sides_.size());
  for (const Eliminated& x : base_.eliminated) where_[static_cast<std::size_t>(x.joint)] = {-1, x.offset};
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id)
    for (const Eliminated& x : node(id).eliminated()) where_[static_cast<std::size_t>(x.joint)] = {id, x.offset};
}

// Every node's handles (the joints with rows), holds_p, from and eliminated, in arenas laid out in
// the passes' order; the handles are filled, the rest by setup_node.
template <class S, int Dim>
void HandleTree<S, Dim>::take_records(const std::vector<int>& order) {
  auto loaded = [&](int j) { return sides_[static_cast<std::size_t>(j)].rows > 0; };
  auto count = [&](std::span<const int> joints) { return static_cast<std::size_t>(std::count_if(joints.begin(), joints.end(), loaded)); };
  std::size_t handles = 0, from = 0, eliminated = 0;
  for (int id : order) {
    const AssemblyNode& a = tree_->node(id);
    handles += count(a.handles());
    if (!a.is_leaf()) from += count(a.handles()), eliminated += count(a.eliminated());
  }
  handle_arena_.assign(handles, 0);
  from_arena_.assign(from, {});
  eliminated_arena_.assign(eliminated, {});
  std::size_t h_at = 0, from_at = 0, e_at = 0;
  for (int id : order) {
    const AssemblyNode& a = tree_->node(id);
    Node& n = node(id);
    const std::size_t h = count(a.handles());
    n.handles_at = handle_arena_.data() + h_at;
    n.h = static_cast<int>(h);
    std::copy_if(a.handles().begin(), a.handles().end(), n.handles().begin(), loaded);
    h_at += h;
    if (a.is_leaf()) continue;
    n.from_at = from_arena_.data() + from_at;
    from_at += h;
    n.eliminated_at = eliminated_arena_.data() + e_at;
    n.eliminated_count = static_cast<int>(count(a.eliminated()));
    e_at += n.eliminated().size();
  }
}

// A node's K~ and b~ are read only by its parent's assembly (after the node's own, or its leaf's
// fill), and its f~ only by its own disassembly, which writes it (pull_loads), and its children's,
// which pull their loads from it: no bias-only pass, base connection or multiplier() reads them.
// Each subtree is visited in post-order, so within it the nodes whose blocks are alive at one
// time form a stack, one node a depth: a leaf is pushed, an inner node pops its two children and
// is pushed where its left child was. The disassembly, the same visit reversed, keeps the same
// nodes alive: a node's f~ is read by its right child next and by its left child after the right
// child's subtree, which lies one depth deeper and more. So every node below a subtree's root takes
// one of two buffers at its stack depth, sized for the largest node that uses it: a leaf the
// first, an inner node the one its left child does not hold, so that it writes its blocks while
// it reads its children's (its right child is one depth deeper). A subtree's root, read by the
// levels above (another thread's, in another phase of the pass), and those levels keep their own
// (-1). Returns each node's buffer; fills stack_arena_ and stack_offset_, each subtree's
// buffers on their own cache lines. On a chain that takes K~, b~ and f~ of every node but a few
// out of memory that scales with the bodies (0.75 KB a body for a spherical chain in double),
// and the passes write and read them in a few kilobytes that stay in cache.
template <class S, int Dim>
std::vector<int> HandleTree<S, Dim>::place_in_stack() {
  std::vector<int> buffer(nodes_.size(), -1);
  std::vector<std::size_t> capacity;  // scalars, per buffer
  struct Entry {
    int id, buffer;
  };
  std::vector<Entry> stack;
  std::vector<std::size_t> bases;
  for (const auto& s : tree_->subtrees()) {
    const int base = static_cast<int>(capacity.size());
    bases.push_back(capacity.size());
    stack.clear();
    for (int id : s) {
      const AssemblyNode& a = tree_->node(id);
      const int depth = static_cast<int>(stack.size()) - (a.is_leaf() ? 0 : 2);
      int parity = 0;
      if (!a.is_leaf()) {
        if (depth < 0 || stack[stack.size() - 1].id != a.right || stack[stack.size() - 2].id != a.left)
          throw std::logic_error("dc::HandleTree: a subtree is not listed in post-order");
        parity = 1 - (stack[stack.size() - 2].buffer - base) % 2;
        stack.resize(stack.size() - 2);
      }
      const int k = base + 2 * depth + parity;
      if (capacity.size() <= static_cast<std::size_t>(k)) capacity.resize(static_cast<std::size_t>(k) + 1, 0);
      stack.push_back({id, k});
      const Node& n = node(id);
      if (id == s.back() || !n.in_rows()) continue;
      buffer[static_cast<std::size_t>(id)] = k;
      capacity[static_cast<std::size_t>(k)] = std::max(capacity[static_cast<std::size_t>(k)], rows_block_size(n));
    }
  }
  constexpr std::size_t line = std::max<std::size_t>(1, 64 / sizeof(S));  // scalars in a cache line
  stack_offset_.assign(capacity.size(), 0);
  std::size_t at = 0;
  for (std::size_t k = 0; k < capacity.size(); ++k) {
    at = std::binary_search(bases.begin(), bases.end(), k) ? (at + line - 1) / line * line : aligned(at);
    stack_offset_[k] = at;
    at += capacity[k];
  }
  stack_arena_.assign(at, S(0));
  return buffer;
}

template <class S, int Dim>
void HandleTree<S, Dim>::setup_node(int id) {
  const AssemblyNode& a = tree_->node(id);
  Node& n = node(id);
  auto loaded = [&](int j) { return sides_[static_cast<std::size_t>(j)].rows > 0; };
  for (std::size_t i = 0; i < n.handles().size(); ++i)
    n.holds_p()[i] = tree_->contains(id, sides_[static_cast<std::size_t>(n.handles()[i])].body_p);
  if (a.is_leaf()) return;
  const Node& left = node(a.left);
  const Node& right = node(a.right);
  std::size_t e = 0;
  for (int j : a.eliminated()) {
    if (!loaded(j)) continue;
    const int rows = sides_[static_cast<std::size_t>(j)].rows;
    const int l = handle_index(left, j), r = handle_index(right, j);
    // A joint to ground has one side here: p_left still says which side would hold p.
    const bool p_left = l >= 0 ? left.holds_p()[static_cast<std::size_t>(l)] != 0 : right.holds_p()[static_cast<std::size_t>(r)] == 0;
    n.eliminated()[e++] = {j, n.m, rows, l, r, p_left};
    n.m += rows;
  }
  for (std::size_t i = 0; i < n.handles().size(); ++i) {
    const int j = n.handles()[i], l = handle_index(left, j);
    n.from()[i] = l >= 0 ? typename Node::Source{0, l} : typename Node::Source{1, handle_index(right, j)};
  }
}

// K~, b~, f~ (r (r + 2) scalars) and, for a several-joint elimination (several joints, a joint to
// ground, or too many handles for the single kernel), its Z (m x m) and Y_i (h blocks Dim x m),
// each from Eigen's alignment: what a node's assembly writes and its parent's (or its own
// disassembly) reads, in its stack buffer or its own storage.
template <class S, int Dim>
std::size_t HandleTree<S, Dim>::rows_block_size(const Node& n) const {
  if (takes_single(n) || n.m == 0) return static_cast<std::size_t>(n.rows() * (n.rows() + 2));
  return scratch_offset(n) + multiple_layout(n.m).scratch_size(n.size());
}

// A child's K_ab and b_a in its handles' rows, G_a K_ab G_b' and G_a b_a (m_a x m_b, m_a): a node
// in rows stores them so; a Shared leaf holds them per Dim (its formulation fills them), and its
// handles' rows G are applied here. Unit rows (G = sign [I 0]) take blocks instead of products.
template <class S, int Dim>
template <int RA, int RB>
[[gnu::always_inline]] inline typename HandleTree<S, Dim>::template Rows<RA, RB> HandleTree<S, Dim>::k_rows(const Node& c, int a, int b,
                                                                               const std::vector<JointRows<S, Dim>>& rows) const {
  Rows<RA, RB> out;
  k_rows_into<RA, RB>(out, c, a, b, rows);
  return out;
}

template <class S, int Dim>
template <int RA, int RB, class Out>
[[gnu::always_inline]] inline void HandleTree<S, Dim>::k_rows_into(Out&& out, const Node& c, int a, int b,
                                                                   const std::vector<JointRows<S, Dim>>& rows) const {
  const int ma = rows_at(c, a), mb = rows_at(c, b);
  if (c.in_rows()) {
    out = c.K_hat().template block<RA, RB>(c.o(a), c.o(b), ma, mb);
    return;
  }
  const JointRows<S, Dim>& ja = rows[static_cast<std::size_t>(c.handles()[static_cast<std::size_t>(a)])];
  const JointRows<S, Dim>& jb = rows[static_cast<std::size_t>(c.handles()[static_cast<std::size_t>(b)])];
  const bool pa = c.holds_p()[static_cast<std::size_t>(a)] != 0, pb = c.holds_p()[static_cast<std::size_t>(b)] != 0;
  if constexpr (arm_sized(RA) && arm_sized(RB))
    if (ja.arm_rows && jb.arm_rows) {  // arm rows both sides (never unit rows): by cross products
      using O = std::decay_t<Out>;
      if constexpr (std::is_base_of_v<Eigen::PlainObjectBase<O>, O>) out.resize(ma, mb);  // a matrix (k_rows'), not a block
      if (c.k_diagonal()) arm_k(out, ja, pa, *static_cast<const SharedLeafDiagonalK*>(c.shared_at), jb, pb);
      else arm_k(out, ja, pa, static_cast<const SharedLeafK*>(c.shared_at)->K, jb, pb);
      return;
    }
  Mat K_written;  // a block-diagonal K written out, for rows of other kinds
  if (c.k_diagonal()) written_K(c, K_written);
  const Mat& K = c.k_diagonal() ? K_written : static_cast<const SharedLeafK*>(c.shared_at)->K;
  if (ja.unit_rows && jb.unit_rows) {
    out = (unit_sign(pa) * unit_sign(pb)) * K.template block<RA, RB>(0, 0, ma, mb);
    return;
  }
  if constexpr (arm_sized(Eigen::Dynamic))
    if (ja.arm_rows || jb.arm_rows) {
      typename T::RowsMat Ga, Gb;  // one side's arm rows beside other rows: written out (loops of ball joints)
      if (ja.arm_rows) ja.arm_G(pa, Ga);
      else Ga.topRows(ma) = rows_of(ja, pa).topRows(ma);
      if (jb.arm_rows) jb.arm_G(pb, Gb);
      else Gb.topRows(mb) = rows_of(jb, pb).topRows(mb);
      out.noalias() = Ga.template block<RA, Dim>(0, 0, ma, Dim) * K * Gb.template block<RB, Dim>(0, 0, mb, Dim).transpose();
      return;
    }
  // into out itself, as k_rows' return value was made: out is the parent's, K and G the child's
  out.noalias() = rows_of(ja, pa).template block<RA, Dim>(0, 0, ma, Dim) * K * rows_of(jb, pb).template block<RB, Dim>(0, 0, mb, Dim).transpose();
}

template <class S, int Dim>
template <int RA>
[[gnu::always_inline]] inline typename HandleTree<S, Dim>::template Rows<RA, 1> HandleTree<S, Dim>::b_rows(const Node& c, int a,
                                                                              const std::vector<JointRows<S, Dim>>& rows) const {
  if (c.in_rows()) return c.b_hat().template segment<RA>(c.o(a), rows_at(c, a));
  return project<RA>(c, a, c.shared_at->b, rows);
}

// The load at a child's handle a from its joint's multipliers lambda: a node in rows keeps
// lambda, a Shared leaf adds G_a' lambda to its f (which its caller has zeroed).
template <class S, int Dim>
template <class Derived>
void HandleTree<S, Dim>::put_load(Node& c, int a, const Eigen::MatrixBase<Derived>& lambda,
                                  const std::vector<JointRows<S, Dim>>& rows) {
  constexpr int R = Derived::RowsAtCompileTime;
  if (c.in_rows()) c.f_hat().template segment<R>(c.o(a), lambda.size()) = lambda;
  else c.shared_at->f += spread(c, a, lambda, rows);
}

// One joint of M rows between the children (chains, trees), in the handles' rows: Z is M x M,
// Y_i m_i x M, W_i M x m_i. MK is M when every handle of the node has M rows (a chain of one joint
// type: fixed sizes throughout), else Eigen::Dynamic; H is 2 for such a node with two handles
// (NodeLayout: fixed offsets too), else Eigen::Dynamic.
template <class S, int Dim>
template <int M, int MK, int H>
void HandleTree<S, Dim>::eliminate_single(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) {
  using MatM = Eigen::Matrix<S, M, M>;
  using L = NodeLayout<S, M, MK, H>;
  const Eliminated& x = n.eliminated().front();
  const JointRows<S, Dim>& jr = rows[static_cast<std::size_t>(x.joint)];
  const int at[2] = {x.left, x.right};  // the joint's handle in each child
  // Z and beta_hat (paper 004, Eqs. 33, 34, 37): Z = G0 K0 G0' + G1 K1 G1', each the child's K in rows.
  MatM Z = k_rows<M, M>(*side[0], x.left, x.left, rows);
  Z += k_rows<M, M>(*side[1], x.right, x.right, rows);
  Z.diagonal().array() += jr.compliance;
  const Eigen::Matrix<S, M, 1> rhs = single_rhs<M>(x, side, rows);
  MatM Z_inverse;
  n.singular = method_ == InverseMethod::AdjugateLdup ? !paper_inverse(Z, Z_inverse, S(1e-10))
                                                      : !cholesky_inverse<S, M>(Z, Z_inverse);
  if (n.singular) Z_inverse = small_pseudo_inverse<S, M>(Z);
  if (keeps_inverse_) Z_inverse_of<M>(n) = Z_inverse;
  auto beta_hat = beta_hat_of<M>(n);
  beta_hat.noalias() = Z_inverse * rhs;
  // Y_i = G_i K_i,e G' and W_i = Z^+ Y_i' (paper 004, Eqs. 35-36).
  const int h = L::size(n);
  Rows<MK, M> Y[kMaxSingleHandles];
  auto W = L::W(n);
  for (int i = 0; i < h; ++i) {
    const auto src = n.from()[static_cast<std::size_t>(i)];
    k_rows_into<MK, M>(Y[i], *side[src.side], src.index, at[src.side], rows);
    W.template block<M, MK>(0, L::o(n, i), M, Y[i].rows()).noalias() = Z_inverse * Y[i].transpose();
  }
  // K^C and b^C (paper 001, Eqs. 34-36); K is symmetric: fill j >= i and mirror.
  auto K_hat = L::K_hat(n);
  auto b_hat = L::b_hat(n);
  for (int i = 0; i < h; ++i) {
    const auto si = n.from()[static_cast<std::size_t>(i)];
    const auto mi = Y[i].rows();
    for (int j = i; j < h; ++j) {
      const auto sj = n.from()[static_cast<std::size_t>(j)];
      const auto mj = Y[j].rows();
      auto K = K_hat.template block<MK, MK>(L::o(n, i), L::o(n, j), mi, mj);
      if (si.side == sj.side) k_rows_into<MK, MK>(K, *side[si.side], si.index, sj.index, rows);
      else K.setZero();
      K.noalias() -= Y[i] * W.template block<M, MK>(0, L::o(n, j), M, mj);
      if (j != i) K_hat.template block<MK, MK>(L::o(n, j), L::o(n, i), mj, mi) = K.transpose();
    }
    auto b = b_hat.template segment<MK>(L::o(n, i), mi);
    b = b_rows<MK>(*side[si.side], si.index, rows);
    b.noalias() += Y[i] * beta_hat;
  }
}

// lambda = beta_hat - sum_j W_j lambda_j (paper 004, Eq. 45, in the handles' rows) of the joint
// the node eliminates; its children pull it, and the node's own handle loads, in their own
// disassembly (pull_loads).
template <class S, int Dim>
template <int M, int MK, int H>
void HandleTree<S, Dim>::recover_single(Node& n) {
  using L = NodeLayout<S, M, MK, H>;
  auto lambda = lambda_of<M>(n);
  lambda = beta_hat_of<M>(n);
  const auto W = L::W(n);
  const auto f_hat = L::f_hat(n);
  for (int j = 0; j < L::size(n); ++j)
    lambda.noalias() -= W.template block<M, MK>(0, L::o(n, j), M, L::m(n, j)) * f_hat.template segment<MK>(L::o(n, j), L::m(n, j));
}

// r - G0 b0 - G1 b1 of a single joint's equations (the right-hand side of paper 004, Eq. 37).
template <class S, int Dim>
template <int M>
Eigen::Matrix<S, M, 1> HandleTree<S, Dim>::single_rhs(const Eliminated& x, const Node* const side[2],
                                                      const std::vector<JointRows<S, Dim>>& rows) const {
  Eigen::Matrix<S, M, 1> rhs = rows[static_cast<std::size_t>(x.joint)].r.template head<M>();
  rhs -= b_rows<M>(*side[0], x.left, rows);
  rhs -= b_rows<M>(*side[1], x.right, rows);
  return rhs;
}

// Several joints between the children (a loop closing here): one m x m system, in the handles' rows.
template <class S, int Dim>
void HandleTree<S, Dim>::eliminate_multiple(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) {
  Multiple& e = *n.multiple;
  auto index = [](const Eliminated& x, int s) { return s == 0 ? x.left : x.right; };  // -1: ground's side
  auto Z = e.Z();
  auto beta_hat = e.beta_hat();
  Z.setZero();
  for (const Eliminated& x : n.eliminated()) {
    beta_hat.segment(x.offset, x.rows) = rows[static_cast<std::size_t>(x.joint)].r.head(x.rows);
    for (int s = 0; s < 2; ++s) {
      if (index(x, s) < 0) continue;
      beta_hat.segment(x.offset, x.rows) -= b_rows(*side[s], index(x, s), rows);
      for (const Eliminated& x2 : n.eliminated())
        if (index(x2, s) >= 0) Z.block(x.offset, x2.offset, x.rows, x2.rows) += k_rows(*side[s], index(x, s), index(x2, s), rows);
    }
  }
  for (const Eliminated& x : n.eliminated())
    Z.diagonal().segment(x.offset, x.rows).array() += rows[static_cast<std::size_t>(x.joint)].compliance;
  for (int i = 0; i < n.size(); ++i) {
    const auto src = n.from()[static_cast<std::size_t>(i)];
    const int mi = rows_at(n, i);
    auto Y = e.Y(i).topRows(mi);
    for (const Eliminated& x : n.eliminated())
      if (index(x, src.side) < 0) Y.middleCols(x.offset, x.rows).setZero();
      else Y.middleCols(x.offset, x.rows) = k_rows(*side[src.side], src.index, index(x, src.side), rows);
    e.W(i).leftCols(mi) = Y.transpose();
  }
  e.solver.compute(Z);
  e.solver.solve_in_place(beta_hat);
  for (int i = 0; i < n.size(); ++i) {
    auto W = e.W(i).leftCols(rows_at(n, i));
    e.solver.solve_in_place(W);
  }
  for (int i = 0; i < n.size(); ++i) {
    const auto si = n.from()[static_cast<std::size_t>(i)];
    const int mi = rows_at(n, i);
    const auto Yi = e.Y(i).topRows(mi);
    for (int j = i; j < n.size(); ++j) {
      const auto sj = n.from()[static_cast<std::size_t>(j)];
      const int mj = rows_at(n, j);
      auto K = n.K_hat().block(n.o(i), n.o(j), mi, mj);
      if (si.side == sj.side) K = k_rows(*side[si.side], si.index, sj.index, rows);
      else K.setZero();
      K.noalias() -= Yi.lazyProduct(e.W(j).leftCols(mj));  // small: no packing
      if (j != i) n.K_hat().block(n.o(j), n.o(i), mj, mi) = K.transpose();
    }
    n.b_hat().segment(n.o(i), mi) = b_rows(*side[si.side], si.index, rows);
    n.b_hat().segment(n.o(i), mi).noalias() += Yi * beta_hat;
  }
}

template <class S, int Dim>
void HandleTree<S, Dim>::assemble_node(int id, const std::vector<JointRows<S, Dim>>& rows) {
  Node& n = node(id);
  const AssemblyTree::Link& a = tree_->link(id);
  const Node* const side[2] = {&node(a.left), &node(a.right)};
  if (uses_single(n)) {
    dispatch_rows(n.eliminated().front().rows, single_sizes(n.uniform(), n.size(), [&]<int M, int MK, int H>() { eliminate_single<M, MK, H>(n, side, rows); }));
  } else if (n.m > 0) {
    eliminate_multiple(n, side, rows);
  } else {  // the children share no joint: C is their union
    for (int i = 0; i < n.size(); ++i) {
      const auto si = n.from()[static_cast<std::size_t>(i)];
      const int mi = rows_at(n, i);
      for (int j = 0; j < n.size(); ++j) {
        const auto sj = n.from()[static_cast<std::size_t>(j)];
        auto K = n.K_hat().block(n.o(i), n.o(j), mi, rows_at(n, j));
        if (si.side == sj.side) K = k_rows(*side[si.side], si.index, sj.index, rows);
        else K.setZero();
      }
      n.b_hat().segment(n.o(i), mi) = b_rows(*side[si.side], si.index, rows);
    }
  }
}

template <class S, int Dim>
void HandleTree<S, Dim>::connect_base(const std::vector<JointRows<S, Dim>>& rows) {
  Node& root = node(tree_->root());
  if (!root.in_rows()) root.shared_at->f.setZero();
  std::fill(root.f_r().begin(), root.f_r().end(), S(0));
  if (base_.m == 0) return;  // free-floating
  BaseElimination<S>& e = base_.multiple;
  e.Z.setZero();
  for (const Eliminated& x : base_.eliminated) {
    for (const Eliminated& x2 : base_.eliminated)
      e.Z.block(x.offset, x2.offset, x.rows, x2.rows) += k_rows(root, x.left, x2.left, rows);
    e.Z.diagonal().segment(x.offset, x.rows).array() += rows[static_cast<std::size_t>(x.joint)].compliance;
  }
  e.solver.compute(e.Z);
  base_loads(rows);
}

template <class S, int Dim>
void HandleTree<S, Dim>::connect_base_bias(const std::vector<JointRows<S, Dim>>& rows) {
  Node& root = node(tree_->root());
  if (!root.in_rows()) root.shared_at->f.setZero();
  std::fill(root.f_r().begin(), root.f_r().end(), S(0));
  if (base_.m > 0) base_loads(rows);
}

// lambda = Z^+ (r - G b) at the base and the root's loads f = G' lambda (paper 001, Eqs. 43
// (open chain) and 45 (closed)), with Z already factorised.
template <class S, int Dim>
void HandleTree<S, Dim>::base_loads(const std::vector<JointRows<S, Dim>>& rows) {
  Node& root = node(tree_->root());
  BaseElimination<S>& e = base_.multiple;
  for (const Eliminated& x : base_.eliminated) {
    e.lambda.segment(x.offset, x.rows) = rows[static_cast<std::size_t>(x.joint)].r.head(x.rows);
    e.lambda.segment(x.offset, x.rows) -= b_rows(root, x.left, rows);
  }
  e.solver.solve_in_place(e.lambda);
  for (const Eliminated& x : base_.eliminated) put_load(root, x.left, e.lambda.segment(x.offset, x.rows), rows);
}

template <class S, int Dim>
void HandleTree<S, Dim>::assemble_bias_node(int id, const std::vector<JointRows<S, Dim>>& rows) {
  Node& n = node(id);
  const AssemblyTree::Link& a = tree_->link(id);
  const Node* const side[2] = {&node(a.left), &node(a.right)};
  for (int i = 0; i < n.size(); ++i) {
    const auto si = n.from()[static_cast<std::size_t>(i)];
    n.b_hat().segment(n.o(i), rows_at(n, i)) = b_rows(*side[si.side], si.index, rows);
  }
  if (uses_single(n)) {
    dispatch_rows(n.eliminated().front().rows, single_sizes(n.uniform(), n.size(), [&]<int M, int MK, int H>() { bias_single<M, MK, H>(n, side, rows); }));
  } else if (n.m > 0) {
    bias_multiple(n, side, rows);
  }
}

template <class S, int Dim>
template <int M, int MK, int H>
void HandleTree<S, Dim>::bias_single(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) {
  using L = NodeLayout<S, M, MK, H>;
  const Eliminated& x = n.eliminated().front();
  const Eigen::Matrix<S, M, 1> rhs = single_rhs<M>(x, side, rows);
  beta_hat_of<M>(n).noalias() = Z_inverse_of<M>(n) * rhs;
  const auto W = L::W(n);
  auto b_hat = L::b_hat(n);
  for (int i = 0; i < L::size(n); ++i)
    b_hat.template segment<MK>(L::o(n, i), L::m(n, i)).noalias() += W.template block<M, MK>(0, L::o(n, i), M, L::m(n, i)).transpose() * rhs;
}

template <class S, int Dim>
void HandleTree<S, Dim>::bias_multiple(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) {
  Multiple& e = *n.multiple;
  auto lambda = e.lambda();  // holds the right-hand side here
  auto beta_hat = e.beta_hat();
  for (const Eliminated& x : n.eliminated()) {
    lambda.segment(x.offset, x.rows) = rows[static_cast<std::size_t>(x.joint)].r.head(x.rows);
    for (int s = 0; s < 2; ++s)
      if (const int k = s == 0 ? x.left : x.right; k >= 0) lambda.segment(x.offset, x.rows) -= b_rows(*side[s], k, rows);
  }
  beta_hat = lambda;
  e.solver.solve_in_place(beta_hat);
  for (int i = 0; i < n.size(); ++i) {
    const int mi = rows_at(n, i);
    n.b_hat().segment(n.o(i), mi).noalias() += e.W(i).leftCols(mi).transpose() * lambda;
  }
}

template <class S, int Dim>
void HandleTree<S, Dim>::disassemble_node(int id, const std::vector<JointRows<S, Dim>>& rows) {
  Node& n = node(id);
  pull_loads(id, rows);
  if (uses_single(n)) {
    dispatch_rows(n.eliminated().front().rows, single_sizes(n.uniform(), n.size(), [&]<int M, int MK, int H>() { recover_single<M, MK, H>(n); }));
    return;
  }
  // lambda = beta_hat - sum_j W_j lambda_j (paper 004, Eq. 45) of the joints eliminated here.
  if (n.m > 0) {
    const Multiple& e = *n.multiple;
    auto lambda = e.lambda();
    lambda = e.beta_hat();
    for (int j = 0; j < n.size(); ++j) {
      const int mj = rows_at(n, j);
      lambda.noalias() -= e.W(j).leftCols(mj) * n.f_hat().segment(n.o(j), mj);
    }
  }
}

// Handle coincidence (paper 001, Eqs. 32-33) and the eliminated joints' loads, pulled: each of
// the node's handles takes its multipliers from where its parent holds them (set_pulls), the
// parent's own handle's or the multipliers of the joint the parent eliminated. A parent pushing
// them waited, at 65,536 bodies, on its left child's record, a whole right subtree away in the
// walk and last read in the assembly; the parent's blocks a child reads were written just before,
// or 2^h nodes before at height h. The root's come from the base connection.
template <class S, int Dim>
void HandleTree<S, Dim>::pull_loads(int id, const std::vector<JointRows<S, Dim>>& rows) {
  if (id == tree_->root()) return;
  Node& n = node(id);
  const S* const* from = pulls(n);
  if (n.in_rows()) {
    S* f = n.f_hat().data();
    // In the kernels' fixed sizes, as the parent's kernel wrote them and the node's reads them (a
    // copy by other pieces would stall the reads on store forwarding); every handle's at once
    // where they all have the same rows (a chain's nodes and leaves).
    if (dispatch_rows(n.handle_rows, [&]<int M>() {
          for (int a = 0; a < n.size(); ++a)
            Eigen::Map<Eigen::Matrix<S, M, 1>>(f + a * M) = Eigen::Map<const Eigen::Matrix<S, M, 1>>(from[a]);
        }))
      return;
    for (int a = 0; a < n.size(); ++a) {
      const int m = n.o(a + 1) - n.o(a);
      with_rows(m, [&]<int M>() { Eigen::Map<Eigen::Matrix<S, M, 1>>(f + n.o(a), m) = Eigen::Map<const Eigen::Matrix<S, M, 1>>(from[a], m); });
    }
    return;
  }
  Vec& f = n.shared_at->f;  // a Shared leaf: f = sum_a G_a' lambda_a, in Dim, in handle order
  for (int a = 0; a < n.size(); ++a) {
    const int m = rows_at(n, a);
    with_rows(m, [&]<int M>() {
      const Vec f_a = spread(n, a, Eigen::Map<const Eigen::Matrix<S, M, 1>>(from[a], m), rows);
      if (a == 0) f = f_a;
      else f += f_a;
    });
  }
}

// Where each node's handles find their loads in their parent (pull_loads): every handle of a
// node is either a handle of its parent (its f~ segment) or a joint the parent eliminates (its
// lambda). After the blocks are placed; the root's stay null (the base connection pushes them).
template <class S, int Dim>
void HandleTree<S, Dim>::set_pulls() {
  pull_arena_.assign(handle_arena_.size(), nullptr);
  auto pulls_of = [&](int id) { return pulls(node(id)); };
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    const Node& n = node(id);
    if (tree_->link(id).is_leaf()) continue;
    const int side[2] = {tree_->link(id).left, tree_->link(id).right};
    const S* f = n.f_hat().data();
    for (int i = 0; i < n.size(); ++i) {
      const auto src = n.from()[static_cast<std::size_t>(i)];
      pulls_of(side[src.side])[src.index] = f + n.o(i);
    }
    for (const Eliminated& x : n.eliminated()) {
      const S* lambda = uses_single(n) ? lambda_of(n).data() : n.multiple->lambda().data() + x.offset;
      if (x.left >= 0) pulls_of(side[0])[x.left] = lambda;
      if (x.right >= 0) pulls_of(side[1])[x.right] = lambda;
    }
  }
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id)
    if (id != tree_->root())
      for (int a = 0; a < node(id).size(); ++a)
        if (pulls_of(id)[a] == nullptr)
          throw std::logic_error("dc::HandleTree: node " + std::to_string(id) + "'s handle " + std::to_string(a) +
                                 " has no load in its parent");
}

template <class S, int Dim>
bool HandleTree<S, Dim>::any_singular() const {
  if (base_.m > 0 && base_.multiple.solver.singular()) return true;
  for (const Node& n : nodes_) {
    if (uses_single(n) && n.singular) return true;
    if (!uses_single(n) && n.m > 0 && n.multiple->solver.singular()) return true;
  }
  return false;
}

template <class S, int Dim>
typename HandleTree<S, Dim>::Vec HandleTree<S, Dim>::multiplier(int joint) const {
  Vec out = Vec::Zero();
  const int rows = sides_[static_cast<std::size_t>(joint)].rows;
  if (rows == 0) return out;
  const Where w = where_[static_cast<std::size_t>(joint)];
  if (w.node < 0) {
    out.head(rows) = base_.multiple.lambda.segment(w.offset, rows);
  } else {
    const Node& n = node(w.node);
    if (uses_single(n)) out.head(rows) = lambda_of(n).head(rows);
    else out.head(rows) = n.multiple->lambda().segment(w.offset, rows);
  }
  return out;
}

}  // namespace treedyn::dc
