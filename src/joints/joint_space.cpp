#include "treedyn/errors.hpp"
#include "treedyn/joint_space.hpp"

#include <cmath>
#include <sstream>

namespace treedyn {
namespace {

using ConstVec = Eigen::Ref<const Eigen::VectorXd>;

Mat3 rot_z(double a) { return Eigen::AngleAxisd(a, Vec3::UnitZ()).toRotationMatrix(); }
Mat3 rot_x(double a) { return Eigen::AngleAxisd(a, Vec3::UnitX()).toRotationMatrix(); }

Quat quat_at(const double* q) { return Quat(q[0], q[1], q[2], q[3]).normalized(); }
void store_quat(const Quat& Q, double* q) {
  const Quat c = Q.w() < 0 ? Quat(-Q.w(), -Q.x(), -Q.y(), -Q.z()) : Q;
  q[0] = c.w();
  q[1] = c.x();
  q[2] = c.y();
  q[3] = c.z();
}

/// X(q): the child frame's rotation and origin in the parent frame.
void relative_transform(JointType type, const double* q, Mat3& R, Vec3& p) {
  R.setIdentity();
  p.setZero();
  switch (type) {
    case JointType::Revolute: R = rot_z(q[0]); break;
    case JointType::Prismatic: p.z() = q[0]; break;
    case JointType::Cylindrical: R = rot_z(q[0]); p.z() = q[1]; break;
    case JointType::Universal: R = rot_z(q[0]) * rot_x(q[1]); break;
    case JointType::Spherical: R = quat_at(q).toRotationMatrix(); break;
    case JointType::Planar: R = rot_z(q[2]); p << q[0], q[1], 0.0; break;
    case JointType::Fixed: break;
    case JointType::Free: p << q[0], q[1], q[2]; R = quat_at(q + 3).toRotationMatrix(); break;
  }
}

/// Inverse of relative_transform (the coordinates of a relative pose the joint allows).
void coordinates_of(JointType type, const Mat3& R, const Vec3& p, double* q) {
  switch (type) {
    case JointType::Revolute: q[0] = std::atan2(R(1, 0), R(0, 0)); break;
    case JointType::Prismatic: q[0] = p.z(); break;
    case JointType::Cylindrical: q[0] = std::atan2(R(1, 0), R(0, 0)); q[1] = p.z(); break;
    case JointType::Universal: {
      q[0] = std::atan2(R(1, 0), R(0, 0));
      const Mat3 M = rot_z(-q[0]) * R;
      q[1] = std::atan2(M(2, 1), M(1, 1));
      break;
    }
    case JointType::Spherical: store_quat(Quat(R), q); break;
    case JointType::Planar: q[0] = p.x(); q[1] = p.y(); q[2] = std::atan2(R(1, 0), R(0, 0)); break;
    case JointType::Fixed: break;
    case JointType::Free: q[0] = p.x(); q[1] = p.y(); q[2] = p.z(); store_quat(Quat(R), q + 3); break;
  }
}

/// Motion subspace: unit columns, each an axis of the parent frame (Fp) or of the child frame (Fc).
void motion_subspace(JointType type, const Mat3& Fp, const Mat3& Fc, SubspaceMatrix& H) {
  H.resize(6, joint_nv(type));
  H.setZero();
  int col = 0;
  auto angular = [&](const Vec3& axis) { H.block<3, 1>(3, col++) = axis; };
  auto linear = [&](const Vec3& axis) { H.block<3, 1>(0, col++) = axis; };
  switch (type) {
    case JointType::Revolute: angular(Fp.col(2)); break;
    case JointType::Prismatic: linear(Fp.col(2)); break;
    case JointType::Cylindrical: angular(Fp.col(2)); linear(Fp.col(2)); break;
    case JointType::Universal: angular(Fp.col(2)); angular(Fc.col(0)); break;
    case JointType::Spherical: for (int k = 0; k < 3; ++k) angular(Fc.col(k)); break;
    case JointType::Planar: linear(Fp.col(0)); linear(Fp.col(1)); angular(Fp.col(2)); break;
    case JointType::Fixed: break;
    case JointType::Free:
      for (int k = 0; k < 3; ++k) linear(Fp.col(k));
      for (int k = 0; k < 3; ++k) angular(Fc.col(k));
      break;
  }
}

/// Which columns of motion_subspace() are child-frame axes (bit c for column c).
unsigned child_axes(JointType type) {
  switch (type) {
    case JointType::Universal: return 0b10;
    case JointType::Spherical: return 0b111;
    case JointType::Free: return 0b111000;
    default: return 0;
  }
}

/// Hdot: each column turns with the angular velocity of the body it is fixed in.
void subspace_rate(const TreeJoint& t, const SubspaceMatrix& H, const Vec3& wP, const Vec3& wC, SubspaceMatrix& Hdot) {
  Hdot.resize(6, H.cols());
  for (Eigen::Index c = 0; c < H.cols(); ++c) {
    const Vec3& w = (t.child_axes >> c) & 1u ? wC : wP;
    Hdot.block<3, 1>(0, c) = w.cross(H.block<3, 1>(0, c));
    Hdot.block<3, 1>(3, c) = w.cross(H.block<3, 1>(3, c));
  }
}

/// Constraint subspace: orthonormal, D' H = 0.
void constraint_subspace(JointType type, const Mat3& Fp, const Mat3& Fc, SubspaceMatrix& D) {
  D.resize(6, 6 - joint_nv(type));
  D.setZero();
  int col = 0;
  auto linear = [&](const Vec3& a) { D.block<3, 1>(0, col++) = a; };
  auto angular = [&](const Vec3& a) { D.block<3, 1>(3, col++) = a; };
  switch (type) {
    case JointType::Revolute: linear(Fp.col(0)); linear(Fp.col(1)); linear(Fp.col(2)); angular(Fp.col(0)); angular(Fp.col(1)); break;
    case JointType::Prismatic: linear(Fp.col(0)); linear(Fp.col(1)); angular(Fp.col(0)); angular(Fp.col(1)); angular(Fp.col(2)); break;
    case JointType::Cylindrical: linear(Fp.col(0)); linear(Fp.col(1)); angular(Fp.col(0)); angular(Fp.col(1)); break;
    case JointType::Universal:
      linear(Fp.col(0)); linear(Fp.col(1)); linear(Fp.col(2));
      angular(Fp.col(2).cross(Fc.col(0)).normalized());
      break;
    case JointType::Spherical: linear(Fp.col(0)); linear(Fp.col(1)); linear(Fp.col(2)); break;
    case JointType::Planar: linear(Fp.col(2)); angular(Fp.col(0)); angular(Fp.col(1)); break;
    case JointType::Fixed: for (int k = 0; k < 3; ++k) linear(Fp.col(k)); for (int k = 0; k < 3; ++k) angular(Fp.col(k)); break;
    case JointType::Free: break;
  }
}

/// The rotation that turns a universal joint's frames so that its second axis (x) becomes z and
/// its first (z) becomes x: used when the joint is reversed.
Mat3 universal_swap() {
  Mat3 R;
  R.col(0) = Vec3::UnitZ();
  R.col(1) = -Vec3::UnitY();
  R.col(2) = Vec3::UnitX();
  return R;
}

struct FramePose {
  Mat3 R;
  Vec3 o;
};

FramePose frame_pose(const BodyState& b, const Frame& f) {
  const Mat3 A = b.q.toRotationMatrix();
  return {A * f.rotation, b.r + A * f.origin};
}

}  // namespace

int joint_nq(JointType type) {
  switch (type) {
    case JointType::Spherical: return 4;
    case JointType::Free: return 7;
    default: return joint_dof(type);
  }
}

JointSpace::JointSpace(const Model& model, const Topology& topology)
    : model_(&model), tree_joint_of_(static_cast<std::size_t>(model.body_count()), -1) {
  auto add = [&](TreeJoint t) {
    t.nq = joint_nq(t.type);
    t.nv = joint_nv(t.type);
    t.child_axes = child_axes(t.type);
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
    add(t);
  };
  for (int j : topology.tree_joints()) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    TreeJoint t;
    t.joint = j;
    t.type = joint.type;
    const int child = topology.tree_joint_of(joint.child) == j ? joint.child : joint.parent;
    t.child = child;
    t.parent = topology.tree_parent_of(child);
    t.reversed = child != joint.child;
    t.parent_frame = t.reversed ? joint.child_frame : joint.parent_frame;
    t.child_frame = t.reversed ? joint.parent_frame : joint.child_frame;
    if (t.reversed && t.type == JointType::Universal) {
      t.parent_frame.rotation *= universal_swap();
      t.child_frame.rotation *= universal_swap();
    }
    if (t.parent != kGround && tree_joint_of_[static_cast<std::size_t>(t.parent)] < 0) add_virtual_root(t.parent);
    add(t);
  }
}

