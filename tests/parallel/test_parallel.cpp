#include <gtest/gtest.h>

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

#include "treedyn/generators.hpp"
#include "treedyn/parallel.hpp"

#include <omp.h>

using namespace treedyn;

namespace {

/// A pass with the shape of an assembly: each inner node combines its children's values with a
/// non-associative floating-point formula, then a disassembly pushes values back down.
std::vector<double> run_passes(const AssemblyTree& tree, int threads) {
  std::vector<double> up(tree.nodes().size()), down(tree.nodes().size());
  const Parallel par(Threading{.threads = threads}, 2);
  par.assemble(
      tree, [&](int id) { up[static_cast<std::size_t>(id)] = std::sin(1.0 + tree.node(id).body); },
      [&](int id) {
        const AssemblyNode& n = tree.node(id);
        up[static_cast<std::size_t>(id)] = up[static_cast<std::size_t>(n.left)] / 3.0 +
                                           std::sqrt(1.0 + up[static_cast<std::size_t>(n.right)] * up[static_cast<std::size_t>(n.right)]);
      });
  down[static_cast<std::size_t>(tree.root())] = up[static_cast<std::size_t>(tree.root())];
  par.disassemble(tree, [&](int id) {
    const AssemblyNode& n = tree.node(id);
    down[static_cast<std::size_t>(n.left)] = down[static_cast<std::size_t>(id)] * 0.7 + up[static_cast<std::size_t>(n.left)];
    down[static_cast<std::size_t>(n.right)] = down[static_cast<std::size_t>(id)] * 0.3 - up[static_cast<std::size_t>(n.right)];
  });
  return down;
}

}  // namespace

TEST(Parallel, PassesGiveIdenticalResultsForAnyThreadCount) {
  const Model m = make_chain(1000, JointType::Spherical);
  const Topology topology(m);
  const std::vector<double> serial = run_passes(AssemblyTree(m, topology, 1), 1);
  for (int threads : {2, 3, 8}) {  // each on the tree cut for its thread count
    EXPECT_EQ(run_passes(AssemblyTree(m, topology, threads), threads), serial) << threads;
    EXPECT_EQ(run_passes(AssemblyTree(m, topology, 1), threads), serial) << threads << " threads, one subtree";
  }
}

TEST(Parallel, PassesVisitEveryNodeOnceChildrenBeforeParentsAndBack) {
  const Model m = make_chain(777, JointType::Revolute);
  const Topology topology(m);
  for (int threads : {1, 2, 3}) {
    const AssemblyTree tree(m, topology, threads);
    std::vector<std::atomic<int>> up(tree.nodes().size()), down(tree.nodes().size());
    std::atomic<int> violations{0};
    Parallel(Threading{.threads = threads}, 1).assemble(
        tree, [&](int id) { up[static_cast<std::size_t>(id)]++; },
        [&](int id) {
          const AssemblyNode& n = tree.node(id);
          if (up[static_cast<std::size_t>(n.left)] != 1 || up[static_cast<std::size_t>(n.right)] != 1) ++violations;
          up[static_cast<std::size_t>(id)]++;
        });
    down[static_cast<std::size_t>(tree.root())] = 1;
    auto from_parent = [&](int id) {
      if (id != tree.root() && down[static_cast<std::size_t>(tree.node(id).parent)] != 1) ++violations;
      if (id != tree.root()) down[static_cast<std::size_t>(id)]++;
    };
    Parallel(Threading{.threads = threads}, 1).disassemble(tree, from_parent, from_parent);
    EXPECT_EQ(violations, 0) << threads;
    for (const auto& u : up) EXPECT_EQ(u, 1);
    for (const auto& d : down) EXPECT_EQ(d, 1);
  }
}

