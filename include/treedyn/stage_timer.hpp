// treedyn — per-stage wall-clock accounting for a formulation's profile (`treedyn simulate
// --profile`): each stage adds the time since the previous mark to its own counter.
#pragma once

#include <chrono>
#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace treedyn {

class StageTimer {
 public:
  /// The stages' names, in the order of their indices (allocates here only).
  StageTimer(std::initializer_list<const char*> names) : names_(names), seconds_(names_.size(), 0.0) {}
  /// Starts timing the next stage.
  void start() { last_ = Clock::now(); }
  /// Charges the time since the last mark to `stage` and starts the next one (only while
  /// counting: a formulation counts inside advance_to, not while taking snapshots).
  void mark(std::size_t stage) {
    const auto now = Clock::now();
    if (counting_) seconds_[stage] += std::chrono::duration<double>(now - last_).count();
    last_ = now;
  }
  /// Counts while alive.
  class Scope {
   public:
    explicit Scope(StageTimer& t) : t_(t) { t_.counting_ = true; }
    ~Scope() { t_.counting_ = false; }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    StageTimer& t_;
  };
  std::map<std::string, double> seconds() const {
    std::map<std::string, double> out;
    for (std::size_t i = 0; i < names_.size(); ++i) out[names_[i]] = seconds_[i];
    return out;
  }

 private:
  using Clock = std::chrono::steady_clock;
  std::vector<const char*> names_;
  std::vector<double> seconds_;
  Clock::time_point last_{};
  bool counting_ = false;
};

/// Marks `stage` on a timer that may be absent (work done outside any profile).
inline void mark(StageTimer* timer, std::size_t stage) {
  if (timer) timer->mark(stage);
}
inline void start(StageTimer* timer) {
  if (timer) timer->start();
}

}  // namespace treedyn
