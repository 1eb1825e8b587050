// Half-implicit and fully-implicit index-3 integrators: symbols and equations as in
// include/treedyn/formulations/implicit.hpp (paper 002).
#include "treedyn/formulations/implicit.hpp"

#include <Eigen/SparseLU>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "../common/equal_steps.hpp"
#include "../common/joint_blocks.hpp"
#include "../common/largest_body.hpp"
#include "../common/tree_context.hpp"
#include "../common/reactions.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/stage_timer.hpp"
#include "treedyn/topology.hpp"

namespace treedyn {
namespace {

using Tree = dc::HandleTree<double, 6>;
using Rows = dc::JointRows<double, 6>;
using Scheme = ImplicitOptions::Scheme;

struct BodyData {
  Vec3 r, v, w_bar;                        // at the iterate (end of the step once converged)
  Quat q;                                  // A
  Vec3 a = Vec3::Zero(), wd_bar = Vec3::Zero();  // reported accelerations
  Vec3 r_n, v_n, w_bar_n;                  // at t_n
  Quat q_n;
  Vec6 F = Vec6::Zero();                   // [f; n_bar - w_bar x J_bar w_bar]
  Vec6 x = Vec6::Zero();                   // Newton unknowns (see implicit.hpp)
  Mat6 M = Mat6::Zero(), K = Mat6::Zero(); // diag(m I, J_bar) and its inverse
  Vec6 g = Vec6::Zero();                   // right-hand side of the body's rows in the solve
  Vec6 delta = Vec6::Zero();               // the solve's increment of x
};

/// Friction on one joint, explicit over a step (implicit.hpp).
struct FrictionLoad {
  int joint = 0;
  double mu = 0.0;
  Vec3 force = Vec3::Zero();  // on the child, at its joint-frame origin, during the step
};

/// The joint axis, the child's joint-frame origin and the sliding velocity of a prismatic or
/// cylindrical joint (axis z of its frames) at a state.
struct Slide {
  Vec3 axis, point;
  double speed;
};
Slide slide_of(const Joint& j, const SystemState& s) {
  const BodyState &P = state_of(s, j.parent), &C = state_of(s, j.child);
  const Vec3 axis = P.q * (j.parent_frame.rotation.col(2));
  const Vec3 point = C.r + C.q * j.child_frame.origin;
  const Vec3 v_C = C.v + C.w.cross(point - C.r), v_P = P.v + P.w.cross(point - P.r);
  return {axis, point, (v_C - v_P).dot(axis)};
}

class Implicit final : public Formulation {
 public:
  Implicit(std::shared_ptr<const Model> model_ptr, const ImplicitOptions& options,
           std::shared_ptr<const ExternalLoads> external)
      : Formulation(std::move(model_ptr), std::move(external)),
        model_(model()),
        options_(options),
        half_(options.scheme == Scheme::HalfImplicit),
        n_(model_.body_count()),
        ctx_(model_, 6, name(), options.threading, external_loads()),
        timer_({"residuals and Jacobians", "linear solves"}),
        state_(initial_state(model_)),
        state_n_(state_),
        bodies_(static_cast<std::size_t>(n_)),
        blocks_(static_cast<std::size_t>(ctx_.constraints.block_count())),
        blocks_n_(blocks_),
        wrenches_(static_cast<std::size_t>(n_)),
        rows_(model_.joints.size()),
        lambda_(Eigen::VectorXd::Zero(ctx_.constraints.rows())),
        mu_(lambda_),
        d_mu_(lambda_) {
    check(options);
    core_ = std::make_unique<Tree>(ctx_.tree, ctx_.joint_blocks.sides(), InverseMethod::Cholesky, dc::LeafBlocks::Shared);
    if (options.linear_solver == ImplicitOptions::LinearSolver::Sparse) setup_sparse();
    setup_frictions();
    if (!half_ && (!model_.springs.empty() || !model_.rotational_springs.empty()))
      warnings_.push_back(name() + ": spring and damper Jacobians are left out of the Newton matrix, as paper 002 "
                                   "leaves out the reaction-force Jacobians; stiff springs converge slowly");
    initialise();
  }

