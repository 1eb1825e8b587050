// The acceleration-level divide-and-conquer solve; symbols as in acceleration_solver.hpp.
#include "acceleration_solver.hpp"

#include "treedyn/errors.hpp"
#include "treedyn/linalg.hpp"

namespace treedyn::jc {

AccelerationSolver::AccelerationSolver(const Model& model, const Topology& topology, const AssemblyTree& tree,
                                       const ExternalLoads* external, const Threading& threading, double baumgarte_alpha,
                                       double baumgarte_beta, const AccelerationSolverParts& borrowed)
    : model_(model),
      topology_(topology),
      tree_(tree),
      own_joints_(borrowed.joints ? std::nullopt : std::optional<JointSpace>(std::in_place, model, topology_)),
      joints_(borrowed.joints ? *borrowed.joints : *own_joints_),
      layout_(make_layout(model, joints_)),
      own_core_(borrowed.core &&
                        borrowed.core->made_as(tree_, layout_.sides, InverseMethod::Cholesky, dc::LeafBlocks::InRows, dc::BiasPasses::Never)
                    ? std::nullopt
                    : std::optional<dc::HandleTree<double, 6>>(std::in_place, tree_, layout_.sides, InverseMethod::Cholesky,
                                                               dc::LeafBlocks::InRows, dc::BiasPasses::Never)),
      core_(own_core_ ? *own_core_ : *borrowed.core),
      loads_(model, external),
      parallel_(threading),
      baumgarte_alpha_(baumgarte_alpha),
      baumgarte_beta_(baumgarte_beta),
      motion_(borrowed.motions ? *borrowed.motions : own_motion_),
      rows_(model.joints.size()),
      wrenches_(model.bodies.size()),
      J_inverse_(model.bodies.size()),
      own_inertia_(borrowed.inertia ? std::vector<PrincipalInertia>() : principal_inertias(model)),
      inertia_(borrowed.inertia ? *borrowed.inertia : own_inertia_),
      handle_offset_(model.bodies.size() + 1, 0) {
  for (int b = 0; b < model.body_count(); ++b)
    handle_offset_[static_cast<std::size_t>(b) + 1] = handle_offset_[static_cast<std::size_t>(b)] + core_.leaf(b).size();
  handle_l_.resize(static_cast<std::size_t>(handle_offset_.back()));
  vdot_.setZero(joints_.nv());
}

std::span<Vec3> AccelerationSolver::handles_of(int b) {
  const auto from = static_cast<std::size_t>(handle_offset_[static_cast<std::size_t>(b)]);
  const auto to = static_cast<std::size_t>(handle_offset_[static_cast<std::size_t>(b) + 1]);
  return {handle_l_.data() + from, to - from};
}

void AccelerationSolver::evaluate(double t, const Eigen::Ref<const Eigen::VectorXd>& q,
                                  const Eigen::Ref<const Eigen::VectorXd>& v, SystemState& bodies, StageTimer* timer) {
  start(timer);
  bodies.resize(model_.bodies.size());  // allocates only the first time
  joints_.forward_kinematics(q, v, bodies, motion_);  // serial in tree order
  loads_.evaluate(t, bodies, wrenches_);
  handle_points(model_, layout_, motion_, bodies, points_);
  mark(timer, 0);
  parallel_.for_each(model_.joint_count(), [&](int j) { joint_rows(j, bodies); });
  mark(timer, 1);
  core_.assemble(rows_, parallel_, [&](int b) { leaf_coefficients(b, bodies); });
  mark(timer, 2);
  core_.connect_base(rows_);
  mark(timer, 3);
  core_.disassemble(rows_, parallel_, [&](int b) { body_acceleration(b, bodies); });
  mark(timer, 4);
  parallel_.for_each(static_cast<int>(joints_.tree().size()), [&](int k) { joint_acceleration(k, bodies); });
  mark(timer, 5);
  if (!vdot_.allFinite())
    throw SimulationError(t, "the divide-and-conquer solve gave non-finite joint accelerations, first " +
                                 joints_.describe_state(joints_.nq() + static_cast<int>(first_non_finite(vdot_)), "acceleration"));
}

/// D' (A_c - A_p) = D' kappa for a tree joint; J A = gamma (- Baumgarte) for a loop joint.
void AccelerationSolver::joint_rows(int j, const SystemState& bodies) {
  const int k = layout_.tree_index[static_cast<std::size_t>(j)];
  Rows6& rows = rows_[static_cast<std::size_t>(j)];
  if (k >= 0) {
    tree_rows(joints_.tree()[static_cast<std::size_t>(k)], motion_, k, motion_[static_cast<std::size_t>(k)].kappa, rows);
    return;
  }
  const Joint& joint = model_.joints[static_cast<std::size_t>(j)];
  const BodyState& P = state_of(bodies, joint.parent);
  const BodyState& C = state_of(bodies, joint.child);
  ConstraintBlock block;
  joint_constraint(joint, P, C, block, ConstraintParts::without_jdot());
  ConstraintVector rhs = block.gamma;
  if (baumgarte_alpha_ != 0.0 || baumgarte_beta_ != 0.0) {
    Vec6 V_P, V_C;
    V_P << P.v, P.w;
    V_C << C.v, C.w;
    const ConstraintVector phi_dot = block.J_P * V_P + block.J_C * V_C + block.phi_t;
    rhs -= 2.0 * baumgarte_alpha_ * phi_dot + baumgarte_beta_ * baumgarte_beta_ * block.phi;
  }
  loop_rows(block, points_[static_cast<std::size_t>(j)], P, C, rhs, /*acceleration=*/true, rows);
}

/// K and b of one body at its handles.
void AccelerationSolver::leaf_coefficients(int b, const SystemState& bodies) {
  const double mass = loads_.mass(b);
  const BodyState& s = bodies[static_cast<std::size_t>(b)];
  const PrincipalInertia& J = inertia_[static_cast<std::size_t>(b)];
  const Mat3 axes = J.axes(s.q);  // the body's principal axes, global
  Mat3& Ji = J_inverse_[static_cast<std::size_t>(b)];
  Ji = J.inverse(axes);
  Vec6& F = wrenches_[static_cast<std::size_t>(b)];  // the applied wrench becomes F_e in place
  F.tail<3>() -= s.w.cross(J.times(axes, s.w));       // w x (J w)
  auto& leaf = core_.leaf(b);
  const std::span<Vec3> l = handles_of(b);
  for (std::size_t h = 0; h < l.size(); ++h) l[h] = points_[static_cast<std::size_t>(leaf.handles()[h])] - s.r;
  mobility_rows<double, 6>(1.0 / mass, Ji, l, rows_, leaf);
  const Vec3 a0 = F.head<3>() / mass, alpha0 = Ji * F.tail<3>();
  for (std::size_t h = 0; h < l.size(); ++h) {  // b_h = S(l_h)' M^-1 F_e + [w x (w x l_h); 0], in rows
    const Vec3 a_h = a0 + alpha0.cross(l[h]) + s.w.cross(s.w.cross(l[h]));
    const Vec6 b_h(a_h.x(), a_h.y(), a_h.z(), alpha0.x(), alpha0.y(), alpha0.z());  // from its entries: read by pairs
    core_.set_leaf_bias(leaf, static_cast<int>(h), b_h, rows_);
  }
}

/// A_com = M^-1 (F_e + sum_h S(l_h) f_h).
void AccelerationSolver::body_acceleration(int b, SystemState& bodies) {
  const auto& leaf = core_.leaf(b);
  const std::span<Vec3> l = handles_of(b);
  // Summed by halves, force and moment apart: a 6-vector summed by halves and read by pairs waits
  // on the pair across them (store forwarding; docs/benchmarks.md, "Session 27").
  const Vec6& F_e = wrenches_[static_cast<std::size_t>(b)];
  Vec3 force = F_e.head<3>(), moment = F_e.tail<3>();
  for (std::size_t h = 0; h < l.size(); ++h) {
    Vec6 f;
    core_.load_into(leaf, static_cast<int>(h), rows_, f);
    force += f.head<3>();
    moment += f.tail<3>() + l[h].cross(f.head<3>());
  }
  BodyState& s = bodies[static_cast<std::size_t>(b)];
  s.a = force / loads_.mass(b);
  s.alpha = J_inverse_[static_cast<std::size_t>(b)] * moment;
}

/// vdot = H' (A_c(o) - A_p(o) - kappa).
void AccelerationSolver::joint_acceleration(int k, const SystemState& bodies) {
  const TreeJoint& t = joints_.tree()[static_cast<std::size_t>(k)];
  const JointMotion& m = motion_[static_cast<std::size_t>(k)];
  auto at_point = [&](int body) {
    if (body == kGround) return Vec6(Vec6::Zero());
    const BodyState& s = bodies[static_cast<std::size_t>(body)];
    const Vec3 l = m.point - s.r;
    const Vec3 a = s.a + s.alpha.cross(l) + s.w.cross(s.w.cross(l));
    return Vec6(a.x(), a.y(), a.z(), s.alpha.x(), s.alpha.y(), s.alpha.z());  // from its entries: read by pairs
  };
  subspace_project(motion_.H(k), t.nv, Vec6(at_point(t.child) - at_point(t.parent) - m.kappa), vdot_.segment(t.v_offset, t.nv));
}

void AccelerationSolver::reactions(const SystemState& bodies, std::vector<JointReaction>& out) const {
  out.assign(model_.joints.size(), JointReaction{});
  for (std::size_t j = 0; j < model_.joints.size(); ++j) {
    const Joint& joint = model_.joints[j];
    const dc::JointSides& sides = core_.sides(static_cast<int>(j));
    if (sides.rows == 0) continue;  // a free joint carries no load
    const Vec6 f = core_.joint_load(static_cast<int>(j), sides.body_p == joint.child, rows_);  // on the child
    const BodyState& C = bodies[static_cast<std::size_t>(joint.child)];
    const Vec3 origin = C.r + C.q * joint.child_frame.origin;  // report about the child's joint frame
    out[j] = {f.head<3>(), f.tail<3>() + (points_[j] - origin).cross(f.head<3>())};
  }
}

void AccelerationSolver::kinematics(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                                    SystemState& out) {
  out.resize(model_.bodies.size());
  for (BodyState& b : out) b.a = b.alpha = Vec3::Zero();
  joints_.forward_kinematics(q, v, out, motion_);
}

void AccelerationSolver::update_angle_references(const Eigen::Ref<const Eigen::VectorXd>& q,
                                                 const Eigen::Ref<const Eigen::VectorXd>& v, SystemState& bodies) {
  if (!loads_.measures_angles()) return;
  bodies.resize(model_.bodies.size());  // allocates only the first time
  joints_.forward_kinematics(q, v, bodies, motion_);
  loads_.update_angle_references(bodies);
}

}  // namespace treedyn::jc
