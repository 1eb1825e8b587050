// The choice between a Parallel's threads and one thread, from measured time (parallel.hpp).
#include <algorithm>
#include <chrono>
#include <cstdio>

#include "treedyn/parallel.hpp"

namespace treedyn {
namespace {

double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

ThreadGovernor::ThreadGovernor(Clock clock) : clock_(clock ? clock : steady_seconds) {}

void ThreadGovernor::start_epoch(Phase phase, double now) {
  phase_ = phase;
  threaded_ = phase == Phase::Threaded;
  epoch_calls_ = timed_calls_ = 0;
  timed_seconds_ = 0.0;
  epoch_start_ = now;
}

void ThreadGovernor::end() {
  (threaded_ ? report_.threaded_calls : report_.serial_calls)++;
  const double now = clock_();
  if (!started_epochs_) {  // the first call starts the first epoch (a governor made long before it ran)
    started_epochs_ = true;
    start_epoch(Phase::Threaded, started_);
  }
  if (phase_ == Phase::Settled) {
    stretch_seconds_ += now - started_;
    ++stretch_calls_;
    if (now >= stretch_end_) end_stretch(now);
    return;
  }
  if (++epoch_calls_ > kWarmupCalls) {
    timed_seconds_ += now - started_;
    ++timed_calls_;
  }
  if (epoch_calls_ % kEpochCalls == 0 && now - epoch_start_ >= kEpochSeconds) end_epoch(now);
}

void ThreadGovernor::end_stretch(double now) {
  const double per_call = stretch_seconds_ / static_cast<double>(stretch_calls_);
  stretch_seconds_ = 0.0;
  stretch_calls_ = 0;
  if (threaded_ && per_call > report_.serial_seconds) {  // the threads lost over the stretch: one thread, no trial
    report_.threaded_seconds = per_call;
    ++report_.trials;
    ++report_.fallbacks;
    choose(false, now);
    return;
  }
  start_epoch(Phase::Threaded, now);
}

void ThreadGovernor::choose(bool threads, double now) {
  const bool same_choice = report_.trials > 1 && threads == last_choice_threaded_;
  stretch_ = same_choice ? std::min(2.0 * stretch_, kLongestStretch) : kFirstStretch;
  last_choice_threaded_ = threads;
  phase_ = Phase::Settled;
  threaded_ = threads;
  stretch_end_ = now + stretch_;
}

void ThreadGovernor::end_epoch(double now) {
  const double per_call = timed_seconds_ / static_cast<double>(timed_calls_);
  if (phase_ == Phase::Threaded) {
    report_.threaded_seconds = per_call;
    start_epoch(Phase::Serial, now);
    return;
  }
  report_.serial_seconds = per_call;
  const bool threads_faster = report_.threaded_seconds < report_.serial_seconds;
  ++report_.trials;
  if (!threads_faster) ++report_.fallbacks;
  choose(threads_faster, now);
}

std::string ThreadGovernor::notice(int threads) const {
  if (report_.fallbacks == 0) return {};
  const long calls = report_.threaded_calls + report_.serial_calls;
  char text[512];
  std::snprintf(text, sizeof text,
                "threads: one thread was faster than %d on this machine in %d of %d timings (the last: %.3g us a step or right-hand side "
                "on %d threads, %.3g us on one; cores busy with other work make threads wait for each other), so %.0f%% "
                "of the steps or right-hand sides ran on one thread; the results do not depend on it (--threads 1 skips the timings)",
                threads, report_.fallbacks, report_.trials, 1e6 * report_.threaded_seconds, threads,
                1e6 * report_.serial_seconds, calls > 0 ? 100.0 * static_cast<double>(report_.serial_calls) / static_cast<double>(calls) : 0.0);
  return text;
}

}  // namespace treedyn
