// treedyn — how the step-based formulations (ali3, half- and fully-implicit) cover an output
// interval: equal steps of at most h_max that end exactly at the target, never a sliver of a step
// (h enters 1/h and 1/h^2 in their discretised equations).
#pragma once

#include <algorithm>
#include <cmath>

namespace treedyn {

/// Calls step_to(t_k, h) for t_k = t + k (t_target - t) / N, k = 1..N, N the fewest steps of at
/// most h_max, h = t_k - t_k-1. When (t_target - t) / N is h_max to round-off (an interval that
/// holds whole steps), h is h_max itself: then the steps are those that stepping one at a time
/// takes (Formulation::step), bit for bit. Nothing when t_target - t is below round-off.
template <class StepTo>
void equal_steps(double t, double t_target, double h_max, StepTo&& step_to) {
  const double span = t_target - t;
  if (span <= 1e-12 * std::max(1.0, std::abs(t_target))) return;
  const long n = std::max(1L, static_cast<long>(std::ceil(span / h_max - 1e-9)));
  const bool whole = std::abs(span / static_cast<double>(n) - h_max) <= 1e-9 * h_max;
  double t_previous = t;
  for (long k = 1; k <= n; ++k) {
    const double t_k = t + span * static_cast<double>(k) / static_cast<double>(n);
    step_to(t_k, whole ? h_max : t_k - t_previous);
    t_previous = t_k;
  }
}

}  // namespace treedyn
