// ALi3-DCA: symbols and equations as in include/treedyn/formulations/ali3.hpp (paper 000).
#include "treedyn/formulations/ali3.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "../common/equal_steps.hpp"
#include "euler_body.hpp"
#include "../common/joint_blocks.hpp"
#include "../common/largest_body.hpp"
#include "../common/tree_context.hpp"
#include "../common/reactions.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/linalg.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/stage_timer.hpp"
#include "treedyn/topology.hpp"

namespace treedyn {
namespace {

using ali3::Mat7;
using ali3::Vec7;
using namespace ali3;
using Tree = dc::HandleTree<double, 6>;
using Rows = dc::JointRows<double, 6>;

/// Per body: the trapezoidal state and the tangent (held through Newton-Raphson, rebuilt once for
/// the projections).
struct BodyData {
  Vec7 q, qd, qdd;               // current iterate (Eqs. 15-16 keep qd, qdd tied to q: trapezoidal_increment)
  Vec4 p_tangent = Vec4::Zero(); // the Euler parameters the tangent K = (h^2/4) M_cc^-1 of the last full pass
                                 // was built at (K_times_in_twist; K_full_ with geometric stiffness): T = diag(I, 2 E(p_tangent))
  double mu = 0.0;               // normalisation multiplier
  double bias_p = 0.0;           // p_tangent' b_p of the leaf's b = K x in the current pass: with the
                                 // twist T b its leaf holds, all of b (solution, from_twist)
};


class Ali3 final : public Formulation {
 public:
  Ali3(std::shared_ptr<const Model> model_ptr, const Ali3Options& options, std::shared_ptr<const ExternalLoads> external)
      : Formulation(std::move(model_ptr), std::move(external)),
        model_(model()),
        options_(options),
        n_(model_.body_count()),
        ctx_(model_, 6, "ali3", options.threading, external_loads()),
        timer_({"newton", "velocity projection", "acceleration projection"}),
        state_(initial_state(model_)),
        bodies_(static_cast<std::size_t>(n_)),
        block_loads_(static_cast<std::size_t>(ctx_.constraints.block_count())),
        lambda_(Eigen::VectorXd::Zero(ctx_.constraints.rows())) {
    check(options);
    default_alpha_ = ali3_penalty(model_, ctx_.topology, options_.dt);
    alpha_chosen_ = options_.alpha == 0.0;
    if (alpha_chosen_) options_.alpha = default_alpha_;
    if (options.geometric_stiffness) {
      M_check_.assign(static_cast<std::size_t>(n_), Mat7::Zero());
      K_full_.assign(static_cast<std::size_t>(n_), Mat7::Zero());
    }
    per_body_.assign(static_cast<std::size_t>(n_), 0.0);
    // Without geometric stiffness a leaf's T K T' is diag(k I, K_w) (closed_form_tangent): held so.
    core_ = std::make_unique<Tree>(ctx_.tree, ctx_.joint_blocks.sides(), InverseMethod::Cholesky,
                                   options.geometric_stiffness ? dc::LeafBlocks::Shared : dc::LeafBlocks::SharedBlockDiagonal);
    rows_.resize(model_.joints.size());
    for (const auto& f : model_.frictions)
      warnings_.push_back("ali3: Coulomb friction '" + f.name + "' is ignored (not supported by this formulation)");
    if (!model_.springs.empty() || !model_.rotational_springs.empty())
      warnings_.push_back("ali3: spring and damper derivatives are left out of the tangent (modified Newton); "
                          "stiff springs may need more iterations");
    warn_if_penalty_weak(model_);
    initialise();
  }

  std::string name() const override { return "ali3"; }
  const ThreadGovernor* thread_governor() const override { return ctx_.parallel.governor(); }
  std::string integrator() const override { return "trapezoidal (index-3 augmented Lagrangian)"; }
  double time() const override { return t_; }
  SolverStats stats() const override { return stats_; }
  std::vector<std::string> warnings() const override { return warnings_; }
  std::map<std::string, double> stage_seconds() const override { return timer_.seconds(); }
  std::map<std::string, double> diagnostics() const override {
    return {{"euler_parameter_norm_error_max", norm_error_max_}, {"alpha", options_.alpha}};
  }