void JointSpace::coordinates(const SystemState& state, Eigen::VectorXd& q, Eigen::VectorXd& v, double tolerance) const {
  q.setZero(nq_);
  v.setZero(nv_);
  for (const TreeJoint& t : tree_) {
    const std::string who = t.joint >= 0 ? "joint '" + model_->joints[static_cast<std::size_t>(t.joint)].name + "'"
                                         : "the free-floating body '" + model_->body_name(t.child) + "'";
    const BodyState& P = state_of(state, t.parent);
    const BodyState& C = state_of(state, t.child);
    const FramePose fp = frame_pose(P, t.parent_frame), fc = frame_pose(C, t.child_frame);
    const Mat3 R_rel = fp.R.transpose() * fc.R;
    const Vec3 p_rel = fp.R.transpose() * (fc.o - fp.o);
    double* qj = q.data() + t.q_offset;
    coordinates_of(t.type, R_rel, p_rel, qj);
    Mat3 R;
    Vec3 p;
    relative_transform(t.type, qj, R, p);
    const double error = std::max((R - R_rel).cwiseAbs().maxCoeff(), (p - p_rel).cwiseAbs().maxCoeff());
    if (error > tolerance)
      throw ModelError(who + ": the state violates it by " + sci(error) + " (its coordinates cannot represent the relative pose)");
    Vec6 V_rel;
    V_rel << (C.v + C.w.cross(fc.o - C.r)) - (P.v + P.w.cross(fc.o - P.r)), C.w - P.w;
    SubspaceMatrix H;
    motion_subspace(t.type, fp.R, fc.R, H);
    v.segment(t.v_offset, t.nv) = H.transpose() * V_rel;
    const double v_error = (V_rel - H * v.segment(t.v_offset, t.nv)).cwiseAbs().maxCoeff();
    if (v_error > tolerance) throw ModelError(who + ": the velocities violate it by " + sci(v_error));
  }
}

