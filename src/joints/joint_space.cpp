#include "treedyn/joint_space.hpp"

#include "joint_kinematics.hpp"
#include "treedyn/errors.hpp"

#include <bit>
#include <cassert>
#include <cmath>
#include <limits>
#include <sstream>

namespace treedyn {
namespace {

using namespace joint_kinematics;

/// Column c of Hdot: column c of H (its columns at `H`, 6 doubles each) turns with the angular
/// velocity of the body it is fixed in.
[[gnu::always_inline]] inline Vec6 subspace_rate_column(const TreeJoint& t, const double* H, int c, const Vec3& wP, const Vec3& wC) {
  const Vec3& w = (t.child_axes >> c) & 1u ? wC : wP;
  Vec6 column;
  column << w.cross(Eigen::Map<const Vec3>(H + 6 * c)), w.cross(Eigen::Map<const Vec3>(H + 6 * c + 3));
  return column;
}

/// The ground's rotation matrix, as a parent's (JointSpace::parent_rotation).
const Mat3 kGroundRotation = Mat3::Identity();

/// F_p, the parent's joint frame's axes, from the parent's rotation matrix A_P.
[[gnu::always_inline]] inline Mat3 parent_frame_axes(const TreeJoint& t, const Mat3* rotations, const Mat3& A_P) {
  return t.parent_turned() ? Mat3(A_P * rotations[t.parent_rotation]) : A_P;  // frame_pose(P, parent_frame)'s axes
}

/// F_c = F_p R(q), the child's joint frame's axes.
[[gnu::always_inline]] inline Mat3 child_frame_axes(const TreeJoint& t, const double* q, const Mat3& Fp) {
  Mat3 R;
  Vec3 p;
  relative_transform(t.type, q + t.q_offset, R, p);
  return Fp * R;
}

/// A tree joint's child rotation matrix A_C and the joint's H and D (its columns, at HD:
/// subspace_columns()) from its parent's rotation matrix A_P and q: the part of placing a joint
/// that its children wait for (a sweep's serial chain of matrix products) and what needs its
/// frames' axes. `rotations`: JointSpace::rotations(), where t's turned frames' rotations are.
[[gnu::always_inline]] inline void rotate_child(const TreeJoint& t, const Mat3* rotations, const double* q, const Mat3& A_P,
                                                Mat3& A_C, double* HD) {
  const Mat3 Fp = parent_frame_axes(t, rotations, A_P);
  const Mat3 Fc = child_frame_axes(t, q, Fp);
  A_C = t.child_turned() ? Mat3(Fc * rotations[t.child_rotation].transpose()) : Fc;
  subspace_columns(t.type, Fp, Fc, HD);
}

/// The rest of placing a tree joint, once rotate_child() has made A_C: the child's position and
/// the joint's point, from the parent's position (a chain of sums). A translating joint's F_p is
/// made again by rotate_child()'s operations: the same numbers as one function's. The child's
/// quaternion is left to orient().
[[gnu::always_inline]] inline void locate_child(const TreeJoint& t, const Mat3* rotations, const double* q, SystemState& bodies,
                                                const Mat3& A_P, const Mat3& A_C, JointMotion& m) {
  const BodyState& P = state_of(bodies, t.parent);
  BodyState& C = bodies[static_cast<std::size_t>(t.child)];
  Vec3 o = P.r + A_P * t.parent_origin;
  if (t.translates) o += parent_frame_axes(t, rotations, A_P) * relative_translation(t.type, q + t.q_offset);  // else p = 0
  C.r = o - A_C * t.child_origin;
  m.point = o;
}

/// A body's quaternion from its rotation matrix A_C (rotate_child()), of the sign nearer the
/// quaternion the state held (q and -q are the same rotation): a matrix's quaternion takes its
/// sign from whichever of the trace or the diagonal is largest, so a body turning smoothly had it
/// jump between evaluations (81 jumps in dca's trajectory.csv of the 16-link chain over 10 s, none in
/// the reference formulation's, which integrates its quaternions). A state reused from evaluation
/// to evaluation, or sample to sample, so keeps its quaternions continuous; a fresh one starts
/// from the identity's side (w >= 0).
[[gnu::always_inline]] inline void orient(BodyState& C, const Mat3& A_C) {
  const Quat q = Quat(A_C).normalized();
  C.q = q.coeffs().dot(C.q.coeffs()) < 0.0 ? Quat(-q.w(), -q.x(), -q.y(), -q.z()) : q;
}

/// A tree joint's child twist and the joint's kappa, from its parent's twist and v (after locate_child).
/// kappa = Hdot v + [w_P x (H v)_lin; 0], where column c of Hdot is w x H_c with w the angular
/// velocity of the frame the column is fixed in (child_axes; subspace_rate()). The cross product is
/// linear, so with H v split by frame, H v = (H v)_P + (H v)_C, Hdot v = [w_P x (H v)_P + w_C x (H v)_C]
/// half by half: four cross products for any joint instead of two per column, two where every
/// column turns with the parent, one for a spherical joint's H = [0; F_c]. The same sum as
/// subspace_rate()'s columns times v in another order: equal within round-off
/// (JointSpace.SubspaceRateMatchesFiniteDifferencesOfH states the bound).
[[gnu::always_inline]] inline void move_joint(const TreeJoint& t, const double* v, SystemState& bodies, JointMotion& m,
                                              const double* H) {
  const BodyState& P = state_of(bodies, t.parent);
  BodyState& C = bodies[static_cast<std::size_t>(t.child)];
  const double* vj = v + t.v_offset;
  if (t.type == JointType::Spherical) {  // H = [0; F_c] (subspace_columns()): H v = [0; F_c v], kappa = [0; w_C x F_c v]
    const Vec3 Hv_w = Eigen::Map<const Eigen::Matrix<double, 6, 3>>(H).bottomRows<3>() * Eigen::Map<const Vec3>(vj);
    C.w = P.w + Hv_w;
    C.v = P.v + P.w.cross(m.point - P.r) + C.w.cross(C.r - m.point);
    m.kappa << Vec3::Zero(), C.w.cross(Hv_w);
    return;
  }
  Vec6 Hv_P = Vec6::Zero(), Hv_C = Vec6::Zero();
  for (int c = 0; c < t.nv; ++c) ((t.child_axes >> c) & 1u ? Hv_C : Hv_P) += Eigen::Map<const Vec6>(H + 6 * c) * vj[c];
  const Vec6 Hv = Hv_P + Hv_C;
  C.w = P.w + Hv.tail<3>();
  C.v = P.v + P.w.cross(m.point - P.r) + Hv.head<3>() + C.w.cross(C.r - m.point);
  if (t.child_axes == 0)  // every column in the parent (revolute, prismatic, cylindrical, planar): H v = (H v)_P
    m.kappa << P.w.cross(Hv.head<3>() + Hv.head<3>()), P.w.cross(Hv.tail<3>());
  else
    m.kappa << P.w.cross(Hv_P.head<3>() + Hv.head<3>()) + C.w.cross(Hv_C.head<3>()),
               P.w.cross(Hv_P.tail<3>()) + C.w.cross(Hv_C.tail<3>());
}

/// qdot's segment of tree joint t: G(q) v (quaternion kinematics for spherical and free joints).
[[gnu::always_inline]] inline void joint_position_rate(const TreeJoint& t, const double* q, const double* v, double* qdot) {
  const double* vj = v + t.v_offset;
  double* out = qdot + t.q_offset;
  auto quaternion_rate = [](const double* Q, const double* w, double* Qdot) {  // 1/2 Q (x) [0; w]
    const Quat r = Quat(Q[0], Q[1], Q[2], Q[3]) * Quat(0.0, 0.5 * w[0], 0.5 * w[1], 0.5 * w[2]);
    Qdot[0] = r.w();
    Qdot[1] = r.x();
    Qdot[2] = r.y();
    Qdot[3] = r.z();
  };
  switch (t.type) {
    case JointType::Spherical: quaternion_rate(q + t.q_offset, vj, out); break;
    case JointType::Free:
      for (int k = 0; k < 3; ++k) out[k] = vj[k];
      quaternion_rate(q + t.q_offset + 3, vj + 3, out + 3);
      break;
    default:
      for (int k = 0; k < t.nv; ++k) out[k] = vj[k];
  }
}

}  // namespace

int RotationTable::index_of(const Mat3& rotation) {
  if (rotation == Mat3::Identity()) return -1;
  std::array<std::uint64_t, 9> bits;
  for (std::size_t i = 0; i < bits.size(); ++i) bits[i] = std::bit_cast<std::uint64_t>(rotation.data()[i]);
  const auto [at, added] = lookup_.try_emplace(bits, size());
  if (added) rotations_.push_back(rotation);
  return at->second;
}

int joint_nq(JointType type) {
  switch (type) {
    case JointType::Spherical: return 4;
    case JointType::Free: return 7;
    default: return joint_dof(type);
  }
}

JointSpace::JointSpace(const Model& model, const Topology& topology)
    : model_(&model), tree_joint_of_(static_cast<std::size_t>(model.body_count()), -1) {
  auto add = [&](TreeJoint t, const Frame& parent_frame, const Frame& child_frame) {
    t.nq = joint_nq(t.type);
    t.nv = joint_nv(t.type);
    t.child_axes = child_axes(t.type);
    t.parent_origin = parent_frame.origin;
    t.child_origin = child_frame.origin;
    t.parent_rotation = rotations_.index_of(parent_frame.rotation);
    t.child_rotation = rotations_.index_of(child_frame.rotation);
    t.unit_constraints = unit_constraint_subspace(t.type);
    t.translates = translating(t.type);
    t.q_offset = nq_;
    t.v_offset = nv_;
    nq_ += t.nq;
    nv_ += t.nv;
    tree_joint_of_[static_cast<std::size_t>(t.child)] = static_cast<int>(tree_.size());
    tree_.push_back(t);
  };
  auto add_virtual_root = [&](int body) {  // free joint from ground to a floating sub-system
    TreeJoint t;
    t.type = JointType::Free;
    t.parent = kGround;
    t.child = body;
    add(t, Frame{}, Frame{});
  };
  tree_.reserve(topology.tree_joints().size() + topology.floating_subsystems().size());  // each virtual root is one's
  for (int j : topology.tree_joints()) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    TreeJoint t;
    t.joint = j;
    t.type = joint.type;
    const int child = topology.tree_joint_of(joint.child) == j ? joint.child : joint.parent;
    t.child = child;
    t.parent = topology.tree_parent_of(child);
    t.reversed = child != joint.child;
    Frame parent_frame = t.reversed ? joint.child_frame : joint.parent_frame;
    Frame child_frame = t.reversed ? joint.parent_frame : joint.child_frame;
    if (t.reversed && t.type == JointType::Universal) {
      parent_frame.rotation *= universal_swap();
      child_frame.rotation *= universal_swap();
    }
    if (t.parent != kGround && tree_joint_of_[static_cast<std::size_t>(t.parent)] < 0) add_virtual_root(t.parent);
    add(t, parent_frame, child_frame);
  }
  for (const auto& subsystem : topology.floating_subsystems())  // a body with no joint at all
    if (tree_joint_of_[static_cast<std::size_t>(subsystem.front())] < 0) add_virtual_root(subsystem.front());
  rotations_.seal();
}

