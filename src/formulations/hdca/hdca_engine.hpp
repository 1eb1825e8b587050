// HDCA's two stages on any kinematics (SpatialKinematics, PlanarKinematics) and scalar; the
// equations are those of include/treedyn/formulations/hdca.hpp, symbols in its glossary.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "../common/welded_bodies.hpp"
#include "geometry.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/external_loads.hpp"
#include "treedyn/parallel.hpp"
#include "treedyn/stage_timer.hpp"
#include "treedyn/topology.hpp"

namespace treedyn::hdca {

template <class Kin>
class Engine {
 public:
  using S = typename Kin::Scalar;
  static constexpr int Dim = Kin::Dim;
  using G = Geometry<S, Dim>;
  using Vec = typename G::Vec;
  using Point = typename G::Point;
  using Rows = dc::JointRows<S, Dim>;

  /// Stages marked in the timer given to velocities() and momentum_rates(), in this order
  /// ("kinematics" is place() with what follows each tree joint's placing: its rows and H p;
  /// "rows" is the loop-closing joints' rows and the bodies' known momenta).
  static StageTimer make_timer() {
    return StageTimer{"kinematics", "rows", "assemble", "base", "disassemble", "velocities", "momentum_rates"};
  }

  /// Refers to `model`, `topology`, `tree` and `external` (may be null), which must outlive it.
  /// In space, where the spanning tree welds bodies together, the core's leaves are the welded
  /// groups (jc::WeldedBodies), on a tree of its own made for them (`merge_welds` false: every
  /// body a leaf, to test that merging changes nothing beyond round-off).
  Engine(const Model& model, const Topology& topology, const AssemblyTree& tree, const ExternalLoads* external,
         const Threading& threading, InverseMethod inverse, bool merge_welds = true);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  Kin& kinematics() { return kin_; }
  const JointSpace& joints() const { return kin_.joints(); }
  const Parallel& parallel() const { return parallel_; }

  /// Canonical momenta p of the joint velocities v at q with no impulse at the cut joints
  /// (sigma = 0, paper 001 Sect. 2.1): p_k = H_k' (momentum of the bodies outboard of k, at o_k).
  void momenta(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
               Eigen::Ref<Eigen::VectorXd> p);

  /// First stage (paper 001 Alg. 3 steps 1-7): body twists, constraint impulses and joint
  /// velocities v at (q, p).
  void velocities(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& p,
                  Eigen::Ref<Eigen::VectorXd> v, StageTimer* timer = nullptr);
  /// Second stage (steps 8-10): pdot at time t, after velocities().
  void momentum_rates(double t, Eigen::Ref<Eigen::VectorXd> pdot, StageTimer* timer = nullptr);

  /// Per joint velocity: the inertia of the joint's child body alone about that freedom,
  /// h' M_c(o) h, at the configuration momenta() was called with.
  const Eigen::VectorXd& local_inertia() const { return local_inertia_; }

  /// Body twists at the centres of mass after velocities().
  std::span<const Vec> twists() const { return V_; }
  /// True if the last velocity solve met a singular elimination (redundant or singular loops).
  bool singular() const { return core_.any_singular(); }
  /// Its tree, on which the reporter (jc::AccelerationSolver) may run its passes between the
  /// engine's: every right-hand side rebuilds the blocks it reads (BiasPasses::Never), and reads
  /// the loops' multipliers (momentum_rates) after its own velocities() pass.
  dc::HandleTree<S, Dim>& core() { return core_; }

 private:
  struct Incidence {  // a tree joint at a body
    int k;            // tree joint
    int child;        // its child body (the second stage's sweep reads it here, not in the TreeJoint)
    S sign;           // +1: the body is its child, -1: its parent
    int handle;       // its handle index in the body's leaf, -1 if it carries no constraint rows,
                      // kMergedWeld for a weld inside a welded group (its force in weld_force_)
  };
  static constexpr int kMergedWeld = -2;
  struct Link {       // what the first stage's sweeps over the tree joints read of a TreeJoint (16 bytes of its 104)
    int parent, child, v_offset, nv;
  };
  struct LoopEnd {    // a loop-closing joint at a body
    int slot;         // its place in loop_joints_ (and in rate_load_p_, rate_load_c_)
    bool child;
  };

