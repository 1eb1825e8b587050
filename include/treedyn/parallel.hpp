// treedyn — bottom-up and top-down passes over the AssemblyTree, serial or with OpenMP threads.
//
// A pass visits every node after its children (assemble) or before them (disassemble). The tree
// is cut into independent subtrees (AssemblyTree::subtrees) that threads share with a static
// schedule, each visited depth-first for cache locality; the levels above them follow one at a
// time. A node's work reads only its children (assemble) or its parent (disassemble) and writes
// only its own workspace, so results do not depend on the number of threads: the same operations
// run on every node. Reductions over nodes are left to the caller, done serially in node order.
// An exception thrown by a node's or an item's work reaches the caller once the pass has ended,
// as in a serial run (RegionErrors).
#pragma once

#include <algorithm>
#include <atomic>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "treedyn/threading.hpp"
#include "treedyn/topology.hpp"

namespace treedyn {

/// Pins OpenMP's worker threads (the k-th to the k-th CPU this process may use; thread 0 is the
/// caller), once per team size, unless OMP_PROC_BIND is set. Only when asked (Threading::pin). Threads that migrate between cores lose the subtrees' data
/// in their caches; on a two-core machine pinning makes two threads 1.5x faster instead of at
/// times slower than one.
void pin_threads(int threads);
/// After pin_threads: lets the calling thread run on every CPU it could before (pinned = false;
/// a stretch on one thread, which a busy core would otherwise halve) or pins it back to its CPU.
/// Nothing if pin_threads has not pinned it.
void pin_caller(bool pinned);

/// The first exception thrown by the work of a parallel region, kept to be rethrown once the
/// region has ended: an exception must not leave an OpenMP region (the process would end). Work
/// items after it are skipped, but every thread still reaches the region's barriers. Which
/// thread's exception is kept when several throw at once is not defined.
class RegionErrors {
 public:
  template <class F>
  void run(F&& f) noexcept {
    if (failed_.load(std::memory_order_relaxed)) return;
    try {
      f();
    } catch (...) {
      keep(std::current_exception());
    }
  }
  /// After the region: throws the kept exception, if any.
  void rethrow() const {
    if (first_) std::rethrow_exception(first_);
  }

 private:
  void keep(std::exception_ptr e) noexcept {
#pragma omp critical(treedyn_region_errors)
    if (!first_) first_ = std::move(e);
    failed_.store(true, std::memory_order_relaxed);
  }
  std::exception_ptr first_;
  std::atomic<bool> failed_{false};
};

/// Chooses, from measured time, whether a Parallel's passes run on its threads or on one
/// (Threading::fallback). On a machine whose other cores are busy, threads wait for each other at
/// every barrier: on the two-core development VM with both cores taken by other programs, two
/// threads ran an ali3 run of the 1024-body chain 2.2 times slower than one (docs/benchmarks.md).
///
/// What it times is a call: a formulation's whole right-hand side or step (Parallel::TimedCall),
/// or a pass where no call is timed. A trial times an epoch of calls on the threads, then one on
/// one thread, and the faster runs
/// for the next stretch (kFirstStretch seconds; a choice a trial confirms doubles the stretch up
/// to kLongestStretch, a changed one goes back to kFirstStretch), so a machine that becomes busy
/// or idle is followed. A stretch on the threads is timed too: one slower than the last trial's
/// epoch on one thread goes on on one thread without a trial (a short epoch can flatter threads).
/// An epoch lasts at least kEpochSeconds and kEpochCalls calls, a whole number of kEpochCalls
/// (where passes are the calls, formulations make them in cycles of different sizes, up to six),
/// and its first kWarmupCalls are not timed: after a switch the threads wake, caches refill, and
/// the scheduler briefly favours threads that slept, which made two threads look faster than one
/// on a busy machine in 60-pass epochs. Timing passes alone misses the serial work between them:
/// when one core runs slow, hdca's passes still gained on two threads while its whole right-hand
/// side lost (docs/benchmarks.md, session 33). The clock is read twice a call (tens of
/// nanoseconds against the calls' tens of microseconds and more). The same operations run on
/// every node either way, so results do not depend on the choice.
class ThreadGovernor {
 public:
  static constexpr int kEpochCalls = 60;
  static constexpr int kWarmupCalls = 15;
  static constexpr double kEpochSeconds = 0.1;
  static constexpr double kFirstStretch = 0.5, kLongestStretch = 16.0;  // seconds
  /// Seconds since any fixed instant; tests inject their own.
  using Clock = double (*)();
  explicit ThreadGovernor(Clock clock = nullptr);