  void advance_to(double t_target) override {
    StageTimer::Scope counting(timer_);
    equal_steps(t_, t_target, options_.dt, [&](double t_next, double h) {
      if (interrupt_requested()) throw Interrupted(t_);
      step(h, t_next);
    });
  }

  void step() override {
    StageTimer::Scope counting(timer_);
    step(options_.dt, t_ + options_.dt);
  }

  void set_state(double t, const SystemState& bodies) override {
    state_ = bodies;
    t_ = t;
    ctx_.loads.update_angle_references(state_);
    initialise();
  }

  /// New loads: consistent accelerations and multipliers at t_ (as at t0) start the next step.
  void loads_changed() override { initialise(); }

  void bodies(SystemState& out) override {
    out = state_;
    for (BodyState& b : out) b.a = b.alpha = Vec3::Zero();
  }

  void snapshot(Snapshot& out) override {
    out.t = t_;
    out.bodies = state_;
    for (int i = 0; i < n_; ++i) {
      const BodyData& b = body(i);
      BodyState& s = out.bodies[static_cast<std::size_t>(i)];
      s.a = b.qdd.head<3>();
      s.alpha = 2.0 * E_matrix<double>(b.q.tail<4>()) * b.qdd.tail<4>();  // Edot pd = 0
    }
    reactions_from_multipliers(ctx_.constraints, t_, lambda_, state_, out);  // the blocks one at a time (ali3 keeps none)
    out.extra_power = 0.0;
  }

 private:
  static void check(const Ali3Options& o) {
    if (!(o.dt > 0.0)) throw std::invalid_argument("ali3: the step must be positive");
    if (!(o.alpha >= 0.0) || !std::isfinite(o.alpha))
      throw std::invalid_argument("ali3: the penalty alpha must be positive (or 0: chosen from the model)");
    if (o.newton_max < 1) throw std::invalid_argument("ali3: newton_max must be at least 1");
    if (!(o.newton_tol >= 0.0)) throw std::invalid_argument("ali3: newton_tol must not be negative");
  }

  /// The penalty must dominate the joints' own compliance in the eliminated matrices (I/alpha
  /// against Phi_q K Phi_q', K ~ (h^2/4) / m): otherwise the augmented Lagrangian iterations
  /// contract slowly and the held-tangent Newton iteration diverges (seen on paper 002's
  /// slider-crank at h = 1e-3 with alpha = 1e6).
  void warn_if_penalty_weak(const Model& model) {
    double heaviest = 0.0;
    for (const Body& b : model.bodies) heaviest = std::max(heaviest, b.mass);
    const double joint_compliance = 0.25 * options_.dt * options_.dt / heaviest;
    if (1.0 / options_.alpha > 0.1 * joint_compliance) {
      std::ostringstream msg;
      msg << "ali3: alpha = " << options_.alpha << " is weak for h = " << options_.dt << " and bodies up to " << heaviest
          << " kg (1/alpha should be well below h^2/(4 m) = " << joint_compliance << "); raise alpha to about "
          << std::max(100.0 / joint_compliance, default_alpha_)
          << " if Newton-Raphson diverges (at least the default for this step and model, " << default_alpha_ << ")";
      warnings_.push_back(msg.str());
    }
  }

  BodyData& body(int i) { return bodies_[static_cast<std::size_t>(i)]; }
  /// M v and the quadratic-velocity term of body i (euler_body.hpp).
  Vec7 mass_times(int i, const Vec4& p, const Vec7& v) const {
    const Body& mb = model_.bodies[static_cast<std::size_t>(i)];
    return ali3::mass_times(mb.mass, mb.inertia, p, v);
  }
  Vec4 quadratic_velocity(int i, const Vec4& p, const Vec4& pd) const {
    return ali3::quadratic_velocity(model_.bodies[static_cast<std::size_t>(i)].inertia, p, pd);
  }
  const BodyData& body(int i) const { return bodies_[static_cast<std::size_t>(i)]; }

  // Kinematics ------------------------------------------------------------------------------
  /// Body i's absolute state (a unit quaternion for the constraint equations) from q, qd. Every
  /// loop that changes q or qd refreshes the states of its bodies in the same pass.
  void update_state(int i) {
    const BodyData& b = body(i);
    BodyState& s = state_[static_cast<std::size_t>(i)];
    const Vec4 p = b.q.tail<4>();
    s.r = b.q.head<3>();
    s.q = quaternion<double>(p.normalized());
    s.v = b.qd.head<3>();
    const Vec3 Epd = E_times<double>(p, b.qd.tail<4>());
    s.w = 2.0 * Epd;
  }

