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
      welded_(model, topology, borrowed.merge_welds),
      core_tree_(welded_, tree, threading.threads),
      core_sides_(welded_.core_sides(layout_.sides)),
      root_joint_(welded_.root_tree_joints(joints_)),
      own_core_(borrowed.core &&
                        borrowed.core->made_as(core_tree_.tree(), core_sides_, InverseMethod::Cholesky, dc::LeafBlocks::InRows, dc::BiasPasses::Never)
                    ? std::nullopt
                    : std::optional<dc::HandleTree<double, 6>>(std::in_place, core_tree_.tree(), core_sides_, InverseMethod::Cholesky,
                                                               dc::LeafBlocks::InRows, dc::BiasPasses::Never)),
      core_(own_core_ ? *own_core_ : *borrowed.core),
      loads_(model, external),
      parallel_(threading),
      baumgarte_alpha_(baumgarte_alpha),
      baumgarte_beta_(baumgarte_beta),
      motion_(borrowed.motions ? *borrowed.motions : own_motion_),
      rows_(static_cast<std::size_t>(welded_.core_joint_count())),
      wrenches_(model.bodies.size()),
      group_wrenches_(static_cast<std::size_t>(welded_.count())),
      group_centres_(static_cast<std::size_t>(welded_.count())),
      J_inverse_(static_cast<std::size_t>(welded_.leaf_count())),
      own_inertia_(borrowed.inertia ? std::vector<PrincipalInertia>() : principal_inertias(model)),
      inertia_(borrowed.inertia ? *borrowed.inertia : own_inertia_),
      handle_offset_(J_inverse_.size() + 1, 0) {
  for (std::size_t b = 0; b + 1 < handle_offset_.size(); ++b)
    handle_offset_[b + 1] = handle_offset_[b] + core_.leaf(static_cast<int>(b)).size();
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
  for (int b : welded_.static_bodies()) bodies[static_cast<std::size_t>(b)].a = bodies[static_cast<std::size_t>(b)].alpha = Vec3::Zero();
  loads_.evaluate(t, bodies, wrenches_);
  handle_points(model_, layout_, motion_, bodies, points_);
  mark(timer, 0);
  parallel_.for_each(welded_.core_joint_count(), [&](int j) { joint_rows(j, bodies); });
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

/// D' (A_c - A_p) = D' kappa for a tree joint; J A = gamma (- Baumgarte) for a loop joint. Both
/// are rows at the handle point, which hold for any body rigidly joined to it: a welded group's
/// as well as its member's.
void AccelerationSolver::joint_rows(int core_joint, const SystemState& bodies) {
  const int j = welded_.model_joint(core_joint);
  const int k = layout_.tree_index[static_cast<std::size_t>(j)];
  Rows6& rows = rows_[static_cast<std::size_t>(core_joint)];
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

/// K and b of one leaf (a body, or a welded group) at its handles.
void AccelerationSolver::leaf_coefficients(int b, const SystemState& bodies) {
  Mat3& Ji = J_inverse_[static_cast<std::size_t>(b)];
  Vec3 r, w;
  double mass;
  const Vec6* F_e;
  if (const int body = welded_.body_of_leaf(b); body < 0) {
    Vec6& F = group_wrenches_[static_cast<std::size_t>(b)];
    composite_state(b, bodies, r, w, Ji, F);
    group_centres_[static_cast<std::size_t>(b)] = r;
    mass = welded_.mass(b);
    F_e = &F;
  } else {
    mass = loads_.mass(body);
    const BodyState& s = bodies[static_cast<std::size_t>(body)];
    const PrincipalInertia& J = inertia_[static_cast<std::size_t>(body)];
    const Mat3 axes = J.axes(s.q);  // the body's principal axes, global
    Ji = J.inverse(axes);
    Vec6& F = wrenches_[static_cast<std::size_t>(body)];  // the applied wrench becomes F_e in place
    F.tail<3>() -= s.w.cross(J.times(axes, s.w));          // w x (J w)
    r = s.r;
    w = s.w;
    F_e = &F;
  }
  auto& leaf = core_.leaf(b);
  const std::span<Vec3> l = handles_of(b);
  for (std::size_t h = 0; h < l.size(); ++h) l[h] = points_[static_cast<std::size_t>(welded_.model_joint(leaf.handles()[h]))] - r;
  mobility_rows<double, 6>(1.0 / mass, Ji, l, rows_, leaf);
  const Vec3 a0 = F_e->head<3>() / mass, alpha0 = Ji * F_e->tail<3>();
  for (std::size_t h = 0; h < l.size(); ++h) {  // b_h = S(l_h)' M^-1 F_e + [w x (w x l_h); 0], in rows
    const Vec3 a_h = a0 + alpha0.cross(l[h]) + w.cross(w.cross(l[h]));
    const Vec6 b_h(a_h.x(), a_h.y(), a_h.z(), alpha0.x(), alpha0.y(), alpha0.z());  // from its entries: read by pairs
    core_.set_leaf_bias(leaf, static_cast<int>(h), b_h, rows_);
  }
}

/// Welded group c as one body: its centre of mass r = r_root + A_root c (c in the root's frame),
/// its angular velocity (its root's), J^-1 global, and F_e = the members' applied wrenches moved
/// to r, less [0; w x (J w)].
void AccelerationSolver::composite_state(int c, const SystemState& bodies, Vec3& r, Vec3& w, Mat3& J_inverse, Vec6& F_e) {
  const BodyState& root = bodies[static_cast<std::size_t>(welded_.root(c))];
  const Mat3& A = motion_.child_rotation(root_joint_[static_cast<std::size_t>(c)]);  // placed by forward kinematics
  const PrincipalInertia& J = welded_.inertia(c);
  const Mat3 axes = J.axes(A);
  r = root.r + A * welded_.centre(c);
  w = root.w;
  J_inverse = J.inverse(axes);
  Vec3 force = Vec3::Zero(), moment = -w.cross(J.times(axes, w));
  for (int m : welded_.members(c)) {
    const Vec6& f = wrenches_[static_cast<std::size_t>(m)];
    force += f.head<3>();
    moment += f.tail<3>() + (bodies[static_cast<std::size_t>(m)].r - r).cross(f.head<3>());
  }
  F_e << force, moment;
}

/// A_com = M^-1 (F_e + sum_h S(l_h) f_h); a welded group's members from its (a rigid body's
/// accelerations at their centres of mass).
void AccelerationSolver::body_acceleration(int b, SystemState& bodies) {
  const auto& leaf = core_.leaf(b);
  const std::span<Vec3> l = handles_of(b);
  // Summed by halves, force and moment apart: a 6-vector summed by halves and read by pairs waits
  // on the pair across them (store forwarding; docs/benchmarks.md, "Session 27").
  const int body = welded_.body_of_leaf(b);
  const Vec6& F_e = body < 0 ? group_wrenches_[static_cast<std::size_t>(b)] : wrenches_[static_cast<std::size_t>(body)];
  Vec3 force = F_e.head<3>(), moment = F_e.tail<3>();
  for (std::size_t h = 0; h < l.size(); ++h) {
    Vec6 f;
    core_.load_into(leaf, static_cast<int>(h), rows_, f);
    force += f.head<3>();
    moment += f.tail<3>() + l[h].cross(f.head<3>());
  }
  if (body >= 0) {
    BodyState& s = bodies[static_cast<std::size_t>(body)];
    s.a = force / loads_.mass(body);
    s.alpha = J_inverse_[static_cast<std::size_t>(b)] * moment;
    return;
  }
  const Vec3 a = force / welded_.mass(b), alpha = J_inverse_[static_cast<std::size_t>(b)] * moment;
  const Vec3& r = group_centres_[static_cast<std::size_t>(b)];
  const Vec3 w = bodies[static_cast<std::size_t>(welded_.root(b))].w;
  for (int m : welded_.members(b)) {
    BodyState& s = bodies[static_cast<std::size_t>(m)];
    const Vec3 d = s.r - r;
    s.a = a + alpha.cross(d) + w.cross(w.cross(d));
    s.alpha = alpha;
  }
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
  for (int jc = 0; jc < welded_.core_joint_count(); ++jc) {
    const auto j = static_cast<std::size_t>(welded_.model_joint(jc));
    const Joint& joint = model_.joints[j];
    const dc::JointSides& sides = core_.sides(jc);
    if (sides.rows == 0) continue;  // a free joint carries no load
    const Vec6 f = core_.joint_load(jc, sides.body_p == welded_.leaf_of(joint.child), rows_);  // on the child
    const BodyState& C = bodies[static_cast<std::size_t>(joint.child)];
    const Vec3 origin = C.r + C.q * joint.child_frame.origin;  // report about the child's joint frame
    out[j] = {f.head<3>(), f.tail<3>() + (points_[j] - origin).cross(f.head<3>())};
  }
  if (welded_.any()) weld_reactions(bodies, out);
}

/// A merged weld carries what its child side (its tree child and the bodies welded below it) needs
/// beyond its applied loads and its kept joints' loads: the side's Newton-Euler equations
///     F_weld = sum_i (m_i a_i - f_i) - sum_j F_j,
///     M_weld = sum_i (J_i alpha_i + w x (J_i w) - tau_i + r_i x (m_i a_i - f_i)) - sum_j (M_j + p_j x F_j),
/// about the global origin (i: the side's bodies, j: their kept joints' loads on them at their
/// handle points p_j), summed up the welds from the lowest.
void AccelerationSolver::weld_reactions(const SystemState& bodies, std::vector<JointReaction>& out) const {
  weld_sums_.resize(model_.bodies.size());  // allocates only the first time
  auto own_sum = [&](int b, int group) {  // body b's term of its side's sums; group kGround: b is static
    const BodyState& s = bodies[static_cast<std::size_t>(b)];
    const PrincipalInertia& J = inertia_[static_cast<std::size_t>(b)];
    const Mat3 axes = J.axes(s.q);
    const Vec6& applied = wrenches_[static_cast<std::size_t>(b)];
    Vec3 force = loads_.mass(b) * s.a - applied.head<3>();
    Vec3 moment = J.times(axes, s.alpha) + s.w.cross(J.times(axes, s.w)) - applied.tail<3>() + s.r.cross(force);
    for (int j : topology_.joints_of(b)) {
      const int jc = welded_.kept_index(j);
      if (jc < 0 || core_.sides(jc).rows == 0) continue;  // a merged weld; a free joint
      // On b's side; a static body is the ground side of its joints (their child is not static).
      const Vec6 f = group == kGround ? Vec6(-core_.joint_load(jc, false, rows_)) : core_.joint_load(jc, core_.sides(jc).body_p == group, rows_);
      force -= f.head<3>();
      moment -= f.tail<3>() + points_[static_cast<std::size_t>(j)].cross(f.head<3>());
    }
    weld_sums_[static_cast<std::size_t>(b)] << force, moment;
  };
  for (int c = 0; c < welded_.count(); ++c)
    if (welded_.members(c).size() > 1)
      for (int b : welded_.members(c)) own_sum(b, c);
  for (int b : welded_.static_bodies()) own_sum(b, kGround);
  for (const WeldedBodies::Weld& w : welded_.welds()) {  // the lowest first: a side's sum is whole when its weld is reached
    const Joint& joint = model_.joints[static_cast<std::size_t>(w.joint)];
    const Vec6 side = weld_sums_[static_cast<std::size_t>(w.child)];
    if (w.parent != kGround) weld_sums_[static_cast<std::size_t>(w.parent)] += side;
    const Vec6 on_child = w.child == joint.child ? side : Vec6(-side);  // on the model's child
    const BodyState& C = bodies[static_cast<std::size_t>(joint.child)];
    const Vec3 origin = C.r + C.q * joint.child_frame.origin;  // report about the child's joint frame
    out[static_cast<std::size_t>(w.joint)] = {on_child.head<3>(), on_child.tail<3>() - origin.cross(on_child.head<3>())};
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