Frame JointSpace::parent_frame(int k) const {
  const TreeJoint& t = tree_.at(static_cast<std::size_t>(k));
  return {t.parent_origin, rotations_.at(t.parent_rotation)};
}

Frame JointSpace::child_frame(int k) const {
  const TreeJoint& t = tree_.at(static_cast<std::size_t>(k));
  return {t.child_origin, rotations_.at(t.child_rotation)};
}

void JointSpace::coordinates(const SystemState& state, Eigen::VectorXd& q, Eigen::VectorXd& v, double tolerance) const {
  q.setZero(nq_);
  v.setZero(nv_);
  const bool check = tolerance < std::numeric_limits<double>::infinity();
  for (std::size_t k = 0; k < tree_.size(); ++k) {
    const TreeJoint& t = tree_[k];
    auto who = [&] {
      return t.joint >= 0 ? "joint '" + model_->joints[static_cast<std::size_t>(t.joint)].name + "'"
                          : "the free-floating body '" + model_->body_name(t.child) + "'";
    };
    const BodyState& P = state_of(state, t.parent);
    const BodyState& C = state_of(state, t.child);
    const FramePose fp = frame_pose(P, parent_frame(static_cast<int>(k))), fc = frame_pose(C, child_frame(static_cast<int>(k)));
    const Mat3 R_rel = fp.R.transpose() * fc.R;
    const Vec3 p_rel = fp.R.transpose() * (fc.o - fp.o);
    double* qj = q.data() + t.q_offset;
    coordinates_of(t.type, R_rel, p_rel, qj);
    if (check) {
      Mat3 R;
      Vec3 p;
      relative_transform(t.type, qj, R, p);
      const double error = std::max((R - R_rel).cwiseAbs().maxCoeff(), (p - p_rel).cwiseAbs().maxCoeff());
      if (error > tolerance)
        throw ModelError(who() + ": the state violates it by " + sci(error) +
                         " (its coordinates cannot represent the relative pose)");
    }
    Vec6 V_rel;
    V_rel << (C.v + C.w.cross(fc.o - C.r)) - (P.v + P.w.cross(fc.o - P.r)), C.w - P.w;
    SubspaceMatrix H;
    motion_subspace(t.type, fp.R, fc.R, H);
    v.segment(t.v_offset, t.nv) = H.transpose() * V_rel;
    if (!check) continue;
    const double v_error = (V_rel - H * v.segment(t.v_offset, t.nv)).cwiseAbs().maxCoeff();
    if (v_error > tolerance) throw ModelError(who() + ": the velocities violate it by " + sci(v_error));
  }
}

