// PrincipalInertia against the products it replaces: A J_body^-1 A' and A J_body A' w.
#include <gtest/gtest.h>

#include <limits>
#include <random>
#include <string>

#include "kinematics/principal_inertia.hpp"
#include "support.hpp"

using namespace treedyn;

namespace {

constexpr double eps = std::numeric_limits<double>::epsilon();

Quat random_rotation(std::mt19937& rng) {
  std::normal_distribution<double> n;
  return Quat(n(rng), n(rng), n(rng), n(rng)).normalized();
}

// J_inverse against A J_body^-1 A' (Eigen's inverse of the body-frame matrix), J w against
// A J_body A' w, for random orientations. Both sides round; inverting J_body loses up to
// cond(J_body) eps relative (each side), so the bound is 32 cond eps |J^-1|; the product J w,
// without an inverse, 32 eps |J| |w|.
void expect_matches_the_full_products(const Mat3& J_body, std::mt19937& rng) {
  const PrincipalInertia J(J_body);
  const Mat3 J_body_inverse = J_body.inverse();
  const double cond = J_body.norm() * J_body_inverse.norm();
  for (int k = 0; k < 20; ++k) {
    const Quat q = random_rotation(rng);
    const Mat3 A = q.toRotationMatrix();
    const Vec3 w = Vec3::Random();
    const Mat3 axes = J.axes(q);
    const Mat3 J_inverse = J.inverse(axes);
    EXPECT_EQ(J_inverse, J_inverse.transpose()) << "symmetric to the last bit";
    const Mat3 expected = A * J_body_inverse * A.transpose();
    EXPECT_LE((J_inverse - expected).cwiseAbs().maxCoeff(), 32 * cond * eps * J_body_inverse.norm()) << J_body;
    const Vec3 Jw = A * J_body * A.transpose() * w;
    EXPECT_LE((J.times(axes, w) - Jw).cwiseAbs().maxCoeff(), 32 * eps * J_body.norm() * w.norm()) << J_body;
    EXPECT_LE((axes * J.moments().asDiagonal() * axes.transpose() - A * J_body * A.transpose()).cwiseAbs().maxCoeff(),
              32 * eps * J_body.norm());
  }
}

}  // namespace

TEST(PrincipalInertia, DiagonalInertiaKeepsTheBodyFrameBitForBit) {
  std::mt19937 rng(1);
  const Mat3 J_body = Vec3(0.3, 0.5, 0.7).asDiagonal();
  const PrincipalInertia J(J_body);
  EXPECT_TRUE(J.aligned());
  EXPECT_EQ(J.moments(), Vec3(0.3, 0.5, 0.7));
  for (int k = 0; k < 5; ++k) {
    const Quat q = random_rotation(rng);
    EXPECT_EQ(J.axes(q), q.toRotationMatrix());  // no decomposition, no extra product
  }
  expect_matches_the_full_products(J_body, rng);
}

TEST(PrincipalInertia, FullInertiaIsDecomposedIntoARotationAndMoments) {
  std::mt19937 rng(2);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (int k = 0; k < 20; ++k) {
    const Mat3 R = random_rotation(rng).toRotationMatrix();
    const Vec3 d(u(rng), u(rng), u(rng));
    const Mat3 J_body = R * d.asDiagonal() * R.transpose();
    const Mat3 J_symmetric = 0.5 * (J_body + J_body.transpose());
    const PrincipalInertia J(J_symmetric);
    EXPECT_FALSE(J.aligned());
    EXPECT_NEAR(J.rotation().norm(), 1.0, 4 * eps);
    EXPECT_GT(J.rotation().toRotationMatrix().determinant(), 0.0);  // a rotation, not a reflection
    expect_matches_the_full_products(J_symmetric, rng);
  }
}

// A thin rod tilted off its body axes: moments 1, 1, 1e-6 (cond 1e6); the bound grows with cond.
TEST(PrincipalInertia, ThinRodOffItsAxesKeepsItsSmallMoment) {
  std::mt19937 rng(3);
  const Mat3 R = Eigen::AngleAxisd(0.4, Vec3(1, 2, 3).normalized()).toRotationMatrix();
  Mat3 J_body = R * Vec3(1.0, 1.0, 1e-6).asDiagonal() * R.transpose();
  J_body = 0.5 * (J_body + J_body.transpose());
  const PrincipalInertia J(J_body);
  EXPECT_NEAR(J.moments().minCoeff(), 1e-6, 1e-6 * 1e-9);
  expect_matches_the_full_products(J_body, rng);
}

// The model's validation allows an asymmetry of 1e-9 relative: the symmetric part is used.
TEST(PrincipalInertia, SlightlyAsymmetricInertiaUsesItsSymmetricPart) {
  Mat3 J_body = Vec3(1.0, 2.0, 2.5).asDiagonal();
  J_body(0, 1) = 1e-10;
  const PrincipalInertia J(J_body);
  const Mat3 symmetric = 0.5 * (J_body + J_body.transpose());
  const Mat3 axes = J.axes(Quat::Identity());
  EXPECT_LE((axes * J.moments().asDiagonal() * axes.transpose() - symmetric).cwiseAbs().maxCoeff(), 32 * eps * 2.5);
}

TEST(PrincipalInertia, AnInertiaThatIsNotPositiveDefiniteNamesTheBody) {
  Model m = test::branched_tree();  // built by hand below its validation, as a program might
  m.bodies[2].inertia = Vec3(1.0, -1.0, 1.0).asDiagonal();
  try {
    principal_inertias(m);
    FAIL() << "no error";
  } catch (const ModelError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("body '" + m.body_name(2) + "'"), std::string::npos) << what;
    EXPECT_NE(what.find("not positive definite"), std::string::npos) << what;
  }
  m.bodies[2].inertia(0, 0) = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(principal_inertias(m), ModelError);
}
