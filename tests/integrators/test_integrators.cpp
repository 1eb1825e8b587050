// Integrators as one suite: exact on polynomial solutions of their order, error shrinking by
// 2^order when the step halves, tolerance-proportional accuracy for the adaptive ones, counted
// right-hand sides, and failures reported with the time.
#include <gtest/gtest.h>

#include <arkode/arkode_butcher_erk.h>
#include <nvector/nvector_serial.h>

#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "integrators/dopri5_dense.hpp"
#include "integrators/serial_vector_ops.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/integrators.hpp"

using namespace treedyn;

namespace {

/// ydot = p'(t) for a polynomial p of degree `degree`: exact solution y = p(t).
struct Polynomial : OdeSystem {
  int degree;
  explicit Polynomial(int d) : degree(d) {}
  int size() const override { return 1; }
  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>&, Eigen::Ref<Eigen::VectorXd> ydot) override {
    ydot(0) = degree * std::pow(t, degree - 1);
  }
};

/// Harmonic oscillator q'' = -q, split into position and velocity.
struct Oscillator : OdeSystem {
  int size() const override { return 2; }
  int position_size() const override { return 1; }
  void rhs(double, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    ydot(0) = y(1);
    ydot(1) = -y(0);
  }
};

/// `method` on `sys` started at t = 0 from y = (1, 0).
std::unique_ptr<Integrator> started(const std::string& method, OdeSystem& sys, double step, Eigen::VectorXd& y,
                                    double rtol = 1e-6) {
  IntegratorOptions o;
  o.step = step;
  o.rtol = o.atol = rtol;
  auto integ = make_integrator(method, sys, o);
  y.resize(2);
  y << 1.0, 0.0;
  integ->reset(0.0, y);
  return integ;
}

double oscillator_error(const std::string& method, double step, double rtol = 1e-6) {
  Oscillator sys;
  Eigen::VectorXd y;
  auto integ = started(method, sys, step, y, rtol);
  for (int k = 1; k <= 10; ++k) integ->advance(0.2 * k, y);
  return std::hypot(y(0) - std::cos(2.0), y(1) + std::sin(2.0));
}

}  // namespace

TEST(FixedStepIntegrators, ExactOnPolynomialsOfTheirOrder) {
  for (auto [method, degree] : {std::pair{"euler", 1}, std::pair{"rk4", 4}}) {
    Polynomial sys(degree);
    IntegratorOptions o;
    o.step = 0.1;
    auto integ = make_integrator(method, sys, o);
    Eigen::VectorXd y = Eigen::VectorXd::Zero(1);
    integ->reset(0.0, y);
    integ->advance(1.3, y);
    EXPECT_NEAR(y(0), std::pow(1.3, degree), 1e-13) << method;
  }
}

TEST(FixedStepIntegrators, ErrorScalesWithTheirOrderWhenTheStepHalves) {
  for (auto [method, order] : {std::pair{"euler", 1}, std::pair{"rk4", 4}, std::pair{"symplectic-euler", 1}}) {
    const double ratio = oscillator_error(method, 0.01) / oscillator_error(method, 0.005);
    EXPECT_NEAR(std::log2(ratio), order, 0.1) << method;
  }
}

TEST(FixedStepIntegrators, SymplecticEulerKeepsTheOscillatorEnergyBoundedWhereEulerDoesNot) {
  auto worst_energy_error = [](const char* method) {
    Oscillator sys;
    Eigen::VectorXd y;
    auto integ = started(method, sys, 0.05, y);
    double worst = 0.0;
    for (int k = 1; k <= 2000; ++k) {
      integ->advance(0.05 * k, y);
      worst = std::max(worst, std::abs(0.5 * y.squaredNorm() - 0.5));
    }
    return worst;
  };
  EXPECT_LT(worst_energy_error("symplectic-euler"), 0.03);  // O(h) oscillation, no drift
  EXPECT_GT(worst_energy_error("euler"), 1.0);              // grows without bound
}

TEST(AdaptiveIntegrators, AccuracyFollowsTheTolerance) {
  for (const char* method : {"dopri5", "bs23", "adams", "bdf"}) {
    const double loose = oscillator_error(method, 0.0, 1e-5), tight = oscillator_error(method, 0.0, 1e-9);
    EXPECT_LT(tight, 1e-6) << method;
    EXPECT_LT(tight, loose / 20) << method;
  }
}

