#include "treedyn/generators.hpp"

#include <cmath>
#include <random>

#include "treedyn/model_builder.hpp"

namespace treedyn {

Model make_chain(int bodies, JointType joint) {
  if (bodies < 1) throw ModelError("a chain needs at least one body");
  if (joint != JointType::Spherical && joint != JointType::Revolute)
    throw ModelError(std::string("chain joints must be spherical or revolute, not ") + to_string(joint));
  ModelBuilder b("chain" + std::to_string(bodies));
  b.description("paper 000 Sect. 4.4: " + std::to_string(bodies) + "-link " + to_string(joint) +
                " pendulum, 1 m, 1 kg, diag(1,1,1) links along +x, gravity -y");
  b.gravity({0.0, -9.81, 0.0});
  for (int i = 0; i < bodies; ++i) {
    Body body;
    body.name = "link" + std::to_string(i + 1);
    body.mass = 1.0;
    body.inertia = Mat3::Identity();
    body.position = {i + 0.5, 0.0, 0.0};
    body.shape.type = Shape::Type::Cylinder;
    body.shape.radius = 0.02;
    body.shape.length = 1.0;
    body.shape.axis = 0;
    b.body(body);
    b.joint(JointSpec::at("joint" + std::to_string(i + 1), joint, i == 0 ? "ground" : "link" + std::to_string(i),
                          body.name, {static_cast<double>(i), 0.0, 0.0}, Vec3::UnitZ()));
  }
  b.defaults({.t_end = 10.0, .dt = 0.01, .formulation = std::nullopt, .integrator = std::nullopt});
  return std::move(b).build();
}

Model make_spinning_bar_chain(int bodies, unsigned seed) {
  if (bodies < 1) throw ModelError("a chain needs at least one body");
  const double L = 2.0, w = 0.05, m = 7800.0 * L * w * w;
  ModelBuilder b("spinning_bars" + std::to_string(bodies));
  b.description("paper 002 Sect. 3.3: " + std::to_string(bodies) +
                " spinning 2 m steel bars on spherical joints, hanging along -z, gravity in a skew direction, seed " +
                std::to_string(seed));
  b.gravity(9.81 * Vec3(0.07169162, 0.68473815, 0.72525442));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> spin(-10.0, 10.0);
  for (int i = 0; i < bodies; ++i) {
    Body body;
    body.name = "bar" + std::to_string(i + 1);
    body.mass = m;
    body.inertia = Vec3(m * (w * w + L * L) / 12.0, m * (w * w + L * L) / 12.0, m * w * w / 6.0).asDiagonal();
    body.position = {0.0, 0.0, -(i + 0.5) * L};
    body.angular_velocity = {0.0, 0.0, spin(rng)};
    body.shape.type = Shape::Type::Box;
    body.shape.size = {w, w, L};
    b.body(body);
    b.joint(JointSpec::at("joint" + std::to_string(i + 1), JointType::Spherical,
                          i == 0 ? "ground" : "bar" + std::to_string(i), body.name, {0.0, 0.0, -i * L}, Vec3::UnitZ()));
  }
  b.defaults({.t_end = 3.0, .dt = 1e-3, .formulation = "half-implicit", .integrator = std::nullopt});
  return std::move(b).build();
}

Model make_ladder(int loops) {
  if (loops < 1) throw ModelError("a ladder needs at least one loop");
  const double L = 1.0, w = 0.05, m = 1.0, theta0 = 0.5;
  const double I_long = m * w * w / 6.0, I_cross = m * (L * L + w * w) / 12.0;
  ModelBuilder b("ladder" + std::to_string(loops));
  b.description("issue 28: ladder of " + std::to_string(loops) + " coupled four-bar loops (" + std::to_string(2 * loops + 1) +
                " bars of 1 m, 1 kg), revolute joints about z, rungs 0.5 rad from hanging, at rest, gravity -y");
  b.gravity({0.0, -9.81, 0.0});
  const Vec3 down(std::sin(theta0), -std::cos(theta0), 0.0);  // along each rung, pivot to lower end
  const Quat tilt(Eigen::AngleAxisd(theta0, Vec3::UnitZ()));  // a rung's local -y is `down`
  auto rung = [&](int k) { return "rung" + std::to_string(k); };
  auto coupler = [&](int k) { return "coupler" + std::to_string(k); };
  for (int k = 0; k <= loops; ++k) {
    Body body;
    body.name = rung(k);
    body.mass = m;
    body.inertia = Vec3(I_cross, I_long, I_cross).asDiagonal();
    body.position = Vec3(k * L, 0.0, 0.0) + 0.5 * L * down;
    body.orientation = tilt;
    body.shape.type = Shape::Type::Box;
    body.shape.size = {w, L, w};
    b.body(body);
    b.joint(JointSpec::at("pivot" + std::to_string(k), JointType::Revolute, "ground", body.name, {k * L, 0.0, 0.0}, Vec3::UnitZ()));
  }
  for (int k = 1; k <= loops; ++k) {
    Body body;
    body.name = coupler(k);
    body.mass = m;
    body.inertia = Vec3(I_long, I_cross, I_cross).asDiagonal();
    body.position = Vec3((k - 0.5) * L, 0.0, 0.0) + L * down;
    body.shape.type = Shape::Type::Box;
    body.shape.size = {L, w, w};
    b.body(body);
    b.joint(JointSpec::at("left" + std::to_string(k), JointType::Revolute, rung(k - 1), body.name,
                          Vec3((k - 1) * L, 0.0, 0.0) + L * down, Vec3::UnitZ()));
    b.joint(JointSpec::at("right" + std::to_string(k), JointType::Revolute, body.name, rung(k), Vec3(k * L, 0.0, 0.0) + L * down,
                          Vec3::UnitZ()));
  }
  b.defaults({.t_end = 5.0, .dt = 0.01, .formulation = std::nullopt, .integrator = std::nullopt});
  return std::move(b).build();
}

}  // namespace treedyn
