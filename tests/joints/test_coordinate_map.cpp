// The public joint coordinates (CoordinateMap) against independent descriptions of the same
// joints: the absolute-coordinate constraint equations, plane geometry written out in the test,
// and the principle of virtual power.
#include <gtest/gtest.h>

#include <numbers>
#include <random>

#include "support.hpp"
#include "treedyn/coordinate_map.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/projection.hpp"

using namespace treedyn;

namespace {

/// Random coordinates in (-1, 1) (unit quaternions with w > 0) and rates in (-1, 1).
std::pair<Eigen::VectorXd, Eigen::VectorXd> random_state(const CoordinateMap& map, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::VectorXd q(map.nq()), qd(map.nv());
  for (int i = 0; i < map.nq(); ++i) q(i) = u(rng);
  for (int i = 0; i < map.nv(); ++i) qd(i) = u(rng);
  for (const auto& e : map.entries())
    if (e.type == JointType::Spherical || e.type == JointType::Free) {
      auto Q = q.segment<4>(e.q_offset + (e.type == JointType::Free ? 3 : 0));
      Q(0) = std::abs(Q(0)) + 0.1;
      Q.normalize();
    }
  return {q, qd};
}

Vec6 twist(const BodyState& b) {
  Vec6 V;
  V << b.v, b.w;
  return V;
}

}  // namespace

// Placing bodies from coordinates and measuring them back are inverse, and the placed bodies
// satisfy every joint's absolute-coordinate equations at position and velocity level, for every
// joint type, a free body and a reversed joint (placed from its child to its parent).
TEST(CoordinateMap, PlacingAndMeasuringAreInverseAndSatisfyTheJoints) {
  const Model m = test::joint_zoo();
  const CoordinateMap map(m, Topology(m));
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    const auto [q, qd] = random_state(map, rng);
    SystemState bodies;
    map.place(q, qd, bodies);
    const ConsistencyReport report = check_state(m, 0.0, bodies, 1e-12);
    EXPECT_TRUE(report.consistent()) << (report.violations.empty() ? "" : report.violations.front());
    Eigen::VectorXd q2(map.nq()), qd2(map.nv());
    map.measure(bodies, q2, qd2);
    EXPECT_LT((q2 - q).cwiseAbs().maxCoeff(), 1e-12) << "trial " << trial;
    EXPECT_LT((qd2 - qd).cwiseAbs().maxCoeff(), 1e-12) << "trial " << trial;
  }
}

// The double pendulum of support.hpp (frames coinciding at the model's configuration): joint
// angles (a, b) turn link 1 by a about the pin and link 2 by b relative to link 1, written out
// here as plane rotations.
TEST(CoordinateMap, RevoluteAnglesTurnTheLinksAsPlaneGeometrySays) {
  const test::DoublePendulumCase c;
  const Model m = test::double_pendulum_model(c);
  const CoordinateMap map(m, Topology(m));
  ASSERT_EQ(map.nq(), 2);
  EXPECT_EQ(map.q_names()[0], "j1.angle");
  const double a = 0.4, b = -1.1, wa = 0.3, wb = 2.0;
  SystemState bodies;
  map.place(Eigen::Vector2d(a, b), Eigen::Vector2d(wa, wb), bodies);
  auto rot = [](double angle, const Vec3& x) { return Vec3(Eigen::AngleAxisd(angle, Vec3::UnitZ()) * x); };
  const Vec3 e1(std::sin(c.theta1), -std::cos(c.theta1), 0), e2(std::sin(c.theta2), -std::cos(c.theta2), 0);
  const Vec3 elbow = rot(a, c.L * e1);
  const Vec3 c1 = rot(a, 0.5 * c.L * e1), c2 = elbow + rot(a + b, 0.5 * c.L * e2);
  EXPECT_LT((bodies[0].r - c1).norm(), 1e-14);
  EXPECT_LT((bodies[1].r - c2).norm(), 1e-14);
  EXPECT_NEAR(bodies[0].w.z(), wa, 1e-14);
  EXPECT_NEAR(bodies[1].w.z(), wa + wb, 1e-14);
  const Vec3 v2 = Vec3(0, 0, wa).cross(elbow) + Vec3(0, 0, wa + wb).cross(c2 - elbow);
  EXPECT_LT((bodies[1].v - v2).norm(), 1e-14);
}

