// A ball joint's rows in a fixed-size PointBlock (ConstraintSet::evaluate_point) against its
// dynamic-size ConstraintBlock (evaluate_block), where the samples use them: the joints'
// reactions from the multipliers and the constraint errors that metrics.csv reports. Both must
// be the same numbers bit for bit, the signs of zeros included (a -0 prints as "-0" in the
// files), on every shipped model at random states.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "formulations/common/reactions.hpp"
#include "support.hpp"
#include "treedyn/metrics.hpp"
#include "treedyn/model_json.hpp"

using namespace treedyn;

namespace {

bool same_bits(const Vec3& a, const Vec3& b) { return std::memcmp(a.data(), b.data(), sizeof(double) * 3) == 0; }
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof(double)) == 0; }

TEST(FixedSizeBlocks, ReactionsFromPointBlocksAreThoseFromConstraintBlocksBitForBit) {
  std::mt19937 rng(11);
  int points = 0;
  for (const std::string& name : test::shipped_models()) {
    const Model model = read_model_file(test::model_path(name));
    const ConstraintSet constraints(model);
    const SystemState state = test::random_states(model, rng);
    std::vector<ConstraintBlock> blocks(static_cast<std::size_t>(constraints.block_count()));
    constraints.evaluate(0.25, state, blocks, ConstraintParts::jacobians_only());
    Eigen::VectorXd lambda = test::random_vector(constraints.rows(), rng);
    lambda(0) = 0.0;  // a zero multiplier: its reaction entries are zeros, whose signs must agree
    Snapshot from_blocks, evaluated;
    reactions_from_multipliers(constraints, blocks, lambda, state, from_blocks);
    reactions_from_multipliers(constraints, 0.25, lambda, state, evaluated);
    ASSERT_EQ(from_blocks.reactions.size(), evaluated.reactions.size());
    for (std::size_t j = 0; j < evaluated.reactions.size(); ++j) {
      EXPECT_TRUE(same_bits(from_blocks.reactions[j].force, evaluated.reactions[j].force)) << name << " joint " << j;
      EXPECT_TRUE(same_bits(from_blocks.reactions[j].torque, evaluated.reactions[j].torque)) << name << " joint " << j;
    }
    for (std::size_t d = 0; d < evaluated.driver_efforts.size(); ++d)
      EXPECT_TRUE(same_bits(from_blocks.driver_efforts[d], evaluated.driver_efforts[d])) << name << " driver " << d;
    for (int k = 0; k < constraints.block_count(); ++k) points += constraints.is_point(k);
  }
  EXPECT_GT(points, 100);  // chain128 and the other ball-joint models went through the fixed-size path
}

// The errors written for each joint: |Phi|, |J_P V_P + J_C V_C + Phi_t| and |J_P A_P + J_C A_C -
// gamma|, computed here from evaluate_block's ConstraintBlock.
TEST(FixedSizeBlocks, ConstraintErrorsFromPointBlocksAreThoseFromConstraintBlocksBitForBit) {
  std::mt19937 rng(12);
  for (const std::string& name : test::shipped_models()) {
    const Model model = read_model_file(test::model_path(name));
    const ConstraintSet constraints(model);
    const Metrics metrics(model);
    const SystemState state = test::random_states(model, rng);
    const std::vector<ConstraintErrors> errors = metrics.constraint_errors(0.25, state);
    ASSERT_EQ(static_cast<int>(errors.size()), constraints.block_count());
    ConstraintBlock b;
    for (int k = 0; k < constraints.block_count(); ++k) {
      constraints.evaluate_block(k, 0.25, state, b, ConstraintParts::without_jdot());
      if (b.size() == 0) continue;
      const BodyState& P = state_of(state, b.parent);
      const BodyState& C = state_of(state, b.child);
      Vec6 V_P = Vec6::Zero(), V_C = Vec6::Zero(), A_P = Vec6::Zero(), A_C = Vec6::Zero();
      V_P << P.v, P.w;
      V_C << C.v, C.w;
      A_P << P.a, P.alpha;
      A_C << C.a, C.alpha;
      const auto& e = errors[static_cast<std::size_t>(k)];
      EXPECT_TRUE(same_bits(e.position, b.phi.norm())) << name << " block " << k;
      EXPECT_TRUE(same_bits(e.velocity, (b.J_P * V_P + b.J_C * V_C + b.phi_t).norm())) << name << " block " << k;
      EXPECT_TRUE(same_bits(e.acceleration, (b.J_P * A_P + b.J_C * A_C - b.gamma).norm())) << name << " block " << k;
    }
  }
}

}  // namespace