TEST(Integrators, CountStepsAndRightHandSides) {
  Oscillator sys;
  IntegratorOptions o;
  o.step = 0.1;
  auto rk4 = make_integrator("rk4", sys, o);
  Eigen::VectorXd y(2);
  y << 1.0, 0.0;
  rk4->reset(0.0, y);
  rk4->advance(1.0, y);
  EXPECT_EQ(rk4->stats().steps, 10);
  EXPECT_EQ(rk4->stats().rhs_evaluations, 40);
  auto dp = make_integrator("dopri5", sys, o);
  dp->reset(0.0, y);
  dp->advance(1.0, y);
  EXPECT_GT(dp->stats().steps, 0);
  EXPECT_GE(dp->stats().rhs_evaluations, 6 * dp->stats().steps);
}

namespace {

/// The oscillator from (1, 0) to t = 1 with `method` at step 0.01: the error the run ends with,
/// (-1, "") if it ends without one.
std::pair<double, std::string> failure_of(const char* method, OdeSystem& sys) {
  Eigen::VectorXd y;
  auto integ = started(method, sys, 0.01, y);
  try {
    integ->advance(1.0, y);
  } catch (const SimulationError& e) {
    return {e.time(), e.what()};
  }
  return {-1.0, ""};
}

}  // namespace

TEST(Integrators, FailureInTheRightHandSideIsReportedWithItsTime) {
  struct Failing : Oscillator {
    void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
      if (t > 0.5) throw SimulationError(t, "model exploded");
      Oscillator::rhs(t, y, ydot);
    }
  };
  for (const char* method : {"rk4", "dopri5", "adams"}) {
    Failing sys;
    const auto [time, message] = failure_of(method, sys);
    EXPECT_GT(time, 0.5) << method;
    EXPECT_NE(message.find("model exploded"), std::string::npos) << method << ": " << message;
  }
}

TEST(Integrators, UnknownNameListsTheKnownOnes) {
  Oscillator sys;
  try {
    make_integrator("ode45", sys, {});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("dopri5"), std::string::npos);
  }
}

// A system's own error weights replace 1 / (rtol |y| + atol): weights 1000 times larger on the
// velocity make every adaptive method as accurate as a 1000 times smaller tolerance would.
TEST(AdaptiveIntegrators, UseTheSystemsErrorWeights) {
  struct Weighted : Oscillator {
    double factor = 1.0;
    bool error_weights(const Eigen::Ref<const Eigen::VectorXd>& y, double rtol, double atol,
                       Eigen::Ref<Eigen::VectorXd> w) override {
      w = factor * (rtol * y.cwiseAbs().array() + atol).inverse().matrix();
      return true;
    }
  };
  for (const char* method : {"dopri5", "bs23", "adams", "bdf"}) {
    auto steps = [&](double factor, double tol) {
      Weighted sys;
      sys.factor = factor;
      IntegratorOptions o;
      o.rtol = o.atol = tol;
      auto integ = make_integrator(method, sys, o);
      Eigen::VectorXd y(2);
      y << 1.0, 0.0;
      integ->reset(0.0, y);
      integ->advance(2.0, y);
      return integ->stats().steps;
    };
    EXPECT_EQ(steps(1000.0, 1e-4), steps(1.0, 1e-7)) << method;
    EXPECT_GT(steps(1000.0, 1e-4), steps(1.0, 1e-4)) << method;
  }
}

// An oscillator whose acceleration is NaN after t = 0.5, whatever the state.
struct Exploding : Oscillator {
  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    Oscillator::rhs(t, y, ydot);
    if (t > 0.5) ydot(1) = std::numeric_limits<double>::quiet_NaN();
  }
  std::string describe(int index) const override { return index == 1 ? "the velocity" : "the position"; }
};

// A fixed-step run whose state turns non-finite says where first, in the system's own words.
TEST(FixedStepIntegrators, NonFiniteStateNamesTheFirstEntry) {
  for (const char* method : {"euler", "rk4"}) {
    Exploding sys;
    const auto [time, message] = failure_of(method, sys);
    EXPECT_GT(time, 0.5) << method;
    EXPECT_NE(message.find("non-finite, first the velocity"), std::string::npos) << method << ": " << message;
  }
}

