#include "treedyn/errors.hpp"
#include "treedyn/projection.hpp"

#include <cmath>
#include <sstream>

namespace treedyn {

ConstraintMatrix::ConstraintMatrix(const Model& model)
    : model_(&model), constraints_(model), inv_inertia_(model.bodies.size()) {}

void ConstraintMatrix::factorise(double t, const SystemState& state) {
  const int n = model_->body_count();
  constraints_.evaluate(t, state, blocks_, ConstraintParts::without_jdot());
  constraints_.stack(blocks_, J_, phi_, phi_t_, gamma_);
  for (int i = 0; i < n; ++i) {
    const Mat3 A = state[static_cast<std::size_t>(i)].q.toRotationMatrix();
    inv_inertia_[static_cast<std::size_t>(i)] = A * model_->bodies[static_cast<std::size_t>(i)].inertia.inverse() * A.transpose();
  }
  if (constraints_.rows() == 0) return;
  std::vector<Eigen::Triplet<double>> entries;
  for (int i = 0; i < n; ++i) {
    const double inv_mass = 1.0 / model_->bodies[static_cast<std::size_t>(i)].mass;
    for (int k = 0; k < 3; ++k) {
      entries.emplace_back(6 * i + k, 6 * i + k, inv_mass);
      for (int l = 0; l < 3; ++l)
        entries.emplace_back(6 * i + 3 + k, 6 * i + 3 + l, inv_inertia_[static_cast<std::size_t>(i)](k, l));
    }
  }
  Eigen::SparseMatrix<double> Minv(6 * n, 6 * n);
  Minv.setFromTriplets(entries.begin(), entries.end());
  MinvJt_ = Minv * J_.transpose();
  S_ = Eigen::MatrixXd(J_ * MinvJt_);
  solver_.compute(S_);  // Cholesky, or minimum-norm when redundant or at a singular position
}

Eigen::VectorXd ConstraintMatrix::solve(const Eigen::VectorXd& rhs) const { return solver_.solve(rhs); }

void ConstraintMatrix::apply_Minv(const Eigen::VectorXd& in, Eigen::VectorXd& out) const {
  out.resize(in.size());
  for (int i = 0; i < model_->body_count(); ++i) {
    out.segment<3>(6 * i) = in.segment<3>(6 * i) / model_->bodies[static_cast<std::size_t>(i)].mass;
    out.segment<3>(6 * i + 3) = inv_inertia_[static_cast<std::size_t>(i)] * in.segment<3>(6 * i + 3);
  }
}

ConstraintProjector::ConstraintProjector(const Model& model) : matrix_(model) {}

void ConstraintProjector::correction(const Eigen::VectorXd& rhs) { correction_.noalias() = -matrix_.MinvJt() * matrix_.solve(rhs); }

double ConstraintProjector::project_positions(double t, SystemState& state, double tolerance, int max_iterations) {
  if (matrix_.constraints().rows() == 0) return 0.0;
  for (int it = 0; it < max_iterations; ++it) {
    matrix_.factorise(t, state);
    const double error = matrix_.phi().cwiseAbs().maxCoeff();
    if (error <= tolerance) return error;
    correction(matrix_.phi());
    for (std::size_t i = 0; i < state.size(); ++i) {
      const auto k = 6 * static_cast<Eigen::Index>(i);
      state[i].r += correction_.segment<3>(k);
      state[i].q = (quat_exp<double>(correction_.segment<3>(k + 3)) * state[i].q).normalized();
    }
  }
  matrix_.factorise(t, state);
  return matrix_.phi().cwiseAbs().maxCoeff();
}

void ConstraintProjector::project_velocities(double t, SystemState& state) {
  if (matrix_.constraints().rows() == 0) return;
  matrix_.factorise(t, state);
  correct_velocities(state);
}

double ConstraintProjector::project(double t, SystemState& state, double tolerance, int max_iterations) {
  const double error = project_positions(t, state, tolerance, max_iterations);  // ends factorised at `state`
  if (matrix_.constraints().rows() > 0) correct_velocities(state);
  return error;
}

void ConstraintProjector::correct_velocities(SystemState& state) {
  Eigen::VectorXd V(6 * static_cast<Eigen::Index>(state.size()));
  for (std::size_t i = 0; i < state.size(); ++i) V.segment<6>(6 * static_cast<Eigen::Index>(i)) << state[i].v, state[i].w;
  correction(matrix_.J() * V + matrix_.phi_t());
  for (std::size_t i = 0; i < state.size(); ++i) {
    const auto k = 6 * static_cast<Eigen::Index>(i);
    state[i].v += correction_.segment<3>(k);
    state[i].w += correction_.segment<3>(k + 3);
  }
}

// ---------------------------------------------------------------------------------------------

namespace {

std::string block_name(const Model& m, int k) {
  if (k < m.joint_count()) return "joint '" + m.joints[static_cast<std::size_t>(k)].name + "'";
  return "driver '" + m.drivers[static_cast<std::size_t>(k - m.joint_count())].name + "'";
}

/// check_state's work, each block at its two bodies' states `state_of(body)` (ground's for kGround;
/// a reference, or a state made for the block).
template <class StateOf>
ConsistencyReport check_blocks(const Model& model, double t, StateOf&& state_of, double tolerance, const std::string& which) {
  ConsistencyReport report;
  const ConstraintSet constraints(model);
  ConstraintBlock b;  // one block at a time, with what the check reads (all of them at once: 1 KB a joint)
  for (int k = 0; k < constraints.block_count(); ++k) {
    const Joint& joint = model.joints[static_cast<std::size_t>(constraints.joint_of_block(k))];
    const BodyState& P = state_of(joint.parent);
    const BodyState& C = state_of(joint.child);
    constraints.evaluate_block(k, t, P, C, b, ConstraintParts::jacobians_only());
    if (b.size() == 0) continue;
    Vec6 V_P = Vec6::Zero(), V_C = Vec6::Zero();
    V_P << P.v, P.w;
    V_C << C.v, C.w;
    const double pos = b.phi.cwiseAbs().maxCoeff();
    const double vel = (b.J_P * V_P + b.J_C * V_C + b.phi_t).cwiseAbs().maxCoeff();
    report.max_position_error = std::max(report.max_position_error, pos);
    report.max_velocity_error = std::max(report.max_velocity_error, vel);
    if (!(pos <= tolerance)) report.violations.push_back(block_name(model, k) + ": " + which + "positions violate it by " + sci(pos));
    if (!(vel <= tolerance)) report.violations.push_back(block_name(model, k) + ": " + which + "velocities violate it by " + sci(vel));
  }
  return report;
}

}  // namespace

ConsistencyReport check_state(const Model& model, double t, const SystemState& state, double tolerance,
                              const std::string& which) {
  return check_blocks(model, t, [&](int body) -> const BodyState& { return state_of(state, body); }, tolerance, which);
}

ConsistencyReport check_initial_state(const Model& model, double tolerance) {
  // Each block's two bodies' initial states as it is checked: no state of the whole model is made.
  return check_blocks(model, 0.0, [&](int body) { return initial_state(model, body); }, tolerance, "initial ");
}

std::string AssemblyReport::summary(const Model& model) const {
  std::ostringstream s;
  s << "assembled the initial state (residuals: position " << sci(residual_position) << ", velocity "
    << sci(residual_velocity) << ")\n";
  for (std::size_t i = 0; i < moved.size(); ++i)
    s << "  " << model.bodies[i].name << ": moved " << sci(moved[i]) << " m, turned " << sci(turned[i])
      << " rad, velocity changed by " << sci(velocity_change[i]) << "\n";
  return s.str();
}

SystemState assemble_state(const Model& model, double t, SystemState state, AssemblyReport& report) {
  const SystemState before = state;
  ConstraintProjector projector(model);
  report.residual_position = projector.project_positions(t, state, 1e-13, 100);
  if (!(report.residual_position <= 1e-8))
    throw ModelError("cannot assemble the positions: the constraints remain violated by " +
                     sci(report.residual_position) + " after 100 projections (are the joints compatible?)");
  projector.project_velocities(t, state);
  report.moved.clear();
  report.turned.clear();
  report.velocity_change.clear();
  for (std::size_t i = 0; i < state.size(); ++i) {
    report.moved.push_back((state[i].r - before[i].r).norm());
    report.turned.push_back(state[i].q.angularDistance(before[i].q));
    report.velocity_change.push_back((state[i].v - before[i].v).norm() + (state[i].w - before[i].w).norm());
  }
  report.residual_velocity = check_state(model, t, state, 1.0).max_velocity_error;
  return state;
}

Model assemble_initial_state(const Model& model, AssemblyReport& report) {
  const SystemState state = assemble_state(model, 0.0, initial_state(model), report);
  Model out = model;
  for (std::size_t i = 0; i < state.size(); ++i) {
    Body& b = out.bodies[i];
    b.position = state[i].r;
    b.orientation = state[i].q;
    b.velocity = state[i].v;
    b.angular_velocity = state[i].w;
  }
  return out;
}

}  // namespace treedyn
