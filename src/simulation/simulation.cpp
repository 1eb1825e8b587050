#include "treedyn/simulation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <numeric>
#include <optional>

#include "treedyn/errors.hpp"
#include "treedyn/integrators.hpp"
#include "treedyn/metrics.hpp"
#include "treedyn/parallel.hpp"
#include "treedyn/topology.hpp"

namespace treedyn {

std::string describe_step_choice(const SimulationResult& r) {
  std::string text;
  for (const SimulationResult::StepTry& s : r.step_tries)
    text += (text.empty() ? "a step of " : "; then ") + sci(s.step) + " s left an estimated " + sci(s.error) +
            " m (more than " + sci(s.threshold) + " m)";
  if (!r.step_tries.empty()) text += "; run again from the start at " + sci(r.step) + " s";
  if (!r.step_note.empty()) text += (text.empty() ? "" : "; ") + r.step_note;
  return text;
}

void check_finite(const Model& model, const Snapshot& s) {
  for (std::size_t i = 0; i < s.bodies.size(); ++i) {
    const BodyState& b = s.bodies[i];
    if (!b.r.allFinite() || !b.q.coeffs().allFinite() || !b.v.allFinite() || !b.w.allFinite() || !b.a.allFinite() ||
        !b.alpha.allFinite())
      throw SimulationError(s.t, "the state of body '" + model.bodies[i].name + "' is not finite (the simulation diverged)");
  }
}

namespace {

/// The order of accuracy of a fixed-step run's method (its global error is O(h^p)).
int fixed_step_order(const std::string& formulation, const std::string& integrator) {
  if (formulation == "ali3") return 2;  // the trapezoidal rule (paper 000)
  if (formulation == "half-implicit" || formulation == "fully-implicit") return 1;  // paper 002
  return integrator == "rk4" ? 4 : 1;  // euler, symplectic-euler
}

/// True when the run advances by a fixed step, which controls no error of its own: every
/// integrator but the catalogue's adaptive ones (ali3, half- and fully-implicit report their own
/// schemes, which are not in it).
bool fixed_step(const Simulator& sim) { return !is_adaptive_integrator(sim.formulation().integrator()); }

/// The companion of an error estimate: the same formulation and settings started where the run
/// started (`start`, at t = 0), at half the step or a hundredth of the tolerances; null (with
/// e.note saying why) when the run cannot be repeated beside itself.
/// Why no companion can repeat the run (empty if one can): inputs from outside, or a start after 0.
std::string companion_impossible(const Simulator& sim, double t0) {
  if (sim.inputs().active())
    return "not made: the run has inputs from outside the model (efforts, wrenches or a load function), which a "
           "companion run cannot repeat";
  if (t0 != 0.0) return "not made: the run starts at t = " + sci(t0) + " s, and a companion run starts at 0";
  return {};
}

/// What the notes call a companion of `formulation` beside `sim`.
std::string companion_name(const Simulator& sim, const std::string& formulation) {
  return formulation == sim.formulation_name() ? "the refined run" : "the companion run (" + formulation + ")";
}

/// The companion `formulation` with settings `s`, from the run's own start; nullptr (and the
/// reason in the note) if it cannot start.
std::unique_ptr<Simulator> start_companion(const Simulator& sim, const std::string& formulation, const FormulationSettings& s,
                                           const SystemState& start, ErrorEstimate& e) {
  try {
    auto companion = std::make_unique<Simulator>(sim.model_ptr(), formulation, s, sim.state_tolerance());
    companion->set_interrupt(sim.interrupt());  // the run's stop (run_simulation) stops it too
    companion->set_body_states(start);  // the run's own start (a state set at t = 0 too)
    e.t_from = sim.time();
    return companion;
  } catch (const std::exception& x) {  // the companion cannot start: the run itself goes on
    e.refinement.clear();
    e.note = "not made: " + companion_name(sim, formulation) + " cannot start (" + x.what() + ")";
    return nullptr;
  }
}

std::unique_ptr<Simulator> refined_companion(const Simulator& sim, double t0, const SystemState& start, ErrorEstimate& e) {
  if (e.note = companion_impossible(sim, t0); !e.note.empty()) return nullptr;
  FormulationSettings s = sim.settings();
  const std::string& f = sim.formulation_name();
  if (fixed_step(sim)) {
    if (f == "ali3")  // the same penalty relative to the step: alpha h^2 / (4 M) kept (paper 000, Sect. 4),
      s.ali3.alpha = 4.0 * sim.formulation().diagnostics().at("alpha");  // the one the run chose or was given
    e.setting = s.dt;
    s.dt /= 2.0;
    const int p = e.order = fixed_step_order(f, sim.formulation().integrator());
    e.factor = std::ldexp(1.0, p) / (std::ldexp(1.0, p) - 1.0);
    char factor[32];
    std::snprintf(factor, sizeof factor, "%.4g", e.factor);
    e.refinement = "dt " + sci(s.dt) + " s (halved; order " + std::to_string(p) + ": the differences x " + factor + ")";
  } else {  // the formulation's own tolerances unless the settings override them
    const double rtol = s.rtol.value_or(f == "reference" ? s.reference.rtol : f == "dca" ? s.dca.rtol : s.hdca.rtol);
    const double atol = s.atol.value_or(f == "reference" ? s.reference.atol : f == "dca" ? s.dca.atol : s.hdca.atol);
    e.setting = rtol;
    s.rtol = rtol / 100.0;
    s.atol = atol / 100.0;
    e.refinement = "rtol " + sci(*s.rtol) + ", atol " + sci(*s.atol) + " (a hundredth)";
  }
  return start_companion(sim, f, s, start, e);
}

/// The companion of a run that came near a singular position of its closed loops: the reference
/// formulation at its own tolerances, whatever the run's formulation. A refined run of the same
/// formulation passes the singular position by nearly the same numbers and may leave the branch
/// with the run: dca's on models/four_bar.json did or did not, as round-off fell (a change of
/// the pseudo-inverse's algorithm swapped which), so only another formulation checks the passage.
/// The reference run itself gets its refined companion.
std::unique_ptr<Simulator> passage_companion(const Simulator& sim, double t0, const SystemState& start, ErrorEstimate& e) {
  if (sim.formulation_name() == "reference") return refined_companion(sim, t0, start, e);
  if (e.note = companion_impossible(sim, t0); !e.note.empty()) return nullptr;
  FormulationSettings s;  // the reference formulation's own defaults
  s.threading = sim.settings().threading;
  e.setting = s.reference.rtol;
  e.refinement = "the reference formulation (rtol " + sci(s.reference.rtol) + ", atol " + sci(s.reference.atol) + ")";
  return start_companion(sim, "reference", s, start, e);
}

/// True when the model has a closed kinematic loop (a joint between two bodies already joined,
/// ground included) or a driver: the models whose constraint rows can lose rank. A union-find
/// rather than Topology(model).loop_joints(): Topology also ranks the initial constraint Jacobian,
/// a dense eigenproblem in the loop rows, which only the watched (small) models may pay for.
bool has_closed_loops(const Model& model) {
  if (!model.drivers.empty()) return true;
  std::vector<int> root(static_cast<std::size_t>(model.body_count()) + 1);  // ground last
  std::iota(root.begin(), root.end(), 0);
  auto find = [&](int b) {
    auto i = static_cast<std::size_t>(b == kGround ? model.body_count() : b);
    while (root[i] != static_cast<int>(i)) i = static_cast<std::size_t>(root[i] = root[static_cast<std::size_t>(root[i])]);
    return static_cast<int>(i);
  };
  for (const Joint& j : model.joints) {
    const int a = find(j.parent), b = find(j.child);
    if (a == b) return true;
    root[static_cast<std::size_t>(a)] = b;
  }
  return false;
}

/// Watches a run for singular positions of its closed loops (JudgementOptions::branch): there
/// the loop rows lose rank, assembly branches meet, and a run can change branch with every
/// constraint kept. The conditioning is a dense eigenproblem in the loop rows, so models of more
/// than kWatchedBodies bodies are not watched (said in the check's note).
class BranchWatch {
 public:
  static constexpr int kWatchedBodies = 64;

