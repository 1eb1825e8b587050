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

TEST(Topology, ChainsHaveNoLoopsAndThreeDofPerSphericalJoint) {
  const Topology t(make_chain(16, JointType::Spherical));
  EXPECT_TRUE(t.loop_joints().empty());
  EXPECT_EQ(t.mobility(), 48);
  EXPECT_EQ(t.redundant_constraints(), 0);
  EXPECT_EQ(t.tree_parent_of(0), kGround);
  EXPECT_EQ(t.tree_parent_of(5), 4);
  EXPECT_EQ(t.tree_joint_of(5), 5);
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
}