const double JointMotions::kUnitColumns[36] = {1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,
                                               0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 1};

void JointSpace::size_motion(JointMotions& motion) const {
  if (motion.sized_for_ == this) return;
  motion.sized_for_ = this;
  motion.joints_.assign(tree_.size(), JointMotion{});
  motion.unit_.assign(tree_.size(), 0);
  motion.rotation_.assign(tree_.size(), Mat3::Identity());
  std::size_t at = 0;
  for (std::size_t k = 0; k < tree_.size(); ++k) {
    const TreeJoint& t = tree_[k];
    motion.joints_[k].at = static_cast<int>(at);
    motion.joints_[k].nv = t.nv;
    motion.unit_[k] = t.unit_constraints;
    at += 6u * static_cast<std::size_t>(t.unit_constraints ? t.nv : 6);
  }
  motion.columns_.assign(at, 0.0);
}

void JointSpace::forward_kinematics(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                                    SystemState& bodies, JointMotions& motion) const {
  size_motion(motion);
  double* columns = motion.columns_.data();
  for (std::size_t k = 0; k < tree_.size(); ++k) {  // a parent is placed and moved before its children
    JointMotion& m = motion.joints_[k];
    Mat3& A_C = motion.rotation_[k];
    const Mat3& A_P = parent_rotation(tree_[k], motion);
    rotate_child(tree_[k], rotations_.data(), q.data(), A_P, A_C, columns + m.at);
    locate_child(tree_[k], rotations_.data(), q.data(), bodies, A_P, A_C, m);
    orient(bodies[static_cast<std::size_t>(tree_[k].child)], A_C);
    move_joint(tree_[k], v.data(), bodies, m, columns + m.at);
  }
}

