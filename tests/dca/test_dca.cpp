// Featherstone's DCA against the reference formulation, Lagrange's equations, conservation laws,
// and itself under another thread count.
#include <gtest/gtest.h>

#include <cmath>

#include "allocation_counter.hpp"
#include "support.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"

using namespace treedyn;

namespace {

FormulationSettings tolerance(double tol, int threads = 1) {
  FormulationSettings s;
  s.rtol = s.atol = tol;
  s.threads = threads;
  return s;
}

Body link(const std::string& name, const Vec3& a, const Vec3& b, double mass = 1.0) {
  Body body;
  body.name = name;
  body.mass = mass;
  body.inertia = Vec3(0.05, 0.3, 0.3).asDiagonal() * mass;
  body.position = 0.5 * (a + b);
  body.orientation = Quat::FromTwoVectors(Vec3::UnitX(), b - a);
  return body;
}

/// A branched tree hanging under ground: a trunk splits into two branches of three links, one of
/// which splits again (spherical, revolute and universal joints), released from rest 20-40 degrees
/// away from hanging straight (large swings make such trees chaotic, and then no two solvers agree
/// for long, whatever their tolerance).
Model branched_tree() {
  ModelBuilder b("tree");
  b.gravity({0, -9.81, 0});
  auto add = [&](const std::string& name, const std::string& parent, const Vec3& a, const Vec3& c, JointType type) {
    b.body(link(name, a, c));
    const Vec3 axis = (c - a).cross(Vec3(0.3, 0.2, 1.0)).normalized();
    b.joint(JointSpec::at("j_" + name, type, parent, name, a, axis,
                          type == JointType::Universal ? std::optional<Vec3>((c - a).cross(axis).normalized()) : std::nullopt));
  };
  add("trunk", "ground", {0, 0, 0}, {0.3, -0.8, 0.1}, JointType::Spherical);
  add("l1", "trunk", {0.3, -0.8, 0.1}, {0.7, -1.5, 0.3}, JointType::Revolute);
  add("l2", "l1", {0.7, -1.5, 0.3}, {0.9, -2.2, 0.6}, JointType::Spherical);
  add("l3", "l2", {0.9, -2.2, 0.6}, {1.0, -2.9, 0.9}, JointType::Universal);
  add("r1", "trunk", {0.3, -0.8, 0.1}, {0.0, -1.5, -0.3}, JointType::Universal);
  add("r2", "r1", {0.0, -1.5, -0.3}, {-0.2, -2.2, -0.5}, JointType::Spherical);
  add("r3", "r2", {-0.2, -2.2, -0.5}, {-0.1, -2.9, -0.8}, JointType::Revolute);
  add("s1", "r1", {0.0, -1.5, -0.3}, {0.4, -2.0, -0.7}, JointType::Spherical);
  return b.build();
}

void expect_agrees_with_reference(const Model& m, double t_end, double tol, double bound) {
  test::Recorder ref, dca;
  ASSERT_TRUE(test::simulate(m, "reference", tolerance(tol), t_end, 0.05, &ref).ok());
  const auto r = test::simulate(m, "dca", tolerance(tol), t_end, 0.05, &dca);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_LT(test::max_position_difference(ref, dca), bound) << m.name;
}

}  // namespace

// Positions over 5 s at rtol = atol = 1e-10 (both formulations integrate to that tolerance; the
// bound allows the trajectories' sensitivity to amplify it).
TEST(Dca, MatchesReferenceOnTheSpatialDoublePendulum) {
  expect_agrees_with_reference(read_model_file(test::model_path("spatial_double_pendulum")), 5.0, 1e-10, 1e-6);
}

TEST(Dca, MatchesReferenceOnAnEightLinkSphericalChain) {
  expect_agrees_with_reference(make_chain(8, JointType::Spherical), 5.0, 1e-10, 1e-6);
}

TEST(Dca, MatchesReferenceOnABranchedTree) { expect_agrees_with_reference(branched_tree(), 5.0, 1e-10, 1e-6); }

TEST(Dca, MatchesReferenceOnTheFourBarLoopForTwoSeconds) {
  expect_agrees_with_reference(read_model_file(test::model_path("four_bar")), 2.0, 1e-10, 1e-6);
}

TEST(Dca, MatchesReferenceOnCoupledLoops) {
  expect_agrees_with_reference(read_model_file(test::model_path("double_loop8")), 2.0, 1e-10, 1e-6);
}

// The planar double pendulum against Lagrange's equations in two angles (tests/support).
TEST(Dca, PlanarDoublePendulumMatchesLagrangeEquations) {
  const test::DoublePendulumCase c;
  test::Recorder rec;
  ASSERT_TRUE(test::simulate(test::double_pendulum_model(c), "dca", tolerance(1e-12), 5.0, 0.5, &rec).ok());
  EXPECT_LT(test::max_deviation_from_lagrange(rec, c), 1e-7);
}

