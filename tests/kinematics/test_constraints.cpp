// Joint constraint equations against finite differences of themselves along rigid motions, and
// against motions each joint allows.
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <type_traits>

#include "support.hpp"
#include "treedyn/kinematics.hpp"

using namespace treedyn;
using test::moved;
using test::random_state;

namespace {

Joint random_joint(JointType type, std::mt19937& rng, int parent = 0, int child = 1) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Joint j;
  j.name = "j";
  j.type = type;
  j.parent = parent;
  j.child = child;
  j.parent_frame = {Vec3(u(rng), u(rng), u(rng)), Quat(u(rng), u(rng), u(rng), u(rng)).normalized().toRotationMatrix()};
  j.child_frame = {Vec3(u(rng), u(rng), u(rng)), Quat(u(rng), u(rng), u(rng), u(rng)).normalized().toRotationMatrix()};
  return j;
}

Vec6 twist(const BodyState& s) {
  Vec6 v;
  v << s.v, s.w;
  return v;
}

using Evaluate = std::function<void(double t, const BodyState&, const BodyState&, ConstraintBlock&)>;

/// Phi_dot = J_P V_P + J_C V_C + Phi_t and Phi_ddot = -gamma (zero body accelerations) along the
/// rigid motions r(h) = r + h v, q(h) = exp(h w) q.
void expect_derivatives_consistent(const Evaluate& eval, const BodyState& P, const BodyState& C, double t0) {
  const double h = 1e-4;
  ConstraintBlock b0, bp, bm;
  eval(t0, P, C, b0);
  eval(t0 + h, moved(P, twist(P), h), moved(C, twist(C), h), bp);
  eval(t0 - h, moved(P, twist(P), -h), moved(C, twist(C), -h), bm);
  const Eigen::VectorXd rate = (bp.phi - bm.phi) / (2 * h);
  const Eigen::VectorXd accel = (bp.phi - 2 * b0.phi + bm.phi) / (h * h);
  EXPECT_LT((b0.J_P * twist(P) + b0.J_C * twist(C) + b0.phi_t - rate).cwiseAbs().maxCoeff(), 1e-7);
  EXPECT_LT((accel + b0.gamma).cwiseAbs().maxCoeff(), 2e-5) << "gamma " << b0.gamma.transpose() << "\nfd " << accel.transpose();
  // Jdot: the Jacobians' rate along the same motion (central differences, error O(h^2)).
  EXPECT_LT(((bp.J_P - bm.J_P) / (2 * h) - b0.Jdot_P).cwiseAbs().maxCoeff(), 1e-6);
  EXPECT_LT(((bp.J_C - bm.J_C) / (2 * h) - b0.Jdot_C).cwiseAbs().maxCoeff(), 1e-6);
}

/// Without explicit time dependence Phi_ddot = J A + Jdot V, so gamma = -Jdot V: the two were
/// derived separately (gamma from the primitives' second derivatives).
void expect_gamma_is_minus_jdot_v(const ConstraintBlock& b, const BodyState& P, const BodyState& C) {
  EXPECT_LT((b.gamma + b.Jdot_P * twist(P) + b.Jdot_C * twist(C)).cwiseAbs().maxCoeff(), 1e-12);
}

const JointType kAllTypes[] = {JointType::Revolute, JointType::Prismatic, JointType::Cylindrical, JointType::Universal,
                               JointType::Spherical, JointType::Planar, JointType::Fixed};

}  // namespace

TEST(JointConstraints, JacobianAndGammaMatchFiniteDifferencesForEveryJointType) {
  std::mt19937 rng(7);
  for (JointType type : kAllTypes) {
    SCOPED_TRACE(to_string(type));
    for (int trial = 0; trial < 5; ++trial) {
      const Joint j = random_joint(type, rng);
      const BodyState P = random_state(rng), C = random_state(rng);
      expect_derivatives_consistent([&](double, const BodyState& p, const BodyState& c, ConstraintBlock& b) { joint_constraint(j, p, c, b); },
                                    P, C, 0.0);
      ConstraintBlock b;
      joint_constraint(j, P, C, b);
      EXPECT_EQ(b.size(), joint_constraint_count(type));
      expect_gamma_is_minus_jdot_v(b, P, C);
    }
  }
}

