// The stepping API (Simulator) against independent results: the static equilibrium of a
// controlled pendulum solved in the test, the model's own spring element, the energy balance,
// whole runs (bit for bit), and fresh simulators.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <thread>

#include "allocation_counter.hpp"
#include "support.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/simulator.hpp"

using namespace treedyn;

namespace {

const std::vector<std::string> kAll = {"reference", "dca", "hdca", "ali3", "half-implicit", "fully-implicit"};

/// A uniform link of mass m and length L hanging from a pin at the origin (axis z), released
/// theta0 away from the downward vertical; gravity -g along y. Joint angle 0 is theta0.
struct Pendulum {
  double m = 1.0, L = 1.0, g = 9.81, theta0 = 0.3;
  double J() const { return m * L * L / 12.0; }  // about the centre, every axis

  Model model(double spring = 0.0, double damper = 0.0) const {
    ModelBuilder b("pendulum");
    b.gravity({0, -g, 0});
    Body link;
    link.name = "link";
    link.mass = m;
    link.inertia = J() * Mat3::Identity();
    link.position = 0.5 * L * Vec3(std::sin(theta0), -std::cos(theta0), 0);
    link.orientation = Quat(Eigen::AngleAxisd(theta0, Vec3::UnitZ()));
    b.body(link);
    b.joint(JointSpec::at("pin", JointType::Revolute, "ground", "link", {0, 0, 0}));
    if (spring > 0.0 || damper > 0.0)
      b.rotational_spring_damper({.name = "spring", .joint = "pin", .coordinate = 0, .stiffness = spring, .damping = damper});
    return b.build();
  }

  /// The joint angle q where kp (target - q) balances gravity's torque m g (L/2) sin(theta0 + q),
  /// by Newton's method.
  double equilibrium(double kp, double target) const {
    double q = target;
    for (int k = 0; k < 50; ++k) {
      const double f = kp * (target - q) - m * g * 0.5 * L * std::sin(theta0 + q);
      const double df = -kp - m * g * 0.5 * L * std::cos(theta0 + q);
      q -= f / df;
    }
    return q;
  }
};

/// Settings each formulation runs the small tests with: fixed steps of 1e-3 s where it has them;
/// ali3's penalty raised with the short step (alpha h^2 / (4 m) >= 50, docs/results/compare.md).
FormulationSettings fixed_step(const std::string& formulation) {
  FormulationSettings s;
  s.dt = 1e-3;
  if (formulation == "dca" || formulation == "hdca" || formulation == "reference") s.integrator = "rk4";
  s.ali3.alpha = 1e9;
  return s;
}

void expect_same_state(Simulator& a, Simulator& b, const std::string& what) {
  ASSERT_EQ(a.time(), b.time()) << what;
  EXPECT_EQ(a.q(), b.q()) << what;
  EXPECT_EQ(a.qd(), b.qd()) << what;
  for (std::size_t i = 0; i < a.body_states().size(); ++i) {
    EXPECT_EQ(a.body_states()[i].r, b.body_states()[i].r) << what;
    EXPECT_EQ(a.body_states()[i].v, b.body_states()[i].v) << what;
  }
}

template <class E, class F>
std::string message_of(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "(nothing thrown)";
}

}  // namespace

// A PD controller in the caller's loop holds the pendulum where the controller's torque balances
// gravity, under every formulation: stepping at the controller's rate (step() for the fixed-step
// methods, advance_to for the adaptive ones).
TEST(Simulator, PdControllerHoldsThePendulumAtItsStaticEquilibrium) {
  const Pendulum p;
  const double kp = 50.0, kd = 10.0, target = 0.8;
  const double expected = p.equilibrium(kp, target);
  const ModelPtr model = share(p.model());
  for (const std::string& name : kAll) {
    FormulationSettings s = fixed_step(name);
    if (name == "reference") s.integrator = "dopri5";
    Simulator sim(model, name, s);
    while (sim.time() < 6.0 - 1e-9) {
      const double tau = kp * (target - sim.q()(0)) - kd * sim.qd()(0);
      sim.set_joint_effort("pin", Eigen::VectorXd::Constant(1, tau));
      if (name == "reference") sim.advance_to(sim.time() + 1e-3);
      else sim.step();
    }
    EXPECT_NEAR(sim.q()(0), expected, 1e-6) << name;
    EXPECT_NEAR(sim.qd()(0), 0.0, 1e-5) << name;
  }
}

