// treedyn — loads applied from outside the model, as a controller applies them: inputs that hold
// until changed (an effort per joint rate, a wrench per body) and a load function of the state.
//
// Every formulation adds them to the model's own loads (AppliedLoads), and the metrics count
// their power in the work of non-conservative loads, so the energy balance stays closed under
// control. They are the same under every formulation: efforts act along the joints' rates of
// CoordinateMap (coordinate_map.hpp), the function reads q and qd in its layout.
//
// Cost of a load function: it is called once per evaluation of the loads, i.e. once per
// right-hand side of dca, hdca and reference (4 per rk4 step, 6 to 7 per accepted dopri5 step),
// once per Newton iteration of ali3 and fully-implicit, once per step of half-implicit, and once
// more per output sample for the power in the energy balance; before each call q and qd are
// measured on the bodies' states (O(n), about 0.1 us per joint). It is called at trial states
// that the integrator may reject, so it must be a function of its arguments: keep no state in it
// that it changes.
//
// Lifetime and threads: an ExternalLoads copies nothing it is given by reference and holds its
// CoordinateMap by shared pointer. It belongs to one simulator and is used from one thread at a
// time (its const members use scratch space).
#pragma once

#include <Eigen/Core>
#include <functional>
#include <memory>
#include <vector>

#include "treedyn/coordinate_map.hpp"

namespace treedyn {

/// What a load function reads: time, joint coordinates and rates (CoordinateMap's layout, angles
/// continuous), and the bodies' absolute states.
struct LoadState {
  double t;
  const Eigen::VectorXd& q;
  const Eigen::VectorXd& qd;
  const SystemState& bodies;
};

/// What a load function writes; both are zero on entry.
struct LoadOutput {
  Eigen::VectorXd effort;   // one generalized force per entry of qd
  std::vector<Vec6> wrench; // per body: [force; torque about its centre of mass], global
};

using LoadFunction = std::function<void(const LoadState&, LoadOutput&)>;

class ExternalLoads {
 public:
  explicit ExternalLoads(std::shared_ptr<const CoordinateMap> map);

  const CoordinateMap& map() const { return *map_; }

  /// Efforts, one per entry of qd. Throws std::invalid_argument for a wrong size or a non-finite
  /// value (naming the entry); the previous efforts stay.
  void set_effort(const Eigen::Ref<const Eigen::VectorXd>& effort);
  /// The efforts of one joint (its nv entries).
  void set_joint_effort(const std::string& joint, const Eigen::Ref<const Eigen::VectorXd>& effort);
  /// A body's wrench: force through its centre of mass and torque, global frame.
  void set_body_wrench(int body, const Vec3& force, const Vec3& torque);
  /// A load function of the state (it reads continuous angles: tracking starts).
  void set_function(LoadFunction function) {
    function_ = std::move(function);
    if (function_) start_tracking();
  }
  /// Efforts and wrenches back to zero (the function stays).
  void clear_inputs();

  /// The efforts, one per entry of qd: zeros until some are set (held from the first set or read
  /// on: a run without efforts holds none, 24 bytes a ball joint).
  const Eigen::VectorXd& effort() const {
    if (effort_.size() != map_->nv()) effort_.setZero(map_->nv());
    return effort_;
  }
  /// The wrench set on each body, or empty while none has been set.
  const std::vector<Vec6>& wrench() const { return wrench_; }
  bool has_function() const { return static_cast<bool>(function_); }
  /// True if anything is applied (non-zero inputs or a function).
  bool active() const { return inputs_nonzero_ || function_; }

  /// Adds the loads at (t, bodies) to each body's wrench [force; torque about its centre of mass].
  /// Throws std::runtime_error if the function returns a wrong size or a non-finite value.
  void add_to(double t, const SystemState& bodies, std::vector<Vec6>& wrenches) const;
  /// Their power at (t, bodies): effort . qd plus each wrench on its body's twist.
  double power(double t, const SystemState& bodies) const;

  /// The angles q is unwrapped against (CoordinateMap::measure's reference), restarted by
  /// restart_angles() and, once someone reads joint angles (tracks_angles()), kept continuous by
  /// track() after every accepted step (the formulations call it through AppliedLoads). Tracking
  /// costs a measure of every angle per step (on a 7-joint revolute chain under dca, 3 us of a
  /// 30 us rk4 step), so it starts only when asked: by the Simulator's first read of q, or when
  /// a load function is set. Held only where the model has angles (empty otherwise: a
  /// ball-joint chain's would be 32 bytes a body that measure never reads).
  const Eigen::VectorXd& angle_reference() const { return reference_; }
  void track(const SystemState& bodies) const;
  /// A new reference: the coordinates of a state just set, whose restart's own track() it
  /// makes unnecessary (the next one is skipped).
  void restart_angles(const Eigen::VectorXd& q) const {
    if (map_->has_angles()) reference_ = q;
    fresh_ = true;
  }
  /// A new reference read off the current state (steps go on tracking from it).
  void note_angles(const Eigen::VectorXd& q) const {
    if (map_->has_angles()) reference_ = q;
  }
  /// Keep the angle reference continuous from now on (only if the model has angles).
  void start_tracking() const { tracking_ = map_->has_angles(); }
  bool tracks_angles() const { return tracking_; }

 private:
  /// q_ and qd_ at `bodies` (sized at the first call: a run without a function or inputs never
  /// measures, and holds neither).
  void measure(const SystemState& bodies) const;
  /// The function's output at (t, bodies), into output_ (after measuring q_, qd_).
  void call(double t, const SystemState& bodies) const;
  void check_output() const;
  void check_finite_effort(const Eigen::Ref<const Eigen::VectorXd>& effort, int offset) const;
  void update_nonzero();

  std::shared_ptr<const CoordinateMap> map_;
  mutable Eigen::VectorXd effort_;  // per entry of qd once efforts are set or read (empty before: none)
  std::vector<Vec6> wrench_;  // per body once a wrench is set (empty before: none)
  bool inputs_nonzero_ = false;
  LoadFunction function_;
  mutable Eigen::VectorXd reference_, q_, qd_;
  mutable bool tracking_ = false, fresh_ = false;
  mutable LoadOutput output_;
};

}  // namespace treedyn
