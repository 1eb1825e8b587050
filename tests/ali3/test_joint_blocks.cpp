// JointBlocks (src/formulations/common/joint_blocks.hpp): the constraint wrench on a body summed
// from its blocks' loads J' lambda made where the blocks are evaluated (ali3's Newton passes)
// against the sum over the blocks themselves, on every shipped model.
#include <gtest/gtest.h>

#include <random>

#include "formulations/common/joint_blocks.hpp"
#include "support.hpp"
#include "treedyn/model_json.hpp"

using namespace treedyn;

namespace {

// Every body's joints in both orders: a driven joint (two blocks) is then the first and the last
// handle of its bodies, where a sum joint by joint would associate differently from block by block.
TEST(JointBlocks, WrenchFromBlockLoadsIsTheWrenchFromTheBlocksBitForBit) {
  std::mt19937 rng(7);
  int driven = 0;
  for (const std::string& name : test::shipped_models()) {
    const Model model = read_model_file(test::model_path(name));
    const ConstraintSet constraints(model);
    const JointBlocks joints(model, constraints, 6, "test");
    const SystemState state = test::random_states(model, rng);
    std::vector<ConstraintBlock> blocks(static_cast<std::size_t>(constraints.block_count()));
    constraints.evaluate(0.25, state, blocks, ConstraintParts::jacobians_only());
    Eigen::VectorXd lambda = test::random_vector(constraints.rows(), rng);
    std::vector<JointBlocks::BlockLoads> loads(blocks.size());
    for (int j = 0; j < model.joint_count(); ++j) {
      joints.block_loads(j, blocks, lambda, loads);
      if (joints.blocks_of(j).size() > 1) ++driven;
      for (int k : joints.blocks_of(j)) EXPECT_EQ(joints.block_rows(k), blocks[static_cast<std::size_t>(k)].size()) << name;
    }
    for (int i = 0; i < model.body_count(); ++i) {
      std::vector<int> handles;
      for (int j = 0; j < model.joint_count(); ++j) {
        const Joint& joint = model.joints[static_cast<std::size_t>(j)];
        if (joint.parent == i || joint.child == i) handles.push_back(j);
      }
      for (int pass = 0; pass < 2; ++pass) {
        const Vec6 from_blocks = joints.wrench_on(i, handles, blocks, lambda);
        const Vec6 from_loads = joints.wrench_on(i, handles, loads);
        for (int c = 0; c < 6; ++c) EXPECT_EQ(from_blocks(c), from_loads(c)) << name << " body " << i << " entry " << c;
        std::reverse(handles.begin(), handles.end());
      }
    }
  }
  EXPECT_GT(driven, 0) << "no shipped model has a joint with a driver: the multi-block case went untested";
}

}  // namespace
