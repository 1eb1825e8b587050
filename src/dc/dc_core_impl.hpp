// treedyn — the definitions of HandleTree's members. Each (scalar, dimension) instance is compiled
// in its own translation unit (dc_<scalar><dim>.cpp): the fixed-size elimination kernels are heavy
// to compile, and separate units build in parallel.
#pragma once

#include <cassert>
#include <stdexcept>
#include <string>

#include "treedyn/dc_core.hpp"

namespace treedyn::dc {

template <class S, int Dim>
HandleTree<S, Dim>::HandleTree(const AssemblyTree& tree, std::vector<JointSides> sides, InverseMethod method,
                               LeafBlocks leaf_blocks)
    : tree_(&tree), sides_(std::move(sides)), method_(method), nodes_(tree.nodes().size()) {
  for (std::size_t j = 0; j < sides_.size(); ++j)
    if (sides_[j].rows < 0 || sides_[j].rows > Dim)
      throw std::invalid_argument("dc::HandleTree: joint " + std::to_string(j) + " has " + std::to_string(sides_[j].rows) +
                                  " rows; a tree of dimension " + std::to_string(Dim) + " takes 0 to " + std::to_string(Dim));
  // Handles (joints that carry loads), then the arenas in the passes' visiting order. Leaves
  // eliminate nothing, so they have no W.
  std::vector<int> order;
  for (const auto& s : tree.subtrees()) order.insert(order.end(), s.begin(), s.end());
  for (const auto& level : tree.upper_levels()) order.insert(order.end(), level.begin(), level.end());
  auto k_blocks = [&](int id) -> std::size_t {
    const auto h = static_cast<std::size_t>(node(id).size());
    return tree.node(id).is_leaf() && leaf_blocks == LeafBlocks::Shared ? std::min<std::size_t>(h, 1) : h * h;
  };
  std::size_t k_size = 0, v_size = 0;
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id) {
    Node& n = node(id);
    for (int j : tree.node(id).handles)
      if (sides_[static_cast<std::size_t>(j)].rows > 0) n.handles.push_back(j);
    k_size += k_blocks(id);
    v_size += static_cast<std::size_t>(n.size());
  }
  K_arena_.assign(k_size, Mat::Zero());
  b_arena_.assign(v_size, Vec::Zero());
  f_arena_.assign(v_size, Vec::Zero());
  std::size_t k_at = 0, v_at = 0;
  for (int id : order) {
    Node& n = node(id);
    const auto h = static_cast<std::size_t>(n.size());
    n.K = std::span<Mat>(K_arena_.data() + k_at, k_blocks(id));
    n.b = std::span<Vec>(b_arena_.data() + v_at, h);
    n.f = std::span<Vec>(f_arena_.data() + v_at, h);
    k_at += k_blocks(id);
    v_at += h;
  }
  for (int id : order) setup_node(id);  // children before parents
  // The single-joint eliminations and their W (one per handle), for the nodes that have one (not
  // the leaves, half the nodes; nor the several-joint nodes, whose W is their own).
  std::size_t singles = 0, w_size = 0;
  for (const Node& n : nodes_)
    if (uses_single(n)) ++singles, w_size += static_cast<std::size_t>(n.size());
  singles_.resize(singles);
  W_arena_.assign(w_size, RowsMat::Zero());
  std::size_t s_at = 0, w_at = 0;
  for (int id : order) {
    Node& n = node(id);
    if (!uses_single(n)) continue;
    n.single = &singles_[s_at++];
    n.single->W = std::span<RowsMat>(W_arena_.data() + w_at, static_cast<std::size_t>(n.size()));
    w_at += static_cast<std::size_t>(n.size());
  }
  // Base connection: the root's handles all meet the ground.
  const Node& root = node(tree.root());
  for (int i = 0; i < root.size(); ++i) {
    const int j = root.handles[static_cast<std::size_t>(i)];
    const int rows = sides_[static_cast<std::size_t>(j)].rows;
    base_.eliminated.push_back({j, base_.m, rows, i, -1, root.holds_p[static_cast<std::size_t>(i)] != 0});
    base_.m += rows;
  }
  base_.multiple.resize(base_.m, 0, method_);
  where_.resize(sides_.size());
  for (const Eliminated& x : base_.eliminated) where_[static_cast<std::size_t>(x.joint)] = {-1, x.offset};
  for (int id = 0; id < static_cast<int>(nodes_.size()); ++id)
    for (const Eliminated& x : node(id).eliminated) where_[static_cast<std::size_t>(x.joint)] = {id, x.offset};
}

