// Adaptive integrators from SUNDIALS: ARKODE's explicit Runge-Kutta stepper (dopri5, bs23) and
// CVODE's linear multistep methods (adams, bdf), both with fixed-point (functional) iteration,
// which suits the non-stiff equations of multibody dynamics and needs no Jacobian.
#include <arkode/arkode_erkstep.h>
#include <cvode/cvode.h>
#include <cvode/cvode_proj.h>
#include <nvector/nvector_serial.h>
#include <sunnonlinsol/sunnonlinsol_fixedpoint.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <exception>
#include <limits>
#include <sstream>
#include <stdexcept>

#include "dopri5_dense.hpp"
#include "integrators_internal.hpp"
#include "serial_vector_ops.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/linalg.hpp"

namespace treedyn {
namespace {

using ConstMap = Eigen::Map<const Eigen::VectorXd>;
using Map = Eigen::Map<Eigen::VectorXd>;

/// No step of a multibody simulation is legitimately this short: a solver pushed below it (at a
/// singular position, say) fails with a message instead of stalling with steps of 1e-300 s.
constexpr double kMinStep = 1e-12;

/// Owns the SUNDIALS context, the state vector and the callbacks' shared bookkeeping.
class SundialsBase : public Integrator {
 public:
  SundialsBase(std::string name, OdeSystem& system, const IntegratorOptions& options)
      : name_(std::move(name)), sys_(system), opt_(options) {
    if (SUNContext_Create(nullptr, &ctx_) != 0) throw std::runtime_error("SUNDIALS: cannot create a context");
    y_ = N_VNew_Serial(system.size(), ctx_);
    if (!y_) throw std::runtime_error("SUNDIALS: cannot allocate the state vector");
    serial_vector_ops::install(y_);  // before the solver clones it (serial_vector_ops.hpp)
  }
  ~SundialsBase() override {
    N_VDestroy(y_);
    SUNContext_Free(&ctx_);
  }
  SundialsBase(const SundialsBase&) = delete;
  SundialsBase& operator=(const SundialsBase&) = delete;
  std::string name() const override { return name_; }

 protected:
  static int rhs_callback(sunrealtype t, N_Vector y, N_Vector ydot, void* self_ptr) {
    auto* self = static_cast<SundialsBase*>(self_ptr);
    if (self->pending_) return -1;  // sticky: after a failure the solver must not recover by itself
    try {
      if (self->sys_.interrupted()) throw Interrupted(t);  // unrecoverable: the solver stops here
      Map out(NV_DATA_S(ydot), NV_LENGTH_S(ydot));
      self->sys_.rhs(t, ConstMap(NV_DATA_S(y), NV_LENGTH_S(y)), out);
      ++self->stats_.rhs_evaluations;
      if (out.allFinite()) return 0;
      std::ostringstream where;
      where << "; the right-hand side was last non-finite at t = " << t << ", first the rate of "
            << self->sys_.describe(static_cast<int>(first_non_finite(out)));
      self->non_finite_ = where.str();
      return 1;  // recoverable: the integrator shortens the step
    } catch (...) {
      self->pending_ = std::current_exception();
      return -1;
    }
  }

  /// The system's own error weights (OdeSystem::error_weights), or SUNDIALS' default ones.
  static int weights_callback(N_Vector y, N_Vector ewt, void* self_ptr) {
    auto* self = static_cast<SundialsBase*>(self_ptr);
    try {
      const ConstMap state(NV_DATA_S(y), NV_LENGTH_S(y));
      Map w(NV_DATA_S(ewt), NV_LENGTH_S(ewt));
      if (!self->sys_.error_weights(state, self->opt_.rtol, self->opt_.atol, w))
        w = (self->opt_.rtol * state.cwiseAbs().array() + self->opt_.atol).inverse().matrix();
      return w.allFinite() && (w.array() > 0.0).all() ? 0 : -1;
    } catch (...) {
      self->pending_ = std::current_exception();
      return -1;
    }
  }

  static void error_callback(int, const char* module, const char* function, char* msg, void* self_ptr) {
    auto* self = static_cast<SundialsBase*>(self_ptr);
    self->last_error_ = std::string(module) + " " + function + ": " + msg;
  }

  /// A SUNDIALS *GetReturnFlagName string, which the caller must free.
  static std::string flag_name(char* name) {
    std::string text = name ? name : "?";
    std::free(name);
    return text;
  }

