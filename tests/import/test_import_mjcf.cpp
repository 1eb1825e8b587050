// MJCF import against MuJoCo itself: the same file compiled by MuJoCo and imported by treedyn
// must give the same dynamics. Compared coordinate-free (treedyn's spherical joint stands for
// MuJoCo's three hinges, so joint coordinates differ): kinetic energy (the mass matrix as a
// quadratic form), body accelerations at random states (mass matrix and bias forces together,
// M^-1 (tau - c)), and body positions after a short simulation. MuJoCo's contacts, limits,
// passive forces, armature and actuators are switched off, as treedyn does not model them.
#include <gtest/gtest.h>
#include <mujoco/mujoco.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>

#include "mujoco_peer.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_import.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/projection.hpp"
#include "treedyn/simulator.hpp"

namespace treedyn {
namespace {

const std::string kMujocoModels = "/usr/share/mujoco/model";
const std::string kHumanoid = kMujocoModels + "/humanoid/humanoid.xml";

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

/// A copy of humanoid.xml whose ankles are one hinge pair at one point with perpendicular axes
/// (the file's ankle_x sits 4 cm below ankle_y with an oblique axis: no single treedyn joint),
/// so that every body maps exactly; optionally with the torso welded to the world.
std::string humanoid_variant(bool exact_ankles, bool welded_torso) {
  std::string text = read(kHumanoid);
  if (exact_ankles) text = peers::with_exact_ankles(text, 1);
  if (welded_torso) text = replaced(text, "<freejoint name=\"root\"/>", "");
  const std::string path = (std::filesystem::temp_directory_path() /
                             ("treedyn_humanoid_" + std::to_string(exact_ankles) + std::to_string(welded_torso) + ".xml"))
                               .string();
  std::ofstream(path) << text;
  return path;
}

using peers::MjDataPtr;
using peers::MjModelPtr;
using peers::mujoco_model;  // MuJoCo's model of the file with what treedyn does not model switched off

/// A random state: hinge angles within 0.8 rad of qpos0, the free joint anywhere, ball joints
/// at any rotation, rates in [-2, 2].
void randomise(const mjModel& m, mjData& d, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  const auto random_rotation = [&](double* q) {
    Quat r(u(rng), u(rng), u(rng), u(rng));
    r.normalize();
    q[0] = r.w(), q[1] = r.x(), q[2] = r.y(), q[3] = r.z();
  };
  mj_resetData(&m, &d);
  for (int j = 0; j < m.njnt; ++j) {
    double* q = d.qpos + m.jnt_qposadr[j];
    if (m.jnt_type[j] == mjJNT_FREE) {
      for (int k = 0; k < 3; ++k) q[k] += u(rng);
      random_rotation(q + 3);
    } else if (m.jnt_type[j] == mjJNT_BALL) {
      random_rotation(q);
    } else if (m.jnt_type[j] == mjJNT_HINGE || m.jnt_type[j] == mjJNT_SLIDE) {
      q[0] += 0.8 * u(rng);
    }
  }
  for (int i = 0; i < m.nv; ++i) d.qvel[i] = 2.0 * u(rng);
}

/// treedyn's body states from MuJoCo's bodies (centre of mass, inertial axes, twist there).
SystemState body_states(const mjModel& m, const mjData& d, const Model& model) {
  SystemState s(static_cast<std::size_t>(model.body_count()));
  for (int b = 0; b < model.body_count(); ++b) {
    const int id = mj_name2id(&m, mjOBJ_BODY, model.bodies[static_cast<std::size_t>(b)].name.c_str());
    EXPECT_GE(id, 1) << model.bodies[static_cast<std::size_t>(b)].name;
    BodyState& x = s[static_cast<std::size_t>(b)];
    x.r = Vec3(d.xipos[3 * id], d.xipos[3 * id + 1], d.xipos[3 * id + 2]);
    x.q = Quat(Eigen::Map<const Eigen::Matrix<double, 3, 3, Eigen::RowMajor>>(d.ximat + 9 * id)).normalized();
    mjtNum twist[6];
    mj_objectVelocity(&m, &d, mjOBJ_BODY, id, twist, 0);  // [angular; linear at the centre of mass], global
    x.w = Vec3(twist[0], twist[1], twist[2]);
    x.v = Vec3(twist[3], twist[4], twist[5]);
  }
  return s;
}

double kinetic_energy_of(const Model& model, const SystemState& s) {
  double T = 0.0;
  for (int b = 0; b < model.body_count(); ++b) {
    const Body& body = model.bodies[static_cast<std::size_t>(b)];
    const BodyState& x = s[static_cast<std::size_t>(b)];
    const Vec3 w_body = x.q.conjugate() * x.w;
    T += 0.5 * body.mass * x.v.squaredNorm() + 0.5 * w_body.dot(body.inertia * w_body);
  }
  return T;
}

/// Accelerations: treedyn's at `s` (MuJoCo's state, mj_forward and mj_rnePostConstraint done)
/// against MuJoCo's (classical acceleration of the centre of mass; MuJoCo's cacc carries -g, added
/// back). The largest difference of any body's angular or linear acceleration, and the largest of
/// MuJoCo's (the scale).
std::pair<double, double> acceleration_difference(const mjModel& m, const mjData& d, const Model& model, Simulator& sim,
                                                  const SystemState& s) {
  sim.set_body_states(s);
  const SystemState& a = sim.snapshot().bodies;
  double scale = 0.0, worst = 0.0;
  for (int b = 0; b < model.body_count(); ++b) {
    const int id = mj_name2id(&m, mjOBJ_BODY, model.bodies[static_cast<std::size_t>(b)].name.c_str());
    mjtNum acc[6];
    mj_objectAcceleration(&m, &d, mjOBJ_BODY, id, acc, 0);
    const Vec3 alpha(acc[0], acc[1], acc[2]);
    const Vec3 lin = Vec3(acc[3], acc[4], acc[5]) + Vec3(m.opt.gravity[0], m.opt.gravity[1], m.opt.gravity[2]);
    const BodyState& x = a[static_cast<std::size_t>(b)];
    scale = std::max({scale, alpha.norm(), lin.norm()});
    worst = std::max({worst, (x.alpha - alpha).norm(), (x.a - lin).norm()});
  }
  return {worst, scale};
}

TEST(ImportMjcf, HumanoidWithExactJointsHasMuJoCosKineticEnergyAndAccelerationsAtRandomStates) {
  const std::string path = humanoid_variant(/*exact_ankles=*/true, /*welded_torso=*/false);
  const ImportedModel imported = import_mjcf_file(path);
  const auto model = share(imported.model);
  ASSERT_EQ(model->body_count(), 16);  // no connector bodies: every joint set maps exactly
  MjModelPtr m = mujoco_model(path);
  MjDataPtr d(mj_makeData(m.get()), mj_deleteData);
  // The reference formulation, and dca and hdca, whose torso leaf has five handles of 0 (the free
  // root), 6, 4, 4 and 4 rows (their mixed-rows mobility) and whose tree is split at single joints.
  Simulator sim(model, "reference");
  Simulator dca(model, "dca"), hdca(model, "hdca");
  std::mt19937 rng(7);
  for (int trial = 0; trial < 5; ++trial) {
    randomise(*m, *d, rng);
    mj_forward(m.get(), d.get());
    mj_rnePostConstraint(m.get(), d.get());
    // MuJoCo's kinetic energy: qvel' M qvel / 2.
    std::vector<mjtNum> Mv(static_cast<std::size_t>(m->nv));
    mj_mulM(m.get(), d.get(), Mv.data(), d->qvel);
    double T_mujoco = 0.0;
    for (int i = 0; i < m->nv; ++i) T_mujoco += 0.5 * d->qvel[i] * Mv[static_cast<std::size_t>(i)];
    const SystemState s = body_states(*m, *d, *model);
    EXPECT_NEAR(kinetic_energy_of(*model, s), T_mujoco, 1e-12 * T_mujoco) << "trial " << trial;
    const auto [worst, scale] = acceleration_difference(*m, *d, *model, sim, s);
    // Both are direct solutions of the same equations in double precision: 1e-9 relative leaves
    // room for the conditioning of a 27-DOF mass matrix.
    std::printf("trial %d: kinetic energy %.12g J; largest acceleration difference %.3g of %.3g\n", trial, T_mujoco, worst, scale);
    EXPECT_LT(worst, 1e-9 * scale) << "trial " << trial << ": largest acceleration difference " << worst << " of " << scale;
    for (auto [name, f] : {std::pair{"dca", &dca}, std::pair{"hdca", &hdca}}) {
      const auto [worst_f, scale_f] = acceleration_difference(*m, *d, *model, *f, s);
      std::printf("  %s: largest acceleration difference %.3g of %.3g\n", name, worst_f, scale_f);
      EXPECT_LT(worst_f, 1e-9 * scale_f) << name << ", trial " << trial;
    }
  }
}

// The chain of the benchmark against MuJoCo (bench/bench_mujoco.cpp), written by
// peers/mujoco_peer.hpp: its import is paper 000's chain (make_chain), and MuJoCo and treedyn's
// joint-space formulations compute the same accelerations at random states, so the benchmark
// times like against like.
TEST(ImportMjcf, SphericalChainInMjcfIsPaper000sChainWithMuJoCosAccelerationsAtRandomStates) {
  for (const int n : {1, 3, 16, peers::kMaxMjcfChainLinks}) {
    const std::string path = (std::filesystem::temp_directory_path() / ("treedyn_chain" + std::to_string(n) + ".xml")).string();
    std::ofstream(path) << peers::chain_mjcf(n);
    const ImportedModel imported = import_mjcf_file(path);
    EXPECT_TRUE(imported.warnings.empty()) << imported.warnings.front();
    const Model chain = make_chain(n, JointType::Spherical);
    ASSERT_EQ(imported.model.body_count(), n);
    ASSERT_EQ(imported.model.joints.size(), chain.joints.size());
    for (std::size_t i = 0; i < chain.bodies.size(); ++i) {
      const Body &a = imported.model.bodies[i], &b = chain.bodies[i];
      EXPECT_EQ(a.name, b.name);
      EXPECT_EQ(a.mass, b.mass);
      EXPECT_LT((a.inertia - b.inertia).norm(), 1e-15) << a.name;
      EXPECT_LT((a.position - b.position).norm(), 1e-12 * n) << a.name;  // MuJoCo sums the offsets
      EXPECT_LT(a.orientation.angularDistance(b.orientation), 1e-15) << a.name;
      const Joint &ja = imported.model.joints[i], &jb = chain.joints[i];
      EXPECT_EQ(ja.type, JointType::Spherical);
      EXPECT_EQ(ja.parent, jb.parent);
      EXPECT_EQ(ja.child, jb.child);
      EXPECT_LT((ja.child_frame.origin - jb.child_frame.origin).norm(), 1e-12 * n) << ja.name;
    }
    EXPECT_EQ(imported.model.gravity, chain.gravity);
    const auto model = share(imported.model);
    MjModelPtr m = mujoco_model(path);
    MjDataPtr d(mj_makeData(m.get()), mj_deleteData);
    for (const std::string formulation : {"dca", "hdca", "reference"}) {
      Simulator sim(model, formulation);
      std::mt19937 rng(static_cast<unsigned>(5 * n));
      for (int trial = 0; trial < 3; ++trial) {
        randomise(*m, *d, rng);
        mj_forward(m.get(), d.get());
        mj_rnePostConstraint(m.get(), d.get());
        const auto [worst, scale] = acceleration_difference(*m, *d, *model, sim, body_states(*m, *d, *model));
        // MuJoCo factors the chain's dense joint-space mass matrix (3n x 3n), treedyn solves in
        // O(n): both direct, in double precision. As against Simbody (tests/peers), 1e-10 of the
        // largest acceleration leaves room for round-off amplified along 96 links.
        EXPECT_LT(worst, 1e-10 * scale) << formulation << ", " << n << " links, trial " << trial
                                        << ": largest acceleration difference " << worst << " of " << scale;
        if (trial == 0) std::printf("%s, %d links: largest acceleration difference %.3g of %.3g\n", formulation.c_str(), n, worst, scale);
      }
    }
  }
}

/// Body positions after 0.5 s from qpos0 at rest, torso welded to the world (a free-falling
/// humanoid at rest only falls): MuJoCo with RK4 at 1e-4 s against treedyn's reference run.
double largest_position_difference(const std::string& path, const std::string& formulation,
                                   const ImportOptions& options = {}) {
  const ImportedModel imported = import_mjcf_file(path, options);
  const auto model = share(imported.model);
  MjModelPtr m = mujoco_model(path);
  m->opt.integrator = mjINT_RK4;
  m->opt.timestep = 1e-4;
  MjDataPtr d(mj_makeData(m.get()), mj_deleteData);
  for (int k = 0; k < 5000; ++k) mj_step(m.get(), d.get());
  FormulationSettings settings;
  settings.rtol = 1e-11;
  settings.atol = 1e-12;
  Simulator sim(model, formulation, settings);
  sim.advance_to(d->time);
  double worst = 0.0;
  for (int b = 0; b < model->body_count(); ++b) {
    const int id = mj_name2id(m.get(), mjOBJ_BODY, model->bodies[static_cast<std::size_t>(b)].name.c_str());
    if (id < 0) continue;  // a connector body
    worst = std::max(worst, (sim.body_states()[static_cast<std::size_t>(b)].r - Vec3(d->xipos[3 * id], d->xipos[3 * id + 1], d->xipos[3 * id + 2])).norm());
  }
  std::printf("%s, %s: largest body position difference from MuJoCo after %g s: %.3g m\n", path.c_str(),
              formulation.c_str(), d->time, worst);
  return worst;
}

TEST(ImportMjcf, HumanoidSwingingFromItsWeldedTorsoFollowsMuJoCosFineRk4Run) {
  // RK4 at 1e-4 s has an error near 1e-12 m over 0.5 s; treedyn's run at rtol 1e-11 a little
  // more: 1e-8 m is far below any mapping error (a wrong axis or inertia moves metres).
  EXPECT_LT(largest_position_difference(humanoid_variant(true, true), "reference"), 1e-8);
  EXPECT_LT(largest_position_difference(humanoid_variant(true, true), "dca"), 1e-8);
}

TEST(ImportMjcf, TheFilesOwnHumanoidGoesThroughConnectorBodiesWithinTheirStatedMassFraction) {
  const ImportedModel imported = import_mjcf_file(kHumanoid);
  EXPECT_EQ(imported.model.body_count(), 18);  // 16 bodies and one connector per ankle
  ASSERT_EQ(imported.warnings.size(), 2u);
  EXPECT_NE(imported.warnings[0].find("contacts of 20 geoms"), std::string::npos) << imported.warnings[0];
  EXPECT_NE(imported.warnings[0].find("21 actuators"), std::string::npos);
  EXPECT_NE(imported.warnings[1].find("2 connector bodies (right_foot/right_ankle_y, left_foot/left_ankle_y)"), std::string::npos)
      << imported.warnings[1];
  // A connector carries a fraction of its foot (1e-4 by default): positions differ from MuJoCo's
  // massless joint chain by about that fraction of the feet's travel (0.3 m), and shrink with it
  // (measured 6.8e-7 m at 1e-4, 6.8e-9 m at 1e-6; 2.5e-10 m for the exact variant above).
  const std::string path = humanoid_variant(false, true);
  const double at_default = largest_position_difference(path, "reference");
  ImportOptions lighter;
  lighter.connector_mass_fraction = 1e-6;
  const double at_lighter = largest_position_difference(path, "reference", lighter);
  EXPECT_LT(at_default, 1e-4 * 0.1);
  EXPECT_LT(at_lighter, 1e-6 * 0.1);
  EXPECT_GT(at_default, 10.0 * at_lighter);  // the difference is the connectors' mass, nothing else
  // Refused, naming the body and its joints, when connectors are switched off.
  ImportOptions none;
  none.connector_mass_fraction = 0.0;
  try {
    import_mjcf_file(kHumanoid, none);
    ADD_FAILURE() << "no error";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("body 'right_foot': its joints 'right_ankle_y', 'right_ankle_x'"), std::string::npos) << e.what();
  }
}

TEST(ImportMjcf, SliderCrankSampleHasNoLoopItsTransmissionIsAnActuatorAndItRunsUnderEveryFormulation) {
  // Debian's slider_crank.xml couples its bodies through slider-crank actuator transmissions,
  // not equality constraints: three hinged bodies, no loop. The actuators are listed as left out.
  const ImportedModel imported = import_mjcf_file(kMujocoModels + "/slider_crank/slider_crank.xml");
  EXPECT_EQ(imported.model.body_count(), 3);
  ASSERT_FALSE(imported.warnings.empty());
  EXPECT_NE(imported.warnings[0].find("3 actuators (forward, backward, broken)"), std::string::npos) << imported.warnings[0];
  const auto model = share(imported.model);
  for (const FormulationInfo& f : formulation_catalog()) {
    if (f.name == "hdca-planar") continue;  // planar models only
    Simulator sim(model, f.name);
    sim.advance_to(1.0);
    EXPECT_FALSE(sim.failed()) << f.name << ": " << sim.failure();
    EXPECT_LT(sim.constraint_errors().position, 1e-10) << f.name;
  }
}

TEST(ImportMjcf, ConnectEqualityClosesAFourBarThatKeepsItsLoopUnderEveryFormulation) {
  const std::string path = std::string(TREEDYN_IMPORT_DATA) + "/four_bar.xml";
  const ImportedModel imported = import_mjcf_file(path);
  EXPECT_EQ(imported.model.body_count(), 3);
  EXPECT_EQ(imported.model.joints.back().type, JointType::Spherical);  // the connect equality
  const auto model = share(imported.model);
  for (const FormulationInfo& f : formulation_catalog()) {
    if (f.name == "hdca-planar") continue;
    Simulator sim(model, f.name);
    sim.advance_to(1.0);
    EXPECT_FALSE(sim.failed()) << f.name << ": " << sim.failure();
    // Index-3 methods keep positions to their Newton tolerance; the ODE formulations to their
    // stabilisation: 1e-6 m on a 0.5 m mechanism is far inside either and far from a lost loop.
    EXPECT_LT(sim.constraint_errors().position, 1e-6) << f.name;
  }
}

// A weld or connect that does not hold at qpos0 (a relpose of its own) is kept as the file gives
// it, so the initial state is refused naming it, never silently welded where the bodies start.
TEST(ImportMjcf, EqualitiesKeepTheFilesGeometryAndAnInitialStateThatBreaksThemIsRefused) {
  const std::string path = (std::filesystem::temp_directory_path() / "treedyn_welds.xml").string();
  std::ofstream(path) << R"(<mujoco><worldbody>
    <body name="a" pos="0 0 1"><freejoint/><geom size=".1"/></body>
    <body name="b" pos="1 0 1"><freejoint/><geom size=".1"/></body>
    <body name="c" pos="2 0 1"><freejoint/><geom size=".1"/></body>
    </worldbody><equality>
    <weld name="held" body1="a" body2="b"/>
    <weld name="apart" body1="b" body2="c" relpose="0.5 0 0 1 0 0 0"/>
    </equality></mujoco>)";
  const Model model = import_mjcf_file(path).model;
  const ConsistencyReport report = check_initial_state(model, 1e-9);
  ASSERT_FALSE(report.consistent());
  std::string violations;
  for (const auto& v : report.violations) violations += v + "\n";
  EXPECT_NE(violations.find("apart"), std::string::npos) << violations;
  EXPECT_EQ(violations.find("held"), std::string::npos) << violations;
}

