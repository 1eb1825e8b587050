// treedyn — the absolute-coordinate constraint blocks (kinematics.hpp) grouped per joint, as the
// shared assembly tree (dc_core.hpp) sees them: one handle per joint, whose rows stack the joint's
// own equations and then its drivers'. Shared by the formulations that solve saddle-point
// systems [M G'; G 0] on the tree in absolute coordinates (ali3, half- and fully-implicit).
//
// A formulation chooses its body coordinates x; to_coords(J, body, m) maps a block's twist
// Jacobian (m x 6, J V with V = [v; w] global) to its rows in x.
#pragma once

#include <cassert>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "treedyn/dc_core.hpp"
#include "treedyn/kinematics.hpp"
#include "treedyn/parallel.hpp"

namespace treedyn {

class JointBlocks {
 public:
  /// One block's J_P' lambda_k and J_C' lambda_k (on_p unset for a block to ground): what
  /// wrench_on adds for it, made where the block is evaluated. A formulation that keeps them reads
  /// 96 bytes a block where its leaves need the wrenches, not the 848-byte block (which, at
  /// 65,536 bodies, a pass's prologue has long evicted when the leaves run). A block's bodies are
  /// its joint's (the constructor checks).
  struct BlockLoads {
    Vec6 on_p = Vec6::Zero(), on_c = Vec6::Zero();
  };
  /// Evaluates every block once at the model's initial state to learn the row counts; throws
  /// std::invalid_argument naming the joint if one has more than max_rows equations.
  JointBlocks(const Model& model, const ConstraintSet& constraints, int max_rows, const std::string& formulation);

  const std::vector<int>& blocks_of(int joint) const { return blocks_of_[static_cast<std::size_t>(joint)]; }
  /// Block k's equations (fixed by its joint or driver: what every evaluation gives).
  int block_rows(int k) const { return block_rows_[static_cast<std::size_t>(k)]; }
  int rows(int joint) const { return sides_[static_cast<std::size_t>(joint)].rows; }
  /// The joints' bodies and row counts, for dc::HandleTree.
  const std::vector<dc::JointSides>& sides() const { return sides_; }

  /// f(block, first row in the joint's rows, rows) for every block of a joint.
  template <class F>
  void for_each_block(int joint, F&& f) const {
    int at = 0;
    for (int k : blocks_of(joint)) {
      const int m = block_rows(k);
      f(k, at, m);
      at += m;
    }
  }

  /// Evaluates `parts` of a joint's blocks at (t, state) into `blocks`.
  void evaluate(int joint, double t, const SystemState& state, std::vector<ConstraintBlock>& blocks,
                ConstraintParts parts = {}) const {
    for (int k : blocks_of(joint)) constraints_->evaluate_block(k, t, state, blocks[static_cast<std::size_t>(k)], parts);
  }

