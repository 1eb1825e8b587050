// Featherstone's DCA against the reference formulation, Lagrange's equations, conservation laws,
// and itself under another thread count.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <random>

#include "allocation_counter.hpp"
#include "formulations/common/joint_tree.hpp"
#include "formulations/common/welded_bodies.hpp"
#include "formulations/dca/acceleration_solver.hpp"
#include "support.hpp"
#include "treedyn/formulations/dca.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/threading.hpp"

using namespace treedyn;

namespace {

FormulationSettings tolerance(double tol, int threads = 1) {
  FormulationSettings s;
  s.rtol = s.atol = tol;
  s.threading.threads = threads;
  return s;
}

void expect_agrees_with_reference(const Model& m, double t_end, double tol, double bound) {
  test::Recorder ref, dca;
  ASSERT_TRUE(test::simulate(m, "reference", tolerance(tol), t_end, 0.05, &ref).ok());
  const auto r = test::simulate(m, "dca", tolerance(tol), t_end, 0.05, &dca);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_LT(test::max_position_difference(ref, dca), bound) << m.name;
}

}  // namespace

namespace {

// One body's mobility in its handles' rows from jc::mobility_rows (shared by dca and hdca, with
// cross products and the inertia's block structure) against its definition multiplied out as
// Dim x Dim matrices, G_h S(l_h)' M^-1 S(l_k) G_k', with S(l) = [I 0; skew(l) I] (spatial) or
// [I 0; (-l_y, l_x) 1] (planar), M^-1 = diag(I/m, J^-1): handles with random arms, random rows on
// either side (every second handle holds the p side), the inertia random. `counts`: the handles'
// row counts (all equal: the fixed-size fill; mixed: the fill entry by entry, or beyond eight
// handles the dynamic-size one); `unit`: tree joints' unit rows (a spherical joint's three: the
// fill by cross products). The entries are of order 1 to 10 and each is a few
// products: 1e-12 is some tens of round-offs.
template <int Dim>
void expect_mobility_rows(const std::vector<int>& counts, std::mt19937& rng, const std::string& what, bool unit = false) {
  constexpr int V = Dim == 6 ? 3 : 2, W = Dim - V;
  using MatD = Eigen::Matrix<double, Dim, Dim>;
  using Arm = jc::HandleArm<double, Dim>;
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const Eigen::Matrix<double, W, W> B = Eigen::Matrix<double, W, W>::NullaryExpr([&] { return u(rng); });
  const jc::AngularInverse<double, Dim> J_inverse = (B * B.transpose() + 0.2 * decltype(B)::Identity()).inverse();
  const double inverse_mass = 0.5 + 0.5 * (u(rng) + 1.0);
  const int n = static_cast<int>(counts.size());
  std::vector<Arm> l(counts.size());
  std::vector<dc::JointRows<double, Dim>> rows(counts.size());
  std::vector<int> offset = {0};
  for (int j = 0; j < n; ++j) {
    l[static_cast<std::size_t>(j)] = Arm::NullaryExpr([&] { return u(rng); });
    auto& r = rows[static_cast<std::size_t>(j)];
    if (unit) {  // a tree joint's unit rows, G_c = [I 0] = -G_p
      r.set_tree_rows(Eigen::MatrixXd::Identity(Dim, counts[static_cast<std::size_t>(j)]));
      ASSERT_TRUE(r.unit_rows) << what;
    } else {
      r.reset(counts[static_cast<std::size_t>(j)]);
      r.edit_G_p().topRows(r.rows) = Eigen::MatrixXd::NullaryExpr(r.rows, Dim, [&] { return u(rng); });
      r.edit_G_c().topRows(r.rows) = Eigen::MatrixXd::NullaryExpr(r.rows, Dim, [&] { return u(rng); });
    }
    offset.push_back(offset.back() + r.rows);
  }
  typename dc::HandleTree<double, Dim>::Node leaf;
  std::vector<int> handles(counts.size());
  for (int j = 0; j < n; ++j) handles[static_cast<std::size_t>(j)] = j;
  const int r = offset.back();
  std::vector<int> record = offset;  // the offsets, then holds_p's chars in whole ints (Node::holds_p)
  record.resize(offset.size() + (counts.size() + sizeof(int) - 1) / sizeof(int), 0);
  leaf.handles_at = handles.data();
  leaf.h = n;
  leaf.offset_at = record.data();
  for (int j = 0; j < n; ++j) leaf.holds_p()[static_cast<std::size_t>(j)] = static_cast<char>(j % 2);
  std::vector<double> K(static_cast<std::size_t>(r * (r + 2)), 0.0);  // K~, b~, f~
  leaf.rows_at = K.data();
  jc::mobility_rows<double, Dim>(inverse_mass, J_inverse, l, rows, leaf);
  MatD M_inverse = MatD::Zero();
  M_inverse.template topLeftCorner<V, V>().diagonal().setConstant(inverse_mass);
  M_inverse.template bottomRightCorner<W, W>() = J_inverse;
  auto S = [](const Arm& arm) {
    MatD out = MatD::Identity();
    if constexpr (Dim == 6) out.template bottomLeftCorner<3, 3>() = skew(arm);
    else out.template bottomLeftCorner<1, 2>() << -arm.y(), arm.x();
    return out;
  };
  auto G = [&](int h) -> Eigen::MatrixXd {
    const auto& r = rows[static_cast<std::size_t>(h)];
    return (h % 2 == 1 ? r.G_p() : r.G_c()).topRows(r.rows);
  };
  for (int h = 0; h < n; ++h)
    for (int k = 0; k < n; ++k) {
      const Eigen::MatrixXd expected =
          G(h) * S(l[static_cast<std::size_t>(h)]).transpose() * M_inverse * S(l[static_cast<std::size_t>(k)]) * G(k).transpose();
      if (expected.size() == 0) continue;  // a handle of no rows (a free joint): maxCoeff of nothing is undefined
      const Eigen::MatrixXd got = leaf.K_hat().block(offset[h], offset[k], expected.rows(), expected.cols());
      EXPECT_LT((got - expected).cwiseAbs().maxCoeff(), 1e-12) << what << ", K~_" << h << k;
    }
}

}  // namespace