// SUNDIALS takes a non-finite right-hand side as a recoverable error and shortens the step until
// it gives up; its message then also says when the rates were last non-finite and where first.
TEST(AdaptiveIntegrators, NonFiniteRatesNameTheFirstEntry) {
  for (const char* method : {"dopri5", "bs23", "adams", "bdf"}) {
    Exploding sys;
    const auto [time, message] = failure_of(method, sys);
    EXPECT_GT(time, 0.4) << method;
    EXPECT_NE(message.find("last non-finite at t = 0.5"), std::string::npos) << method << ": " << message;
    EXPECT_NE(message.find("first the rate of the velocity"), std::string::npos) << method << ": " << message;
  }
}

namespace {

/// A nonlinear oscillator (q'' = -q - q^3 / 4) whose step projection either leaves y untouched
/// (returns 0) or says it moved it while leaving it the same: the latter makes the integrator
/// evaluate the right-hand side at the start of each step, as SUNDIALS does whenever a step
/// post-processing function is set.
struct ProjectedOscillator : OdeSystem {
  bool claims_a_change = false;
  int size() const override { return 2; }
  void rhs(double, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    ydot(0) = y(1);
    ydot(1) = -y(0) - 0.25 * y(0) * y(0) * y(0);
  }
  double project_step(double, Eigen::Ref<Eigen::VectorXd>, double) override { return claims_a_change ? 1e-300 : 0.0; }
};

}  // namespace

// dopri5 and bs23 are first-same-as-last: after a step the projection leaves as it was, the
// next step's first stage is the last stage of the step before (5 + 1 new evaluations a step for
// dopri5's 7 stages, 3 for bs23's 4), where a projection that moved y costs one more. Reusing the
// stage must give the solution that evaluating again gives: compared at ten output times, to 1e-13
// relative (in exact arithmetic the two are the same numbers; the stage's state and the step's
// solution are sums of the same terms, which round-off may order differently). A wrong stage
// reused would be off by the step's whole increment.
TEST(AdaptiveIntegrators, FirstSameAsLastStagesAreReusedAfterAnUntouchedStep) {
  for (const auto& [method, new_per_step] : {std::pair{"dopri5", 6L}, std::pair{"bs23", 3L}}) {
    IntegratorOptions o;
    o.rtol = o.atol = 1e-8;
    ProjectedOscillator reused, evaluated;
    evaluated.claims_a_change = true;
    auto a = make_integrator(method, reused, o), b = make_integrator(method, evaluated, o);
    Eigen::VectorXd ya(2), yb(2);
    ya << 1.0, 0.0;
    yb = ya;
    a->reset(0.0, ya);
    b->reset(0.0, yb);
    for (int k = 1; k <= 10; ++k) {
      a->advance(0.5 * k, ya);
      b->advance(0.5 * k, yb);
      EXPECT_LE((ya - yb).norm(), 1e-13 * yb.norm()) << method << " at t = " << 0.5 * k;
    }
    const IntegratorStats& sa = a->stats();
    const IntegratorStats& sb = b->stats();
    ASSERT_EQ(sa.steps, sb.steps) << method;
    ASSERT_GT(sa.steps, 20) << method;
    // One evaluation fewer for every accepted step, and new_per_step per attempted step besides
    // the first step's first stage and ARKODE's few evaluations to choose that step's size.
    EXPECT_EQ(sb.rhs_evaluations - sa.rhs_evaluations, sa.steps) << method;
    const long attempts = sa.steps + sa.error_test_failures;
    EXPECT_GE(sa.rhs_evaluations, new_per_step * attempts + 1) << method;
    EXPECT_LE(sa.rhs_evaluations, new_per_step * attempts + 1 + 20) << method;
  }
}

namespace {

/// q'' = -q until t = 0.5, then q'' = -q - 400: the step across the switch fails dopri5's error
/// test (its error estimate assumes a smooth right-hand side) and is retried shorter.
struct SwitchedOscillator : OdeSystem {
  int size() const override { return 2; }
  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    ydot(0) = y(1);
    ydot(1) = -y(0) - (t > 0.5 ? 400.0 : 0.0);
  }
};

}  // namespace