TEST(JointConstraints, GroundParentUsesTheGlobalFrame) {
  std::mt19937 rng(3);
  const Joint j = random_joint(JointType::Revolute, rng, kGround, 0);
  const BodyState C = random_state(rng);
  expect_derivatives_consistent([&](double, const BodyState& p, const BodyState& c, ConstraintBlock& b) { joint_constraint(j, p, c, b); },
                                BodyState{}, C, 0.0);
}

// ConstraintSet::evaluate_point, the fixed-size path of a spherical joint's own block (what ali3's
// passes take), gives evaluate_block's numbers bit for bit, with and without the Jacobians and
// gamma, on a joint to ground and a joint between bodies; other joint types and drivers are not
// point blocks.
TEST(Constraints, APointBlockIsTheSphericalJointsBlockInFixedSizes) {
  std::mt19937 rng(5);
  Model m;
  for (int i = 0; i < 3; ++i) {
    Body b;
    b.name = "b" + std::to_string(i);
    b.mass = 1.0;
    b.inertia = Mat3::Identity();
    m.bodies.push_back(b);
  }
  m.joints = {random_joint(JointType::Spherical, rng, kGround, 0), random_joint(JointType::Spherical, rng, 0, 1),
              random_joint(JointType::Revolute, rng, 1, 2)};
  Driver driver;
  driver.name = "d";
  driver.joint = 2;
  m.drivers.push_back(driver);
  const ConstraintSet set(m);
  const SystemState state = {random_state(rng), random_state(rng), random_state(rng)};
  EXPECT_TRUE(set.is_point(0));
  EXPECT_TRUE(set.is_point(1));
  EXPECT_FALSE(set.is_point(2)) << "a revolute joint";
  EXPECT_FALSE(set.is_point(3)) << "a driver";
  for (int k = 0; k < set.block_count(); ++k)  // visit_block hands the fixed-size block exactly where is_point says
    set.visit_block(k, 0.25, state, ConstraintParts::without_jdot(), [&](const auto& b) {
      EXPECT_EQ((std::is_same_v<std::decay_t<decltype(b)>, PointBlock>), set.is_point(k)) << "block " << k;
    });
  PointBlock misused;
  EXPECT_THROW(set.evaluate_point(2, state, misused, ConstraintParts::jacobians_only()), std::invalid_argument);
  EXPECT_THROW(set.evaluate_point(3, state, misused, ConstraintParts::jacobians_only()), std::invalid_argument);
  EXPECT_THROW(set.evaluate_point(4, state, misused, ConstraintParts::jacobians_only()), std::out_of_range);
  EXPECT_THROW(set.evaluate_point(0, state, misused, ConstraintParts{}), std::invalid_argument) << "Jdot asked";
  for (int k : {0, 1})
    for (const ConstraintParts parts : {ConstraintParts::without_jdot(), ConstraintParts::jacobians_only(),
                                        ConstraintParts{.jacobians = false, .gamma = true, .jdot = false}}) {
      ConstraintBlock block;
      set.evaluate_block(k, 0.0, state, block, ConstraintParts{});
      PointBlock point;
      set.evaluate_point(k, state, point, parts);
      EXPECT_EQ(point.parent, block.parent);
      EXPECT_EQ(point.child, block.child);
      EXPECT_EQ(Vec3(block.phi), point.phi) << k;
      EXPECT_EQ(Vec3(block.phi_t), point.phi_t) << k;
      if (parts.jacobians) {
        EXPECT_EQ(PointBlock::Rows(block.J_P), point.J_P) << k;
        EXPECT_EQ(PointBlock::Rows(block.J_C), point.J_C) << k;
        // the arms the Jacobians are made of (dc::JointRows::set_arm_rows holds the rows so)
        PointBlock::Rows from_arms;
        from_arms << -Mat3::Identity(), skew(point.arm_P);
        if (point.parent != kGround) {  // braces: gtest's EXPECT_ is an if-else (-Wdangling-else)
          EXPECT_EQ(from_arms, point.J_P) << k;
        }
        from_arms << Mat3::Identity(), -skew(point.arm_C);
        EXPECT_EQ(from_arms, point.J_C) << k;
      }
      if (parts.gamma) {
        EXPECT_EQ(Vec3(block.gamma), point.gamma) << k;
      }
    }
}