  /// Fills a joint's tree rows from evaluated blocks: r from rhs(block) and, with `jacobians`,
  /// G_p, G_c from to_coords (the compliance is left as it is). Without `jacobians` the rows the
  /// elimination matrices were built with are kept (held tangents, bias-only passes).
  template <int Dim, class ToCoords, class Rhs>
  void fill(int joint, bool jacobians, const std::vector<ConstraintBlock>& blocks, dc::JointRows<double, Dim>& jr,
            ToCoords&& to_coords, Rhs&& rhs) const {
    if (rows(joint) == 0) return;
    if (jacobians) reset_rows(joint, jr);
    for_each_block(joint, [&](int k, int at, int m) {
      fill_block(blocks[static_cast<std::size_t>(k)], at, m, jacobians, jr, to_coords, rhs);
    });
  }
  /// evaluate(), fill() and, given `loads`, block_loads() at `lambda`, one block at a time
  /// through a block on the stack: the same rows and loads, and no block kept. A pass over many
  /// joints then writes only their rows, not an 848-byte block a joint. A spherical joint's own
  /// block goes through a fixed-size PointBlock (ConstraintSet::visit_block: the same
  /// numbers), any other through a ConstraintBlock, so `rhs` and `to_coords` take either block's
  /// types (rhs reads phi, phi_t or gamma). `lambda` and `loads` are given together or not at
  /// all; parts.jdot is not asked for (nothing is allocated).
  ///
  /// With `arm_rows` (twist coordinates: to_coords the identity), a joint whose rows are one block
  /// of a point and at most two axes (ball, universal, revolute joints without drivers) is held
  /// as arm rows (dc::JointRows: the same G, 6 to 12 numbers where G takes 36 to 60); any other
  /// joint's rows as G.
  template <int Dim, class ToCoords, class Rhs>
  void evaluate_rows(int joint, double t, const SystemState& state, ConstraintParts parts, bool jacobians,
                     dc::JointRows<double, Dim>& jr, ToCoords&& to_coords, Rhs&& rhs,
                     const Eigen::VectorXd* lambda = nullptr, std::vector<BlockLoads>* loads = nullptr,
                     bool arm_rows = false) const {
    assert((lambda == nullptr) == (loads == nullptr) && "JointBlocks::evaluate_rows: lambda and loads go together");
    assert(!parts.jdot);
    if (rows(joint) == 0) return;
    if (jacobians) reset_rows(joint, jr);
    const bool arms = arm_rows && blocks_of(joint).size() == 1;
    for_each_block(joint, [&](int k, int at, int m) {
      auto fill_and_load = [&](const auto& block) {
        bool held = false;
        if constexpr (Dim == 6) held = arms && held_as_arms(block, jacobians, jr);
        if (held) jr.r.head(m) = rhs(block);
        else fill_block(block, at, m, jacobians, jr, to_coords, rhs);
        if (loads) block_load(k, block, *lambda, (*loads)[static_cast<std::size_t>(k)]);
      };
      constraints_->visit_block(k, t, state, parts, fill_and_load);
    });
  }

  /// J_i' lambda: the constraint wrench [force; torque] on `body` (global, at its centre of mass)
  /// from the blocks of the joints it holds (`handles`) and the multipliers lambda (laid out as
  /// the ConstraintSet's rows). A formulation maps it to its coordinates once per body (G_i' lambda
  /// = T' J_i' lambda when to_coords(J) = J T), not once per block.
  Vec6 wrench_on(int body, std::span<const int> handles, const std::vector<ConstraintBlock>& blocks,
                 const Eigen::VectorXd& lambda) const {
    Vec6 wrench = Vec6::Zero();
    for (int j : handles)
      for (int k : blocks_of(j)) {
        const ConstraintBlock& b = blocks[static_cast<std::size_t>(k)];
        wrench.noalias() += (b.parent == body ? b.J_P : b.J_C).transpose() * lambda.segment(constraints_->offset(k), b.size());
      }
    return wrench;
  }
  /// The BlockLoads of a joint's evaluated blocks at multipliers lambda, into loads (one a block).
  void block_loads(int joint, const std::vector<ConstraintBlock>& blocks, const Eigen::VectorXd& lambda,
                   std::vector<BlockLoads>& loads) const {
    for (int k : blocks_of(joint)) block_load(k, blocks[static_cast<std::size_t>(k)], lambda, loads[static_cast<std::size_t>(k)]);
  }
  /// wrench_on from the blocks' BlockLoads (block_loads, at the same lambda): the same sums in the
  /// same order, so the same numbers bit for bit.
  Vec6 wrench_on(int body, std::span<const int> handles, const std::vector<BlockLoads>& loads) const {
    Vec6 wrench = Vec6::Zero();
    for (int j : handles) {
      const bool p_side = sides_[static_cast<std::size_t>(j)].body_p == body;
      for (int k : blocks_of(j)) {
        const BlockLoads& x = loads[static_cast<std::size_t>(k)];
        wrench += p_side ? x.on_p : x.on_c;
      }
    }
    return wrench;
  }

