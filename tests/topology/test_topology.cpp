#include <gtest/gtest.h>

#include "support.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/topology.hpp"

using namespace treedyn;

// Paper 000, Sect. 4.3: 20 equations for 18 coordinates, one degree of freedom, so three are
// redundant.
TEST(Topology, SpatialFourBarHasOneDofAndThreeRedundantConstraints) {
  const Topology t(read_model_file(test::model_path("four_bar")));
  EXPECT_EQ(t.constraint_equations(), 20);
  EXPECT_EQ(t.gruebler_mobility(), -2);
  EXPECT_EQ(t.jacobian_rank(), 17);
  EXPECT_EQ(t.mobility(), 1);
  EXPECT_EQ(t.redundant_constraints(), 3);
  EXPECT_EQ(t.loop_joints().size(), 1u);
  EXPECT_EQ(t.tree_joints().size(), 3u);
}

// joints_of lists each body's joints in ascending order, counted from the joints' own ends (a
// body joined to ground and to two others, and a loop's).
TEST(Topology, JointsOfABodyAreTheJointsThatTouchIt) {
  for (const char* name : {"four_bar", "double_loop8", "slider_crank"}) {
    const Model m = read_model_file(test::model_path(name));
    const Topology t(m);
    for (int b = 0; b < m.body_count(); ++b) {
      std::vector<int> expected;
      for (int j = 0; j < m.joint_count(); ++j)
        if (m.joints[static_cast<std::size_t>(j)].parent == b || m.joints[static_cast<std::size_t>(j)].child == b) expected.push_back(j);
      const std::span<const int> got = t.joints_of(b);
      EXPECT_EQ(std::vector<int>(got.begin(), got.end()), expected) << name << " body " << b;
    }
  }
}

TEST(Topology, ChainsHaveNoLoopsAndThreeDofPerSphericalJoint) {
  const Topology t(make_chain(16, JointType::Spherical));
  EXPECT_TRUE(t.loop_joints().empty());
  EXPECT_EQ(t.mobility(), 48);
  EXPECT_EQ(t.redundant_constraints(), 0);
  EXPECT_EQ(t.tree_parent_of(0), kGround);
  EXPECT_EQ(t.tree_parent_of(5), 4);
  EXPECT_EQ(t.tree_joint_of(5), 5);
}

// RankMethod::None: the same spanning tree, no rank (what the Simulator's CoordinateMap needs);
// asking it for the rank is an error, not a wrong number.
TEST(Topology, WithoutItsRankItHasTheSameTreeAndRefusesTheRank) {
  for (const char* name : {"four_bar", "double_loop8", "chain128"}) {
    const Model m = read_model_file(test::model_path(name));
    const Topology ranked(m), tree_only(m, RankMethod::None);
    EXPECT_EQ(tree_only.tree_joints(), ranked.tree_joints()) << name;
    EXPECT_EQ(tree_only.loop_joints(), ranked.loop_joints()) << name;
    EXPECT_EQ(tree_only.depth(), ranked.depth()) << name;
    EXPECT_EQ(tree_only.gruebler_mobility(), ranked.gruebler_mobility()) << name;
    EXPECT_THROW(tree_only.jacobian_rank(), std::logic_error) << name;
    EXPECT_THROW(tree_only.mobility(), std::logic_error) << name;
    EXPECT_THROW(tree_only.redundant_constraints(), std::logic_error) << name;
  }
}

TEST(Topology, CoupledLoopsOfPaper001Case3) {
  const Topology t(read_model_file(test::model_path("double_loop8")));
  EXPECT_EQ(t.loop_joints().size(), 2u);
  EXPECT_EQ(t.mobility(), 4);  // planar: 3 * 8 - 2 * 10
  EXPECT_EQ(t.redundant_constraints(), 6);  // three per planar loop built from spatial revolutes
}

TEST(Topology, DriversTakeAwayMobility) {
  const Topology t(read_model_file(test::model_path("slider_crank")));
  EXPECT_EQ(t.mobility(), 0);
  EXPECT_EQ(t.redundant_constraints(), 0);
}

TEST(Topology, FindsFreeFloatingSubsystems) {
  ModelBuilder b("floating");
  for (int i = 0; i < 3; ++i) {
    Body body;
    body.name = "b" + std::to_string(i);
    body.mass = 1;
    body.inertia = Mat3::Identity();
    body.position = {static_cast<double>(i), 0, 0};
    b.body(body);
  }
  b.joint(JointSpec::at("pin", JointType::Revolute, "ground", "b0", {-0.5, 0, 0}));
  b.joint(JointSpec::at("ab", JointType::Spherical, "b1", "b2", {1.5, 0, 0}));
  const Topology t(b.build());
  ASSERT_EQ(t.floating_subsystems().size(), 1u);
  EXPECT_EQ(t.floating_subsystems()[0], (std::vector<int>{1, 2}));
  EXPECT_EQ(t.tree_joint_of(1), -1);
  EXPECT_EQ(t.tree_parent_of(1), kNoBody);
  EXPECT_EQ(t.mobility(), 1 + 9);
  EXPECT_EQ(t.depth(), 1);  // b0 on ground; b2 one joint from its sub-system's first body b1
}

// Depth counts spanning-tree joints from a root: n for an n-link chain; on a ladder the rungs
// hang from ground (1) and each coupler from a rung (2), its other pivots closing loops.
TEST(Topology, DepthIsTheLongestPathInTheSpanningTree) {
  EXPECT_EQ(Topology(make_chain(7, JointType::Spherical)).depth(), 7);
  EXPECT_EQ(Topology(make_ladder(5)).depth(), 2);
  EXPECT_EQ(Topology(read_model_file(test::model_path("four_bar"))).depth(), 2);
}

// The sparse rank (a QR of the loop complement, used beyond kDenseRankRows rows) against the
// dense eigendecomposition on every shipped model and on ladders of coupled four-bars, whose
// mobility is known: one degree of freedom, and three redundant equations per planar loop of
// spatial revolutes (5 rows per joint, 3N + 1 joints, 2N + 1 bars).
TEST(Topology, SparseAndDenseRanksAgree) {
  for (const char* name : {"four_bar", "loop4", "loop8", "double_loop8", "slider_crank", "four_link", "planar_four_bar",
                           "chain128", "spatial_double_pendulum"}) {
    const Model m = read_model_file(test::model_path(name));
    EXPECT_EQ(Topology(m, RankMethod::Sparse).jacobian_rank(), Topology(m, RankMethod::Dense).jacobian_rank()) << name;
  }
  for (int n : {1, 2, 5, 17, 40, 70}) {
    const Model m = make_ladder(n);
    for (RankMethod method : {RankMethod::Dense, RankMethod::Sparse}) {
      const Topology t(m, method);
      EXPECT_EQ(t.mobility(), 1) << n;
      EXPECT_EQ(t.redundant_constraints(), 3 * n) << n;
    }
  }
}

// Beyond kDenseRankRows loop rows the automatic choice is the sparse rank: a ladder of 400 loops
// (2,000 loop rows) is ranked without a dense 2,000 x 2,000 eigenproblem, and right.
TEST(Topology, ALargeLadderIsRankedSparselyAndRight) {
  const Topology t(make_ladder(400));
  EXPECT_EQ(t.mobility(), 1);
  EXPECT_EQ(t.redundant_constraints(), 1200);
}
