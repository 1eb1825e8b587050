#include "treedyn/formulations/reference.hpp"

#include "../common/ode_formulation.hpp"
#include "../common/reactions.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/linalg.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/projection.hpp"

namespace treedyn {
namespace {

constexpr int kPos = 7;  // per body: r (3) + quaternion (4)
constexpr int kVel = 6;  // per body: v (3) + w (3)

class Reference final : public OdeFormulation {
 public:
  Reference(std::shared_ptr<const Model> model_ptr, const ReferenceOptions& options,
            std::shared_ptr<const ExternalLoads> external)
      : OdeFormulation(std::move(model_ptr), std::move(external), StageTimer{}),
        model_(model()),
        n_(model_.body_count()),
        loads_(model_, external_loads()),
        matrix_(model_),
        projector_(model_),
        state_(initial_state(model_)) {
    Eigen::VectorXd y;
    state_of_bodies(state_, y, 0.0);
    start(options.integrator, options.dt, options.rtol, options.atol, std::move(y));
    for (const auto& f : model_.frictions)
      warnings_.push_back("reference: Coulomb friction '" + f.name + "' is ignored (not supported by this formulation)");
  }

  std::string name() const override { return "reference"; }

  void bodies(SystemState& out) override {
    unpack(y_, out);
    for (BodyState& b : out) b.a = b.alpha = Vec3::Zero();
  }

  void snapshot(Snapshot& out) override {
    unpack(y_, state_);
    evaluate_dynamics(t_, state_);
    out.t = t_;
    out.bodies = state_;
    for (int i = 0; i < n_; ++i) {
      out.bodies[static_cast<std::size_t>(i)].a = Vdot_.segment<3>(6 * i);
      out.bodies[static_cast<std::size_t>(i)].alpha = Vdot_.segment<3>(6 * i + 3);
    }
    reactions_from_multipliers(matrix_.constraints(), matrix_.blocks(), lambda_, state_, out);
    out.extra_power = 0.0;
  }

 private:
  void state_of_bodies(const SystemState& bodies, Eigen::VectorXd& y, double) override {
    y.resize(size());
    pack(bodies, y);
  }
  void restart_loads(const SystemState& bodies) override { loads_.update_angle_references(bodies); }

  // OdeSystem -------------------------------------------------------------------------------
  int size() const override { return (kPos + kVel) * n_; }
  int position_size() const override { return kPos * n_; }
  std::string describe(int index) const override {  // the layout of pack()
    const bool rate = index >= kPos * n_;
    const int per_body = rate ? kVel : kPos, at = rate ? index - kPos * n_ : index;
    const int body = at / per_body, component = at % per_body;
    const char* what = rate ? (component < 3 ? "velocity" : "angular velocity") : (component < 3 ? "position" : "orientation");
    return std::string(what) + " of body '" + model_.bodies[static_cast<std::size_t>(body)].name + "'";
  }

  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    unpack(y, work_);
    evaluate_dynamics(t, work_);
    position_rate_of(work_, ydot.head(kPos * n_));
    ydot.tail(kVel * n_) = Vdot_;
  }

  bool position_rate(double, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> qdot) override {
    unpack(y, work_);
    position_rate_of(work_, qdot);
    return true;
  }

  double project(double t, Eigen::Ref<Eigen::VectorXd> y) override {
    unpack(y, work_);
    projector_.project(t, work_, 1e-13, 10);
    projected_.resize(size());
    pack(work_, projected_);
    const double change = (projected_ - y).cwiseAbs().maxCoeff();
    y = projected_;
    return change;
  }

  void accept_step(double, const Eigen::Ref<const Eigen::VectorXd>& y) override {
    unpack(y, work_);
    loads_.update_angle_references(work_);
  }

  // Dynamics --------------------------------------------------------------------------------
  /// Vdot_ and lambda_ at (t, s).
  void evaluate_dynamics(double t, const SystemState& s) {
    loads_.evaluate(t, s, wrenches_);
    matrix_.factorise(t, s);
    F_.resize(6 * n_);
    for (int i = 0; i < n_; ++i) {
      const BodyState& st = s[static_cast<std::size_t>(i)];
      const Mat3 A = st.q.toRotationMatrix();
      const Mat3 J = A * model_.bodies[static_cast<std::size_t>(i)].inertia * A.transpose();
      F_.segment<3>(6 * i) = wrenches_[static_cast<std::size_t>(i)].head<3>();
      F_.segment<3>(6 * i + 3) = wrenches_[static_cast<std::size_t>(i)].tail<3>() - st.w.cross(J * st.w);
    }
    matrix_.apply_Minv(F_, Vdot_);
    if (matrix_.constraints().rows() > 0) {
      lambda_ = matrix_.solve(matrix_.J() * Vdot_ - matrix_.gamma());
      Vdot_.noalias() -= matrix_.MinvJt() * lambda_;
    }
    if (!Vdot_.allFinite())
      throw SimulationError(t, "reference: non-finite accelerations, first of body '" +
                                   model_.bodies[static_cast<std::size_t>(first_non_finite(Vdot_) / 6)].name + "'");
  }

  // State layout ----------------------------------------------------------------------------
  void pack(const SystemState& s, Eigen::Ref<Eigen::VectorXd> y) const {
    for (int i = 0; i < n_; ++i) {
      const BodyState& b = s[static_cast<std::size_t>(i)];
      y.segment<3>(kPos * i) = b.r;
      y.segment<4>(kPos * i + 3) << b.q.w(), b.q.x(), b.q.y(), b.q.z();
      y.segment<3>(kPos * n_ + kVel * i) = b.v;
      y.segment<3>(kPos * n_ + kVel * i + 3) = b.w;
    }
  }

  void unpack(const Eigen::Ref<const Eigen::VectorXd>& y, SystemState& s) const {
    s.resize(static_cast<std::size_t>(n_));
    for (int i = 0; i < n_; ++i) {
      BodyState& b = s[static_cast<std::size_t>(i)];
      b.r = y.segment<3>(kPos * i);
      b.q = Quat(y(kPos * i + 3), y(kPos * i + 4), y(kPos * i + 5), y(kPos * i + 6)).normalized();
      b.v = y.segment<3>(kPos * n_ + kVel * i);
      b.w = y.segment<3>(kPos * n_ + kVel * i + 3);
    }
  }

  /// rdot = v, pdot = 1/2 [0; w] (x) p  (w global).
  void position_rate_of(const SystemState& s, Eigen::Ref<Eigen::VectorXd> qdot) const {
    for (int i = 0; i < n_; ++i) {
      const BodyState& b = s[static_cast<std::size_t>(i)];
      qdot.segment<3>(kPos * i) = b.v;
      const Quat pdot = Quat(0.0, 0.5 * b.w.x(), 0.5 * b.w.y(), 0.5 * b.w.z()) * b.q;
      qdot.segment<4>(kPos * i + 3) << pdot.w(), pdot.x(), pdot.y(), pdot.z();
    }
  }

  const Model& model_;
  const int n_;
  AppliedLoads loads_;
  ConstraintMatrix matrix_;
  ConstraintProjector projector_;
  Eigen::VectorXd projected_;
  SystemState state_, work_;
  std::vector<Vec6> wrenches_;
  Eigen::VectorXd F_, Vdot_, lambda_;
};

}  // namespace

std::unique_ptr<Formulation> make_reference(std::shared_ptr<const Model> model, const ReferenceOptions& options,
                                            std::shared_ptr<const ExternalLoads> external) {
  return std::make_unique<Reference>(std::move(model), options, std::move(external));
}

}  // namespace treedyn