  /// Whether the next call runs on the threads.
  bool threaded() const { return threaded_; }
  /// Around every call (not nested): begin() before, end() after.
  void begin() { started_ = clock_(); }
  void end();

  struct Report {
    long threaded_calls = 0, serial_calls = 0;  // calls run on the threads and on one
    int trials = 0, fallbacks = 0;              // trials finished, and those that chose one thread
    double threaded_seconds = 0.0, serial_seconds = 0.0;  // per call, in the last trial
  };
  const Report& report() const { return report_; }
  /// What a run should be told when one thread was faster in any trial (empty otherwise).
  std::string notice(int threads) const;

 private:
  enum class Phase { Threaded, Serial, Settled };
  void start_epoch(Phase phase, double now);
  void end_epoch(double now);
  void end_stretch(double now);
  /// Runs the threads (or one thread) for the next stretch.
  void choose(bool threads, double now);

  Clock clock_;
  Phase phase_ = Phase::Threaded;
  bool threaded_ = true, started_epochs_ = false;
  bool last_choice_threaded_ = true;
  long epoch_calls_ = 0, timed_calls_ = 0;
  double epoch_start_ = 0.0, stretch_end_ = 0.0, stretch_ = kFirstStretch;
  double started_ = 0.0, timed_seconds_ = 0.0, stretch_seconds_ = 0.0;
  long stretch_calls_ = 0;
  Report report_;
};

class Parallel {
 public:
  /// threads <= 1: serial. Levels with fewer nodes than `min_parallel_nodes` run serially.
  /// `clock`: the governor's (tests; null: std::chrono::steady_clock).
  explicit Parallel(const Threading& threading = {}, int min_parallel_nodes = 4, ThreadGovernor::Clock clock = nullptr)
      : threads_(std::max(1, threading.threads)),
        min_parallel_bodies_(std::max(1, threading.min_parallel_bodies)),
        min_parallel_nodes_(std::max(1, min_parallel_nodes)),
        pin_(threading.pin),
        govern_(threads_ > 1 && threading.fallback),
        governor_(clock) {}

  int threads() const { return threads_; }
  /// The choice between the threads and one thread, when made (Threading::fallback and more than
  /// one thread); nullptr otherwise.
  const ThreadGovernor* governor() const { return govern_ ? &governor_ : nullptr; }

  /// Around a whole call of a formulation (a right-hand side, a step) over `bodies` bodies: the
  /// governor times the call as one, not the passes inside it one by one, so that what the
  /// threads gain or lose outside the passes (lead_and_follow's sweeps, for_each, the serial work
  /// between them) counts in its choice. Once a Parallel has timed a call, passes outside any call
  /// (a snapshot's) are no longer timed: they would mix other sizes into the trials' epochs.
  /// Calls do not nest in effect (an inner one is part of the outer); bodies below
  /// Threading::min_parallel_bodies: not timed. Lives on the calling thread's stack, within the
  /// Parallel's lifetime.
  class TimedCall {
   public:
    TimedCall(const Parallel& parallel, int bodies) : timed_(parallel, bodies >= parallel.min_parallel_bodies_, true) {}

   private:
    friend class Parallel;
    struct Scope {
      Scope(const Parallel& parallel, bool large, bool call);
      ~Scope();
      Scope(const Scope&) = delete;
      Scope& operator=(const Scope&) = delete;
      const Parallel* parallel;  // null: not timed
    };
    Scope timed_;
  };

  /// True if for_each(count, f) would run on this thread alone (one thread, fewer items than
  /// Threading::min_parallel_bodies, or the governor's choice of one thread): a caller may then
  /// fold the loop into a serial one that reads the same data.
  bool serial(int count) const { return threads_ == 1 || count < min_parallel_bodies_ || !on_threads(); }