  std::string name() const override { return half_ ? "half-implicit" : "fully-implicit"; }
  std::string integrator() const override {
    return half_ ? "symplectic Euler, index 3, Lie-group rotations" : "backward Euler, index 3, Lie-group rotations";
  }
  double time() const override { return t_; }
  SolverStats stats() const override { return stats_; }
  std::vector<std::string> warnings() const override {
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
  std::map<std::string, double> stage_seconds() const override { return timer_.seconds(); }

  void advance_to(double t_target) override {
    StageTimer::Scope counting(timer_);
    timer_.start();
    equal_steps(t_, t_target, options_.dt, [&](double t_next) { step(t_next - t_); });  // h in Eqs. 4, 13c
  }

  void step() override {
    StageTimer::Scope counting(timer_);
    timer_.start();
    step(options_.dt);
  }

  void set_state(double t, const SystemState& bodies) override {
    state_ = bodies;
    t_ = t;
    ctx_.loads.update_angle_references(state_);
    for (FrictionLoad& f : frictions_) f.force.setZero();
    initialise();
  }

  void bodies(SystemState& out) override {
    out = state_;
    for (BodyState& b : out) b.a = b.alpha = Vec3::Zero();
  }

  void snapshot(Snapshot& out) override {
    out.t = t_;
    out.bodies = state_;
    for (int i = 0; i < n_; ++i) {
      BodyState& s = out.bodies[static_cast<std::size_t>(i)];
      s.a = body(i).a;
      s.alpha = s.q * body(i).wd_bar;  // d/dt (A w_bar) = A w_bar_dot
    }
    if (half_) {  // lambda_n acts through the Jacobians of t_n (Eq. 3)
      reactions_from_multipliers(ctx_.constraints, blocks_n_, lambda_, state_n_, out);
    } else {
      ctx_.constraints.evaluate(t_, state_, blocks_);
      reactions_from_multipliers(ctx_.constraints, blocks_, lambda_, state_, out);
    }
    out.extra_power = 0.0;
    for (const FrictionLoad& f : frictions_) {
      const Slide s = slide_of(model_.joints[static_cast<std::size_t>(f.joint)], state_);
      out.extra_power += f.force.dot(s.axis) * s.speed;
    }
  }

 private:
  void check(const ImplicitOptions& o) const {
    if (!(o.dt > 0.0)) throw std::invalid_argument(name() + ": the step must be positive");
    if (o.newton_max < 1) throw std::invalid_argument(name() + ": newton_max must be at least 1");
    if (o.newton_tol && !(*o.newton_tol > 0.0))
      throw std::invalid_argument(name() + ": newton_tol must be positive");
  }

  BodyData& body(int i) { return bodies_[static_cast<std::size_t>(i)]; }
  const BodyData& body(int i) const { return bodies_[static_cast<std::size_t>(i)]; }

  void setup_frictions() {
    for (const JointFriction& f : model_.frictions) {
      const Joint& j = model_.joints[static_cast<std::size_t>(f.joint)];
      if (j.type == JointType::Prismatic || j.type == JointType::Cylindrical)
        frictions_.push_back({f.joint, f.coefficient});
      else
        warnings_.push_back(name() + ": Coulomb friction '" + f.name + "' on " + to_string(j.type) + " joint '" +
                            j.name + "' is ignored (supported on prismatic and cylindrical joints)");
    }
  }

  // Kinematics ------------------------------------------------------------------------------
  /// The body's iterate from its unknowns x (implicit.hpp: Eqs. 4c-d, 6 or 14a-d).
  void kinematics_from_unknowns(BodyData& b, double h) const {
    if (half_) {
      b.r = b.x.head<3>();
      b.v = (b.r - b.r_n) / h;
      b.w_bar = b.x.tail<3>() / h;
    } else {
      b.v = b.v_n + h * b.x.head<3>();
      b.r = b.r_n + h * b.v;
      b.w_bar = b.w_bar_n + h * b.x.tail<3>();
    }
    b.q = (b.q_n * quat_exp<double>(h * b.w_bar)).normalized();
  }

  void update_states() {
    ctx_.parallel.for_each(n_, [&](int i) {
      const BodyData& b = body(i);
      BodyState& s = state_[static_cast<std::size_t>(i)];
      s.r = b.r;
      s.q = b.q;
      s.v = b.v;
      s.w = b.q * b.w_bar;
    });
  }

  /// A twist Jacobian (m x 6) in a body's unknowns at orientation A: [J_v, J_w A].
  static auto to_x(const SystemState& state) {
    return [&state](const ConstraintRows& J, int i, int m) {
      ConstraintRows out(m, 6);
      out.leftCols<3>() = J.leftCols<3>();
      out.rightCols<3>().noalias() = J.rightCols<3>() * state[static_cast<std::size_t>(i)].q.toRotationMatrix();
      return out;
    };
  }

  /// F = [f; A' n - w_bar x J_bar w_bar] of every body at (t, state_), friction included.
  void applied_forces(double t) {
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
  void update_frictions() {
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
  /// Solves M_i delta_i + P_i' d = g_i (every body), P delta = r (the joint rows), for the
  /// increments delta and the multipliers d, which it adds to `multipliers`. With `factor` the
  /// Newton matrix is built from rows_ and factorised; otherwise the last factorisation is
  /// reused (only g and r are new).
  void solve(bool factor, Eigen::VectorXd& multipliers) {
    timer_.mark(0);
    if (sparse_) solve_sparse(factor, multipliers);
    else solve_tree(factor, multipliers);
    timer_.mark(1);
  }

  /// On the assembly tree: leaves delta = K f + K g with loads f = -P' d, so the tree's
  /// multipliers are -d.
  void solve_tree(bool factor, Eigen::VectorXd& multipliers) {
    auto leaf_in = [&](int i) {
      auto& node = core_->leaf(i);
      const BodyData& b = body(i);
      const Vec6 bias = b.K * b.g;
      for (auto& bh : node.b) bh = bias;
      if (factor) node.set_shared_k(b.K);
    };
    auto leaf_out = [&](int i) {
      auto& node = core_->leaf(i);
      BodyData& b = body(i);
      Vec6 f = b.g;
      for (const auto& fh : node.f) f += fh;
      b.delta.noalias() = b.K * f;
    };
    if (factor) core_->solve(rows_, ctx_.parallel, leaf_in, leaf_out);
    else core_->solve_bias(rows_, ctx_.parallel, leaf_in, leaf_out);
    ctx_.joint_blocks.add_multipliers(*core_, -1.0, multipliers, blocks_, ctx_.parallel);
  }

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

  void setup_sparse() {
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
  void solve_sparse(bool factor, Eigen::VectorXd& multipliers) {
    const int nx = 6 * n_;
    if (factor) {
      std::vector<Eigen::Triplet<double>> t;
      for (int i = 0; i < n_; ++i)
        for (int a = 0; a < 6; ++a)
          for (int c = 0; c < 6; ++c)
            if (body(i).M(a, c) != 0.0) t.emplace_back(6 * i + a, 6 * i + c, body(i).M(a, c));
      for (int j = 0; j < model_.joint_count(); ++j) {
        const Rows& jr = rows_[static_cast<std::size_t>(j)];
        const dc::JointSides& s = ctx_.joint_blocks.sides()[static_cast<std::size_t>(j)];
        for (int row = 0; row < jr.rows; ++row)
          for (int c = 0; c < 6; ++c) {
            const int at = nx + sparse_offsets_[static_cast<std::size_t>(j)] + row;
            for (const auto& [side, G] : {std::pair{s.body_p, &jr.G_p}, std::pair{s.body_c, &jr.G_c}}) {
              if (side == kGround) continue;
              t.emplace_back(at, 6 * side + c, (*G)(row, c));
              t.emplace_back(6 * side + c, at, (*G)(row, c));
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
                                  multipliers, blocks_, ctx_.parallel);
  }

  /// Fills every joint's rows from `blocks` (Jacobians at `state` with `jacobians`) with r from rhs.
  template <class Rhs>
  void fill_rows(bool jacobians, const std::vector<ConstraintBlock>& blocks, const SystemState& state, Rhs&& rhs) {
    ctx_.parallel.for_each(model_.joint_count(), [&](int j) {
      ctx_.joint_blocks.fill(j, jacobians, blocks, rows_[static_cast<std::size_t>(j)], to_x(state), rhs);
    });
  }

  void evaluate_blocks(double t, const SystemState& state, std::vector<ConstraintBlock>& blocks, ConstraintParts parts) {
    ctx_.parallel.for_each(model_.joint_count(), [&](int j) { ctx_.joint_blocks.evaluate(j, t, state, blocks, parts); });
  }

  // The algorithm ---------------------------------------------------------------------------
  /// Consistent accelerations and multipliers at t0: M x + P' lambda = F, P x = gamma.
  void initialise() {
    for (int i = 0; i < n_; ++i) {
      BodyData& b = body(i);
      const Body& mb = model_.bodies[static_cast<std::size_t>(i)];
      const BodyState& s = state_[static_cast<std::size_t>(i)];
      b.r = s.r;
      b.q = s.q.normalized();
      b.v = s.v;
      b.w_bar = b.q.conjugate() * s.w;
      b.M.topLeftCorner<3, 3>().diagonal().setConstant(mb.mass);
      b.M.bottomRightCorner<3, 3>() = mb.inertia;
      b.K = b.M.inverse();
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

  void step(double h) {
    const double t1 = t_ + h;
    state_n_ = state_;
    evaluate_blocks(t_, state_, blocks_n_, ConstraintParts::jacobians_only());
    update_frictions();
    for (auto& b : bodies_) {
      b.r_n = b.r;
      b.v_n = b.v;
      b.w_bar_n = b.w_bar;
      b.q_n = b.q;
    }
    if (half_) half_implicit_predictor(h);
    newton(t1, h);
    for (auto& b : bodies_) {
      if (half_) {  // a_n from Eqs. 4a-b
        b.a = (b.v - b.v_n) / h;
        b.wd_bar = (b.w_bar - b.w_bar_n) / h;
      } else {
        b.a = b.x.head<3>();
        b.wd_bar = b.x.tail<3>();
      }
    }
    if (half_) lambda_ = mu_ / (h * h);
    else lambda_ = mu_;
    t_ = t1;
    ++stats_.steps;
    timer_.mark(0);
    check_finite("the step");
    if (ctx_.loads.measures_angles()) ctx_.loads.update_angle_references(state_);
  }

  /// Forces and Jacobians of t_n, rows P_n held for the step (Eq. 12); the iterate starts from
  /// the last multipliers, lambda_hat = h^2 lambda, with e_x = 0 (the last accelerations).
  void half_implicit_predictor(double h) {
    applied_forces(t_);
    fill_rows(true, blocks_n_, state_n_, [](const ConstraintBlock& b) { return -b.phi; });
    mu_ = h * h * lambda_;
    ctx_.parallel.for_each(n_, [&](int i) {
      BodyData& b = body(i);
      Vec6 free;
      free << b.r_n + h * b.v_n, h * b.w_bar_n;
      b.x = free + b.K * (h * h * b.F - load_on(i, blocks_n_, state_n_));
    });
  }

  /// P_i' mu in body i's unknowns from `blocks` evaluated at `state`.
  Vec6 load_on(int i, const std::vector<ConstraintBlock>& blocks, const SystemState& state) const {
    const Vec6 wrench = ctx_.joint_blocks.wrench_on(i, core_->leaf(i).handles, blocks, mu_);
    Vec6 load;  // T' wrench for to_x's T = diag(I, A)
    load << wrench.head<3>(), state[static_cast<std::size_t>(i)].q.toRotationMatrix().transpose() * wrench.tail<3>();
    return load;
  }

  /// Residual e_x of body i at the iterate (implicit.hpp).
  Vec6 residual(int i, double h) const {
    const BodyData& b = body(i);
    if (!half_) return b.M * b.x + load_on(i, blocks_, state_) - b.F;
    Vec6 free;
    free << b.r_n + h * b.v_n, h * b.w_bar_n;
    return b.M * (b.x - free) + load_on(i, blocks_n_, state_n_) - h * h * b.F;
  }

  void newton(double t1, double h) {
    if (!half_) mu_ = lambda_;  // fully implicit: the last accelerations and multipliers
    const double tol = options_.tolerance(h), phi_scale = half_ ? 1.0 : 1.0 / (h * h);
    double norm = 0.0, smallest = INFINITY;
    int since_smallest = 0;  // iterations since the smallest increment so far
    bool converged = false;
    int k = 0;
    while (k < options_.newton_max) {
      ctx_.parallel.for_each(n_, [&](int i) { kinematics_from_unknowns(body(i), h); });
      update_states();
      const bool factor = !half_ || k == 0;
      if (!half_) applied_forces(t1);
      evaluate_blocks(t1, state_, blocks_, ConstraintParts::jacobians_only());
      // half-implicit: rows_ keep P_n from the predictor; only r = -Phi at the iterate is new
      fill_rows(factor && !half_, blocks_, state_, [&](const ConstraintBlock& b) { return -phi_scale * b.phi; });
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
          << ", h = " << h << "): try a smaller step or a larger --newton-max";
      throw SimulationError(t1, msg.str());
    }
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
  static bool at_roundoff_floor(double smallest, int since_smallest, double tol, double size) {
    return since_smallest >= 3 && smallest < std::max(100.0 * tol, 1e-6 * size);
  }

  void check_finite(const char* what) const {
    for (int i = 0; i < n_; ++i) {
      const BodyData& b = body(i);
      if (!b.r.allFinite() || !b.v.allFinite() || !b.w_bar.allFinite() || !b.a.allFinite())
        throw SimulationError(t_, name() + ": non-finite state of body '" +
                                      model_.bodies[static_cast<std::size_t>(i)].name + "' after " + what);
    }
  }

  const Model& model_;
  ImplicitOptions options_;
  const bool half_;
  const int n_;
  TreeContext ctx_;
  StageTimer timer_;
  SystemState state_, state_n_;
  std::vector<BodyData> bodies_;
  std::vector<ConstraintBlock> blocks_, blocks_n_;  // at the iterate, at t_n
  std::vector<Vec6> wrenches_;
  std::unique_ptr<Tree> core_;
  std::vector<Rows> rows_;
  Eigen::VectorXd lambda_;  // multipliers of the last step (implicit.hpp: lambda_n or lambda_n+1)
  Eigen::VectorXd mu_;      // the Newton iteration's multipliers: lambda_hat or lambda
  Eigen::VectorXd d_mu_;    // their increment in one iteration
  std::vector<FrictionLoad> frictions_;
  bool sparse_ = false;
  std::vector<int> sparse_offsets_;  // per joint: first row of its multipliers after the 6n body rows
  Eigen::SparseMatrix<double> sparse_N_;
  Eigen::SparseLU<Eigen::SparseMatrix<double>> sparse_lu_;
  Eigen::VectorXd sparse_rhs_, sparse_solution_;
  double t_ = 0.0;
  SolverStats stats_;
  long roundoff_stops_ = 0;
  std::pair<double, double> first_roundoff_stop_{0.0, 0.0};  // t, ||delta q||
  std::vector<std::string> warnings_;
  bool warned_singular_ = false;
};

}  // namespace

std::unique_ptr<Formulation> make_implicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                                           std::shared_ptr<const ExternalLoads> external) {
  return std::make_unique<Implicit>(std::move(model), options, std::move(external));
}

}  // namespace treedyn