  /// Rethrows an exception raised inside a callback, or reports the solver's error.
  [[noreturn]] void fail(double t, int flag, const std::string& what) {
    if (pending_) {
      auto e = pending_;
      pending_ = nullptr;
      std::rethrow_exception(e);
    }
    throw SimulationError(t, name_ + " failed (" + what + ", flag " + std::to_string(flag) + ")" +
                                 (last_error_.empty() ? "" : ": " + last_error_) + non_finite_);
  }

  void load(const Eigen::VectorXd& y) { Map(NV_DATA_S(y_), NV_LENGTH_S(y_)) = y; }
  /// Adds the solver's step and error-test-failure counters since the last call to the stats.
  void count(long steps, long fails) {
    stats_.steps += steps - steps_before_;
    stats_.error_test_failures += fails - fails_before_;
    steps_before_ = steps;
    fails_before_ = fails;
  }
  Map state() { return Map(NV_DATA_S(y_), NV_LENGTH_S(y_)); }
  /// Outputs between steps are the method's interpolant, which the projection after each step
  /// does not reach: the copy handed out is projected too (the solver's own state is untouched,
  /// so the run does not depend on where it is sampled).
  void project_output(double t, Eigen::VectorXd& y) {
    if (opt_.project && sys_.project(t, y) > 0.0) ++stats_.projections;
  }

  std::string name_;
  OdeSystem& sys_;
  IntegratorOptions opt_;
  SUNContext ctx_ = nullptr;
  N_Vector y_ = nullptr;
  std::exception_ptr pending_;
  std::string last_error_;
  std::string non_finite_;  // where the last non-finite right-hand side was, for fail()
  long steps_before_ = 0, fails_before_ = 0;  // the solver's counters at the last advance()
};

// ---------------------------------------------------------------------------------------------

class ArkodeErk final : public SundialsBase {
 public:
  ArkodeErk(const std::string& name, OdeSystem& system, const IntegratorOptions& options)
      : SundialsBase(name, system, options), own_dense_output_(name == "dopri5") {}
  ~ArkodeErk() override {
    if (mem_) ERKStepFree(&mem_);
  }

  void reset(double t0, const Eigen::VectorXd& y0) override {
    load(y0);
    pending_ = nullptr;
    fsal_ready_ = false;
    last_ydot_ = nullptr;
    step_start_ = t0;
    k1_ = nullptr;
    stage_calls_ = 0;
    if (own_dense_output_) dense_.start(t0, y0);  // bs23 holds no interpolant of its own
    dense_valid_ = true;
    if (mem_) {  // a restart keeps the settings
      if (ERKStepReInit(mem_, erk_rhs_callback, t0, y_) != ARK_SUCCESS) throw std::runtime_error("ARKODE: ERKStepReInit failed");
      steps_before_ = fails_before_ = 0;
      return;
    }
    mem_ = ERKStepCreate(erk_rhs_callback, t0, y_, ctx_);
    if (!mem_) throw std::runtime_error("ARKODE: ERKStepCreate failed");
    ERKStepSetUserData(mem_, this);
    ERKStepSetErrHandlerFn(mem_, error_callback, this);
    const ARKODE_ERKTableID table = own_dense_output_ ? ARKODE_DORMAND_PRINCE_7_4_5 : ARKODE_BOGACKI_SHAMPINE_4_2_3;
    ERKStepSetTableNum(mem_, table);
    fsal_ = first_same_as_last(table);
    ERKStepWFtolerances(mem_, weights_callback);
    ERKStepSetMaxNumSteps(mem_, opt_.max_steps);
    ERKStepSetMinStep(mem_, kMinStep);
    ERKStepSetPostprocessStepFn(mem_, after_step);
    steps_before_ = fails_before_ = 0;
  }

  /// dopri5 steps past t_out one step at a time and reads the output from its own interpolant
  /// (dopri5_dense.hpp): the same steps as ARKODE's ARK_NORMAL mode takes, without the extra
  /// right-hand side its Hermite interpolant spends at each output. bs23 keeps ARK_NORMAL.
  void advance(double t_out, Eigen::VectorXd& y) override {
    if (!own_dense_output_) {
      evolve(t_out, ARK_NORMAL, y);
    } else {
      if (t_out < dense_.t0()) {  // ARK_NORMAL refuses it too; the interpolant would extrapolate
        std::ostringstream msg;
        msg << name_ << ": t_out = " << t_out << " is before the last step, which started at t = " << dense_.t0();
        throw std::invalid_argument(msg.str());
      }
      for (long steps = 0; dense_.t1() < t_out; ++steps) {
        if (steps == opt_.max_steps) too_much_work();
        evolve(t_out, ARK_ONE_STEP, y);
      }
      interpolate(t_out, y);
    }
    project_output(t_out, y);
  }