void JointSpace::place(const Eigen::Ref<const Eigen::VectorXd>& q, SystemState& bodies, JointMotions& motion) const {
  size_motion(motion);
  for (int k = 0; k < static_cast<int>(tree_.size()); ++k) {
    place_joint(k, q, bodies, motion);
    orient_child(k, bodies, motion);
  }
}

void JointSpace::place_joint(int k, const Eigen::Ref<const Eigen::VectorXd>& q, SystemState& bodies, JointMotions& motion) const {
  rotate_joint(k, q, motion);
  locate_joint(k, q, bodies, motion);
}

void JointSpace::rotate_joint(int k, const Eigen::Ref<const Eigen::VectorXd>& q, JointMotions& motion) const {
  assert(motion.sized_for_ == this && k >= 0 && static_cast<std::size_t>(k) < tree_.size());  // after prepare()
  const TreeJoint& t = tree_[static_cast<std::size_t>(k)];
  rotate_child(t, rotations_.data(), q.data(), parent_rotation(t, motion), motion.rotation_[static_cast<std::size_t>(k)],
               motion.columns_.data() + motion.joints_[static_cast<std::size_t>(k)].at);
}

void JointSpace::locate_joint(int k, const Eigen::Ref<const Eigen::VectorXd>& q, SystemState& bodies, JointMotions& motion) const {
  assert(motion.sized_for_ == this && k >= 0 && static_cast<std::size_t>(k) < tree_.size());  // after rotate_joint(k)
  const TreeJoint& t = tree_[static_cast<std::size_t>(k)];
  locate_child(t, rotations_.data(), q.data(), bodies, parent_rotation(t, motion), motion.rotation_[static_cast<std::size_t>(k)],
               motion.joints_[static_cast<std::size_t>(k)]);
}

