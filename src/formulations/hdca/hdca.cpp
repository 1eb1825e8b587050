// The hdca formulation: HDCA's engine under an ODE integrator; symbols of
// include/treedyn/formulations/hdca.hpp.
#include "treedyn/formulations/hdca.hpp"

#include <stdexcept>

#include "treedyn/integrators.hpp"

#include "../dca/acceleration_solver.hpp"
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
  Hdca(std::shared_ptr<const Model> model_ptr, const HdcaOptions& options, std::shared_ptr<const ExternalLoads> external)
      : OdeFormulation(std::move(model_ptr), std::move(external), hdca::Engine<Kin>::make_timer()),
        topology_(model()),
        tree_(model(), topology_, options.threading.threads),
        engine_(model(), topology_, tree_, external_loads(), options.threading, options.inverse),
        reporter_(model(), topology_, tree_, external_loads(), options.threading, 0.0, 0.0, borrowed()),
        error_control_(options.error_control) {
    if (!model().drivers.empty())
      throw std::invalid_argument("hdca: drivers (prescribed joint motion) are not supported; use reference");
    for (const auto& f : model().frictions)
      warnings_.push_back("hdca: Coulomb friction '" + f.name + "' is ignored (not supported by this formulation)");
    if constexpr (kSingle)
      if (!topology_.loop_joints().empty() && is_adaptive_integrator(options.integrator))
        warnings_.push_back(single_precision_loops_warning(options.integrator));
    v_.setZero(engine_.joints().nv());
    v_out_.setZero(engine_.joints().nv());
    Eigen::VectorXd y;
    state_of_bodies(initial_state(model()), y, 1e-6);
    start(options.integrator, options.dt, options.rtol, options.atol, std::move(y));
  }

  std::string name() const override { return "hdca"; }

  /// Said up front, before a run that may crawl: measured on models/four_bar.json over 10 s
  /// (docs/results/hdca.md, "Beyond the paper's setting"). loop8 and double_loop8, which pass no
  /// singular position, run as in double.
  static std::string single_precision_loops_warning(const std::string& integrator) {
    return "hdca: single precision with the adaptive " + integrator +
           " on closed loops: where the motion comes near a loop's singular position, float round-off "
           "in the right-hand side meets the error test and the steps can shrink without end "
           "(models/four_bar.json: 922,000 steps near t = 1.01 s at rtol 1e-6, 305,000 near 3.04 s "
           "at 1e-4; at 1e-3 it runs but ends 2 m from the reference); double precision (the default) passes "
           "there without slowing. Paper 004's float setting is planar, explicit Euler at a fixed step";
  }

  /// What the reporter takes from the engine: its joint space; in space its bodies' principal
  /// inertias and its joint motions' storage, and its tree where both are spatial trees in double
  /// (the reporter checks the rest: HandleTree::made_as).
  jc::AccelerationSolverParts borrowed() {
    jc::AccelerationSolverParts b{.joints = &engine_.joints()};
    if constexpr (hdca::Engine<Kin>::Dim == 6) {
      b.inertia = &engine_.kinematics().principal_inertias();
      b.motions = &engine_.kinematics().motions();
      if constexpr (std::is_same_v<S, double>) b.core = &engine_.core();
    }
    return b;
  }
  const ThreadGovernor* thread_governor() const override { return engine_.parallel().governor(); }

  // Outputs use their own velocities (v_out_): v_ belongs to the right-hand side, and
  // error_weights reads it, so writing it here made the trajectory depend on how often it was
  // sampled (issue 24).
  void bodies(SystemState& out) override {
    engine_.velocities(q_of(y_), p_of(y_), v_out_);
    reporter_.kinematics(q_of(y_), v_out_, out);
  }

  void snapshot(Snapshot& out) override {
    engine_.velocities(q_of(y_), p_of(y_), v_out_);
    reporter_.evaluate(t_, q_of(y_), v_out_, out.bodies);  // into the sample's states: the reporter keeps none
    out.t = t_;
    out.driver_efforts.clear();
    out.extra_power = 0.0;
    reporter_.reactions(out.bodies, out.reactions);
  }

 private:
  const JointSpace& joints() const { return engine_.joints(); }
  auto q_of(const Eigen::Ref<const Eigen::VectorXd>& y) const { return y.head(joints().nq()); }
  auto p_of(const Eigen::Ref<const Eigen::VectorXd>& y) const { return y.tail(joints().nv()); }

  /// y = [q; p]: the joint coordinates of the states and the momenta of their joint velocities.
  void state_of_bodies(const SystemState& bodies, Eigen::VectorXd& y, double tolerance) override {
    joints().coordinates(bodies, q_, v_restart_, tolerance);
    y.resize(joints().nq() + joints().nv());
    y.head(joints().nq()) = q_;
    engine_.momenta(q_, v_restart_, y.tail(joints().nv()));
    round_to_scalar(y);
  }
  void restart_loads(const SystemState& bodies) override {
    engine_.kinematics().restart_angle_references(bodies);
    reporter_.restart_angle_references(bodies);
  }

  int size() const override { return joints().nq() + joints().nv(); }
  int position_size() const override { return joints().nq(); }
  std::string describe(int index) const override { return joints().describe_state(index, "momentum"); }

  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    const Parallel::TimedCall timed(engine_.parallel(), model().body_count());  // the governor's unit
    engine_.velocities(q_of(y), p_of(y), v_, &timer_);
    engine_.kinematics().position_rate(q_of(y), v_, ydot.head(joints().nq()), engine_.parallel());
    engine_.momentum_rates(t, ydot.tail(joints().nv()), &timer_);
  }

  /// Unit quaternions; in single precision, the state rounded to float (as a float machine keeps it).
  double project(double t, Eigen::Ref<Eigen::VectorXd> y) override { return project_step(t, y, 0.0); }
  /// The same, leaving quaternions within `tolerance` of unit norm as they are.
  double project_step(double, Eigen::Ref<Eigen::VectorXd> y, double tolerance) override {
    double change = engine_.kinematics().normalize(y.head(joints().nq()), tolerance);
    if constexpr (kSingle) change = std::max(change, round_to_scalar(y));
    return change;
  }

  void accept_step(double t, const Eigen::Ref<const Eigen::VectorXd>& y) override {
    if (!engine_.kinematics().measures_angles()) return;
    engine_.velocities(q_of(y), p_of(y), v_);
    engine_.kinematics().move(t, engine_.twists());
    engine_.kinematics().update_angle_references();
    reporter_.update_angle_references(q_of(y), v_, angle_bodies_);
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
  Eigen::VectorXd v_;      // joint velocities of the latest right-hand side (error_weights reads them)
  Eigen::VectorXd v_out_;  // joint velocities of the state being reported
  SystemState angle_bodies_;  // where the reporter measures its angle references (empty unless the loads measure angles)
  Eigen::VectorXd q_, v_restart_;  // scratch of state_of_bodies
};

template <class Kin>
std::unique_ptr<Formulation> make(std::shared_ptr<const Model> model, const HdcaOptions& options,
                                  std::shared_ptr<const ExternalLoads> external) {
  return std::make_unique<Hdca<Kin>>(std::move(model), options, std::move(external));
}

}  // namespace

std::unique_ptr<Formulation> make_hdca(std::shared_ptr<const Model> model, const HdcaOptions& options,
                                       std::shared_ptr<const ExternalLoads> external) {
  if (options.planar)
    return options.single_precision ? make<hdca::PlanarKinematics<float>>(std::move(model), options, std::move(external))
                                    : make<hdca::PlanarKinematics<double>>(std::move(model), options, std::move(external));
  return options.single_precision ? make<hdca::SpatialKinematics<float>>(std::move(model), options, std::move(external))
                                  : make<hdca::SpatialKinematics<double>>(std::move(model), options, std::move(external));
}

}  // namespace treedyn