// Refused steps are counted apart from the accepted ones (the summary's rejected_steps): every
// attempt, refused or accepted, costs dopri5 six new evaluations (the first stage is reused, from
// the step before or from the refused attempt), so the evaluations bound the attempts from both
// sides; ARKODE's few evaluations to choose the first step are the slack.
TEST(AdaptiveIntegrators, RefusedStepsAreCountedApart) {
  SwitchedOscillator sys;
  Eigen::VectorXd y;
  auto integ = started("dopri5", sys, 0.0, y, 1e-8);
  integ->advance(1.0, y);
  const IntegratorStats& s = integ->stats();
  EXPECT_GT(s.error_test_failures, 0);
  const long attempts = s.steps + s.error_test_failures;
  EXPECT_GE(s.rhs_evaluations, 6 * attempts + 1);
  EXPECT_LE(s.rhs_evaluations, 6 * attempts + 1 + 20);
}

namespace {

/// y' = f(t) over one dopri5 step from (t0, F(t0)): the stages k_i = f(t0 + c_i h) and the step's
/// solution y0 + h sum b_i k_i, from ARKODE's own table; then the dense output at theta.
template <class F, class Rate>
double dense_at(F exact, Rate f, double t0, double h, double theta) {
  ARKodeButcherTable B = ARKodeButcherTable_LoadERK(ARKODE_DORMAND_PRINCE_7_4_5);
  std::array<double, 7> k{};
  std::array<const double*, 7> at{};
  double y1 = exact(t0);
  for (int i = 0; i < 7; ++i) {
    k[static_cast<std::size_t>(i)] = f(t0 + B->c[i] * h);
    y1 += h * B->b[i] * k[static_cast<std::size_t>(i)];
    at[static_cast<std::size_t>(i)] = &k[static_cast<std::size_t>(i)];
  }
  ARKodeButcherTable_Free(B);
  dopri5::DenseOutput dense;
  dense.start(t0, Eigen::VectorXd::Constant(1, exact(t0)));
  dense.step(t0 + h, Eigen::VectorXd::Constant(1, y1), at);
  Eigen::VectorXd y;
  dense.evaluate(t0 + theta * h, y);
  return y(0);
}

}  // namespace

// dopri5's continuous extension (src/integrators/dopri5_dense.hpp) against the exact solution of
// y' = f(t): of order 4, so exact (to round-off) where y is a polynomial of degree 4, and with a
// local error of O(h^5) on y = sin t: halving h divides it by about 32. Its abscissae are
// ARKODE's table's, which the code that finds the stages relies on.
TEST(Dopri5DenseOutput, IsExactOnQuarticsAndOfOrderFourOtherwise) {
  ARKodeButcherTable B = ARKodeButcherTable_LoadERK(ARKODE_DORMAND_PRINCE_7_4_5);
  ASSERT_EQ(B->stages, 7);
  for (int i = 0; i < 7; ++i) EXPECT_EQ(B->c[i], dopri5::kC[static_cast<std::size_t>(i)]) << i;
  ARKodeButcherTable_Free(B);
  auto quartic = [](double t) { return 3.0 * t * t * t * t - t * t * t + 0.5 * t + 2.0; };
  auto quartic_rate = [](double t) { return 12.0 * t * t * t - 3.0 * t * t + 0.5; };
  for (double theta : {0.0, 0.1, 0.37, 0.5, 0.8, 1.0})
    EXPECT_NEAR(dense_at(quartic, quartic_rate, 0.3, 0.7, theta), quartic(0.3 + 0.7 * theta), 1e-13) << theta;
  auto sine = [](double t) { return std::sin(t); };
  auto cosine = [](double t) { return std::cos(t); };
  for (double theta : {0.25, 0.5, 0.75}) {
    const double coarse = std::abs(dense_at(sine, cosine, 0.4, 0.2, theta) - std::sin(0.4 + 0.2 * theta));
    const double fine = std::abs(dense_at(sine, cosine, 0.4, 0.1, theta) - std::sin(0.4 + 0.1 * theta));
    EXPECT_GT(coarse, 1e-12) << theta;  // not round-off: the ratio below means something
    EXPECT_NEAR(std::log2(coarse / fine), 5.0, 0.3) << theta;
  }
}

