// Joint coordinates against the absolute-coordinate joint constraints (an independent
// description of the same joints) and against finite differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>

#include "joints/joint_kinematics.hpp"
#include "support.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/joint_space.hpp"
#include "treedyn/model_builder.hpp"

using namespace treedyn;

namespace {

Eigen::VectorXd random_vector(int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::VectorXd v(n);
  for (int i = 0; i < n; ++i) v(i) = u(rng);
  return v;
}

const JointType kJointTypes[] = {JointType::Revolute,  JointType::Prismatic, JointType::Cylindrical, JointType::Universal,
                                 JointType::Spherical, JointType::Planar,    JointType::Fixed,       JointType::Free};

}  // namespace

TEST(JointSpace, ForwardKinematicsSatisfiesEveryJointConstraint) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  EXPECT_EQ(js.tree().size(), m.joints.size());
  EXPECT_TRUE(std::any_of(js.tree().begin(), js.tree().end(), [](const TreeJoint& t) { return t.reversed; }));
  std::mt19937 rng(1);
  SystemState s = initial_state(m);
  JointMotions motion;
  for (int trial = 0; trial < 5; ++trial) {
    js.forward_kinematics(test::random_coordinates(js, rng), random_vector(js.nv(), rng), s, motion);
    for (const Joint& j : m.joints) {
      ConstraintBlock b;
      joint_constraint(j, state_of(s, j.parent), state_of(s, j.child), b);
      Vec6 VP, VC;
      VP << state_of(s, j.parent).v, state_of(s, j.parent).w;
      VC << state_of(s, j.child).v, state_of(s, j.child).w;
      if (b.size() == 0) continue;  // free joint
      EXPECT_LT(b.phi.cwiseAbs().maxCoeff(), 1e-12) << j.name;
      EXPECT_LT((b.J_P * VP + b.J_C * VC).cwiseAbs().maxCoeff(), 1e-12) << j.name;
    }
  }
}

// forward_kinematics() places and moves each joint in one sweep; place() then move() (two sweeps,
// for callers that need one half) must give the same bodies and motions, bit for bit.
TEST(JointSpace, PlaceThenMoveIsForwardKinematicsBitForBit) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  std::mt19937 rng(6);
  const Eigen::VectorXd q = test::random_coordinates(js, rng), v = random_vector(js.nv(), rng);
  SystemState one = initial_state(m), two = initial_state(m);
  JointMotions m_one, m_two;
  js.forward_kinematics(q, v, one, m_one);
  js.place(q, two, m_two);
  js.move(v, two, m_two);
  for (std::size_t b = 0; b < one.size(); ++b) {
    EXPECT_EQ(one[b].r, two[b].r) << "body " << b;
    EXPECT_EQ(one[b].q.coeffs(), two[b].q.coeffs()) << "body " << b;
    EXPECT_EQ(one[b].v, two[b].v) << "body " << b;
    EXPECT_EQ(one[b].w, two[b].w) << "body " << b;
  }
  ASSERT_EQ(m_one.size(), m_two.size());
  int turning = 0;  // joints with a nonzero kappa: the state moves, the comparison is not of zeros
  for (std::size_t k = 0; k < m_one.size(); ++k) {
    EXPECT_EQ(m_one[k].point, m_two[k].point) << "tree joint " << k;
    EXPECT_EQ(Eigen::MatrixXd(m_one.H(static_cast<int>(k))), Eigen::MatrixXd(m_two.H(static_cast<int>(k)))) << "tree joint " << k;
    EXPECT_EQ(Eigen::MatrixXd(m_one.D(static_cast<int>(k))), Eigen::MatrixXd(m_two.D(static_cast<int>(k)))) << "tree joint " << k;
    EXPECT_EQ(m_one[k].kappa, m_two[k].kappa) << "tree joint " << k;
    turning += m_one[k].kappa != Vec6::Zero();
  }
  EXPECT_GE(turning, 5);
}

