// The reference formulation against analytic solutions and conservation laws.
#include <gtest/gtest.h>

#include <cmath>

#include "support.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"

using namespace treedyn;

namespace {

Body bar(const std::string& name, const Vec3& position, double angle_z, double mass = 1.0, Mat3 inertia = Mat3::Identity()) {
  Body b;
  b.name = name;
  b.mass = mass;
  b.inertia = inertia;
  b.position = position;
  b.orientation = Quat(Eigen::AngleAxisd(angle_z, Vec3::UnitZ()));
  return b;
}

/// One 1 m, 1 kg link (centroidal inertia diag(J, J, J)) pinned at the origin, hanging at angle
/// theta0 from the downward vertical, in the x-y plane.
Model pendulum(double theta0, double J = 1.0, Vec3 gravity = {0, -9.81, 0}) {
  ModelBuilder b("pendulum");
  b.gravity(gravity);
  b.body(bar("link", {0.5 * std::sin(theta0), -0.5 * std::cos(theta0), 0}, theta0 - M_PI / 2, 1.0, J * Mat3::Identity()));
  b.joint(JointSpec::at("pin", JointType::Revolute, "ground", "link", {0, 0, 0}));
  return b.build();
}

FormulationSettings tight(double tol = 1e-12) {
  FormulationSettings s;
  s.rtol = tol;
  s.atol = tol;
  return s;
}

/// Angle of a link from the downward vertical, from its centre of mass about the origin.
double hanging_angle(const Vec3& r) { return std::atan2(r.x(), -r.y()); }

}  // namespace

// Small-angle period of a compound pendulum: T = 2 pi sqrt(I_O / (m g d)), I_O = J + m d^2, with
// the finite-amplitude correction T0 (1 + theta0^2 / 16).
TEST(Reference, PendulumHasItsSmallAnglePeriod) {
  const double theta0 = 0.01, d = 0.5, g = 9.81, I_O = 1.0 + d * d;
  const double period = 2 * M_PI * std::sqrt(I_O / (g * d)) * (1 + theta0 * theta0 / 16);
  test::Recorder rec;
  const auto r = test::simulate(pendulum(theta0), "reference", tight(), 2.2 * period, 1e-3, &rec);
  ASSERT_TRUE(r.ok()) << r.message;
  std::vector<double> crossings;  // downward crossings of the vertical, by linear interpolation
  for (std::size_t k = 1; k < rec.snapshots.size(); ++k) {
    const double a = hanging_angle(rec.snapshots[k - 1].bodies[0].r), b = hanging_angle(rec.snapshots[k].bodies[0].r);
    if (a > 0 && b <= 0) crossings.push_back(rec.snapshots[k - 1].t + (rec.snapshots[k].t - rec.snapshots[k - 1].t) * a / (a - b));
  }
  ASSERT_GE(crossings.size(), 2u);
  EXPECT_NEAR((crossings[1] - crossings[0]) / period, 1.0, 2e-6);
}

// Planar double pendulum against Lagrange's equations in the two link angles (written out in
// tests/support), integrated independently with RK4 at h = 1e-4: positions agree to 1e-7 over 5 s.
TEST(Reference, PlanarDoublePendulumMatchesLagrangeEquations) {
  test::expect_double_pendulum_matches_lagrange("reference", tight(1e-12), 1e-7);
}

// Released from horizontal at rest: angular acceleration alpha = m g d / I_O, so the pin pushes up
// on the link with m g - m d alpha = m g (1 - m d^2 / I_O) and not at all sideways.
TEST(Reference, JointReactionOfAReleasedPendulum) {
  test::Recorder rec;
  const auto r = test::simulate(pendulum(M_PI / 2), "reference", tight(), 0.01, 0.01, &rec);
  ASSERT_TRUE(r.ok());
  const JointReaction& reaction = rec.snapshots.front().reactions[0];
  EXPECT_NEAR(reaction.force.y(), 9.81 * (1 - 0.25 / 1.25), 1e-10);
  EXPECT_NEAR(reaction.force.x(), 0.0, 1e-10);
  EXPECT_NEAR(rec.snapshots.front().bodies[0].alpha.z(), -9.81 * 0.5 / 1.25, 1e-10);
}

// Conservative models: the energy error is set by the integration tolerance, and falls with it.
TEST(Reference, ConservesEnergyToTheIntegrationTolerance) {
  for (const char* name : {"spatial_double_pendulum", "loop4", "double_loop8"}) {
    const Model m = read_model_file(test::model_path(name));
    double drift_loose = 0.0;
    for (double tol : {1e-8, 1e-11}) {
      const auto r = test::simulate(m, "reference", tight(tol), 3.0, 0.01);
      ASSERT_TRUE(r.ok()) << name << ": " << r.message;
      EXPECT_LT(r.constraint_error_max.position, 10 * tol) << name << " tol " << tol;
      if (tol == 1e-8) {
        drift_loose = r.energy_drift_max;
        EXPECT_LT(drift_loose, 1e-4) << name;  // energies here are tens of joules
      } else {
        EXPECT_LT(r.energy_drift_max, drift_loose / 50) << name;
      }
    }
  }
}

