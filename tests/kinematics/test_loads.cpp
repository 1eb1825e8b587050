// Applied loads: conservative ones do exactly the work their potential loses; non-conservative
// ones do the work nonconservative_power() reports.
#include <gtest/gtest.h>

#include <random>

#include "support.hpp"
#include "treedyn/coordinate_map.hpp"
#include "treedyn/external_loads.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/topology.hpp"

using namespace treedyn;

namespace {

Model two_bodies(double damping, bool with_actuator) {
  ModelBuilder b("loads");
  b.gravity({0.3, -9.81, 0.5});
  Body a;
  a.name = "A";
  a.mass = 2.0;
  a.inertia = Vec3(1.0, 2.0, 1.5).asDiagonal();
  a.position = {0.5, 0, 0};
  Body c = a;
  c.name = "C";
  c.position = {1.5, 0.2, 0};
  b.body(a).body(c);
  b.joint(JointSpec::at("j1", JointType::Free, "ground", "A", {0, 0, 0}));
  b.joint(JointSpec::at("j2", JointType::Cylindrical, "A", "C", {1, 0, 0}, Vec3(0.2, 0.1, 1.0)));
  b.spring_damper({"s", "ground", "C", {Vec3(0, 1, 0), true}, {Vec3(0.1, 0.2, 0), false}, 30.0, damping, 0.5});
  b.rotational_spring_damper({"r", "j2", 0, 4.0, damping, 0.3});
  if (with_actuator) {
    b.joint_actuator({"m", "j2", 1, TimeFunction::constant(2.5)});
    b.body_force({"f", "C", Vec3(1, 0, 0), TimeFunction::constant(1.5), LoadFrame::Body, PointSpec{Vec3(0.3, 0, 0), false}});
    b.body_torque({"t", "A", Vec3(0, 1, 0), TimeFunction::constant(0.7), LoadFrame::Global});
  }
  return b.build();
}

/// A 3 kg body on a joint of `type` to ground at the origin, under gravity alone (-9.81 along y).
Model one_body(JointType type) {
  ModelBuilder b("one");
  b.gravity({0, -9.81, 0});
  Body a;
  a.name = "A";
  a.mass = 3.0;
  a.inertia = Mat3::Identity();
  b.body(a).joint(JointSpec::at("j", type, "ground", "A", {0, 0, 0}));
  return b.build();
}

double wrench_power(const std::vector<Vec6>& w, const SystemState& s) {
  double p = 0;
  for (std::size_t i = 0; i < s.size(); ++i) p += w[i].head<3>().dot(s[i].v) + w[i].tail<3>().dot(s[i].w);
  return p;
}

}  // namespace

// A joint coordinate is a coordinate on its joint's constraint manifold: the states here move
// along it (A free, C turning and sliding on the cylindrical joint j2).
TEST(AppliedLoads, ConservativeLoadsDoTheWorkTheirPotentialLoses) {
  const Model m = two_bodies(0.0, false);
  AppliedLoads loads(m);
  SystemState s = initial_state(m);
  const Vec3 o(1, 0, 0), z = Vec3(0.2, 0.1, 1.0).normalized();  // joint j2 at t0
  const double theta_dot = 0.7, d_dot = -0.4;
  s[0].v = Vec3(0.3, -0.2, 0.5);
  s[0].w = Vec3(-0.6, 0.4, 0.9);
  s[1].w = s[0].w + theta_dot * z;
  s[1].v = s[0].v + s[0].w.cross(o - s[0].r) + d_dot * z + s[1].w.cross(s[1].r - o);
  std::vector<Vec6> w;
  loads.evaluate(0.0, s, w);
  const double h = 1e-6;
  SystemState sp = s, sm = s;
  for (std::size_t i = 0; i < s.size(); ++i) {
    Vec6 V;
    V << s[i].v, s[i].w;
    sp[i] = test::moved(s[i], V, h);
    sm[i] = test::moved(s[i], V, -h);
  }
  const double dVdt = (loads.potential_energy(sp) - loads.potential_energy(sm)) / (2 * h);
  EXPECT_NEAR(wrench_power(w, s), -dVdt, 1e-7);
  EXPECT_EQ(loads.nonconservative_power(0.0, s), 0.0);
}

