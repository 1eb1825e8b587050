#include "support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "treedyn/model_builder.hpp"

namespace treedyn::test {

std::string model_path(const std::string& name) { return std::string(TREEDYN_MODELS_DIR) + "/" + name + ".json"; }

std::vector<std::string> shipped_models() {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(TREEDYN_MODELS_DIR))
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

BodyState moved(const BodyState& s, const Vec6& twist, double h) {
  BodyState out = s;
  out.r = s.r + h * twist.head<3>();
  out.q = (quat_exp<double>(h * twist.tail<3>()) * s.q).normalized();
  return out;
}

BodyState random_state(std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  auto vec = [&] { return Vec3(u(rng), u(rng), u(rng)); };
  BodyState s;
  s.r = vec();
  s.q = Quat(u(rng), u(rng), u(rng), u(rng)).normalized();
  s.v = vec();
  s.w = vec();
  s.a = vec();
  s.alpha = vec();
  return s;
}

SystemState random_states(const Model& model, std::mt19937& rng) {
  SystemState state(model.bodies.size());
  for (BodyState& s : state) s = random_state(rng);
  return state;
}

Eigen::VectorXd random_vector(Eigen::Index n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::VectorXd x(n);
  for (Eigen::Index i = 0; i < n; ++i) x(i) = u(rng);
  return x;
}

Eigen::VectorXd rk4(const std::function<Eigen::VectorXd(double, const Eigen::VectorXd&)>& f, Eigen::VectorXd y,
                    double t0, double t1, double h) {
  const long n = std::lround((t1 - t0) / h);
  const double dt = (t1 - t0) / static_cast<double>(n);
  double t = t0;
  for (long i = 0; i < n; ++i) {
    const Eigen::VectorXd k1 = f(t, y);
    const Eigen::VectorXd k2 = f(t + dt / 2, y + dt / 2 * k1);
    const Eigen::VectorXd k3 = f(t + dt / 2, y + dt / 2 * k2);
    const Eigen::VectorXd k4 = f(t + dt, y + dt * k3);
    y += dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4);
    t += dt;
  }
  return y;
}

Eigen::Vector4d double_pendulum_rate(const Eigen::Vector4d& s, double m, double L, double J, double g) {
  // Link 1 centre at (L/2) e(theta1), link 2 centre at L e(theta1) + (L/2) e(theta2), with
  // e(theta) = (sin theta, -cos theta). Kinetic energy
  //   T = 1/2 (J + m L^2/4 + m L^2) w1^2 + 1/2 (J + m L^2/4) w2^2 + 1/2 m L^2 cos(t1 - t2) w1 w2,
  // potential V = -m g (L/2 cos t1) - m g (L cos t1 + L/2 cos t2).
  const double t1 = s(0), t2 = s(1), w1 = s(2), w2 = s(3);
  const double c = std::cos(t1 - t2), sn = std::sin(t1 - t2);
  const double a11 = J + 1.25 * m * L * L, a22 = J + 0.25 * m * L * L, a12 = 0.5 * m * L * L * c;
  const double r1 = -0.5 * m * L * L * sn * w2 * w2 - 1.5 * m * g * L * std::sin(t1);
  const double r2 = 0.5 * m * L * L * sn * w1 * w1 - 0.5 * m * g * L * std::sin(t2);
  const double det = a11 * a22 - a12 * a12;
  return {w1, w2, (a22 * r1 - a12 * r2) / det, (a11 * r2 - a12 * r1) / det};
}

}  // namespace treedyn::test