// Paper 000, Sect. 4.3: redundant constraints and the aligned (singular) position every half
// swing, for 30 s.
TEST(Reference, RedundantFourBarRunsThirtySecondsThroughItsSingularPositions) {
  const Model m = read_model_file(test::model_path("four_bar"));
  test::Recorder rec;
  const auto r = test::simulate(m, "reference", tight(1e-10), 30.0, 0.01, &rec);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_LT(r.constraint_error_max.position, 1e-9);
  EXPECT_LT(r.constraint_error_max.velocity, 1e-8);
  EXPECT_LT(r.energy_drift_max, 1e-4);
  int aligned = 0;  // passes through the aligned position: crank A pointing straight down
  for (std::size_t k = 1; k < rec.snapshots.size(); ++k) {
    const double a = rec.snapshots[k - 1].bodies[0].r.x(), b = rec.snapshots[k].bodies[0].r.x();
    if ((a > 0) != (b > 0) && rec.snapshots[k].bodies[0].r.y() < 0) ++aligned;
  }
  EXPECT_GE(aligned, 10);
}

TEST(Reference, ActuatorTorqueSpinsUpAPinnedLink) {
  ModelBuilder b("motor");
  b.body(bar("link", {0.5, 0, 0}, 0.0));
  b.joint(JointSpec::at("pin", JointType::Revolute, "ground", "link", {0, 0, 0}));
  b.joint_actuator({"motor", "pin", 0, TimeFunction::constant(2.0)});
  const Model m = b.build();
  test::Recorder rec;
  ASSERT_TRUE(test::simulate(m, "reference", tight(), 1.0, 0.1, &rec).ok());
  const double theta = std::atan2(rec.snapshots.back().bodies[0].r.y(), rec.snapshots.back().bodies[0].r.x());
  EXPECT_NEAR(theta, 0.5 * 2.0 / 1.25 * 1.0, 1e-9);  // theta = tau t^2 / (2 I_O)
}

TEST(Reference, SpringOnASliderOscillatesWithItsNaturalPeriod) {
  ModelBuilder b("oscillator");
  b.body(bar("mass", {0.1, 0, 0}, 0.0, 2.0));
  b.joint(JointSpec::at("slide", JointType::Prismatic, "ground", "mass", {0, 0, 0}, Vec3::UnitX()));
  b.spring_damper({"spring", "ground", "mass", {Vec3(-1, 0, 0), true}, {Vec3(0, 0, 0), false}, 50.0, 0.0, 1.0});
  const Model m = b.build();
  const double omega = std::sqrt(50.0 / 2.0);
  test::Recorder rec;
  ASSERT_TRUE(test::simulate(m, "reference", tight(), 2.0, 0.25, &rec).ok());
  for (const Snapshot& s : rec.snapshots) EXPECT_NEAR(s.bodies[0].r.x(), 0.1 * std::cos(omega * s.t), 1e-9) << s.t;
}

TEST(Reference, FreeBodyKeepsItsAngularMomentumAndFallsFreely) {
  ModelBuilder b("tumbling");
  b.gravity({0, 0, -9.81});
  Body body = bar("box", {0, 0, 0}, 0.3, 2.0, Vec3(1.0, 2.0, 3.0).asDiagonal());
  body.angular_velocity = {0.1, 3.0, 0.2};  // near the unstable intermediate axis
  body.velocity = {1.0, 0, 0};
  b.body(body);
  b.joint(JointSpec::at("float", JointType::Free, "ground", "box", {0, 0, 0}));
  const Model m = b.build();
  test::Recorder rec;
  ASSERT_TRUE(test::simulate(m, "reference", tight(1e-11), 5.0, 0.5, &rec).ok());
  auto momentum = [&](const BodyState& s) {
    const Mat3 A = s.q.toRotationMatrix();
    return Vec3(A * m.bodies[0].inertia * A.transpose() * s.w);
  };
  const Vec3 L0 = momentum(rec.snapshots.front().bodies[0]);
  for (const Snapshot& s : rec.snapshots) {
    EXPECT_LT((momentum(s.bodies[0]) - L0).norm(), 1e-8);
    EXPECT_LT((s.bodies[0].r - Vec3(s.t, 0, -0.5 * 9.81 * s.t * s.t)).norm(), 1e-9);
  }
}

TEST(Reference, DriverImposesItsMotionAndReportsItsEffort) {
  const Model m = read_model_file(test::model_path("slider_crank"));
  test::Recorder rec;
  const auto r = test::simulate(m, "reference", tight(1e-10), 1.0, 0.01, &rec);
  ASSERT_TRUE(r.ok()) << r.message;
  double reference_angle = 0.0;
  for (const Snapshot& s : rec.snapshots) {
    const Joint& crank = m.joints[0];
    const double angle = measure_coordinate(crank, 0, BodyState{}, s.bodies[0], &reference_angle).value;
    reference_angle = angle;
    EXPECT_NEAR(angle, 2 * M_PI * s.t, 1e-8) << s.t;
    ASSERT_EQ(s.driver_efforts.size(), 1u);
  }
  // With the driver's work counted, energy balances up to the trapezoidal rule over samples.
  EXPECT_LT(r.energy_drift_max, 1e-3);
  EXPECT_GT(std::abs(rec.snapshots[30].driver_efforts[0]), 1e-3);
}
