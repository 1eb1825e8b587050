// A 3-D pendulum built in C++ and held at a target orientation by a PD controller with gravity
// compensation, run from the program's own loop through the stepping API.
//
// The pendulum is a 1 m, 2 kg cylinder (radius 0.14 m) hanging from a ball (spherical) joint at
// the origin. The ball
// joint's coordinates are the quaternion of the bar's joint frame relative to ground's, its rates
// the relative angular velocity in the bar's frame, and its efforts torques about the bar's frame
// axes (include/treedyn/coordinate_map.hpp).
#include <cstdio>
#include <treedyn/model_builder.hpp>
#include <treedyn/simulator.hpp>

int main() {
  using namespace treedyn;
  ModelBuilder builder("pendulum3d");
  builder.gravity({0, 0, -9.81});
  Body bar;
  bar.name = "bar";
  bar.mass = 2.0;
  bar.inertia = Vec3(0.18, 0.18, 0.02).asDiagonal();  // m (3 r^2 + L^2) / 12 across, m r^2 / 2 along z
  bar.position = {0, 0, -0.5};
  builder.body(bar);
  builder.joint(JointSpec::at("ball", JointType::Spherical, "ground", "bar", {0, 0, 0}));
  const ModelPtr model = share(builder.build());

  FormulationSettings settings;
  settings.integrator = "rk4";
  settings.dt = 1e-3;  // the controller's period too: one step() per control update
  Simulator sim(model, "dca", settings);

  const Quat target = Quat(Eigen::AngleAxisd(0.6, Vec3::UnitX()) * Eigen::AngleAxisd(0.3, Vec3::UnitY()));
  const double kp = 80.0, kd = 15.0;
  const Joint& ball = model->joints[0];
  for (int k = 0; k < 5000; ++k) {
    const Eigen::VectorXd q = sim.joint_q("ball"), w = sim.joint_qd("ball");
    const Quat current(q(0), q(1), q(2), q(3));
    const Eigen::AngleAxisd error(target.conjugate() * current);  // in the bar's frame
    // Gravity's torque about the ball joint, cancelled in the bar's joint-frame axes.
    const BodyState& s = sim.body_state("bar");
    const Vec3 gravity_torque = s.r.cross(bar.mass * model->gravity);
    const Mat3 frame = s.q.toRotationMatrix() * ball.child_frame.rotation;
    const Vec3 tau = -kp * error.angle() * error.axis() - kd * Vec3(w) - frame.transpose() * gravity_torque;
    sim.set_joint_effort("ball", tau);
    sim.step();
  }
  const Eigen::VectorXd q = sim.joint_q("ball");
  const double error = Eigen::AngleAxisd(target.conjugate() * Quat(q(0), q(1), q(2), q(3))).angle();
  std::printf("pendulum3d: t = %.3f s, %ld steps with dca (rk4)\n", sim.time(), sim.stats().steps);
  std::printf("orientation error from target: %.3e rad\n", error);
  std::printf("angular speed: %.3e rad/s\n", sim.joint_qd("ball").norm());
  return 0;
}