// A child is placed from its parent's rotation matrix (JointMotions::child_rotation), not from the
// parent's quaternion: a sweep down a chain keeps no quaternion on its way, and nothing
// renormalises the matrices. Against the same chain composed in long double: each link adds the
// rounding of two 3 x 3 products and of a quaternion's matrix (a few eps each; worst case linear
// in the depth), so the bound is 16 eps per link of depth, 1.5e-11 at 4,096 links (positions: the
// same relative to their size); the error found is far below it (rounding errors of random sign).
// The body's quaternion is its matrix's, normalised.
TEST(JointSpace, ALongChainIsPlacedWithinItsRoundOff) {
  constexpr int n = 4096;
  const Model m = make_chain(n, JointType::Spherical);
  const JointSpace js(m, Topology(m));
  std::mt19937 rng(9);
  const Eigen::VectorXd q = test::random_coordinates(js, rng);
  SystemState s = initial_state(m);
  JointMotions motion;
  js.place(q, s, motion);
  using Mat3L = Eigen::Matrix<long double, 3, 3>;
  using Vec3L = Eigen::Matrix<long double, 3, 1>;
  std::vector<Mat3L> A(m.body_count());
  std::vector<Vec3L> r(m.body_count());
  const double eps = std::numeric_limits<double>::epsilon();
  double worst_rotation = 0.0, worst_position = 0.0, worst_quaternion = 0.0;
  for (int k = 0; k < static_cast<int>(js.tree().size()); ++k) {  // parents first
    const TreeJoint& t = js.tree()[static_cast<std::size_t>(k)];
    ASSERT_EQ(t.type, JointType::Spherical);
    const Mat3L A_P = t.parent == kGround ? Mat3L::Identity() : A[static_cast<std::size_t>(t.parent)];
    const Vec3L r_P = t.parent == kGround ? Vec3L::Zero() : r[static_cast<std::size_t>(t.parent)];
    const Frame fp = js.parent_frame(k), fc = js.child_frame(k);
    const double* qk = q.data() + t.q_offset;
    const Mat3L R = Eigen::Quaternion<long double>(qk[0], qk[1], qk[2], qk[3]).normalized().toRotationMatrix();
    const Mat3L Fc = A_P * fp.rotation.cast<long double>() * R;
    const Vec3L o = r_P + A_P * fp.origin.cast<long double>();
    const auto c = static_cast<std::size_t>(t.child);
    A[c] = Fc * fc.rotation.cast<long double>().transpose();
    r[c] = o - A[c] * fc.origin.cast<long double>();
    const int depth = k + 1;  // a chain
    const double rotation_error = static_cast<double>((motion.child_rotation(k).cast<long double>() - A[c]).cwiseAbs().maxCoeff());
    const double position_error = static_cast<double>((s[c].r.cast<long double>() - r[c]).cwiseAbs().maxCoeff());
    EXPECT_LE(rotation_error, 16 * depth * eps) << "body " << c;
    EXPECT_LE(position_error, 16 * depth * eps * static_cast<double>(r[c].cwiseAbs().maxCoeff() + 1.0L)) << "body " << c;
    EXPECT_LE((s[c].q.toRotationMatrix() - motion.child_rotation(k)).cwiseAbs().maxCoeff(), 16 * depth * eps) << "body " << c;
    worst_rotation = std::max(worst_rotation, rotation_error);
    worst_position = std::max(worst_position, position_error);
    worst_quaternion = std::max(worst_quaternion, std::abs(s[c].q.norm() - 1.0));
  }
  EXPECT_LE(worst_quaternion, 2 * eps);  // normalised
  // Measured: 3.7e-13 and 1.1e-11 m, within the bound by a factor of 40 for the rotations.
  EXPECT_GT(worst_rotation, 0.0);  // the comparison is of numbers that differ, not of copies
  EXPECT_GT(worst_position, 0.0);
}

TEST(JointSpace, CoordinatesInvertForwardKinematics) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  std::mt19937 rng(2);
  SystemState s = initial_state(m);
  JointMotions motion;
  const Eigen::VectorXd q = test::random_coordinates(js, rng), v = random_vector(js.nv(), rng);
  js.forward_kinematics(q, v, s, motion);
  Eigen::VectorXd q2, v2;
  js.coordinates(s, q2, v2, 1e-9);
  EXPECT_LT((q2 - q).cwiseAbs().maxCoeff(), 1e-12);
  EXPECT_LT((v2 - v).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(JointSpace, MotionAndConstraintSubspacesAreOrthonormalComplements) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  std::mt19937 rng(3);
  SystemState s = initial_state(m);
  JointMotions motion;
  js.forward_kinematics(test::random_coordinates(js, rng), random_vector(js.nv(), rng), s, motion);
  ASSERT_EQ(motion.size(), js.tree().size());
  for (std::size_t k = 0; k < motion.size(); ++k) {
    const JointMotion& jm = motion[k];
    EXPECT_EQ(jm.nv, js.tree()[k].nv);  // H has the joint's degrees of freedom, D the rest of [H D]
    const Eigen::MatrixXd H = motion.H(static_cast<int>(k)), D = motion.D(static_cast<int>(k));
    ASSERT_EQ(H.cols() + D.cols(), 6);
    const Eigen::MatrixXd HtH = H.transpose() * H, DtD = D.transpose() * D;
    EXPECT_LT((HtH - Eigen::MatrixXd::Identity(HtH.rows(), HtH.cols())).norm(), 1e-14);
    EXPECT_LT((DtD - Eigen::MatrixXd::Identity(DtD.rows(), DtD.cols())).norm(), 1e-14);
    EXPECT_LT((D.transpose() * H).norm(), 1e-14);  // paper 001, Eq. (11)
  }
}

