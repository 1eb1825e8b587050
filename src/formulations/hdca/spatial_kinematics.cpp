#include "spatial_kinematics.hpp"

namespace treedyn::hdca {

template <class S>
SpatialKinematics<S>::SpatialKinematics(const Model& model, const Topology& topology, const ExternalLoads* external)
    : model_(model),
      joints_(model, topology),
      layout_(jc::make_layout(model, joints_)),
      loads_(model, external),
      loop_joints_(topology.loop_joints()),
      loop_slot_(jc::loop_slots(model.joint_count(), loop_joints_)),
      bodies_(initial_state(model)),
      blocks_(loop_joints_.size()),
      wrenches_(model.bodies.size()),
      inertia_(treedyn::principal_inertias(model)),
      loop_point_(loop_joints_.size(), Point::Zero()),
      inverse_inertia_(model.bodies.size()),
      loop_rows_(loop_joints_.size()) {
  com_.resize(model.bodies.size());
  if constexpr (!kDouble) {
    tree_point_.resize(joints_.tree().size());
    H_.resize(joints_.tree().size());
    D_.resize(joints_.tree().size());
    applied_.assign(model.bodies.size(), Vec::Zero());
  }
  for (std::size_t b = 0; b < model.bodies.size(); ++b) inverse_inertia_[b].inverse_mass = S(1.0 / model.bodies[b].mass);
  assert(joints_.tree().size() == model.bodies.size());  // every body is a tree joint's child: placed() sees each once
}

template <class S>
void SpatialKinematics<S>::placed(int k) {
  const auto b = static_cast<std::size_t>(joints_.tree()[static_cast<std::size_t>(k)].child);
  // from the rotation matrix placing the joint made (the quaternion is made from it, rounded)
  inverse_inertia_[b].J_inverse = inertia_[b].inverse(inertia_[b].axes(motion_.child_rotation(k))).cast<S>();
  com_[b] = bodies_[b].r.cast<S>();
  if constexpr (!kDouble) {
    const auto kk = static_cast<std::size_t>(k);
    tree_point_[kk] = motion_[kk].point.cast<S>();
    H_[kk] = motion_.H(k).cast<S>();
    D_[kk] = motion_.D(k).cast<S>();
  }
}

template <class S>
void SpatialKinematics<S>::place_loop_joints() {
  for (int j : loop_joints_) {  // velocity level: J V = -Phi_t, at the child's joint-frame origin
    const Joint& joint = model_.joints[static_cast<std::size_t>(j)];
    const BodyState& P = state_of(bodies_, joint.parent);
    const BodyState& C = state_of(bodies_, joint.child);
    ConstraintBlock& block = blocks_[slot(j)];
    joint_constraint(joint, P, C, block);
    const Vec3 point = C.r + C.q * joint.child_frame.origin;
    jc::Rows6& rows = loop_scratch_;
    jc::loop_rows(block, point, P, C, -block.phi_t, /*acceleration=*/false, rows);
    Rows& out = loop_rows_[slot(j)];
    out.rows = rows.rows;
    out.edit_G_p() = rows.G_p().cast<S>();
    out.edit_G_c() = rows.G_c().cast<S>();
    out.r = rows.r.cast<S>();
    loop_point_[slot(j)] = point.cast<S>();
  }
}

template <class S>
void SpatialKinematics<S>::move(double t, std::span<const Vec> V) {
  // A tree under gravity alone reads no twist here, and its loads are the weights, made once
  // (a serial sweep over the bodies less per right-hand side).
  if (!loop_joints_.empty() || !loads_.gravity_only()) {
    for (std::size_t b = 0; b < bodies_.size(); ++b) {
      bodies_[b].v = V[b].template head<3>().template cast<double>();
      bodies_[b].w = V[b].template tail<3>().template cast<double>();
    }
  }
  if (loads_.evaluate_unless_held(t, bodies_, wrenches_, weights_held_)) {
    if constexpr (!kDouble) {
      for (std::size_t b = 0; b < bodies_.size(); ++b) applied_[b] = wrenches_[b].cast<S>();
    }
  }
  for (int j : loop_joints_) {
    const Joint& joint = model_.joints[static_cast<std::size_t>(j)];
    joint_constraint(joint, state_of(bodies_, joint.parent), state_of(bodies_, joint.child), blocks_[slot(j)]);
  }
}

template <class S>
void SpatialKinematics<S>::loop_rate_loads(int j, const Vec& sigma, Vec& on_parent, Vec& on_child) const {
  const ConstraintBlock& block = blocks_[slot(j)];
  const int n = block.size();
  const ConstraintVector s = sigma.head(n).template cast<double>();
  on_parent = (block.Jdot_P.transpose() * s).cast<S>();
  on_child = (block.Jdot_C.transpose() * s).cast<S>();
}

template <class S>
typename SpatialKinematics<S>::Vec SpatialKinematics<S>::momentum(int b, const Vec& V) const {
  const Body& body = model_.bodies[static_cast<std::size_t>(b)];
  const Mat3& A = motion_.child_rotation(joints_.tree_joint_of(b));  // after place(): every body is a tree joint's child
  Vec P;
  P << S(body.mass) * V.template head<3>(), (A * body.inertia * A.transpose()).cast<S>() * V.template tail<3>();
  return P;
}

template class SpatialKinematics<double>;
template class SpatialKinematics<float>;

}  // namespace treedyn::hdca
