// What the half- and fully-implicit integrators share; see implicit_core.hpp (paper 002).
#include "implicit_core.hpp"

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "../common/equal_steps.hpp"
#include "../common/largest_body.hpp"
#include "../common/reactions.hpp"
#include "treedyn/errors.hpp"

namespace treedyn::implicit {
namespace {

/// loop_conditioning below which a Newton failure is put down to a singular position.
constexpr double kSingularConditioning = 0.05;

/// A twist Jacobian (m x 6) in a body's unknowns at orientation A: [J_v, J_w A].
auto to_x(const SystemState& state) {
  return [&state](const ConstraintRows& J, int i, int m) {
    ConstraintRows out(m, 6);
    out.leftCols<3>() = J.leftCols<3>();
    out.rightCols<3>().noalias() = J.rightCols<3>() * state[static_cast<std::size_t>(i)].q.toRotationMatrix();
    return out;
  };
}

}  // namespace

Slide slide_of(const Joint& j, const SystemState& s) {
  const BodyState &P = state_of(s, j.parent), &C = state_of(s, j.child);
  const Vec3 axis = P.q * (j.parent_frame.rotation.col(2));
  const Vec3 point = C.r + C.q * j.child_frame.origin;
  const Vec3 v_C = C.v + C.w.cross(point - C.r), v_P = P.v + P.w.cross(point - P.r);
  return {axis, point, (v_C - v_P).dot(axis)};
}

Core::Core(std::shared_ptr<const Model> model_ptr, const ImplicitOptions& options, std::shared_ptr<const ExternalLoads> external,
           std::string name)
    : Formulation(std::move(model_ptr), std::move(external)),
      model_(model()),
      options_(options),
      name_(std::move(name)),
      n_(model_.body_count()),
      ctx_(model_, 6, name_, options.threading, external_loads()),
      state_(initial_state(model_)),
      state_n_(state_),
      blocks_(static_cast<std::size_t>(ctx_.constraints.block_count())),
      blocks_n_(blocks_),
      rows_(model_.joints.size()),
      lambda_(Eigen::VectorXd::Zero(ctx_.constraints.rows())),
      mu_(lambda_),
      timer_({"residuals and Jacobians", "linear solves"}),
      bodies_(static_cast<std::size_t>(n_)),
      wrenches_(static_cast<std::size_t>(n_)),
      d_mu_(lambda_) {
  check(options);
  core_ = std::make_unique<Tree>(ctx_.tree, ctx_.joint_blocks.sides(), InverseMethod::Cholesky, dc::LeafBlocks::Shared);
  if (options.linear_solver == ImplicitOptions::LinearSolver::Sparse) setup_sparse();
  setup_frictions();
  initialise();
}

std::vector<std::string> Core::warnings() const {
  std::vector<std::string> out = warnings_;
  if (roundoff_stops_ > 0) {
    std::ostringstream msg;
    msg << name() << ": in " << roundoff_stops_ << " steps (first at t = " << first_roundoff_stop_.first
        << ") the Newton increments stopped shrinking at round-off, up to 100x above the tolerance "
        << "or 1e-6 of the unknowns' size (||delta q|| = " << first_roundoff_stop_.second
        << "); those steps were accepted. A larger --newton-tol avoids this.";
    out.push_back(msg.str());
  }
  return out;
}

void Core::advance_to(double t_target) {
  StageTimer::Scope counting(timer_);
  timer_.start();
  equal_steps(t_, t_target, options_.dt, [&](double t_next, double h) {  // h in Eqs. 4, 13c
    if (interrupt_requested()) throw Interrupted(t_);
    take_step(h, t_next);
  });
}

void Core::step() {
  StageTimer::Scope counting(timer_);
  timer_.start();
  take_step(options_.dt, t_ + options_.dt);
}

void Core::set_state(double t, const SystemState& bodies) {
  state_ = bodies;
  t_ = t;
  ctx_.loads.update_angle_references(state_);
  for (FrictionLoad& f : frictions_) f.force.setZero();
  initialise();
}

void Core::bodies(SystemState& out) {
  out = state_;
  for (BodyState& b : out) b.a = b.alpha = Vec3::Zero();
}

void Core::snapshot(Snapshot& out) {
  out.t = t_;
  out.bodies = state_;
  for (int i = 0; i < n_; ++i) {
    BodyState& s = out.bodies[static_cast<std::size_t>(i)];
    s.a = body(i).a;
    s.alpha = s.q * body(i).wd_bar;  // d/dt (A w_bar) = A w_bar_dot
  }
  if (reactions_at_start()) {  // lambda_n acts through the Jacobians of t_n (half-implicit, Eq. 3)
    reactions_from_multipliers(ctx_.constraints, blocks_n_, lambda_, state_n_, out);
  } else {
    ctx_.constraints.evaluate(t_, state_, blocks_, ConstraintParts::without_jdot());
    reactions_from_multipliers(ctx_.constraints, blocks_, lambda_, state_, out);
  }
  out.extra_power = 0.0;
  for (const FrictionLoad& f : frictions_) {
    const Slide s = slide_of(model_.joints[static_cast<std::size_t>(f.joint)], state_);
    out.extra_power += f.force.dot(s.axis) * s.speed;
  }
}

void Core::check(const ImplicitOptions& o) const {
  if (!(o.dt > 0.0)) throw std::invalid_argument(name() + ": the step must be positive");
  if (o.newton_max < 1) throw std::invalid_argument(name() + ": newton_max must be at least 1");
  if (o.newton_tol && !(*o.newton_tol > 0.0))
    throw std::invalid_argument(name() + ": newton_tol must be positive");
}

void Core::setup_frictions() {
  for (const JointFriction& f : model_.frictions) {
    const Joint& j = model_.joints[static_cast<std::size_t>(f.joint)];
    if (j.type == JointType::Prismatic || j.type == JointType::Cylindrical)
      frictions_.push_back({f.joint, f.coefficient});
    else
      warnings_.push_back(name() + ": Coulomb friction '" + f.name + "' on " + to_string(j.type) + " joint '" +
                          j.name + "' is ignored (supported on prismatic and cylindrical joints)");
  }
}

void Core::update_states() {
  ctx_.parallel.for_each(n_, [&](int i) {
    const BodyData& b = body(i);
    BodyState& s = state_[static_cast<std::size_t>(i)];
    s.r = b.r;
    s.q = b.q;
    s.v = b.v;
    s.w = b.q * b.w_bar;
  });
}

/// F = [f; A' n - w_bar x J_bar w_bar] of every body at (t, state_), friction included.
void Core::applied_forces(double t) {
  ctx_.loads.evaluate(t, state_, wrenches_);
  for (const FrictionLoad& f : frictions_) {
    const Joint& j = model_.joints[static_cast<std::size_t>(f.joint)];
    const Slide s = slide_of(j, state_);
    const Vec3 F = f.force;
    wrenches_[static_cast<std::size_t>(j.child)] += wrench_at_com(F, s.point, state_of(state_, j.child).r);
    if (j.parent != kGround)
      wrenches_[static_cast<std::size_t>(j.parent)] -= wrench_at_com(F, s.point, state_of(state_, j.parent).r);
  }
  ctx_.parallel.for_each(n_, [&](int i) {
    BodyData& b = body(i);
    const Mat3& J = model_.bodies[static_cast<std::size_t>(i)].inertia;
    const Vec6& w = wrenches_[static_cast<std::size_t>(i)];
    b.F << w.head<3>(), b.q.conjugate() * w.tail<3>() - b.w_bar.cross(J * b.w_bar);
  });
}

/// Friction forces for the coming step from the last multipliers and the state at t_n
/// (blocks_n_ evaluated there): mu |N| against the sliding velocity (paper 002, Sect. 3.4).
void Core::update_frictions() {
  for (FrictionLoad& f : frictions_) {
    const Joint& j = model_.joints[static_cast<std::size_t>(f.joint)];
    const ConstraintBlock& b = blocks_n_[static_cast<std::size_t>(f.joint)];  // the joint's own block
    const Vec3 reaction = (-b.J_C.transpose() * lambda_.segment(ctx_.constraints.offset(f.joint), b.size())).head<3>();
    const Slide s = slide_of(j, state_);
    const double normal = (reaction - reaction.dot(s.axis) * s.axis).norm();
    f.force = std::abs(s.speed) < 1e-5 ? Vec3::Zero() : Vec3(-f.mu * normal * std::copysign(1.0, s.speed) * s.axis);
  }
}

// Linear solves ---------------------------------------------------------------------------

void Core::solve(bool factor, Eigen::VectorXd& multipliers) {
  timer_.mark(0);
  if (sparse_) solve_sparse(factor, multipliers);
  else solve_tree(factor, multipliers);
  timer_.mark(1);
}

/// On the assembly tree: leaves delta = K f + K g with loads f = -P' d, so the tree's
/// multipliers are -d.
void Core::solve_tree(bool factor, Eigen::VectorXd& multipliers) {
  auto leaf_in = [&](int i) {
    auto& node = core_->leaf(i);
    const BodyData& b = body(i);
    node.set_shared_b(K_times(b, b.g));
    if (factor) node.set_shared_k(K_matrix(b));  // written out: the rows here are not arm rows (see K_matrix)
  };
  auto leaf_out = [&](int i) {
    auto& node = core_->leaf(i);
    BodyData& b = body(i);
    const Vec6 f = b.g + node.shared_f();
    b.delta = K_times(b, f);
  };
  if (factor) core_->solve(rows_, ctx_.parallel, leaf_in, leaf_out);
  else core_->solve_bias(rows_, ctx_.parallel, leaf_in, leaf_out);
  ctx_.joint_blocks.add_multipliers(*core_, -1.0, multipliers, ctx_.parallel);
}

namespace {

/// The joints' multipliers in the sparse system, in the tree's sign convention (for
/// JointBlocks::add_multipliers).
struct SparseMultipliers {
  const Eigen::VectorXd* solution;
  const std::vector<int>* offsets;
  const JointBlocks* blocks;
  int bodies;
  dc::Types<double, 6>::Vec multiplier(int j) const {
    dc::Types<double, 6>::Vec out = dc::Types<double, 6>::Vec::Zero();
    const int m = blocks->rows(j);
    out.head(m) = -solution->segment(6 * bodies + (*offsets)[static_cast<std::size_t>(j)], m);
    return out;
  }
};

}  // namespace

void Core::setup_sparse() {
  sparse_ = true;
  int rows = 0;
  for (int j = 0; j < model_.joint_count(); ++j) {
    sparse_offsets_.push_back(rows);
    rows += ctx_.joint_blocks.rows(j);
  }
  sparse_rhs_.setZero(6 * n_ + rows);
}

/// N = [M P'; P 0] in triplets (every entry of P's blocks, zeros included, so the pattern is
/// fixed), factorised by SparseLU.
void Core::solve_sparse(bool factor, Eigen::VectorXd& multipliers) {
  const int nx = 6 * n_;
  if (factor) {
    std::vector<Eigen::Triplet<double>> t;
    for (int i = 0; i < n_; ++i) {  // M_i = diag(m I, J_bar): its nonzero entries, row by row
      const Body& mb = model_.bodies[static_cast<std::size_t>(i)];
      for (int a = 0; a < 3; ++a) t.emplace_back(6 * i + a, 6 * i + a, mb.mass);
      for (int a = 0; a < 3; ++a)
        for (int c = 0; c < 3; ++c)
          if (mb.inertia(a, c) != 0.0) t.emplace_back(6 * i + 3 + a, 6 * i + 3 + c, mb.inertia(a, c));
    }
    for (int j = 0; j < model_.joint_count(); ++j) {
      const Rows& jr = rows_[static_cast<std::size_t>(j)];
      const dc::JointSides& s = ctx_.joint_blocks.sides()[static_cast<std::size_t>(j)];
      for (int row = 0; row < jr.rows; ++row)
        for (int c = 0; c < 6; ++c) {
          const int at = nx + sparse_offsets_[static_cast<std::size_t>(j)] + row;
          for (const auto& [side, G] : {std::pair{s.body_p, jr.G_p()}, std::pair{s.body_c, jr.G_c()}}) {
            if (side == kGround) continue;
            t.emplace_back(at, 6 * side + c, G(row, c));
            t.emplace_back(6 * side + c, at, G(row, c));
          }
        }
    }
    sparse_N_.resize(static_cast<Eigen::Index>(sparse_rhs_.size()), static_cast<Eigen::Index>(sparse_rhs_.size()));
    sparse_N_.setFromTriplets(t.begin(), t.end());
    sparse_lu_.compute(sparse_N_);
    if (sparse_lu_.info() != Eigen::Success)
      throw SimulationError(t_, name() + ": the sparse solver found the Newton matrix singular "
                                         "(redundant constraints?); the tree solver (--linear-solver tree) "
                                         "handles them with minimum-norm multipliers");
  }
  for (int i = 0; i < n_; ++i) sparse_rhs_.segment<6>(6 * i) = body(i).g;
  for (int j = 0; j < model_.joint_count(); ++j) {
    const Rows& jr = rows_[static_cast<std::size_t>(j)];
    sparse_rhs_.segment(nx + sparse_offsets_[static_cast<std::size_t>(j)], jr.rows) = jr.r.head(jr.rows);
  }
  sparse_solution_ = sparse_lu_.solve(sparse_rhs_);
  for (int i = 0; i < n_; ++i) body(i).delta = sparse_solution_.segment<6>(6 * i);
  ctx_.joint_blocks.add_multipliers(SparseMultipliers{&sparse_solution_, &sparse_offsets_, &ctx_.joint_blocks, n_}, -1.0,
                                multipliers, ctx_.parallel);
}

/// Fills every joint's rows from `blocks` (Jacobians at `state` with `jacobians`) with r from rhs.
template <class Rhs>
void Core::fill_rows(bool jacobians, const std::vector<ConstraintBlock>& blocks, const SystemState& state, Rhs&& rhs) {
  ctx_.parallel.for_each(model_.joint_count(), [&](int j) {
    ctx_.joint_blocks.fill(j, jacobians, blocks, rows_[static_cast<std::size_t>(j)], to_x(state), rhs);
  });
}

void Core::fill_position_rows(bool jacobians, const std::vector<ConstraintBlock>& blocks, const SystemState& state,
                              double scale) {
  fill_rows(jacobians, blocks, state, [scale](const ConstraintBlock& b) { return -scale * b.phi; });
}

void Core::evaluate_blocks(double t, const SystemState& state, std::vector<ConstraintBlock>& blocks, ConstraintParts parts) {
  ctx_.parallel.for_each(model_.joint_count(), [&](int j) { ctx_.joint_blocks.evaluate(j, t, state, blocks, parts); });
}

// The algorithm ---------------------------------------------------------------------------
/// Consistent accelerations and multipliers at t0: M x + P' lambda = F, P x = gamma.
void Core::initialise() {
  for (int i = 0; i < n_; ++i) {
    BodyData& b = body(i);
    const Body& mb = model_.bodies[static_cast<std::size_t>(i)];
    const BodyState& s = state_[static_cast<std::size_t>(i)];
    b.r = s.r;
    b.q = s.q.normalized();
    b.v = s.v;
    b.w_bar = b.q.conjugate() * s.w;
    b.k = 1.0 / mb.mass;
    b.K_w = mb.inertia.inverse();
  }
  update_states();
  applied_forces(t_);
  evaluate_blocks(t_, state_, blocks_, ConstraintParts::without_jdot());
  fill_rows(true, blocks_, state_, [](const ConstraintBlock& b) { return b.gamma; });
  for (auto& b : bodies_) b.g = b.F;
  lambda_.setZero();
  solve(true, lambda_);
  for (auto& b : bodies_) {
    b.a = b.delta.head<3>();
    b.wd_bar = b.delta.tail<3>();
    b.x = b.delta;
  }
  if (!sparse_ && core_->any_singular() && !warned_singular_) {
    warnings_.push_back(name() + ": the constraint Jacobian is rank deficient (redundant constraints): "
                                 "minimum-norm multipliers");
    warned_singular_ = true;
  }
  blocks_n_ = blocks_;
  state_n_ = state_;
  check_finite("the initial accelerations");
}

void Core::take_step(double h, double t1) {
  const Parallel::TimedCall timed(ctx_.parallel, n_);  // the governor's unit
  state_n_ = state_;
  evaluate_blocks(t_, state_, blocks_n_, ConstraintParts::jacobians_only());
  update_frictions();
  for (auto& b : bodies_) {
    b.r_n = b.r;
    b.v_n = b.v;
    b.w_bar_n = b.w_bar;
    b.q_n = b.q;
  }
  predict(h);
  newton(t1, h);
  finish_step(h);
  t_ = t1;
  ++stats_.steps;
  timer_.mark(0);
  check_finite("the step");
  if (ctx_.loads.measures_angles()) ctx_.loads.update_angle_references(state_);
}

/// P_i' mu in body i's unknowns from `blocks` evaluated at `state`.
Vec6 Core::load_on(int i, const std::vector<ConstraintBlock>& blocks, const SystemState& state) const {
  const Vec6 wrench = ctx_.joint_blocks.wrench_on(i, core_->leaf(i).handles(), blocks, mu_);
  Vec6 load;  // T' wrench for to_x's T = diag(I, A)
  load << wrench.head<3>(), state[static_cast<std::size_t>(i)].q.toRotationMatrix().transpose() * wrench.tail<3>();
  return load;
}

void Core::newton(double t1, double h) {
  const double tol = options_.tolerance(h), scale = phi_scale(h);
  double norm = 0.0, smallest = INFINITY;
  int since_smallest = 0;  // iterations since the smallest increment so far
  bool converged = false;
  int k = 0;
  while (k < options_.newton_max) {
    ctx_.parallel.for_each(n_, [&](int i) { kinematics_from_unknowns(body(i), h); });
    update_states();
    const bool factor = refactor(k);
    if (at_iterate()) applied_forces(t1);
    evaluate_blocks(t1, state_, blocks_, ConstraintParts::jacobians_only());
    // Without new Jacobians (half-implicit) rows_ keep those of the predictor; r = -Phi is new.
    fill_position_rows(factor && at_iterate(), blocks_, state_, scale);
    ctx_.parallel.for_each(n_, [&](int i) { body(i).g = -residual(i, h); });
    d_mu_.setZero();
    solve(factor, d_mu_);
    mu_ += d_mu_;
    double sum = d_mu_.squaredNorm(), size = mu_.squaredNorm();
    for (auto& b : bodies_) {
      b.x += b.delta;
      sum += b.delta.squaredNorm();
      size += b.x.squaredNorm();
    }
    norm = std::sqrt(sum);
    if (norm < smallest) {
      smallest = norm;
      since_smallest = 0;
    } else {
      ++since_smallest;
    }
    ++k;
    ++stats_.newton_iterations;
    if (!std::isfinite(norm)) break;
    converged = norm < tol;
    const bool last = k == options_.newton_max;
    if (!converged && at_roundoff_floor(smallest, last ? 3 : since_smallest, tol, std::sqrt(size))) {
      if (roundoff_stops_++ == 0) first_roundoff_stop_ = {t1, norm};
      converged = true;
    }
    if (converged) break;
  }
  ctx_.parallel.for_each(n_, [&](int i) { kinematics_from_unknowns(body(i), h); });
  update_states();
  if (!converged) {
    std::ostringstream msg;
    msg << name() << ": Newton iteration did not converge in the step to t = " << t1 << " (||delta q|| = " << norm
        << " after " << k << " iterations, the largest body increment at '"
        << largest_body(model_, [&](int i) { return body(i).delta.squaredNorm(); }) << "', tolerance " << tol
        << ", h = " << h << ")";
    // At a singular position of a closed loop (links aligned) no step or iteration count helps
    // an index-3 Newton iteration (the four-bar fails sooner at 1e-3 s than at 1e-2 s); elsewhere
    // a smaller step or more iterations do.
    const double conditioning = ctx_.topology.loop_conditioning(model_, state_n_);
    if (conditioning < kSingularConditioning)
      msg << ": the step starts near a singular position of the closed loops (their constraint rows' smallest singular "
             "value is "
          << conditioning << " of the largest), where the links align and the index-3 Newton iteration cannot pass at "
          << "any step; ali3 (its augmented Lagrangian) and hdca pass singular positions";
    else
      msg << ": try a smaller step and a larger --newton-max";
    throw SimulationError(t1, msg.str());
  }
}

/// The iterate's kinematics from its unknowns: the scheme's position and velocity, then
/// A = A_n exp(h skew w_bar) (the Lie-group update, Eqs. 6 and 14d).
void Core::kinematics_from_unknowns(BodyData& b, double h) const {
  position_and_velocity(b, h);
  b.q = (b.q_n * quat_exp<double>(h * b.w_bar)).normalized();
}

/// The increments have stopped shrinking (none smaller than the smallest so far for three
/// iterations, or the iteration limit is reached) while that smallest is below 100 x the
/// tolerance or 1e-6 of |q| = |(x, lambda)|:
/// the iteration has reached the floor that round-off sets, and more iterations only stir the
/// last digits (a converging iteration, however slowly, keeps setting new smallest increments).
/// Paper 002's absolute tolerances sit on that floor for heavy systems: the 1.9 t four-link at
/// h <= 2e-4 (half-implicit: 1e-10 on [r, theta, h^2 lambda], increments stirring at 1.2e-10) and
/// chains of 256 bars and more (fully-implicit: 1e-5 on [accelerations, lambda]; increments
/// stirring at 2e-8 of |q| for 256 bars, 1.1e-7 for 512: the noise grows with the chain's
/// condition number). Such steps are accepted and counted (warnings()).
bool Core::at_roundoff_floor(double smallest, int since_smallest, double tol, double size) {
  return since_smallest >= 3 && smallest < std::max(100.0 * tol, 1e-6 * size);
}

void Core::check_finite(const char* what) const {
  for (int i = 0; i < n_; ++i) {
    const BodyData& b = body(i);
    if (!b.r.allFinite() || !b.v.allFinite() || !b.w_bar.allFinite() || !b.a.allFinite())
      throw SimulationError(t_, name() + ": non-finite state of body '" +
                                    model_.bodies[static_cast<std::size_t>(i)].name + "' after " + what);
  }
}

}  // namespace treedyn::implicit

namespace treedyn {

std::unique_ptr<Formulation> make_implicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                                           std::shared_ptr<const ExternalLoads> external) {
  if (options.scheme == ImplicitOptions::Scheme::HalfImplicit)
    return implicit::make_half_implicit(std::move(model), options, std::move(external));
  return implicit::make_fully_implicit(std::move(model), options, std::move(external));
}

}  // namespace treedyn
