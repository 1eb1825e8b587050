// Helpers shared by the tests: numerical differentiation, random states, model paths, and
// independent reference solutions written out in full (not taken from the library).
#pragma once

#include <functional>
#include <random>
#include <string>
#include <vector>

#include "treedyn/kinematics.hpp"

namespace treedyn::test {

std::string model_path(const std::string& name);  // models/<name>.json
/// The names of every model in models/ (<name>.json), sorted.
std::vector<std::string> shipped_models();

/// Advances a body state rigidly by a twist for time h: r += h v, q = exp(h w) q.
BodyState moved(const BodyState& s, const Vec6& twist, double h);

/// A body state with random pose, twist and acceleration (seeded).
BodyState random_state(std::mt19937& rng);
/// Every body of `model` at a random_state.
SystemState random_states(const Model& model, std::mt19937& rng);
/// n entries uniform in [-1, 1] (multipliers, loads).
Eigen::VectorXd random_vector(Eigen::Index n, std::mt19937& rng);

/// Integrates ydot = f(t, y) with classical RK4 at a fixed step (for independent reference
/// solutions inside tests).
Eigen::VectorXd rk4(const std::function<Eigen::VectorXd(double, const Eigen::VectorXd&)>& f, Eigen::VectorXd y,
                    double t0, double t1, double h);

/// The planar double pendulum of two uniform links (mass m, length L, centroidal inertia J about
/// the axis of rotation) hanging from a pin, written from Lagrange's equations in the absolute
/// link angles theta1, theta2 measured from the downward vertical:
///   M(theta) theta_ddot + c(theta, theta_dot) + g(theta) = 0.
/// State [theta1, theta2, omega1, omega2].
Eigen::Vector4d double_pendulum_rate(const Eigen::Vector4d& s, double m, double L, double J, double g);

}  // namespace treedyn::test

#include "treedyn/formulations.hpp"
#include "treedyn/joint_space.hpp"
#include "treedyn/simulation.hpp"

namespace treedyn::test {

/// Keeps every sample of a run in memory.
using Recorder = Recording;

/// Runs `formulation` on `model` to t_end with samples every dt, recording them; without refined
/// companions (RunOptions::verify = false): the caller judges the run against its own reference.
SimulationResult simulate(const Model& model, const std::string& formulation, const FormulationSettings& settings,
                          double t_end, double dt, Recorder* recorder = nullptr);

/// Largest distance between the bodies' centres of mass in two recordings sampled at the same
/// times.
double max_position_difference(const Recorder& a, const Recorder& b);

/// The planar double pendulum of double_pendulum_rate as a Model: links l1, l2 (mass m, length L,
/// inertia J about every axis) at angles theta1, theta2 from the downward vertical, pins j1 at the
/// origin and j2 between the links, axes along z, gravity -g along y.
struct DoublePendulumCase {
  double m = 1.0, L = 1.0, J = 0.1, g = 9.81, theta1 = 0.8, theta2 = -0.3;
};
Model double_pendulum_model(const DoublePendulumCase& c);

/// A slender link from a to b (mass m, inertia diag(0.05, 0.3, 0.3) m along its axis).
Body link(const std::string& name, const Vec3& a, const Vec3& b, double mass = 1.0);

/// A branched tree hanging under ground: a trunk splits into two branches of three links, one of
/// which splits again (spherical, revolute and universal joints), released from rest 20-40 degrees
/// away from hanging straight (large swings make such trees chaotic, and then no two solvers agree
/// for long, whatever their tolerance).
Model branched_tree();

/// A body of mass 1 + |position| and inertia diag(1, 1.5, 2), turned by `angle` about (1, 2, 3).
Body box(const std::string& name, const Vec3& position, double angle);

/// One joint of every type along a chain (revolute, prismatic, cylindrical, universal, spherical,
/// planar, fixed), a body on a free joint, and a reversed universal joint (its model parent is
/// further from ground than its child).
/// A tree with welded bodies (forwards, reversed and in a row), joints and a loop on welded
/// members, a spring and a force on them, a welded pair floating free, and two bodies welded to
/// ground with a link hinged to them. With
/// `weld_closes_loop`, the loop joins the finger to the leg instead of the foot, so that the
/// spanning tree reaches the finger through it and the finger's weld closes the loop.
Model welded_tree(bool weld_closes_loop = false);
Model joint_zoo();

/// Random joint coordinates of a joint space: entries in [-1, 1], each quaternion normalised with
/// w > 0.
Eigen::VectorXd random_coordinates(const JointSpace& js, std::mt19937& rng);

/// Three links (spherical, then revolute joint) floating freely, spinning and drifting, no gravity.
Model floating_chain();

/// Total linear momentum and angular momentum about the origin.
std::pair<Vec3, Vec3> total_momenta(const Model& model, const SystemState& s);

/// Checks every formulation must pass, shared by their tests.
/// Positions, velocities and accelerations of every sample are bit-identical with 1 and 2 threads
/// (the threaded passes run whatever the model's size: the serial threshold is set to 2 bodies).
void expect_identical_for_one_and_two_threads(const Model& model, const std::string& formulation,
                                              FormulationSettings settings, double t_end);
/// Joint reactions against the reference's multipliers (both at rtol = atol = tol), within bound.
void expect_reactions_match_reference(const Model& model, const std::string& formulation, FormulationSettings settings,
                                      double tol, double bound);
/// Linear and angular momentum of a model without external loads stay constant within bound.
void expect_momentum_conserved(const Model& model, const std::string& formulation, FormulationSettings settings,
                               double t_end, double bound);
/// make_formulation throws std::invalid_argument whose message contains `what`.
void expect_refused(const Model& model, const std::string& formulation, const FormulationSettings& settings,
                    const std::string& what);

/// Largest distance of the recorded link centres from Lagrange's solution (double_pendulum_rate,
/// released at rest, integrated by RK4 at h = 1e-4 between the recorded times).
double max_deviation_from_lagrange(const Recorder& recording, const DoublePendulumCase& c);

/// Runs `formulation` on the default DoublePendulumCase for 5 s (samples every 0.5 s) and expects
/// the run to succeed and its link centres to stay within `bound` of Lagrange's solution.
void expect_double_pendulum_matches_lagrange(const std::string& formulation, const FormulationSettings& settings,
                                             double bound);

}  // namespace treedyn::test