  /// Whether a run of `model` is watched (closed loops, up to kWatchedBodies bodies).
  static bool watches(const Model& model, double threshold) {
    return threshold > 0.0 && model.body_count() <= kWatchedBodies && has_closed_loops(model);
  }

  BranchWatch(const Model& model, double threshold) : threshold_(threshold) {
    if (!(threshold > 0.0) || !has_closed_loops(model)) return;
    if (model.body_count() > kWatchedBodies) {
      note_ = "not watched: " + std::to_string(model.body_count()) + " bodies (the dense check of the loops' "
              "conditioning runs up to " + std::to_string(kWatchedBodies) + "); --estimate-error checks the run";
      return;
    }
    topology_.emplace(model);
  }
  bool watching() const { return topology_.has_value(); }
  /// Looks at the run's state at time t; true when the run has just come near a singular position.
  /// The bodies' states are read only where there are loops to watch: for dca and hdca reading
  /// them is a forward-kinematics pass, and for ali3 a copy of every body's state.
  bool observe(const Simulator& sim, double t) {
    if (!topology_) return false;
    const double c = topology_->loop_conditioning(sim.model(), sim.body_states());
    smallest_ = std::min(smallest_, c);
    const bool near = c < threshold_;
    const bool entered = near && !near_;
    near_ = near;
    if (entered && ++passages_ == 1) first_time_ = t;
    return entered;
  }
  int passages() const { return passages_; }
  double smallest() const { return smallest_; }
  const std::string& note() const { return note_; }
  std::string describe() const {
    return "the run came near a singular position of its closed loops " + std::to_string(passages_) +
           (passages_ == 1 ? " time" : " times") + " (first at t = " + sci(first_time_) +
           " s; the loop rows' conditioning fell to " + sci(smallest_) + ", below " + sci(threshold_) +
           "), where assembly branches meet and a run can change branch with every constraint kept";
  }

