// treedyn — bottom-up and top-down passes over the AssemblyTree, serial or with OpenMP threads.
//
// A pass visits the tree one level at a time; the nodes of a level are independent, so they are
// shared among threads with a static schedule. A node's work reads only its children (assemble)
// or its parent (disassemble) and writes only its own workspace, so results do not depend on the
// number of threads: the same operations run in the same order on every node. Reductions over
// nodes are left to the caller, done serially in node order.
#pragma once

#include <algorithm>
#include <vector>

#include "treedyn/topology.hpp"

namespace treedyn {

class Parallel {
 public:
  /// threads <= 1: serial. Levels with fewer nodes than `min_parallel_nodes` run serially.
  explicit Parallel(int threads = 1, int min_parallel_nodes = 4)
      : threads_(std::max(1, threads)), min_parallel_nodes_(std::max(1, min_parallel_nodes)) {}

  int threads() const { return threads_; }

  /// f(i) for i in [0, count).
  template <class F>
  void for_each(int count, F&& f) const {
    if (threads_ == 1 || count < min_parallel_nodes_) {
      for (int i = 0; i < count; ++i) f(i);
      return;
    }
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int i = 0; i < count; ++i) f(i);
  }

  /// f(leaf node id) for every leaf.
  template <class F>
  void leaves(const AssemblyTree& tree, F&& f) const {
    run_levels(tree, 0, 0, f);
  }

  /// f(node id) for every inner node, level by level from the leaves up to the root.
  template <class F>
  void assemble(const AssemblyTree& tree, F&& f) const {
    run_levels(tree, 1, tree.height(), f);
  }

  /// f(node id) for every inner node, level by level from the root down to the leaves.
  template <class F>
  void disassemble(const AssemblyTree& tree, F&& f) const {
    run_levels(tree, tree.height(), 1, f);
  }

 private:
  /// Runs levels first..last (either direction) inside one parallel region; the implicit barrier
  /// of each `omp for` separates the levels.
  template <class F>
  void run_levels(const AssemblyTree& tree, int first, int last, F& f) const {
    const auto& levels = tree.levels();
    const int step = first <= last ? 1 : -1;
    if (threads_ == 1) {
      for (int h = first; h != last + step; h += step)
        for (int id : levels[static_cast<std::size_t>(h)]) f(id);
      return;
    }
#pragma omp parallel num_threads(threads_)
    for (int h = first; h != last + step; h += step) {
      const std::vector<int>& level = levels[static_cast<std::size_t>(h)];
      const int count = static_cast<int>(level.size());
      if (count < min_parallel_nodes_) {
#pragma omp single
        for (int id : level) f(id);
      } else {
#pragma omp for schedule(static)
        for (int i = 0; i < count; ++i) f(level[static_cast<std::size_t>(i)]);
      }
    }
  }

  int threads_;
  int min_parallel_nodes_;
};

}  // namespace treedyn