// A wrench that comes and goes acts only while it is applied: hdca holds the bodies' weights while
// gravity is the only load (AppliedLoads::evaluate_unless_held) and must take the wrench when it
// comes and the weights alone again when it goes. dca and hdca end where the reference does (the
// same rk4 steps, different coordinates of the same motion: 1e-9 rad is round-off and rk4's
// error together, both far below what the wrench moves, which is checked too).
TEST(Simulator, AnExternalWrenchThatComesAndGoesActsOnlyWhileApplied) {
  const ModelPtr model = share(read_model_file(test::model_path("spatial_double_pendulum")));
  const std::string body = model->bodies.back().name;
  auto run = [&](const std::string& name, bool push) {
    Simulator sim(model, name, fixed_step(name));
    for (int k = 0; k < 300; ++k) {
      if (push && k == 100) sim.set_body_wrench(body, Vec3(3, -2, 5), Vec3(0.5, 0.2, -0.4));
      if (push && k == 200) sim.clear_inputs();
      sim.step();
    }
    return std::pair{sim.q(), sim.qd()};
  };
  const auto reference = run("reference", true);
  EXPECT_GT((run("reference", false).first - reference.first).norm(), 1e-3);  // the wrench moves it
  for (const char* name : {"dca", "hdca"}) {
    const auto [q, qd] = run(name, true);
    EXPECT_LT((q - reference.first).norm(), 1e-9) << name;
    EXPECT_LT((qd - reference.second).norm(), 1e-8) << name;
  }
}

// One code path: a whole run is a loop of advance_to at its sample times, and step() repeated
// takes the same steps as advance_to over whole steps (bit for bit on this autonomous model; the
// times themselves differ in the last digit, t + h + h... against k h); an adaptive integrator's
// state does not depend on the outputs asked on the way (they interpolate).
TEST(Simulator, SteppingAdvancingAndWholeRunsAgree) {
  const ModelPtr model = share(read_model_file(test::model_path("spatial_double_pendulum")));
  for (const char* name : {"dca", "hdca", "ali3", "half-implicit", "reference"}) {
    FormulationSettings s = fixed_step(name);
    Simulator stepped(model, name, s), advanced(model, name, s), whole(model, name, s);
    for (int k = 0; k < 200; ++k) stepped.step();
    for (int k = 1; k <= 4; ++k) advanced.advance_to(0.05 * k);
    RunOptions run;
    run.t_end = 0.2;
    run.dt = 0.05;
    ASSERT_TRUE(run_simulation(whole, run).ok()) << name;
    expect_same_state(advanced, whole, name);
    EXPECT_NEAR(stepped.time(), 0.2, 1e-12) << name;
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(stepped.body_states()[i].r, advanced.body_states()[i].r) << name;
      EXPECT_EQ(stepped.body_states()[i].v, advanced.body_states()[i].v) << name;
    }
  }
  // hdca too: its error weights read the velocities of the latest right-hand side, which an
  // evaluation for an output (ARKODE's Hermite interpolant made one per output inside a step)
  // would have moved.
  for (const char* formulation : {"dca", "hdca"})
    for (const char* integrator : {"dopri5", "bdf"}) {
      FormulationSettings s;
      s.integrator = integrator;
      Simulator direct(model, formulation, s), sampled(model, formulation, s);
      direct.advance_to(0.1);  // the first output sets the first step's size in both
      direct.advance_to(1.0);
      for (int k = 1; k <= 10; ++k) sampled.advance_to(0.1 * k);
      expect_same_state(direct, sampled, std::string(formulation) + " " + integrator);
    }
}