  void update_states() { ctx_.parallel.for_each(n_, [&](int i) { update_state(i); }); }

  /// What a pass solves for, which sets its rows' right-hand sides: -Phi (Newton), -Phi_t
  /// (velocity projection), gamma (acceleration projection), or gamma with hard rows (the
  /// consistent initial accelerations).
  enum class Level { Position, Velocity, Acceleration, InitialAcceleration };

  /// Evaluates joint j's blocks at (t, state_) and sets r of its tree rows for `level`. With
  /// `tangent`, also the rows' twist Jacobians J (the tree works in twist space: Phi_q = J T, see
  /// solve_tree) and their compliance (1/alpha; 0 for hard rows); otherwise the Jacobians the
  /// elimination matrices were built with are held (modified Newton, the second projection). The
  /// blocks' Jacobians are evaluated too, except by an acceleration pass without `tangent`,
  /// which follows the velocity projection at the same positions; only acceleration passes
  /// compute gamma, and none Jdot. A Newton pass also makes each block's J' lambda at the
  /// iterate (block_loads_), which newton_residual sums in the pass's leaves: a leaf reads 112
  /// bytes a block there. The blocks themselves are not kept.
  void joint_rows(int j, double t, bool tangent, Level level) {
    const bool gamma = level == Level::Acceleration || level == Level::InitialAcceleration;
    const ConstraintParts parts{.jacobians = tangent || !gamma, .gamma = gamma, .jdot = false};
    Rows& jr = rows_[static_cast<std::size_t>(j)];
    if (tangent) jr.compliance = level == Level::InitialAcceleration ? 0.0 : 1.0 / options_.alpha;
    const bool newton = level == Level::Position;  // newton_residual reads the blocks' loads
    ctx_.joint_blocks.evaluate_rows(
        j, t, state_, parts, tangent, jr,
        [](const auto& J, int, int) -> const auto& { return J; },  // twist space: the rows as evaluated
        [level](const auto& b) {  // a ConstraintBlock or a ball joint's PointBlock: its own vector type
          using V = std::decay_t<decltype(b.phi)>;
          switch (level) {
            case Level::Position: return V(-b.phi);
            case Level::Velocity: return V(-b.phi_t);
            case Level::Acceleration:
            case Level::InitialAcceleration: break;
          }
          return V(b.gamma);
        },
        newton ? &lambda_ : nullptr, newton ? &block_loads_ : nullptr, /*arm_rows=*/true);
  }




  // Dynamics ----------------------------------------------------------------------------------


  /// The applied loads that couple bodies (springs, forces, actuators), for every body before a
  /// pass. With gravity alone there is nothing to do: applied_wrench takes each body's weight.
  void evaluate_loads(double t) {
    if (!ctx_.loads.gravity_only()) ctx_.loads.evaluate(t, state_, wrenches_);  // sizes wrenches_ the first time
  }

  /// The applied wrench on body i (after evaluate_loads): its weight alone with gravity alone.
  Vec6 applied_wrench(int i) const {
    return ctx_.loads.gravity_only() ? ctx_.loads.weight(i) : wrenches_[static_cast<std::size_t>(i)];
  }

  /// Q of body i at the iterate (Eq. 8): the applied wrench in the 7 coordinates and the
  /// quadratic-velocity term -8 Gd' J' G pd.
  Vec7 generalized_forces(int i) const {
    const BodyData& b = body(i);
    const Vec4 p = b.q.tail<4>();
    Vec7 Q = in_q(applied_wrench(i), p);
    Q.tail<4>() -= quadratic_velocity(i, p, b.qd.tail<4>());
    return Q;
  }