template <class S, int Dim>
void HandleTree<S, Dim>::setup_node(int id) {
  const AssemblyNode& a = tree_->node(id);
  Node& n = node(id);
  auto loaded = [&](int j) { return sides_[static_cast<std::size_t>(j)].rows > 0; };
  const int h = n.size();
  for (int j : n.handles)
    n.holds_p.push_back(std::binary_search(a.bodies.begin(), a.bodies.end(), sides_[static_cast<std::size_t>(j)].body_p));
  if (a.is_leaf()) return;
  const Node& left = node(a.left);
  const Node& right = node(a.right);
  for (int j : a.eliminated) {
    if (!loaded(j)) continue;
    const int rows = sides_[static_cast<std::size_t>(j)].rows;
    const int l = handle_index(left, j), r = handle_index(right, j);
    // A joint to ground has one side here: p_left still says which side would hold p.
    const bool p_left = l >= 0 ? left.holds_p[static_cast<std::size_t>(l)] != 0 : right.holds_p[static_cast<std::size_t>(r)] == 0;
    n.eliminated.push_back({j, n.m, rows, l, r, p_left});
    n.m += rows;
  }
  for (int j : n.handles) {
    const int l = handle_index(left, j);
    n.from.push_back(l >= 0 ? typename Node::Source{0, l} : typename Node::Source{1, handle_index(node(a.right), j)});
  }
  if (!uses_single(n) && n.m > 0) {  // several joints, or too many handles for the single kernel
    n.multiple = std::make_unique<Multiple>();
    n.multiple->resize(n.m, h, method_);
  }
}

// One joint of M rows between the children (chains, trees): fixed sizes throughout.
template <class S, int Dim>
template <int M>
void HandleTree<S, Dim>::eliminate_single(Node& n, const Node* const side[2], const JointRows<S, Dim>& jr) {
  using MatM = Eigen::Matrix<S, M, M>;
  const Eliminated& x = n.eliminated.front();
  Single& e = *n.single;
  const auto G0 = rows_of(jr, x.p_left).template topRows<M>();
  const auto G1 = rows_of(jr, !x.p_left).template topRows<M>();
  const Mat& K0 = side[0]->k(x.left, x.left);
  const Mat& K1 = side[1]->k(x.right, x.right);
  // Z and beta_hat (paper 004, Eqs. 33, 34, 37). Unit rows (G0 = s0 [I 0], G1 = -G0): G K G' is
  // K's leading block and G b b's head, taken instead of multiplied (the same numbers).
  MatM Z;
  if (jr.unit_rows) {
    Z = K0.template topLeftCorner<M, M>();
    Z += K1.template topLeftCorner<M, M>();
  } else {
    Z.noalias() = G0 * K0 * G0.transpose();
    Z.noalias() += G1 * K1 * G1.transpose();
  }
  Z.diagonal().array() += jr.compliance;
  const Eigen::Matrix<S, M, 1> rhs = single_rhs<M>(x, side, jr);
  MatM Z_inverse;
  e.singular = method_ == InverseMethod::AdjugateLdup ? !paper_inverse(Z, Z_inverse, S(1e-10))
                                                      : !cholesky_inverse<S, M>(Z, Z_inverse);
  if (e.singular) Z_inverse = small_pseudo_inverse<S, M>(Z);
  e.Z_inverse.template topLeftCorner<M, M>() = Z_inverse;
  e.beta_hat.template head<M>().noalias() = Z_inverse * rhs;
  // Y_i = K_i,e G' and W_i = Z^+ Y_i' (paper 004, Eqs. 35-36).
  Eigen::Matrix<S, Dim, M> Y[kMaxSingleHandles];
  for (int i = 0; i < n.size(); ++i) {
    const auto src = n.from[static_cast<std::size_t>(i)];
    const Mat& K = side[src.side]->k(src.index, src.side == 0 ? x.left : x.right);
    if (jr.unit_rows) Y[i] = unit_sign(x, src.side) * K.template leftCols<M>();
    else Y[i].noalias() = K * (src.side == 0 ? G0 : G1).transpose();
    e.W[static_cast<std::size_t>(i)].template topRows<M>().noalias() = Z_inverse * Y[i].transpose();
  }
  // K^C and b^C (paper 001, Eqs. 34-36); K is symmetric: fill j >= i and mirror.
  for (int i = 0; i < n.size(); ++i) {
    const auto si = n.from[static_cast<std::size_t>(i)];
    const auto& Yi = Y[i];
    for (int j = i; j < n.size(); ++j) {
      const auto sj = n.from[static_cast<std::size_t>(j)];
      Mat& K = n.k(i, j);
      if (si.side == sj.side) K = side[si.side]->k(si.index, sj.index);
      else K.setZero();
      K.noalias() -= Yi * e.W[static_cast<std::size_t>(j)].template topRows<M>();
      if (j != i) n.k(j, i) = K.transpose();
    }
    n.b[static_cast<std::size_t>(i)] = side[si.side]->b[static_cast<std::size_t>(si.index)];
    n.b[static_cast<std::size_t>(i)].noalias() += Yi * e.beta_hat.template head<M>();
  }
}

