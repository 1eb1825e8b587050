// One joint type's kinematics on its two frames; see joint_kinematics.hpp.
#include "joint_kinematics.hpp"

#include <cmath>

namespace treedyn::joint_kinematics {
namespace {

Mat3 rot_z(double a) { return Eigen::AngleAxisd(a, Vec3::UnitZ()).toRotationMatrix(); }
Mat3 rot_x(double a) { return Eigen::AngleAxisd(a, Vec3::UnitX()).toRotationMatrix(); }

Quat quat_at(const double* q) { return Quat(q[0], q[1], q[2], q[3]).normalized(); }
void store_quat(const Quat& Q, double* q) {
  const Quat c = Q.w() < 0 ? Quat(-Q.w(), -Q.x(), -Q.y(), -Q.z()) : Q;
  q[0] = c.w();
  q[1] = c.x();
  q[2] = c.y();
  q[3] = c.z();
}

}  // namespace

/// X(q): the child frame's rotation and origin in the parent frame.
void relative_transform(JointType type, const double* q, Mat3& R, Vec3& p) {
  R.setIdentity();
  p.setZero();
  switch (type) {
    case JointType::Revolute: R = rot_z(q[0]); break;
    case JointType::Prismatic: p.z() = q[0]; break;
    case JointType::Cylindrical: R = rot_z(q[0]); p.z() = q[1]; break;
    case JointType::Universal: R = rot_z(q[0]) * rot_x(q[1]); break;
    case JointType::Spherical: R = quat_at(q).toRotationMatrix(); break;
    case JointType::Planar: R = rot_z(q[2]); p << q[0], q[1], 0.0; break;
    case JointType::Fixed: break;
    case JointType::Free: p << q[0], q[1], q[2]; R = quat_at(q + 3).toRotationMatrix(); break;
  }
}

/// Inverse of relative_transform (the coordinates of a relative pose the joint allows).
void coordinates_of(JointType type, const Mat3& R, const Vec3& p, double* q) {
  switch (type) {
    case JointType::Revolute: q[0] = std::atan2(R(1, 0), R(0, 0)); break;
    case JointType::Prismatic: q[0] = p.z(); break;
    case JointType::Cylindrical: q[0] = std::atan2(R(1, 0), R(0, 0)); q[1] = p.z(); break;
    case JointType::Universal: {
      q[0] = std::atan2(R(1, 0), R(0, 0));
      const Mat3 M = rot_z(-q[0]) * R;
      q[1] = std::atan2(M(2, 1), M(1, 1));
      break;
    }
    case JointType::Spherical: store_quat(Quat(R), q); break;
    case JointType::Planar: q[0] = p.x(); q[1] = p.y(); q[2] = std::atan2(R(1, 0), R(0, 0)); break;
    case JointType::Fixed: break;
    case JointType::Free: q[0] = p.x(); q[1] = p.y(); q[2] = p.z(); store_quat(Quat(R), q + 3); break;
  }
}

/// Motion subspace: unit columns, each an axis of the parent frame (Fp) or of the child frame (Fc).
void motion_subspace(JointType type, const Mat3& Fp, const Mat3& Fc, SubspaceRef H) {
  H.setZero();
  int col = 0;
  auto angular = [&](const Vec3& axis) { H.block<3, 1>(3, col++) = axis; };
  auto linear = [&](const Vec3& axis) { H.block<3, 1>(0, col++) = axis; };
  switch (type) {
    case JointType::Revolute: angular(Fp.col(2)); break;
    case JointType::Prismatic: linear(Fp.col(2)); break;
    case JointType::Cylindrical: angular(Fp.col(2)); linear(Fp.col(2)); break;
    case JointType::Universal: angular(Fp.col(2)); angular(Fc.col(0)); break;
    case JointType::Spherical: for (int k = 0; k < 3; ++k) angular(Fc.col(k)); break;
    case JointType::Planar: linear(Fp.col(0)); linear(Fp.col(1)); angular(Fp.col(2)); break;
    case JointType::Fixed: break;
    case JointType::Free:
      for (int k = 0; k < 3; ++k) linear(Fp.col(k));
      for (int k = 0; k < 3; ++k) angular(Fc.col(k));
      break;
  }
}

/// Which columns of motion_subspace() are child-frame axes (bit c for column c).
unsigned child_axes(JointType type) {
  switch (type) {
    case JointType::Universal: return 0b10;
    case JointType::Spherical: return 0b111;
    case JointType::Free: return 0b111000;
    default: return 0;
  }
}

/// Constraint subspace: orthonormal, D' H = 0. Where a joint constrains every direction of a
/// 3-D part (a spherical joint all translations, a fixed joint everything), that part's basis is
/// the global axes rather than the parent frame's: any orthonormal basis of the subspace serves,
/// and this one makes D = [I; 0], whose rows the divide-and-conquer kernels apply without
/// multiplying (dc::JointRows::unit_rows).
void constraint_subspace(JointType type, const Mat3& Fp, const Mat3& Fc, SubspaceRef D) {
  D.setZero();
  int col = 0;
  auto linear = [&](const Vec3& a) { D.block<3, 1>(0, col++) = a; };
  auto angular = [&](const Vec3& a) { D.block<3, 1>(3, col++) = a; };
  switch (type) {
    case JointType::Revolute: linear(Fp.col(0)); linear(Fp.col(1)); linear(Fp.col(2)); angular(Fp.col(0)); angular(Fp.col(1)); break;
    case JointType::Prismatic: linear(Fp.col(0)); linear(Fp.col(1)); angular(Fp.col(0)); angular(Fp.col(1)); angular(Fp.col(2)); break;
    case JointType::Cylindrical: linear(Fp.col(0)); linear(Fp.col(1)); angular(Fp.col(0)); angular(Fp.col(1)); break;
    case JointType::Universal:
      linear(Fp.col(0)); linear(Fp.col(1)); linear(Fp.col(2));
      angular(Fp.col(2).cross(Fc.col(0)).normalized());
      break;
    case JointType::Spherical: D.topRows<3>().setIdentity(); break;  // unit_constraint_subspace()
    case JointType::Planar: linear(Fp.col(2)); angular(Fp.col(0)); angular(Fp.col(1)); break;
    case JointType::Fixed: D.setIdentity(); break;
    case JointType::Free: break;
  }
}

/// The rotation that turns a universal joint's frames so that its second axis (x) becomes z and
/// its first (z) becomes x: used when the joint is reversed.
Mat3 universal_swap() {
  Mat3 R;
  R.col(0) = Vec3::UnitZ();
  R.col(1) = -Vec3::UnitY();
  R.col(2) = Vec3::UnitX();
  return R;
}

unsigned angle_entries(JointType type) {
  switch (type) {
    case JointType::Revolute:
    case JointType::Cylindrical: return 0b1;
    case JointType::Universal: return 0b11;
    case JointType::Planar: return 0b100;
    default: return 0;
  }
}

}  // namespace treedyn::joint_kinematics
