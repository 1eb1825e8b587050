// treedyn — how the step-based formulations (ali3, half- and fully-implicit) cover an output
// interval: equal steps of at most h_max that end exactly at the target, never a sliver of a step
// (h enters 1/h and 1/h^2 in their discretised equations).
#pragma once

#include <algorithm>
#include <cmath>

namespace treedyn {

/// Calls step_to(t_k) for t_k = t + k (t_target - t) / N, k = 1..N, N the fewest steps of at most
/// h_max. Nothing when t_target - t is below round-off.
template <class StepTo>
void equal_steps(double t, double t_target, double h_max, StepTo&& step_to) {
  const double span = t_target - t;
  if (span <= 1e-12 * std::max(1.0, std::abs(t_target))) return;
  const long n = std::max(1L, static_cast<long>(std::ceil(span / h_max - 1e-9)));
  for (long k = 1; k <= n; ++k) step_to(t + span * static_cast<double>(k) / static_cast<double>(n));
}

}  // namespace treedyn