void JointSpace::orient_child(int k, SystemState& bodies, const JointMotions& motion) const {
  assert(motion.sized_for_ == this && k >= 0 && static_cast<std::size_t>(k) < tree_.size());  // after place_joint(k)
  orient(bodies[static_cast<std::size_t>(tree_[static_cast<std::size_t>(k)].child)], motion.child_rotation(k));
}

const Mat3& JointSpace::parent_rotation(const TreeJoint& t, const JointMotions& motion) const {
  return t.parent == kGround ? kGroundRotation : motion.rotation_[static_cast<std::size_t>(tree_joint_of_[static_cast<std::size_t>(t.parent)])];
}

void JointSpace::move(const Eigen::Ref<const Eigen::VectorXd>& v, SystemState& bodies, JointMotions& motion) const {
  assert(motion.size() == tree_.size());  // after place()
  const double* columns = motion.columns_.data();
  for (std::size_t k = 0; k < tree_.size(); ++k) {
    JointMotion& m = motion.joints_[k];
    move_joint(tree_[k], v.data(), bodies, m, columns + m.at);
  }
}

void JointSpace::subspace_rate(int k, const SystemState& bodies, const JointMotions& motion, SubspaceMatrix& Hdot) const {
  assert(k >= 0 && static_cast<std::size_t>(k) < tree_.size());  // a hot call: checked in debug builds
  const TreeJoint& t = tree_[static_cast<std::size_t>(k)];
  assert(motion[static_cast<std::size_t>(k)].nv == t.nv);
  const Vec3& wP = state_of(bodies, t.parent).w;
  const Vec3& wC = state_of(bodies, t.child).w;
  const double* H = motion.H(k).data();
  Hdot.resize(6, t.nv);
  for (int c = 0; c < t.nv; ++c) Hdot.col(c) = subspace_rate_column(t, H, c, wP, wC);
}

void JointSpace::position_rate(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                               Eigen::Ref<Eigen::VectorXd> qdot) const {
  for (const TreeJoint& t : tree_) joint_position_rate(t, q.data(), v.data(), qdot.data());
}

void JointSpace::position_rate(int k, const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                               Eigen::Ref<Eigen::VectorXd> qdot) const {
  assert(k >= 0 && static_cast<std::size_t>(k) < tree_.size());
  joint_position_rate(tree_[static_cast<std::size_t>(k)], q.data(), v.data(), qdot.data());
}

double JointSpace::normalize(Eigen::Ref<Eigen::VectorXd> q, double tolerance) const {
  double change = 0.0;
  for (const TreeJoint& t : tree_) {
    if (t.type != JointType::Spherical && t.type != JointType::Free) continue;
    auto Q = q.segment<4>(t.q_offset + (t.type == JointType::Free ? 3 : 0));
    const double norm = Q.norm();
    const double off = std::abs(norm - 1.0);
    if (off <= tolerance || off == 0.0) continue;  // left as it is (norm exactly 1: Q / 1 = Q)
    change = std::max(change, off);
    Q /= norm;
  }
  return change;
}

std::string JointSpace::describe_state(int index, const std::string& rate) const {
  const bool is_rate = index >= nq_;
  const int at = is_rate ? index - nq_ : index;
  for (const TreeJoint& tj : tree_) {
    const int offset = is_rate ? tj.v_offset : tj.q_offset, count = is_rate ? tj.nv : tj.nq;
    if (at < offset || at >= offset + count) continue;
    const std::string what = (is_rate ? rate : std::string("coordinate")) + " " + std::to_string(at - offset);
    if (tj.joint < 0) return what + " of the free body '" + model_->bodies[static_cast<std::size_t>(tj.child)].name + "'";
    return what + " of joint '" + model_->joints[static_cast<std::size_t>(tj.joint)].name + "'";
  }
  return "entry " + std::to_string(index);
}

}  // namespace treedyn