// reset() returns to the model's initial state and the same run follows, bit for bit (no state
// left over in any workspace), with the counters from zero.
TEST(Simulator, ResetRepeatsTheRunExactly) {
  const ModelPtr model = share(read_model_file(test::model_path("four_bar")));
  for (const std::string& name : kAll) {
    FormulationSettings s = fixed_step(name);
    if (std::string(name) == "dca" || std::string(name) == "hdca" || std::string(name) == "reference") s.integrator = "dopri5";
    Simulator sim(model, name, s), fresh(model, name, s);
    sim.set_joint_effort("joint1", Eigen::VectorXd::Constant(1, 2.0));
    sim.advance_to(0.3);
    const SolverStats first = sim.stats();
    sim.reset();
    EXPECT_EQ(sim.time(), 0.0) << name;
    EXPECT_EQ(sim.stats().steps, 0) << name;
    EXPECT_EQ(sim.effort()(0), 0.0) << name;
    sim.advance_to(0.3);
    fresh.advance_to(0.3);
    expect_same_state(sim, fresh, name);
    EXPECT_GT(first.steps, 0) << name;
  }
}

// set_state restarts from any consistent state: continuing a run from its own state read back,
// in a second simulator, follows the first. The ODE formulations' state is the positions and
// velocities alone: the two agree to round-off. ali3 also carries its accelerations and
// multipliers from step to step, which a restart recomputes (consistent ones, as at t0): the two
// continuations part by ali3's local error. The implicit integrators' velocities violate the
// joints' velocity constraints by O(h) (index 3: positions are enforced, velocities are
// differences of positions), and the joint coordinates read back drop that part: they part by
// O(h) = 1e-3 as well.
TEST(Simulator, SetStateContinuesARunFromItsState) {
  const ModelPtr model = share(test::branched_tree());
  const std::map<std::string, double> bound = {{"reference", 1e-10}, {"dca", 1e-10},          {"hdca", 1e-10},
                                               {"ali3", 1e-6},       {"half-implicit", 2e-3}, {"fully-implicit", 2e-3}};
  for (const std::string& name : kAll) {
    const FormulationSettings s = fixed_step(name);
    Simulator first(model, name, s), second(model, name, s);
    first.advance_to(0.2);
    second.set_state(first.q(), first.qd());
    second.advance_to(0.2);  // t = 0 -> 0.2 from first's state at 0.2: the model is autonomous
    first.advance_to(0.4);
    double worst = 0.0;
    for (std::size_t i = 0; i < first.body_states().size(); ++i)
      worst = std::max(worst, (first.body_states()[i].r - second.body_states()[i].r).norm());
    EXPECT_LT(worst, bound.at(name)) << name;
  }
}

// A spring written as a load function of (q, qd) moves the pendulum as the model's own
// rotational spring-damper element does (a different code path: AppliedLoads' joint measures).
TEST(Simulator, LoadFunctionSpringMatchesTheModelsSpringElement) {
  const Pendulum p;
  const double k = 20.0, c = 0.7;
  for (const std::string& name : kAll) {
    const FormulationSettings s = fixed_step(name);
    Simulator element(share(p.model(k, c)), name, s), function(share(p.model()), name, s);
    function.set_load_function([&](const LoadState& x, LoadOutput& out) { out.effort(0) = -k * x.q(0) - c * x.qd(0); });
    element.advance_to(2.0);
    function.advance_to(2.0);
    EXPECT_NEAR(element.q()(0), function.q()(0), 1e-10) << name;
    EXPECT_NEAR(element.qd()(0), function.qd()(0), 1e-9) << name;
  }
}

// Inputs do work, and the energy balance counts it: a constant effort larger than gravity's
// torque spins the pendulum up by tens of joules while the drift (E - E0 - work) stays at the
// error of the work's quadrature.
TEST(Simulator, TheEnergyBalanceCountsTheWorkOfInputs) {
  const Pendulum p;
  for (const char* name : {"reference", "dca", "hdca"}) {
    FormulationSettings s;
    s.rtol = s.atol = 1e-9;
    Simulator sim(share(p.model()), name, s);
    sim.set_joint_effort("pin", Eigen::VectorXd::Constant(1, 10.0));
    RunOptions run;
    run.t_end = 2.0;
    run.dt = 1e-3;
    const SimulationResult r = run_simulation(sim, run);
    ASSERT_TRUE(r.ok()) << r.message;
    const double gained = std::abs(r.energy_final - r.energy_initial);
    EXPECT_GT(gained, 20.0) << name;
    // The work is integrated over the samples (trapezoidal rule, 1e-3 s): its error, not the
    // formulation's, bounds the drift here.
    EXPECT_LT(r.energy_drift_max, 1e-5 * gained) << name << ": gained " << gained << " J";
  }
}