TEST(Dca, BodyMobilityInRowsIsTheRowsTimesTheArmsTimesTheInverseMass) {
  std::mt19937 rng(17);
  for (int trial = 0; trial < 5; ++trial) {
    const std::string t = "trial " + std::to_string(trial);
    expect_mobility_rows<6>({3, 3, 3}, rng, t + ", spatial, 3 rows each");
    expect_mobility_rows<6>({5, 5, 5}, rng, t + ", spatial, 5 rows each");
    expect_mobility_rows<6>({3, 5, 1}, rng, t + ", spatial, 3, 5, 1 rows");
    expect_mobility_rows<6>({6, 4, 4, 4}, rng, t + ", spatial, a humanoid torso: a weld and three universal joints");
    expect_mobility_rows<6>({0, 4, 4, 4}, rng, t + ", spatial, a merged humanoid torso: a free root and three universal joints");
    expect_mobility_rows<6>({0, 4, 4, 4}, rng, t + ", spatial, zero");
    expect_mobility_rows<6>({5, 3, 4, 6, 1, 2, 5, 3, 4}, rng, t + ", spatial, nine handles of mixed rows");
    expect_mobility_rows<6>({3, 3, 3}, rng, t + ", spatial, spherical joints' unit rows", true);
    expect_mobility_rows<6>({3, 6, 3}, rng, t + ", spatial, unit rows of 3 and 6", true);
    expect_mobility_rows<3>({2, 2, 2}, rng, t + ", planar, 2 rows each");
    expect_mobility_rows<3>({2, 3, 1}, rng, t + ", planar, 2, 3, 1 rows");
    expect_mobility_rows<3>({2, 3, 1, 2, 3, 1, 2, 3, 1}, rng, t + ", planar, nine handles of mixed rows");
  }
}

