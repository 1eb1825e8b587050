// Loads from outside the model; see include/treedyn/external_loads.hpp.
#include "treedyn/external_loads.hpp"

#include <stdexcept>

#include "treedyn/errors.hpp"

namespace treedyn {
namespace {

Vec6 twist_of(const BodyState& b) {
  Vec6 V;
  V << b.v, b.w;
  return V;
}

}  // namespace

ExternalLoads::ExternalLoads(std::shared_ptr<const CoordinateMap> map)
    : map_(std::move(map)),
      reference_(Eigen::VectorXd::Zero(map_->has_angles() ? map_->nq() : 0)) {}

/// Throws std::invalid_argument naming the first non-finite entry of effort (entries from offset).
void ExternalLoads::check_finite_effort(const Eigen::Ref<const Eigen::VectorXd>& effort, int offset) const {
  for (Eigen::Index i = 0; i < effort.size(); ++i)
    if (!std::isfinite(effort(i)))
      throw std::invalid_argument("effort: the value for " + map_->qd_name(static_cast<int>(offset + i)) +
                                  " is not finite");
}

void ExternalLoads::set_effort(const Eigen::Ref<const Eigen::VectorXd>& effort) {
  if (effort.size() != map_->nv())
    throw std::invalid_argument("effort: expected " + std::to_string(map_->nv()) + " values (one per joint rate), got " +
                                std::to_string(effort.size()));
  check_finite_effort(effort, 0);
  effort_ = effort;
  update_nonzero();
}

void ExternalLoads::set_joint_effort(const std::string& joint, const Eigen::Ref<const Eigen::VectorXd>& effort) {
  const CoordinateMap::Entry& e = map_->entry(joint);
  if (effort.size() != e.nv)
    throw std::invalid_argument("effort of joint '" + joint + "': expected " + std::to_string(e.nv) + " value" +
                                (e.nv == 1 ? "" : "s") + " (" + to_string(e.type) + "), got " + std::to_string(effort.size()));
  check_finite_effort(effort, e.v_offset);
  if (effort_.size() != map_->nv()) effort_.setZero(map_->nv());
  effort_.segment(e.v_offset, e.nv) = effort;
  update_nonzero();
}

void ExternalLoads::set_body_wrench(int body, const Vec3& force, const Vec3& torque) {
  if (body < 0 || body >= map_->body_count())
    throw std::invalid_argument("body wrench: no body with index " + std::to_string(body));
  if (!force.allFinite() || !torque.allFinite())
    throw std::invalid_argument("wrench on body '" + map_->body_name(body) + "': force and torque must be finite");
  if (wrench_.empty()) wrench_.assign(static_cast<std::size_t>(map_->body_count()), Vec6::Zero());
  wrench_[static_cast<std::size_t>(body)] << force, torque;
  update_nonzero();
}

void ExternalLoads::update_nonzero() {
  inputs_nonzero_ = !effort_.isZero(0.0);
  for (const Vec6& w : wrench_) inputs_nonzero_ = inputs_nonzero_ || !w.isZero(0.0);
}

void ExternalLoads::clear_inputs() {
  effort_.setZero();
  for (Vec6& w : wrench_) w.setZero();
  inputs_nonzero_ = false;
}

void ExternalLoads::measure(const SystemState& bodies) const {
  if (q_.size() != map_->nq()) {  // the first measure: nothing holds them before
    q_.resize(map_->nq());
    qd_.resize(map_->nv());
  }
  map_->measure(bodies, q_, qd_, &reference_);
}

void ExternalLoads::call(double t, const SystemState& bodies) const {
  measure(bodies);
  output_.effort.setZero(map_->nv());
  output_.wrench.assign(bodies.size(), Vec6::Zero());
  function_(LoadState{t, q_, qd_, bodies}, output_);
  check_output();
}

void ExternalLoads::check_output() const {
  if (output_.effort.size() != map_->nv() || output_.wrench.size() != static_cast<std::size_t>(map_->body_count()))
    throw std::runtime_error("the load function resized its output (effort: " + std::to_string(output_.effort.size()) +
                             " of " + std::to_string(map_->nv()) + ", wrench: " + std::to_string(output_.wrench.size()) +
                             " of " + std::to_string(map_->body_count()) + ")");
  for (Eigen::Index i = 0; i < output_.effort.size(); ++i)
    if (!std::isfinite(output_.effort(i)))
      throw std::runtime_error("the load function returned a non-finite effort for " +
                               map_->qd_name(static_cast<int>(i)));
  for (std::size_t b = 0; b < output_.wrench.size(); ++b)
    if (!output_.wrench[b].allFinite())
      throw std::runtime_error("the load function returned a non-finite wrench on body '" +
                               map_->body_name(static_cast<int>(b)) + "'");
}

void ExternalLoads::add_to(double t, const SystemState& bodies, std::vector<Vec6>& wrenches) const {
  if (inputs_nonzero_) {
    if (effort_.size() != 0) map_->add_effort_wrenches(bodies, effort_, wrenches);
    for (std::size_t b = 0; b < wrench_.size(); ++b) wrenches[b] += wrench_[b];
  }
  if (function_) {
    call(t, bodies);
    map_->add_effort_wrenches(bodies, output_.effort, wrenches);
    for (std::size_t b = 0; b < output_.wrench.size(); ++b) wrenches[b] += output_.wrench[b];
  }
}

double ExternalLoads::power(double t, const SystemState& bodies) const {
  if (!active()) return 0.0;
  measure(bodies);
  double p = 0.0;
  if (inputs_nonzero_) {
    if (effort_.size() != 0) p += effort_.dot(qd_);
    for (std::size_t b = 0; b < wrench_.size(); ++b) p += wrench_[b].dot(twist_of(bodies[b]));
  }
  if (function_) {
    call(t, bodies);
    p += output_.effort.dot(qd_);
    for (std::size_t b = 0; b < output_.wrench.size(); ++b) p += output_.wrench[b].dot(twist_of(bodies[b]));
  }
  return p;
}

void ExternalLoads::track(const SystemState& bodies) const {
  if (fresh_) {  // the state was just set from the reference's coordinates
    fresh_ = false;
    return;
  }
  if (tracking_) map_->track_angles(bodies, reference_);
}

}  // namespace treedyn
