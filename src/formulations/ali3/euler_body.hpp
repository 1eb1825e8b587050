// One rigid body in paper 000's absolute coordinates q = [r; p] (centre of mass and Euler
// parameters, 7 per body): its mass matrix and quadratic-velocity term (Eqs. 7-8), the map
// between the 7 coordinates and twist space, the trapezoidal rule's rates (Eqs. 15-16) and the
// closed-form tangent of the Newton iteration (Eq. 23). Pure functions of a body's numbers, used
// by ali3.cpp in its per-body loops (inline: they are small and hot) and tested alone
// (tests/ali3/test_euler_body.cpp).
//
//   T = diag(I, 2 E(p))        a displacement in the 7 coordinates as a twist: T x = [x_r; 2 E x_p]
//   M = diag(m I, 4 G' J' G)   singular in p's direction (Eq. 7)
//   Q_v = -8 Gd' J' G pd       the quadratic-velocity term of Q (Eq. 8), Gd = G(pd)
//   Psi = (p'p - 1) / 2        the normalisation constraint (Eq. 4), Psi_q = [0, p']
#pragma once

#include "treedyn/spatial.hpp"

namespace treedyn::ali3 {

using Vec7 = Eigen::Matrix<double, 7, 1>;
using Mat7 = Eigen::Matrix<double, 7, 7>;

/// M of Eq. 7: diag(m I, 4 G' J' G), G = G(p), J the body-frame inertia.
inline Mat7 mass_matrix(double m, const Mat3& J, const Vec4& p) {
  const Mat34 G = G_matrix<double>(p);
  Mat7 M = Mat7::Zero();
  M.topLeftCorner<3, 3>().diagonal().setConstant(m);
  M.bottomRightCorner<4, 4>() = 4.0 * G.transpose() * J * G;
  return M;
}

/// M v without forming M: [m v_r; 4 G' J G v_p], G = G(p).
inline Vec7 mass_times(double m, const Mat3& J, const Vec4& p, const Vec7& v) {
  const Vec3 Jw = 4.0 * (J * G_times<double>(p, v.tail<4>()));
  const Vec4 GJw = G_transpose_times<double>(p, Jw);
  Vec7 out;
  out << m * v.head<3>(), GJw;
  return out;
}

/// Eq. 8's quadratic-velocity term as it enters M qdd - Q: 8 Gd' J' G pd, G = G(p), Gd = G(pd).
inline Vec4 quadratic_velocity(const Mat3& J, const Vec4& p, const Vec4& pd) {
  const Vec3 JGpd = 8.0 * (J * G_times<double>(p, pd));
  return G_transpose_times<double>(pd, JGpd);
}

/// A wrench [force; torque] (global, at the centre of mass) as a generalized force in the 7
/// coordinates: T' [f; n] = [f; 2 E(p)' n] (Eq. 8's 2 G' n' = 2 E' n).
inline Vec7 in_q(const Vec6& wrench, const Vec4& p) {
  const Vec4 En = E_transpose_times<double>(p, wrench.tail<3>());
  Vec7 out;
  out << wrench.head<3>(), 2.0 * En;
  return out;
}

/// A displacement in the 7 coordinates as a twist: T x = [x_r; 2 E(p) x_p].
inline Vec6 in_twist(const Vec7& x, const Vec4& p) {
  const Vec3 Ex = E_times<double>(p, x.tail<4>());
  Vec6 out;
  out << x.head<3>(), 2.0 * Ex;
  return out;
}

/// T K T' for a symmetric K in the 7 coordinates.
inline Mat6 in_twist(const Mat7& K, const Vec4& p) {
  const Mat34 E2 = 2.0 * E_matrix<double>(p);
  Mat6 out;
  out.topLeftCorner<3, 3>() = K.topLeftCorner<3, 3>();
  out.topRightCorner<3, 3>().noalias() = K.topRightCorner<3, 4>() * E2.transpose();
  out.bottomLeftCorner<3, 3>() = out.topRightCorner<3, 3>().transpose();
  out.bottomRightCorner<3, 3>().noalias() = E2 * K.bottomRightCorner<4, 4>() * E2.transpose();
  return out;
}

/// Psi = (p'p - 1) / 2 (Eq. 4).
inline double psi(const Vec4& p) { return 0.5 * (p.squaredNorm() - 1.0); }

/// The trapezoidal rule's rates from the iterate q and the step's start (Eqs. 15-16):
///   qd = 2/h (q - q_bar) - qd_bar,   qdd = 4/h^2 (q - q_bar) - 4/h qd_bar - qdd_bar.
inline void trapezoidal_rates(const Vec7& q, const Vec7& q_bar, const Vec7& qd_bar, const Vec7& qdd_bar, double h,
                              Vec7& qd, Vec7& qdd) {
  qd = 2.0 / h * (q - q_bar) - qd_bar;
  qdd = 4.0 / (h * h) * (q - q_bar) - 4.0 / h * qd_bar - qdd_bar;
}

/// A Newton tangent K of the form diag(k I, K_p): what closed_form_tangent gives, held in its two
/// blocks (136 bytes where a 7 x 7 takes 392).
struct BlockTangent {
  double k = 0.0;            // s / m
  Mat4 K_p = Mat4::Zero();   // the Euler parameters' block
  /// K x from the two blocks (the 7 x 7's other entries are zero; within round-off of its product).
  Vec7 times(const Vec7& x) const {
    Vec7 out;
    out.head<3>() = k * x.head<3>();
    out.tail<4>().noalias() = K_p * x.tail<4>();
    return out;
  }
  Mat7 full() const {
    Mat7 K = Mat7::Zero();
    K.topLeftCorner<3, 3>().diagonal().setConstant(k);
    K.bottomRightCorner<4, 4>() = K_p;
    return K;
  }
};

/// T K T' = diag(k I, K_w), by its two blocks (the tree holds it so: dc::LeafBlocks::SharedBlockDiagonal).
struct TwistTangent {
  double k = 0.0;
  Mat3 K_w = Mat3::Zero();
  Mat6 full() const {
    Mat6 K = Mat6::Zero();
    K.topLeftCorner<3, 3>().diagonal().setConstant(k);
    K.bottomRightCorner<3, 3>() = K_w;
    return K;
  }
};

/// The Newton tangent without geometric stiffness (M_c = M), in closed form: with
/// s = h^2 / 4, K = s M_cc^-1, M_cc = M + s alpha Psi_q' Psi_q (Eq. 23), block diagonal, and
/// T K T' = s diag(I/m, A J^-1 A') — the inverse of the body's spatial inertia about its centre of
/// mass, in which the penalty does not appear (E(p) p = 0, E(p) G(p)' = (p'p) A). Writes K and
/// returns T K T' (TwistTangent). A is the body's rotation (from the normalised p), J_inverse its body-frame
/// inverse inertia.
inline TwistTangent closed_form_tangent(double m, const Mat3& J_inverse, const Mat3& A, const Vec4& p, double s, double alpha,
                                        BlockTangent& K) {
  K.k = s / m;
  K.K_p = s * euler_block_inverse<double>(J_inverse, p, s * alpha);
  TwistTangent K_twist;
  K_twist.k = s / m;
  K_twist.K_w.noalias() = s * A * J_inverse * A.transpose();
  return K_twist;
}

}  // namespace treedyn::ali3
