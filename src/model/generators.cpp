#include "treedyn/generators.hpp"

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

}  // namespace treedyn
