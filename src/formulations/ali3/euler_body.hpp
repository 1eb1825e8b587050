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

/// The trapezoidal rule's rates (Eqs. 15-16), affine in the iterate q:
///   qd = 2/h q + qd_hat,    qd_hat = -(2/h q_bar + qd_bar),
///   qdd = 4/h^2 q + qdd_hat, qdd_hat = -(4/h^2 q_bar + 4/h qd_bar + qdd_bar),
/// applied as differences, so that neither the hats nor the step's start (q_bar, qd_bar, qdd_bar)
/// is held (112 bytes a body). At the predictor q = q_bar + h qd_bar + h^2/2 qdd_bar the rule gives
/// qd = qd_bar + h qdd_bar and qdd = qdd_bar (trapezoidal_predictor); an increment Delta q moves qd
/// by 2/h Delta q and qdd by 4/h^2 Delta q (trapezoidal_increment). The same rates, without the
/// cancellation of 4/h^2 q against 4/h^2 q_bar (4e4 q at h = 0.01) that the affine form carries.
inline void trapezoidal_predictor(Vec7& q, Vec7& qd, const Vec7& qdd, double h) {
  q += h * qd + 0.5 * h * h * qdd;
  qd += h * qdd;
}
inline void trapezoidal_increment(const Vec7& delta, double h, Vec7& q, Vec7& qd, Vec7& qdd) {
  q += delta;
  qd += 2.0 / h * delta;
  qdd += 4.0 / (h * h) * delta;
}

/// K x for the Newton tangent without geometric stiffness (M_c = M, Eq. 23), from its twist-space
/// blocks T K T' = diag(k I, K_w) (closed_form_tangent; the tree's leaf holds them) at the Euler
/// parameters p it was built at, n = p'p: K = s M_cc^-1 = diag(s/m I, s K_p) with
/// K_p = euler_block_inverse(J^-1, p, s alpha) = (1/4) G' J^-1 G / n^2 + p p' / (s alpha n^2), and
/// since A G = E and K_w = s A J^-1 A',
///   s K_p x_p = (1/4) E' K_w E x_p / n^2 + p (p' x_p) / (alpha n^2),    E = E(p), G = G(p).
/// A leaf takes b = K x on the tree's twist space, T K x = [k x_v; 2 E (s K_p x_p)] =
/// [k x_v; K_w E x_p / (2 n)] (E E' = n I, E p = 0), and its formulation keeps along_p =
/// p'(K x)_p = p'x_p / (alpha n) (p'E' = 0), from which from_twist gives K x back. Neither K_p nor
/// J^-1 is held: 208 bytes a body.
inline Vec6 closed_form_tangent_twist(double k, const Mat3& K_w, const Vec4& p, double alpha, const Vec7& x,
                                      double& along_p) {
  const Vec4 x_p = x.tail<4>();
  const double n = p.squaredNorm();
  const Vec3 KEx = K_w * E_times<double>(p, x_p);
  Vec6 out;
  out.head<3>() = k * x.head<3>();
  out.tail<3>() = (0.5 / n) * KEx;
  along_p = p.dot(x_p) / (alpha * n);
  return out;
}

/// K T' f for the closed-form tangent, from its twist-space response y = T K T' f (the tree's
/// leaf applies T K T' = diag(k I, K_w)): K_p 2 E' n = (1/2) s G' J^-1 G E' n / (p'p)^2 with
/// G E' = (p'p) A' and G' A' = E', so
///   K T' f = [y_v; E(p)' y_w / (2 p'p)]
/// (T's inverse on the twist space: 2 E E' / (2 p'p) = I). Only for this tangent, whose
/// Euler-parameter part is orthogonal to p: with geometric stiffness K T' f has a part along p.
inline Vec7 closed_form_response(const Vec6& y, const Vec4& p) {
  Vec7 out;
  out.head<3>() = y.head<3>();
  out.tail<4>() = (0.5 / p.squaredNorm()) * E_transpose_times<double>(p, y.tail<3>());
  return out;
}

/// The x in the 7 coordinates with T x = w (T = diag(I, 2 E(p)), w a twist) and p'x_p = c: since
/// E'E = n I - p p' (n = p'p), x_p = (E'w_w / 2 + c p) / n; closed_form_response is the case c = 0.
/// A leaf holds its b as T b, so its formulation keeps only p'b_p for the way back.
inline Vec7 from_twist(const Vec6& w, double c, const Vec4& p) {
  Vec7 out = closed_form_response(w, p);
  out.tail<4>() += (c / p.squaredNorm()) * p;
  return out;
}

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
/// s = h^2 / 4, K = s M_cc^-1, M_cc = M + s alpha Psi_q' Psi_q (Eq. 23), block diagonal
/// (closed_form_tangent_twist applies it), and
/// T K T' = s diag(I/m, A J^-1 A') — the inverse of the body's spatial inertia about its centre of
/// mass, in which the penalty does not appear (E(p) p = 0, E(p) G(p)' = (p'p) A). Returns T K T'
/// (TwistTangent). A is the body's rotation (from the normalised p), J_inverse its body-frame
/// inverse inertia.
inline TwistTangent closed_form_tangent(double m, const Mat3& J_inverse, const Mat3& A, double s) {
  TwistTangent K_twist;
  K_twist.k = s / m;
  K_twist.K_w.noalias() = s * A * J_inverse * A.transpose();
  return K_twist;
}

}  // namespace treedyn::ali3
