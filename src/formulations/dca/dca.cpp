// Featherstone's DCA in joint coordinates; the symbols are those of include/treedyn/formulations/dca.hpp.
#include "treedyn/formulations/dca.hpp"

#include <stdexcept>

#include "../common/joint_tree.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/integrators.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/stage_timer.hpp"

namespace treedyn {
namespace {

class Dca final : public Formulation, private OdeSystem {
 public:
  Dca(const Model& model, const DcaOptions& options)
      : model_(model),
        topology_(model),
        tree_(model, topology_),
        joints_(model, topology_),
        layout_(jc::make_layout(model, joints_)),
        core_(tree_, layout_.sides),
        loads_(model),
        parallel_(options.threads),
        options_(options),
        bodies_(initial_state(model)),
        rows_(model.joints.size()),
        wrenches_(model.bodies.size()),
        F_e_(model.bodies.size()),
        J_inverse_(model.bodies.size()),
        inertia_inverse_(model.bodies.size()),
        handle_offset_(model.bodies.size() + 1, 0) {
    if (!model.drivers.empty())
      throw std::invalid_argument("dca: drivers (prescribed joint motion) are not supported; use reference");
    for (const auto& f : model.frictions)
      warnings_.push_back("dca: Coulomb friction '" + f.name + "' is ignored (not supported by this formulation)");
    for (int b = 0; b < model.body_count(); ++b) {
      handle_offset_[static_cast<std::size_t>(b) + 1] = handle_offset_[static_cast<std::size_t>(b)] + core_.leaf(b).size();
      inertia_inverse_[static_cast<std::size_t>(b)] = model.bodies[static_cast<std::size_t>(b)].inertia.inverse();
    }
    handle_l_.resize(static_cast<std::size_t>(handle_offset_.back()));
    y_.resize(size());
    Eigen::VectorXd q, v;
    joints_.coordinates(bodies_, q, v);
    y_ << q, v;
    vdot_.setZero(joints_.nv());
    IntegratorOptions io;
    io.step = options.dt;
    io.rtol = options.rtol;
    io.atol = options.atol;
    integrator_ = make_integrator(options.integrator, *this, io);
    integrator_->reset(0.0, y_);
  }

  std::string name() const override { return "dca"; }
  std::string integrator() const override { return integrator_->name(); }
  double time() const override { return t_; }
  void advance_to(double t) override {
    const StageTimer<6>::Scope counting(timer_);
    integrator_->advance(t, y_);
    t_ = t;
  }
  SolverStats stats() const override {
    const IntegratorStats& s = integrator_->stats();
    return {s.steps, s.rhs_evaluations, 0, s.projections};
  }
  std::vector<std::string> warnings() const override { return warnings_; }
  std::map<std::string, double> stage_seconds() const override { return timer_.seconds(); }
  OdeSystem* ode() override { return this; }
  Eigen::VectorXd ode_state() const override { return y_; }

  void snapshot(Snapshot& out) override {
    evaluate(t_, y_);
    out.t = t_;
    out.bodies = bodies_;
    out.driver_efforts.clear();
    out.extra_power = 0.0;
    out.reactions.assign(model_.joints.size(), JointReaction{});
    for (std::size_t j = 0; j < model_.joints.size(); ++j) {
      const Joint& joint = model_.joints[j];
      auto& leaf = core_.leaf(joint.child);
      const int h = core_.handle_index(leaf, static_cast<int>(j));
      if (h < 0) continue;  // a free joint carries no load
      const Vec6& f = leaf.f[static_cast<std::size_t>(h)];
      const BodyState& C = bodies_[static_cast<std::size_t>(joint.child)];
      const Vec3 origin = C.r + C.q * joint.child_frame.origin;  // report about the child's joint frame
      out.reactions[j] = {f.head<3>(), f.tail<3>() + (points_[j] - origin).cross(f.head<3>())};
    }
  }

 private:
  // OdeSystem ----------------------------------------------------------------------------------
  int size() const override { return joints_.nq() + joints_.nv(); }
  int position_size() const override { return joints_.nq(); }

  void rhs(double t, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> ydot) override {
    evaluate(t, y);
    joints_.position_rate(y.head(joints_.nq()), y.tail(joints_.nv()), ydot.head(joints_.nq()));
    ydot.tail(joints_.nv()) = vdot_;
  }