// Positions over 5 s at rtol = atol = 1e-10 (both formulations integrate to that tolerance; the
// bound allows the trajectories' sensitivity to amplify it).
// A spherical joint's rows (TreeJoint::unit_constraints) are kept from pass to pass and its r is
// the head of the bias without reading D: the same rows and r as D' and D' bias multiplied out,
// pass after pass with a new bias, and as a joint whose D is not unit (a revolute joint's) gets.
TEST(Dca, TreeRowsOfAUnitJointAreItsSubspaceTimesTheBiasPassAfterPass) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  for (JointType type : {JointType::Spherical, JointType::Revolute}) {
    const Model model = make_chain(1, type);
    const JointSpace js(model, Topology(model));
    const TreeJoint& t = js.tree().front();
    ASSERT_EQ(t.unit_constraints, type == JointType::Spherical);
    Eigen::VectorXd q, v;
    js.coordinates(initial_state(model), q, v);
    SystemState s = initial_state(model);
    JointMotions motion;
    js.place(q, s, motion);
    const Mat3 Fp = js.parent_frame(0).rotation;  // the joint's frame on ground
    const int nv = joint_dof(type);
    Eigen::MatrixXd D = Eigen::MatrixXd::Zero(6, 6 - nv);
    if (type == JointType::Spherical) D.topRows<3>().setIdentity();
    else D << Fp.col(0), Fp.col(1), Fp.col(2), Vec3::Zero(), Vec3::Zero(),  // a revolute joint's (constraint_subspace)
              Vec3::Zero(), Vec3::Zero(), Vec3::Zero(), Fp.col(0), Fp.col(1);
    ASSERT_EQ(Eigen::MatrixXd(motion.D(0)), D);  // a unit joint's D is the constant, not held
    jc::Rows6 rows;
    for (int pass = 0; pass < 3; ++pass) {
      const Vec6 bias = Vec6::NullaryExpr([&] { return u(rng); });
      jc::tree_rows(t, motion, 0, bias, rows);
      const auto n = D.cols();
      ASSERT_EQ(rows.rows, n);
      EXPECT_EQ(rows.unit_rows, type == JointType::Spherical);
      EXPECT_EQ(Eigen::MatrixXd(rows.G_c().topRows(n)), Eigen::MatrixXd(D.transpose())) << pass;
      EXPECT_EQ(Eigen::MatrixXd(rows.G_p().topRows(n)), Eigen::MatrixXd(-D.transpose())) << pass;
      EXPECT_LE((rows.r.head(n) - D.transpose() * bias).cwiseAbs().maxCoeff(), 1e-15) << pass;
      EXPECT_TRUE(rows.r.tail(6 - n).isZero(0.0)) << pass;
    }
  }
}

TEST(Dca, MatchesReferenceOnTheSpatialDoublePendulum) {
  expect_agrees_with_reference(read_model_file(test::model_path("spatial_double_pendulum")), 5.0, 1e-10, 1e-6);
}

TEST(Dca, MatchesReferenceOnAnEightLinkSphericalChain) {
  expect_agrees_with_reference(make_chain(8, JointType::Spherical), 5.0, 1e-10, 1e-6);
}

TEST(Dca, MatchesReferenceOnABranchedTree) { expect_agrees_with_reference(test::branched_tree(), 5.0, 1e-10, 1e-6); }

TEST(Dca, MatchesReferenceOnTheFourBarLoopForTwoSeconds) {
  expect_agrees_with_reference(read_model_file(test::model_path("four_bar")), 2.0, 1e-10, 1e-6);
}

TEST(Dca, MatchesReferenceOnCoupledLoops) {
  expect_agrees_with_reference(read_model_file(test::model_path("double_loop8")), 2.0, 1e-10, 1e-6);
}

// The planar double pendulum against Lagrange's equations in two angles (tests/support).
TEST(Dca, PlanarDoublePendulumMatchesLagrangeEquations) {
  test::expect_double_pendulum_matches_lagrange("dca", tolerance(1e-12), 1e-7);
}

// Without stabilisation (alpha = beta = 0, paper 001's setting) a loop closed at the acceleration
// level drifts (paper 001, Sect. 3.2); Baumgarte's terms keep the drift bounded.
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