// subspace_columns() fills [H D] by fixed-size blocks for a spherical joint and leaves out a unit
// joint's D: it must give what motion_subspace() and constraint_subspace() give side by side, to
// the last bit, for every type, and a unit joint's D must be the constant JointMotions::D() reads
// ([I; 0], the identity's first columns) while nothing is written past its H.
TEST(JointSpace, SubspaceColumnsAreTheMotionAndConstraintSubspacesSideBySide) {
  const Mat3 Fp = Quat(0.9, 0.1, -0.3, 0.2).normalized().toRotationMatrix();
  const Mat3 Fc = Quat(0.4, -0.7, 0.5, 0.3).normalized().toRotationMatrix();
  for (const JointType type : kJointTypes) {
    const int nv = joint_nv(type);
    const bool unit = joint_kinematics::unit_constraint_subspace(type);
    Mat6 expected = Mat6::Constant(NAN), HD = Mat6::Constant(NAN);
    joint_kinematics::motion_subspace(type, Fp, Fc, expected.leftCols(nv));
    joint_kinematics::constraint_subspace(type, Fp, Fc, expected.rightCols(6 - nv));
    joint_kinematics::subspace_columns(type, Fp, Fc, HD.data());
    const int written = unit ? nv : 6;
    EXPECT_TRUE(HD.leftCols(written).allFinite()) << "type " << static_cast<int>(type);  // every entry written
    EXPECT_TRUE(HD.rightCols(6 - written).array().isNaN().all()) << "type " << static_cast<int>(type);  // and no more
    EXPECT_EQ(Eigen::MatrixXd(HD.leftCols(written)), Eigen::MatrixXd(expected.leftCols(written))) << "type " << static_cast<int>(type);
    if (unit) {
      EXPECT_EQ(Eigen::MatrixXd(expected.rightCols(6 - nv)), Eigen::MatrixXd(Mat6::Identity().leftCols(6 - nv)))
          << "type " << static_cast<int>(type);
    }
  }
}

// place() adds F_p p to the joint point only for the types translating() names: every other
// type's relative_transform() must leave p at zero, whatever its coordinates.
TEST(JointSpace, OnlyTranslatingJointsMoveTheOrigin) {
  const double q[7] = {0.3, -0.8, 0.5, 0.6, -0.2, 0.1, 0.4};
  for (const JointType type : kJointTypes) {
    Mat3 R;
    Vec3 p;
    joint_kinematics::relative_transform(type, q, R, p);
    EXPECT_EQ(joint_kinematics::translating(type), p != Vec3::Zero()) << "type " << static_cast<int>(type);
  }
}

// A_C(o) - A_P(o) = H vdot + kappa, with the bodies' accelerations taken by finite differences
// along the motion q(t), v(t) = v + t vdot.
TEST(JointSpace, RelativeAccelerationIsHvdotPlusKappa) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  std::mt19937 rng(4);
  const Eigen::VectorXd q0 = test::random_coordinates(js, rng), v0 = random_vector(js.nv(), rng), vdot = random_vector(js.nv(), rng);
  auto state_at = [&](double t) {  // integrate q with tiny RK4 steps
    Eigen::VectorXd y(js.nq() + js.nv());
    y << q0, v0;
    const auto rate = [&](double, const Eigen::VectorXd& x) {
      Eigen::VectorXd d(x.size());
      js.position_rate(x.head(js.nq()), x.tail(js.nv()), d.head(js.nq()));
      d.tail(js.nv()) = vdot;
      return d;
    };
    y = test::rk4(rate, y, 0.0, t, t / 20);
    SystemState s = initial_state(m);
    JointMotions motion;
    js.forward_kinematics(y.head(js.nq()), y.tail(js.nv()), s, motion);
    return s;
  };
  const double h = 1e-5;
  const SystemState sp = state_at(h), sm = state_at(-h);
  SystemState s = initial_state(m);
  JointMotions motion;
  js.forward_kinematics(q0, v0, s, motion);
  for (std::size_t i = 0; i < s.size(); ++i) {
    s[i].a = (sp[i].v - sm[i].v) / (2 * h);
    s[i].alpha = (sp[i].w - sm[i].w) / (2 * h);
  }
  for (std::size_t k = 0; k < js.tree().size(); ++k) {
    const TreeJoint& t = js.tree()[k];
    const JointMotion& jm = motion[k];
    auto A = [&](int body) {
      Vec6 a = Vec6::Zero();
      if (body == kGround) return a;
      const BodyState& b = s[static_cast<std::size_t>(body)];
      const Vec3 l = jm.point - b.r;
      a << b.a + b.alpha.cross(l) + b.w.cross(b.w.cross(l)), b.alpha;
      return a;
    };
    const Vec6 expected = motion.H(static_cast<int>(k)) * vdot.segment(t.v_offset, t.nv) + jm.kappa;
    EXPECT_LT((A(t.child) - A(t.parent) - expected).cwiseAbs().maxCoeff(), 1e-6) << "tree joint " << k;
  }
}