void JointSpace::forward_kinematics(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                                    SystemState& bodies, std::vector<JointMotion>& motion) const {
  place(q, bodies, motion);
  move(v, bodies, motion);
}

void JointSpace::place(const Eigen::Ref<const Eigen::VectorXd>& q, SystemState& bodies, std::vector<JointMotion>& motion) const {
  motion.resize(tree_.size());
  for (std::size_t k = 0; k < tree_.size(); ++k) {
    const TreeJoint& t = tree_[k];
    const BodyState& P = state_of(bodies, t.parent);
    BodyState& C = bodies[static_cast<std::size_t>(t.child)];
    const FramePose fp = frame_pose(P, t.parent_frame);
    Mat3 R;
    Vec3 p;
    relative_transform(t.type, q.data() + t.q_offset, R, p);
    const Mat3 Fc = fp.R * R;
    const Vec3 o = fp.o + fp.R * p;
    const Mat3 A_C = Fc * t.child_frame.rotation.transpose();
    C.q = Quat(A_C).normalized();
    C.r = o - A_C * t.child_frame.origin;
    JointMotion& m = motion[k];
    m.point = o;
    motion_subspace(t.type, fp.R, Fc, m.H);
    constraint_subspace(t.type, fp.R, Fc, m.D);
  }
}

void JointSpace::move(const Eigen::Ref<const Eigen::VectorXd>& v, SystemState& bodies, std::vector<JointMotion>& motion) const {
  for (std::size_t k = 0; k < tree_.size(); ++k) {
    const TreeJoint& t = tree_[k];
    const BodyState& P = state_of(bodies, t.parent);
    BodyState& C = bodies[static_cast<std::size_t>(t.child)];
    JointMotion& m = motion[k];
    const auto vj = v.segment(t.v_offset, t.nv);
    const Vec6 Hv = m.H * vj;
    C.w = P.w + Hv.tail<3>();
    C.v = P.v + P.w.cross(m.point - P.r) + Hv.head<3>() + C.w.cross(C.r - m.point);
    subspace_rate(t, m.H, P.w, C.w, m.Hdot);
    m.kappa.noalias() = m.Hdot * vj;
    m.kappa.head<3>() += P.w.cross(Hv.head<3>());
  }
}

void JointSpace::subspace_rates(const SystemState& bodies, std::vector<JointMotion>& motion) const {
  for (std::size_t k = 0; k < tree_.size(); ++k) {
    const TreeJoint& t = tree_[k];
    subspace_rate(t, motion[k].H, state_of(bodies, t.parent).w, state_of(bodies, t.child).w, motion[k].Hdot);
  }
}

void JointSpace::position_rate(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                               Eigen::Ref<Eigen::VectorXd> qdot) const {
  for (const TreeJoint& t : tree_) {
    const double* vj = v.data() + t.v_offset;
    double* out = qdot.data() + t.q_offset;
    auto quaternion_rate = [](const double* Q, const double* w, double* Qdot) {  // 1/2 Q (x) [0; w]
      const Quat r = Quat(Q[0], Q[1], Q[2], Q[3]) * Quat(0.0, 0.5 * w[0], 0.5 * w[1], 0.5 * w[2]);
      Qdot[0] = r.w();
      Qdot[1] = r.x();
      Qdot[2] = r.y();
      Qdot[3] = r.z();
    };
    switch (t.type) {
      case JointType::Spherical: quaternion_rate(q.data() + t.q_offset, vj, out); break;
      case JointType::Free:
        for (int k = 0; k < 3; ++k) out[k] = vj[k];
        quaternion_rate(q.data() + t.q_offset + 3, vj + 3, out + 3);
        break;
      default:
        for (int k = 0; k < t.nv; ++k) out[k] = vj[k];
    }
  }
}

double JointSpace::normalize(Eigen::Ref<Eigen::VectorXd> q) const {
  double change = 0.0;
  for (const TreeJoint& t : tree_) {
    if (t.type != JointType::Spherical && t.type != JointType::Free) continue;
    auto Q = q.segment<4>(t.q_offset + (t.type == JointType::Free ? 3 : 0));
    const double norm = Q.norm();
    change = std::max(change, std::abs(norm - 1.0));
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
