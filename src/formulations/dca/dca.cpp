// Featherstone's DCA in joint coordinates; the symbols are those of include/treedyn/formulations/dca.hpp.
#include "treedyn/formulations/dca.hpp"

#include <stdexcept>
#include <utility>

#include "treedyn/metrics.hpp"

#include "acceleration_solver.hpp"
#include "../common/ode_formulation.hpp"

namespace treedyn {
namespace {

class Dca final : public OdeFormulation {
 public:
  Dca(std::shared_ptr<const Model> model_ptr, const DcaOptions& options, std::shared_ptr<const ExternalLoads> external)
      : OdeFormulation(std::move(model_ptr), std::move(external), jc::AccelerationSolver::make_timer()),
        baumgarte_(baumgarte_rates(model(), options)),
        topology_(model()),
        tree_(model(), topology_, options.threading.threads),
        solver_(model(), topology_, tree_, external_loads(), options.threading, baumgarte_.first, baumgarte_.second) {
    if (!model().drivers.empty())
      throw std::invalid_argument("dca: drivers (prescribed joint motion) are not supported; use reference");
    for (const auto& f : model().frictions)
      warnings_.push_back("dca: Coulomb friction '" + f.name + "' is ignored (not supported by this formulation)");
    Eigen::VectorXd y;
    state_of_bodies(initial_state(model()), y, 1e-6);
    start(options.integrator, options.dt, options.rtol, options.atol, std::move(y));
  }

  std::string name() const override { return "dca"; }
  std::map<std::string, double> diagnostics() const override {
    return {{"baumgarte_alpha", baumgarte_.first}, {"baumgarte_beta", baumgarte_.second}};
  }
  const ThreadGovernor* thread_governor() const override { return solver_.parallel().governor(); }

  void bodies(SystemState& out) override {
    solver_.kinematics(y_.head(joints().nq()), y_.tail(joints().nv()), out);
  }

  void snapshot(Snapshot& out) override {
    evaluate(t_, y_, out.bodies);  // into the sample's states
    out.t = t_;
    out.driver_efforts.clear();
    out.extra_power = 0.0;
    solver_.reactions(out.bodies, out.reactions);
  }

 private:
  const JointSpace& joints() const { return solver_.joints(); }

  void state_of_bodies(const SystemState& bodies, Eigen::VectorXd& y, double tolerance) override {
    joints().coordinates(bodies, q_, v_, tolerance);
    y.resize(q_.size() + v_.size());
    y << q_, v_;
  }
  void restart_loads(const SystemState& bodies) override { solver_.restart_angle_references(bodies); }
  int size() const override { return joints().nq() + joints().nv(); }
  int position_size() const override { return joints().nq(); }
  std::string describe(int index) const override { return joints().describe_state(index, "velocity"); }

  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    const Parallel::TimedCall timed(solver_.parallel(), model().body_count());  // the governor's unit
    evaluate(t, y, bodies_);
    joints().position_rate(y.head(joints().nq()), y.tail(joints().nv()), ydot.head(joints().nq()));
    ydot.tail(joints().nv()) = solver_.vdot();
  }

  bool position_rate(double, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> qdot) override {
    joints().position_rate(y.head(joints().nq()), y.tail(joints().nv()), qdot);
    return true;
  }

  double project(double t, Eigen::Ref<Eigen::VectorXd> y) override { return project_step(t, y, 0.0); }
  double project_step(double, Eigen::Ref<Eigen::VectorXd> y, double tolerance) override {
    return joints().normalize(y.head(joints().nq()), tolerance);
  }

  void accept_step(double, const Eigen::Ref<const Eigen::VectorXd>& y) override {
    solver_.update_angle_references(y.head(joints().nq()), y.tail(joints().nv()), bodies_);  // the next right-hand side rewrites them
  }

  void evaluate(double t, const Eigen::Ref<const Eigen::VectorXd>& y, SystemState& bodies) {
    solver_.evaluate(t, y.head(joints().nq()), y.tail(joints().nv()), bodies, &timer_);
  }

  /// Baumgarte's alpha and beta: the options', the model's default rate (computed once) where unset.
  static std::pair<double, double> baumgarte_rates(const Model& model, const DcaOptions& o) {
    const double chosen = o.baumgarte_alpha && o.baumgarte_beta ? 0.0 : default_baumgarte_rate(model);
    return {o.baumgarte_alpha.value_or(chosen), o.baumgarte_beta.value_or(chosen)};
  }

  std::pair<double, double> baumgarte_;  // alpha, beta as used

  Topology topology_;
  AssemblyTree tree_;
  jc::AccelerationSolver solver_;
  SystemState bodies_;     // the bodies' states of the last right-hand side (or angle references' update)
  Eigen::VectorXd q_, v_;  // scratch of state_of_bodies
};

}  // namespace

double default_baumgarte_rate(const Model& model) {
  double T0 = 0.0;  // the initial kinetic energy, body by body (no state of the whole model made for it)
  for (int i = 0; i < model.body_count(); ++i)
    T0 += kinetic_energy(model.bodies[static_cast<std::size_t>(i)], initial_state(model, i));
  const ModelScales scales = model_scales(model, T0, 0.0);
  return scales.length > 0.0 ? kBaumgartePerTime * scales.speed / scales.length : 0.0;
}

std::unique_ptr<Formulation> make_dca(std::shared_ptr<const Model> model, const DcaOptions& options,
                                      std::shared_ptr<const ExternalLoads> external) {
  return std::make_unique<Dca>(std::move(model), options, std::move(external));
}

}  // namespace treedyn