// Without stabilisation a loop closed at the acceleration level drifts (paper 001, Sect. 3.2);
// Baumgarte's terms keep the drift bounded.
TEST(Dca, LoopDriftGrowsWithoutBaumgarteAndStaysSmallWithIt) {
  const Model m = read_model_file(test::model_path("loop4"));
  auto drift = [&](double alpha, double beta, double t_from, double t_to) {
    FormulationSettings s = tolerance(1e-6);
    s.dca.baumgarte_alpha = alpha;
    s.dca.baumgarte_beta = beta;
    test::Recorder rec;
    EXPECT_TRUE(test::simulate(m, "dca", s, 10.0, 0.05, &rec).ok());
    double worst = 0;
    for (const MetricsSample& x : rec.metrics)
      if (x.t >= t_from && x.t <= t_to) worst = std::max(worst, x.max.position);
    return worst;
  };
  const double early = drift(0, 0, 0.0, 1.0), late = drift(0, 0, 9.0, 10.0);
  EXPECT_GT(late, 10 * early);                   // measured: 2.6e-6 -> 7.0e-5 m
  EXPECT_LT(drift(10, 10, 9.0, 10.0), late / 20);  // measured: 8.9e-7 m with alpha = beta = 10
}

TEST(Dca, ResultsAreIdenticalForOneAndTwoThreads) {
  const Model m = make_chain(100, JointType::Spherical);
  test::Recorder one, two;
  ASSERT_TRUE(test::simulate(m, "dca", tolerance(1e-8, 1), 0.2, 0.05, &one).ok());
  ASSERT_TRUE(test::simulate(m, "dca", tolerance(1e-8, 2), 0.2, 0.05, &two).ok());
  ASSERT_EQ(one.snapshots.size(), two.snapshots.size());
  for (std::size_t k = 0; k < one.snapshots.size(); ++k)
    for (std::size_t i = 0; i < one.snapshots[k].bodies.size(); ++i) {
      EXPECT_EQ(one.snapshots[k].bodies[i].r, two.snapshots[k].bodies[i].r);
      EXPECT_EQ(one.snapshots[k].bodies[i].a, two.snapshots[k].bodies[i].a);
    }
}

TEST(Dca, JointReactionsMatchTheReference) {
  const Model m = branched_tree();
  test::Recorder ref, dca;
  ASSERT_TRUE(test::simulate(m, "reference", tolerance(1e-11), 1.0, 0.25, &ref).ok());
  ASSERT_TRUE(test::simulate(m, "dca", tolerance(1e-11), 1.0, 0.25, &dca).ok());
  for (std::size_t k = 0; k < ref.snapshots.size(); ++k)
    for (std::size_t j = 0; j < m.joints.size(); ++j) {
      EXPECT_LT((ref.snapshots[k].reactions[j].force - dca.snapshots[k].reactions[j].force).norm(), 1e-6) << m.joints[j].name;
      EXPECT_LT((ref.snapshots[k].reactions[j].torque - dca.snapshots[k].reactions[j].torque).norm(), 1e-6) << m.joints[j].name;
    }
}

TEST(Dca, FreeFloatingChainConservesMomentum) {
  ModelBuilder b("floating");
  Body a = link("a", {0, 0, 0}, {1, 0, 0}), c = link("c", {1, 0, 0}, {1.5, 0.8, 0.2}), d = link("d", {1.5, 0.8, 0.2}, {2, 1, 1});
  a.velocity = {0.3, 0, 0.1};
  a.angular_velocity = {0.2, 1.0, -0.5};
  c.velocity = a.velocity + a.angular_velocity.cross(c.position - a.position);
  c.angular_velocity = a.angular_velocity;
  d.velocity = a.velocity + a.angular_velocity.cross(d.position - a.position);
  d.angular_velocity = a.angular_velocity;
  b.body(a).body(c).body(d);
  b.joint(JointSpec::at("ac", JointType::Spherical, "a", "c", {1, 0, 0}));
  b.joint(JointSpec::at("cd", JointType::Revolute, "c", "d", {1.5, 0.8, 0.2}, Vec3(0, 0, 1)));
  const Model m = b.build();
  test::Recorder rec;
  ASSERT_TRUE(test::simulate(m, "dca", tolerance(1e-10), 3.0, 0.5, &rec).ok());
  auto momenta = [&](const SystemState& s) {
    Vec3 p = Vec3::Zero(), L = Vec3::Zero();
    for (std::size_t i = 0; i < s.size(); ++i) {
      const Mat3 A = s[i].q.toRotationMatrix();
      p += m.bodies[i].mass * s[i].v;
      L += s[i].r.cross(m.bodies[i].mass * s[i].v) + A * m.bodies[i].inertia * A.transpose() * s[i].w;
    }
    return std::pair{p, L};
  };
  const auto [p0, L0] = momenta(rec.snapshots.front().bodies);
  for (const Snapshot& s : rec.snapshots) {
    const auto [p, L] = momenta(s.bodies);
    EXPECT_LT((p - p0).norm(), 1e-8);
    EXPECT_LT((L - L0).norm(), 1e-8);
  }
}

TEST(Dca, RightHandSideAllocatesNothing) {
  const Model m = make_chain(64, JointType::Spherical);
  FormulationSettings s;
  s.threads = 1;
  auto f = make_formulation("dca", m, s);
  const Eigen::VectorXd y = f->ode_state();
  Eigen::VectorXd ydot(y.size());
  f->ode()->rhs(0.0, y, ydot);  // first call may size scratch space
  test::CountAllocations count;
  f->ode()->rhs(0.0, y, ydot);
  EXPECT_EQ(count.count(), 0);
}

TEST(Dca, RefusesDriversWithAClearMessage) {
  try {
    make_formulation("dca", read_model_file(test::model_path("slider_crank")), {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("drivers"), std::string::npos);
  }
}