TEST(Parallel, SubtreesAndUpperLevelsCoverTheTreeOnce) {
  const Model m = make_chain(1024, JointType::Spherical);  // a balanced tree of height 10
  // threads -> subtrees: one per thread for powers of two, otherwise four times the next power of two.
  for (const auto& [threads, subtrees] : {std::pair{1, 1u}, {2, 2u}, {3, 16u}, {4, 4u}, {8, 8u}}) {
    const AssemblyTree tree(m, Topology(m), threads);
    std::vector<int> seen(tree.nodes().size(), 0);
    for (const auto& s : tree.subtrees())
      for (int id : s) seen[static_cast<std::size_t>(id)]++;
    for (const auto& level : tree.upper_levels())
      for (int id : level) seen[static_cast<std::size_t>(id)]++;
    EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), static_cast<long>(seen.size())) << threads << " threads";
    EXPECT_EQ(tree.subtrees().size(), subtrees) << threads << " threads";
    EXPECT_EQ(tree.upper_levels().size(), static_cast<std::size_t>(std::log2(subtrees))) << threads << " threads";
  }
}

TEST(Parallel, ForEachCoversTheRange) {
  std::vector<int> hits(1000, 0);
  Parallel(Threading{.threads = 2}).for_each(1000, [&](int i) { hits[static_cast<std::size_t>(i)] += 1; });
  EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), 1000);
}

// lead_and_follow(): the leads in order, one at a time; each item followed exactly once, after
// the leads up to it (a follow reads what its lead wrote: here a chain, each value from the one
// before, as forward kinematics places a body from its parent); the same numbers for any thread
// count; on two and three threads the followers work while the lead goes on (its last item waits,
// up to 10 s, for a follow to have run); on one thread each item is followed right after its lead.
TEST(Parallel, LeadAndFollowFollowsEachItemOnceAfterTheLeadsUpToIt) {
  constexpr int n = 1000;  // not a whole number of chunks
  auto run = [&](int threads, std::vector<double>& followed) {
    std::vector<double> chain(n, 0.0);
    std::vector<int> hits(n, 0);
    std::atomic<int> led{0}, follows{0}, out_of_order{0}, too_early{0}, before_the_last_lead{0};
    followed.assign(n, 0.0);
    Parallel(Threading{.threads = threads, .min_parallel_bodies = 2})
        .lead_and_follow(
            n,
            [&](int i) {
              if (led.load() != i) ++out_of_order;
              chain[static_cast<std::size_t>(i)] = i == 0 ? 1.0 : std::sqrt(chain[static_cast<std::size_t>(i) - 1] + i);
              if (threads > 1 && i == n - 1) {
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                while (follows.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
              }
              led.store(i + 1);
            },
            [&](int i) {
              const int seen = led.load();
              if (seen <= i) ++too_early;
              if (seen < n) ++before_the_last_lead;
              followed[static_cast<std::size_t>(i)] = chain[static_cast<std::size_t>(i)] / 3.0;
              ++hits[static_cast<std::size_t>(i)];
              ++follows;
            });
    EXPECT_EQ(out_of_order, 0) << threads;
    EXPECT_EQ(too_early, 0) << threads;
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), n) << threads;
    return before_the_last_lead.load();
  };
  std::vector<double> serial, threaded;
  EXPECT_EQ(run(1, serial), n - 1);  // serially: each item's lead, then its follow
  for (int threads : {2, 3}) {
    EXPECT_GT(run(threads, threaded), 0) << threads << " threads: no item was followed while the lead went on";
    EXPECT_EQ(threaded, serial) << threads;
  }
}

