// treedyn — the error a simulation stops with, and number formatting for messages.
#pragma once

#include <cstdio>
#include <stdexcept>
#include <string>

namespace treedyn {

/// x in scientific notation with 4 significant digits ("1.234e-05"), for messages.
inline std::string sci(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3e", x);
  return buf;
}

/// A simulation could not continue (non-finite state, Newton failure, integrator failure). The
/// message says what happened and where; `time` says when.
class SimulationError : public std::runtime_error {
 public:
  SimulationError(double time, const std::string& what)
      : std::runtime_error("t = " + format_time(time) + ": " + what), time_(time) {}
  double time() const { return time_; }

 private:
  static std::string format_time(double t) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g s", t);
    return buf;
  }
  double time_;
};

/// A run stopped from outside while it advanced: the interrupt check (Formulation::set_interrupt,
/// Simulator::set_interrupt, RunOptions::stop) said so between two steps or right-hand sides.
/// `time` is where the integration was; the formulation keeps the state of its last completed
/// output or step.
class Interrupted : public SimulationError {
 public:
  explicit Interrupted(double time) : SimulationError(time, "interrupted") {}
};

}  // namespace treedyn