// The default rate from the four-bar's scales, by hand: three 1 kg links with inertia diag(1, 1, 1)
// (radius of gyration sqrt(3) m, more than the 1.53 m extent of its centres of mass and pivots), at
// rest: energy 3 kg x 9.81 m/s^2 x sqrt(3) m, speed sqrt(2 x 9.81 x sqrt(3)) m/s, rate 3 speed / length.
TEST(Dca, DefaultBaumgarteRateIsThreeOverTheModelsTimeScale) {
  const Model m = read_model_file(test::model_path("four_bar"));
  const double length = std::sqrt(3.0), speed = std::sqrt(2.0 * 9.81 * length);
  EXPECT_NEAR(default_baumgarte_rate(m), 3.0 * speed / length, 1e-12);
  auto f = make_formulation("dca", share(Model(m)), {});
  EXPECT_EQ(f->diagnostics().at("baumgarte_alpha"), default_baumgarte_rate(m));
  EXPECT_EQ(f->diagnostics().at("baumgarte_beta"), default_baumgarte_rate(m));
  FormulationSettings none;
  none.dca.baumgarte_alpha = none.dca.baumgarte_beta = 0.0;
  EXPECT_EQ(make_formulation("dca", share(Model(m)), none)->diagnostics().at("baumgarte_alpha"), 0.0);
}

// The four-bar passes its aligned (singular) position 15 times in 30 s. Unstabilised, dca leaves
// the parallelogram for the crossed four-bar there with every constraint kept (measured: 2.0 m
// from the reference at rtol 1e-6, and at 1e-10 too); at the default rate it stays on the branch
// the reference formulation follows (measured 1.5e-3 m). Bound: the self-judgement's accuracy
// threshold, 1e-2 of the model's length sqrt(3) m.
TEST(Dca, DefaultStabilisationKeepsTheFourBarOnItsBranch) {
  const Model m = read_model_file(test::model_path("four_bar"));
  FormulationSettings unstabilised;
  unstabilised.dca.baumgarte_alpha = unstabilised.dca.baumgarte_beta = 0.0;
  test::Recorder ref, stabilised, drifting;
  ASSERT_TRUE(test::simulate(m, "reference", tolerance(1e-10), 30.0, 0.5, &ref).ok());
  ASSERT_TRUE(test::simulate(m, "dca", {}, 30.0, 0.5, &stabilised).ok());
  ASSERT_TRUE(test::simulate(m, "dca", unstabilised, 30.0, 0.5, &drifting).ok());
  EXPECT_LT(test::max_position_difference(ref, stabilised), 1e-2 * std::sqrt(3.0));
  EXPECT_GT(test::max_position_difference(ref, drifting), 1.0);
}

TEST(Dca, ResultsAreIdenticalForOneAndTwoThreads) {
  test::expect_identical_for_one_and_two_threads(make_chain(128, JointType::Spherical), "dca", tolerance(1e-8), 0.2);
  for (const char* name : {"loop8", "double_loop8"})
    test::expect_identical_for_one_and_two_threads(read_model_file(test::model_path(name)), "dca", tolerance(1e-8), 0.2);
  test::expect_identical_for_one_and_two_threads(test::branched_tree(), "dca", tolerance(1e-8), 0.2);
}

TEST(Dca, JointReactionsMatchTheReference) {
  test::expect_reactions_match_reference(test::branched_tree(), "dca", {}, 1e-11, 1e-6);
}

// Welded bodies as one rigid body (WeldedBodies): the groups' mass, centre of mass and inertia are
// those of their members, summed in the global frame at the initial state (independent of the
// root-frame sums the class makes).
TEST(Dca, WeldedGroupsHaveTheirMembersMassCentreAndInertia) {
  const Model m = test::welded_tree();
  const Topology topology(m);
  const jc::WeldedBodies welded(m, topology);
  ASSERT_TRUE(welded.any());
  EXPECT_EQ(welded.count(), 6);  // trunk+plate, arm+hand+finger, leg, shin+foot, pod+pod_tail, flap
  EXPECT_EQ(welded.welds().size(), 7u);
  EXPECT_EQ(welded.static_bodies(), (std::vector<int>{m.body_index("base"), m.body_index("mount")}));
  EXPECT_EQ(welded.members(welded.of(m.body_index("hand"))).size(), 3u);
  const SystemState s = initial_state(m);
  for (int c = 0; c < welded.count(); ++c) {
    double mass = 0.0;
    Vec3 centre = Vec3::Zero();
    for (int b : welded.members(c)) {
      mass += m.bodies[static_cast<std::size_t>(b)].mass;
      centre += m.bodies[static_cast<std::size_t>(b)].mass * s[static_cast<std::size_t>(b)].r;
    }
    centre /= mass;
    Mat3 J = Mat3::Zero();
    for (int b : welded.members(c)) {
      const Body& body = m.bodies[static_cast<std::size_t>(b)];
      const Mat3 A = s[static_cast<std::size_t>(b)].q.toRotationMatrix();
      const Vec3 d = s[static_cast<std::size_t>(b)].r - centre;
      J += A * body.inertia * A.transpose() + body.mass * (d.squaredNorm() * Mat3::Identity() - d * d.transpose());
    }
    const BodyState& root = s[static_cast<std::size_t>(welded.root(c))];
    const Mat3 A = root.q.toRotationMatrix();
    EXPECT_NEAR(welded.mass(c), mass, 1e-14 * mass);
    EXPECT_LT((root.r + A * welded.centre(c) - centre).norm(), 1e-14);
    const Mat3 axes = welded.inertia(c).axes(A);
    for (int k = 0; k < 3; ++k)
      EXPECT_LT((welded.inertia(c).times(axes, Vec3::Unit(k)) - J.col(k)).norm(), 1e-13 * J.norm()) << c;
  }
}