// lead_second_and_follow(): the leads in order on one thread; the seconds in order, one at a
// time, each after its lead and its predecessor's second (here a second chain that reads the
// lead's, as a chain's positions read the rotations and the parent's position); each item
// followed exactly once, after its second; the same numbers for any thread count. On two and
// three threads the seconds run while the lead goes on (the lead's last item waits, up to 10 s,
// for a second to have run); on one thread each item's lead, second and follow run in turn.
TEST(Parallel, LeadSecondAndFollowRunsEachStageAfterTheOneBefore) {
  constexpr int n = 1000;  // not a whole number of chunks
  auto run = [&](int threads, std::vector<double>& followed) {
    std::vector<double> lead_chain(n, 0.0), second_chain(n, 0.0);
    std::vector<int> hits(n, 0);
    std::atomic<int> led{0}, seconded{0}, out_of_order{0}, too_early{0}, seconds_during_lead{0}, follows_interleaved{0};
    followed.assign(n, 0.0);
    Parallel(Threading{.threads = threads, .min_parallel_bodies = 2})
        .lead_second_and_follow(
            n,
            [&](int i) {
              if (led.load() != i) ++out_of_order;
              lead_chain[static_cast<std::size_t>(i)] = i == 0 ? 1.0 : std::sqrt(lead_chain[static_cast<std::size_t>(i) - 1] + i);
              if (threads > 1 && i == n - 1) {
                const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
                while (seconded.load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
              }
              led.store(i + 1);
            },
            [&](int i) {
              if (seconded.load() != i) ++out_of_order;
              if (led.load() <= i) ++too_early;
              if (led.load() < n) ++seconds_during_lead;
              second_chain[static_cast<std::size_t>(i)] =
                  lead_chain[static_cast<std::size_t>(i)] + (i == 0 ? 0.0 : 0.5 * second_chain[static_cast<std::size_t>(i) - 1]);
              seconded.store(i + 1);
            },
            [&](int i) {
              const int seen = seconded.load();
              if (seen <= i) ++too_early;
              if (seen < n) ++follows_interleaved;
              followed[static_cast<std::size_t>(i)] = second_chain[static_cast<std::size_t>(i)] / 3.0;
              ++hits[static_cast<std::size_t>(i)];
            });
    EXPECT_EQ(out_of_order, 0) << threads;
    EXPECT_EQ(too_early, 0) << threads;
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), n) << threads;
    return std::pair{seconds_during_lead.load(), follows_interleaved.load()};
  };
  std::vector<double> serial, threaded;
  EXPECT_EQ(run(1, serial), std::pair(n - 1, n - 1));  // serially: each item's lead, second, then follow
  for (int threads : {2, 3}) {
    EXPECT_GT(run(threads, threaded).first, 0) << threads << " threads: no second ran while the lead went on";
    EXPECT_EQ(threaded, serial) << threads;
  }
}

// An exception thrown by a node's or an item's work inside a parallel region (a body whose
// tangent is indefinite, a non-finite state) must reach the caller as it does in a serial run,
// not end the process: OpenMP terminates on an exception that leaves a region.
TEST(Parallel, AnExceptionInsideAParallelRegionReachesTheCaller) {
  const Model m = make_chain(Threading::kDefaultMinParallelBodies * 2, JointType::Spherical);
  const Topology topology(m);
  for (int threads : {1, 2}) {
    const AssemblyTree tree(m, topology, threads);
    const Parallel par(Threading{.threads = threads});
    const int failing = static_cast<int>(tree.nodes().size()) - 3;  // deep in the last subtree
    auto throw_at = [&](int id) {
      if (id == failing) throw std::runtime_error("node " + std::to_string(id));
    };
    EXPECT_THROW(par.assemble(tree, throw_at, throw_at), std::runtime_error) << threads;
    EXPECT_THROW(par.disassemble(tree, throw_at, throw_at), std::runtime_error) << threads;
    auto nothing = [](int) {};
    EXPECT_THROW(par.pass(tree, m.body_count(), nothing, throw_at, throw_at, [] {}, nothing, nothing), std::runtime_error)
        << threads << " threads, assembly of pass()";
    EXPECT_THROW(par.pass(tree, m.body_count(), nothing, nothing, nothing, [] { throw std::runtime_error("root"); },
                          nothing, nothing),
                 std::runtime_error)
        << threads << " threads, root of pass()";
    EXPECT_THROW(par.for_each(m.body_count(), [&](int i) {
                   if (i == m.body_count() - 1) throw std::runtime_error("item");
                 }),
                 std::runtime_error)
        << threads;
    auto throw_at_item = [&](int at) {
      return [&, at](int i) {
        if (i == at) throw std::runtime_error("item " + std::to_string(i));
      };
    };
    for (int at : {0, m.body_count() / 2, m.body_count() - 1}) {  // the followers must not wait for ever
      EXPECT_THROW(par.lead_and_follow(m.body_count(), throw_at_item(at), nothing), std::runtime_error)
          << threads << " threads, lead " << at;
      EXPECT_THROW(par.lead_and_follow(m.body_count(), nothing, throw_at_item(at)), std::runtime_error)
          << threads << " threads, follow " << at;
      EXPECT_THROW(par.lead_second_and_follow(m.body_count(), throw_at_item(at), nothing, nothing), std::runtime_error)
          << threads << " threads, lead of three stages " << at;
      EXPECT_THROW(par.lead_second_and_follow(m.body_count(), nothing, throw_at_item(at), nothing), std::runtime_error)
          << threads << " threads, second " << at;
      EXPECT_THROW(par.lead_second_and_follow(m.body_count(), nothing, nothing, throw_at_item(at)), std::runtime_error)
          << threads << " threads, follow of three stages " << at;
    }
    // and the team is usable afterwards
    std::vector<int> hits(static_cast<std::size_t>(m.body_count()), 0);
    par.for_each(m.body_count(), [&](int i) { hits[static_cast<std::size_t>(i)] += 1; });
    EXPECT_EQ(std::count(hits.begin(), hits.end(), 1), m.body_count());
  }
}

