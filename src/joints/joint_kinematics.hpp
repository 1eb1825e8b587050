// treedyn — the kinematics of one joint type, on its two frames: the relative pose a joint's
// coordinates give, the coordinates of a relative pose, and the motion and constraint subspaces.
// Shared by the tree's joint space (joint_space.hpp, internal coordinates of dca and hdca) and
// the public joint coordinates (coordinate_map.hpp); each function is tested on its own
// (tests/joints).
//
// Coordinates per joint type (quaternions [w, x, y, z], p the child frame's origin in the parent
// frame):
//   revolute    q = theta            X(q) = Rz(theta)
//   prismatic   q = d                X(q) = (I, d z)
//   cylindrical q = (theta, d)       X(q) = (Rz(theta), d z)
//   universal   q = (theta1, theta2) X(q) = Rz(theta1) Rx(theta2)
//   spherical   q = quaternion (4)   X(q) = R(q)
//   planar      q = (x, y, theta)    X(q) = (Rz(theta), (x, y, 0))
//   fixed       q = ()
//   free        q = (p, quaternion)  X(q) = (R(quaternion), p)
#pragma once

#include "treedyn/joint_space.hpp"

namespace treedyn::joint_kinematics {

/// X(q): the child frame's rotation R and origin p in the parent frame.
void relative_transform(JointType type, const double* q, Mat3& R, Vec3& p);
/// relative_transform()'s p alone (entries of q: the same numbers), zero for the joints that do
/// not translate.
inline Vec3 relative_translation(JointType type, const double* q) {
  switch (type) {
    case JointType::Prismatic: return {0.0, 0.0, q[0]};
    case JointType::Cylindrical: return {0.0, 0.0, q[1]};
    case JointType::Planar: return {q[0], q[1], 0.0};
    case JointType::Free: return {q[0], q[1], q[2]};
    default: return Vec3::Zero();
  }
}

/// The inverse of relative_transform: coordinates of a relative pose the joint allows (angles in
/// (-pi, pi], quaternions with w >= 0). A pose the joint does not allow is projected onto it.
void coordinates_of(JointType type, const Mat3& R, const Vec3& p, double* q);

/// Motion subspace H (6 x dof, [linear; angular], global): unit columns, each an axis of the
/// parent frame Fp or of the child frame Fc (global axes as columns); see child_axes().
void motion_subspace(JointType type, const Mat3& Fp, const Mat3& Fc, SubspaceRef H);  // H: 6 x dof
inline void motion_subspace(JointType type, const Mat3& Fp, const Mat3& Fc, SubspaceMatrix& H) {  // sizes H
  H.resize(6, joint_nv(type));
  motion_subspace(type, Fp, Fc, SubspaceRef(H));
}

/// Which columns of motion_subspace() are child-frame axes (bit c for column c).
unsigned child_axes(JointType type);

/// Constraint subspace D (6 x (6 - dof)): orthonormal, D' H = 0.
void constraint_subspace(JointType type, const Mat3& Fp, const Mat3& Fc, SubspaceRef D);  // D: 6 x (6 - dof)

/// True where relative_transform() moves the origin (p may be nonzero): prismatic, cylindrical,
/// planar, free.
inline bool translating(JointType type) {
  return type == JointType::Prismatic || type == JointType::Cylindrical || type == JointType::Planar || type == JointType::Free;
}

/// True where constraint_subspace() is [I; 0] at every state (spherical: the global translations;
/// fixed: I).
inline bool unit_constraint_subspace(JointType type) { return type == JointType::Spherical || type == JointType::Fixed; }

/// [H D] as JointMotions holds it, column after column from `columns` (6 doubles each): H's nv
/// (motion_subspace()), then D's 6 - nv (constraint_subspace()), except for a type whose D is
/// [I; 0] at every state (unit_constraint_subspace()), whose D is not written (paper 001, Eqs.
/// 10-11). A spherical joint's H = [0; Fc] is written by fixed-size blocks (the same numbers as
/// motion_subspace(), without its column-by-column fill: a ball-joint chain forms one per joint
/// per pass); a fixed joint writes nothing.
inline void subspace_columns(JointType type, const Mat3& Fp, const Mat3& Fc, double* columns) {
  if (type == JointType::Spherical) {
    Eigen::Map<Eigen::Matrix<double, 6, 3>> H(columns);
    H.topRows<3>().setZero();
    H.bottomRows<3>() = Fc;
    return;
  }
  if (unit_constraint_subspace(type)) return;
  const int nv = joint_nv(type);
  Eigen::Map<Mat6> HD(columns);
  motion_subspace(type, Fp, Fc, HD.leftCols(nv));
  constraint_subspace(type, Fp, Fc, HD.rightCols(6 - nv));
}

/// The rotation that turns a universal joint's frames so that its second axis (x) becomes z and
/// its first (z) becomes x: used when the joint is reversed.
Mat3 universal_swap();

/// Which entries of a joint's q are angles (unbounded rotation coordinates: the values
/// coordinates_of returns in (-pi, pi] that a continuous measure unwraps), bit k for entry k.
unsigned angle_entries(JointType type);

/// A frame on a body at the body's state: axes (columns) and origin, global.
struct FramePose {
  Mat3 R;
  Vec3 o;
};
inline FramePose frame_pose(const BodyState& b, const Frame& f) {
  const Mat3 A = b.q.toRotationMatrix();
  return {A * f.rotation, b.r + A * f.origin};
}

/// The relative twist of the child's frame point o over the parent's: [v_C(o) - v_P(o); w_C - w_P].
inline Vec6 relative_twist(const BodyState& P, const BodyState& C, const Vec3& o) {
  Vec6 V;
  V << (C.v + C.w.cross(o - C.r)) - (P.v + P.w.cross(o - P.r)), C.w - P.w;
  return V;
}

}  // namespace treedyn::joint_kinematics