  /// f(i) for i in [0, count) (serially below Threading::min_parallel_bodies items).
  template <class F>
  void for_each(int count, F&& f) const {
    if (serial(count)) {
      for (int i = 0; i < count; ++i) f(i);
      return;
    }
    pin();
    RegionErrors errors;
#pragma omp parallel for num_threads(threads_) schedule(static)
    for (int i = 0; i < count; ++i) errors.run([&] { f(i); });
    errors.rethrow();
  }

  /// lead(i) for i in [0, count) in that order, on the calling thread, and follow(i) for every i,
  /// on any thread, once lead(0) ... lead(i) have run. For a sweep that must run in order (forward
  /// kinematics: each body's pose needs its parent's) followed by work that each item needs only
  /// once it is swept: the other threads do that work behind the sweep, in chunks of kFollowChunk
  /// items, instead of waiting for the whole sweep. Serially (one thread, few items, the
  /// governor's choice): lead(i), then follow(i), for each i in turn (what a follow reads is still
  /// in cache). The same operations on every item either way, so results do not depend on the
  /// threads, as long as no lead reads what a follow writes.
  template <class Lead, class Follow>
  void lead_and_follow(int count, Lead&& lead, Follow&& follow) const {
    if (serial(count)) {
      for (int i = 0; i < count; ++i) {
        lead(i);
        follow(i);
      }
      return;
    }
    pin();
    RegionErrors errors;
    std::atomic<int> led{0}, claimed{0};  // leads done (published by chunks); follows handed out
#pragma omp parallel num_threads(threads_)
    {
#pragma omp masked
      run_lead(count, lead, led, errors);
      run_follows(count, claimed, led, follow, errors);
    }
    errors.rethrow();
  }
  /// lead_and_follow with the sweep in two stages: lead(i) for i in order on the calling thread,
  /// second(i) for i in order on one thread once lead(i) has run, and follow(i) on any thread once
  /// second(i) has run. For a sweep whose serial chain is only part of its work (placing a chain:
  /// each rotation matrix needs its parent's; the positions and the joints' columns need the
  /// rotations and their parents' positions, a chain of additions): the lead keeps only the
  /// chain, a second thread does the rest behind it, and the others follow (the second thread
  /// too, while it waits for the lead). Serially: lead(i), second(i), follow(i) for each i in turn.
  /// Results do not depend on the threads as long as no lead reads what a second or follow writes
  /// and no second reads what a follow writes. A team of one thread (OpenMP gave fewer than
  /// asked) runs the three in turn: the lead's thread takes the second stage when no other has.
  template <class Lead, class Second, class Follow>
  void lead_second_and_follow(int count, Lead&& lead, Second&& second, Follow&& follow) const {
    if (serial(count)) {
      for (int i = 0; i < count; ++i) {
        lead(i);
        second(i);
        follow(i);
      }
      return;
    }
    pin();
    RegionErrors errors;
    std::atomic<int> led{0}, seconded{0}, claimed{0};  // leads and seconds done (by chunks); follows handed out
    std::atomic<bool> second_taken{false};
    // The second stage's thread follows while it waits for the lead, but only chunks already
    // through its own stage: it never waits for itself.
    auto follow_seconded = [&] {
      int begin = claimed.load(std::memory_order_relaxed);
      while (begin < count && std::min(begin + kFollowChunk, count) <= seconded.load(std::memory_order_acquire))
        if (claimed.compare_exchange_weak(begin, begin + kFollowChunk, std::memory_order_relaxed)) {
          follow_chunk(begin, count, follow, errors);
          return true;
        }
      return false;
    };
    auto run_second = [&] {
      for (int begin = 0; begin < count; begin += kFollowChunk) {
        const int end = std::min(begin + kFollowChunk, count);
        for (int spins = 0; led.load(std::memory_order_acquire) < end; ++spins)
          if (!follow_seconded()) wait(spins);
        for (int i = begin; i < end; ++i) errors.run([&] { second(i); });  // after an exception: skipped, still published
        seconded.store(end, std::memory_order_release);
      }
    };
#pragma omp parallel num_threads(threads_)
    {
#pragma omp masked
      run_lead(count, lead, led, errors);
      if (!second_taken.exchange(true, std::memory_order_relaxed)) run_second();
      run_follows(count, claimed, seconded, follow, errors);
    }
    errors.rethrow();
  }
  /// A sweep's lead(i) in order, published to `led` by chunks of kFollowChunk items (after an
  /// exception the leads are skipped but still published, so that no follower waits for ever).
  template <class Lead>
  static void run_lead(int count, Lead& lead, std::atomic<int>& led, RegionErrors& errors) {
    for (int i = 0; i < count; ++i) {
      errors.run([&] { lead(i); });
      if ((i + 1) % kFollowChunk == 0) led.store(i + 1, std::memory_order_release);
    }
    led.store(count, std::memory_order_release);
  }
  /// A sweep's follow-up work on this thread: chunks of kFollowChunk items handed out by
  /// `claimed`, each followed once `ready` (the stage before, published by chunks) has passed it.
  template <class Follow>
  static void run_follows(int count, std::atomic<int>& claimed, const std::atomic<int>& ready, Follow& follow,
                          RegionErrors& errors) {
    for (;;) {
      const int begin = claimed.fetch_add(kFollowChunk, std::memory_order_relaxed);
      if (begin >= count) break;
      for (int spins = 0; ready.load(std::memory_order_acquire) < std::min(begin + kFollowChunk, count); ++spins) wait(spins);
      follow_chunk(begin, count, follow, errors);
    }
  }
  /// follow(i) for the chunk of items from `begin` (kFollowChunk of them, fewer at the end).
  template <class Follow>
  static void follow_chunk(int begin, int count, Follow& follow, RegionErrors& errors) {
    for (int i = begin, end = std::min(begin + kFollowChunk, count); i < end; ++i) errors.run([&] { follow(i); });
  }
  /// Items a follower takes at a time: enough that the lead's stores and the followers' loads
  /// rarely share a cache line, few enough that the followers start soon after the lead.
  static constexpr int kFollowChunk = 32;