  /// The residual of body i's equations of motion at the Newton iterate (Eqs. 12-13 with the
  /// normalisation's penalty, Eq. 19): g = M qdd + Phi_q' lambda + Psi_q' (mu + alpha Psi) - Q,
  /// the constraint and applied wrenches enter the 7 coordinates together, and M qdd - Q's
  /// rotational part is G' (4 J' G pdd) + Gd' (8 J' G pd), G = G(p).
  Vec7 newton_residual(int i) const {
    const BodyData& b = body(i);
    const Vec4 p = b.q.tail<4>();
    const Vec6 wrench = ctx_.joint_blocks.wrench_on(i, core_->leaf(i).handles(), block_loads_) - applied_wrench(i);
    Vec7 g = mass_times(i, p, b.qdd) + in_q(wrench, p);
    g.tail<4>() += quadratic_velocity(i, p, b.qd.tail<4>());
    g.tail<4>() += (b.mu + options_.alpha * psi(p)) * p;
    return g;
  }


  /// T K x for body i's held tangent (T = diag(I, 2 E(p)) at the tangent's p: a leaf's b on the
  /// tree's twist space) and along_p = p'(K x)_p, which with it gives K x (from_twist): in closed
  /// form from its leaf's blocks (closed_form_tangent_twist) unless geometric stiffness couples K's.
  Vec6 K_times_in_twist(int i, const Vec7& x, double& along_p) const {
    const Vec4& p = body(i).p_tangent;
    if (options_.geometric_stiffness) {
      const Vec7 Kx = K_full_[static_cast<std::size_t>(i)] * x;
      along_p = p.dot(Kx.tail<4>());
      return in_twist(Kx, p);
    }
    const auto& K = core_->leaf(i).shared_diagonal();
    return closed_form_tangent_twist(K.k, K.K_w, p, options_.alpha, x, along_p);
  }

  /// Body i's solution x = b + K T' f after its leaf's disassembly, f its twist-space loads. b is
  /// not held: its leaf holds T b, and T b with p'b_p gives b (from_twist). Without geometric
  /// stiffness K T' f is the leaf's own response T K T' f mapped back the same way, so
  /// x = from_twist(T b + T K T' f, p'b_p); with it, K couples its blocks and is applied to T' f.
  Vec7 solution(int i, const Tree::Node& leaf) const {
    const BodyData& b = body(i);
    const Vec4& p = b.p_tangent;
    if (options_.geometric_stiffness)
      return from_twist(leaf.shared_b(), b.bias_p, p) + K_full_[static_cast<std::size_t>(i)] * in_q(leaf.shared_f(), p);
    return from_twist(leaf.shared_b() + leaf.shared_diagonal_response(), b.bias_p, p);
  }

  /// M_c v at the tangent's positions (the projections, which do not move q): M v (Eq. 7)
  /// unless geometric stiffness is asked for, when M_c is stored.
  Vec7 mass_c_times(int i, const Vec7& v) const {
    return options_.geometric_stiffness ? Vec7(M_check_[static_cast<std::size_t>(i)] * v)
                                        : mass_times(i, body(i).q.tail<4>(), v);
  }

  /// The step's tangent of body i: K = (h^2/4) M_cc^-1, M_cc = M_c + (h^2/4) alpha Psi_q' Psi_q
  /// (Eq. 23); sets T K T' as its leaf's K. With M_c = M (no geometric stiffness) both are
  /// in closed form: since E(p) p = 0 and E(p) G(p)' = (p'p) A, T K T' = (h^2/4) diag(I/m, A J^-1 A')
  /// — the inverse of the body's spatial inertia about its centre of mass, in which the penalty
  /// does not appear — and K, block diagonal, is applied from those blocks and p (K_times_in_twist,
  /// closed_form_tangent_twist); only p is kept. With geometric stiffness M_c is a general
  /// symmetric matrix, inverted by Cholesky.
  void tangent(int i, double t, double h, Tree::Node& leaf) {
    BodyData& b = body(i);
    const double s = 0.25 * h * h;
    const Vec4 p = b.q.tail<4>();
    const Body& model_body = model_.bodies[static_cast<std::size_t>(i)];
    b.p_tangent = p;
    if (!options_.geometric_stiffness) {
      const TwistTangent K = closed_form_tangent(model_body.mass, model_body.inertia.inverse(), state_[static_cast<std::size_t>(i)].q.toRotationMatrix(), s);
      leaf.set_shared_k(K.k, K.K_w);
      return;
    }
    Mat7& M_check = M_check_[static_cast<std::size_t>(i)];
    M_check = mass_matrix(model_body.mass, model_body.inertia, p);
    add_geometric_stiffness(i, t, h);
    Mat7 M_cc = M_check;
    M_cc.bottomRightCorner<4, 4>().noalias() += s * options_.alpha * p * p.transpose();
    Mat7& K = K_full_[static_cast<std::size_t>(i)];
    if (!cholesky_inverse<double, 7>(M_cc, K, 0.0))
      throw SimulationError(t, "ali3: the tangent with geometric stiffness of body '" + model_body.name +
                                   "' is not positive definite (large constraint loads): leave out --geometric-stiffness or shorten the step");
    K *= s;
    leaf.set_shared_k(in_twist(K, p));
  }

