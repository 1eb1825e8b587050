// treedyn — the small interface between the Simulation and any formulation.
//
// A formulation owns its coordinates and workspaces. The Simulation only asks it to advance to a
// time and to report a Snapshot in absolute terms, which the common metrics and writers use.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "treedyn/integrators.hpp"
#include "treedyn/kinematics.hpp"

namespace treedyn {

/// Reaction of a joint on its child body: force, and torque about the child's joint-frame origin,
/// global frame.
struct JointReaction {
  Vec3 force = Vec3::Zero();
  Vec3 torque = Vec3::Zero();
};

struct Snapshot {
  double t = 0.0;
  SystemState bodies;                   // positions, velocities and accelerations
  std::vector<JointReaction> reactions;  // one per joint, or empty if not computed
  std::vector<double> driver_efforts;    // generalised force each driver applies, or empty
  double extra_power = 0.0;             // power of loads applied beyond the model's (e.g. friction)
};

struct SolverStats {
  long steps = 0;
  long rhs_evaluations = 0;
  long newton_iterations = 0;
  long projections = 0;
};

class Formulation {
 public:
  virtual ~Formulation() = default;
  virtual std::string name() const = 0;
  /// The time integration scheme in use (for summaries).
  virtual std::string integrator() const = 0;
  virtual double time() const = 0;
  /// Advances to t (>= time()). Throws SimulationError when it cannot.
  virtual void advance_to(double t) = 0;
  /// The state at time(), accelerations included.
  virtual void snapshot(Snapshot& out) = 0;
  virtual SolverStats stats() const = 0;
  /// Model features this formulation ignores, and similar notices (read after a run: notices
  /// about the run itself may be added while it goes).
  virtual std::vector<std::string> warnings() const { return {}; }
  /// Wall-clock seconds per stage (for a profile), if the formulation keeps them.
  virtual std::map<std::string, double> stage_seconds() const { return {}; }
  /// Figures of the run that only this formulation has (ali3: the largest Euler-parameter
  /// normalisation error), for summaries.
  virtual std::map<std::string, double> diagnostics() const { return {}; }
  /// For formulations that integrate an ODE: the system and its current state (benchmarks time
  /// the right-hand side alone). Null for step-based formulations.
  virtual OdeSystem* ode() { return nullptr; }
  virtual Eigen::VectorXd ode_state() const { return {}; }
};

}  // namespace treedyn