TEST(DriverConstraints, DerivativesMatchFiniteDifferencesIncludingTime) {
  std::mt19937 rng(11);
  for (auto [type, coordinate] : {std::pair{JointType::Revolute, 0}, std::pair{JointType::Prismatic, 0},
                                  std::pair{JointType::Cylindrical, 1}, std::pair{JointType::Planar, 2},
                                  std::pair{JointType::Universal, 0}}) {
    SCOPED_TRACE(to_string(type));
    const Joint j = random_joint(type, rng);
    const Driver d{"d", 0, coordinate, TimeFunction::sine(0.8, 2.0, 0.3, 0.1)};
    expect_derivatives_consistent(
        [&](double t, const BodyState& p, const BodyState& c, ConstraintBlock& b) { driver_constraint(d, j, t, p, c, b); },
        random_state(rng), random_state(rng), 0.4);
  }
}

namespace {

/// `evaluate(parts, block)` into a block that holds another state's full evaluation: the parts
/// asked for (Phi and Phi_t always) equal a full evaluation, the others keep their old values.
template <class Evaluate>
void expect_only_the_parts_asked(ConstraintParts parts, const ConstraintBlock& old, Evaluate&& evaluate) {
  ConstraintBlock full, b = old;
  evaluate(ConstraintParts{}, full);
  evaluate(parts, b);
  EXPECT_EQ(b.phi, full.phi);
  EXPECT_EQ(b.phi_t, full.phi_t);
  EXPECT_EQ(b.J_P, parts.jacobians ? full.J_P : old.J_P);
  EXPECT_EQ(b.J_C, parts.jacobians ? full.J_C : old.J_C);
  EXPECT_EQ(b.gamma, parts.gamma ? full.gamma : old.gamma);
  EXPECT_EQ(b.Jdot_P, parts.jdot ? full.Jdot_P : old.Jdot_P);
  EXPECT_EQ(b.Jdot_C, parts.jdot ? full.Jdot_C : old.Jdot_C);
}

const ConstraintParts kSomeParts[] = {ConstraintParts::jacobians_only(), ConstraintParts::without_jdot(),
                                      {.jacobians = false, .gamma = true, .jdot = false},
                                      {.jacobians = false, .gamma = false, .jdot = true}};

}  // namespace

// The Jacobians' rates are held on the heap and only once asked for: a block evaluated without
// them (ali3's, the implicit and reference formulations' per-joint blocks) has none, and one
// evaluated with them keeps their storage, at its size, when evaluated again either way.
TEST(Constraints, TheRatesOfTheJacobiansAreHeldOnlyOnceAskedFor) {
  std::mt19937 rng(7);
  const Joint j = random_joint(JointType::Revolute, rng);
  const BodyState P = random_state(rng), C = random_state(rng);
  ConstraintBlock b;
  joint_constraint(j, P, C, b, ConstraintParts::without_jdot());
  EXPECT_EQ(b.Jdot_P.size(), 0);
  EXPECT_EQ(b.Jdot_C.size(), 0);
  joint_constraint(j, P, C, b);
  ASSERT_EQ(b.Jdot_P.rows(), b.size());
  const double* storage = b.Jdot_P.data();
  const ConstraintRateRows rates = b.Jdot_P;
  joint_constraint(j, random_state(rng), random_state(rng), b, ConstraintParts::without_jdot());
  EXPECT_EQ(b.Jdot_P, rates);  // left as they were
  joint_constraint(j, P, C, b);
  EXPECT_EQ(b.Jdot_P.data(), storage);  // the same storage: no allocation
  EXPECT_EQ(b.Jdot_P, rates);
}

// ali3 and the implicit integrators ask for Phi and the Jacobians alone in their Newton
// iterations: what they get must be exactly the full evaluation's.
TEST(JointConstraints, PartialEvaluationFillsExactlyThePartsAsked) {
  std::mt19937 rng(13);
  for (JointType type : kAllTypes) {
    SCOPED_TRACE(to_string(type));
    const Joint j = random_joint(type, rng);
    const BodyState P = random_state(rng), C = random_state(rng);
    ConstraintBlock old;
    joint_constraint(j, random_state(rng), random_state(rng), old);
    for (ConstraintParts parts : kSomeParts)
      expect_only_the_parts_asked(parts, old, [&](ConstraintParts p, ConstraintBlock& b) { joint_constraint(j, P, C, b, p); });
  }
  for (auto [type, coordinate] : {std::pair{JointType::Revolute, 0}, std::pair{JointType::Prismatic, 0}}) {
    SCOPED_TRACE(std::string("driver on ") + to_string(type));
    const Joint j = random_joint(type, rng);
    const Driver d{"d", 0, coordinate, TimeFunction::sine(0.8, 2.0, 0.3, 0.1)};
    const BodyState P = random_state(rng), C = random_state(rng);
    ConstraintBlock old;
    driver_constraint(d, j, 0.1, random_state(rng), random_state(rng), old);
    for (ConstraintParts parts : kSomeParts)
      expect_only_the_parts_asked(parts, old, [&](ConstraintParts p, ConstraintBlock& b) { driver_constraint(d, j, 0.4, P, C, b, p); });
  }
}

