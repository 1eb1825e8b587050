// A crank-rocker four-bar built in C++, its crank driven by a speed controller written as a load
// function of the state, and the reaction at the joint that closes the loop:
//   four_bar_speed [FORMULATION]       (default hdca)
//
// Links (ground 0.4 m, crank 0.1 m, coupler 0.35 m, rocker 0.3 m) satisfy Grashof's condition
// s + l <= p + q, so the crank turns all the way round without a singular position. The four
// revolute joints all turn about z: a planar loop of spatial joints, whose 3 out-of-plane
// equations are redundant, so only the in-plane reaction forces are determined by the motion
// (the formulations report the minimum-norm reactions).
#include <cmath>
#include <cstdio>
#include <string>
#include <treedyn/model_builder.hpp>
#include <treedyn/simulator.hpp>

namespace {

using namespace treedyn;

/// A uniform bar of 1 kg/m from a to b in the xy plane.
Body bar(const std::string& name, const Vec3& a, const Vec3& b) {
  const double length = (b - a).norm();
  Body body;
  body.name = name;
  body.mass = length;
  body.inertia = body.mass * Vec3(1e-4, length * length / 12.0, length * length / 12.0).asDiagonal();
  body.position = 0.5 * (a + b);
  body.orientation = Quat(Eigen::AngleAxisd(std::atan2(b.y() - a.y(), b.x() - a.x()), Vec3::UnitZ()));
  return body;
}

/// The four-bar at crank angle phi: the coupler-rocker pin B where the circles about A (coupler)
/// and about the rocker's pivot meet, the upper of the two.
Model crank_rocker(double phi) {
  const double ground = 0.4, crank = 0.1, coupler = 0.35, rocker = 0.3;
  const Vec3 O2(0, 0, 0), O4(ground, 0, 0), A(crank * std::cos(phi), crank * std::sin(phi), 0);
  const Vec3 d = O4 - A;
  const double dist = d.norm(), along = (coupler * coupler - rocker * rocker + dist * dist) / (2 * dist);
  const double across = std::sqrt(coupler * coupler - along * along);
  const Vec3 B = A + along * d / dist + across * Vec3(-d.y(), d.x(), 0) / dist;
  ModelBuilder b("crank_rocker");
  b.gravity({0, -9.81, 0});
  b.body(bar("crank", O2, A)).body(bar("coupler", A, B)).body(bar("rocker", O4, B));
  b.joint(JointSpec::at("crank_pin", JointType::Revolute, "ground", "crank", O2));
  b.joint(JointSpec::at("coupler_pin", JointType::Revolute, "crank", "coupler", A));
  b.joint(JointSpec::at("rocker_pin", JointType::Revolute, "coupler", "rocker", B));
  b.joint(JointSpec::at("ground_pin", JointType::Revolute, "ground", "rocker", O4));
  return b.build();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string formulation = argc > 1 ? argv[1] : "hdca";
  const ModelPtr model = share(crank_rocker(1.0));
  FormulationSettings settings;
  settings.rtol = settings.atol = 1e-8;  // dca, hdca, reference
  settings.dt = 1e-3;                    // ali3 and the implicit integrators
  settings.ali3.alpha = 1e9;             // alpha h^2 / (4 m) >= 50 at this step
  Simulator sim(model, formulation, settings);

  const double target = 2.0 * M_PI, gain = 2.0;  // one turn per second; N m per rad/s
  const int crank = sim.coordinates().entry("crank_pin").v_offset;
  sim.set_load_function([&](const LoadState& s, LoadOutput& out) { out.effort(crank) = gain * (target - s.qd(crank)); });
  sim.advance_to(3.0);

  std::string loop;
  for (const auto& e : sim.coordinates().entries())
    if (e.loop) loop = e.name();
  const JointReaction r = sim.reaction(loop);
  std::printf("crank_rocker with %s: t = %.3f s, %ld steps\n", formulation.c_str(), sim.time(), sim.stats().steps);
  std::printf("crank speed: %.6f rad/s (target %.6f)\n", sim.joint_qd("crank_pin")(0), target);
  std::printf("crank angle: %.6f rad\n", sim.joint_q("crank_pin")(0));
  std::printf("loop-closing joint: %s\n", loop.c_str());
  std::printf("reaction force on its child: %.9f %.9f %.9f N\n", r.force.x(), r.force.y(), r.force.z());
  std::printf("reaction torque on its child: %.9f %.9f %.9f N m\n", r.torque.x(), r.torque.y(), r.torque.z());
  std::printf("largest position constraint error: %.3e m\n", sim.constraint_errors().position);
  return 0;
}
