// Featherstone's DCA in joint coordinates; the symbols are those of include/treedyn/formulations/dca.hpp.
#include "treedyn/formulations/dca.hpp"

#include <stdexcept>

#include "../common/acceleration_solver.hpp"
#include "../common/ode_formulation.hpp"

namespace treedyn {
namespace {

class Dca final : public OdeFormulation {
 public:
  Dca(const Model& model, const DcaOptions& options)
      : OdeFormulation(jc::AccelerationSolver::make_timer()),
        model_(model),
        solver_(model, options.threads, options.baumgarte_alpha, options.baumgarte_beta) {
    if (!model.drivers.empty())
      throw std::invalid_argument("dca: drivers (prescribed joint motion) are not supported; use reference");
    for (const auto& f : model.frictions)
      warnings_.push_back("dca: Coulomb friction '" + f.name + "' is ignored (not supported by this formulation)");
    const JointSpace& joints = solver_.joints();
    Eigen::VectorXd q, v, y(joints.nq() + joints.nv());
    joints.coordinates(initial_state(model), q, v);
    y << q, v;
    start(options.integrator, options.dt, options.rtol, options.atol, std::move(y));
  }

  std::string name() const override { return "dca"; }

  void snapshot(Snapshot& out) override {
    evaluate(t_, y_);
    out.t = t_;
    out.bodies = solver_.bodies();
    out.driver_efforts.clear();
    out.extra_power = 0.0;
    solver_.reactions(out.reactions);
  }

 private:
  const JointSpace& joints() const { return solver_.joints(); }
  int size() const override { return joints().nq() + joints().nv(); }
  int position_size() const override { return joints().nq(); }
  std::string describe(int index) const override { return joints().describe_state(index, "velocity"); }

  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    evaluate(t, y);
    joints().position_rate(y.head(joints().nq()), y.tail(joints().nv()), ydot.head(joints().nq()));
    ydot.tail(joints().nv()) = solver_.vdot();
  }

  bool position_rate(double, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> qdot) override {
    joints().position_rate(y.head(joints().nq()), y.tail(joints().nv()), qdot);
    return true;
  }

  double project(double, Eigen::Ref<Eigen::VectorXd> y) override { return joints().normalize(y.head(joints().nq())); }

  void accept_step(double, const Eigen::Ref<const Eigen::VectorXd>& y) override {
    solver_.update_angle_references(y.head(joints().nq()), y.tail(joints().nv()));
  }

  void evaluate(double t, const Eigen::Ref<const Eigen::VectorXd>& y) {
    solver_.evaluate(t, y.head(joints().nq()), y.tail(joints().nv()), &timer_);
  }

  const Model& model_;
  jc::AccelerationSolver solver_;
};

}  // namespace

std::unique_ptr<Formulation> make_dca(const Model& model, const DcaOptions& options) {
  return std::make_unique<Dca>(model, options);
}

}  // namespace treedyn