// An effort is a generalized force: the wrenches it puts on the bodies do power effort . qd at
// any state (virtual power), for every joint type, the free body and the reversed joint.
TEST(CoordinateMap, EffortsDoThePowerOfEffortTimesRate) {
  const Model m = test::joint_zoo();
  const CoordinateMap map(m, Topology(m));
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (int trial = 0; trial < 20; ++trial) {
    const auto [q, qd] = random_state(map, rng);
    SystemState bodies;
    map.place(q, qd, bodies);
    Eigen::VectorXd effort(map.nv());
    for (int i = 0; i < map.nv(); ++i) effort(i) = u(rng);
    std::vector<Vec6> wrenches(bodies.size(), Vec6::Zero());
    map.add_effort_wrenches(bodies, effort, wrenches);
    double power = 0.0;
    for (std::size_t i = 0; i < bodies.size(); ++i) power += wrenches[i].dot(twist(bodies[i]));
    EXPECT_NEAR(power, effort.dot(qd), 1e-12) << "trial " << trial;
  }
}

// Loop-closing joints have entries (measured like any joint) but do not place bodies: the four-bar
// placed with a wrong loop-joint angle is the same four-bar.
TEST(CoordinateMap, LoopJointsAreMeasuredButDoNotPlaceBodies) {
  const Model m = read_model_file(test::model_path("four_bar"));
  const Topology topology(m);
  const CoordinateMap map(m, topology);
  ASSERT_EQ(topology.loop_joints().size(), 1u);
  const CoordinateMap::Entry& loop = map.entries()[static_cast<std::size_t>(topology.loop_joints().front())];
  EXPECT_TRUE(loop.loop);
  Eigen::VectorXd q(map.nq()), qd(map.nv());
  map.measure(initial_state(m), q, qd);
  SystemState placed;
  map.place(q, qd, placed);
  EXPECT_TRUE(check_state(m, 0.0, placed, 1e-6).consistent());  // the model file's own precision
  Eigen::VectorXd wrong = q;
  wrong.segment(loop.q_offset, loop.nq).array() += 0.5;
  SystemState again;
  map.place(wrong, qd, again);
  for (std::size_t i = 0; i < placed.size(); ++i) EXPECT_EQ(placed[i].r, again[i].r);
}

// Angles are continuous against a reference: a revolute joint turned by 3 + 4 pi reads 3 + 4 pi
// next to a reference of 12.5 rad, and 3 without one.
TEST(CoordinateMap, AnglesUnwrapAgainstAReference) {
  const Model m = test::double_pendulum_model({});
  const CoordinateMap map(m, Topology(m));
  const double turned = 3.0 + 4.0 * std::numbers::pi;
  SystemState bodies;
  map.place(Eigen::Vector2d(turned, 0.0), Eigen::Vector2d::Zero(), bodies);
  Eigen::VectorXd q(2), qd(2);
  map.measure(bodies, q, qd);
  EXPECT_NEAR(q(0), 3.0, 1e-12);
  const Eigen::VectorXd reference = Eigen::Vector2d(12.5, 0.0);
  map.measure(bodies, q, qd, &reference);
  EXPECT_NEAR(q(0), turned, 1e-12);
  Eigen::VectorXd tracked = Eigen::Vector2d(14.0, 0.1);
  map.track_angles(bodies, tracked);
  EXPECT_NEAR(tracked(0), turned, 1e-12);
}