  bool position_rate(double, const Eigen::Ref<const Eigen::VectorXd>& y, Eigen::Ref<Eigen::VectorXd> qdot) override {
    joints_.position_rate(y.head(joints_.nq()), y.tail(joints_.nv()), qdot);
    return true;
  }

  double project(double, Eigen::Ref<Eigen::VectorXd> y) override { return joints_.normalize(y.head(joints_.nq())); }

  void accept_step(double, const Eigen::Ref<const Eigen::VectorXd>& y) override {
    if (!loads_.measures_angles()) return;
    joints_.forward_kinematics(y.head(joints_.nq()), y.tail(joints_.nv()), bodies_, motion_);
    loads_.update_angle_references(bodies_);
  }

  // One evaluation of the dynamics ----------------------------------------------------------------
  void evaluate(double t, const Eigen::Ref<const Eigen::VectorXd>& y) {
    const auto q = y.head(joints_.nq());
    const auto v = y.tail(joints_.nv());
    timer_.start();
    joints_.forward_kinematics(q, v, bodies_, motion_);  // serial in tree order
    loads_.evaluate(t, bodies_, wrenches_);
    jc::handle_points(model_, layout_, motion_, bodies_, points_);
    timer_.mark(kKinematics);
    parallel_.for_each(model_.joint_count(), [&](int j) { joint_rows(j); });
    timer_.mark(kRows);
    core_.assemble(rows_, parallel_, [&](int b) { leaf_coefficients(b); });
    timer_.mark(kAssemble);
    core_.connect_base(rows_);
    timer_.mark(kBase);
    core_.disassemble(rows_, parallel_, [&](int b) { body_acceleration(b); });
    timer_.mark(kDisassemble);
    parallel_.for_each(static_cast<int>(joints_.tree().size()), [&](int k) { joint_acceleration(k); });
    timer_.mark(kJointAccelerations);
    if (!vdot_.allFinite()) throw SimulationError(t, "dca: non-finite joint accelerations");
  }

  // Stages: kinematics (serial), joint rows, assembly with the leaves' coefficients, base
  // connection, disassembly with the bodies' accelerations, joint accelerations.
  enum Stage : std::size_t { kKinematics, kRows, kAssemble, kBase, kDisassemble, kJointAccelerations };
  StageTimer<6> timer_{{"kinematics", "rows", "assemble", "base", "disassemble", "joint_accelerations"}};

  /// D' (A_c - A_p) = D' kappa for a tree joint; J A = gamma (- Baumgarte) for a loop joint.
  void joint_rows(int j) {
    const int k = layout_.tree_index[static_cast<std::size_t>(j)];
    jc::Rows6& rows = rows_[static_cast<std::size_t>(j)];
    if (k >= 0) {
      const JointMotion& m = motion_[static_cast<std::size_t>(k)];
      jc::tree_rows(m, m.kappa, rows);
      return;
    }
    const Joint& joint = model_.joints[static_cast<std::size_t>(j)];
    const BodyState& P = state_of(bodies_, joint.parent);
    const BodyState& C = state_of(bodies_, joint.child);
    ConstraintBlock block;
    joint_constraint(joint, P, C, block);
    ConstraintVector rhs = block.gamma;
    if (options_.baumgarte_alpha != 0.0 || options_.baumgarte_beta != 0.0) {
      Vec6 V_P, V_C;
      V_P << P.v, P.w;
      V_C << C.v, C.w;
      const ConstraintVector phi_dot = block.J_P * V_P + block.J_C * V_C + block.phi_t;
      rhs -= 2.0 * options_.baumgarte_alpha * phi_dot + options_.baumgarte_beta * options_.baumgarte_beta * block.phi;
    }
    jc::loop_rows(block, points_[static_cast<std::size_t>(j)], P, C, rhs, /*acceleration=*/true, rows);
  }