template <class S, int Dim>
void HandleTree<S, Dim>::eliminate_single(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) {
  const JointRows<S, Dim>& jr = rows[static_cast<std::size_t>(n.eliminated.front().joint)];
  dispatch_rows(n.eliminated.front().rows, [&]<int M>() { eliminate_single<M>(n, side, jr); });
}

// f.operator()<M>() for a single joint of m rows. The constructor refuses joints of more than Dim
// rows and eliminates only joints with rows, so a single-joint node has 1 <= m <= Dim, each m
// compiled for its M: any other m is a broken invariant, asserted in debug builds and refused
// (never clamped or skipped) in release.
template <class S, int Dim>
template <class F>
void HandleTree<S, Dim>::dispatch_rows(int m, F&& f) {
  assert(m >= 1 && m <= Dim && "dispatch_rows: a single joint has 1 to Dim rows");
  switch (m) {
    case 1: f.template operator()<1>(); return;
    case 2: f.template operator()<2>(); return;
    case 3: f.template operator()<3>(); return;
    default: break;
  }
  if constexpr (Dim >= 6) {
    switch (m) {
      case 4: f.template operator()<4>(); return;
      case 5: f.template operator()<5>(); return;
      case 6: f.template operator()<6>(); return;
      default: break;
    }
  }
  throw std::logic_error("dc::HandleTree: a single-joint elimination of " + std::to_string(m) +
                         " rows in a tree of dimension " + std::to_string(Dim));
}

template <class S, int Dim>
template <int M>
void HandleTree<S, Dim>::recover_single(Node& n, Node* const side[2], const JointRows<S, Dim>& jr) {
  const Eliminated& x = n.eliminated.front();
  Single& e = *n.single;
  auto lambda = e.lambda.template head<M>();
  lambda = e.beta_hat.template head<M>();
  for (int j = 0; j < n.size(); ++j)
    lambda.noalias() -= e.W[static_cast<std::size_t>(j)].template topRows<M>() * n.f[static_cast<std::size_t>(j)];
  for (int s = 0; s < 2; ++s) {  // f = G' lambda
    Vec& f = side[s]->f[static_cast<std::size_t>(s == 0 ? x.left : x.right)];
    if (jr.unit_rows) {
      f.setZero();
      f.template head<M>() = unit_sign(x, s) * lambda;
    } else {
      f.noalias() = rows_of(jr, (s == 0) == x.p_left).template topRows<M>().transpose() * lambda;
    }
  }
}

