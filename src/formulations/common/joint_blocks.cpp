#include "joint_blocks.hpp"

#include <stdexcept>

namespace treedyn {

JointBlocks::JointBlocks(const Model& model, const ConstraintSet& constraints, int max_rows,
                         const std::string& formulation)
    : constraints_(&constraints), blocks_of_(model.joints.size()), sides_(model.joints.size()) {
  // One block at a time at its bodies' initial states: neither the model's state nor its blocks
  // (848 bytes each, 55 MB at 65,536 bodies) are held for it.
  ConstraintBlock b;
  for (int k = 0; k < constraints.block_count(); ++k) {
    const int j = constraints.joint_of_block(k);
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    constraints.evaluate_block(k, 0.0, initial_state(model, joint.parent), initial_state(model, joint.child), b,
                               ConstraintParts::without_jdot());
    if (b.parent != joint.parent || b.child != joint.child)  // BlockLoads and wrench_on take the joint's sides
      throw std::logic_error("JointBlocks: constraint block " + std::to_string(k) + " of joint '" + joint.name +
                             "' acts on other bodies than its joint's");
    blocks_of_[static_cast<std::size_t>(j)].push_back(k);
    block_rows_.push_back(b.size());
  }
  for (int j = 0; j < model.joint_count(); ++j) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    int rows = 0;
    for (int k : blocks_of(j)) rows += block_rows(k);
    if (rows > max_rows)
      throw std::invalid_argument(formulation + ": joint '" + joint.name + "' with its drivers has more than " +
                                  std::to_string(max_rows) + " equations");
    sides_[static_cast<std::size_t>(j)] = {joint.parent, joint.child, rows};
  }
}

}  // namespace treedyn