  /// (h^2/4) (Phi_qq' lambda + Psi_qq' mu) added to M_c (end of Sect. 4.4): the derivative of the
  /// body's constraint loads with respect to its own coordinates, by central differences of
  /// Phi_q' lambda (symmetrised; Psi_qq = [0 0; 0 I] for Psi = (p'p - 1)/2).
  void add_geometric_stiffness(int i, double t, double h) {
    const BodyData& b = body(i);
    Mat7 D = Mat7::Zero();
    ConstraintBlock scratch;
    for (int c = 0; c < 7; ++c) {
      const double eps = 1e-6;
      for (int sign : {1, -1}) {
        Vec7 q = b.q;
        q(c) += sign * eps;
        BodyState moved = state_[static_cast<std::size_t>(i)];
        moved.r = q.head<3>();
        moved.q = quaternion<double>(Vec4(q.tail<4>()).normalized());
        Vec7 load = Vec7::Zero();
        for (int j : core_->leaf(i).handles())
          for (int k : ctx_.joint_blocks.blocks_of(j)) {
            const Joint& joint = model_.joints[static_cast<std::size_t>(j)];
            const bool parent = joint.parent == i;
            ctx_.constraints.evaluate_block(k, t, parent ? moved : state_of(state_, joint.parent),
                                        parent ? state_of(state_, joint.child) : moved, scratch,
                                        ConstraintParts::jacobians_only());
            const Vec6 wrench = (parent ? scratch.J_P : scratch.J_C).transpose() *
                                lambda_.segment(ctx_.constraints.offset(k), scratch.size());
            load += in_q(wrench, q.tail<4>());
          }
        D.col(c) += sign * load / (2.0 * eps);
      }
    }
    D.bottomRightCorner<4, 4>().diagonal().array() += b.mu;
    M_check_[static_cast<std::size_t>(i)] += 0.25 * h * h * 0.5 * (D + D.transpose());
  }

  /// One pass of the tree at `level`, writing the solution (qd or qdd) of every body to its member
  /// `out` (none: a Newton pass's Delta q) and giving it to after(i, x). The joints' rows are
  /// evaluated first, in the pass's parallel region. With `full` each leaf first builds the step's
  /// tangent at (t, h) and the pass builds the elimination matrices; otherwise they are held (bias
  /// only). bias_of(i) is the x of body i's b = K x (K its tangent).
  ///
  /// The tree works in twist space: with Phi_q = J T, T = diag(I, 2 E(p)) at the tangent's p,
  /// every matrix it eliminates is J (T K T') J' and a body's load Phi_q' lambda = T' (J' lambda).
  /// So a leaf enters with K_twist = T K T' and b_twist = T b, and leaves with x = b + K T' f from
  /// its twist-space load f: the same solution as in the 7 coordinates, on 6 x 6 matrices. b is
  /// held only as T b (the leaf's) with p'b_p, and x mapped back from the twist space (solution).
  template <class Bias, class After = void (*)(int, const Vec7&)>
  void solve_tree(bool full, double t, double h, Level level, Vec7 BodyData::*out, Bias&& bias_of,
                  After&& after = [](int, const Vec7&) {}) {
    auto leaf_in = [&](int i) {
      auto& node = core_->leaf(i);
      BodyData& b = body(i);
      if (full) tangent(i, t, h, node);
      node.set_shared_b(K_times_in_twist(i, bias_of(i), b.bias_p));
    };
    auto leaf_out = [&](int i) {
      const Vec7 x = solution(i, core_->leaf(i));
      if (out != nullptr) body(i).*out = x;
      after(i, x);
    };
    auto rows = [&](int j) { joint_rows(j, t, full, level); };
    const dc::Prologue<decltype(rows)&> prologue{model_.joint_count(), rows};
    if (full) core_->solve(rows_, ctx_.parallel, leaf_in, leaf_out, prologue);
    else core_->solve_bias(rows_, ctx_.parallel, leaf_in, leaf_out, prologue);
  }