// pass(): every before(i) ahead of every node, children before parents on the way up, the root's
// work after the whole assembly, parents before children on the way down, each exactly once;
// whether the upper levels are shared among threads (min_nodes 1), partly run with the root
// (4: with three threads, levels of 8 and 4 nodes shared, 2 and 1 not) or all run with it (1000).
TEST(Parallel, PassRunsItsPhasesInOrder) {
  const Model m = make_chain(Threading::kDefaultMinParallelBodies * 3, JointType::Spherical);
  const Topology topology(m);
  for (int threads : {1, 2, 3})
  for (int min_nodes : {1, 4, 1000}) {
    const AssemblyTree tree(m, topology, threads);
    const std::size_t n = tree.nodes().size();
    std::vector<std::atomic<int>> before(static_cast<std::size_t>(m.body_count())), up(n), down(n);
    std::atomic<int> violations{0}, roots{0};
    auto all_before = [&] {
      return std::all_of(before.begin(), before.end(), [](const std::atomic<int>& b) { return b == 1; });
    };
    auto on_up = [&](int id) {
      const AssemblyNode& a = tree.node(id);
      const bool children_done =
          a.is_leaf() || (up[static_cast<std::size_t>(a.left)] == 1 && up[static_cast<std::size_t>(a.right)] == 1);
      if (!all_before() || !children_done) ++violations;
      up[static_cast<std::size_t>(id)]++;
    };
    auto on_down = [&](int id) {
      if (roots != 1 || (id != tree.root() && down[static_cast<std::size_t>(tree.node(id).parent)] != 1)) ++violations;
      down[static_cast<std::size_t>(id)]++;
    };
    Parallel(Threading{.threads = threads}, min_nodes).pass(
        tree, m.body_count(), [&](int i) { before[static_cast<std::size_t>(i)]++; }, on_up, on_up,
        [&] {
          if (up[static_cast<std::size_t>(tree.root())] != 1) ++violations;
          roots++;
        },
        on_down, on_down);
    EXPECT_EQ(violations, 0) << threads << " threads, min_nodes " << min_nodes;
    EXPECT_EQ(roots, 1) << threads << " threads, min_nodes " << min_nodes;
    for (std::size_t id = 0; id < n; ++id)
      EXPECT_TRUE(up[id] == 1 && down[id] == 1) << threads << " threads, min_nodes " << min_nodes << ", node " << id;
  }
}