  /// K and b of one body at its handles.
  void leaf_coefficients(int b) {
    const Body& body = model_.bodies[static_cast<std::size_t>(b)];
    const BodyState& s = bodies_[static_cast<std::size_t>(b)];
    const Mat3 A = s.q.toRotationMatrix();
    const Mat3 J = A * body.inertia * A.transpose();
    Mat3& Ji = J_inverse_[static_cast<std::size_t>(b)];
    Ji = A * inertia_inverse_[static_cast<std::size_t>(b)] * A.transpose();
    Vec6& F = F_e_[static_cast<std::size_t>(b)];
    F = wrenches_[static_cast<std::size_t>(b)];
    F.tail<3>() -= s.w.cross(J * s.w);
    auto& leaf = core_.leaf(b);
    const std::span<Vec3> l = handles_of(b);
    for (std::size_t h = 0; h < l.size(); ++h) l[h] = points_[static_cast<std::size_t>(leaf.handles[h])] - s.r;
    jc::body_mobility<double>(1.0 / body.mass, Ji, l, leaf);
    const Vec3 a0 = F.head<3>() / body.mass, alpha0 = Ji * F.tail<3>();
    for (std::size_t h = 0; h < l.size(); ++h)  // b_h = S(l_h)' M^-1 F_e + [w x (w x l_h); 0]
      leaf.b[h] << a0 + alpha0.cross(l[h]) + s.w.cross(s.w.cross(l[h])), alpha0;
  }

  /// A_com = M^-1 (F_e + sum_h S(l_h) f_h).
  void body_acceleration(int b) {
    const auto& leaf = core_.leaf(b);
    const std::span<Vec3> l = handles_of(b);
    Vec6 F = F_e_[static_cast<std::size_t>(b)];
    for (std::size_t h = 0; h < l.size(); ++h) {
      F.head<3>() += leaf.f[h].head<3>();
      F.tail<3>() += leaf.f[h].tail<3>() + l[h].cross(leaf.f[h].head<3>());
    }
    BodyState& s = bodies_[static_cast<std::size_t>(b)];
    s.a = F.head<3>() / model_.bodies[static_cast<std::size_t>(b)].mass;
    s.alpha = J_inverse_[static_cast<std::size_t>(b)] * F.tail<3>();
  }

  /// vdot = H' (A_c(o) - A_p(o) - kappa).
  void joint_acceleration(int k) {
    const TreeJoint& t = joints_.tree()[static_cast<std::size_t>(k)];
    const JointMotion& m = motion_[static_cast<std::size_t>(k)];
    auto at_point = [&](int body) {
      Vec6 A = Vec6::Zero();
      if (body == kGround) return A;
      const BodyState& s = bodies_[static_cast<std::size_t>(body)];
      const Vec3 l = m.point - s.r;
      A << s.a + s.alpha.cross(l) + s.w.cross(s.w.cross(l)), s.alpha;
      return A;
    };
    vdot_.segment(t.v_offset, t.nv).noalias() = m.H.transpose() * (at_point(t.child) - at_point(t.parent) - m.kappa);
  }

  const Model& model_;
  Topology topology_;
  AssemblyTree tree_;
  JointSpace joints_;
  jc::JointLayout layout_;
  dc::HandleTree<double, 6> core_;
  AppliedLoads loads_;
  Parallel parallel_;
  DcaOptions options_;
  std::unique_ptr<Integrator> integrator_;
  std::vector<std::string> warnings_;
  double t_ = 0.0;
  Eigen::VectorXd y_, vdot_;
  SystemState bodies_;
  std::vector<JointMotion> motion_;
  std::vector<Vec3> points_;
  std::vector<jc::Rows6> rows_;
  std::vector<Vec6> wrenches_, F_e_;
  std::vector<Mat3> J_inverse_, inertia_inverse_;  // global (per evaluation), body frame (constant)
  std::vector<Vec3> handle_l_;      // l_h of every body's handles, body after body
  std::vector<int> handle_offset_;  // where each body's l_h start
  std::span<Vec3> handles_of(int b) {
    return {handle_l_.data() + handle_offset_[static_cast<std::size_t>(b)],
            static_cast<std::size_t>(handle_offset_[static_cast<std::size_t>(b) + 1] - handle_offset_[static_cast<std::size_t>(b)])};
  }
};

}  // namespace

std::unique_ptr<Formulation> make_dca(const Model& model, const DcaOptions& options) {
  return std::make_unique<Dca>(model, options);
}

}  // namespace treedyn