 private:
  double threshold_;
  std::optional<Topology> topology_;
  std::string note_;
  bool near_ = false;
  int passages_ = 0;
  double first_time_ = 0.0, smallest_ = 1.0;
};

/// Advances the companion to the run's time and widens the estimate by how far they part there
/// (`energy`: the run's total energy, from its sample's metrics).
/// A companion that fails ends the comparison, said in the note (the judgement warns of it).
void compare_with_companion(const Simulator& sim, double energy, double step_ratio, std::unique_ptr<Simulator>& companion,
                            ErrorEstimate& e) {
  try {
    if (sim.time() > companion->time()) companion->advance_to(sim.time());
  } catch (const Interrupted&) {  // the run's own stop: it ends the run, not the comparison alone
    throw;
  } catch (const std::exception& x) {
    e.note = companion_name(sim, companion->formulation_name()) + " failed (" + std::string(x.what()) +
             "); compared up to t = " + sci(e.t_compared) + " s";
    companion.reset();
    return;
  }
  // A refined run costs 2 (halved step) to ~2.5 (a hundredth of the tolerance, fifth order) times
  // the run's steps; one that needs far more has found the problem stiff or singular there, and
  // is stopped rather than left to grind (hdca's on the four-bar took 28 s for the run's 0.12 s).
  const double budget = step_ratio * static_cast<double>(std::max(sim.stats().steps, 50L));
  if (static_cast<double>(companion->stats().steps) > budget) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", step_ratio);
    e.note = companion_name(sim, companion->formulation_name()) + " stopped at t = " + sci(companion->time()) + " s, having taken " +
             std::to_string(companion->stats().steps) + " steps, more than " + ratio +
             " times the run's " + std::to_string(sim.stats().steps) + " (stiff or singular there); compared up to t = " +
             sci(e.t_compared) + " s";
    companion.reset();
    return;
  }
  const SystemState& a = sim.body_states();
  const SystemState& b = companion->body_states();
  for (std::size_t i = 0; i < a.size(); ++i) e.position = std::max(e.position, e.factor * (a[i].r - b[i].r).norm());
  if (sim.q().size() > 0 && companion->formulation_name() == sim.formulation_name())  // another's may differ in sign
    e.coordinate = std::max(e.coordinate, e.factor * (sim.q() - companion->q()).cwiseAbs().maxCoeff());
  e.energy = std::max(e.energy, e.factor * std::abs(energy - companion->energy().total));
  e.t_compared = sim.time();
}

/// The estimate was started by a passage near a singular position of the loops (passage_companion).
bool started_by_singular_position(const ErrorEstimate& e) { return e.reason.find("singular position") != std::string::npos; }

/// The step (fixed step) or tolerance (adaptive) that would leave half of `threshold`.
double advised_setting(const ErrorEstimate& e, double threshold) {
  const double shrink = 0.5 * threshold / e.position;
  return e.order > 0 ? e.setting * std::pow(shrink, 1.0 / e.order) : e.setting * shrink;
}

/// Empty, or why the run `r`, made at a smaller step than the run before it (r.step_tries' last),
/// shows its method not converging at such steps: its estimate shrank as h^p_obs with p_obs below
/// half the method's order p. At order p it shrinks as h^p once the step is in the method's
/// asymptotic range; before that it may shrink less (backward Euler on the spatial pendulum: 0.78
/// m at 0.01 s, 4.3e-2 m at 1.1e-4 s, p_obs 0.64, then ok), but much less is not getting there:
/// backward Euler on paper 000's whip, 8.4 m at 0.01 s, 8.6 m at 7.1e-4 s (p_obs < 0), and still
/// 7.4 m at the 5.3e-5 s its order then asked for; on an 8-link chain, 5.35 m at 0.01 s, 2.66 m at
/// 7.0e-5 s (p_obs 0.14), and 1.87 m at the 9.9e-7 s its order then asked for (7.7 minutes).
/// Two points cannot always tell "not yet" from "never" (ali3 on a 16-link chain: p_obs 0.45,
/// then 1.5 at the next step); the advice then names methods that are ok there instead.
std::string not_converging(const SimulationResult& r) {
  if (r.step_tries.empty() || r.error_estimate.order <= 0) return {};
  const SimulationResult::StepTry& before = r.step_tries.back();
  const double p = r.error_estimate.order;
  const double p_obs = std::log(before.error / r.error_estimate.position) / std::log(before.step / r.step);
  if (!(p_obs < 0.5 * p)) return {};  // NaN (no estimate): left to the other checks
  char order[32];
  std::snprintf(order, sizeof order, "%.2g", p_obs);
  return (p_obs > 0.0 ? "the estimate shrank only as h^" + std::string(order) : std::string("the estimate did not shrink")) +
         " from the step before (" + sci(before.error) + " m at " + sci(before.step) + " s, " +
         sci(r.error_estimate.position) + " m at " + sci(r.step) + " s, where order " + std::to_string(r.error_estimate.order) +
         " predicts " + sci(before.error * std::pow(r.step / before.step, p)) + " m)";
}

/// What would meet the accuracy check that `r`'s estimate failed (threshold: its bound, m). A run
/// that came near a singular position (`near_singular`: the branch watch saw one; or its estimate
/// was started by one) depends on how it passes it, which a smaller step or tolerance does not
/// settle: the index-3 Newton iterations fail there at small steps (backward Euler on the
/// four-bar: warning at 0.01 s to 1e-3 s, failed at the 2.3e-5 s its order would ask for), so
/// no step is advised; nor for one whose estimate shrank far slower than its order (not_converging);
/// otherwise the error scales as h^p (fixed step) or as the tolerance (adaptive), and half the
/// threshold is aimed at.
std::string accuracy_advice(const SimulationResult& r, double threshold, bool near_singular) {
  const ErrorEstimate& e = r.error_estimate;
  if (started_by_singular_position(e) || near_singular)
    return std::string("the answer depends on how the run passes the singular position") +
           (started_by_singular_position(e) ? "" : " it came near (the branch check), which a smaller step does not settle") +
           (r.formulation == "ali3" ? "; the reference formulation passes" : "; ali3 and the reference formulation pass") +
           " singular positions of closed loops (README: which method when)";
  if (const std::string why = not_converging(r); !why.empty()) {
    std::string others;  // the methods that keep the energy, each at the step or tolerance its estimate asks
    for (const char* name : {"half-implicit", "ali3", "dca", "hdca"})
      if (r.formulation != name) others += std::string(others.empty() ? "" : ", ") + name;
    return why + ", so " + r.formulation +
           "'s error is not falling at its order at such steps, no step can be told from it and none is advised; "
           "methods that keep the energy "
           "do: " + others + ", each run without --dt or at the step or tolerance its estimate advises (README: which "
           "method when)";
  }
  if (e.order > 0)
    return "at the method's order " + std::to_string(e.order) + ", a step of about " + sci(advised_setting(e, threshold)) +
           " s would meet it (--dt)";
  return "a tolerance of about " + sci(advised_setting(e, threshold)) + " would meet it (--rtol, --atol)";
}

/// The branch check: a run that came near a singular position passes when a companion compared
/// it from there on (the accuracy check judges that), and fails when none could be made.
void judge_branch(const JudgementOptions& options, const BranchWatch& branch, const ErrorEstimate& e, SimulationResult& r) {
  if (!(options.branch > 0.0) || (!branch.watching() && branch.note().empty())) return;  // no loops
  // the smallest conditioning seen; unknown when the model is not watched (0 would read as singular)
  Judgement::Check c{"branch", branch.watching() ? branch.smallest() : std::nan(""), options.branch, true, branch.note()};
  if (branch.passages() > 0) {
    if (e.made()) {
      c.note = branch.describe() + "; the error estimate's companion checked it (the accuracy check)";
    } else {
      c.passed = false;
      c.note = branch.describe() + "; no refined run could check it (" +
               (e.note.empty() ? "switched off: RunOptions::verify, --no-estimate-error" : e.note) + ")";
      r.message += std::string(r.message.empty() ? "" : "; ") + c.note;
    }
  }
  r.judgement.checks.push_back(c);
}

/// The scales a judgement is made against (model_scales).
void set_scales(const Model& model, double kinetic_max, double potential_range, Judgement& j) {
  const ModelScales scales = model_scales(model, kinetic_max, potential_range);
  j.length = scales.length;
  j.energy_range = scales.energy;
  j.speed = scales.speed;
}

/// A check: `value` against `relative` times `scale` (its name says which); 0 switches it off.
/// A failure adds its reason to `message`. `not_judged`: why it cannot be judged (empty: it can).
void add_check(Judgement& j, std::string& message, const char* name, double value, double relative, double scale,
               const char* scale_name, const char* unit, const std::string& what, const std::string& not_judged = {}) {
  Judgement::Check c{name, value, relative * scale, true, ""};
  if (relative > 0.0 && std::isnan(value)) c.note = what + " unknown";
  else if (relative > 0.0 && !not_judged.empty()) c.note = not_judged;
  else if (relative > 0.0 && !(scale > 0.0)) c.note = std::string("no ") + scale_name + " to judge it by";
  else if (relative > 0.0) c.passed = value <= c.threshold;
  if (!c.passed)
    message += std::string(message.empty() ? "" : "; ") + what + " " + sci(value) + unit + " exceeds " + sci(relative) +
               " of the " + scale_name + " " + sci(scale) + unit + " (--check-" + name + ")";
  j.checks.push_back(c);
}

/// The checks a state answers on its own: constraint errors at position and velocity level and
/// the Euler parameters' norms, each a largest value.
void add_state_checks(const JudgementOptions& options, const ConstraintErrors& largest, double quaternion_error,
                      Judgement& j, std::string& message) {
  add_check(j, message, "position", largest.position, options.position, j.length, "characteristic length", " m",
            "position constraint error");
  add_check(j, message, "velocity", largest.velocity, options.velocity, j.speed, "characteristic speed", " m/s",
            "velocity constraint error");
  add_check(j, message, "quaternion", quaternion_error, options.quaternion, 1.0, "unit norm", "", "Euler-parameter norm error");
}

double largest_quaternion_error(const SystemState& bodies) {
  double e = 0.0;
  for (const BodyState& b : bodies) e = std::max(e, std::abs(b.q.norm() - 1.0));
  return e;
}

/// "warning" when a check of `j` failed, else `status` as it was.
void warn_if_failed(const Judgement& j, std::string& status) {
  for (const Judgement::Check& c : j.checks)
    if (!c.passed) status = "warning";
}

/// Judges a completed run against options (Judgement): its status becomes "warning", with the
/// reasons, when a check fails.
void judge(const Model& model, const JudgementOptions& options, double kinetic_max, double potential_range,
           double quaternion_error, bool nonconservative, const BranchWatch& branch, SimulationResult& r) {
  Judgement& j = r.judgement;
  set_scales(model, kinetic_max, potential_range, j);
  add_check(j, r.message, "energy", r.energy_drift_max, options.energy, j.energy_range, "energy range", " J", "energy drift",
            nonconservative ? "not judged: the work of non-conservative loads and drivers is integrated over the samples "
                              "(trapezoidal rule), too coarsely to judge the drift by at any sampling"
                            : "");
  add_state_checks(options, r.constraint_error_max, quaternion_error, j, r.message);
  const ErrorEstimate& e = r.error_estimate;
  if (e.made()) {
    add_check(j, r.message, "accuracy", e.position, options.accuracy, j.length, "characteristic length", " m",
              "error estimate (body positions with " + e.refinement + ")");
    if (!j.checks.back().passed)
      r.message += ": " + accuracy_advice(r, j.checks.back().threshold, branch.passages() > 0);
    if (!e.note.empty()) {  // the companion failed where the run did not: its answer is not settled
      j.checks.push_back({"accuracy-complete", e.t_compared, r.t_end, false, e.note});
      r.message += std::string(r.message.empty() ? "" : "; ") + "error estimate: " + e.note;
    }
  }
  judge_branch(options, branch, e, r);
  warn_if_failed(j, r.status);
}

/// Whether a run starts with a refined companion beside it: an error estimate asked for, or made
/// by default for a fixed step.
bool starts_with_companion(const Simulator& sim, const RunOptions& options) {
  return options.estimate_error || (options.verify && fixed_step(sim));
}

/// Whether a run may go back to its start: a companion from the start (starts_with_companion), a
/// companion after a passage near a singular position of watched loops, or a retry at a smaller
/// step (fixed steps). Only then is the start kept: a copy of every body's state, which for dca
/// and hdca is also a forward-kinematics pass and a cache the Simulator keeps.
bool may_return_to_start(const Simulator& sim, const RunOptions& options) {
  return starts_with_companion(sim, options) || (options.choose_step && fixed_step(sim)) ||
         (options.verify && BranchWatch::watches(sim.model(), options.judge.branch));
}

/// `start` of a run that may return to it (may_return_to_start).
const SystemState& kept(const SystemState* start) {
  if (!start) throw std::logic_error("run: the run's start was not kept, and a companion or a retry needs it");
  return *start;
}

/// One run of `sim` from its time to options.t_end (run_simulation without the step's choice);
/// `start`: the bodies' states at that time (where companions start), null where the run cannot
/// return there (may_return_to_start); `tries`: the runs it replaces at larger steps
/// (run_simulation), which its judgement reads.
SimulationResult run_once(Simulator& sim, const RunOptions& options, const SystemState* start, SampleSink* sink,
                          const ProgressCallback& progress, const std::vector<SimulationResult::StepTry>& tries = {}) {
  using Clock = std::chrono::steady_clock;
  const Model& model = sim.model();
  const double t0 = sim.time();
  if (!(options.dt > 0.0) || !std::isfinite(options.dt))
    throw std::invalid_argument("run: dt must be a positive number, got " + sci(options.dt));
  if (!(options.t_end >= t0) || !std::isfinite(options.t_end))
    throw std::invalid_argument("run: t_end = " + sci(options.t_end) + " must be finite and not before t = " + sci(t0));
  if (!(options.companion_step_ratio > 0.0) || !std::isfinite(options.companion_step_ratio))
    throw std::invalid_argument("run: companion_step_ratio must be a positive number, got " + sci(options.companion_step_ratio));
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
  result.step_tries = tries;
  Metrics metrics(model, &sim.inputs());
  std::unique_ptr<Simulator> companion;  // the error estimate's refined run, beside this one
  if (starts_with_companion(sim, options)) {
    companion = refined_companion(sim, t0, kept(start), result.error_estimate);
    result.error_estimate.reason = options.estimate_error ? "asked" : "fixed step";
  }
  BranchWatch branch(model, options.judge.branch);
  double kinetic_max = 0.0, potential_min = INFINITY, potential_max = -INFINITY, quaternion_error = 0.0, work = 0.0;
  double wall = 0.0;  // inside advance_to, the failing call included
  Clock::time_point advancing{};
  bool in_advance = false;
  MetricsSample m;  // one sample's, its vectors reused from sample to sample
  auto sample = [&](bool first) {
    const Snapshot& snapshot = sim.snapshot();
    check_finite(model, snapshot);
    metrics.evaluate(snapshot, m);
    if (first) result.energy_initial = m.total;
    result.energy_final = m.total;
    if (std::isnan(m.energy_drift) || std::isnan(result.energy_drift_max))
      result.energy_drift_max = std::nan("");
    else
      result.energy_drift_max = std::max(result.energy_drift_max, std::abs(m.energy_drift));
    result.constraint_error_max.position = std::max(result.constraint_error_max.position, m.max.position);
    result.constraint_error_max.velocity = std::max(result.constraint_error_max.velocity, m.max.velocity);
    result.constraint_error_max.acceleration = std::max(result.constraint_error_max.acceleration, m.max.acceleration);
    kinetic_max = std::max(kinetic_max, m.kinetic);
    work = std::max(work, std::abs(m.work_nonconservative));
    potential_min = std::min(potential_min, m.potential), potential_max = std::max(potential_max, m.potential);
    quaternion_error = std::max(quaternion_error, largest_quaternion_error(snapshot.bodies));
    if (sink) sink->write(snapshot, m, sim.stats());
    ++result.samples;  // written (a sink that failed to write it has thrown)
    if (companion) compare_with_companion(sim, m.total, options.companion_step_ratio, companion, result.error_estimate);
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
      // checked by a refined run from here on, unless one was made or tried already
      if (branch.observe(sim, t) && options.verify && !result.error_estimate.made() &&
          result.error_estimate.note.empty()) {
        companion = passage_companion(sim, t0, kept(start), result.error_estimate);
        result.error_estimate.reason = "the run came near a singular position of its closed loops at t = " + sci(t) + " s";
      }
      if (k % every == 0 || k == steps) sample(false);
      if (progress) progress(t, options.t_end);
    }
  } catch (const Interrupted& e) {  // asked inside an output interval (RunOptions::stop, through the simulator)
    result.status = "interrupted";
    // Nine digits: an interval can be far shorter than sci's four distinguish (paper 004's 1e-4 s).
    auto precise = [](double t) {
      char text[32];
      std::snprintf(text, sizeof text, "%.9g", t);
      return std::string(text);
    };
    result.message = "interrupted at t = " + sci(result.t_reached) + " s, inside the output interval to t = " +
                     precise(std::min(result.t_reached + options.dt, options.t_end)) + " s (the integrator at t = " +
                     precise(e.time()) + " s)";
    result.failure_time = result.t_reached;
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
  if (const ThreadGovernor* g = sim.formulation().thread_governor()) {  // threads asked for, and timed
    const ThreadGovernor::Report& t = g->report();
    if (const long calls = t.threaded_calls + t.serial_calls; calls > 0)
      result.diagnostics["calls_on_threads_fraction"] = static_cast<double>(t.threaded_calls) / static_cast<double>(calls);
    if (t.trials > 0) {  // what the timings found: whether threads paid on this machine, and by how much
      result.diagnostics["thread_trials"] = t.trials;
      result.diagnostics["thread_trials_one_thread_faster"] = t.fallbacks;
      result.diagnostics["call_seconds_on_threads"] = t.threaded_seconds;  // in the last trial
      result.diagnostics["call_seconds_on_one_thread"] = t.serial_seconds;
    }
  }
  if (fixed_step(sim)) result.step = sim.settings().dt;
  if (result.status == "ok")
    judge(model, options.judge, kinetic_max, potential_max >= potential_min ? potential_max - potential_min : 0.0,
          quaternion_error, work > 0.0, branch, result);
  return result;
}

/// The accuracy check of a completed run, if it failed.
const Judgement::Check* failed_accuracy(const SimulationResult& r) {
  for (const Judgement::Check& c : r.judgement.checks)
    if (c.name == "accuracy" && !c.passed) return &c;
  return nullptr;
}

/// True when the branch watch saw the run come near a singular position of its closed loops.
bool passed_singular_position(const SimulationResult& r) {
  for (const Judgement::Check& c : r.judgement.checks)
    if (c.name == "branch" && c.threshold > 0.0 && c.value < c.threshold) return true;
  return false;
}

/// RunOptions::choose_step: the smaller step to run `r` again at, a whole fraction of its step
/// (so the samples fall where they did); nothing when `r` does not call for one or (with
/// r.step_note saying why) when a smaller step would not settle it: the run came near a singular
/// position of its loops, the estimate shrank far slower than the method's order from the run
/// before (not_converging), or the step would be too small.
std::optional<double> smaller_step(SimulationResult& r, double first_step) {
  const ErrorEstimate& e = r.error_estimate;
  const Judgement::Check* accuracy = r.status == "warning" ? failed_accuracy(r) : nullptr;
  if (!accuracy || e.order == 0 || !(e.position > 0.0) || started_by_singular_position(e)) return std::nullopt;
  if (passed_singular_position(r)) {
    r.step_note = "a smaller step was not tried: the run came near a singular position of its closed loops, and how it "
                  "passes one is not settled by the step (the branch check)";
    return std::nullopt;
  }
  if (const std::string why = not_converging(r); !why.empty()) {  // a still smaller step would only cost more
    r.step_note = why + ": the error is not falling at the method's order at such steps, so no smaller one was tried";
    return std::nullopt;
  }
  const double h = advised_setting(e, accuracy->threshold);
  const double n = std::max(2.0, std::ceil(r.step / h * (1.0 - 1e-12)));  // at least halved
  const double step = r.step / n;
  if (step < kSmallestStepFraction * first_step) {
    r.step_note = "a step of " + sci(step) + " s would meet the accuracy check; below " + sci(kSmallestStepFraction) +
                  " of the first step (" + sci(first_step) + " s) it is not tried automatically (--dt)";
    return std::nullopt;
  }
  return step;
}

/// Makes `sim` again at step `step` and puts it back at the run's start.
void restart_at_step(Simulator& sim, double step, const SystemState& start) {
  FormulationSettings s = sim.settings();
  if (sim.formulation_name() == "ali3" && s.ali3.alpha > 0.0)  // the penalty relative to the step kept: alpha h^2 (paper 000, Sect. 4)
    s.ali3.alpha *= (s.dt / step) * (s.dt / step);
  s.dt = step;
  sim.reset(s);
  sim.set_body_states(start);
}

}  // namespace