TEST(ImportMjcf, BadFilesAreErrorsNamingTheFileAndTheElement) {
  const std::string dir = std::filesystem::temp_directory_path().string();
  auto expect_error = [&](const std::string& xml, const std::string& wanted) {
    const std::string path = dir + "/treedyn_bad.xml";
    std::ofstream(path) << xml;
    try {
      import_mjcf_file(path);
      ADD_FAILURE() << "no error for " << xml;
    } catch (const ModelError& e) {
      EXPECT_NE(std::string(e.what()).find(wanted), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  };
  expect_error("<mujoco><worldbody><body><joint/><geom size=\".1\"/></body></worldbody>", "Line number=1");  // malformed
  expect_error("<mujoco><worldbody><body><joint type=\"hinge2\"/><geom size=\".1\"/></body></worldbody></mujoco>", "hinge2");
  expect_error("<mujoco><worldbody><body name=\"a\"><joint/><geom size=\".1\"/></body><body name=\"b\"><joint name=\"jb\"/>"
               "<geom size=\".1\"/></body></worldbody><equality><joint joint1=\"jb\" name=\"couple\"/></equality></mujoco>",
               "equality 'couple': a joint coupling");
  expect_error("<mujoco><worldbody><body name=\"ghost\"><joint/></body></worldbody></mujoco>", "mass and inertia");
}

}  // namespace
}  // namespace treedyn
