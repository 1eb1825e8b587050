// treedyn — bodies welded together as one rigid body for the joint-coordinate solves.
//
// A weld (a fixed joint) of the spanning tree between two bodies adds no coordinate, yet as a
// handle of the divide-and-conquer core it costs a leaf for its child and a 6-row elimination
// (a robot's hands, head, sensor and flange links). Welded bodies move as one rigid body, so the
// solve may treat them as one: its mass, centre of mass and inertia summed once (Featherstone's
// composite rigid body; Pinocchio and RBDL merge fixed joints when they build a model). The
// model, its coordinates and what a run reports stay those of the bodies: the members' states
// follow from the composite's, and a merged weld's reaction from its child side's equations of
// motion (AccelerationSolver).
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "kinematics/principal_inertia.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/joint_space.hpp"
#include "treedyn/model.hpp"
#include "treedyn/topology.hpp"

namespace treedyn::jc {

/// A value type: it refers to nothing (the contracted model is its own).
class WeldedBodies {
 public:
  /// Merges every weld of `topology`'s spanning tree: bodies welded to each other form a group,
  /// bodies welded to ground (and the bodies welded to those) are static and leave the solve.
  /// Merges nothing if a kept joint would join a group to itself or ground to ground (a loop
  /// closed across welded bodies) or have a static child, or if every body is static, so that the
  /// contracted model is always one the tree builder and the core take. `merge` false: merges
  /// nothing (to test that merging changes nothing beyond round-off).
  WeldedBodies(const Model& model, const Topology& topology, bool merge = true);

  /// Whether any weld is merged; if not, every body is its own composite and nothing below is
  /// needed.
  bool any() const { return !welds_.empty(); }
  int count() const { return static_cast<int>(root_.size()); }
  /// The group of each body; kGround for a static body.
  int of(int body) const { return of_[static_cast<std::size_t>(body)]; }

  // The core's view, whether or not anything is merged: its leaves are the groups (or the
  // bodies), its joints the kept joints (or the model's).
  /// The core's leaf of a body (kGround for ground and static bodies).
  int leaf_of(int body) const { return any() && body != kGround ? of(body) : body; }
  /// The body a leaf stands for, or -1 where it stands for a group of several.
  int body_of_leaf(int leaf) const {
    if (!any()) return leaf;
    const std::span<const int> m = members(leaf);
    return m.size() == 1 ? m[0] : -1;
  }
  /// How many leaves and joints the core has.
  int leaf_count() const { return any() ? count() : body_count_; }
  int core_joint_count() const { return any() ? static_cast<int>(kept_.size()) : joint_count_; }
  /// A model joint's index among the core's joints (-1 for a merged weld), and back.
  int core_joint(int joint) const { return any() ? kept_index(joint) : joint; }
  int model_joint(int core_joint) const { return any() ? kept_[static_cast<std::size_t>(core_joint)] : core_joint; }
  /// The bodies welded to ground, directly or through other welds: at rest.
  const std::vector<int>& static_bodies() const { return static_; }
  /// The member nearest the ground, whose body frame the composite's constants are in.
  int root(int c) const { return root_[static_cast<std::size_t>(c)]; }
  std::span<const int> members(int c) const {
    const auto from = static_cast<std::size_t>(member_offset_[static_cast<std::size_t>(c)]);
    const auto to = static_cast<std::size_t>(member_offset_[static_cast<std::size_t>(c) + 1]);
    return {members_.data() + from, to - from};
  }
  double mass(int c) const { return contracted_.bodies[static_cast<std::size_t>(c)].mass; }
  /// The centre of mass in the root's body frame (relative to the root's centre of mass).
  const Vec3& centre(int c) const { return centre_[static_cast<std::size_t>(c)]; }
  /// The rotational inertia about the centre of mass, in the root's body frame.
  const PrincipalInertia& inertia(int c) const { return inertia_[static_cast<std::size_t>(c)]; }
  /// One body per group (its mass and inertia) and the joints that are not merged between them
  /// and ground, in model order, for the topology and assembly tree of the solve.
  const Model& contracted() const { return contracted_; }
  /// The model joint of each of the contracted model's joints.
  const std::vector<int>& kept_joints() const { return kept_; }
  /// A model joint's index among the contracted model's joints; -1 for a merged weld.
  int kept_index(int joint) const { return kept_index_[static_cast<std::size_t>(joint)]; }
  /// The core's joint sides from the model joints' `sides`: those of the kept joints, with groups
  /// (kGround: static bodies) as their bodies; `sides` themselves where nothing is merged.
  std::vector<dc::JointSides> core_sides(const std::vector<dc::JointSides>& sides) const;
  /// A merged weld: its model joint and its two bodies as the spanning tree orders them (parent
  /// kGround for a weld to ground).
  struct Weld {
    int joint, parent, child;
  };
  /// The merged welds, each after the welds below it (children before parents).
  const std::vector<Weld>& welds() const { return welds_; }
  /// Per group, the tree joint of `joints` (the model's joint space) that places its root: its
  /// rotation matrix is the group's after forward kinematics (none where nothing is merged).
  std::vector<int> root_tree_joints(const JointSpace& joints) const;

 private:
  int body_count_ = 0, joint_count_ = 0;  // the model's
  std::vector<int> of_, root_, member_offset_, members_, kept_, kept_index_, static_;
  std::vector<Weld> welds_;
  std::vector<Vec3> centre_;
  std::vector<PrincipalInertia> inertia_;
  Model contracted_;
};

/// The tree the core runs on: the welded groups' own assembly tree (on their graph, for `threads`
/// threads) where any weld is merged, the model's otherwise. Refers to `model_tree`.
class WeldedTree {
 public:
  WeldedTree(const WeldedBodies& welded, const AssemblyTree& model_tree, int threads);
  const AssemblyTree& tree() const { return tree_ ? *tree_ : model_tree_; }

 private:
  std::optional<Topology> topology_;
  std::optional<AssemblyTree> tree_;
  const AssemblyTree& model_tree_;
};

}  // namespace treedyn::jc