namespace treedyn::test {

SimulationResult simulate(const Model& model, const std::string& formulation, const FormulationSettings& settings,
                          double t_end, double dt, Recorder* recorder) {
  Simulator simulator(std::make_shared<const Model>(model), formulation, settings);
  RunOptions run;
  run.t_end = t_end;
  run.dt = dt;
  // The tests that use this measure a run against their own independent reference; the refined
  // companion (RunOptions::verify) is tested by itself (test_simulation, test_defaults_table).
  run.verify = false;
  run.judge.branch = 0.0;
  return run_simulation(simulator, run, recorder);
}

double max_position_difference(const Recorder& a, const Recorder& b) {
  double worst = 0.0;
  const std::size_t n = std::min(a.snapshots.size(), b.snapshots.size());
  for (std::size_t k = 0; k < n; ++k)
    for (std::size_t i = 0; i < a.snapshots[k].bodies.size(); ++i)
      worst = std::max(worst, (a.snapshots[k].bodies[i].r - b.snapshots[k].bodies[i].r).norm());
  return worst;
}

Model double_pendulum_model(const DoublePendulumCase& c) {
  ModelBuilder b("planar double pendulum");
  b.gravity({0, -c.g, 0});
  const Vec3 e1(std::sin(c.theta1), -std::cos(c.theta1), 0), e2(std::sin(c.theta2), -std::cos(c.theta2), 0);
  auto link = [&](const std::string& name, const Vec3& centre, double theta) {
    Body body;
    body.name = name;
    body.mass = c.m;
    body.inertia = c.J * Mat3::Identity();
    body.position = centre;
    body.orientation = Quat(Eigen::AngleAxisd(theta, Vec3::UnitZ()));
    return body;
  };
  b.body(link("l1", 0.5 * c.L * e1, c.theta1)).body(link("l2", c.L * e1 + 0.5 * c.L * e2, c.theta2));
  b.joint(JointSpec::at("j1", JointType::Revolute, "ground", "l1", {0, 0, 0}));
  b.joint(JointSpec::at("j2", JointType::Revolute, "l1", "l2", c.L * e1));
  return b.build();
}

double max_deviation_from_lagrange(const Recorder& recording, const DoublePendulumCase& c) {
  Eigen::VectorXd y(4);
  y << c.theta1, c.theta2, 0, 0;
  auto rate = [&](double, const Eigen::VectorXd& x) { return Eigen::VectorXd(double_pendulum_rate(x, c.m, c.L, c.J, c.g)); };
  double t = 0, worst = 0;
  for (const Snapshot& s : recording.snapshots) {
    y = rk4(rate, y, t, s.t, 1e-4);
    t = s.t;
    const Vec3 c1 = 0.5 * c.L * Vec3(std::sin(y(0)), -std::cos(y(0)), 0);
    const Vec3 c2 = 2 * c1 + 0.5 * c.L * Vec3(std::sin(y(1)), -std::cos(y(1)), 0);
    worst = std::max({worst, (s.bodies[0].r - c1).norm(), (s.bodies[1].r - c2).norm()});
  }
  return worst;
}

Body link(const std::string& name, const Vec3& a, const Vec3& b, double mass) {
  Body body;
  body.name = name;
  body.mass = mass;
  body.inertia = Vec3(0.05, 0.3, 0.3).asDiagonal() * mass;
  body.position = 0.5 * (a + b);
  body.orientation = Quat::FromTwoVectors(Vec3::UnitX(), b - a);
  return body;
}

Body box(const std::string& name, const Vec3& position, double angle) {
  Body b;
  b.name = name;
  b.mass = 1.0 + position.norm();
  b.inertia = Vec3(1.0, 1.5, 2.0).asDiagonal();
  b.position = position;
  b.orientation = Quat(Eigen::AngleAxisd(angle, Vec3(1, 2, 3).normalized()));
  return b;
}

Eigen::VectorXd random_coordinates(const JointSpace& js, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::VectorXd q(js.nq());
  for (int i = 0; i < js.nq(); ++i) q(i) = u(rng);
  for (const TreeJoint& t : js.tree())
    if (t.type == JointType::Spherical || t.type == JointType::Free) {
      auto Q = q.segment<4>(t.q_offset + (t.type == JointType::Free ? 3 : 0));
      Q(0) = std::abs(Q(0)) + 0.1;  // canonical sign
      Q.normalize();
    }
  return q;
}

Model welded_tree(bool weld_closes_loop) {
  ModelBuilder b("welded");
  b.gravity({0, -9.81, 0});
  const Vec3 tilted = Vec3(0.3, 1.0, 0.2).normalized(), across = Vec3(1.0, 0.2, -0.4).normalized();
  b.body(link("trunk", {0, 0, 0}, {0.3, -0.8, 0.1}));
  b.joint(JointSpec::at("j_trunk", JointType::Spherical, "ground", "trunk", {0, 0, 0}));
  b.body(box("plate", {0.4, -0.9, 0.2}, 0.7));
  b.joint(JointSpec::at("weld_plate", JointType::Fixed, "trunk", "plate", {0.3, -0.8, 0.1}, tilted));
  b.body(link("arm", {0.4, -0.9, 0.2}, {0.8, -1.6, 0.4}));
  b.joint(JointSpec::at("j_arm", JointType::Spherical, "plate", "arm", {0.4, -0.9, 0.2}));
  b.body(box("hand", {0.85, -1.7, 0.45}, -0.3));  // welded to the arm by a joint whose model parent is the hand
  b.joint(JointSpec::at("weld_hand", JointType::Fixed, "hand", "arm", {0.8, -1.6, 0.4}, across));
  b.body(box("finger", {0.9, -1.9, 0.5}, 1.1));
  b.joint(JointSpec::at("weld_finger", JointType::Fixed, "hand", "finger", {0.88, -1.8, 0.5}, tilted));
  b.body(link("leg", {0.3, -0.8, 0.1}, {0.6, -1.8, 0.3}));
  const Vec3 leg_axis = Vec3(0.3, -1.0, 0.2).cross(Vec3(0.3, 0.2, 1.0)).normalized();
  b.joint(JointSpec::at("j_leg", JointType::Universal, "trunk", "leg", {0.3, -0.8, 0.1}, leg_axis,
                        Vec3(Vec3(0.3, -1.0, 0.2).cross(leg_axis).normalized())));
  b.body(link("shin", {0.6, -1.8, 0.3}, {0.5, -2.5, 0.2}));
  b.joint(JointSpec::at("j_shin", JointType::Revolute, "leg", "shin", {0.6, -1.8, 0.3}, across));
  b.body(box("foot", {0.5, -2.6, 0.3}, 0.4));
  b.joint(JointSpec::at("weld_foot", JointType::Fixed, "shin", "foot", {0.5, -2.5, 0.2}, tilted));
  if (weld_closes_loop) b.joint(JointSpec::at("loop", JointType::Spherical, "finger", "leg", {0.6, -1.8, 0.3}));
  else b.joint(JointSpec::at("loop", JointType::Spherical, "finger", "foot", {0.7, -2.2, 0.4}));  // between welded members
  b.spring_damper({"spring", "foot", "hand", {{0.5, -2.6, 0.4}, true}, {{0.85, -1.7, 0.5}, true}, 40.0, 0.5, 0.3});
  b.body_force({"push", "finger", {0.0, 0.0, 3.0}, TimeFunction::constant(1.0), LoadFrame::Global,
                PointSpec{{0.95, -1.9, 0.5}, true}});
  Body pod = box("pod", {2.0, 0.0, 0.0}, 0.2), tail = box("pod_tail", {2.5, 0.2, 0.0}, -0.5);  // no joint to ground
  pod.velocity = {0.1, 0.5, 0.0};
  pod.angular_velocity = {0.3, 1.0, -0.4};
  tail.velocity = pod.velocity + pod.angular_velocity.cross(tail.position - pod.position);
  tail.angular_velocity = pod.angular_velocity;
  b.body(pod).body(tail);
  b.joint(JointSpec::at("weld_pod", JointType::Fixed, "pod", "pod_tail", {2.3, 0.1, 0.0}, across));
  b.body(box("base", {-1.0, 0.0, 0.0}, 0.3)).body(box("mount", {-1.2, -0.3, 0.1}, -0.2));  // static
  b.joint(JointSpec::at("weld_base", JointType::Fixed, "ground", "base", {-1.0, 0.1, 0.0}, tilted));
  b.joint(JointSpec::at("weld_mount", JointType::Fixed, "mount", "base", {-1.1, -0.2, 0.0}, across));
  b.body(link("flap", {-1.2, -0.4, 0.1}, {-1.5, -1.0, 0.4}));
  b.joint(JointSpec::at("j_flap", JointType::Revolute, "mount", "flap", {-1.2, -0.4, 0.1}, across));
  return b.build();
}

/// One joint of every type along a chain, a free body, and a reversed universal joint (its model
/// parent is further from ground than its child).
Model joint_zoo() {
  ModelBuilder b("zoo");
  const JointType types[] = {JointType::Revolute,  JointType::Prismatic, JointType::Cylindrical, JointType::Universal,
                             JointType::Spherical, JointType::Planar,    JointType::Fixed};
  std::string parent = "ground";
  for (int i = 0; i < 7; ++i) {
    const std::string name = "b" + std::to_string(i + 1);
    b.body(box(name, {0.5 + i, 0.1 * i, -0.05 * i}, 0.3 * i));
    const Vec3 axis = Vec3(0.2 * i, 1.0, 0.5).normalized();
    b.joint(JointSpec::at("j" + std::to_string(i + 1), types[i], parent, name, {static_cast<double>(i), 0.1 * i, 0.0}, axis,
                          types[i] == JointType::Universal ? std::optional<Vec3>(any_perpendicular(axis)) : std::nullopt));
    parent = name;
  }
  b.body(box("floating", {3, 3, 3}, 1.0));
  b.joint(JointSpec::at("jfree", JointType::Free, "ground", "floating", {3, 3, 3}));
  b.body(box("hanging", {1.0, -1.0, 0.2}, -0.4));  // reached from b1 through a reversed joint
  const Vec3 axis(0.0, 0.0, 1.0);
  b.joint(JointSpec::at("jrev", JointType::Universal, "hanging", "b1", {1.0, -0.5, 0.1}, axis, Vec3(1.0, 0.0, 0.0)));
  return b.build();
}

Model branched_tree() {
  ModelBuilder b("tree");
  b.gravity({0, -9.81, 0});
  auto add = [&](const std::string& name, const std::string& parent, const Vec3& a, const Vec3& c, JointType type) {
    b.body(link(name, a, c));
    const Vec3 axis = (c - a).cross(Vec3(0.3, 0.2, 1.0)).normalized();
    b.joint(JointSpec::at("j_" + name, type, parent, name, a, axis,
                          type == JointType::Universal ? std::optional<Vec3>((c - a).cross(axis).normalized()) : std::nullopt));
  };
  add("trunk", "ground", {0, 0, 0}, {0.3, -0.8, 0.1}, JointType::Spherical);
  add("l1", "trunk", {0.3, -0.8, 0.1}, {0.7, -1.5, 0.3}, JointType::Revolute);
  add("l2", "l1", {0.7, -1.5, 0.3}, {0.9, -2.2, 0.6}, JointType::Spherical);
  add("l3", "l2", {0.9, -2.2, 0.6}, {1.0, -2.9, 0.9}, JointType::Universal);
  add("r1", "trunk", {0.3, -0.8, 0.1}, {0.0, -1.5, -0.3}, JointType::Universal);
  add("r2", "r1", {0.0, -1.5, -0.3}, {-0.2, -2.2, -0.5}, JointType::Spherical);
  add("r3", "r2", {-0.2, -2.2, -0.5}, {-0.1, -2.9, -0.8}, JointType::Revolute);
  add("s1", "r1", {0.0, -1.5, -0.3}, {0.4, -2.0, -0.7}, JointType::Spherical);
  return b.build();
}

Model floating_chain() {
  ModelBuilder b("floating");
  Body a = link("a", {0, 0, 0}, {1, 0, 0}), c = link("c", {1, 0, 0}, {1.5, 0.8, 0.2}), d = link("d", {1.5, 0.8, 0.2}, {2, 1, 1});
  a.velocity = {0.3, 0, 0.1};
  a.angular_velocity = {0.2, 1.0, -0.5};
  c.velocity = a.velocity + a.angular_velocity.cross(c.position - a.position);
  c.angular_velocity = a.angular_velocity;
  d.velocity = a.velocity + a.angular_velocity.cross(d.position - a.position);
  d.angular_velocity = a.angular_velocity;
  b.body(a).body(c).body(d);
  b.joint(JointSpec::at("ac", JointType::Spherical, "a", "c", {1, 0, 0}));
  b.joint(JointSpec::at("cd", JointType::Revolute, "c", "d", {1.5, 0.8, 0.2}, Vec3(0, 0, 1)));
  return b.build();
}

std::pair<Vec3, Vec3> total_momenta(const Model& m, const SystemState& s) {
  Vec3 p = Vec3::Zero(), L = Vec3::Zero();
  for (std::size_t i = 0; i < s.size(); ++i) {
    const Mat3 A = s[i].q.toRotationMatrix();
    p += m.bodies[i].mass * s[i].v;
    L += s[i].r.cross(m.bodies[i].mass * s[i].v) + A * m.bodies[i].inertia * A.transpose() * s[i].w;
  }
  return {p, L};
}

void expect_identical_for_one_and_two_threads(const Model& model, const std::string& formulation,
                                              FormulationSettings settings, double t_end) {
  Recorder one, two;
  settings.threading.min_parallel_bodies = 2;  // small models take the threaded path too
  settings.threading.threads = 1;
  ASSERT_TRUE(simulate(model, formulation, settings, t_end, 0.05, &one).ok());
  settings.threading.threads = 2;
  ASSERT_TRUE(simulate(model, formulation, settings, t_end, 0.05, &two).ok());
  ASSERT_EQ(one.snapshots.size(), two.snapshots.size());
  for (std::size_t k = 0; k < one.snapshots.size(); ++k)
    for (std::size_t i = 0; i < one.snapshots[k].bodies.size(); ++i) {
      EXPECT_EQ(one.snapshots[k].bodies[i].r, two.snapshots[k].bodies[i].r) << model.name;
      EXPECT_EQ(one.snapshots[k].bodies[i].v, two.snapshots[k].bodies[i].v) << model.name;
      EXPECT_EQ(one.snapshots[k].bodies[i].a, two.snapshots[k].bodies[i].a) << model.name;
    }
}

void expect_reactions_match_reference(const Model& m, const std::string& formulation, FormulationSettings settings,
                                      double tol, double bound) {
  FormulationSettings ref_settings;
  ref_settings.rtol = ref_settings.atol = settings.rtol = settings.atol = tol;
  Recorder ref, other;
  ASSERT_TRUE(simulate(m, "reference", ref_settings, 1.0, 0.25, &ref).ok());
  ASSERT_TRUE(simulate(m, formulation, settings, 1.0, 0.25, &other).ok());
  ASSERT_EQ(ref.snapshots.size(), other.snapshots.size());
  for (std::size_t k = 0; k < ref.snapshots.size(); ++k)
    for (std::size_t j = 0; j < m.joints.size(); ++j) {
      EXPECT_LT((ref.snapshots[k].reactions[j].force - other.snapshots[k].reactions[j].force).norm(), bound) << m.joints[j].name;
      EXPECT_LT((ref.snapshots[k].reactions[j].torque - other.snapshots[k].reactions[j].torque).norm(), bound) << m.joints[j].name;
    }
}

void expect_momentum_conserved(const Model& m, const std::string& formulation, FormulationSettings settings, double t_end,
                               double bound) {
  Recorder rec;
  ASSERT_TRUE(simulate(m, formulation, settings, t_end, 0.5, &rec).ok());
  const auto [p0, L0] = total_momenta(m, rec.snapshots.front().bodies);
  for (const Snapshot& s : rec.snapshots) {
    const auto [p, L] = total_momenta(m, s.bodies);
    EXPECT_LT((p - p0).norm(), bound) << "t = " << s.t;
    EXPECT_LT((L - L0).norm(), bound) << "t = " << s.t;
  }
}

void expect_refused(const Model& model, const std::string& formulation, const FormulationSettings& settings,
                    const std::string& what) {
  try {
    make_formulation(formulation, std::make_shared<const Model>(model), settings);
    ADD_FAILURE() << formulation << " accepted " << model.name;
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

void expect_double_pendulum_matches_lagrange(const std::string& formulation, const FormulationSettings& settings,
                                             double bound) {
  const DoublePendulumCase c;
  Recorder rec;
  const auto r = simulate(double_pendulum_model(c), formulation, settings, 5.0, 0.5, &rec);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_LT(max_deviation_from_lagrange(rec, c), bound);
}

}  // namespace treedyn::test