TEST(JointSpace, InconsistentStateIsReportedNamingTheJoint) {
  Model m = test::joint_zoo();
  m.bodies[1].position += Vec3(0.0, 0.3, 0.0);  // b2 moved off its prismatic axis
  const JointSpace js(m, Topology(m));
  Eigen::VectorXd q, v;
  try {
    js.coordinates(initial_state(m), q, v);
    FAIL();
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("joint 'j2'"), std::string::npos) << e.what();
  }
}

// Hdot (subspace_rate(), from the bodies' angular velocities alone) against central differences
// of H along the motion q(t) (constant v), for every joint type; move()'s kappa, made without
// holding Hdot, is Hdot v + [w_P x (H v)_lin; 0] within the round-off of summing in another order.
TEST(JointSpace, SubspaceRateMatchesFiniteDifferencesOfH) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  std::mt19937 rng(5);
  const Eigen::VectorXd q0 = test::random_coordinates(js, rng), v = random_vector(js.nv(), rng);
  auto motion_at = [&](double t) {
    Eigen::VectorXd q = q0;
    if (t != 0.0) {
      const auto rate = [&](double, const Eigen::VectorXd& x) {
        Eigen::VectorXd d(x.size());
        js.position_rate(x, v, d);
        return d;
      };
      q = test::rk4(rate, q0, 0.0, t, t / 20);
    }
    SystemState s = initial_state(m);
    JointMotions motion;
    js.forward_kinematics(q, v, s, motion);
    return std::pair{s, motion};
  };
  const double h = 1e-5;
  const auto [sp, mp] = motion_at(h);
  const auto [sm, mm] = motion_at(-h);
  const auto [s0, m0] = motion_at(0.0);
  int checked = 0, turning = 0;  // turning: kappa far above the round-off bound (not a comparison of zeros)
  for (std::size_t k = 0; k < m0.size(); ++k) {
    const TreeJoint& t = js.tree()[k];
    SubspaceMatrix Hdot;
    js.subspace_rate(static_cast<int>(k), s0, m0, Hdot);
    ASSERT_EQ(Hdot.cols(), t.nv) << "tree joint " << k;
    if (t.nv == 0) continue;  // fixed joint
    const Eigen::MatrixXd fd = (mp.H(static_cast<int>(k)) - mm.H(static_cast<int>(k))) / (2 * h);
    EXPECT_LT((fd - Hdot).cwiseAbs().maxCoeff(), 1e-8) << "tree joint " << k;
    const auto vj = v.segment(t.v_offset, t.nv);
    Vec6 kappa = subspace_times<Vec6>(Hdot, t.nv, vj);
    const Vec3& w_P = state_of(s0, t.parent).w;
    kappa.head<3>() += w_P.cross(subspace_times<Vec6>(m0.H(static_cast<int>(k)), t.nv, vj).head<3>());
    // The same bilinear sum in another order (move() crosses w with H v split by frame): every
    // entry is at most 2 nv + 2 products w_i H_ci v_c (H's columns have unit norm) summed, so the
    // two roundings differ by a few eps times w_max sum_c |v_c|; 16 eps bounds it with room.
    const double w_max = std::max(w_P.cwiseAbs().maxCoeff(), state_of(s0, t.child).w.cwiseAbs().maxCoeff());
    const double bound = 16 * std::numeric_limits<double>::epsilon() * w_max * vj.cwiseAbs().sum();
    turning += kappa.cwiseAbs().maxCoeff() > 1e3 * bound;
    EXPECT_LE((kappa - m0[k].kappa).cwiseAbs().maxCoeff(), bound) << "tree joint " << k;
    ++checked;
  }
  EXPECT_EQ(checked, 8);  // the zoo's moving joints: six in the chain, the free and the reversed universal
  EXPECT_EQ(turning, 6);  // all but the two from the ground: the chain's first (w_P = 0) and the free (w_C x w_C = 0)
}