// The serial threshold is a setting: below it a tree runs serially whatever the threads, above
// it the parallel code runs, so that tests can exercise it on small models.
TEST(Parallel, TheSerialThresholdIsASetting) {
  const Model m = make_chain(16, JointType::Spherical);
  const Topology topology(m);
  const AssemblyTree tree(m, topology, 2);
  for (int min_bodies : {4, 1000}) {
    std::atomic<int> region_threads{0};
    std::vector<char> seen(64, 0);
    Parallel(Threading{.threads = 2, .min_parallel_bodies = min_bodies}, 1)
        .assemble(tree, [&](int) {
#pragma omp critical
          {
            const int t = omp_get_thread_num();
            if (!seen[static_cast<std::size_t>(t)]) ++region_threads;
            seen[static_cast<std::size_t>(t)] = 1;
          }
        }, [](int) {});
    EXPECT_EQ(region_threads, min_bodies < 16 ? 2 : 1) << "min_parallel_bodies " << min_bodies;
  }
}

// The library leaves the host program's CPU affinity alone unless asked to pin (the command-line
// tool asks).
TEST(Parallel, ThreadsAreNotPinnedUnlessAsked) {
  const Model m = make_chain(256, JointType::Spherical);
  const AssemblyTree tree(m, Topology(m), 2);
  cpu_set_t before, after;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  Parallel(Threading{.threads = 2}).assemble(tree, [](int) {}, [](int) {});
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

namespace {

// A clock the tests advance: the governor reads it around every call.
double fake_seconds = 0.0;
double fake_clock() { return fake_seconds; }

// `calls` calls through the governor, each costing `threaded` or `serial` seconds as it chooses.
void govern(ThreadGovernor& g, long calls, double threaded, double serial) {
  for (long k = 0; k < calls; ++k) {
    g.begin();
    fake_seconds += g.threaded() ? threaded : serial;
    g.end();
  }
}

// Calls until the governor has finished one more trial (or decided without one); the time then.
double until_decision(ThreadGovernor& g, double threaded, double serial) {
  const int trials = g.report().trials;
  for (long k = 0; k < 10'000'000 && g.report().trials == trials; ++k) govern(g, 1, threaded, serial);
  EXPECT_EQ(g.report().trials, trials + 1) << "no decision in ten million calls";
  return fake_seconds;
}

}  // namespace

// The governor times calls on the threads and on one thread and keeps the faster; it tries
// again after each stretch, so a machine that becomes busy (or idle) is followed.
TEST(ThreadGovernor, KeepsTheFasterOfThreadsAndOneThreadAndFollowsAChange) {
  ThreadGovernor g(fake_clock);
  EXPECT_TRUE(g.threaded());  // the first trial starts on the threads
  until_decision(g, 1e-3, 1.6e-3);  // an idle machine: threads faster
  EXPECT_TRUE(g.threaded());
  EXPECT_EQ(g.report().fallbacks, 0);
  EXPECT_NEAR(g.report().threaded_seconds, 1e-3, 1e-9);  // differences of a clock near 1e3 s
  EXPECT_NEAR(g.report().serial_seconds, 1.6e-3, 1e-9);
  EXPECT_EQ(g.notice(2), "");
  govern(g, 400, 1e-3, 1.6e-3);  // 0.4 s of the 0.5 s stretch: no trial in it
  EXPECT_EQ(g.report().trials, 1);
  // The machine becomes busy: threads four times slower than one. The next trial sees it.
  until_decision(g, 4e-3, 1e-3);
  EXPECT_FALSE(g.threaded());
  EXPECT_EQ(g.report().trials, 2);
  EXPECT_EQ(g.report().fallbacks, 1);
  EXPECT_NEAR(g.report().threaded_seconds, 4e-3, 1e-9);
  const std::string notice = g.notice(2);
  EXPECT_NE(notice.find("one thread was faster than 2 on this machine in 1 of 2 timings"), std::string::npos) << notice;
  EXPECT_NE(notice.find("4e+03 us a step or right-hand side on 2 threads, 1e+03 us on one"), std::string::npos) << notice;
  // Busy through the stretch: every pass of it on one thread.
  const long threaded_before = g.report().threaded_calls;
  govern(g, 400, 4e-3, 1e-3);
  EXPECT_EQ(g.report().threaded_calls, threaded_before);
  // Idle again: the next trial goes back to the threads.
  until_decision(g, 1e-3, 1.6e-3);
  EXPECT_TRUE(g.threaded());
}

// A stretch on the threads is timed as well: threads that a short trial flattered but that lose
// over the stretch give way to one thread at its end, without another trial.
TEST(ThreadGovernor, AStretchOnTheThreadsThatLosesGoesOnOnOneThread) {
  ThreadGovernor g(fake_clock);
  until_decision(g, 1e-3, 2e-3);
  ASSERT_TRUE(g.threaded());
  const long serial_before = g.report().serial_calls;
  until_decision(g, 3e-3, 2e-3);  // the stretch: threads at 3 ms against one thread's 2 ms
  EXPECT_FALSE(g.threaded());
  EXPECT_EQ(g.report().fallbacks, 1);
  EXPECT_NEAR(g.report().threaded_seconds, 3e-3, 1e-9);
  EXPECT_EQ(g.report().serial_calls, serial_before);  // no epoch on one thread was run for it
}

// A choice that trials confirm is tried less and less often: the stretch doubles from 0.5 s up to
// 16 s, so a steady machine pays for few trials.
TEST(ThreadGovernor, AConfirmedChoiceIsTriedLessOften) {
  ThreadGovernor g(fake_clock);
  double last = until_decision(g, 1e-3, 2e-3);
  // a trial: two epochs of 0.12 s (120 passes of 1 ms on the threads, 60 of 2 ms on one)
  const double trial = 0.24;
  double stretch = ThreadGovernor::kFirstStretch;
  for (int k = 0; k < 8; ++k) {
    const double t = until_decision(g, 1e-3, 2e-3);
    EXPECT_NEAR(t - last, stretch + trial, 0.01) << "trial " << k + 2;
    EXPECT_TRUE(g.threaded());
    stretch = std::min(2 * stretch, ThreadGovernor::kLongestStretch);
    last = t;
  }
  EXPECT_EQ(g.report().fallbacks, 0);
}

// Inside Parallel: passes on a machine where the threads are slower move to one thread, with the
// same results, and a Parallel told not to fall back (Threading::fallback) keeps its threads.
TEST(ThreadGovernor, ParallelPassesMoveToOneThreadWhenItIsFasterWithTheSameResults) {
  const Model m = make_chain(256, JointType::Spherical);
  const Topology topology(m);
  const AssemblyTree tree(m, topology, 2);
  for (const bool fallback : {true, false}) {
    const Parallel par(Threading{.threads = 2, .fallback = fallback}, 2, fake_clock);
    // The pass's formula (sin at the leaves, a non-associative combination above), whose root
    // also advances the clock by the pass's cost: the threads four times slower than one.
    auto run = [&](const Parallel& p, std::vector<double>& value, int pass, bool timed) {
      std::atomic<bool> in_parallel{false};
      p.assemble(
          tree,
          [&](int id) {
            if (omp_in_parallel()) in_parallel = true;
            value[static_cast<std::size_t>(id)] = std::sin(1.0 + tree.node(id).body + pass);
          },
          [&](int id) {
            const AssemblyNode& n = tree.node(id);
            value[static_cast<std::size_t>(id)] =
                value[static_cast<std::size_t>(n.left)] / 3.0 + std::sqrt(1.0 + value[static_cast<std::size_t>(n.right)]);
            if (timed && id == tree.root()) fake_seconds += omp_in_parallel() ? 4e-3 : 1e-3;
          });
      return in_parallel.load();
    };
    long threaded_passes = 0, serial_passes = 0;
    std::vector<double> value(tree.nodes().size()), serial(tree.nodes().size());
    for (int pass = 0; pass < 3 * ThreadGovernor::kEpochCalls; ++pass) {
      (run(par, value, pass, true) ? threaded_passes : serial_passes)++;
      run(Parallel(Threading{.threads = 1}), serial, pass, false);
      ASSERT_EQ(value, serial) << "pass " << pass;  // the same numbers on either
    }
    if (fallback) {
      ASSERT_NE(par.governor(), nullptr);
      // the trial's epoch on the threads (60 passes, 0.24 s), on one (120 passes: 0.1 s at least), and no more
      EXPECT_EQ(threaded_passes, ThreadGovernor::kEpochCalls);
      EXPECT_EQ(serial_passes, 2 * ThreadGovernor::kEpochCalls);
      EXPECT_EQ(par.governor()->report().fallbacks, 1);
    } else {
      EXPECT_EQ(par.governor(), nullptr);
      EXPECT_EQ(threaded_passes, 3 * ThreadGovernor::kEpochCalls);
    }
  }
}

// Inside a Parallel::TimedCall the governor times the call as a whole: what the threads lose
// between the passes counts. Here the passes gain on the threads (1 ms against 2 ms) but the rest
// of the call loses (4 ms against 0.5 ms: a slow core under a serial sweep's followers), so the
// call is faster on one thread (5 against 2.5 ms) and the governor chooses it; timed pass by
// pass, it kept the threads. Passes outside any call, once a call has been timed, are not timed.
TEST(ThreadGovernor, ATimedCallIsTimedAsAWholeAndItsPassesAreNot) {
  const Model m = make_chain(256, JointType::Spherical);
  const Topology topology(m);
  const AssemblyTree tree(m, topology, 2);
  auto pass = [&](const Parallel& p) {
    p.assemble(tree, [](int) {}, [&](int id) {
      if (id == tree.root()) fake_seconds += omp_in_parallel() ? 1e-3 : 2e-3;
    });
  };
  auto call = [&](const Parallel& p, bool timed_as_one) {
    std::optional<Parallel::TimedCall> timed;
    if (timed_as_one) timed.emplace(p, m.body_count());
    pass(p);
    fake_seconds += p.serial(m.body_count()) ? 0.5e-3 : 4e-3;  // the work between the passes
  };
  for (const bool timed_as_one : {true, false}) {
    const Parallel par(Threading{.threads = 2}, 2, fake_clock);
    const long calls = 3 * ThreadGovernor::kEpochCalls;
    for (long k = 0; k < calls; ++k) call(par, timed_as_one);
    const ThreadGovernor::Report& report = par.governor()->report();
    EXPECT_EQ(report.threaded_calls + report.serial_calls, calls);  // one timing per call, not per pass
    ASSERT_EQ(report.trials, 1);
    if (timed_as_one) {
      EXPECT_EQ(report.fallbacks, 1);
      EXPECT_FALSE(par.governor()->threaded());
      EXPECT_NEAR(report.threaded_seconds, 5e-3, 1e-9);
      EXPECT_NEAR(report.serial_seconds, 2.5e-3, 1e-9);
      pass(par);  // a pass outside a call (a snapshot's): not timed
      EXPECT_EQ(report.threaded_calls + report.serial_calls, calls);
    } else {
      EXPECT_EQ(report.fallbacks, 0);  // the passes alone: the threads looked faster
      EXPECT_TRUE(par.governor()->threaded());
      EXPECT_NEAR(report.threaded_seconds, 1e-3, 1e-9);
    }
  }
}

// A call over fewer bodies than Threading::min_parallel_bodies is not timed, and a call inside a
// call is part of it.
TEST(ThreadGovernor, SmallAndNestedCallsAreNotTimedOnTheirOwn) {
  const Model m = make_chain(256, JointType::Spherical);
  const Topology topology(m);
  const AssemblyTree tree(m, topology, 2);
  const Parallel par(Threading{.threads = 2, .min_parallel_bodies = 64}, 2, fake_clock);
  const ThreadGovernor::Report& report = par.governor()->report();
  { const Parallel::TimedCall small(par, 63); }
  EXPECT_EQ(report.threaded_calls, 0);
  {
    const Parallel::TimedCall outer(par, 256);
    { const Parallel::TimedCall inner(par, 256); }
    par.assemble(tree, [](int) {});
    EXPECT_EQ(report.threaded_calls, 0);
  }
  EXPECT_EQ(report.threaded_calls, 1);
}
