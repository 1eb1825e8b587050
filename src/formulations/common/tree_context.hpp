// treedyn — what the absolute-coordinate formulations that solve on the assembly tree (ali3, half-
// and fully-implicit) build once from a model: its constraints, grouped per joint as tree rows;
// topology and assembly tree; applied loads; the parallel passes. It refers to the model and
// the external loads, which must outlive it (the formulation holds both).
#pragma once

#include <string>

#include "joint_blocks.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/parallel.hpp"
#include "treedyn/topology.hpp"

namespace treedyn {

struct TreeContext {
  /// Throws std::invalid_argument naming the joint if one has more than max_joint_rows equations.
  TreeContext(const Model& model, int max_joint_rows, const std::string& formulation, const Threading& threading,
              const ExternalLoads* external)
      : constraints(model),
        joint_blocks(model, constraints, max_joint_rows, formulation),
        topology(model),
        tree(model, topology, threading.threads),
        loads(model, external),
        parallel(threading) {}
  TreeContext(const TreeContext&) = delete;  // joint_blocks and tree refer to the members above
  TreeContext& operator=(const TreeContext&) = delete;

  ConstraintSet constraints;
  JointBlocks joint_blocks;
  Topology topology;
  AssemblyTree tree;
  AppliedLoads loads;
  Parallel parallel;
};

}  // namespace treedyn