  /// lambda += scale * (the tree's multipliers), block by block.
  void add_multipliers(double scale) { ctx_.joint_blocks.add_multipliers(*core_, scale, lambda_, ctx_.parallel); }

  // The algorithm ---------------------------------------------------------------------------
  /// Consistent accelerations and multipliers at t0 (Sect. 3.5, step 1): the augmented
  /// Lagrangian equations M qdd + Phi_q' lambda + Psi_q' mu = Q, Phi_q qdd = gamma,
  /// mu = alpha (h^2/4) (Psi_q qdd - nu) on the same tree, with hard joint rows.
  void initialise() {
    for (int i = 0; i < n_; ++i) {
      BodyData& b = body(i);
      const BodyState& s = state_[static_cast<std::size_t>(i)];
      const Vec4 p = euler_parameters(s.q);
      b.q << s.r, p;
      b.qd << s.v, 0.5 * E_matrix<double>(p).transpose() * s.w;
    }
    update_states();
    evaluate_loads(t_);
    const double h = options_.dt, s = 0.25 * h * h;
    solve_tree(true, t_, h, Level::InitialAcceleration, &BodyData::qdd, [&](int i) -> Vec7 {
      const BodyData& b = body(i);
      Vec7 Q = generalized_forces(i);
      Q.tail<4>() -= s * options_.alpha * b.qd.tail<4>().squaredNorm() * b.q.tail<4>();  // Psi_q' alpha nu, nu = -pd'pd
      return Q / s;  // b = K Q / s
    });
    for (int i = 0; i < n_; ++i) {
      BodyData& b = body(i);
      b.mu = s * options_.alpha * (b.q.tail<4>().dot(b.qdd.tail<4>()) + b.qd.tail<4>().squaredNorm());
    }
    lambda_.setZero();
    add_multipliers(-s);
    if (core_->any_singular() && !warned_singular_) {
      warnings_.push_back("ali3: the initial constraint Jacobian is rank deficient; minimum-norm initial multipliers");
      warned_singular_ = true;
    }
    check_finite("the initial accelerations");
  }

  /// One trapezoidal step of h, ending at t (t_ + h, or an output time it rounds to).
  void step(double h, double t) {
    const Parallel::TimedCall timed(ctx_.parallel, n_);  // the governor's unit
    timer_.start();
    newton(t, h);
    timer_.mark(0);
    if (options_.project_velocities) project_velocities(t, h);
    timer_.mark(1);
    if (options_.project_accelerations) project_accelerations(t, h, !options_.project_velocities);
    timer_.mark(2);
    t_ = t;
    ++stats_.steps;
    if (options_.project_accelerations) note_norm_errors("the step");  // the projection's leaves measured them
    else check_finite("the step");
    if (ctx_.loads.measures_angles()) ctx_.loads.update_angle_references(state_);
  }

  /// Step 3 of Sect. 3.5: modified Newton-Raphson with the tangent held from the first iteration.
  /// Each iteration is one tree pass: a leaf computes its body's dynamics and Newton bias on the
  /// way up and applies its increment (q, mu, and the multipliers of the joints it owns) on the way down.
  void newton(double t, double h) {
    ctx_.parallel.for_each(n_, [&](int i) {  // predictor (Sect. 3.2)
      BodyData& b = body(i);
      trapezoidal_predictor(b.q, b.qd, b.qdd, h);  // from the step's start, with its rates (Eqs. 15-16)
      update_state(i);
    });
    double norm = 0.0;
    for (int k = 0; k < options_.newton_max; ++k) {
      const bool first = k == 0;
      evaluate_loads(t);
      solve_tree(
          first, t, h, Level::Position, nullptr,  // Delta q, applied in the leaf
          [&](int i) -> Vec7 { return -newton_residual(i); },  // delta_3 = -K g (Eq. 27)
          [&](int i, const Vec7& delta) {
            apply_newton_increment(i, h, delta);
            for (int j : core_->leaf(i).handles())  // Delta lambda = -(the tree's multipliers): f = -Phi_q' Delta lambda
              if (ctx_.joint_blocks.owner(j) == i) ctx_.joint_blocks.add_multiplier(j, *core_, -1.0, lambda_);
          });
      norm = increment_norm();
      ++stats_.newton_iterations;
      if (!std::isfinite(norm)) break;
      if (norm < options_.newton_tol) break;
    }
    if (!std::isfinite(norm) || norm > options_.divergence) {
      std::ostringstream msg;
      msg << "ali3: Newton-Raphson diverged in the step to t = " << t << " (||Delta q|| = " << norm << " after "
          << options_.newton_max << " iterations, largest at body '"
          << largest_body(model_, [&](int i) { return per_body_[static_cast<std::size_t>(i)]; })
          << "'; alpha = " << options_.alpha << ", h = " << h << "): " << divergence_advice();
      throw SimulationError(t, msg.str());
    }
  }