// An effort switched on mid-run: the adaptive integrator restarts at the switch and follows the
// reference formulation (at its tight tolerance) through it.
TEST(Simulator, AnInputChangeRestartsTheAdaptiveIntegrators) {
  const ModelPtr model = share(read_model_file(test::model_path("spatial_double_pendulum")));
  std::vector<Vec3> tips;
  for (const std::string name : {"reference", "dca", "hdca"}) {
    FormulationSettings s;
    if (name != "reference") s.rtol = s.atol = 1e-9;
    Simulator sim(model, name, s);
    sim.advance_to(0.5);
    sim.set_body_wrench(model->bodies.back().name, {0, 0, 5.0}, {0.5, 0, 0});
    sim.advance_to(1.5);
    tips.push_back(sim.body_states().back().r);
  }
  EXPECT_LT((tips[1] - tips[0]).norm(), 1e-6);
  EXPECT_LT((tips[2] - tips[0]).norm(), 1e-6);
}

TEST(Simulator, BadInputIsRefusedNamingTheItemAndChangesNothing) {
  const ModelPtr model = share(read_model_file(test::model_path("four_bar")));
  Simulator sim(model, "dca", fixed_step("dca"));
  sim.advance_to(0.1);
  const Eigen::VectorXd q = sim.q(), qd = sim.qd();
  auto refused = [&](auto&& f, const std::string& expected) {
    const std::string what = message_of<std::invalid_argument>(f);
    EXPECT_NE(what.find(expected), std::string::npos) << what;
  };
  refused([&] { sim.set_state(Eigen::VectorXd::Zero(2), qd); }, "expected 4 values");
  Eigen::VectorXd bad = q;
  bad(2) = NAN;
  refused([&] { sim.set_state(bad, qd); }, "joint3.angle");
  refused([&] { sim.set_effort(Eigen::VectorXd::Zero(3)); }, "expected 4 values");
  refused([&] { sim.set_joint_effort("joint1", Eigen::VectorXd::Constant(1, INFINITY)); }, "joint1.angle");
  refused([&] { sim.set_joint_effort("joint9", Eigen::VectorXd::Zero(1)); }, "'joint9'");
  refused([&] { sim.set_joint_effort("joint1", Eigen::VectorXd::Zero(2)); }, "expected 1 value");
  refused([&] { sim.set_body_wrench("Z", Vec3::Zero(), Vec3::Zero()); }, "'Z'");
  refused([&] { sim.set_body_wrench("A", Vec3(NAN, 0, 0), Vec3::Zero()); }, "'A'");
  refused([&] { sim.joint_q("nope"); }, "'nope'");
  refused([&] { sim.advance_to(0.05); }, "not after");
  refused([&] { sim.reaction("nope"); }, "'nope'");
  EXPECT_EQ(sim.q(), q);
  EXPECT_EQ(sim.qd(), qd);
  EXPECT_EQ(sim.effort(), Eigen::VectorXd::Zero(4));
  EXPECT_THROW(Simulator(model, "no-such-method"), std::invalid_argument);
  EXPECT_THROW(Simulator(nullptr, "dca"), std::invalid_argument);
}

