// treedyn — a model's joint coordinates as a user sets and reads them, the same under every
// formulation.
//
// Layout. Every joint of the model in model order, loop-closing joints included, then one free
// joint for the first body of each floating sub-system (bodies with no path of joints to ground),
// named after that body. Each entry holds nq positions in q and nv rates in qd, in the joint's own
// sense (from its parent's frame to its child's), whatever direction the formulations' spanning
// tree runs it in:
//   type         q                                  qd (rates, one per degree of freedom)
//   revolute     angle about z                      its rate
//   prismatic    displacement along z               its rate
//   cylindrical  angle about z, displacement        their rates
//   universal    angle about the parent's z, angle about the child's x      their rates
//   spherical    quaternion w, x, y, z of the child frame in the parent frame
//                                                   angular velocity of the child frame relative to
//                                                   the parent's, in child-frame axes
//   planar       x, y (along the parent's x, y), angle about z              their rates
//   fixed        -                                  -
//   free         position x, y, z of the child frame's origin in the parent frame, then its
//                quaternion w, x, y, z              the position's rate in parent-frame axes, then
//                                                   the relative angular velocity in child-frame axes
// (z, x: the axes of the joint's frames, docs/model-format.md). An effort is one generalized force
// per entry of qd (a torque about a rotation axis, a force along a translation), so that effort . qd
// is its power; a spherical joint's efforts are torques about the child frame's axes.
//
// Loop-closing joints (those the spanning tree leaves out; Topology::loop_joints) have entries too,
// so the layout does not depend on which joints the tree picks; their coordinates follow from the
// others' and are checked, not used, when a state is set.
//
// Lifetime: a CoordinateMap shares its model (the shared_ptr constructor) or keeps a copy of it
// (the other): the entries' names and frames are the model's, held once (entries with their own
// names and frames took 128 bytes a joint, and the body names 32 more: 4 % of an ali3 run's peak
// on a spherical chain). An Entry, and a name it returns, are valid while the map lives.
// Thread safety: every member is const; one map may serve many threads.
#pragma once

#include <Eigen/Core>
#include <memory>
#include <string>
#include <vector>

#include "treedyn/joint_space.hpp"

namespace treedyn {

class CoordinateMap {
 public:
  /// The map of `model`, which it shares; `topology` is the model's (read here, not kept).
  CoordinateMap(std::shared_ptr<const Model> model, const Topology& topology);
  /// The same with a copy of `model`.
  CoordinateMap(const Model& model, const Topology& topology);

  struct Entry {
    JointType type = JointType::Free;
    bool loop = false;               // closes a loop: not used to place bodies
    int joint = -1;                  // model joint index; -1 for a floating body's free joint
    int parent = kGround, child = 0; // the model joint's bodies (floating: ground and the body)
    int q_offset = 0, nq = 0, v_offset = 0, nv = 0;
    /// The joint's name, or the floating body's (the model's string).
    const std::string& name() const { return *name_; }

   private:
    friend class CoordinateMap;
    const std::string* name_ = nullptr;
  };

  int nq() const { return nq_; }
  int nv() const { return nv_; }
  int body_count() const { return model_->body_count(); }
  const std::string& body_name(int body) const { return model_->bodies.at(static_cast<std::size_t>(body)).name; }
  const std::vector<Entry>& entries() const { return entries_; }
  /// An entry's frames on its parent and child (the model joint's; a floating body's: the bodies'
  /// own frames, the identity).
  const Frame& parent_frame(const Entry& e) const { return e.joint < 0 ? kIdentityFrame : joint_of(e).parent_frame; }
  const Frame& child_frame(const Entry& e) const { return e.joint < 0 ? kIdentityFrame : joint_of(e).child_frame; }
  const Model& model() const { return *model_; }
  /// The entry of a joint, or of a floating body's free joint, by name. Throws
  /// std::invalid_argument naming the unknown name.
  const Entry& entry(const std::string& name) const;
  /// Name of entry i of q or qd, "<joint>.<coordinate>": "elbow.angle", "ball.qw", "ball.wx",
  /// "slider.d", "base.x" ... Made on each call (a map does not hold a string per coordinate:
  /// 0.45 KB a body on a spherical chain); std::out_of_range for i outside [0, nq) or [0, nv).
  std::string q_name(int i) const;
  std::string qd_name(int i) const;
  /// SI unit of entry i of q or qd: "rad", "m", "-" (quaternion components), "rad/s", "m/s"
  /// (static strings); std::out_of_range as above.
  const char* q_unit(int i) const;
  const char* qd_unit(int i) const;
  /// Every q_name(i) and qd_name(i), in order (made on each call).
  std::vector<std::string> q_names() const;
  std::vector<std::string> qd_names() const;
  /// True if some entry has an angle (revolute, cylindrical, universal or planar joints).
  bool has_angles() const { return has_angles_; }

  /// q and qd measured on absolute body states. Angles are taken closest to the same entries of
  /// `reference` (continuous through any number of turns when the reference is a recent value),
  /// or in (-pi, pi] without one. A joint the states violate gets the coordinates of the nearest
  /// relative pose it allows.
  void measure(const SystemState& bodies, Eigen::Ref<Eigen::VectorXd> q, Eigen::Ref<Eigen::VectorXd> qd,
               const Eigen::VectorXd* reference = nullptr) const;
  /// One entry's measure: its nq coordinates into q[0..nq) (angles unwrapped against reference[0..nq),
  /// the entry's own part of a reference, where given) and its nv rates into qd[0..nv); a null q
  /// or qd is skipped (a writer that puts every q before every qd need not hold either).
  void measure(const SystemState& bodies, const Entry& e, double* q, double* qd, const double* reference = nullptr) const;
  /// The angles alone, unwrapped against `reference` (which they then replace): a cheap way to
  /// keep a reference continuous step after step.
  void track_angles(const SystemState& bodies, Eigen::VectorXd& reference) const;

  /// Absolute body states from q and qd (accelerations zero): each body placed from its spanning
  /// tree joint, parents first. Loop-closing joints' entries are not read. Quaternions in q need
  /// not be normalised. `out` is resized to the bodies.
  void place(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& qd,
             SystemState& out) const;

  /// Adds each body's wrench [force; torque about its centre of mass] (global) from efforts, one
  /// per entry of qd, applied by each joint to its child and, reversed, to its parent.
  void add_effort_wrenches(const SystemState& bodies, const Eigen::Ref<const Eigen::VectorXd>& effort,
                           std::vector<Vec6>& wrenches) const;

 private:
  const Joint& joint_of(const Entry& e) const { return model_->joints[static_cast<std::size_t>(e.joint)]; }
  static const Frame kIdentityFrame;

  std::shared_ptr<const Model> model_;
  std::vector<Entry> entries_;
  std::vector<int> placement_;        // entries that place a body, parents before children
  std::vector<char> reversed_;        // per entry: placed from its child to its parent
  /// The entry holding entry i of q (rates: false) or of qd (true), and i's place in it.
  std::pair<const Entry*, int> locate(int i, bool rate) const;
  int nq_ = 0, nv_ = 0;
  bool has_angles_ = false;
};

}  // namespace treedyn