// dopri5's outputs inside a step cost no evaluation: outputs every 0.01 s and every 1 s give
// the same steps and the same number of right-hand sides (ARKODE's Hermite interpolant spent one
// per output), and each output is within 10 rtol of the exact solution (the step ends' own error
// at rtol 1e-8 is about 1e-8). Both runs' first output is at 0.01 s: ARKODE sizes the first step
// from the first output time.
TEST(AdaptiveIntegrators, Dopri5OutputsInsideStepsCostNoEvaluations) {
  auto run = [](double every, double& worst) {
    Oscillator sys;
    Eigen::VectorXd y;
    auto integ = started("dopri5", sys, 0.0, y, 1e-8);
    worst = 0.0;
    const int outputs = static_cast<int>(std::lround(5.0 / every));
    for (int k = 0; k <= outputs; ++k) {
      const double t = k == 0 ? 0.01 : every * k;
      if (k > 0 && t <= 0.01) continue;
      integ->advance(t, y);
      worst = std::max(worst, std::hypot(y(0) - std::cos(t), y(1) + std::sin(t)));
    }
    return integ->stats();
  };
  double worst_dense = 0.0, worst_sparse = 0.0;
  const IntegratorStats dense = run(0.01, worst_dense), sparse = run(1.0, worst_sparse);
  EXPECT_GT(dense.steps, 20);
  EXPECT_EQ(dense.steps, sparse.steps);
  EXPECT_EQ(dense.rhs_evaluations, sparse.rhs_evaluations);
  EXPECT_LT(worst_dense, 1e-7);
  EXPECT_LT(worst_sparse, 1e-7);
}

// An output before the last step's start would be the interpolant extrapolated backwards.
TEST(AdaptiveIntegrators, Dopri5RefusesAnOutputBeforeItsLastStep) {
  Oscillator sys;
  Eigen::VectorXd y;
  auto integ = started("dopri5", sys, 0.0, y, 1e-8);
  integ->advance(1.0, y);
  EXPECT_THROW(integ->advance(0.001, y), std::invalid_argument);
}

// max_steps bounds the steps between two outputs, for dopri5 (which steps one at a time to an
// output) as for bs23 (ARKODE's own count): the run stops with the time it reached, says why, and
// counts the steps it took.
TEST(AdaptiveIntegrators, MaxStepsBetweenOutputsStopsTheRun) {
  for (const char* method : {"dopri5", "bs23"}) {
    Oscillator sys;
    IntegratorOptions o;
    o.rtol = o.atol = 1e-8;
    o.max_steps = 100;
    auto integ = make_integrator(method, sys, o);
    Eigen::VectorXd y(2);
    y << 1.0, 0.0;
    integ->reset(0.0, y);
    integ->advance(0.1, y);  // within the bound
    const long before = integ->stats().steps;
    EXPECT_LT(before, 100) << method;
    try {
      integ->advance(100.0, y);
      ADD_FAILURE() << method << ": no failure";
    } catch (const SimulationError& e) {
      EXPECT_NE(std::string(e.what()).find("ARK_TOO_MUCH_WORK"), std::string::npos) << method << ": " << e.what();
      EXPECT_GT(e.time(), 0.1) << method;
      EXPECT_LT(e.time(), 100.0) << method;
    }
    EXPECT_EQ(integ->stats().steps - before, 100) << method;  // the bound, counted to the failure
  }
}

// SUNDIALS' serial vector operations, replaced by ones compiled with optimisation (Debian builds
// SUNDIALS at -O0; src/integrators/serial_vector_ops.hpp). The replacements must give the bits
// SUNDIALS' own give, in each of N_VLinearSum's and N_VScale's cases and where the output is one
// of the inputs.
namespace {

struct Vectors {
  SUNContext ctx = nullptr;
  std::vector<N_Vector> v;
  Vectors(int count, sunindextype n, unsigned seed) {
    EXPECT_EQ(SUNContext_Create(nullptr, &ctx), 0);
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(-3.0, 3.0);
    for (int i = 0; i < count; ++i) {
      v.push_back(N_VNew_Serial(n, ctx));
      for (sunindextype j = 0; j < n; ++j) NV_Ith_S(v.back(), j) = u(rng) * std::pow(10.0, u(rng));
    }
  }
  ~Vectors() {
    for (N_Vector x : v) N_VDestroy(x);
    SUNContext_Free(&ctx);
  }
};

bool same_bits(N_Vector a, N_Vector b) {
  return NV_LENGTH_S(a) == NV_LENGTH_S(b) &&
         std::memcmp(NV_DATA_S(a), NV_DATA_S(b), static_cast<std::size_t>(NV_LENGTH_S(a)) * sizeof(sunrealtype)) == 0;
}

// 1000 entries: longer than linear_combination's block of 256 and not a multiple of it.
constexpr sunindextype kLength = 1000;
const double kCoefficients[] = {1.0, -1.0, 0.0, 0.3, -0.3, 2.5, 1e-7};

}  // namespace

