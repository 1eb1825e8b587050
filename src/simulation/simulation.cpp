#include "treedyn/simulation.hpp"

#include <chrono>
#include <cmath>

#include "treedyn/errors.hpp"

namespace treedyn {

void check_finite(const Model& model, const Snapshot& s) {
  for (std::size_t i = 0; i < s.bodies.size(); ++i) {
    const BodyState& b = s.bodies[i];
    if (!b.r.allFinite() || !b.q.coeffs().allFinite() || !b.v.allFinite() || !b.w.allFinite() || !b.a.allFinite() ||
        !b.alpha.allFinite())
      throw SimulationError(s.t, "the state of body '" + model.bodies[i].name + "' is not finite (the simulation diverged)");
  }
}

SimulationResult run_simulation(Simulator& sim, const RunOptions& options, SampleSink* sink,
                                const ProgressCallback& progress) {
  using Clock = std::chrono::steady_clock;
  const Model& model = sim.model();
  const double t0 = sim.time();
  if (!(options.dt > 0.0) || !std::isfinite(options.dt))
    throw std::invalid_argument("run: dt must be a positive number, got " + sci(options.dt));
  if (!(options.t_end >= t0) || !std::isfinite(options.t_end))
    throw std::invalid_argument("run: t_end = " + sci(options.t_end) + " must be finite and not before t = " + sci(t0));
  if (sim.failed()) throw std::logic_error("run: the simulator's last step failed; reset() it first");
  // More intervals than a run could take in weeks is a typing error, and past 2^63 the count
  // would overflow: refused before anything runs.
  const double intervals = (options.t_end - t0) / options.dt;
  if (intervals > kMaxRunIntervals)
    throw std::invalid_argument("run: (t_end - t0) / dt = " + sci(intervals) + " output intervals; more than " +
                                sci(kMaxRunIntervals) + " is refused (raise dt, or lower t_end)");
  SimulationResult result;
  result.formulation = sim.formulation_name();
  result.integrator = sim.formulation().integrator();
  result.dt = options.dt;
  result.t_end = options.t_end;
  result.t_reached = t0;
  Metrics metrics(model, &sim.inputs());
  double wall = 0.0;  // inside advance_to, the failing call included
  Clock::time_point advancing{};
  bool in_advance = false;
  auto sample = [&](bool first) {
    const Snapshot& snapshot = sim.snapshot();
    check_finite(model, snapshot);
    const MetricsSample m = metrics.evaluate(snapshot);
    if (first) result.energy_initial = m.total;
    result.energy_final = m.total;
    if (std::isnan(m.energy_drift) || std::isnan(result.energy_drift_max))
      result.energy_drift_max = std::nan("");
    else
      result.energy_drift_max = std::max(result.energy_drift_max, std::abs(m.energy_drift));
    result.constraint_error_max.position = std::max(result.constraint_error_max.position, m.max.position);
    result.constraint_error_max.velocity = std::max(result.constraint_error_max.velocity, m.max.velocity);
    result.constraint_error_max.acceleration = std::max(result.constraint_error_max.acceleration, m.max.acceleration);
    if (sink) sink->write(snapshot, m, sim.stats());
    ++result.samples;  // written (a sink that failed to write it has thrown)
  };

  try {
    // t_end = t0: the initial sample alone (an integrator cannot be asked to advance by nothing).
    const long steps = options.t_end > t0 ? std::max(1L, std::lround((options.t_end - t0) / options.dt)) : 0L;
    const int every = std::max(1, options.sample_every);
    sample(true);
    for (long k = 1; k <= steps; ++k) {
      if (options.stop && options.stop()) {
        result.status = "interrupted";
        result.message = "interrupted at t = " + sci(result.t_reached) + " s";
        result.failure_time = result.t_reached;
        break;
      }
      const double t = k == steps ? options.t_end : t0 + static_cast<double>(k) * options.dt;
      advancing = Clock::now();
      in_advance = true;
      sim.advance_to(t);
      in_advance = false;
      wall += std::chrono::duration<double>(Clock::now() - advancing).count();
      result.t_reached = t;
      if (k % every == 0 || k == steps) sample(false);
      if (progress) progress(t, options.t_end);
    }
  } catch (const SimulationError& e) {
    result.status = "failed";
    result.message = e.what();
    result.failure_time = e.time();
  } catch (const std::exception& e) {  // a formulation's own failure
    result.status = "failed";
    result.message = e.what();
    result.failure_time = result.t_reached;
  }
  if (in_advance) wall += std::chrono::duration<double>(Clock::now() - advancing).count();
  result.wall_seconds = wall;
  result.stats = sim.stats();
  result.warnings = sim.warnings();  // after the run: some notices arise during it
  result.stage_seconds = sim.formulation().stage_seconds();
  result.diagnostics = sim.formulation().diagnostics();
  return result;
}

}  // namespace treedyn
