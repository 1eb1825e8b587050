#include "treedyn/generators.hpp"

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
  return b.build();
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
  return b.build();
}

}  // namespace treedyn
