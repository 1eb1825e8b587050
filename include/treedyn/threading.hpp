// treedyn — how a formulation's tree passes use threads (the settings alone; the passes are in
// parallel.hpp, which needs OpenMP).
#pragma once

#include <vector>

namespace treedyn {

/// How a formulation's passes use threads (FormulationSettings::threading).
struct Threading {
  /// On the two-core development VM a fork and join costs 3 us and a barrier 1.4 us, and two
  /// threads made an ali3 step of a 64-body chain 1.5x slower and of a 128-body chain 1.07x
  /// slower (docs/benchmarks.md): 128 bodies is where they break even there.
  static constexpr int kDefaultMinParallelBodies = 128;

  int threads = 1;
  /// Trees with fewer bodies run their passes, and loops with fewer items their iterations,
  /// serially whatever the thread count.
  int min_parallel_bodies = kDefaultMinParallelBodies;
  /// Pin OpenMP's worker threads to cores before the first parallel pass (pin_threads). Off by
  /// default: pinning changes the CPU affinity of the host program's threads, the calling thread
  /// included; the command-line tool turns it on.
  bool pin = false;
  /// Time the passes on the threads and on one thread while running, and use whichever is faster
  /// (ThreadGovernor, parallel.hpp): on a machine whose other cores are busy, threads wait for
  /// each other at every barrier (two ran 2.2-2.7 times slower than one on the development VM,
  /// docs/benchmarks.md). Results do not depend on the choice. Off: the passes always run on the
  /// threads (benchmarks of the threads themselves).
  bool fallback = true;
};

/// The CPUs this process may run on (its affinity mask, as taskset or a container limits it);
/// empty if the mask cannot be read. (src/parallel/pinning.cpp)
std::vector<int> allowed_cpus();

}  // namespace treedyn