  /// lambda += scale * (the tree's multipliers of joint j), block by block.
  template <class Tree>
  void add_multiplier(int joint, const Tree& tree, double scale, Eigen::VectorXd& lambda) const {
    if (rows(joint) == 0) return;
    const auto tree_lambda = tree.multiplier(joint);
    for_each_block(joint, [&](int k, int at, int m) {
      lambda.segment(constraints_->offset(k), m) += scale * tree_lambda.segment(at, m);
    });
  }

  /// The same for every joint. Joints run through `parallel` (each writes only its own rows), so
  /// that every thread reads the multipliers of the subtrees it eliminated.
  template <class Tree>
  void add_multipliers(const Tree& tree, double scale, Eigen::VectorXd& lambda, const Parallel& parallel) const {
    parallel.for_each(static_cast<int>(sides_.size()), [&](int j) { add_multiplier(j, tree, scale, lambda); });
  }

  /// The body whose leaf adds joint j's multipliers inside a tree pass (add_multiplier from the
  /// disassembly's leaf callback, where every multiplier above the leaf is known): its child, or
  /// its parent if the child is the ground. One body per joint, so no two threads write the same
  /// rows.
  int owner(int joint) const {
    const dc::JointSides& s = sides_[static_cast<std::size_t>(joint)];
    return s.body_c != kGround ? s.body_c : s.body_p;
  }

 private:
  template <int Dim>
  void reset_rows(int joint, dc::JointRows<double, Dim>& jr) const {  // keeps the compliance
    const double c = jr.compliance;
    jr.reset(rows(joint));
    jr.compliance = c;
  }
  /// Whether a joint's one block b goes into jr as arm rows: with `jacobians` it is tried (a
  /// PointBlock gives its arms; a ConstraintBlock's Jacobians are checked for the form,
  /// JointRows::hold_as_arms), without them jr keeps what the last pass with them chose.
  template <class Block>
  static bool held_as_arms(const Block& b, bool jacobians, dc::JointRows<double, 6>& jr) {
    if (!jacobians) return jr.arm_rows;
    if constexpr (std::is_same_v<Block, PointBlock>) {
      jr.set_arm_rows(b.arm_P, b.arm_C);
      return true;
    } else {
      return jr.hold_as_arms(b.J_P, b.J_C, b.size(), b.parent == kGround);
    }
  }
  /// A PointBlock's rows in fixed sizes (3), a ConstraintBlock's in its own.
  template <class Block>
  static constexpr int kRows = std::is_same_v<Block, PointBlock> ? 3 : Eigen::Dynamic;
  /// Rows [at, at + m) of a joint's rows from its evaluated block b (a ConstraintBlock or a PointBlock).
  template <int Dim, class Block, class ToCoords, class Rhs>
  static void fill_block(const Block& b, int at, int m, bool jacobians, dc::JointRows<double, Dim>& jr,
                         ToCoords& to_coords, Rhs& rhs) {
    constexpr int M = kRows<Block>;
    if (jacobians) {
      if (b.parent != kGround) jr.edit_G_p().template block<M, Dim>(at, 0, m, Dim) = to_coords(b.J_P, b.parent, m);
      jr.edit_G_c().template block<M, Dim>(at, 0, m, Dim) = to_coords(b.J_C, b.child, m);
    }
    jr.r.template segment<M>(at, m) = rhs(b);
  }
  /// Block k's BlockLoads from its evaluated b (a ConstraintBlock or a PointBlock) at lambda.
  template <class Block>
  void block_load(int k, const Block& b, const Eigen::VectorXd& lambda, BlockLoads& x) const {
    const auto lambda_k = lambda.template segment<kRows<Block>>(constraints_->offset(k), b.size());
    x.on_c.setZero();
    x.on_c.noalias() += b.J_C.transpose() * lambda_k;
    if (b.parent == kGround) return;
    x.on_p.setZero();
    x.on_p.noalias() += b.J_P.transpose() * lambda_k;
  }

  const ConstraintSet* constraints_;
  std::vector<std::vector<int>> blocks_of_;
  std::vector<int> block_rows_;
  std::vector<dc::JointSides> sides_;
};

}  // namespace treedyn
