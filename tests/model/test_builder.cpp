#include <gtest/gtest.h>

#include <map>
#include <tuple>

#include "treedyn/generators.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/topology.hpp"

using namespace treedyn;

namespace {

Body link(const std::string& name, Vec3 position, double mass = 1.0, Mat3 inertia = Mat3::Identity()) {
  Body b;
  b.name = name;
  b.mass = mass;
  b.inertia = inertia;
  b.position = position;
  return b;
}

ModelBuilder double_pendulum() {
  ModelBuilder b("dp");
  b.gravity({0, -9.81, 0});
  b.body(link("A", {0.5, 0, 0})).body(link("B", {1.5, 0, 0}));
  b.joint(JointSpec::at("j1", JointType::Revolute, "ground", "A", {0, 0, 0}));
  b.joint(JointSpec::at("j2", JointType::Revolute, "A", "B", {1, 0, 0}));
  return b;
}

/// Builds and returns the error message ("" if it builds).
std::string error_of(const ModelBuilder& b) {
  try {
    b.build();
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ModelBuilder, ConvertsGlobalJointPlacementToFramesOnBothBodies) {
  const Model m = double_pendulum().build();
  const Joint& j2 = m.joints[1];
  EXPECT_EQ(j2.parent, 0);
  EXPECT_EQ(j2.child, 1);
  EXPECT_LT((j2.parent_frame.origin - Vec3(0.5, 0, 0)).norm(), 1e-15);
  EXPECT_LT((j2.child_frame.origin - Vec3(-0.5, 0, 0)).norm(), 1e-15);
  EXPECT_LT((j2.parent_frame.rotation.col(2) - Vec3::UnitZ()).norm(), 1e-15);
  EXPECT_EQ(m.body_index("ground"), kGround);
  EXPECT_EQ(m.constraint_equation_count(), 10);
}

TEST(ModelBuilder, GlobalPlacementInRotatedBodiesGivesCoincidentFrames) {
  ModelBuilder b("rotated");
  Body a = link("A", {0.3, 0.2, -0.1});
  a.orientation = Quat(Eigen::AngleAxisd(0.7, Vec3(1, 2, 3).normalized()));
  b.body(a);
  b.joint(JointSpec::at("j", JointType::Universal, "ground", "A", {1, 1, 1}, Vec3(0, 0, 1), Vec3(1, 0, 0)));
  const Model m = b.build();
  const Joint& j = m.joints[0];
  const Mat3 A = m.bodies[0].orientation.toRotationMatrix();
  EXPECT_LT((m.bodies[0].position + A * j.child_frame.origin - Vec3(1, 1, 1)).norm(), 1e-14);
  EXPECT_LT((A * j.child_frame.rotation - j.parent_frame.rotation).norm(), 1e-14);
  EXPECT_LT((j.parent_frame.rotation.col(0) - Vec3::UnitX()).norm(), 1e-15);  // universal: x = axis2
}

TEST(ModelBuilder, RejectsNonPositiveMassNamingTheBody) {
  ModelBuilder b = double_pendulum();
  b.body(link("C", {2, 0, 0}, -1.0));
  b.joint(JointSpec::at("j3", JointType::Revolute, "B", "C", {2, 0, 0}));
  const std::string e = error_of(b);
  EXPECT_NE(e.find("body 'C'"), std::string::npos) << e;
  EXPECT_NE(e.find("mass must be positive"), std::string::npos) << e;
}

TEST(ModelBuilder, RejectsInertiaThatIsNotSymmetricPositiveDefiniteOrPhysical) {
  Mat3 asymmetric = Mat3::Identity();
  asymmetric(0, 1) = 0.5;
  Mat3 indefinite = Vec3(1.0, -1.0, 1.0).asDiagonal();
  Mat3 triangle = Vec3(1.0, 1.0, 3.0).asDiagonal();  // 1 + 1 < 3
  for (const auto& [inertia, text] : {std::pair{asymmetric, "not symmetric"}, std::pair{indefinite, "not positive definite"},
                                      std::pair{triangle, "triangle inequality"}}) {
    ModelBuilder b("m");
    b.body(link("A", {0, 0, 0}, 1.0, inertia));
    b.joint(JointSpec::at("j", JointType::Spherical, "ground", "A", {0, 0, 0}));
    const std::string e = error_of(b);
    EXPECT_NE(e.find("body 'A'"), std::string::npos) << e;
    EXPECT_NE(e.find(text), std::string::npos) << e;
  }
}

// The model's own step and end time are checked like its bodies, not left for a run to trip on.
TEST(ModelBuilder, RejectsANonPositiveStepOrANegativeEndTime) {
  for (const auto& [dt, t_end, text] : {std::tuple{-0.1, 1.0, "simulation: dt must be positive and finite (got -0.1)"},
                                        std::tuple{0.0, 1.0, "simulation: dt must be positive and finite (got 0)"},
                                        std::tuple{0.01, -2.0, "simulation: t_end must be finite and not negative (got -2)"}}) {
    ModelBuilder b = double_pendulum();
    SimulationDefaults d;
    d.dt = dt;
    d.t_end = t_end;
    b.defaults(d);
    const std::string e = error_of(b);
    EXPECT_NE(e.find(text), std::string::npos) << e;
  }
  ModelBuilder ok = double_pendulum();
  SimulationDefaults d;
  d.dt = 0.01;
  d.t_end = 0.0;
  ok.defaults(d);
  EXPECT_NO_THROW(ok.build());
}

// Names are indexed in a flat hash table (the builder's references, validate's duplicates): 5,000
// bodies and joints whose names share prefixes and lengths ("b1", "b10", "b100"), every reference
// resolved to the body it names, and duplicates planted among them each reported once, in order,
// as a count kept beside them in a std::map finds them.
TEST(ModelBuilder, ManyNamesResolveAndEachDuplicateIsReportedOnce) {
  const int n = 5000;
  ModelBuilder b("names");
  for (int i = 0; i < n; ++i) b.body(link("b" + std::to_string(i), {static_cast<double>(i), 0, 0}));
  for (int i = 0; i < n; ++i)
    b.joint(JointSpec::at("j" + std::to_string(i), JointType::Spherical, i == 0 ? "ground" : "b" + std::to_string(i - 1),
                          "b" + std::to_string(i), {i - 0.5, 0, 0}));
  const Model m = b.build();
  ASSERT_EQ(m.joint_count(), n);
  for (int i = 0; i < n; ++i) {
    EXPECT_EQ(m.joints[static_cast<std::size_t>(i)].parent, i - 1) << i;  // kGround is -1
    EXPECT_EQ(m.joints[static_cast<std::size_t>(i)].child, i) << i;
  }
  ModelBuilder unknown = b;
  unknown.joint(JointSpec::at("extra", JointType::Spherical, "b4999", "b5000", {0, 0, 0}));
  EXPECT_NE(error_of(unknown).find("joint 'extra': unknown body 'b5000'"), std::string::npos) << error_of(unknown);

  Model twice = m;
  const std::vector<std::pair<int, int>> copies{{123, 4000}, {0, 4999}, {4998, 2500}, {77, 78}, {77, 3000}};
  for (const auto& [from, to] : copies) twice.bodies[static_cast<std::size_t>(to)].name = m.bodies[static_cast<std::size_t>(from)].name;
  std::map<std::string, int> seen;
  std::string expected;
  int problems = 0;
  for (const Body& body : twice.bodies)
    if (++seen[body.name] > 1) {
      expected += "\n  duplicate body name '" + body.name + "'";
      ++problems;
    }
  ASSERT_EQ(problems, 5);
  try {
    validate(twice);
    FAIL() << "duplicates accepted";
  } catch (const ModelError& e) {
    EXPECT_EQ(std::string(e.what()), "invalid model (5 problems):" + expected);
  }
}

TEST(ModelBuilder, RejectsUnknownAndDuplicateNames) {
  ModelBuilder b = double_pendulum();
  b.joint(JointSpec::at("j2", JointType::Revolute, "A", "Bx", {1, 0, 0}));
  const std::string e = error_of(b);
  EXPECT_NE(e.find("unknown body 'Bx'"), std::string::npos) << e;
  ModelBuilder c = double_pendulum();
  c.body(link("A", {0, 1, 0}));
  EXPECT_NE(error_of(c).find("duplicate body name 'A'"), std::string::npos);
  // Each problem names its item (the names are put together only when there is one).
  EXPECT_NE(e.find("joint 'j2': unknown body 'Bx'"), std::string::npos) << e;
  ModelBuilder d = double_pendulum();
  d.joint(JointSpec::at("j1", JointType::Revolute, "A", "B", {1, 0, 0}));
  EXPECT_NE(error_of(d).find("duplicate joint name 'j1'"), std::string::npos) << error_of(d);
  ModelBuilder f = double_pendulum();
  f.joint_friction({"fr", "j9", 0.1});
  EXPECT_NE(error_of(f).find("coulomb_friction 'fr': unknown joint 'j9'"), std::string::npos) << error_of(f);
  ModelBuilder r = double_pendulum();
  Mat3 mirror = Mat3::Identity();
  mirror(2, 2) = -1.0;
  r.joint({"j3", JointType::Revolute, "ground", "B", FramePlacement{Frame{Vec3::Zero(), mirror}, Frame{}}});
  EXPECT_NE(error_of(r).find("joint 'j3' (parent frame): frame orientation is not a proper rotation"), std::string::npos)
      << error_of(r);
}

// build() of a temporary moves the bodies into the model (the file reader's path); the model is
// the one a copy would give.
TEST(ModelBuilder, BuildingFromATemporaryGivesTheSameModel) {
  const ModelBuilder b = double_pendulum();
  const Model copied = b.build();
  ModelBuilder moved = double_pendulum();
  moved.reserve(10, 10);  // a capacity only
  EXPECT_EQ(std::move(moved).build(), copied);
  EXPECT_EQ(copied.body_count(), 2);
  EXPECT_EQ(b.build(), copied);  // building from a kept builder leaves it whole
}

TEST(ModelBuilder, RejectsZeroAxisAndNonPerpendicularUniversalAxes) {
  ModelBuilder b("m");
  b.body(link("A", {0, 0, 0}));
  b.joint(JointSpec::at("j", JointType::Revolute, "ground", "A", {0, 0, 0}, Vec3::Zero()));
  EXPECT_NE(error_of(b).find("joint 'j': axis is zero"), std::string::npos);
  ModelBuilder c("m");
  c.body(link("A", {0, 0, 0}));
  c.joint(JointSpec::at("u", JointType::Universal, "ground", "A", {0, 0, 0}, Vec3::UnitZ(), Vec3(1, 0, 1)));
  EXPECT_NE(error_of(c).find("must be perpendicular"), std::string::npos);
}

TEST(ModelBuilder, RejectsABodyAttachedToNothing) {
  ModelBuilder b = double_pendulum();
  b.body(link("lonely", {5, 0, 0}));
  const std::string e = error_of(b);
  EXPECT_NE(e.find("body 'lonely' is attached to nothing"), std::string::npos) << e;
}

TEST(ModelBuilder, ReportsEveryProblemAtOnce) {
  ModelBuilder b = double_pendulum();
  b.body(link("C", {2, 0, 0}, 0.0));
  b.body(link("D", {3, 0, 0}));
  const std::string e = error_of(b);
  EXPECT_NE(e.find("3 problems"), std::string::npos) << e;  // C: mass; C and D: attached to nothing
}

TEST(ModelBuilder, ChecksDriversActuatorsAndSprings) {
  ModelBuilder b = double_pendulum();
  b.driver({"d", "j1", 3, TimeFunction::constant(0.0)});
  EXPECT_NE(error_of(b).find("driver 'd': coordinate 3 out of range"), std::string::npos);
  ModelBuilder c("m");
  c.body(link("A", {0, 0, 0}));
  c.joint(JointSpec::at("ball", JointType::Spherical, "ground", "A", {0, 0, 0}));
  c.joint_actuator({"motor", "ball", 0, TimeFunction::constant(1.0)});
  EXPECT_NE(error_of(c).find("has no scalar coordinate"), std::string::npos);
  ModelBuilder d = double_pendulum();
  d.spring_damper({"s", "A", "A", {}, {}, 1.0, 0.0, 1.0});
  EXPECT_NE(error_of(d).find("spring_damper 's': both ends are on the same body"), std::string::npos);
  ModelBuilder e = double_pendulum();
  e.driver({"d", "j1", 0, TimeFunction::callback([](double t) { return t; })});
  EXPECT_NE(error_of(e).find("needs its first and second derivatives"), std::string::npos);
}

TEST(ModelBuilder, SpringFreeLengthDefaultsToTheInitialDistance) {
  ModelBuilder b = double_pendulum();
  b.spring_damper({"s", "ground", "B", {Vec3(0, 1, 0), true}, {Vec3(2, 0, 0), true}, 10.0, 0.5, std::nullopt});
  const Model m = b.build();
  EXPECT_NEAR(m.springs[0].free_length, std::sqrt(5.0), 1e-15);
  EXPECT_LT((m.springs[0].point_b - Vec3(0.5, 0, 0)).norm(), 1e-15);  // converted to B's frame
}

TEST(Generators, ChainOfPaper000HasItsGeometry) {
  const Model m = make_chain(128, JointType::Spherical);
  EXPECT_EQ(m.body_count(), 128);
  EXPECT_EQ(m.constraint_equation_count(), 384);  // paper 000, Sect. 4.4: m = 3 * 128
  EXPECT_EQ(m.bodies[127].position, Vec3(127.5, 0, 0));
  EXPECT_EQ(m.gravity, Vec3(0, -9.81, 0));
}

// Paper 002, Sect. 3.3 and 002-models.md: 2 m steel bars of 0.05 m section (39 kg) hanging
// along -z on spherical joints, skew gravity of 9.81, spins in (-10, 10) rad/s about the bars'
// axes, the same for the same seed and different for another.
TEST(Generators, SpinningBarChainOfPaper002HasItsGeometry) {
  const Model m = make_spinning_bar_chain(16, 7);
  EXPECT_EQ(m.body_count(), 16);
  EXPECT_EQ(m.constraint_equation_count(), 48);
  EXPECT_NEAR(m.bodies[0].mass, 39.0, 1e-12);
  EXPECT_NEAR(m.bodies[0].inertia(2, 2), 39.0 * 0.05 * 0.05 / 6.0, 1e-15);
  EXPECT_NEAR(m.bodies[0].inertia(0, 0), 39.0 * (0.05 * 0.05 + 4.0) / 12.0, 1e-12);
  EXPECT_LT((m.bodies[15].position - Vec3(0, 0, -31)).norm(), 1e-12);
  EXPECT_NEAR(m.gravity.norm(), 9.81, 1e-6);
  EXPECT_GT(m.gravity.z(), 0.0);  // not vertically down
  for (const Body& b : m.bodies) {
    EXPECT_EQ(b.angular_velocity.head<2>(), Vec2(0, 0));
    EXPECT_LT(std::abs(b.angular_velocity.z()), 10.0);
  }
  EXPECT_EQ(make_spinning_bar_chain(16, 7), m);
  EXPECT_NE(make_spinning_bar_chain(16, 8).bodies[3].angular_velocity, m.bodies[3].angular_velocity);
}

// Issue 28's loop-heavy model: N coupled four-bars in a row (N + 1 rungs, N couplers), a
// parallelogram: one degree of freedom, 3 redundant equations per planar loop in 3-D.
TEST(Generators, LadderOfCoupledFourBarsHasOneDegreeOfFreedomAndThreeRedundantEquationsPerLoop) {
  const Model m = make_ladder(4);
  EXPECT_EQ(m.body_count(), 9);
  EXPECT_EQ(m.joint_count(), 13);
  const Topology t(m);
  EXPECT_EQ(t.loop_joints().size(), 4u);
  EXPECT_EQ(t.mobility(), 1);
  EXPECT_EQ(t.redundant_constraints(), 12);
  // Lower ends of the rungs 1 m below and beside their pivots, where the couplers' pins are.
  for (int k = 0; k <= 4; ++k) {
    const Body& rung = m.bodies[static_cast<std::size_t>(k)];
    EXPECT_LT((rung.position - Vec3(k + 0.5 * std::sin(0.5), -0.5 * std::cos(0.5), 0.0)).norm(), 1e-15);
  }
  EXPECT_THROW(make_ladder(0), ModelError);
}