  /// What to change after a diverged step. A penalty below the default rule's for this step
  /// (ali3_penalty) is too weak: chain128 at 1e6 and 1e7 and the 1,024-link chain at 1e9 diverge
  /// within 0.6 s and run at the rule's value. Otherwise the motion outran the step: the 96- and
  /// 128-link chains diverge in their second whip at 13.6 and 15.7 s and pass it at h/4, where
  /// neither a larger alpha, h/2 (the 128-link chain) nor more iterations (5, 6, 10) did
  /// (docs/results/ali3.md; tested: Ali3.DivergenceAdviceWorks).
  std::string divergence_advice() const {
    std::ostringstream advice;
    if (options_.alpha < default_alpha_) {
      advice << "alpha is below " << default_alpha_ << ", the default for h = " << options_.dt
             << " s on this model: leave alpha unset or raise it to " << default_alpha_;
    } else {
      advice << "the motion is too fast for the step: shorten it to h/4 = " << options_.dt / 4.0 << " s";
      if (alpha_chosen_) advice << " (the default alpha rises with it)";
    }
    return advice.str();
  }

  /// Body i's q += Delta q and mu += alpha (Psi + Psi_q Delta q) (Eq. 21; lambda's increment is
  /// added per joint after the pass); qd, qdd by Eqs. 15-16 (trapezoidal_increment).
  void apply_newton_increment(int i, double h, const Vec7& delta) {
    BodyData& b = body(i);
    b.mu += options_.alpha * (psi(b.q.tail<4>()) + b.q.tail<4>().dot(delta.tail<4>()));
    trapezoidal_increment(delta, h, b.q, b.qd, b.qdd);
    update_state(i);
    per_body_[static_cast<std::size_t>(i)] = delta.squaredNorm();
  }

  /// ||Delta q|| of the last iteration, summed in body order whatever the threads.
  double increment_norm() const {
    double sum = 0.0;
    for (double d : per_body_) sum += d;
    return std::sqrt(sum);
  }


  /// Step 4: M_cc qd + (h^2/4) Phi_q' sigma = M_c qd*, sigma = alpha Phi_dot (Eqs. 40-54), on a
  /// tangent (M_c, K and the elimination matrices, with the Jacobians) built at the converged
  /// positions, which the acceleration projection reuses. Projecting with the tangent held from
  /// the Newton predictor instead leaves the velocities on the predictor's constraint tangent
  /// (Phi_q at the predicted q) and weighs them with M_cc whose normalisation penalty
  /// (h^2/4) alpha p p' points along the predicted p: both errors grow with alpha, and fed back
  /// through Eqs. 15-16 they made every chain of two or more links gain energy and diverge
  /// (docs/results/ali3.md, "The projections' tangent").
  void project_velocities(double t, double h) {
    const double s = 0.25 * h * h;
    solve_tree(
        true, t, h, Level::Velocity, &BodyData::qd,
        [&](int i) -> Vec7 {  // theta (Eq. 45)
          const BodyData& b = body(i);
          return mass_c_times(i, b.qd) / s;  // theta = K M_c qd* / s
        },
        [&](int i, const Vec7&) { update_state(i); });
    ++stats_.projections;
  }