// A loop joint between two bodies welded together would join a group to itself: nothing is merged.
TEST(Dca, NoWeldIsMergedWhereALoopClosesAcrossWeldedBodies) {
  Model m = test::welded_tree();
  Joint across = m.joints[static_cast<std::size_t>(m.joint_index("j_arm"))];  // its frames are not read here
  across.name = "across";
  across.parent = m.body_index("trunk");  // after weld_plate in the spanning tree's search: a loop joint
  across.child = m.body_index("plate");
  m.joints.push_back(across);
  EXPECT_FALSE(jc::WeldedBodies(m, Topology(m)).any());
  // Nor where a loop joint's child is static (the core keeps ground a joint's parent side).
  Model to_static = test::welded_tree();
  Joint j = to_static.joints[static_cast<std::size_t>(to_static.joint_index("j_flap"))];
  j.name = "to_static";
  j.parent = to_static.body_index("flap");
  j.child = to_static.body_index("base");
  to_static.joints.push_back(j);
  EXPECT_FALSE(jc::WeldedBodies(to_static, Topology(to_static)).any());
}

// The solve with welded bodies merged against the solve with every body a leaf (the core's
// multipliers for each weld), at random states: the same joint and body accelerations and joint
// reactions, welds included, to round-off (1e-11 of the largest: the two sum in different orders).
namespace {

void expect_merging_welds_changes_nothing(const Model& m) {
  const Topology topology(m);
  const AssemblyTree tree(m, topology);
  jc::AccelerationSolverParts apart_parts;
  apart_parts.merge_welds = false;
  jc::AccelerationSolver merged(m, topology, tree, nullptr, Threading{}), apart(m, topology, tree, nullptr, Threading{}, 0.0, 0.0, apart_parts);
  std::mt19937 rng(11);
  SystemState s_merged, s_apart;
  std::vector<JointReaction> r_merged, r_apart;
  for (int trial = 0; trial < 5; ++trial) {
    const Eigen::VectorXd q = test::random_coordinates(merged.joints(), rng);
    const Eigen::VectorXd v = test::random_vector(merged.joints().nv(), rng);
    merged.evaluate(0.1, q, v, s_merged);
    apart.evaluate(0.1, q, v, s_apart);
    const double scale = apart.vdot().cwiseAbs().maxCoeff();
    EXPECT_LT((merged.vdot() - apart.vdot()).cwiseAbs().maxCoeff(), 1e-11 * scale) << trial;
    for (std::size_t b = 0; b < m.bodies.size(); ++b) {
      EXPECT_LT((s_merged[b].a - s_apart[b].a).norm(), 1e-11 * scale) << m.bodies[b].name;
      EXPECT_LT((s_merged[b].alpha - s_apart[b].alpha).norm(), 1e-11 * scale) << m.bodies[b].name;
    }
    merged.reactions(s_merged, r_merged);
    apart.reactions(s_apart, r_apart);
    double largest = 0.0;
    for (const JointReaction& r : r_apart) largest = std::max({largest, r.force.norm(), r.torque.norm()});
    for (std::size_t j = 0; j < m.joints.size(); ++j) {
      EXPECT_LT((r_merged[j].force - r_apart[j].force).norm(), 1e-11 * largest) << m.joints[j].name;
      EXPECT_LT((r_merged[j].torque - r_apart[j].torque).norm(), 1e-11 * largest) << m.joints[j].name;
    }
  }
}

}  // namespace