  double step(Eigen::VectorXd& y) override {
    double now = 0.0;
    ERKStepGetCurrentTime(mem_, &now);
    const double t = evolve(now + opt_.step, ARK_ONE_STEP, y);  // the target only scales the first step
    project_output(t, y);  // the copy handed out is projected exactly, as advance()'s (project_step may leave a little)
    return t;
  }

 private:
  /// Whether a table's last stage is evaluated at the step's solution (c_s = 1 and its row of A
  /// equal to b), so that it is the next step's first stage (FSAL: dopri5 and bs23 are).
  static bool first_same_as_last(ARKODE_ERKTableID id) {
    ARKodeButcherTable B = ARKodeButcherTable_LoadERK(id);
    if (!B) return false;
    const int s = B->stages;
    bool fsal = B->c[s - 1] == 1.0;
    for (int i = 0; i < s && fsal; ++i) fsal = B->A[s - 1][i] == B->b[i];
    ARKodeButcherTable_Free(B);
    return fsal;
  }

  /// The right-hand side, or, for the first stage of a step that follows an accepted step its
  /// projection left untouched, the previous step's last stage (FSAL). SUNDIALS 6 evaluates f
  /// there again whenever a step post-processing function is set (after_step is one: it
  /// projects); when after_step changed nothing, that evaluation repeats the last stage's at the
  /// same time and state, and it is taken from there instead: one evaluation in seven for dopri5,
  /// one in four for bs23. The same values as SUNDIALS' own FSAL path, bit for bit.
  static int erk_rhs_callback(sunrealtype t, N_Vector y, N_Vector ydot, void* self_ptr) {
    auto* self = static_cast<ArkodeErk*>(self_ptr);
    self->note_stage(t, ydot);
    if (self->fsal_ready_ && t == self->fsal_t_ && self->last_ydot_ && self->last_ydot_ != ydot && !self->pending_) {
      self->fsal_ready_ = false;
      N_VScale(1.0, self->last_ydot_, ydot);
      return 0;
    }
    self->fsal_ready_ = false;
    self->last_ydot_ = ydot;  // after the last stage: ARKODE's F[s-1], untouched until the next step's first stage
    return rhs_callback(t, y, ydot, self_ptr);
  }

  /// After each accepted step: project, then bookkeeping.
  static int after_step(sunrealtype t, N_Vector y, void* self_ptr) {
    auto* self = static_cast<ArkodeErk*>(self_ptr);
    try {
      Map state(NV_DATA_S(y), NV_LENGTH_S(y));
      const double change = self->opt_.project ? self->sys_.project_step(t, state, self->step_projection_tolerance()) : 0.0;
      if (change > 0.0) ++self->stats_.projections;
      self->sys_.accept_step(t, state);
      if (self->own_dense_output_) self->build_dense_output(t, state);
      self->fsal_ready_ = self->fsal_ && change == 0.0;
      self->fsal_t_ = t;
      self->step_start_ = t;
      return 0;
    } catch (...) {
      self->pending_ = std::current_exception();
      return -1;
    }
  }

  double evolve(double t_out, int mode, Eigen::VectorXd& y) {
    double t = 0.0;
    non_finite_.clear();  // a failure reports this call's non-finite values only
    const int flag = ERKStepEvolve(mem_, t_out, y_, &t, mode);
    long steps = 0, fails = 0;  // counted before a failure too: the steps it took are work done
    ERKStepGetNumSteps(mem_, &steps);
    ERKStepGetNumErrTestFails(mem_, &fails);
    count(steps, fails);
    if (flag < 0) {  // the time the solver reached, not the t it may have left unset on failure
      ERKStepGetCurrentTime(mem_, &t);
      fail(t, flag, flag_name(ERKStepGetReturnFlagName(flag)));
    }
    y = state();
    return t;
  }

  /// What a projection after a step may leave undone (OdeSystem::project_step): a thousandth of the
  /// tolerances the step's error is held to. A unit quaternion off by that much gives rotations
  /// off by about twice as much, far inside the step's own error; outputs are projected exactly.
  double step_projection_tolerance() const { return 1e-3 * std::min(opt_.rtol, opt_.atol); }