  /// leaf(id) for every leaf and inner(id) for every inner node, children before parents.
  /// Subtrees run depth-first (what a node needs from its children is still in cache) and are
  /// shared among threads; the few levels above them run level by level.
  template <class Leaf, class Inner>
  void assemble(const AssemblyTree& tree, Leaf&& leaf, Inner&& inner) const {
    const Governed timed(*this, tree);
    if (serial(tree)) return assemble_serially(tree, leaf, inner);
    pin();
    RegionErrors errors;
#pragma omp parallel num_threads(threads_)
    up(tree, leaf, inner, errors, true, tree.upper_levels().size());
    errors.rethrow();
  }

  /// inner(id) for every inner node and leaf(id) for every leaf, parents before children (the
  /// reverse of assemble()).
  template <class Inner, class Leaf>
  void disassemble(const AssemblyTree& tree, Inner&& inner, Leaf&& leaf) const {
    const Governed timed(*this, tree);
    if (serial(tree)) return disassemble_serially(tree, inner, leaf);
    pin();
    RegionErrors errors;
#pragma omp parallel num_threads(threads_)
    down(tree, inner, leaf, errors, tree.upper_levels().size());
    errors.rethrow();
  }

  /// A whole pass in one parallel region: before(i) for i in [0, count) (what the nodes read, such
  /// as joint rows), assemble(leaf_up, inner_up), root() on one thread, then
  /// disassemble(inner_down, leaf_down). The phases are separated by barriers; the region is
  /// forked and joined once instead of three times (a fork and join costs two to four barriers).
  /// The levels too small to share at the top of the tree run on the root's thread, up, root and
  /// down in one `single` (with two threads: the root's level, so two barriers fewer per pass).
  template <class Before, class LeafUp, class InnerUp, class Root, class InnerDown, class LeafDown>
  void pass(const AssemblyTree& tree, int count, Before&& before, LeafUp&& leaf_up, InnerUp&& inner_up, Root&& root,
            InnerDown&& inner_down, LeafDown&& leaf_down) const {
    const Governed timed(*this, tree);
    if (serial(tree)) {
      for (int i = 0; i < count; ++i) before(i);
      assemble_serially(tree, leaf_up, inner_up);
      root();
      disassemble_serially(tree, inner_down, leaf_down);
      return;
    }
    pin();
    RegionErrors errors;
    const auto& upper = tree.upper_levels();
    const std::size_t top = serial_top(upper);
#pragma omp parallel num_threads(threads_)
    {
#pragma omp for schedule(static)
      for (int i = 0; i < count; ++i) errors.run([&] { before(i); });
      up(tree, leaf_up, inner_up, errors, false, top);
#pragma omp single
      {  // the small levels at the top, the root and back down: one thread, one barrier
        for (std::size_t l = top; l < upper.size(); ++l)
          for (int id : upper[l]) errors.run([&] { inner_up(id); });
        errors.run(root);
        for (std::size_t l = upper.size(); l-- > top;)
          for (int id : upper[l]) errors.run([&] { inner_down(id); });
      }
      down(tree, inner_down, leaf_down, errors, top);
    }
    errors.rethrow();
  }

