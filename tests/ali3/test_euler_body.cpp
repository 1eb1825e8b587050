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

/// K x in the 7 coordinates as ali3 applies it: T K x and p'(K x)_p, mapped back by from_twist.
Vec7 closed_form_K_times(const TwistTangent& blocks, const Vec4& p, double alpha, const Vec7& x) {
  double along_p = 0.0;
  const Vec6 twist = closed_form_tangent_twist(blocks.k, blocks.K_w, p, alpha, x, along_p);
  return from_twist(twist, along_p, p);
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

// Eq. 23's tangent in closed form: K x = (h^2/4) (M + (h^2/4) alpha p p')^-1 x against a dense
// 7 x 7 inverse, and T K T' = (h^2/4) diag(I/m, A J^-1 A') with A = A(p).
TEST(EulerBody, ClosedFormTangentIsTheInverseOfEq23) {
  std::mt19937 rng(3);
  const double s = 0.25 * 0.01 * 0.01, alpha = 1e6;
  for (int k = 0; k < 20; ++k) {
    const RandomBody b = random_body(rng);
    const Mat3 A = quaternion<double>(b.p).toRotationMatrix();
    const Mat3 J_inverse = b.J.inverse();
    const TwistTangent blocks = closed_form_tangent(b.m, J_inverse, A, s);
    const Mat6 K_twist = blocks.full();
    Mat7 K;  // column by column, from K e_c
    for (int c = 0; c < 7; ++c) K.col(c) = closed_form_K_times(blocks, b.p, alpha, Vec7::Unit(c));
    Mat7 M_cc = mass_matrix(b.m, b.J, b.p);
    M_cc.bottomRightCorner<4, 4>() += s * alpha * b.p * b.p.transpose();
    const Mat7 expected = s * M_cc.fullPivLu().inverse();
    EXPECT_LT((K - expected).norm(), 1e-9 * expected.norm());  // the LU's round-off: M_cc's condition is about s alpha / 4 J
    const Vec7 x = random7(rng);
    EXPECT_LT((closed_form_K_times(blocks, b.p, alpha, x) - K * x).norm(), 1e-15 * (K * x).norm());
    // the product is the same as with the 4 x 4 block formed first (as the tangent was held until session 44)
    Mat7 K_formed = Mat7::Zero();
    K_formed.topLeftCorner<3, 3>().diagonal().setConstant(s / b.m);
    K_formed.bottomRightCorner<4, 4>() = s * euler_block_inverse<double>(J_inverse, b.p, s * alpha);
    EXPECT_LT((K - K_formed).norm(), 1e-13 * K_formed.norm());
    const auto T = T_of(b.p);
    EXPECT_LT((K_twist - T * K * T.transpose()).norm(), 1e-12 * K_twist.norm());
    EXPECT_LT((K_twist.bottomRightCorner<3, 3>() - s * A * J_inverse * A.transpose()).norm(), 1e-12 * K_twist.norm());
  }
}

// A leaf's x = b + K T' f: K T' f mapped back from the tree's twist-space response T K T' f,
// and its b = K x with T K x, also at Euler parameters off the unit sphere (Newton's iterates,
// which the penalty keeps near it).
TEST(EulerBody, ClosedFormResponseIsKTimesTheLoadsInTheSevenCoordinates) {
  std::mt19937 rng(6);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const double s = 0.25 * 0.01 * 0.01, alpha = 1e9;
  for (int k = 0; k < 20; ++k) {
    RandomBody b = random_body(rng);
    b.p *= 1.0 + 0.05 * u(rng);
    const Mat3 A = quaternion<double>(Vec4(b.p.normalized())).toRotationMatrix();
    const Mat3 J_inverse = b.J.inverse();
    const TwistTangent blocks = closed_form_tangent(b.m, J_inverse, A, s);
    const Mat6 K_twist = blocks.full();
    Vec6 f;
    for (int i = 0; i < 6; ++i) f(i) = u(rng);
    // K T' f with K_p formed as the tangent was held until session 44
    Mat7 K = Mat7::Zero();
    K.topLeftCorner<3, 3>().diagonal().setConstant(s / b.m);
    K.bottomRightCorner<4, 4>() = s * euler_block_inverse<double>(J_inverse, b.p, s * alpha);
    const Vec7 expected = K * in_q(f, b.p);
    EXPECT_LT((closed_form_K_times(blocks, b.p, alpha, in_q(f, b.p)) - expected).norm(), 1e-13 * expected.norm())
        << "trial " << k;
    EXPECT_LT((closed_form_response(K_twist * f, b.p) - expected).norm(), 1e-13 * expected.norm()) << "trial " << k;
    // and a leaf's b on the twist space, T K x, with p'(K x)_p
    const Vec7 x = random7(rng);
    double along_p = 0.0;
    const Vec6 b_twist = closed_form_tangent_twist(blocks.k, blocks.K_w, b.p, alpha, x, along_p);
    EXPECT_LT((b_twist - in_twist(Vec7(K * x), b.p)).norm(), 1e-13 * b_twist.norm()) << "trial " << k;
    EXPECT_NEAR(along_p, b.p.dot((K * x).tail<4>()), 1e-13 * (K * x).norm()) << "trial " << k;
    // a leaf's way out as ali3 takes it, from T b, T K T' f and p'b_p alone: x + K T' f
    const Vec7 out = from_twist(b_twist + K_twist * f, along_p, b.p);
    const Vec7 want = K * x + expected;
    EXPECT_LT((out - want).norm(), 1e-13 * want.norm()) << "trial " << k;
  }
}

TEST(EulerBody, FromTwistInvertsTGivenTheComponentAlongP) {
  // T = diag(I, 2 E(p)) loses x_p's component along p (E p = 0); with it given, from_twist gives x
  // back, p off the unit sphere as the penalty leaves it. A wrong E'E (n I - p p') fails by O(1).
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int k = 0; k < 20; ++k) {
    const Vec4 p = (1.0 + 0.05 * u(rng)) * Vec4(u(rng), u(rng), u(rng), u(rng)).normalized();
    const Vec7 x = random7(rng);
    const Vec7 back = from_twist(T_of(p) * x, p.dot(x.tail<4>()), p);
    EXPECT_LT((back - x).norm(), 1e-14 * x.norm()) << "trial " << k;
    EXPECT_GT((from_twist(T_of(p) * x, 0.0, p) - x).norm(), 1e-3 * std::abs(p.dot(x.tail<4>()))) << "trial " << k;
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
  // The predictor and three Newton increments applied as differences (trapezoidal_predictor,
  // trapezoidal_increment) against the rule itself (Eqs. 15-16), evaluated in long double from the
  // step's start: qd = 2/h (q - q_bar) - qd_bar, qdd = 4/h^2 (q - q_bar) - 4/h qd_bar - qdd_bar.
  std::mt19937 rng(5);
  const double h = 0.01;
  const Vec7 q_bar = random7(rng), qd_bar = random7(rng), qdd_bar = random7(rng);
  Vec7 q = q_bar, qd = qd_bar, qdd = qdd_bar;
  trapezoidal_predictor(q, qd, qdd, h);
  for (int k = 0; k < 3; ++k) trapezoidal_increment(1e-4 * random7(rng), h, q, qd, qdd);
  for (int c = 0; c < 7; ++c) {
    const long double H = h, dq = static_cast<long double>(q(c)) - q_bar(c);
    const long double qd_rule = 2.0L / H * dq - qd_bar(c);
    const long double qdd_rule = 4.0L / (H * H) * dq - 4.0L / H * qd_bar(c) - qdd_bar(c);
    // q holds its own round-off (1e-16 of |q| <= 2), which 2/h and 4/h^2 scale into the rule's rates
    // (2e2 and 4e4 times): the bounds are those, not the differences' own (a few 1e-16 of |qd|, |qdd|).
    EXPECT_NEAR(static_cast<double>(qd_rule), qd(c), 1e-12) << "coordinate " << c;
    EXPECT_NEAR(static_cast<double>(qdd_rule), qdd(c), 1e-10) << "coordinate " << c;
  }
  // and the rule's trapezoidal form: q = q_bar + h/2 (qd_bar + qd), qd = qd_bar + h/2 (qdd_bar + qdd)
  EXPECT_LT((q - (q_bar + 0.5 * h * (qd_bar + qd))).norm(), 1e-14);
  EXPECT_LT((qd - (qd_bar + 0.5 * h * (qdd_bar + qdd))).norm(), 1e-13);
}