// Each joint is satisfied by the relative motions it allows: the child frame placed on the parent
// frame, then moved along the joint's own coordinates.
TEST(JointConstraints, AllowedRelativeMotionsSatisfyThem) {
  std::mt19937 rng(5);
  for (JointType type : kAllTypes) {
    SCOPED_TRACE(to_string(type));
    const Joint j = random_joint(type, rng);
    const BodyState P = random_state(rng);
    const Mat3 F_P = P.q.toRotationMatrix() * j.parent_frame.rotation;  // parent joint frame, global
    const Vec3 o_P = P.r + P.q * j.parent_frame.origin;
    Mat3 rel = Mat3::Identity();
    Vec3 shift = Vec3::Zero();  // in the parent frame
    switch (type) {
      case JointType::Revolute: rel = Eigen::AngleAxisd(0.7, Vec3::UnitZ()).toRotationMatrix(); break;
      case JointType::Prismatic: shift = Vec3(0, 0, 0.4); break;
      case JointType::Cylindrical: rel = Eigen::AngleAxisd(-1.1, Vec3::UnitZ()).toRotationMatrix(); shift = Vec3(0, 0, 0.3); break;
      case JointType::Universal:
        rel = Eigen::AngleAxisd(0.5, Vec3::UnitZ()).toRotationMatrix() * Eigen::AngleAxisd(-0.8, Vec3::UnitX()).toRotationMatrix();
        break;
      case JointType::Spherical: rel = Quat(0.3, 0.5, -0.2, 0.7).normalized().toRotationMatrix(); break;
      case JointType::Planar: rel = Eigen::AngleAxisd(2.0, Vec3::UnitZ()).toRotationMatrix(); shift = Vec3(0.3, -0.6, 0); break;
      default: break;
    }
    const Mat3 F_C = F_P * rel;  // child joint frame, global
    BodyState C;
    C.q = Quat(F_C * j.child_frame.rotation.transpose());
    C.r = o_P + F_P * shift - C.q * j.child_frame.origin;
    ConstraintBlock b;
    joint_constraint(j, P, C, b);
    EXPECT_LT(b.phi.cwiseAbs().maxCoeff(), 1e-14);
  }
}

TEST(JointCoordinates, MeasureAnglesDisplacementsAndTheirRates) {
  std::mt19937 rng(2);
  Joint j = random_joint(JointType::Cylindrical, rng, kGround, 0);
  // Child frame = parent frame turned by 0.9 rad about z and pushed 0.25 along z.
  const Mat3 F_C = j.parent_frame.rotation * Eigen::AngleAxisd(0.9, Vec3::UnitZ()).toRotationMatrix();
  BodyState C;
  C.q = Quat(F_C * j.child_frame.rotation.transpose());
  C.r = j.parent_frame.origin + j.parent_frame.rotation.col(2) * 0.25 - C.q * j.child_frame.origin;
  C.v = Vec3(0.1, -0.3, 0.2);
  C.w = Vec3(0.4, 0.2, -0.5);
  const BodyState ground{};
  EXPECT_NEAR(measure_coordinate(j, 0, ground, C).value, 0.9, 1e-14);
  EXPECT_NEAR(measure_coordinate(j, 1, ground, C).value, 0.25, 1e-14);
  const double ref = 0.9 + 4 * M_PI;
  EXPECT_NEAR(measure_coordinate(j, 0, ground, C, &ref).value, ref, 1e-12);  // unwrapped near the reference
  const double h = 1e-6;
  Vec6 V;
  V << C.v, C.w;
  for (int k : {0, 1}) {
    const double fd = (measure_coordinate(j, k, ground, moved(C, V, h)).value - measure_coordinate(j, k, ground, moved(C, V, -h)).value) / (2 * h);
    EXPECT_NEAR(measure_coordinate(j, k, ground, C).rate, fd, 1e-8);
  }
}
