// treedyn — joint coordinates: the relative coordinates of the spanning tree's joints, forward
// kinematics to absolute body states, and the per-joint motion and constraint subspaces used by
// the joint-coordinate formulations (dca, hdca).
//
// Every quantity is taken at the tree joint's point o (the origin of its frame on the tree
// child), in the global frame. For a joint between tree parent P and tree child C:
//   V_rel = V_C(o) - V_P(o) = H v                       (paper 001, Eq. 23; H' H = I)
//   D' H = 0, D' D = I                                   (paper 001, Eqs. 10-11)
//   A_C(o) - A_P(o) = H vdot + kappa,  kappa = Hdot v + [w_P x (H v)_lin; 0]
// where V_B(x) = [v_B + w_B x (x - r_B); w_B] is body B's twist field and A_B(x) its classical
// (material) acceleration field. Every column of H is an axis fixed in the parent or in the
// child, so it turns with that body's angular velocity: Hdot = [w x H_lin; w x H_ang] column by
// column.
//
// Coordinates per joint type (q: positions, v: velocities; quaternions are [w, x, y, z]):
//   revolute    q = theta            v = theta_dot          H = [0; z_P]
//   prismatic   q = d                v = d_dot              H = [z_P; 0]
//   cylindrical q = (theta, d)       v = rates              H = [0; z_P], [z_P; 0]
//   universal   q = (theta1, theta2) v = rates              H = [0; z_P], [0; x_C]
//   spherical   q = quaternion (4)   v = w_rel in child frame (3)    H = [0; x_C, y_C, z_C]
//   planar      q = (x, y, theta)    v = rates              H = [x_P; 0], [y_P; 0], [0; z_P]
//   fixed       q = ()               v = ()
//   free        q = (p, quaternion)  v = (p_dot, w_rel in child frame)   H = [x_P y_P z_P; 0], [0; x_C y_C z_C]
// p (planar, free) is the joint point's position in the parent's joint frame.
//
// A tree joint whose model parent is the tree child is "reversed": it becomes a joint of the same
// type from the model child's frame to the model parent's frame (a universal joint's frames are
// also turned so that its first axis is again the parent frame's z).
// Bodies not connected to ground get a virtual free joint from ground to their sub-system's first
// body.
#pragma once

#include <Eigen/Core>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "treedyn/kinematics.hpp"
#include "treedyn/topology.hpp"

namespace treedyn {

/// Up to six columns of a 6-D subspace (no heap allocation).
using SubspaceMatrix = Eigen::Matrix<double, 6, Eigen::Dynamic, 0, 6, 6>;
/// Columns of a 6-D subspace written in place (a SubspaceMatrix, or columns of a 6 x 6 matrix).
using SubspaceRef = Eigen::Ref<Eigen::Matrix<double, 6, Eigen::Dynamic>>;
using ConstSubspaceRef = Eigen::Ref<const Eigen::Matrix<double, 6, Eigen::Dynamic>>;

/// H x over the first nv columns of a subspace H (any scalar; 6 or 3 rows), and H' V written
/// to out(0..nv-1): column by column, in fixed size. Eigen's products with the dynamic column
/// count cost more than their few flops in the per-joint loops.
template <class Vec, class Subspace, class X>
Vec subspace_times(const Subspace& H, int nv, const X& x) {
  Vec out = Vec::Zero();
  for (int c = 0; c < nv; ++c) out += H.col(c) * x(c);
  return out;
}
template <class Subspace, class Vec, class Out>
void subspace_project(const Subspace& H, int nv, const Vec& V, Out&& out) {
  for (int c = 0; c < nv; ++c) out(c) = H.col(c).dot(V);
}

/// Distinct frame rotations, each held once: a generated chain's or an imported robot's joint frames
/// repeat, and a joint's record then holds an index where it held two 3 x 3 matrices. Compared by
/// their bits, so that a frame is multiplied by exactly the numbers it was given.
class RotationTable {
 public:
  /// The index of `rotation`, added if new; -1 for exactly the identity.
  int index_of(const Mat3& rotation);
  /// The rotation at `index` (the identity for -1).
  Mat3 at(int index) const { return index < 0 ? Mat3::Identity() : rotations_[static_cast<std::size_t>(index)]; }
  const Mat3* data() const { return rotations_.data(); }
  int size() const { return static_cast<int>(rotations_.size()); }
  /// Drops the lookup index_of() builds; the rotations stay.
  void seal() { lookup_.clear(); }