  /// Step 5: M_cc qdd + (h^2/4) Phi_q' kappa = M_c qdd* + (h^2/4) Psi_q' alpha nu,
  /// kappa = alpha (Phi_q qdd - gamma) (Eqs. 55-69), on the velocity projection's tangent unless
  /// `build` (no velocity projection this step).
  /// Each leaf, its body's state complete, also measures it for note_norm_errors (one sweep over
  /// the bodies less than a separate check_finite).
  void project_accelerations(double t, double h, bool build) {
    const double s = 0.25 * h * h;
    solve_tree(
        build, t, h, Level::Acceleration, &BodyData::qdd,
        [&](int i) -> Vec7 {  // xi (Eq. 60)
          const BodyData& b = body(i);
          Vec7 x = mass_c_times(i, b.qdd);
          x.tail<4>() -= s * options_.alpha * b.qd.tail<4>().squaredNorm() * b.q.tail<4>();
          return x / s;  // xi = K x / s
        },
        [&](int i, const Vec7&) { measure_norm_error(i); });
    ++stats_.projections;
  }

  /// Body i's |p'p - 1| (the normalisation constraint, Eq. 4, which the penalty enforces only
  /// approximately) into per_body_, or NaN if its state is not finite.
  void measure_norm_error(int i) {
    const BodyData& b = body(i);
    per_body_[static_cast<std::size_t>(i)] = b.q.allFinite() && b.qd.allFinite() && b.qdd.allFinite()
                                                 ? std::abs(b.q.tail<4>().squaredNorm() - 1.0)
                                                 : NAN;
  }

  /// Stops the run at a non-finite state; keeps the largest |p'p - 1|.
  void check_finite(const char* what) {
    ctx_.parallel.for_each(n_, [&](int i) { measure_norm_error(i); });
    note_norm_errors(what);
  }

  /// check_finite's verdict on the measures in per_body_, in body order whatever the threads.
  void note_norm_errors(const char* what) {
    for (int i = 0; i < n_; ++i) {
      const double norm_error = per_body_[static_cast<std::size_t>(i)];
      if (std::isnan(norm_error))
        throw SimulationError(t_, std::string("ali3: non-finite state of body '") +
                                      model_.bodies[static_cast<std::size_t>(i)].name + "' after " + what);
      norm_error_max_ = std::max(norm_error_max_, norm_error);
    }
  }

  const Model& model_;
  Ali3Options options_;
  const int n_;
  TreeContext ctx_;
  StageTimer timer_;
  SystemState state_;
  std::vector<BodyData> bodies_;
  std::vector<JointBlocks::BlockLoads> block_loads_;  // per block, J' lambda at the Newton pass's iterate (joint_rows)
  std::vector<Vec6> wrenches_;  // applied wrenches; empty until loads other than gravity are evaluated
  std::vector<Mat7> M_check_;          // M_c per body of the last full pass, only with geometric stiffness
  std::vector<Mat7> K_full_;           // (h^2/4) M_cc^-1 per body, only with geometric stiffness
  std::vector<double> per_body_;       // a number per body from a parallel loop (increments, checks)
  double norm_error_max_ = 0.0;        // largest |p'p - 1| after a step
  std::unique_ptr<Tree> core_;
  std::vector<Rows> rows_;
  Eigen::VectorXd lambda_;
  double t_ = 0.0;
  SolverStats stats_;
  std::vector<std::string> warnings_;
  bool warned_singular_ = false;
  double default_alpha_ = 0.0;  // ali3_penalty for the model and options_.dt
  bool alpha_chosen_ = false;   // options_.alpha is default_alpha_ because none was given
};

}  // namespace

double ali3_penalty(const Model& model, const Topology& topology, double h) {
  double total_mass = 0.0;
  for (const Body& b : model.bodies) total_mass += b.mass;
  double alpha = 1e6;
  if (!(h > 0.0) || !(total_mass > 0.0)) return alpha;
  const double depth = std::max(1, topology.depth());
  auto rho = [&](double a) { return a * h * h / (4.0 * total_mass); };
  while ((rho(alpha) < 50.0 || rho(alpha) / depth < 0.1) && alpha < 1e300) alpha *= 10.0;
  return alpha;
}

double ali3_penalty(const Model& model, double h) { return ali3_penalty(model, Topology(model), h); }

std::unique_ptr<Formulation> make_ali3(std::shared_ptr<const Model> model, const Ali3Options& options,
                                       std::shared_ptr<const ExternalLoads> external) {
  return std::make_unique<Ali3>(std::move(model), options, std::move(external));
}

}  // namespace treedyn
