// One body in paper 000's Euler parameters (src/formulations/ali3/euler_body.hpp) against the
// matrices written out in full and against Euler's rigid-body equations.
#include <gtest/gtest.h>

#include <Eigen/LU>
#include <random>

#include "formulations/ali3/euler_body.hpp"

using namespace treedyn;
using namespace treedyn::ali3;

namespace {

struct RandomBody {
  double m;
  Mat3 J;
  Vec4 p;   // unit Euler parameters
  Vec4 pd;  // p' pd = 0
};

RandomBody random_body(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  RandomBody b;
  b.m = 1.5 + u(rng);
  Mat3 R;
  for (int i = 0; i < 9; ++i) R(i) = u(rng);
  b.J = R * R.transpose() + Mat3::Identity();
  b.p = Vec4(u(rng), u(rng), u(rng), u(rng)).normalized();
  const Vec4 d(u(rng), u(rng), u(rng), u(rng));
  b.pd = d - d.dot(b.p) * b.p;
  return b;
}

/// T = diag(I, 2 E(p)), 6 x 7, written out.
Eigen::Matrix<double, 6, 7> T_of(const Vec4& p) {
  Eigen::Matrix<double, 6, 7> T = Eigen::Matrix<double, 6, 7>::Zero();
  T.topLeftCorner<3, 3>().setIdentity();
  T.bottomRightCorner<3, 4>() = 2.0 * E_matrix<double>(p);
  return T;
}

Vec7 random7(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Vec7 v;
  for (int i = 0; i < 7; ++i) v(i) = u(rng);
  return v;
}

}  // namespace

TEST(EulerBody, MassTimesIsTheMassMatrixOfEq7Applied) {
  std::mt19937 rng(1);
  for (int k = 0; k < 20; ++k) {
    const RandomBody b = random_body(rng);
    const Vec7 v = random7(rng);
    const Vec7 expected = mass_matrix(b.m, b.J, b.p) * v;
    EXPECT_LT((mass_times(b.m, b.J, b.p, v) - expected).norm(), 1e-13 * expected.norm());
  }
}

TEST(EulerBody, TwistSpaceMapsAreTAndItsTranspose) {
  std::mt19937 rng(2);
  for (int k = 0; k < 20; ++k) {
    const RandomBody b = random_body(rng);
    const auto T = T_of(b.p);
    const Vec7 x = random7(rng);
    Mat7 K;
    for (int i = 0; i < 49; ++i) K(i) = std::uniform_real_distribution<double>(-1, 1)(rng);
    K = (K + K.transpose()).eval();
    Vec6 w;
    for (int i = 0; i < 6; ++i) w(i) = std::uniform_real_distribution<double>(-1, 1)(rng);
    EXPECT_LT((in_twist(x, b.p) - T * x).norm(), 1e-14);
    EXPECT_LT((in_q(w, b.p) - T.transpose() * w).norm(), 1e-14);
    EXPECT_LT((in_twist(K, b.p) - T * K * T.transpose()).norm(), 1e-13);
  }
}

// Eq. 23's tangent in closed form: K = (h^2/4) (M + (h^2/4) alpha p p')^-1 against a dense 7 x 7
// inverse, and T K T' = (h^2/4) diag(I/m, A J^-1 A') with A = A(p).
TEST(EulerBody, ClosedFormTangentIsTheInverseOfEq23) {
  std::mt19937 rng(3);
  const double s = 0.25 * 0.01 * 0.01, alpha = 1e6;
  for (int k = 0; k < 20; ++k) {
    const RandomBody b = random_body(rng);
    const Mat3 A = quaternion<double>(b.p).toRotationMatrix();
    BlockTangent blocks;
    const Mat6 K_twist = closed_form_tangent(b.m, b.J.inverse(), A, b.p, s, alpha, blocks).full();
    const Mat7 K = blocks.full();
    const Vec7 x = Vec7::Random();
    EXPECT_LT((blocks.times(x) - K * x).norm(), 1e-15 * (K * x).norm());  // the 7 x 7's zeros left out
    Mat7 M_cc = mass_matrix(b.m, b.J, b.p);
    M_cc.bottomRightCorner<4, 4>() += s * alpha * b.p * b.p.transpose();
    const Mat7 expected = s * M_cc.fullPivLu().inverse();
    EXPECT_LT((K - expected).norm(), 1e-9 * expected.norm());
    const auto T = T_of(b.p);
    EXPECT_LT((K_twist - T * K * T.transpose()).norm(), 1e-12 * K_twist.norm());
    EXPECT_LT((K_twist.bottomRightCorner<3, 3>() - s * A * b.J.inverse() * A.transpose()).norm(), 1e-12 * K_twist.norm());
  }
}

// A torque-free body moves by Euler's equations J wdot' = -w' x J w' (body frame); with
// w' = 2 G pd, pdd = G' wdot' / 2 - (pd' pd) p, and Eqs. 7-8 then say M pdd + 8 Gd' J G pd is
// along Psi_q' = p (the normalisation multiplier's direction) and nothing else.
TEST(EulerBody, QuadraticVelocityTermAgreesWithEulersEquations) {
  std::mt19937 rng(4);
  for (int k = 0; k < 20; ++k) {
    const RandomBody b = random_body(rng);
    const Mat34 G = G_matrix<double>(b.p);
    const Vec3 w = 2.0 * G * b.pd;
    const Vec3 wdot = b.J.inverse() * (-w.cross(b.J * w));
    const Vec4 pdd = 0.5 * G.transpose() * wdot - b.pd.squaredNorm() * b.p;
    Vec7 qdd = Vec7::Zero();
    qdd.tail<4>() = pdd;
    const Vec4 residual = mass_times(b.m, b.J, b.p, qdd).tail<4>() + quadratic_velocity(b.J, b.p, b.pd);
    const Vec4 off_p = residual - residual.dot(b.p) * b.p;
    EXPECT_LT(off_p.norm(), 1e-12 * std::max(1.0, residual.norm())) << "trial " << k;
  }
}

TEST(EulerBody, TrapezoidalRatesSatisfyTheRuleExactly) {
  std::mt19937 rng(5);
  const Vec7 q_bar = random7(rng), qd_bar = random7(rng), qdd_bar = random7(rng), q = random7(rng);
  const double h = 0.01;
  Vec7 qd, qdd;
  trapezoidal_rates(q, q_bar, qd_bar, qdd_bar, h, qd, qdd);
  // q = q_bar + h/2 (qd_bar + qd) and qd = qd_bar + h/2 (qdd_bar + qdd) (the trapezoidal rule)
  EXPECT_LT((q - (q_bar + 0.5 * h * (qd_bar + qd))).norm(), 1e-12);
  EXPECT_LT((qd - (qd_bar + 0.5 * h * (qdd_bar + qdd))).norm(), 1e-10);
}
