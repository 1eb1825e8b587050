// The hdca formulation: HDCA's engine under an ODE integrator; symbols of
// include/treedyn/formulations/hdca.hpp.
#include "treedyn/formulations/hdca.hpp"

#include <stdexcept>

#include "../common/acceleration_solver.hpp"
#include "../common/ode_formulation.hpp"
#include "hdca_engine.hpp"
#include "planar_kinematics.hpp"
#include "spatial_kinematics.hpp"

namespace treedyn {
namespace {

template <class Kin>
class Hdca final : public OdeFormulation {
  using S = typename Kin::Scalar;
  static constexpr bool kSingle = std::is_same_v<S, float>;

 public:
  Hdca(const Model& model, const HdcaOptions& options)
      : OdeFormulation(hdca::Engine<Kin>::make_timer()),
        topology_(model),
        tree_(model, topology_, options.threads),
        engine_(model, topology_, tree_, options.threads, options.inverse),
        reporter_(model, options.threads),
        error_control_(options.error_control) {
    if (!model.drivers.empty())
      throw std::invalid_argument("hdca: drivers (prescribed joint motion) are not supported; use reference");
    for (const auto& f : model.frictions)
      warnings_.push_back("hdca: Coulomb friction '" + f.name + "' is ignored (not supported by this formulation)");
    const JointSpace& joints = engine_.joints();
    Eigen::VectorXd q, v, y(joints.nq() + joints.nv());
    joints.coordinates(initial_state(model), q, v);
    y.head(joints.nq()) = q;
    engine_.momenta(q, v, y.tail(joints.nv()));
    v_.setZero(joints.nv());
    round_to_scalar(y);
    start(options.integrator, options.dt, options.rtol, options.atol, std::move(y));
  }

  std::string name() const override { return "hdca"; }

  void snapshot(Snapshot& out) override {
    engine_.velocities(q_of(y_), p_of(y_), v_);
    reporter_.evaluate(t_, q_of(y_), v_);
    out.t = t_;
    out.bodies = reporter_.bodies();
    out.driver_efforts.clear();
    out.extra_power = 0.0;
    reporter_.reactions(out.reactions);
  }

 private:
  const JointSpace& joints() const { return engine_.joints(); }
  auto q_of(const Eigen::Ref<const Eigen::VectorXd>& y) const { return y.head(joints().nq()); }
  auto p_of(const Eigen::Ref<const Eigen::VectorXd>& y) const { return y.tail(joints().nv()); }

  int size() const override { return joints().nq() + joints().nv(); }
  int position_size() const override { return joints().nq(); }
  std::string describe(int index) const override { return joints().describe_state(index, "momentum"); }

  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    engine_.velocities(q_of(y), p_of(y), v_, &timer_);
    engine_.kinematics().position_rate(q_of(y), v_, ydot.head(joints().nq()));
    engine_.momentum_rates(t, ydot.tail(joints().nv()), &timer_);
  }

  /// Unit quaternions; in single precision, the state rounded to float (as a float machine keeps it).
  double project(double, Eigen::Ref<Eigen::VectorXd> y) override {
    double change = engine_.kinematics().normalize(y.head(joints().nq()));
    if constexpr (kSingle) change = std::max(change, round_to_scalar(y));
    return change;
  }

  void accept_step(double t, const Eigen::Ref<const Eigen::VectorXd>& y) override {
    if (!engine_.kinematics().measures_angles()) return;
    engine_.velocities(q_of(y), p_of(y), v_);
    engine_.kinematics().move(t, engine_.twists());
    engine_.kinematics().update_angle_references();
    reporter_.update_angle_references(q_of(y), v_);
  }

  /// HdcaOptions::ErrorControl::Velocities: p_k weighed by m_k (rtol |v_k| + atol), v from the
  /// latest right-hand side.
  bool error_weights(const Eigen::Ref<const Eigen::VectorXd>& y, double rtol, double atol,
                     Eigen::Ref<Eigen::VectorXd> w) override {
    if (error_control_ != HdcaOptions::ErrorControl::Velocities) return false;
    const int nq = joints().nq();
    w.head(nq) = (rtol * y.head(nq).cwiseAbs().array() + atol).inverse().matrix();
    w.tail(joints().nv()) =
        (engine_.local_inertia().array() * (rtol * v_.cwiseAbs().array() + atol)).inverse().matrix();
    return true;
  }

  static double round_to_scalar(Eigen::Ref<Eigen::VectorXd> y) {
    double change = 0.0;
    if constexpr (kSingle)
      for (Eigen::Index i = 0; i < y.size(); ++i) {
        const double rounded = static_cast<double>(static_cast<float>(y(i)));
        change = std::max(change, std::abs(rounded - y(i)));
        y(i) = rounded;
      }
    return change;
  }

  Topology topology_;
  AssemblyTree tree_;
  hdca::Engine<Kin> engine_;
  jc::AccelerationSolver reporter_;  // accelerations and reactions at output times
  HdcaOptions::ErrorControl error_control_;
  Eigen::VectorXd v_;
};

template <class Kin>
std::unique_ptr<Formulation> make(const Model& model, const HdcaOptions& options) {
  return std::make_unique<Hdca<Kin>>(model, options);
}

}  // namespace

std::unique_ptr<Formulation> make_hdca(const Model& model, const HdcaOptions& options) {
  if (options.planar)
    return options.single_precision ? make<hdca::PlanarKinematics<float>>(model, options)
                                    : make<hdca::PlanarKinematics<double>>(model, options);
  return options.single_precision ? make<hdca::SpatialKinematics<float>>(model, options)
                                  : make<hdca::SpatialKinematics<double>>(model, options);
}

}  // namespace treedyn