// r - G0 b0 - G1 b1 of a single joint's equations (the right-hand side of paper 004, Eq. 37).
template <class S, int Dim>
template <int M>
Eigen::Matrix<S, M, 1> HandleTree<S, Dim>::single_rhs(const Eliminated& x, const Node* const side[2],
                                                      const JointRows<S, Dim>& jr) {
  Eigen::Matrix<S, M, 1> rhs = jr.r.template head<M>();
  for (int s = 0; s < 2; ++s) {
    const Vec& b = side[s]->b[static_cast<std::size_t>(s == 0 ? x.left : x.right)];
    if (jr.unit_rows) rhs.noalias() -= unit_sign(x, s) * b.template head<M>();
    else rhs.noalias() -= rows_of(jr, (s == 0) == x.p_left).template topRows<M>() * b;
  }
  return rhs;
}

// Several joints between the children (a loop closing here): one m x m system.
template <class S, int Dim>
void HandleTree<S, Dim>::eliminate_multiple(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) {
  Multiple& e = *n.multiple;
  auto G = [&](const Eliminated& x, int s) {
    return rows_of(rows[static_cast<std::size_t>(x.joint)], (s == 0) == x.p_left).topRows(x.rows);
  };
  auto index = [](const Eliminated& x, int s) { return s == 0 ? x.left : x.right; };  // -1: ground's side
  e.Z.setZero();
  for (const Eliminated& x : n.eliminated) {
    e.beta_hat.segment(x.offset, x.rows) = rows[static_cast<std::size_t>(x.joint)].r.head(x.rows);
    for (int s = 0; s < 2; ++s) {
      if (index(x, s) < 0) continue;
      e.beta_hat.segment(x.offset, x.rows).noalias() -= G(x, s) * side[s]->b[static_cast<std::size_t>(index(x, s))];
      for (const Eliminated& x2 : n.eliminated)
        if (index(x2, s) >= 0)
          e.Z.block(x.offset, x2.offset, x.rows, x2.rows).noalias() +=
              G(x, s) * side[s]->k(index(x, s), index(x2, s)) * G(x2, s).transpose();
    }
  }
  for (const Eliminated& x : n.eliminated)
    e.Z.diagonal().segment(x.offset, x.rows).array() += rows[static_cast<std::size_t>(x.joint)].compliance;
  for (int i = 0; i < n.size(); ++i) {
    const auto src = n.from[static_cast<std::size_t>(i)];
    auto& Y = e.Y[static_cast<std::size_t>(i)];
    for (const Eliminated& x : n.eliminated)
      if (index(x, src.side) < 0) Y.middleCols(x.offset, x.rows).setZero();
      else Y.middleCols(x.offset, x.rows).noalias() = side[src.side]->k(src.index, index(x, src.side)) * G(x, src.side).transpose();
    e.W[static_cast<std::size_t>(i)] = Y.transpose();
  }
  e.solver.compute(e.Z);
  e.solver.solve_in_place(e.beta_hat);
  for (auto& W : e.W) e.solver.solve_in_place(W);
  for (int i = 0; i < n.size(); ++i) {
    const auto si = n.from[static_cast<std::size_t>(i)];
    for (int j = i; j < n.size(); ++j) {
      const auto sj = n.from[static_cast<std::size_t>(j)];
      Mat& K = n.k(i, j);
      if (si.side == sj.side) K = side[si.side]->k(si.index, sj.index);
      else K.setZero();
      K.noalias() -= e.Y[static_cast<std::size_t>(i)] * e.W[static_cast<std::size_t>(j)];
      if (j != i) n.k(j, i) = K.transpose();
    }
    n.b[static_cast<std::size_t>(i)] = side[si.side]->b[static_cast<std::size_t>(si.index)];
    n.b[static_cast<std::size_t>(i)].noalias() += e.Y[static_cast<std::size_t>(i)] * e.beta_hat;
  }
}