// A step that fails leaves the simulator readable but refusing to step (a clear message), until
// reset() or set_state(), after which it runs again.
// g++ 12 at -O2 warns that the settings' optional<string> may be read uninitialised where they
// are copied into the simulator: a known false positive of its -Wmaybe-uninitialized on
// std::optional<std::string>, reported to GCC several times; `s.integrator.emplace` warns the same.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
TEST(Simulator, AFailedStepStopsSteppingUntilResetOrSetState) {
  FormulationSettings s;
  s.integrator = "euler";
  s.dt = 0.3;
  Simulator sim(share(read_model_file(test::model_path("spatial_double_pendulum"))), "dca", s);
  bool failed = false;
  for (int k = 0; k < 400 && !failed; ++k) {
    try {
      sim.step();
    } catch (const SimulationError& e) {
      failed = true;
      EXPECT_NE(std::string(e.what()).find("joint"), std::string::npos) << e.what();
    }
  }
  ASSERT_TRUE(failed);
  EXPECT_TRUE(sim.failed());
  EXPECT_NE(message_of<std::logic_error>([&] { sim.step(); }).find("call reset()"), std::string::npos);
  sim.reset();
  EXPECT_FALSE(sim.failed());
  EXPECT_NO_THROW(sim.step());
  const Eigen::VectorXd q = sim.q(), qd = sim.qd();
  for (int k = 0; k < 400 && !sim.failed(); ++k) {
    try {
      sim.step();
    } catch (const SimulationError&) {
    }
  }
  ASSERT_TRUE(sim.failed());
  sim.set_state(q, qd);
  EXPECT_NO_THROW(sim.step());
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

// An interrupt check is asked inside advance_to, not only between calls: before each step of the
// step-based formulations and fixed-step integrators, and before each right-hand side of the
// adaptive ones (ARKODE's dopri5 and bs23, CVODE's adams and bdf), which take many steps inside
// one call. The call throws Interrupted after the check's 21st ask, far short of the 5 s asked.
// That is no failure: the simulator is at its last completed output or step and goes on from
// there. The fixed steps then take exactly the steps an uninterrupted run takes (the same
// numbers); the adaptive integrators start afresh at the last output, as after set_state, so
// they agree to their tolerance (1e-6 asked; within 1e-4 rad over 0.2 s).
TEST(Simulator, AnInterruptCheckStopsALongAdvanceAndTheRunGoesOnFromItsLastOutput) {
  const auto model = share(read_model_file(test::model_path("spatial_double_pendulum")));
  struct Case {
    std::string formulation, integrator;
    bool fixed_step;
  };
  for (const Case& c : {Case{"dca", "dopri5", false}, Case{"hdca", "bs23", false}, Case{"dca", "bdf", false},
                        Case{"reference", "adams", false}, Case{"dca", "rk4", true}, Case{"ali3", "", true},
                        Case{"half-implicit", "", true}}) {
    SCOPED_TRACE(c.formulation + " " + c.integrator);
    FormulationSettings s;
    if (!c.integrator.empty()) s.integrator = c.integrator;
    s.dt = 1e-3;
    Simulator sim(model, c.formulation, s), uninterrupted(model, c.formulation, s);
    int asked = 0;
    sim.set_interrupt([&asked] { return ++asked > 20; });
    EXPECT_THROW(sim.advance_to(5.0), Interrupted);
    EXPECT_EQ(asked, 21);
    EXPECT_FALSE(sim.failed());
    EXPECT_LT(sim.time(), 0.1);
    EXPECT_LT(sim.stats().rhs_evaluations, 200);  // stopped inside: 5 s take thousands
    sim.set_interrupt({});
    const double t = sim.time();
    sim.advance_to(0.2);
    uninterrupted.advance_to(t > 0.0 ? t : 0.2);  // the same outputs: the interrupted run's last, then 0.2
    if (t > 0.0) uninterrupted.advance_to(0.2);
    const double difference = (sim.q() - uninterrupted.q()).cwiseAbs().maxCoeff();
    if (c.fixed_step) EXPECT_EQ(difference, 0.0);
    else EXPECT_LT(difference, 1e-4);
  }
}

// The check stays with the simulator when reset(settings) makes its formulation anew.
TEST(Simulator, AnInterruptCheckOutlivesANewFormulation) {
  Simulator sim(share(read_model_file(test::model_path("four_bar"))), "dca");
  bool stop = false;
  sim.set_interrupt([&stop] { return stop; });
  FormulationSettings s;
  s.integrator = "bs23";
  sim.reset(s);
  sim.advance_to(0.01);
  stop = true;
  EXPECT_THROW(sim.advance_to(0.02), Interrupted);
}

// A state that puts the loop-closing joint elsewhere than the other joints do is refused, naming
// it; asked to, the simulator projects the state onto the joints instead.
TEST(Simulator, AStateViolatingALoopIsRefusedOrProjected) {
  const ModelPtr model = share(read_model_file(test::model_path("four_bar")));
  for (const char* name : {"reference", "dca", "hdca", "ali3"}) {
    Simulator sim(model, name, fixed_step(name));
    const CoordinateMap& map = sim.coordinates();
    const CoordinateMap::Entry* loop = nullptr;
    for (const auto& e : map.entries())
      if (e.loop) loop = &e;
    ASSERT_NE(loop, nullptr);
    Eigen::VectorXd q = sim.q();
    q(map.entry("joint2").q_offset) += 0.2;  // the coupler turned: the loop no longer closes
    const std::string what = message_of<std::invalid_argument>([&] { sim.set_state(q, sim.qd()); });
    EXPECT_NE(what.find("violates the constraints"), std::string::npos) << what;
    EXPECT_NE(what.find("StateFix::Project"), std::string::npos) << what;
    EXPECT_EQ(sim.time(), 0.0);
    sim.set_state(q, sim.qd(), StateFix::Project);
    EXPECT_LT(sim.constraint_errors().position, 1e-8) << name;
    EXPECT_LT(sim.constraint_errors().velocity, 1e-8) << name;
    sim.advance_to(0.1);
    // The loop joint's own entry must agree with the others.
    Eigen::VectorXd q2 = sim.q();
    q2(loop->q_offset) += 0.1;
    const std::string loop_what = message_of<std::invalid_argument>([&] { sim.set_state(q2, sim.qd()); });
    EXPECT_NE(loop_what.find("'" + loop->name() + "' closes a loop"), std::string::npos) << loop_what;
  }
}

// One Model, many simulators on many threads: each run is the run it would be alone.
TEST(Simulator, OneModelServesSimulatorsOnManyThreads) {
  const ModelPtr model = share(read_model_file(test::model_path("loop4")));
  auto run = [&](const std::string& name) {
    Simulator sim(model, name, fixed_step(name));
    sim.advance_to(0.5);
    return sim.body_states();
  };
  const std::vector<std::string> names = {"dca", "hdca", "ali3", "half-implicit"};
  std::vector<SystemState> alone, together(names.size());
  for (const auto& n : names) alone.push_back(run(n));
  std::vector<std::thread> threads;
  for (std::size_t k = 0; k < names.size(); ++k) threads.emplace_back([&, k] { together[k] = run(names[k]); });
  for (auto& t : threads) t.join();
  for (std::size_t k = 0; k < names.size(); ++k)
    for (std::size_t i = 0; i < alone[k].size(); ++i) EXPECT_EQ(alone[k][i].r, together[k][i].r) << names[k];
}

// One joint changed, the rest kept: set_joint_state, read back by joint_q / joint_qd.
TEST(Simulator, SetsAndReadsOneJoint) {
  const ModelPtr model = share(test::branched_tree());
  Simulator sim(model, "hdca", fixed_step("hdca"));
  const Eigen::Vector4d turned = Eigen::Vector4d(0.9, 0.1, -0.3, 0.2).normalized();
  sim.set_joint_state("j_l2", turned, Eigen::Vector3d(0.5, -0.2, 0.1));
  EXPECT_LT((sim.joint_q("j_l2") - turned).norm(), 1e-12);
  EXPECT_LT((sim.joint_qd("j_l2") - Eigen::Vector3d(0.5, -0.2, 0.1)).norm(), 1e-12);
  EXPECT_LT(sim.joint_q("j_trunk").norm() - 1.0, 1e-12);  // untouched: the identity quaternion
  EXPECT_NEAR(sim.joint_q("j_trunk")(0), 1.0, 1e-12);
}

// A control loop allocates nothing once running: reading the state, setting an effort and a
// step (dca with rk4, hdca with dopri5 restarting after each input change), with a torsion
// spring, whose angle the loads measure in every right-hand side.
TEST(Simulator, AControlLoopAllocatesNothing) {
  TREEDYN_SKIP_UNLESS_ALLOCATIONS_COUNTED();
  Model chain = make_chain(16, JointType::Revolute);
  chain.rotational_springs.push_back({.name = "torsion", .joint = 3, .coordinate = 0, .stiffness = 2.0, .damping = 0.1});
  const ModelPtr model = share(std::move(chain));
  for (const char* name : {"dca", "hdca"}) {
    FormulationSettings s = fixed_step(name);
    if (std::string(name) == "hdca") s.integrator = "dopri5";
    Simulator sim(model, name, s);
    Eigen::VectorXd effort = Eigen::VectorXd::Zero(sim.coordinates().nv());
    auto control_step = [&] {
      effort = -2.0 * sim.qd();
      sim.set_effort(effort);
      sim.step();
    };
    for (int k = 0; k < 3; ++k) control_step();
    test::CountAllocations counting;
    for (int k = 0; k < 20; ++k) control_step();
    EXPECT_EQ(counting.count(), 0) << name;
  }
}

// Issue 28's ladder of coupled four-bars is a parallelogram row: every rung turns by the same
// angle theta, every coupler translates on a circle of radius L. So the whole ladder swings as one
// compound pendulum: theta'' = -c sin(theta), with
//   c = g ((N + 1) m L/2 + N m L) / ((N + 1) (I + m L^2/4) + N m L^2),
// I the rung's central inertia about z. Integrated here with RK4 at 1e-4 s (error ~1e-15), it is
// the reference for every formulation on the 3-D model with its 3 N redundant equations.
TEST(Simulator, ALadderOfCoupledFourBarsSwingsAsItsEquivalentCompoundPendulum) {
  const int N = 8;
  const auto model = share(make_ladder(N));
  const double g = 9.81, L = 1.0, m = 1.0, I = model->bodies[0].inertia(2, 2), t_end = 1.5;
  const double c = g * ((N + 1) * m * L / 2 + N * m * L) / ((N + 1) * (I + m * L * L / 4) + N * m * L * L);
  auto f = [c](const Vec2& x) { return Vec2(x(1), -c * std::sin(x(0))); };
  Vec2 x(0.5, 0.0);
  const double h = 1e-4;
  for (int k = 0; k < static_cast<int>(std::lround(t_end / h)); ++k) {
    const Vec2 k1 = f(x), k2 = f(x + 0.5 * h * k1), k3 = f(x + 0.5 * h * k2), k4 = f(x + h * k3);
    x += h / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
  }
  for (const std::string formulation : {"reference", "dca", "hdca", "ali3"}) {
    FormulationSettings settings;
    if (formulation == "ali3") settings.dt = 1e-3;  // second-order error over 1.5 s: ~1e-5 rad
    else settings.rtol = settings.atol = 1e-10;
    const double bound = formulation == "ali3" ? 1e-4 : 1e-7;  // rad: each one's own error, with room
    Simulator sim(model, formulation, settings);
    sim.advance_to(t_end);
    ASSERT_FALSE(sim.failed()) << formulation << ": " << sim.failure();
    for (int r = 0; r <= N; ++r) {  // every rung at the pendulum's angle (coordinates count from 0.5 rad)
      const double theta = 0.5 + sim.joint_q("pivot" + std::to_string(r))(0);
      EXPECT_NEAR(theta, x(0), bound) << formulation << ", rung " << r;
    }
  }
}

// After an adaptive step dca and hdca may leave a unit quaternion whose norm is off by up to a
// thousandth of the tolerances in the integrator's own state (so that dopri5 reuses its last
// stage); the state a step hands out is projected exactly, as advance_to's outputs are.
TEST(Simulator, AStepHandsOutUnitQuaternions) {
  const ModelPtr model = share(make_chain(32, JointType::Spherical));
  for (const char* name : {"dca", "hdca"}) {
    Simulator sim(model, name);
    double worst = 0.0;
    for (int k = 0; k < 40; ++k) {
      sim.step();
      const Eigen::VectorXd y = sim.formulation().ode_state();
      for (int j = 0; j < 32; ++j) worst = std::max(worst, std::abs(y.segment<4>(4 * j).norm() - 1.0));
    }
    EXPECT_LE(worst, 4e-16) << name;
  }
}