  /// H_k p_k of every tree joint, once per right-hand side (its bodies and the second stage read it).
  void joint_momentum(int k);
  void known_momentum(int b);
  void joint_rows(int j);
  void leaf_coefficients(int b);
  /// A leaf's coefficients from its M^-1 and known momentum P (a body's or a welded group's).
  void leaf_in(int b, const typename G::InverseInertia& Mi, const Vec& P);
  /// A welded group's centre of mass, inverse inertia and known momentum, and its handles' arms.
  void group_coefficients(int g);
  void body_twist(int b);
  /// A leaf's twist V = M^-1 (P + sum_h S(l_h) T_h), its handles' loads T_h kept.
  void leaf_twist(int b, const typename G::InverseInertia& Mi, const Vec& P_known, Vec& V);
  /// The force of each merged weld on its tree child, from the momenta of the bodies on the child's
  /// side (after the first stage's solve).
  void weld_forces();
  void make_groups(const Topology& topology);
  void joint_velocity(int k, Eigen::Ref<Eigen::VectorXd> v) const;
  void momentum_residual(int b);
  /// out_k = sum over the bodies i outboard of tree joint k of w_i shifted to o_k. Sums in w:
  /// on return w_c holds body c's own w and all its outboard bodies' (shifted to c).
  void accumulate_outboard(std::vector<Vec>& w, std::vector<Vec>& out);
  /// One step of it: out_k from w_c (final once c's outboard joints' steps have run), added to w_p.
  void accumulate_joint(int k, std::vector<Vec>& w, std::vector<Vec>& out);
  void joint_rate(int k, Eigen::Ref<Eigen::VectorXd> pdot) const;
  Point handle_point(int joint) const;
  /// Full load of tree joint k on body b (sign H p + constraint impulse).
  Vec tree_load(const Incidence& x, int b) const;
  /// Its force half alone (the first 3, planar 2, entries: what a shift's rate reads).
  Point tree_force(const Incidence& x, int b) const;
  std::span<const Incidence> incidences_of(int b) const { return lists_of(incidences_, incidence_offset_, b); }
  std::span<const LoopEnd> loop_ends_of(int b) const { return lists_of(loop_ends_, loop_end_offset_, b); }
  template <class T>
  static std::span<const T> lists_of(const std::vector<T>& all, const std::vector<int>& offset, int b) {
    const auto from = static_cast<std::size_t>(offset[static_cast<std::size_t>(b)]);
    return {all.data() + from, static_cast<std::size_t>(offset[static_cast<std::size_t>(b) + 1]) - from};
  }

  const Model& model_;
  Kin kin_;
  jc::WeldedBodies welded_;                       // in space only
  const bool merged_;                             // welded_.any(), read where every body passes
  jc::WeldedTree core_tree_;
  dc::HandleTree<S, Dim> core_;
  Parallel parallel_;
  // Each body's tree joints and loop ends, body after body (one array each, not a heap block a
  // body: every sweep over the bodies reads them); a body's run starts at its offset.
  std::vector<Incidence> incidences_;
  std::vector<int> incidence_offset_;
  std::vector<LoopEnd> loop_ends_;
  std::vector<int> loop_end_offset_;
  std::vector<int> loop_joints_;
  std::vector<Link> links_;                         // per tree joint
  std::vector<int> child_handle_;                   // per tree joint: handle index in its child's leaf
  std::vector<Point> handle_l_;                     // l_h of every body's handles, body after body
  std::vector<int> handle_joint_;                   // their joints (as handle_l_): read in body order
                                                    // without each leaf's record (a read from memory
                                                    // a body on large trees)
  std::vector<Vec> handle_load_;                    // their loads G' lambda from the last solve (as handle_l_)
  std::vector<int> handle_offset_;
  std::vector<Rows> rows_;
  Eigen::Matrix<S, Eigen::Dynamic, 1> p_;           // canonical momenta in S
  Eigen::VectorXd local_inertia_;
  std::vector<Vec> P_known_, V_, R_, A_;  // R_: momenta() and momentum_rates() sum it in place
  std::vector<Vec> Hp_;                             // per tree joint: H_k p_k (after velocities())
  std::vector<Vec> rate_load_p_, rate_load_c_;      // per loop-closing joint: its Jdot' sigma
  // Welded groups (welded_.any()): per group, its centre of mass, inverse inertia and known
  // momentum; per group member, the handle slots (in handle_load_) of its kept joints; per
  // body, its side's unbalanced force (weld_forces' sums); per tree joint, a merged weld's force.
  std::vector<Point> group_com_;
  std::vector<typename G::InverseInertia> group_inverse_inertia_;
  std::vector<Vec> group_P_;
  std::vector<int> root_joint_;  // per group: the tree joint that places its root
  std::vector<int> member_slot_offset_, member_slots_;
  std::vector<Point> side_force_;
  std::vector<Point> weld_force_;
  std::span<Point> handles_of(int b);
};

}  // namespace treedyn::hdca