SimulationResult run_simulation(Simulator& sim, const RunOptions& options, SampleSink* sink,
                                const ProgressCallback& progress) {
  const InterruptScope asked(sim, options.stop);  // inside output intervals too
  std::optional<SystemState> kept_start;
  if (may_return_to_start(sim, options)) kept_start = sim.body_states();
  const SystemState* start = kept_start ? &*kept_start : nullptr;
  SimulationResult r = run_once(sim, options, start, sink, progress);
  if (!options.choose_step || !(r.step > 0.0)) return r;  // adaptive integrators choose their own
  const double first_step = r.step;
  std::vector<SimulationResult::StepTry> tries;
  while (static_cast<int>(tries.size()) < kStepRetries) {
    const std::optional<double> step = smaller_step(r, first_step);
    if (!step) break;
    if (!sink || !sink->restart()) {
      r.step_note = "a step of " + sci(*step) + " s would meet the accuracy check; the run's output cannot be "
                    "written again, so it was not tried (--dt)";
      break;
    }
    tries.push_back({r.step, r.error_estimate.position, failed_accuracy(r)->threshold, r.wall_seconds, r.stats.steps});
    restart_at_step(sim, *step, kept(start));
    r = run_once(sim, options, start, sink, progress, tries);
  }
  return r;
}

StateCheck check_state(const Simulator& sim, const JudgementOptions& options, std::optional<double> energy0) {
  if (energy0 && !std::isfinite(*energy0))  // a NaN would make the energy check "unknown", and pass
    throw std::invalid_argument("check_state: energy0 must be a finite energy (J), got " + sci(*energy0));
  StateCheck s;
  if (sim.failed()) {
    s.status = "failed";
    s.message = sim.failure();
    return s;
  }
  const Energies e = sim.energy();
  set_scales(sim.model(), e.kinetic, 0.0, s.judgement);
  if (energy0)
    add_check(s.judgement, s.message, "energy", std::abs(e.total - *energy0), options.energy, s.judgement.energy_range,
              "energy range", " J", "energy drift since energy0");
  add_state_checks(options, sim.constraint_errors(), largest_quaternion_error(sim.body_states()), s.judgement, s.message);
  warn_if_failed(s.judgement, s.status);
  return s;
}

}  // namespace treedyn