  // dopri5's own dense output ----------------------------------------------------------------
  /// Where each evaluation went. ARKODE 6 evaluates a dopri5 step's first stage at the step's
  /// start (at the previous step's end, or when it starts) and the other six inside the step, in
  /// order, each into its own stage vector, which it leaves untouched until the step is complete.
  void note_stage(double t, N_Vector ydot) {
    if (!own_dense_output_) return;
    if (t == step_start_) {
      k1_ = ydot;
      return;
    }
    stages_[static_cast<std::size_t>(stage_calls_ % 6)] = {t, ydot};
    ++stage_calls_;
  }

  /// After an accepted step to t (state: its end, projected): the interpolant from the seven
  /// stages, when the last six evaluations are the step's stages 2-7 at t_n + c_i h. Otherwise
  /// (never seen with SUNDIALS 6.4) the outputs come from ARKODE's own interpolant.
  void build_dense_output(double t, const Map& state) {
    const double h = t - step_start_, slack = 64.0 * std::numeric_limits<double>::epsilon() * (std::abs(t) + std::abs(h));
    std::array<const double*, 7> k{};
    bool found = k1_ != nullptr && stage_calls_ >= 6;
    if (found) k[0] = NV_DATA_S(k1_);
    for (int i = 1; i < 7 && found; ++i) {
      const Stage& s = stages_[static_cast<std::size_t>((stage_calls_ - 6 + i - 1) % 6)];
      found = std::abs(s.t - (step_start_ + dopri5::kC[static_cast<std::size_t>(i)] * h)) <= slack && s.ydot != k1_;
      k[static_cast<std::size_t>(i)] = NV_DATA_S(s.ydot);
    }
    dense_valid_ = found;
    if (found) dense_.step(t, state, k);
  }

  /// y(t_out) inside the last step.
  void interpolate(double t_out, Eigen::VectorXd& y) {
    if (dense_valid_) {
      dense_.evaluate(t_out, y);
      return;
    }
    const int flag = ERKStepGetDky(mem_, t_out, 0, y_);
    if (flag != ARK_SUCCESS) fail(t_out, flag, flag_name(ERKStepGetReturnFlagName(flag)));
    y = state();
  }

  /// As ARK_NORMAL fails after max_steps steps without reaching t_out.
  [[noreturn]] void too_much_work() {
    double now = 0.0;
    ERKStepGetCurrentTime(mem_, &now);
    std::ostringstream msg;  // ARKODE's own words for it
    msg << "ARKODE arkEvolve: At t = " << now << ", mxstep steps taken before reaching tout.";
    last_error_ = msg.str();
    fail(now, ARK_TOO_MUCH_WORK, flag_name(ERKStepGetReturnFlagName(ARK_TOO_MUCH_WORK)));
  }

  struct Stage {
    double t = 0.0;
    N_Vector ydot = nullptr;
  };

  void* mem_ = nullptr;
  const bool own_dense_output_;    // dopri5 (else bs23): outputs from dopri5_dense.hpp
  dopri5::DenseOutput dense_;
  bool dense_valid_ = false;       // the last step's stages were found and dense_ holds it
  double step_start_ = 0.0;        // t_n of the step being taken
  N_Vector k1_ = nullptr;          // where its first stage is
  std::array<Stage, 6> stages_{};  // the last six other evaluations, a ring
  long stage_calls_ = 0;
  bool fsal_ = false;          // the table is first-same-as-last
  bool fsal_ready_ = false;    // the next call at fsal_t_ is the first stage after an untouched accepted step
  double fsal_t_ = 0.0;
  N_Vector last_ydot_ = nullptr;  // where the last evaluation was written (ARKODE's stage vector)
};

// ---------------------------------------------------------------------------------------------

class Cvode final : public SundialsBase {
 public:
  Cvode(const std::string& name, OdeSystem& system, const IntegratorOptions& options)
      : SundialsBase(name, system, options) {}
  ~Cvode() override { release(); }