TEST(SerialVectorOps, LinearSumGivesSundialsBitsInEveryCaseAndAliasing) {
  for (double a : kCoefficients)
    for (double b : kCoefficients)
      for (int alias = 0; alias < 3; ++alias) {  // z apart, z = x, z = y
        Vectors ours(3, kLength, 7), theirs(3, kLength, 7);
        auto z = [&](Vectors& s) { return alias == 0 ? s.v[2] : s.v[alias - 1]; };
        serial_vector_ops::linear_sum(a, ours.v[0], b, ours.v[1], z(ours));
        N_VLinearSum_Serial(a, theirs.v[0], b, theirs.v[1], z(theirs));
        for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(ours.v[i], theirs.v[i])) << "a " << a << ", b " << b << ", alias " << alias;
      }
}

TEST(SerialVectorOps, ScaleAndWrmsNormGiveSundialsBits) {
  for (double c : kCoefficients)
    for (bool in_place : {false, true}) {
      Vectors ours(2, kLength, 11), theirs(2, kLength, 11);
      serial_vector_ops::scale(c, ours.v[0], in_place ? ours.v[0] : ours.v[1]);
      N_VScale_Serial(c, theirs.v[0], in_place ? theirs.v[0] : theirs.v[1]);
      EXPECT_TRUE(same_bits(ours.v[0], theirs.v[0]) && same_bits(ours.v[1], theirs.v[1])) << "c " << c;
    }
  Vectors x(2, kLength, 13);
  const double ours = serial_vector_ops::wrms_norm(x.v[0], x.v[1]), theirs = N_VWrmsNorm_Serial(x.v[0], x.v[1]);
  EXPECT_EQ(std::memcmp(&ours, &theirs, sizeof ours), 0) << ours << " against " << theirs;
  EXPECT_GT(ours, 0.0);
}

// What N_VLinearCombination does for a serial vector (fused operations off): a scale, then one
// linear sum a vector.
TEST(SerialVectorOps, LinearCombinationGivesTheBitsOfSundialsScaleThenLinearSums) {
  std::vector<double> c = {1.0, 0.25, -1.0, 1.0, 3.0e-3, -0.7, 0.0};
  for (int nvec = 1; nvec <= 7; ++nvec)
    for (int alias = -1; alias < std::min(nvec, 3); ++alias) {  // z apart, or z = X[alias]
      for (double c0 : {1.0, -1.0, 0.4}) {
        c[0] = c0;
        Vectors ours(8, kLength, 17), theirs(8, kLength, 17);
        auto z = [&](Vectors& s) { return alias < 0 ? s.v[7] : s.v[static_cast<std::size_t>(alias)]; };
        EXPECT_EQ(serial_vector_ops::linear_combination(nvec, c.data(), ours.v.data(), z(ours)), 0);
        N_VScale_Serial(c[0], theirs.v[0], z(theirs));
        for (int i = 1; i < nvec; ++i) N_VLinearSum_Serial(c[static_cast<std::size_t>(i)], theirs.v[static_cast<std::size_t>(i)], 1.0, z(theirs), z(theirs));
        for (std::size_t i = 0; i < 8; ++i)
          EXPECT_TRUE(same_bits(ours.v[i], theirs.v[i])) << nvec << " vectors, z = X[" << alias << "], c0 " << c0 << ", vector " << i;
      }
    }
}

// A clone of a vector with the replacements carries them: a solver's own vectors use them.
TEST(SerialVectorOps, ClonesCarryTheReplacements) {
  Vectors x(1, 10, 19);
  serial_vector_ops::install(x.v[0]);
  N_Vector clone = N_VClone(x.v[0]);
  EXPECT_EQ(clone->ops->nvlinearsum, &serial_vector_ops::linear_sum);
  EXPECT_EQ(clone->ops->nvlinearcombination, &serial_vector_ops::linear_combination);
  EXPECT_EQ(clone->ops->nvwrmsnorm, &serial_vector_ops::wrms_norm);
  N_VDestroy(clone);
}