template <class S, int Dim>
void HandleTree<S, Dim>::assemble_node(int id, const std::vector<JointRows<S, Dim>>& rows) {
  Node& n = node(id);
  const AssemblyNode& a = tree_->node(id);
  const Node* const side[2] = {&node(a.left), &node(a.right)};
  if (uses_single(n)) {
    eliminate_single(n, side, rows);
  } else if (n.m > 0) {
    eliminate_multiple(n, side, rows);
  } else {  // the children share no joint: C is their union
    for (int i = 0; i < n.size(); ++i) {
      const auto si = n.from[static_cast<std::size_t>(i)];
      for (int j = 0; j < n.size(); ++j) {
        const auto sj = n.from[static_cast<std::size_t>(j)];
        if (si.side == sj.side) n.k(i, j) = side[si.side]->k(si.index, sj.index);
        else n.k(i, j).setZero();
      }
      n.b[static_cast<std::size_t>(i)] = side[si.side]->b[static_cast<std::size_t>(si.index)];
    }
  }
}

template <class S, int Dim>
void HandleTree<S, Dim>::connect_base(const std::vector<JointRows<S, Dim>>& rows) {
  Node& root = node(tree_->root());
  for (Vec& f : root.f) f.setZero();
  if (base_.m == 0) return;  // free-floating
  Multiple& e = base_.multiple;
  e.Z.setZero();
  for (const Eliminated& x : base_.eliminated) {
    const auto G = rows_of(rows[static_cast<std::size_t>(x.joint)], x.p_left).topRows(x.rows);
    for (const Eliminated& x2 : base_.eliminated)
      e.Z.block(x.offset, x2.offset, x.rows, x2.rows).noalias() +=
          G * root.k(x.left, x2.left) * rows_of(rows[static_cast<std::size_t>(x2.joint)], x2.p_left).topRows(x2.rows).transpose();
    e.Z.diagonal().segment(x.offset, x.rows).array() += rows[static_cast<std::size_t>(x.joint)].compliance;
  }
  e.solver.compute(e.Z);
  base_loads(rows);
}

template <class S, int Dim>
void HandleTree<S, Dim>::connect_base_bias(const std::vector<JointRows<S, Dim>>& rows) {
  Node& root = node(tree_->root());
  for (Vec& f : root.f) f.setZero();
  if (base_.m > 0) base_loads(rows);
}

// lambda = Z^+ (r - G b) at the base and the root's loads f = G' lambda (paper 001, Eqs. 43
// (open chain) and 45 (closed)), with Z already factorised.
template <class S, int Dim>
void HandleTree<S, Dim>::base_loads(const std::vector<JointRows<S, Dim>>& rows) {
  Node& root = node(tree_->root());
  Multiple& e = base_.multiple;
  for (const Eliminated& x : base_.eliminated) {
    const JointRows<S, Dim>& jr = rows[static_cast<std::size_t>(x.joint)];
    e.lambda.segment(x.offset, x.rows) = jr.r.head(x.rows);
    e.lambda.segment(x.offset, x.rows).noalias() -= rows_of(jr, x.p_left).topRows(x.rows) * root.b[static_cast<std::size_t>(x.left)];
  }
  e.solver.solve_in_place(e.lambda);
  for (const Eliminated& x : base_.eliminated)
    root.f[static_cast<std::size_t>(x.left)].noalias() =
        rows_of(rows[static_cast<std::size_t>(x.joint)], x.p_left).topRows(x.rows).transpose() * e.lambda.segment(x.offset, x.rows);
}

template <class S, int Dim>
void HandleTree<S, Dim>::assemble_bias_node(int id, const std::vector<JointRows<S, Dim>>& rows) {
  Node& n = node(id);
  const AssemblyNode& a = tree_->node(id);
  const Node* const side[2] = {&node(a.left), &node(a.right)};
  for (int i = 0; i < n.size(); ++i) {
    const auto si = n.from[static_cast<std::size_t>(i)];
    n.b[static_cast<std::size_t>(i)] = side[si.side]->b[static_cast<std::size_t>(si.index)];
  }
  if (uses_single(n)) {
    const JointRows<S, Dim>& jr = rows[static_cast<std::size_t>(n.eliminated.front().joint)];
    dispatch_rows(n.eliminated.front().rows, [&]<int M>() { bias_single<M>(n, side, jr); });
  } else if (n.m > 0) {
    bias_multiple(n, side, rows);
  }
}

