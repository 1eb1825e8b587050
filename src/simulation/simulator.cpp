// The stepping API; see include/treedyn/simulator.hpp.
#include "treedyn/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "treedyn/errors.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/parallel.hpp"
#include "treedyn/topology.hpp"

namespace treedyn {
namespace {

std::shared_ptr<const CoordinateMap> make_map(const std::shared_ptr<const Model>& model) {
  return std::make_shared<const CoordinateMap>(model, Topology(*model, RankMethod::None));  // the tree alone: the formulation ranks
}

/// Throws std::invalid_argument naming the first non-finite entry of q (rate: false) or qd (true).
void check_finite_entries(const Eigen::VectorXd& v, const CoordinateMap& map, bool rate, const char* what) {
  for (Eigen::Index i = 0; i < v.size(); ++i)
    if (!std::isfinite(v(i)))
      throw std::invalid_argument(std::string(what) + ": the value for " +
                                  (rate ? map.qd_name(static_cast<int>(i)) : map.q_name(static_cast<int>(i))) + " is not finite");
}

/// A body's index by name; std::invalid_argument for an unknown name or ground.
int body_named(const Model& model, const std::string& name, const char* what) {
  for (int b = 0; b < model.body_count(); ++b)
    if (model.bodies[static_cast<std::size_t>(b)].name == name) return b;
  throw std::invalid_argument(std::string(what) + ": no body named '" + name + "'" +
                              (name == kGroundName ? " (ground has no state and takes no load)" : ""));
}

void check_size(const Eigen::VectorXd& v, int expected, const char* what, const char* per) {
  if (v.size() != expected)
    throw std::invalid_argument(std::string(what) + ": expected " + std::to_string(expected) + " values (" + per +
                                "), got " + std::to_string(v.size()));
}

/// Largest difference between two angles, modulo whole turns.
double angle_difference(double a, double b) { return std::abs(std::remainder(a - b, 2.0 * std::numbers::pi)); }

/// How far the given coordinates of a joint are from the measured ones (angles modulo turns,
/// quaternions up to sign).
double coordinate_difference(const CoordinateMap::Entry& e, const Eigen::VectorXd& given, const Eigen::VectorXd& measured) {
  const auto a = given.segment(e.q_offset, e.nq), b = measured.segment(e.q_offset, e.nq);
  switch (e.type) {
    case JointType::Revolute: return angle_difference(a(0), b(0));
    case JointType::Cylindrical: return std::max(angle_difference(a(0), b(0)), std::abs(a(1) - b(1)));
    case JointType::Universal: return std::max(angle_difference(a(0), b(0)), angle_difference(a(1), b(1)));
    case JointType::Planar: return std::max((a.head<2>() - b.head<2>()).cwiseAbs().maxCoeff(), angle_difference(a(2), b(2)));
    case JointType::Spherical: return std::min((a.normalized() - b).norm(), (a.normalized() + b).norm());
    case JointType::Free: {
      const Eigen::Vector4d qa = a.tail<4>().normalized(), qb = b.tail<4>();
      return std::max((a.head<3>() - b.head<3>()).cwiseAbs().maxCoeff(), std::min((qa - qb).norm(), (qa + qb).norm()));
    }
    default: return (a - b).cwiseAbs().maxCoeff();
  }
}

}  // namespace

Simulator::Simulator(std::shared_ptr<const Model> model, const std::string& formulation,
                     const FormulationSettings& settings, double state_tolerance)
    : model_(std::move(model)), formulation_name_(formulation), settings_(settings), state_tolerance_(state_tolerance) {
  if (!model_) throw std::invalid_argument("Simulator: the model is a null pointer");
  if (!(state_tolerance_ > 0.0) || !std::isfinite(state_tolerance_))
    throw std::invalid_argument("Simulator: the state tolerance must be a positive number, got " + sci(state_tolerance_));
  validate(*model_);
  const ConsistencyReport report = check_initial_state(*model_, state_tolerance_);
  if (!report.consistent()) {
    std::string text = "model '" + model_->name + "': the initial state violates the constraints (tolerance " +
                       sci(state_tolerance_) + "):";
    for (const auto& v : report.violations) text += "\n  " + v;
    text += "\nproject it first with assemble_initial_state() (the command line's --assemble)";
    throw ModelError(text);
  }
  map_ = make_map(model_);
  constraints_ = std::make_unique<ConstraintSet>(*model_);
  for (const CoordinateMap::Entry& e : map_->entries())  // placed bodies satisfy the tree joints: check the rest
    if (e.loop) placed_checks_.push_back(e.joint);
  for (int d = 0; d < static_cast<int>(model_->drivers.size()); ++d) placed_checks_.push_back(model_->joint_count() + d);
  inputs_ = std::make_shared<ExternalLoads>(map_);
  formulation_ = make_formulation(formulation, model_, settings, inputs_);
  stats_at_reset_ = formulation_->stats();
}

Simulator::~Simulator() = default;

// Time --------------------------------------------------------------------------------------------

void Simulator::check_steppable() const {
  if (failed())
    throw std::logic_error("the simulation failed (" + failure_ + "); call reset() or set_state() before stepping again");
}

template <class F>
void Simulator::guarded(F&& f) {
  check_steppable();
  changed();
  try {
    f();
  } catch (const Interrupted&) {  // not a failure: the formulation is at its last completed output or step
    throw;
  } catch (const SimulationError& e) {
    failure_ = e.what();
    throw;
  } catch (const std::exception& e) {  // a formulation's own failure: said as a failure at the time it stopped
    failure_ = e.what();
    throw SimulationError(formulation_->time(), e.what());
  }
}

double Simulator::step() {
  guarded([&] { formulation_->step(); });
  return time();
}

void Simulator::advance_to(double t) {
  if (!std::isfinite(t) || !(t > time()))
    throw std::invalid_argument("advance_to: t = " + sci(t) + " is not after the current time " + sci(time()));
  guarded([&] { formulation_->advance_to(t); });
}

void Simulator::set_interrupt(std::function<bool()> check) {
  interrupt_ = std::move(check);
  formulation_->set_interrupt(interrupt_);
}

void Simulator::reset() {
  inputs_->clear_inputs();
  failure_.clear();
  const SystemState initial = initial_state(*model_);
  inputs_->restart_angles(Eigen::VectorXd::Zero(map_->nq()));
  formulation_->set_state(0.0, initial);
  changed();
  stats_at_reset_ = formulation_->stats();
  if (metrics_) metrics_ = std::make_unique<Metrics>(*model_, inputs_.get());
}

std::vector<std::string> Simulator::warnings() const {
  std::vector<std::string> out = formulation_->warnings();
  if (const ThreadGovernor* g = formulation_->thread_governor())
    if (std::string notice = g->notice(settings_.threading.threads); !notice.empty()) out.push_back(std::move(notice));
  return out;
}

void Simulator::reset(const FormulationSettings& settings) {
  std::unique_ptr<Formulation> made = make_formulation(formulation_name_, model_, settings, inputs_);
  made->set_interrupt(interrupt_);
  formulation_ = std::move(made);
  settings_ = settings;
  reset();
}

SolverStats Simulator::stats() const {
  const SolverStats now = formulation_->stats(), base = stats_at_reset_;
  return {now.steps - base.steps, now.rhs_evaluations - base.rhs_evaluations,
          now.newton_iterations - base.newton_iterations, now.projections - base.projections,
          now.rejected_steps - base.rejected_steps};
}

// State ---------------------------------------------------------------------------------------------

const SystemState& Simulator::body_states() const {
  if (bodies_version_ != version_) {
    formulation_->bodies(bodies_);
    bodies_version_ = version_;
  }
  return bodies_;
}

const BodyState& Simulator::body_state(const std::string& body) const {
  return body_states()[static_cast<std::size_t>(body_named(*model_, body, "body_state"))];
}

const Eigen::VectorXd& Simulator::q() const {
  if (q_version_ != version_) {
    q_.resize(map_->nq());
    qd_.resize(map_->nv());
    map_->measure(body_states(), q_, qd_, &inputs_->angle_reference());
    inputs_->note_angles(q_);     // the reading is the newest reference
    inputs_->start_tracking();    // and angles stay continuous from now on, read or not
    q_version_ = version_;
  }
  return q_;
}

const Eigen::VectorXd& Simulator::qd() const {
  q();
  return qd_;
}

Eigen::VectorXd Simulator::joint_q(const std::string& joint) const {
  const CoordinateMap::Entry& e = map_->entry(joint);
  return q().segment(e.q_offset, e.nq);
}

Eigen::VectorXd Simulator::joint_qd(const std::string& joint) const {
  const CoordinateMap::Entry& e = map_->entry(joint);
  return qd().segment(e.v_offset, e.nv);
}

bool Simulator::within_tolerance(const SystemState& bodies, bool placed) const {
  const double t = time();
  auto fine = [&](int k) {
    constraints_->evaluate_block(k, t, bodies, block_, ConstraintParts::jacobians_only());
    if (block_.size() == 0) return true;
    Vec6 V_P, V_C;
    const BodyState &P = state_of(bodies, block_.parent), &C = state_of(bodies, block_.child);
    V_P << P.v, P.w;
    V_C << C.v, C.w;
    const double position = block_.phi.cwiseAbs().maxCoeff();
    const double velocity = (block_.J_P * V_P + block_.J_C * V_C + block_.phi_t).cwiseAbs().maxCoeff();
    return position <= state_tolerance_ && velocity <= state_tolerance_;
  };
  if (placed) return std::all_of(placed_checks_.begin(), placed_checks_.end(), fine);
  for (int k = 0; k < constraints_->block_count(); ++k)
    if (!fine(k)) return false;
  return true;
}

void Simulator::check_or_project(SystemState& bodies, const Eigen::VectorXd* q, const Eigen::VectorXd* qd, StateFix fix) const {
  const double t = time();
  std::vector<std::string> problems;
  if (q && fix == StateFix::Refuse && !placed_checks_.empty()) {
    // Loop-closing joints: their own entries must be where the other joints put them.
    Eigen::VectorXd q_measured(map_->nq()), qd_measured(map_->nv());
    map_->measure(bodies, q_measured, qd_measured, q);
    for (const CoordinateMap::Entry& e : map_->entries()) {
      if (!e.loop) continue;
      const double dq = coordinate_difference(e, *q, q_measured);
      const double dv = e.nv ? (qd->segment(e.v_offset, e.nv) - qd_measured.segment(e.v_offset, e.nv)).cwiseAbs().maxCoeff() : 0.0;
      if (dq > state_tolerance_ || dv > state_tolerance_)
        problems.push_back("joint '" + e.name() + "' closes a loop: the other joints put its coordinates at " +
                           sci(q_measured.segment(e.q_offset, e.nq).norm()) + " (norm) and rates at " +
                           sci(qd_measured.segment(e.v_offset, e.nv).norm()) + ", " + sci(std::max(dq, dv)) +
                           " from the values given");
    }
  }
  if (problems.empty() && within_tolerance(bodies, q != nullptr)) return;
  const ConsistencyReport report = check_state(*model_, t, bodies, state_tolerance_);
  problems.insert(problems.end(), report.violations.begin(), report.violations.end());
  if (problems.empty()) return;
  if (fix == StateFix::Project) {
    AssemblyReport assembly;
    bodies = assemble_state(*model_, t, std::move(bodies), assembly);
    return;
  }
  std::string text = "the state violates the constraints at t = " + sci(t) + " (tolerance " + sci(state_tolerance_) + "):";
  for (const auto& p : problems) text += "\n  " + p;
  text += "\nset it with StateFix::Project (project=True in Python) to project it onto them";
  throw std::invalid_argument(text);
}

void Simulator::restart(const SystemState& bodies) {
  formulation_->set_state(time(), bodies);
  failure_.clear();
  changed();
}

void Simulator::set_state(const Eigen::VectorXd& q, const Eigen::VectorXd& qd, StateFix fix) {
  check_size(q, map_->nq(), "set_state: q", "the joints' coordinates");
  check_size(qd, map_->nv(), "set_state: qd", "one per joint rate");
  check_finite_entries(q, *map_, false, "set_state: q");
  check_finite_entries(qd, *map_, true, "set_state: qd");
  for (const CoordinateMap::Entry& e : map_->entries()) {
    const int quaternion = e.type == JointType::Spherical ? 0 : e.type == JointType::Free ? 3 : -1;
    if (quaternion >= 0 && q.segment(e.q_offset + quaternion, 4).norm() < 1e-12)
      throw std::invalid_argument("set_state: the quaternion of joint '" + e.name() + "' is zero");
  }
  map_->place(q, qd, placed_);
  check_or_project(placed_, &q, &qd, fix);
  inputs_->restart_angles(q);
  restart(placed_);
}

void Simulator::set_joint_state(const std::string& joint, const Eigen::VectorXd& joint_q, const Eigen::VectorXd& joint_qd,
                                StateFix fix) {
  const CoordinateMap::Entry& e = map_->entry(joint);
  if (joint_q.size() != e.nq || joint_qd.size() != e.nv)
    throw std::invalid_argument("set_joint_state: joint '" + joint + "' (" + to_string(e.type) + ") has " +
                                std::to_string(e.nq) + " coordinates and " + std::to_string(e.nv) + " rates, got " +
                                std::to_string(joint_q.size()) + " and " + std::to_string(joint_qd.size()));
  Eigen::VectorXd q_all = q(), qd_all = qd();
  q_all.segment(e.q_offset, e.nq) = joint_q;
  qd_all.segment(e.v_offset, e.nv) = joint_qd;
  set_state(q_all, qd_all, fix);
}

void Simulator::set_body_states(const SystemState& bodies, StateFix fix) {
  if (bodies.size() != model_->bodies.size())
    throw std::invalid_argument("set_body_states: expected " + std::to_string(model_->bodies.size()) +
                                " body states, got " + std::to_string(bodies.size()));
  SystemState states = bodies;
  for (std::size_t i = 0; i < states.size(); ++i) {
    BodyState& b = states[i];
    if (!b.r.allFinite() || !b.q.coeffs().allFinite() || !b.v.allFinite() || !b.w.allFinite())
      throw std::invalid_argument("set_body_states: the state of body '" + model_->bodies[i].name + "' is not finite");
    if (b.q.norm() < 1e-12)
      throw std::invalid_argument("set_body_states: the quaternion of body '" + model_->bodies[i].name + "' is zero");
    b.q.normalize();
    b.a = b.alpha = Vec3::Zero();
  }
  check_or_project(states, nullptr, nullptr, fix);
  Eigen::VectorXd q_new(map_->nq()), qd_new(map_->nv());
  map_->measure(states, q_new, qd_new, &inputs_->angle_reference());
  inputs_->restart_angles(q_new);
  restart(states);
}

// Inputs ----------------------------------------------------------------------------------------------

void Simulator::inputs_changed() {
  formulation_->loads_changed();
  changed();
}

void Simulator::set_effort(const Eigen::VectorXd& effort) {
  inputs_->set_effort(effort);
  inputs_changed();
}

void Simulator::set_joint_effort(const std::string& joint, const Eigen::VectorXd& effort) {
  inputs_->set_joint_effort(joint, effort);
  inputs_changed();
}

void Simulator::set_body_wrench(const std::string& body, const Vec3& force, const Vec3& torque) {
  inputs_->set_body_wrench(body_named(*model_, body, "set_body_wrench"), force, torque);
  inputs_changed();
}

void Simulator::set_load_function(LoadFunction function) {
  inputs_->set_function(std::move(function));
  inputs_changed();
}

void Simulator::clear_inputs() {
  inputs_->clear_inputs();
  inputs_changed();
}

// Outputs ---------------------------------------------------------------------------------------------

const Snapshot& Simulator::snapshot() const {
  if (snapshot_version_ != version_) {
    formulation_->snapshot(snapshot_);
    snapshot_version_ = version_;
  }
  return snapshot_;
}

JointReaction Simulator::reaction(const std::string& joint) const {
  const int j = map_->entry(joint).joint;
  if (j < 0) throw std::invalid_argument("reaction: '" + joint + "' is a floating body's free joint, which carries no load");
  const Snapshot& s = snapshot();
  if (s.reactions.empty())
    throw std::logic_error("reaction: the " + formulation_name_ + " formulation does not compute joint reactions");
  return s.reactions[static_cast<std::size_t>(j)];
}

Energies Simulator::energy() const {
  if (!metrics_) metrics_ = std::make_unique<Metrics>(*model_, inputs_.get());
  const SystemState& bodies = body_states();
  Energies e;
  e.kinetic = kinetic_energy(*model_, bodies);
  e.potential = metrics_->potential_energy(bodies);
  e.total = e.kinetic + e.potential;
  return e;
}

ConstraintErrors Simulator::constraint_errors() const {
  if (!metrics_) metrics_ = std::make_unique<Metrics>(*model_, inputs_.get());
  ConstraintErrors worst;
  const Snapshot& s = snapshot();
  for (const ConstraintErrors& e : metrics_->constraint_errors(s.t, s.bodies)) {
    worst.position = std::max(worst.position, e.position);
    worst.velocity = std::max(worst.velocity, e.velocity);
    worst.acceleration = std::max(worst.acceleration, e.acceleration);
  }
  return worst;
}

}  // namespace treedyn