  /// Inner nodes only.
  template <class Inner>
  void assemble(const AssemblyTree& tree, Inner&& inner) const {
    assemble(tree, [](int) {}, inner);
  }
  template <class Inner>
  void disassemble(const AssemblyTree& tree, Inner&& inner) const {
    disassemble(tree, inner, [](int) {});
  }

 private:
  /// Times one pass for the governor, unless it is inside a TimedCall, the tree is too small to
  /// share among the threads, or calls are timed instead (TimedCall).
  struct Governed : TimedCall::Scope {
    Governed(const Parallel& parallel, const AssemblyTree& tree) : Scope(parallel, !parallel.small(tree), false) {}
  };

  template <class Leaf, class Inner>
  static void assemble_serially(const AssemblyTree& tree, Leaf& leaf, Inner& inner) {
    for (const auto& s : tree.subtrees())
      for (int id : s) tree.link(id).is_leaf() ? leaf(id) : inner(id);
    for (const auto& level : tree.upper_levels())
      for (int id : level) inner(id);
  }
  template <class Inner, class Leaf>
  static void disassemble_serially(const AssemblyTree& tree, Inner& inner, Leaf& leaf) {
    const auto& upper = tree.upper_levels();
    for (auto level = upper.rbegin(); level != upper.rend(); ++level)
      for (int id : *level) inner(id);
    for (const auto& s : tree.subtrees())
      for (auto id = s.rbegin(); id != s.rend(); ++id) tree.link(*id).is_leaf() ? leaf(*id) : inner(*id);
  }

  /// A follower's wait for the lead (lead_and_follow), its spins-th: a pause while it is short (a
  /// chunk's lead takes microseconds), then the CPU given up to another thread, so that more
  /// threads than cores (the lead's own core taken by a spinning follower) do not stall for a
  /// scheduler's time slice.
  static void wait(int spins) {
    if (spins >= kSpinsBeforeYield) {
      std::this_thread::yield();
      return;
    }
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
  }
  static constexpr int kSpinsBeforeYield = 4000;  // about 0.1 ms of pauses on current x86 cores

  /// Pins the team before the first parallel region, so that a Parallel whose work stays serial
  /// (small models) leaves the process's threads where the system puts them.
  void pin() const {
    if (!pin_) return;
    if (!pinned_) {
      pin_threads(threads_);
      pinned_ = true;
    } else if (caller_released_) {
      pin_caller(true);
      caller_released_ = false;
    }
  }

  /// Fewer bodies than Threading::min_parallel_bodies (a tree of n bodies has 2 n - 1 nodes).
  bool small(const AssemblyTree& tree) const {
    return tree.nodes().size() < 2 * static_cast<std::size_t>(min_parallel_bodies_) - 1;
  }
  bool serial(const AssemblyTree& tree) const {
    if (threads_ == 1 || small(tree)) return true;
    return !on_threads();
  }
  /// The governor's choice; a stretch on one thread frees the calling thread from its pinned
  /// CPU, which another program may be using (pin() pins it back before the threads run).
  bool on_threads() const {
    if (!govern_ || governor_.threaded()) return true;
    if (pinned_ && !caller_released_) {
      pin_caller(false);
      caller_released_ = true;
    }
    return false;
  }