TEST(AppliedLoads, NonConservativePowerIsTheWorkRateOfDampersAndDrives) {
  const Model with = two_bodies(0.8, true), without = two_bodies(0.0, false);
  AppliedLoads a(with), b(without);
  std::mt19937 rng(9);
  SystemState s = initial_state(with);
  for (auto& body : s) {
    const BodyState r = test::random_state(rng);
    body.v = r.v;
    body.w = r.w;
  }
  std::vector<Vec6> wa, wb;
  a.evaluate(0.0, s, wa);
  b.evaluate(0.0, s, wb);
  EXPECT_NEAR(wrench_power(wa, s) - wrench_power(wb, s), a.nonconservative_power(0.0, s), 1e-12);
  EXPECT_LT(a.nonconservative_power(0.0, s), 0.5);  // the dampers dissipate; the drives are small here
}

TEST(AppliedLoads, GravityActsAtTheCentreOfMass) {
  const Model g = one_body(JointType::Free);
  std::vector<Vec6> w;
  AppliedLoads(g).evaluate(0.0, initial_state(g), w);
  EXPECT_LT((w[0] - (Vec6() << 0, -3 * 9.81, 0, 0, 0, 0).finished()).norm(), 1e-14);
}

// Under gravity alone the weights read no state: evaluate_unless_held makes them once and keeps
// them while nothing else loads the bodies, and evaluates again as soon as an external load comes
// in and once more when it goes (the vector then holds that load, not the weights).
TEST(AppliedLoads, HeldWeightsFollowAnExternalLoadThatComesAndGoes) {
  const Model g = one_body(JointType::Spherical);
  const auto map = std::make_shared<const CoordinateMap>(g, Topology(g));
  ExternalLoads external(map);
  const AppliedLoads loads(g, &external);
  const SystemState state = initial_state(g);
  const Vec6 weight = (Vec6() << 0, -3 * 9.81, 0, 0, 0, 0).finished();
  std::vector<Vec6> w;
  bool held = false;
  EXPECT_TRUE(loads.evaluate_unless_held(0.0, state, w, held));
  EXPECT_TRUE(held);
  EXPECT_EQ(w[0], weight);
  w[0].setConstant(7.0);  // not evaluated again: what the vector holds stays
  EXPECT_FALSE(loads.evaluate_unless_held(0.1, state, w, held));
  EXPECT_EQ(w[0](0), 7.0);
  w[0] = weight;
  external.set_body_wrench(0, Vec3(1, 2, 3), Vec3(4, 5, 6));
  EXPECT_TRUE(loads.evaluate_unless_held(0.2, state, w, held));
  EXPECT_FALSE(held);
  EXPECT_EQ(w[0], (Vec6() << 1, 2 - 3 * 9.81, 3, 4, 5, 6).finished());
  EXPECT_TRUE(loads.evaluate_unless_held(0.3, state, w, held));  // evaluated while the load is on
  external.clear_inputs();
  EXPECT_TRUE(loads.evaluate_unless_held(0.4, state, w, held));  // the weights again
  EXPECT_TRUE(held);
  EXPECT_EQ(w[0], weight);
}

// Efforts are held only once set (or read): before, effort() reads as zeros of the right size, a
// wrench alone is applied and does its power F.v + T.w, and one joint's efforts set on their own
// leave the others zero.
TEST(ExternalLoads, EffortsReadAsZerosUntilSetAndAWrenchAloneDoesItsPower) {
  const Model g = one_body(JointType::Free);
  const auto map = std::make_shared<const CoordinateMap>(g, Topology(g));
  SystemState state = initial_state(g);
  state[0].v = Vec3(1.0, -2.0, 0.5);
  state[0].w = Vec3(0.0, 3.0, -1.0);
  {
    const ExternalLoads external(map);
    EXPECT_EQ(external.effort(), Eigen::VectorXd::Zero(6));
  }
  ExternalLoads external(map);
  external.set_body_wrench(0, Vec3(4, 5, 6), Vec3(-1, 2, 0.5));
  std::vector<Vec6> w(1, Vec6::Zero());
  external.add_to(0.0, state, w);
  EXPECT_EQ(w[0], (Vec6() << 4, 5, 6, -1, 2, 0.5).finished());
  EXPECT_DOUBLE_EQ(external.power(0.0, state), 4 * 1.0 + 5 * -2.0 + 6 * 0.5 + 2 * 3.0 + 0.5 * -1.0);
  external.clear_inputs();
  external.set_joint_effort(map->entries().front().name(), (Eigen::VectorXd(6) << 0, 0, 7, 0, 0, 0).finished());
  EXPECT_EQ(external.effort(), (Eigen::VectorXd(6) << 0, 0, 7, 0, 0, 0).finished());
  EXPECT_DOUBLE_EQ(external.power(0.0, state), 7 * 0.5);  // 7 N along z at v_z = 0.5 m/s
}
