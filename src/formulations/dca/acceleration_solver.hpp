// Featherstone's divide-and-conquer forward dynamics at the acceleration level, on the spanning
// tree's joint coordinates: the right-hand side of `dca`, and what `hdca` uses to report
// accelerations and joint reactions at output times.
//
// The equations and symbols are those of include/treedyn/formulations/dca.hpp (steps 1-5 there).
#pragma once

#include <optional>

#include "../common/joint_tree.hpp"
#include "../common/welded_bodies.hpp"
#include "kinematics/principal_inertia.hpp"
#include "treedyn/formulation.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/stage_timer.hpp"

namespace treedyn::jc {

/// What an AccelerationSolver may take from another instead of making its own (hdca's
/// reporter, from its engine); each may be null, and what is given must outlive the solver.
struct AccelerationSolverParts {
  const JointSpace* joints = nullptr;  // the same model's and topology's joint space
  /// A tree to run its passes on where it is the one it would make (HandleTree::made_as); its
  /// blocks are overwritten, so its owner must rebuild every block it reads in each pass, as
  /// hdca's engine does (0.5 KB a body less on a ball-joint chain).
  dc::HandleTree<double, 6>* core = nullptr;
  const std::vector<PrincipalInertia>* inertia = nullptr;  // the model's, principal_inertias(model)
  /// Joint motions to make its own in (sized for `joints`), where their owner makes every one it
  /// reads anew before reading it, as hdca's engine does in each right-hand side (place(), move()):
  /// the reporter's are made and read within one evaluate() and the reactions() after it
  /// (0.3 KB a body less on a ball-joint chain).
  JointMotions* motions = nullptr;
  /// Whether the solve treats welded bodies as one (WeldedBodies): off only to test that it
  /// changes nothing beyond round-off.
  bool merge_welds = true;
};

class AccelerationSolver {
 public:
  /// Stages marked in the timer given to evaluate(), in this order.
  static StageTimer make_timer() {
    return StageTimer{"kinematics", "rows", "assemble", "base", "disassemble", "joint_accelerations"};
  }

  /// Refers to `model`, its `topology` and assembly `tree` (for `threading.threads` threads) and
  /// `external` (may be null), which must outlive it (hdca's reporter shares its engine's). Where
  /// the spanning tree welds bodies together, the core's leaves are the welded groups
  /// (WeldedBodies), on a tree of its own made for them.
  AccelerationSolver(const Model& model, const Topology& topology, const AssemblyTree& tree, const ExternalLoads* external,
                     const Threading& threading, double baumgarte_alpha = 0.0, double baumgarte_beta = 0.0,
                     const AccelerationSolverParts& borrowed = {});
  AccelerationSolver(const AccelerationSolver&) = delete;
  AccelerationSolver& operator=(const AccelerationSolver&) = delete;

  const JointSpace& joints() const { return joints_; }
  const Parallel& parallel() const { return parallel_; }
  const Topology& topology() const { return topology_; }
  const AssemblyTree& tree() const { return tree_; }

  /// Body states (accelerations included) into `bodies` (resized to the model's bodies: the
  /// caller's, so that a reporter writes a sample's states where the sample keeps them) and joint
  /// accelerations at (t, q, v). Throws SimulationError if the accelerations are not finite.
  /// Marks the stages in `timer` if given.
  void evaluate(double t, const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                SystemState& bodies, StageTimer* timer = nullptr);
  const Eigen::VectorXd& vdot() const { return vdot_; }
  /// Reaction of every model joint on its child after evaluate() into `bodies` (zero for free joints).
  void reactions(const SystemState& bodies, std::vector<JointReaction>& out) const;

  /// Rotational springs and actuators unwrap their angles against the state (q, v), whose body
  /// states it makes in `bodies` (resized to the model's bodies; nothing is done, and `bodies` is
  /// left as it is, unless the loads measure angles).
  void update_angle_references(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                               SystemState& bodies);
  /// The same from absolute body states (after a restart).
  void restart_angle_references(const SystemState& bodies) { loads_.update_angle_references(bodies); }
  /// Body poses and twists at (q, v) (accelerations zero), without the dynamics.
  void kinematics(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                  SystemState& out);

 private:
  void joint_rows(int j, const SystemState& bodies);
  void leaf_coefficients(int b, const SystemState& bodies);
  /// The centre of mass, angular velocity and F_e of leaf b's welded group (welded_.any()).
  void composite_state(int c, const SystemState& bodies, Vec3& r, Vec3& w, Mat3& J_inverse, Vec6& F_e);
  void body_acceleration(int b, SystemState& bodies);
  /// A merged weld's reaction on its child into `out` (reactions()).
  void weld_reactions(const SystemState& bodies, std::vector<JointReaction>& out) const;
  void joint_acceleration(int k, const SystemState& bodies);

  const Model& model_;
  const Topology& topology_;
  const AssemblyTree& tree_;
  std::optional<JointSpace> own_joints_;  // unless it uses another's
  const JointSpace& joints_;
  JointLayout layout_;
  WeldedBodies welded_;
  WeldedTree core_tree_;
  std::vector<dc::JointSides> core_sides_;  // per core joint
  std::vector<int> root_joint_;             // per welded group: the tree joint that places its root
  std::optional<dc::HandleTree<double, 6>> own_core_;  // unless it runs on another's
  dc::HandleTree<double, 6>& core_;
  AppliedLoads loads_;
  Parallel parallel_;
  double baumgarte_alpha_, baumgarte_beta_;
  JointMotions own_motion_;  // unless it makes them in another's
  JointMotions& motion_;
  std::vector<Vec3> points_;  // per model joint
  std::vector<Rows6> rows_;   // per core joint
  // Each body's applied wrench, made F_e = wrench - [0; w x (J w)] in place by leaf_coefficients
  // where the body is a leaf of its own; a welded group's members' are kept (weld_reactions reads
  // them), and the group's F_e made in group_wrenches_.
  std::vector<Vec6> wrenches_;
  std::vector<Vec6> group_wrenches_;     // per welded group, about its centre of mass
  std::vector<Vec3> group_centres_;      // per welded group, global (per evaluation)
  mutable std::vector<Vec6> weld_sums_;  // reactions()' scratch: per body, about the global origin
  std::vector<Mat3> J_inverse_;           // per leaf, global (per evaluation)
  std::vector<PrincipalInertia> own_inertia_;      // unless it uses another's
  const std::vector<PrincipalInertia>& inertia_;  // body frame, in principal axes (constant)
  std::vector<Vec3> handle_l_;                     // l_h of every leaf's handles, leaf after leaf
  std::vector<int> handle_offset_;                 // where each leaf's l_h start
  std::span<Vec3> handles_of(int b);
  Eigen::VectorXd vdot_;
};

}  // namespace treedyn::jc