 private:
  std::vector<Mat3> rotations_;
  std::map<std::array<std::uint64_t, 9>, int> lookup_;
};

struct TreeJoint {
  int joint = -1;  // model joint, or -1 for a virtual free joint
  JointType type = JointType::Free;
  int parent = kGround, child = 0;  // tree parent (towards ground) and tree child bodies
  bool reversed = false;            // the model joint points from the tree child to the tree parent
  // The origins of the tree joint's frames on its parent and child; their rotations are in the
  // JointSpace's RotationTable (JointSpace::parent_frame(), child_frame()): a chain of spherical
  // joints reads 104 bytes a joint in every sweep instead of 240.
  Vec3 parent_origin = Vec3::Zero(), child_origin = Vec3::Zero();
  int q_offset = 0, nq = 0, v_offset = 0, nv = 0;
  unsigned child_axes = 0;          // bit c set: column c of H is fixed in the child (else in the parent)
  // Where the frame's rotation is in JointSpace::rotations(), or -1 where it is exactly the identity
  // (place() then skips multiplying by it: the same numbers, as x * 1 + y * 0 + z * 0 is x).
  int parent_rotation = -1, child_rotation = -1;
  bool parent_turned() const { return parent_rotation >= 0; }
  bool child_turned() const { return child_rotation >= 0; }
  bool unit_constraints = false;    // D = [I; 0] at every state (spherical, fixed joints)
  bool translates = true;           // X(q) moves the child frame's origin (prismatic, cylindrical, planar, free)
};

/// A tree joint at the current state: its point and kappa here, its [H D] in its JointMotions'
/// column array (JointMotions::H(), D()).
struct JointMotion {
  Vec6 kappa = Vec6::Zero();  // relative acceleration bias Hdot v + [w_P x (H v)_lin; 0] (after move())
  Vec3 point = Vec3::Zero();  // o: the joint point, global
  int nv = 0;
  int at = -1;                // where its columns start in JointMotions' column array
};

/// Every tree joint's motion for one JointSpace, which sizes it (once: a pass allocates nothing).
/// [H D]: the motion subspace H (nv columns) and the constraint subspace D (6 - nv), global, at o.
/// D' H = 0 and both are orthonormal (paper 001, Eqs. 10-11). A joint's columns lie in one array,
/// joint after joint: H's nv, then D's 6 - nv, except where D is [I; 0] at every state
/// (TreeJoint::unit_constraints: spherical and fixed joints), whose D is not held (D() reads the
/// constant): a spherical joint holds its H = [0; F_c] in 18 doubles where a 6 x 6 [H D] took 36,
/// and its record is 80 bytes (at 65,536 bodies the sweeps that read the joints' motion run at the
/// memory's bandwidth). Hdot is not held: move() uses its columns as it makes them, and
/// JointSpace::subspace_rate() makes it for a formulation that reads it.
class JointMotions {
 public:
  using ConstColumns = Eigen::Map<const Eigen::Matrix<double, 6, Eigen::Dynamic>>;

  std::size_t size() const { return joints_.size(); }
  JointMotion& operator[](std::size_t k) { return joints_[k]; }
  const JointMotion& operator[](std::size_t k) const { return joints_[k]; }
  /// Tree joint k's H (6 x nv) and D (6 x (6 - nv)); valid while this object lives.
  ConstColumns H(int k) const {
    const JointMotion& m = joints_[static_cast<std::size_t>(k)];
    return ConstColumns(columns_.data() + m.at, 6, m.nv);
  }
  ConstColumns D(int k) const {
    const JointMotion& m = joints_[static_cast<std::size_t>(k)];
    if (unit_[static_cast<std::size_t>(k)]) return ConstColumns(kUnitColumns, 6, 6 - m.nv);
    return ConstColumns(columns_.data() + m.at + 6 * m.nv, 6, 6 - m.nv);
  }
  /// Tree joint k's child's rotation matrix A_C, as placing the joint made it: the children of
  /// that body are placed from it, and its quaternion is this matrix's, normalised
  /// (JointSpace::orient_child).
  const Mat3& child_rotation(int k) const { return rotation_[static_cast<std::size_t>(k)]; }

 private:
  friend class JointSpace;
  static const double kUnitColumns[36];  // the 6 x 6 identity, column-major: [I; 0] is its first columns
  std::vector<JointMotion> joints_;
  std::vector<double> columns_;
  std::vector<char> unit_;  // per joint: D = [I; 0], not held
  std::vector<Mat3> rotation_;  // per joint: child_rotation()
  const void* sized_for_ = nullptr;  // the JointSpace that sized it
};

/// Refers to its model, which must outlive it (it copies what it needs of the topology).
class JointSpace {
 public:
  JointSpace(const Model& model, const Topology& topology);
  JointSpace(const Model&&, const Topology&) = delete;  // keeps a reference: not to a temporary

  int nq() const { return nq_; }
  int nv() const { return nv_; }
  /// Tree joints, each after the joint of its parent body.
  const std::vector<TreeJoint>& tree() const { return tree_; }
  /// Tree joint through which each body is reached.
  int tree_joint_of(int body) const { return tree_joint_of_[static_cast<std::size_t>(body)]; }
  /// Tree joint k's frames on its parent and child (a reversed joint's are its model frames swapped).
  Frame parent_frame(int k) const;
  Frame child_frame(int k) const;
  /// The frames' rotations that are not the identity (TreeJoint::parent_rotation, child_rotation).
  const RotationTable& rotations() const { return rotations_; }