// Names and units are made on demand from the entries (the map holds no string per coordinate):
// every one of the joint zoo's, spelled out from the table in coordinate_map.hpp, including the
// entries around the fixed joint j7 (no coordinates: its offset is its successor's).
TEST(CoordinateMap, NamesAndUnitsOfEveryCoordinateFollowTheLayout) {
  const Model m = test::joint_zoo();
  const CoordinateMap map(m, Topology(m));
  const std::vector<std::string> q = {"j1.angle", "j2.d", "j3.angle", "j3.d", "j4.angle1", "j4.angle2", "j5.qw", "j5.qx",
                                      "j5.qy", "j5.qz", "j6.x", "j6.y", "j6.angle", "jfree.x", "jfree.y", "jfree.z",
                                      "jfree.qw", "jfree.qx", "jfree.qy", "jfree.qz", "jrev.angle1", "jrev.angle2"};
  const std::vector<std::string> q_units = {"rad", "m", "rad", "m", "rad", "rad", "-", "-", "-", "-", "m",
                                            "m", "rad", "m", "m", "m", "-", "-", "-", "-", "rad", "rad"};
  const std::vector<std::string> qd = {"j1.angle", "j2.d", "j3.angle", "j3.d", "j4.angle1", "j4.angle2", "j5.wx",
                                       "j5.wy", "j5.wz", "j6.x", "j6.y", "j6.angle", "jfree.vx", "jfree.vy",
                                       "jfree.vz", "jfree.wx", "jfree.wy", "jfree.wz", "jrev.angle1", "jrev.angle2"};
  const std::vector<std::string> qd_units = {"rad/s", "m/s", "rad/s", "m/s", "rad/s", "rad/s", "rad/s",
                                             "rad/s", "rad/s", "m/s", "m/s", "rad/s", "m/s", "m/s",
                                             "m/s", "rad/s", "rad/s", "rad/s", "rad/s", "rad/s"};
  ASSERT_EQ(map.nq(), static_cast<int>(q.size()));
  ASSERT_EQ(map.nv(), static_cast<int>(qd.size()));
  EXPECT_EQ(map.q_names(), q);
  EXPECT_EQ(map.qd_names(), qd);
  for (int i = 0; i < map.nq(); ++i) EXPECT_EQ(map.q_unit(i), q_units[static_cast<std::size_t>(i)]) << q[static_cast<std::size_t>(i)];
  for (int i = 0; i < map.nv(); ++i) EXPECT_EQ(map.qd_unit(i), qd_units[static_cast<std::size_t>(i)]) << qd[static_cast<std::size_t>(i)];
  for (int bad : {-1, map.nq()}) EXPECT_THROW((void)map.q_name(bad), std::out_of_range);
  EXPECT_THROW((void)map.qd_unit(map.nv()), std::out_of_range);
  try {
    (void)map.qd_name(map.nv());
    ADD_FAILURE() << "named an entry past the end";
  } catch (const std::out_of_range& e) {
    EXPECT_NE(std::string(e.what()).find("no entry 20 of qd (it has 20)"), std::string::npos) << e.what();
  }
}

TEST(CoordinateMap, NamesEveryEntryAndRefusesUnknownJoints) {
  const Model m = test::joint_zoo();
  const CoordinateMap map(m, Topology(m));
  EXPECT_EQ(static_cast<int>(map.q_names().size()), map.nq());
  EXPECT_EQ(static_cast<int>(map.qd_names().size()), map.nv());
  EXPECT_EQ(map.entry("j5").type, JointType::Spherical);
  EXPECT_EQ(map.q_names()[static_cast<std::size_t>(map.entry("j5").q_offset)], "j5.qw");
  EXPECT_EQ(map.qd_names()[static_cast<std::size_t>(map.entry("jfree").v_offset) + 3], "jfree.wx");
  try {
    map.entry("j99");
    ADD_FAILURE() << "accepted an unknown joint";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'j99'"), std::string::npos) << e.what();
  }
}

// The map holds no copy of the model's names or frames: it shares the model it was given, or
// keeps a copy of a model given by reference, so that it stays whole after that model is gone
// (the sanitizer build catches a name or frame read from freed memory).
TEST(CoordinateMap, SharesItsModelOrKeepsACopyOfIt) {
  const ModelPtr model = share(test::joint_zoo());
  const CoordinateMap shared(model, Topology(*model));
  EXPECT_EQ(&shared.model(), model.get());
  for (const auto& e : shared.entries()) {
    if (e.joint < 0) {  // a floating body's free joint: named after the body, in the bodies' own frames
      EXPECT_EQ(e.name(), model->bodies[static_cast<std::size_t>(e.child)].name);
      EXPECT_EQ(shared.parent_frame(e), Frame{});
      EXPECT_EQ(shared.child_frame(e), Frame{});
      continue;
    }
    const Joint& j = model->joints[static_cast<std::size_t>(e.joint)];
    EXPECT_EQ(&e.name(), &j.name);
    EXPECT_EQ(&shared.parent_frame(e), &j.parent_frame);
    EXPECT_EQ(&shared.child_frame(e), &j.child_frame);
  }

  auto copied = [] {  // the model it was made from is destroyed on return
    Model local = test::joint_zoo();
    auto map = std::make_unique<const CoordinateMap>(local, Topology(local));
    local = make_chain(3, JointType::Revolute);  // the old names' and frames' storage reused
    return map;
  }();
  EXPECT_EQ(copied->q_names(), shared.q_names());
  EXPECT_EQ(copied->qd_names(), shared.qd_names());
  EXPECT_EQ(copied->body_count(), model->body_count());
  std::mt19937 rng(11);
  const auto [q, qd] = random_state(*copied, rng);
  SystemState from_copy, from_shared;
  copied->place(q, qd, from_copy);
  shared.place(q, qd, from_shared);
  ASSERT_EQ(from_copy.size(), from_shared.size());
  for (std::size_t b = 0; b < from_copy.size(); ++b) {  // the same frames, so the same numbers
    EXPECT_EQ(from_copy[b].r, from_shared[b].r) << b;
    EXPECT_EQ(from_copy[b].q.coeffs(), from_shared[b].q.coeffs()) << b;
    EXPECT_EQ(from_copy[b].v, from_shared[b].v) << b;
    EXPECT_EQ(from_copy[b].w, from_shared[b].w) << b;
  }

  const Model other = make_chain(3, JointType::Revolute);
  try {
    const CoordinateMap wrong(model, Topology(other));
    ADD_FAILURE() << "accepted another model's topology";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the topology is of another model"), std::string::npos) << e.what();
  }
  EXPECT_THROW(CoordinateMap(ModelPtr{}, Topology(other)), std::invalid_argument);
}

