#include <gtest/gtest.h>

#include <random>

#include "treedyn/spatial.hpp"

using namespace treedyn;

TEST(Spatial, SkewIsTheCrossProduct) {
  const Vec3 a(0.3, -1.2, 2.0), b(-0.7, 0.4, 1.1);
  EXPECT_LT((skew(a) * b - a.cross(b)).norm(), 1e-15);
  EXPECT_LT((skew(a) + skew(a).transpose()).norm(), 1e-15);
}

TEST(Spatial, So3ExpMatchesAngleAxisAndLogInvertsIt) {
  for (const Vec3& phi : {Vec3(0.3, -0.2, 0.9), Vec3(1e-10, 0, 0), Vec3(0, 2.5, 0)}) {
    const Mat3 R = so3_exp(phi);
    const Mat3 expected = phi.norm() > 0 ? Eigen::AngleAxisd(phi.norm(), phi.normalized()).toRotationMatrix() : Mat3::Identity();
    EXPECT_LT((R - expected).norm(), 1e-14);
    EXPECT_LT((so3_log(R) - phi).norm(), 1e-12);
    EXPECT_LT((quat_exp(phi).toRotationMatrix() - R).norm(), 1e-14);
  }
}

TEST(Spatial, EulerParameterRotationMatchesEigenQuaternion) {
  const Quat q = Quat(0.4, -0.3, 0.8, 0.2).normalized();
  EXPECT_LT((rotation_of(euler_parameters(q)) - q.toRotationMatrix()).norm(), 1e-14);
}

// Paper 000, Eq. (7): w' = 2 G(p) pdot (body frame); and w = 2 E(p) pdot (global frame), checked
// against the angular velocity that generated the motion p(t) = exp(t w) p0.
TEST(Spatial, GAndEMatricesGiveBodyAndGlobalAngularVelocity) {
  const Quat p0 = Quat(0.1, 0.7, -0.2, 0.4).normalized();
  const Vec3 w(0.3, -1.1, 0.6);  // global
  const double h = 1e-6;
  const Vec4 pdot = (euler_parameters(Quat(quat_exp<double>(h * w) * p0)) - euler_parameters(Quat(quat_exp<double>(-h * w) * p0))) / (2 * h);
  const Vec4 p = euler_parameters(p0);
  EXPECT_LT((2.0 * E_matrix(p) * pdot - w).norm(), 1e-8);
  EXPECT_LT((2.0 * G_matrix(p) * pdot - p0.toRotationMatrix().transpose() * w).norm(), 1e-8);
}

// The closed-form inverse of ali3's Euler-parameter block 4 G'JG + c pp' (paper 000, Eqs. 7, 23)
// against Eigen's LU inverse, for unit and non-unit p (Newton iterates are not normalised) and
// penalties from weak to paper 000's chain128 value. Both are exact up to rounding, which grows
// with the block's condition number kappa (~1e5 at the largest c): tolerance 1e-14 kappa.
// E_times, E_transpose_times, G_times and G_transpose_times are the products with E_matrix and
// G_matrix bit for bit (ali3's outputs are the same bytes as with the matrices: the hot loops
// form no 3 x 4 matrix). Should a change of Eigen's sum order break the identity, the bound
// that holds is a few ulps of |p| |x|; this test then says so.
TEST(Spatial, EAndGProductsAreTheMatrixProductsBitForBit) {
  std::mt19937_64 rng(7);
  std::normal_distribution<double> d;
  for (int k = 0; k < 20000; ++k) {
    const Vec4 p(d(rng), d(rng), d(rng), d(rng)), x(d(rng), d(rng), d(rng), d(rng));
    const Vec3 n(d(rng), d(rng), d(rng));
    const Mat34 E = E_matrix<double>(p), G = G_matrix<double>(p);
    ASSERT_EQ(E_times<double>(p, x), Vec3(E * x)) << k;
    ASSERT_EQ(E_transpose_times<double>(p, n), Vec4(E.transpose() * n)) << k;
    ASSERT_EQ(G_times<double>(p, x), Vec3(G * x)) << k;
    ASSERT_EQ(G_transpose_times<double>(p, n), Vec4(G.transpose() * n)) << k;
  }
}