  /// Coordinates of an absolute state. Throws ModelError naming the joint if the state violates
  /// a tree joint (position or velocity) by more than `tolerance`; an infinite tolerance skips
  /// the check (a state the caller has checked).
  void coordinates(const SystemState& state, Eigen::VectorXd& q, Eigen::VectorXd& v, double tolerance = 1e-6) const;

  /// Body poses and twists from (q, v) (accelerations are left as they are) and every tree
  /// joint's motion at that state: place() and move() in one sweep in tree order (each body's
  /// state and each joint's motion visited once; the same numbers as the two calls).
  void forward_kinematics(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                          SystemState& bodies, JointMotions& motion) const;

  /// Body poses from q, and every tree joint's point, H and D (twists are left as they are).
  void place(const Eigen::Ref<const Eigen::VectorXd>& q, SystemState& bodies, JointMotions& motion) const;
  /// place() one joint at a time, for a caller that does other work on each joint as it is
  /// placed (Parallel::lead_and_follow): prepare(motion) once, then place_joint(k, ...) for every
  /// k in tree order (a parent's joint before its children's), and orient_child(k, ...) after
  /// place_joint(k, ...), in any order and on any thread. The same numbers as place().
  void prepare(JointMotions& motion) const { size_motion(motion); }
  /// Tree joint k's child's position and rotation matrix (JointMotions::child_rotation), and the
  /// joint's point, H and D, from its parent's (placed before) and q; not the child's quaternion.
  /// A child is placed from its parent's matrix, not from the parent's quaternion, so a sweep
  /// along a chain makes no quaternion on its way.
  void place_joint(int k, const Eigen::Ref<const Eigen::VectorXd>& q, SystemState& bodies, JointMotions& motion) const;
  /// place_joint(k, ...) in its two parts, for a sweep whose serial chain is split from the rest
  /// (Parallel::lead_second_and_follow): rotate_joint(k, ...) makes the child's rotation matrix
  /// from its parent's alone, and the joint's H and D (for every k in tree order);
  /// locate_joint(k, ...), after rotate_joint(k, ...) and locate_joint of the parent's joint, the
  /// child's position and the joint's point (also in tree order). The two give the same numbers
  /// as place_joint.
  void rotate_joint(int k, const Eigen::Ref<const Eigen::VectorXd>& q, JointMotions& motion) const;
  void locate_joint(int k, const Eigen::Ref<const Eigen::VectorXd>& q, SystemState& bodies, JointMotions& motion) const;
  /// Tree joint k's child's quaternion, from its rotation matrix (after place_joint(k, ...)).
  void orient_child(int k, SystemState& bodies, const JointMotions& motion) const;

  /// Body twists from v on poses set by place(), and every tree joint's kappa.
  void move(const Eigen::Ref<const Eigen::VectorXd>& v, SystemState& bodies, JointMotions& motion) const;

  /// Hdot of tree joint k (its H in `motion`, after place()), from the bodies' angular
  /// velocities: each column of H turns with the body it is fixed in. Allocates nothing.
  void subspace_rate(int k, const SystemState& bodies, const JointMotions& motion, SubspaceMatrix& Hdot) const;

  /// qdot = G(q) v (quaternion kinematics for spherical and free joints, identity otherwise).
  void position_rate(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                     Eigen::Ref<Eigen::VectorXd> qdot) const;
  /// The same for tree joint k's segments only (joints are independent: any order, any thread).
  void position_rate(int k, const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                     Eigen::Ref<Eigen::VectorXd> qdot) const;

  /// Normalises the quaternions in q whose norm differs from 1 by more than `tolerance` (0: every
  /// one that differs at all); returns the largest change made, 0 if q is left as it was.
  double normalize(Eigen::Ref<Eigen::VectorXd> q, double tolerance = 0.0) const;

  /// Names entry `index` of a state [q; r] whose second half r holds a rate per degree of freedom
  /// called `rate` ("velocity", "momentum"), for error messages: "coordinate 2 of joint 'j3'",
  /// "momentum 0 of joint 'j3'"; a virtual free joint is named by its body.
  std::string describe_state(int index, const std::string& rate) const;

 private:
  const Model* model_;
  /// Sizes `motion` for the tree joints (once; a sized one is left as it is).
  void size_motion(JointMotions& motion) const;
  /// The rotation matrix of t's parent body, as placing it made it (the identity for the ground).
  const Mat3& parent_rotation(const TreeJoint& t, const JointMotions& motion) const;

  std::vector<TreeJoint> tree_;
  RotationTable rotations_;  // the frames' rotations that are not the identity
  std::vector<int> tree_joint_of_;
  int nq_ = 0, nv_ = 0;
};

/// Number of position and velocity coordinates of a joint type.
int joint_nq(JointType type);
inline int joint_nv(JointType type) { return joint_dof(type); }

}  // namespace treedyn