template <class S, int Dim>
template <int M>
void HandleTree<S, Dim>::bias_single(Node& n, const Node* const side[2], const JointRows<S, Dim>& jr) {
  const Eliminated& x = n.eliminated.front();
  Single& e = *n.single;
  const Eigen::Matrix<S, M, 1> rhs = single_rhs<M>(x, side, jr);
  e.beta_hat.template head<M>().noalias() = e.Z_inverse.template topLeftCorner<M, M>() * rhs;
  for (int i = 0; i < n.size(); ++i)
    n.b[static_cast<std::size_t>(i)].noalias() += e.W[static_cast<std::size_t>(i)].template topRows<M>().transpose() * rhs;
}

template <class S, int Dim>
void HandleTree<S, Dim>::bias_multiple(Node& n, const Node* const side[2], const std::vector<JointRows<S, Dim>>& rows) {
  Multiple& e = *n.multiple;
  for (const Eliminated& x : n.eliminated) {
    const JointRows<S, Dim>& jr = rows[static_cast<std::size_t>(x.joint)];
    e.lambda.segment(x.offset, x.rows) = jr.r.head(x.rows);  // lambda holds the right-hand side here
    for (int s = 0; s < 2; ++s)
      if (const int k = s == 0 ? x.left : x.right; k >= 0)
        e.lambda.segment(x.offset, x.rows).noalias() -= rows_of(jr, (s == 0) == x.p_left).topRows(x.rows) * side[s]->b[static_cast<std::size_t>(k)];
  }
  e.beta_hat = e.lambda;
  e.solver.solve_in_place(e.beta_hat);
  for (int i = 0; i < n.size(); ++i)
    n.b[static_cast<std::size_t>(i)].noalias() += e.W[static_cast<std::size_t>(i)].transpose() * e.lambda;
}

template <class S, int Dim>
void HandleTree<S, Dim>::disassemble_node(int id, const std::vector<JointRows<S, Dim>>& rows) {
  Node& n = node(id);
  const AssemblyNode& a = tree_->node(id);
  Node* const side[2] = {&node(a.left), &node(a.right)};
  for (int i = 0; i < n.size(); ++i) {  // handle coincidence (paper 001, Eqs. 32-33)
    const auto src = n.from[static_cast<std::size_t>(i)];
    side[src.side]->f[static_cast<std::size_t>(src.index)] = n.f[static_cast<std::size_t>(i)];
  }
  // lambda = beta_hat - sum_j W_j f_j (paper 004, Eq. 45); the children's eliminated handles get
  // f = G' lambda.
  if (uses_single(n)) {
    const JointRows<S, Dim>& jr = rows[static_cast<std::size_t>(n.eliminated.front().joint)];
    dispatch_rows(n.eliminated.front().rows, [&]<int M>() { recover_single<M>(n, side, jr); });
  } else if (n.m > 0) {
    Multiple& e = *n.multiple;
    e.lambda = e.beta_hat;
    for (int j = 0; j < n.size(); ++j) e.lambda.noalias() -= e.W[static_cast<std::size_t>(j)] * n.f[static_cast<std::size_t>(j)];
    for (const Eliminated& x : n.eliminated)
      for (int s = 0; s < 2; ++s)
        if (const int k = s == 0 ? x.left : x.right; k >= 0)
          side[s]->f[static_cast<std::size_t>(k)].noalias() =
              rows_of(rows[static_cast<std::size_t>(x.joint)], (s == 0) == x.p_left).topRows(x.rows).transpose() *
              e.lambda.segment(x.offset, x.rows);
  }
}

template <class S, int Dim>
bool HandleTree<S, Dim>::any_singular() const {
  if (base_.m > 0 && base_.multiple.solver.singular()) return true;
  for (const Node& n : nodes_) {
    if (uses_single(n) && n.single->singular) return true;
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
    if (uses_single(n)) out.head(rows) = n.single->lambda.head(rows);
    else out.head(rows) = n.multiple->lambda.segment(w.offset, rows);
  }
  return out;
}

}  // namespace treedyn::dc