TEST(Dca, MergingWeldedBodiesChangesNoAccelerationOrReaction) {
  for (bool weld_closes_loop : {false, true}) expect_merging_welds_changes_nothing(test::welded_tree(weld_closes_loop));
}

TEST(Dca, WeldThatClosesALoopStaysAJoint) {
  const Model m = test::welded_tree(true);
  const jc::WeldedBodies welded(m, Topology(m));
  EXPECT_EQ(welded.count(), 7);
  EXPECT_EQ(welded.kept_index(m.joint_index("weld_finger")), 2);  // after j_trunk and j_arm: weld_plate and weld_hand merged
  EXPECT_EQ(welded.members(welded.of(m.body_index("hand"))).size(), 2u);
}

TEST(Dca, MatchesReferenceOnATreeWithWeldedBodies) {
  for (bool weld_closes_loop : {false, true}) expect_agrees_with_reference(test::welded_tree(weld_closes_loop), 2.0, 1e-10, 1e-6);
}

TEST(Dca, ReactionsOfWeldsMatchTheReference) {
  for (bool weld_closes_loop : {false, true})
    test::expect_reactions_match_reference(test::welded_tree(weld_closes_loop), "dca", {}, 1e-11, 1e-6);
}


// The joint-coordinate formulations make body quaternions from rotation matrices, whose sign is a
// matter of which branch the conversion takes: without JointSpace's orient() keeping the sign
// nearer the state's previous quaternion, dca's 16-link chain jumped between q and -q 81 times in
// 10 s of samples (the reference formulation, which integrates its quaternions, never). Between
// samples 0.01 s apart no body turns by half a turn, so consecutive quaternions of one body have a
// positive dot product.
TEST(Dca, SampledQuaternionsDoNotJumpSign) {
  for (const char* formulation : {"dca", "hdca"}) {
    test::Recorder rec;
    ASSERT_TRUE(test::simulate(make_chain(16, JointType::Spherical), formulation, {}, 10.0, 0.01, &rec).ok());
    int jumps = 0;
    for (std::size_t k = 1; k < rec.snapshots.size(); ++k)
      for (std::size_t b = 0; b < rec.snapshots[k].bodies.size(); ++b)
        if (rec.snapshots[k].bodies[b].q.coeffs().dot(rec.snapshots[k - 1].bodies[b].q.coeffs()) < 0.0) ++jumps;
    EXPECT_EQ(jumps, 0) << formulation;
  }
}

TEST(Dca, FreeFloatingChainConservesMomentum) {
  test::expect_momentum_conserved(test::floating_chain(), "dca", tolerance(1e-10), 3.0, 1e-8);
}

TEST(Dca, RightHandSideAllocatesNothing) {
  TREEDYN_SKIP_UNLESS_ALLOCATIONS_COUNTED();
  auto f = make_formulation("dca", share(make_chain(64, JointType::Spherical)), {});
  EXPECT_EQ(test::rhs_allocations(*f), 0);
  auto welded = make_formulation("dca", share(test::welded_tree()), {});  // welded groups as leaves
  EXPECT_EQ(test::rhs_allocations(*welded), 0);
}

TEST(Dca, RefusesDriversWithAClearMessage) {
  test::expect_refused(read_model_file(test::model_path("slider_crank")), "dca", {}, "drivers");
}

// Explicit Euler at a step far too large blows the pendulum up; the run stops with a message
// that names the joint whose acceleration went non-finite first, and keeps the samples.
TEST(Dca, NonFiniteAccelerationsNameTheJoint) {
  FormulationSettings s{};
  s.integrator = "euler";
  s.dt = 0.3;
  for (const char* formulation : {"dca", "hdca"}) {
    test::Recorder rec;
    const Model m = read_model_file(test::model_path("spatial_double_pendulum"));
    const auto r = test::simulate(m, formulation, s, 60.0, 0.3, &rec);
    EXPECT_FALSE(r.ok()) << formulation;
    EXPECT_NE(r.message.find("non-finite joint accelerations, first acceleration 0 of joint 'joint"), std::string::npos)
        << r.message;
    EXPECT_FALSE(rec.snapshots.empty());
  }
}