  /// The first of the upper levels from which on every level is too small to share among threads
  /// (upper.size() if the root's level is not): pass() runs them, the root and back in one
  /// `single`, which saves two barriers per level.
  std::size_t serial_top(const std::vector<std::vector<int>>& upper) const {
    std::size_t top = upper.size();
    while (top > 0 && static_cast<int>(upper[top - 1].size()) < min_parallel_nodes_) --top;
    return top;
  }

  /// The assembly's work of one thread inside a parallel region: its share of the subtrees, then
  /// the upper levels below `end`. The last level ends at a barrier unless `last_in_region` (the
  /// region's own end waits for it).
  template <class Leaf, class Inner>
  void up(const AssemblyTree& tree, Leaf& leaf, Inner& inner, RegionErrors& errors, bool last_in_region,
          std::size_t end) const {
    const auto& subtrees = tree.subtrees();
    const auto& upper = tree.upper_levels();
    auto guarded_inner = [&](int id) { errors.run([&] { inner(id); }); };
#pragma omp for schedule(static)
    for (int k = 0; k < static_cast<int>(subtrees.size()); ++k)
      for (int id : subtrees[static_cast<std::size_t>(k)])
        errors.run([&] { tree.link(id).is_leaf() ? leaf(id) : inner(id); });
    for (std::size_t l = 0; l < end; ++l) run_level(upper[l], guarded_inner, last_in_region && l + 1 == end);
  }

  /// The disassembly's work of one thread inside a parallel region: the upper levels below `end`,
  /// then its share of the subtrees, without a final barrier (the region's end is one).
  template <class Inner, class Leaf>
  void down(const AssemblyTree& tree, Inner& inner, Leaf& leaf, RegionErrors& errors, std::size_t end) const {
    const auto& subtrees = tree.subtrees();
    const auto& upper = tree.upper_levels();
    auto guarded_inner = [&](int id) { errors.run([&] { inner(id); }); };
    for (std::size_t l = end; l-- > 0;) run_level(upper[l], guarded_inner, false);
#pragma omp for schedule(static) nowait
    for (int k = 0; k < static_cast<int>(subtrees.size()); ++k) {
      const auto& s = subtrees[static_cast<std::size_t>(k)];
      for (auto id = s.rbegin(); id != s.rend(); ++id) errors.run([&] { tree.link(*id).is_leaf() ? leaf(*id) : inner(*id); });
    }
  }

  /// One level inside a parallel region. The implicit barrier of `omp for` / `omp single` ends
  /// it, except for the region's last level, which the region's own end waits for.
  template <class F>
  void run_level(const std::vector<int>& level, F& f, bool last) const {
    const int count = static_cast<int>(level.size());
    if (count < min_parallel_nodes_ && last) {
#pragma omp single nowait
      for (int id : level) f(id);
    } else if (count < min_parallel_nodes_) {
#pragma omp single
      for (int id : level) f(id);
    } else if (last) {
#pragma omp for schedule(static) nowait
      for (int i = 0; i < count; ++i) f(level[static_cast<std::size_t>(i)]);
    } else {
#pragma omp for schedule(static)
      for (int i = 0; i < count; ++i) f(level[static_cast<std::size_t>(i)]);
    }
  }

  int threads_;
  int min_parallel_bodies_;
  int min_parallel_nodes_;
  bool pin_;
  bool govern_;
  mutable bool pinned_ = false;  // set from the calling thread, before any region
  mutable bool caller_released_ = false;  // unpinned for a stretch on one thread (on_threads)
  mutable ThreadGovernor governor_;
  mutable int timing_depth_ = 0;      // TimedCalls open: only the outermost is timed, and no pass inside
  mutable bool calls_timed_ = false;  // a TimedCall has been timed: passes outside calls are not
};

inline Parallel::TimedCall::Scope::Scope(const Parallel& p, bool large, bool call)
    : parallel(p.govern_ && large && (call || (p.timing_depth_ == 0 && !p.calls_timed_)) ? &p : nullptr) {
  if (!parallel) return;
  if (p.timing_depth_++ == 0) p.governor_.begin();
  if (call) p.calls_timed_ = true;
}

inline Parallel::TimedCall::Scope::~Scope() {
  if (parallel && --parallel->timing_depth_ == 0) parallel->governor_.end();
}

}  // namespace treedyn
