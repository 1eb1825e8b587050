// treedyn — spatial algebra shared by every module.
//
// Conventions (docs/notation.md):
//  * spatial (6-D) vectors are ordered [linear; angular] as in papers 001 and 004, expressed in the
//    global frame unless a name says otherwise;
//  * planar (3-D) vectors are [x; y; angular] (paper 004, Eqs. 1-6);
//  * Euler parameters p = [e0, e1, e2, e3] = [e0; e] (paper 000, Sect. 2) describe the rotation
//    A(p) from the body frame to the global frame: x_global = A(p) x_body.
//
// Everything is templated on the scalar so that float and double builds share one text.
#pragma once

#include <Eigen/Core>
#include <Eigen/Geometry>
#include <cmath>

namespace treedyn {

template <class S> using Vec2T = Eigen::Matrix<S, 2, 1>;
template <class S> using Vec3T = Eigen::Matrix<S, 3, 1>;
template <class S> using Vec4T = Eigen::Matrix<S, 4, 1>;
template <class S> using Vec6T = Eigen::Matrix<S, 6, 1>;
template <class S> using Mat2T = Eigen::Matrix<S, 2, 2>;
template <class S> using Mat3T = Eigen::Matrix<S, 3, 3>;
template <class S> using Mat4T = Eigen::Matrix<S, 4, 4>;
template <class S> using Mat6T = Eigen::Matrix<S, 6, 6>;
template <class S> using Mat34T = Eigen::Matrix<S, 3, 4>;

using Vec2 = Vec2T<double>;
using Vec3 = Vec3T<double>;
using Vec4 = Vec4T<double>;
using Vec6 = Vec6T<double>;
using Mat2 = Mat2T<double>;
using Mat3 = Mat3T<double>;
using Mat4 = Mat4T<double>;
using Mat6 = Mat6T<double>;
using Mat34 = Mat34T<double>;
using Quat = Eigen::Quaterniond;

// ---------------------------------------------------------------------------------------------
// 3-D helpers

/// Skew-symmetric matrix: skew(a) * b == a.cross(b)   (the tilde operator of the papers).
template <class S>
Mat3T<S> skew(const Vec3T<S>& a) {
  Mat3T<S> m;
  m << S(0), -a.z(), a.y(),  //
      a.z(), S(0), -a.x(),   //
      -a.y(), a.x(), S(0);
  return m;
}

/// Rodrigues: exp(skew(phi)), the rotation by |phi| about phi/|phi|.
template <class S>
Mat3T<S> so3_exp(const Vec3T<S>& phi) {
  const S angle = phi.norm();
  const Mat3T<S> K = skew(phi);
  if (angle < S(1e-8)) return Mat3T<S>::Identity() + K + S(0.5) * K * K;
  return Mat3T<S>::Identity() + (std::sin(angle) / angle) * K +
         ((S(1) - std::cos(angle)) / (angle * angle)) * K * K;
}

/// Rotation vector of a rotation matrix (inverse of so3_exp for angles below pi).
template <class S>
Vec3T<S> so3_log(const Mat3T<S>& R) {
  Eigen::AngleAxis<S> aa(R);
  return aa.angle() * aa.axis();
}

/// Unit quaternion of a rotation vector.
template <class S>
Eigen::Quaternion<S> quat_exp(const Vec3T<S>& phi) {
  const S angle = phi.norm();
  if (angle < S(1e-12)) {
    Eigen::Quaternion<S> q(S(1), S(0.5) * phi.x(), S(0.5) * phi.y(), S(0.5) * phi.z());
    return q.normalized();
  }
  return Eigen::Quaternion<S>(Eigen::AngleAxis<S>(angle, phi / angle));
}

/// Any unit vector perpendicular to a (deterministic: built from the global axis least
/// aligned with a).
template <class S>
Vec3T<S> any_perpendicular(const Vec3T<S>& a) {
  Eigen::Index least = 0;
  a.cwiseAbs().minCoeff(&least);
  return Vec3T<S>::Unit(least).cross(a).normalized();
}

/// Right-handed frame whose z axis is `z` and whose x axis is `x_hint` made perpendicular to z.
template <class S>
Mat3T<S> frame_from_z(const Vec3T<S>& z_axis, const Vec3T<S>& x_hint) {
  const Vec3T<S> z = z_axis.normalized();
  Vec3T<S> x = x_hint - x_hint.dot(z) * z;
  if (x.norm() < S(1e-9)) x = any_perpendicular(z);
  x.normalize();
  Mat3T<S> R;
  R.col(0) = x;
  R.col(1) = z.cross(x);
  R.col(2) = z;
  return R;
}

// ---------------------------------------------------------------------------------------------
// Euler parameters (paper 000, Sect. 2; Haug 1989, Ch. 6)

/// p = [e0, e1, e2, e3] from an Eigen quaternion.
template <class S>
Vec4T<S> euler_parameters(const Eigen::Quaternion<S>& q) {
  return Vec4T<S>(q.w(), q.x(), q.y(), q.z());
}

template <class S>
Eigen::Quaternion<S> quaternion(const Vec4T<S>& p) {
  return Eigen::Quaternion<S>(p(0), p(1), p(2), p(3));
}

/// A(p) = (e0^2 - e'e) I + 2 e e' + 2 e0 skew(e): valid for any p (quadratic in p); a rotation
/// matrix when |p| = 1.
template <class S>
Mat3T<S> rotation_of(const Vec4T<S>& p) {
  const S e0 = p(0);
  const Vec3T<S> e = p.template tail<3>();
  return (e0 * e0 - e.squaredNorm()) * Mat3T<S>::Identity() + S(2) * e * e.transpose() +
         S(2) * e0 * skew(e);
}

/// G(p) = [-e, -skew(e) + e0 I]: body angular velocity  w' = 2 G(p) pdot   (paper 000, Eq. 7).
template <class S>
Mat34T<S> G_matrix(const Vec4T<S>& p) {
  Mat34T<S> G;
  G.col(0) = -p.template tail<3>();
  G.template rightCols<3>() = -skew<S>(p.template tail<3>()) + p(0) * Mat3T<S>::Identity();
  return G;
}

/// E(p) = [-e, skew(e) + e0 I]: global angular velocity  w = 2 E(p) pdot.
template <class S>
Mat34T<S> E_matrix(const Vec4T<S>& p) {
  Mat34T<S> E;
  E.col(0) = -p.template tail<3>();
  E.template rightCols<3>() = skew<S>(p.template tail<3>()) + p(0) * Mat3T<S>::Identity();
  return E;
}

// Products with E(p) and G(p) without forming them (a hot loop's 3 x 4 matrix is twelve stores
// and loads more than its products): the same products and sums in the same order as Eigen's
// with E_matrix(p) and G_matrix(p), so the same numbers (tests/spatial compares them bit for bit):
// rows of E x and G x summed left to right except the last row's, which Eigen sums by halves;
// the entries of E' n and G' n left to right.

/// E(p) x (w = 2 E(p) pdot).
template <class S>
[[gnu::always_inline]] inline Vec3T<S> E_times(const Vec4T<S>& p, const Vec4T<S>& x) {
  const S e0 = p(0), e1 = p(1), e2 = p(2), e3 = p(3);
  return Vec3T<S>(((-e1 * x(0) + e0 * x(1)) + -e3 * x(2)) + e2 * x(3), ((-e2 * x(0) + e3 * x(1)) + e0 * x(2)) + -e1 * x(3),
                  (-e3 * x(0) + -e2 * x(1)) + (e1 * x(2) + e0 * x(3)));
}
/// E(p)' n.
template <class S>
[[gnu::always_inline]] inline Vec4T<S> E_transpose_times(const Vec4T<S>& p, const Vec3T<S>& n) {
  const S e0 = p(0), e1 = p(1), e2 = p(2), e3 = p(3);
  return Vec4T<S>((-e1 * n(0) + -e2 * n(1)) + -e3 * n(2), (e0 * n(0) + e3 * n(1)) + -e2 * n(2),
                  (-e3 * n(0) + e0 * n(1)) + e1 * n(2), (e2 * n(0) + -e1 * n(1)) + e0 * n(2));
}
/// G(p) x (w' = 2 G(p) pdot).
template <class S>
[[gnu::always_inline]] inline Vec3T<S> G_times(const Vec4T<S>& p, const Vec4T<S>& x) {
  const S e0 = p(0), e1 = p(1), e2 = p(2), e3 = p(3);
  return Vec3T<S>(((-e1 * x(0) + e0 * x(1)) + e3 * x(2)) + -e2 * x(3), ((-e2 * x(0) + -e3 * x(1)) + e0 * x(2)) + e1 * x(3),
                  (-e3 * x(0) + e2 * x(1)) + (-e1 * x(2) + e0 * x(3)));
}
/// G(p)' n.
template <class S>
[[gnu::always_inline]] inline Vec4T<S> G_transpose_times(const Vec4T<S>& p, const Vec3T<S>& n) {
  const S e0 = p(0), e1 = p(1), e2 = p(2), e3 = p(3);
  return Vec4T<S>((-e1 * n(0) + -e2 * n(1)) + -e3 * n(2), (e0 * n(0) + -e3 * n(1)) + e2 * n(2),
                  (e3 * n(0) + e0 * n(1)) + -e1 * n(2), (-e2 * n(0) + e1 * n(1)) + e0 * n(2));
}

/// Inverse of 4 G' J G + c p p', the Euler-parameter block of a mass matrix (paper 000, Eq. 7)
/// with a normalisation penalty c p p' (Eq. 23), in closed form from J^-1: since G p = 0 and
/// G G' = n I, n = p'p, it is G' J^-1 G / (4 n^2) + p p' / (c n^2) for any nonzero p and c > 0.
template <class S>
Mat4T<S> euler_block_inverse(const Mat3T<S>& J_inverse, const Vec4T<S>& p, S c) {
  const Mat34T<S> G = G_matrix<S>(p);
  const S n = p.squaredNorm();
  Mat4T<S> inverse;
  inverse.noalias() = (S(0.25) / (n * n)) * (G.transpose() * J_inverse * G);
  inverse.noalias() += (S(1) / (c * n * n)) * p * p.transpose();
  return inverse;
}

// ---------------------------------------------------------------------------------------------
// Spatial (6-D) algebra, ordering [linear; angular] (paper 001, Eqs. 9-14)

/// Shift matrix S_12 = [I 0; skew(l12) I] with l12 from point O1 to O2 (paper 001, Eq. 14).
/// Moves momenta and forces: P_1 = S_12 P_2; velocities move with its transpose: V_2 = S_12^T V_1.
template <class S>
Mat6T<S> shift_matrix(const Vec3T<S>& l12) {
  Mat6T<S> m = Mat6T<S>::Identity();
  m.template block<3, 3>(3, 0) = skew(l12);
  return m;
}

/// Spatial inertia about point O at offset l_OC to the centre of mass C (paper 001, Eq. 9):
/// M_O = [m I, -m skew(l_OC); m skew(l_OC), J_O],  J_O = J_C - m skew(l_OC)^2 (global frame).
template <class S>
Mat6T<S> spatial_inertia(S mass, const Mat3T<S>& J_C, const Vec3T<S>& l_OC) {
  const Mat3T<S> L = skew(l_OC);
  Mat6T<S> M;
  M.template block<3, 3>(0, 0) = mass * Mat3T<S>::Identity();
  M.template block<3, 3>(0, 3) = -mass * L;
  M.template block<3, 3>(3, 0) = mass * L;
  M.template block<3, 3>(3, 3) = J_C - mass * L * L;
  return M;
}

// ---------------------------------------------------------------------------------------------
// Planar (3-D) algebra, ordering [x; y; angular] (paper 004, Eqs. 1-5)

/// Omega = [0 -1; 1 0] (paper 004, Eq. 2): Omega * s rotates s by +90 degrees.
template <class S>
Mat2T<S> planar_omega() {
  Mat2T<S> m;
  m << S(0), S(-1), S(1), S(0);
  return m;
}

/// Planar shift matrix S_OC = [I 0; -s_OC^T Omega 1] (paper 004, Eq. 1).
template <class S>
Mat3T<S> planar_shift_matrix(const Vec2T<S>& s_OC) {
  Mat3T<S> m = Mat3T<S>::Identity();
  m.template block<1, 2>(2, 0) = -s_OC.transpose() * planar_omega<S>();
  return m;
}

}  // namespace treedyn