TEST(Spatial, EulerBlockInverseMatchesNumericalInverse) {
  Mat3 J;
  J << 0.8, 0.05, -0.02, 0.05, 0.5, 0.01, -0.02, 0.01, 0.3;
  for (const Vec4& p : {Vec4(0.4, -0.3, 0.8, 0.2).normalized().eval(), Vec4(1.01, 0.02, -0.03, 0.1)})
    for (double c : {1e-2, 1.0, 2.5e4}) {
      const Mat34 G = G_matrix(p);
      const Mat4 A = 4.0 * G.transpose() * J * G + c * p * p.transpose();
      const Mat4 inverse = euler_block_inverse<double>(J.inverse(), p, c);
      const double kappa = A.norm() * inverse.norm();
      EXPECT_LT((A * inverse - Mat4::Identity()).norm(), 1e-14 * kappa) << "c = " << c;
      EXPECT_LT((inverse - A.inverse()).norm() / inverse.norm(), 1e-14 * kappa) << "c = " << c;
    }
}

// Paper 001, Eq. (14): S12 moves momenta from O2 to O1, S12^T moves velocities from O1 to O2.
TEST(Spatial, ShiftMatrixMovesVelocitiesAndMomentaConsistently) {
  const Vec3 l12(0.4, -0.5, 1.2);
  Vec6 V1;
  V1 << 0.3, 0.1, -0.2, 0.5, -0.7, 0.2;  // [v; w] at O1
  const Vec6 V2 = shift_matrix(l12).transpose() * V1;
  EXPECT_LT((V2.head<3>() - (V1.head<3>() + V1.tail<3>().cross(l12))).norm(), 1e-15);
  EXPECT_LT((shift_matrix(l12) * shift_matrix(Vec3(-l12)) - Mat6::Identity()).norm(), 1e-15);
  // Kinetic energy does not depend on the reference point: V1' M1 V1 = V2' M2 V2.
  const Mat3 J = Vec3(1.0, 2.0, 1.5).asDiagonal();
  const Vec3 c1(0.2, 0.1, -0.3);  // centre of mass from O1
  const Mat6 M1 = spatial_inertia(2.0, J, c1), M2 = spatial_inertia(2.0, J, Vec3(c1 - l12));
  EXPECT_NEAR(V1.dot(M1 * V1), V2.dot(M2 * V2), 1e-13);
}

// Paper 004, Eq. (1): the planar shift matrix moves a force at C to a load at O.
TEST(Spatial, PlanarShiftMatrixMovesForceToTorque) {
  const Vec2 s_OC(0.3, -0.4);
  const Vec3 Q_C(2.0, 1.0, 0.5);  // [fx, fy, tau] at C
  const Vec3 Q_O = planar_shift_matrix(s_OC) * Q_C;
  EXPECT_NEAR(Q_O(2), 0.5 + (s_OC.x() * 1.0 - s_OC.y() * 2.0), 1e-15);
  EXPECT_EQ(Q_O.head<2>(), Q_C.head<2>());
}

TEST(Spatial, FrameFromZIsRightHandedWithRequestedAxes) {
  const Mat3 R = frame_from_z(Vec3(0, 0, 2), Vec3(1, 1, 0));
  EXPECT_LT((R.transpose() * R - Mat3::Identity()).norm(), 1e-14);
  EXPECT_NEAR(R.determinant(), 1.0, 1e-14);
  EXPECT_LT((R.col(2) - Vec3::UnitZ()).norm(), 1e-14);
  EXPECT_LT((R.col(0) - Vec3(1, 1, 0).normalized()).norm(), 1e-14);
  EXPECT_NEAR(any_perpendicular(Vec3(0.2, 0.9, -0.1)).dot(Vec3(0.2, 0.9, -0.1)), 0.0, 1e-15);
}