// Error messages name a state entry by its joint: every coordinate and rate of the zoo's tree
// joints, and a body without any joint (reached through a virtual free joint) by its own name.
TEST(JointSpace, DescribesEveryStateEntryByItsJoint) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  for (const TreeJoint& t : js.tree()) {
    ASSERT_GE(t.joint, 0);
    const std::string name = "joint '" + m.joints[static_cast<std::size_t>(t.joint)].name + "'";
    for (int k = 0; k < t.nq; ++k)
      EXPECT_EQ(js.describe_state(t.q_offset + k, "velocity"), "coordinate " + std::to_string(k) + " of " + name);
    for (int k = 0; k < t.nv; ++k)
      EXPECT_EQ(js.describe_state(js.nq() + t.v_offset + k, "momentum"), "momentum " + std::to_string(k) + " of " + name);
  }
  ModelBuilder b("drifting pair");  // two bodies hinged to each other, neither to ground
  b.body(test::box("drifter", {0, 0, 0}, 0.2)).body(test::box("tail", {1, 0, 0}, 0.1));
  b.joint(JointSpec::at("hinge", JointType::Revolute, "drifter", "tail", {0.5, 0, 0}));
  const Model pair = b.build();
  const JointSpace ps(pair, Topology(pair));
  ASSERT_LT(ps.tree().front().joint, 0);  // the virtual free joint comes first
  const std::string root = pair.bodies[static_cast<std::size_t>(ps.tree().front().child)].name;
  EXPECT_EQ(ps.describe_state(0, "velocity"), "coordinate 0 of the free body '" + root + "'");
  EXPECT_EQ(ps.describe_state(ps.nq() + 5, "velocity"), "velocity 5 of the free body '" + root + "'");
}

// normalize(q, tolerance) leaves a quaternion whose norm is within `tolerance` of 1 exactly as it
// is and reports no change when it touched nothing (the step projection of dca and hdca, which
// lets dopri5 and bs23 reuse their last stage); beyond the tolerance it makes it a unit
// quaternion and reports how far off it was. Other coordinates are never touched.
TEST(JointSpace, NormalizeLeavesQuaternionsWithinTheToleranceAsTheyAre) {
  const Model m = test::joint_zoo();
  const JointSpace js(m, Topology(m));
  std::mt19937 rng(4);
  const Eigen::VectorXd unit = test::random_coordinates(js, rng);
  std::vector<int> starts;  // of the spherical and free joints' quaternions
  for (const TreeJoint& t : js.tree())
    if (t.type == JointType::Spherical || t.type == JointType::Free) starts.push_back(t.q_offset + (t.type == JointType::Free ? 3 : 0));
  ASSERT_GE(starts.size(), 2u);
  Eigen::VectorXd q = unit;
  for (int s : starts) q.segment<4>(s) *= 1.0 + 1e-10;
  const Eigen::VectorXd near = q;
  EXPECT_EQ(js.normalize(q, 1e-9), 0.0);
  EXPECT_TRUE((q.array() == near.array()).all()) << "a quaternion within the tolerance was touched";
  q.segment<4>(starts[0]) *= 1.0 + 1e-6;  // one now beyond it
  const double change = js.normalize(q, 1e-9);
  EXPECT_NEAR(change, 1e-6, 1e-9);
  EXPECT_NEAR(q.segment<4>(starts[0]).norm(), 1.0, 1e-15);
  for (std::size_t k = 1; k < starts.size(); ++k)
    EXPECT_TRUE((q.segment<4>(starts[k]).array() == near.segment<4>(starts[k]).array()).all());
  for (int i = 0; i < js.nq(); ++i) {
    if (std::none_of(starts.begin(), starts.end(), [&](int s) { return i >= s && i < s + 4; })) {
      EXPECT_EQ(q(i), near(i)) << i;
    }
  }
  EXPECT_GT(js.normalize(q), 0.0);  // tolerance 0: every one off at all
  for (int s : starts) EXPECT_NEAR(q.segment<4>(s).norm(), 1.0, 1e-15);
}