// One entry measured alone gives its part of the whole measure, bit for bit, its angles
// unwrapped against its part of the reference; q or qd left null is skipped. A reference of the
// wrong size is refused where there are angles.
TEST(CoordinateMap, AnEntryMeasuredAloneIsItsPartOfTheWhole) {
  const Model m = test::joint_zoo();
  const CoordinateMap map(m, Topology(m));
  ASSERT_TRUE(map.has_angles());
  std::mt19937 rng(5);
  const auto [q0, qd0] = random_state(map, rng);
  SystemState bodies;
  map.place(q0, qd0, bodies);
  Eigen::VectorXd reference = q0;
  auto is_angle = [](JointType type, int k) {  // the layout in coordinate_map.hpp
    return type == JointType::Revolute || type == JointType::Universal || (type == JointType::Cylindrical && k == 0) ||
           (type == JointType::Planar && k == 2);
  };
  for (const auto& e : map.entries())  // two turns away from the measure: unwrapping must follow them
    for (int k = 0; k < e.nq; ++k)
      if (is_angle(e.type, k)) reference(e.q_offset + k) += 4.0 * std::numbers::pi;
  Eigen::VectorXd q(map.nq()), qd(map.nv());
  map.measure(bodies, q, qd, &reference);
  double qe[7], qde[6];
  for (const auto& e : map.entries()) {
    std::fill_n(qe, 7, -1.0), std::fill_n(qde, 6, -1.0);
    map.measure(bodies, e, qe, nullptr, reference.data() + e.q_offset);
    map.measure(bodies, e, nullptr, qde);
    for (int k = 0; k < e.nq; ++k) EXPECT_EQ(qe[k], q(e.q_offset + k)) << e.name() << " q" << k;
    for (int k = 0; k < e.nv; ++k) EXPECT_EQ(qde[k], qd(e.v_offset + k)) << e.name() << " qd" << k;
    for (int k = e.nq; k < 7; ++k) EXPECT_EQ(qe[k], -1.0) << e.name() << ": wrote past its nq";
    for (int k = e.nv; k < 6; ++k) EXPECT_EQ(qde[k], -1.0) << e.name() << ": wrote past its nv";
  }
  EXPECT_GT((q - q0).cwiseAbs().maxCoeff(), 12.0);  // the angles followed the reference's turns
  const Eigen::VectorXd short_reference = reference.head(3);
  EXPECT_THROW(map.measure(bodies, q, qd, &short_reference), std::invalid_argument);
}

// A body with no joint at all is a floating sub-system of its own: it gets a free joint named
// after it, so that its state can be set and read.
TEST(CoordinateMap, ABodyWithoutJointsGetsAFreeJointNamedAfterIt) {
  Model m = make_chain(2, JointType::Revolute);
  Body loose = m.bodies.front();
  loose.name = "loose";
  loose.position += Vec3(5, 0, 0);
  m.bodies.push_back(loose);
  const CoordinateMap map(m, Topology(m));
  EXPECT_EQ(map.entry("loose").type, JointType::Free);
  Eigen::VectorXd q(map.nq()), qd(map.nv());
  map.measure(initial_state(m), q, qd);
  SystemState placed;
  map.place(q, qd, placed);
  EXPECT_LT((placed.back().r - loose.position).norm(), 1e-14);
}