  void reset(double t0, const Eigen::VectorXd& y0) override {
    load(y0);
    pending_ = nullptr;
    if (mem_) {  // a restart keeps the settings
      if (CVodeReInit(mem_, t0, y_) != CV_SUCCESS) throw std::runtime_error("CVODE: CVodeReInit failed");
      steps_before_ = fails_before_ = 0;
      return;
    }
    mem_ = CVodeCreate(name_ == "adams" ? CV_ADAMS : CV_BDF, ctx_);
    if (!mem_) throw std::runtime_error("CVODE: CVodeCreate failed");
    CVodeSetErrHandlerFn(mem_, error_callback, this);
    CVodeInit(mem_, rhs_callback, t0, y_);
    CVodeSetUserData(mem_, this);
    CVodeWFtolerances(mem_, weights_callback);
    CVodeSetMaxNumSteps(mem_, opt_.max_steps);
    CVodeSetMinStep(mem_, kMinStep);
    nls_ = SUNNonlinSol_FixedPoint(y_, 0, ctx_);
    CVodeSetNonlinearSolver(mem_, nls_);
    if (name_ == "bdf" && opt_.project) {
      CVodeSetProjFn(mem_, project_callback);
      CVodeSetProjErrEst(mem_, SUNFALSE);
    }
    steps_before_ = fails_before_ = 0;
  }

  /// One internal step at a time up to t_out (so that the system's accept_step sees every
  /// step: joint angles stay continuous through any number of turns), then CVODE's
  /// interpolation at t_out (CVodeGetDky), as CV_NORMAL mode would give.
  void advance(double t_out, Eigen::VectorXd& y) override {
    double now = 0.0;
    CVodeGetCurrentTime(mem_, &now);
    non_finite_.clear();  // a failure reports this output interval's non-finite values only
    while (now < t_out) now = one_step(t_out);
    if (now != t_out) {
      const int flag = CVodeGetDky(mem_, t_out, 0, y_);
      if (flag < 0) fail(t_out, flag, flag_name(CVodeGetReturnFlagName(flag)));
    }
    finish_output(t_out, y);
  }

  double step(Eigen::VectorXd& y) override {
    double now = 0.0;
    CVodeGetCurrentTime(mem_, &now);
    non_finite_.clear();
    const double t = one_step(now + opt_.step);  // the target only scales the first step
    finish_output(t, y);
    return t;
  }

 private:
  static int project_callback(sunrealtype t, N_Vector y, N_Vector corr, sunrealtype, N_Vector, void* self_ptr) {
    auto* self = static_cast<Cvode*>(self_ptr);
    try {
      Map c(NV_DATA_S(corr), NV_LENGTH_S(corr));
      c = ConstMap(NV_DATA_S(y), NV_LENGTH_S(y));
      if (self->sys_.project(t, c) > 0.0) ++self->stats_.projections;
      c -= ConstMap(NV_DATA_S(y), NV_LENGTH_S(y));
      return 0;
    } catch (...) {
      self->pending_ = std::current_exception();
      return -1;
    }
  }

  /// One internal step towards t_out, its state left in y_ and accepted by the system; returns
  /// the time reached.
  double one_step(double t_out) {
    double t = 0.0;
    const int flag = CVode(mem_, t_out, y_, &t, CV_ONE_STEP);
    long steps = 0, fails = 0;  // counted before a failure too, as ArkodeErk::evolve does
    CVodeGetNumSteps(mem_, &steps);
    CVodeGetNumErrTestFails(mem_, &fails);
    count(steps, fails);
    if (flag < 0) {
      CVodeGetCurrentTime(mem_, &t);
      fail(t, flag, flag_name(CVodeGetReturnFlagName(flag)));
    }
    sys_.accept_step(t, state());
    return t;
  }

  /// The state of an output (in y_) handed out: Adams is projected here, at outputs (CVODE
  /// projects only inside BDF), and restarted when the correction is larger than the absolute
  /// tolerance.
  void finish_output(double t, Eigen::VectorXd& y) {
    Map state_now = state();
    if (name_ == "adams" && opt_.project && sys_.project(t, state_now) > opt_.atol) {
      ++stats_.projections;
      CVodeReInit(mem_, t, y_);
      steps_before_ = fails_before_ = 0;
    }
    y = state_now;
    if (name_ == "bdf") project_output(t, y);
  }

  void release() {
    if (mem_) CVodeFree(&mem_);
    if (nls_) SUNNonlinSolFree(nls_);
    mem_ = nullptr;
    nls_ = nullptr;
  }

  void* mem_ = nullptr;
  SUNNonlinearSolver nls_ = nullptr;
};

}  // namespace

std::unique_ptr<Integrator> make_sundials(const std::string& name, OdeSystem& system, const IntegratorOptions& options) {
  if (!(options.rtol > 0.0) || !(options.atol > 0.0))
    throw std::invalid_argument(name + ": rtol and atol must be positive");
  if (name == "dopri5" || name == "bs23") return std::make_unique<ArkodeErk>(name, system, options);
  return std::make_unique<Cvode>(name, system, options);
}

}  // namespace treedyn
