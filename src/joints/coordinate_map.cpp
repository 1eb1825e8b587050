// The public joint coordinates; see include/treedyn/coordinate_map.hpp.
#include "treedyn/coordinate_map.hpp"

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>
#include <string_view>

#include "joint_kinematics.hpp"

namespace treedyn {
namespace {

using namespace joint_kinematics;

/// Name of entry c of a joint type's q (rate: false) or qd (true), as many as joint_nq, joint_nv.
const char* coordinate_name(JointType type, bool rate, int c) {
  static constexpr const char* kAngle[] = {"angle"}, *kD[] = {"d"}, *kCylindrical[] = {"angle", "d"},
                               *kUniversal[] = {"angle1", "angle2"}, *kQuaternion[] = {"qw", "qx", "qy", "qz"},
                               *kW[] = {"wx", "wy", "wz"}, *kPlanar[] = {"x", "y", "angle"},
                               *kFreeQ[] = {"x", "y", "z", "qw", "qx", "qy", "qz"},
                               *kFreeV[] = {"vx", "vy", "vz", "wx", "wy", "wz"};
  const auto i = static_cast<std::size_t>(c);
  switch (type) {
    case JointType::Revolute: return kAngle[i];
    case JointType::Prismatic: return kD[i];
    case JointType::Cylindrical: return kCylindrical[i];
    case JointType::Universal: return kUniversal[i];
    case JointType::Spherical: return rate ? kW[i] : kQuaternion[i];
    case JointType::Planar: return kPlanar[i];
    case JointType::Fixed: break;
    case JointType::Free: return rate ? kFreeV[i] : kFreeQ[i];
  }
  throw std::logic_error("CoordinateMap: a fixed joint has no coordinates");
}

/// SI unit of a coordinate (or of its rate) named as above.
const char* unit_of(std::string_view coordinate, bool rate) {
  if (coordinate.starts_with("angle")) return rate ? "rad/s" : "rad";
  if (coordinate == "d" || coordinate == "x" || coordinate == "y" || coordinate == "z") return rate ? "m/s" : "m";
  if (coordinate[0] == 'q') return "-";  // quaternion components
  if (coordinate[0] == 'w') return "rad/s";
  return "m/s";                           // vx, vy, vz
}

/// x moved by a whole number of turns to lie within half a turn of `near`.
double unwrap(double x, double near) { return near + std::remainder(x - near, 2.0 * std::numbers::pi); }

}  // namespace

const Frame CoordinateMap::kIdentityFrame{};

CoordinateMap::CoordinateMap(const Model& model, const Topology& topology)
    : CoordinateMap(std::make_shared<const Model>(model), topology) {}

CoordinateMap::CoordinateMap(std::shared_ptr<const Model> model_ptr, const Topology& topology) : model_(std::move(model_ptr)) {
  if (!model_) throw std::invalid_argument("CoordinateMap: no model (a null pointer)");
  const Model& model = *model_;
  if (topology.body_count() != model.body_count())
    throw std::invalid_argument("CoordinateMap: the topology is of another model (" + std::to_string(topology.body_count()) +
                                " bodies, not " + std::to_string(model.body_count()) + ")");
  entries_.reserve(model.joints.size() + topology.floating_subsystems().size());
  reversed_.reserve(entries_.capacity());
  auto add = [&](Entry e) {
    e.nq = joint_nq(e.type);
    e.nv = joint_nv(e.type);
    e.q_offset = nq_;
    e.v_offset = nv_;
    nq_ += e.nq;
    nv_ += e.nv;
    has_angles_ = has_angles_ || angle_entries(e.type) != 0;
    entries_.push_back(e);
    reversed_.push_back(0);
  };
  std::vector<int> entry_of_joint(model.joints.size(), -1);
  for (int j = 0; j < model.joint_count(); ++j) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    Entry e;
    e.name_ = &joint.name;
    e.type = joint.type;
    e.joint = j;
    e.parent = joint.parent;
    e.child = joint.child;
    entry_of_joint[static_cast<std::size_t>(j)] = static_cast<int>(entries_.size());
    add(e);
  }
  for (const auto& subsystem : topology.floating_subsystems()) {
    Entry e;
    e.name_ = &model.bodies[static_cast<std::size_t>(subsystem.front())].name;
    e.type = JointType::Free;
    e.parent = kGround;
    e.child = subsystem.front();
    placement_.push_back(static_cast<int>(entries_.size()));  // roots first: they depend on nothing
    add(e);
  }
  for (int j : topology.loop_joints()) entries_[static_cast<std::size_t>(entry_of_joint[static_cast<std::size_t>(j)])].loop = true;
  for (int j : topology.tree_joints()) {  // breadth first: a body's tree parent is placed before it
    const int k = entry_of_joint[static_cast<std::size_t>(j)];
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    reversed_[static_cast<std::size_t>(k)] = topology.tree_joint_of(joint.child) != j;
    placement_.push_back(k);
  }
}

std::pair<const CoordinateMap::Entry*, int> CoordinateMap::locate(int i, bool rate) const {
  const int size = rate ? nv_ : nq_;
  if (i < 0 || i >= size)
    throw std::out_of_range("CoordinateMap: no entry " + std::to_string(i) + " of " + (rate ? "qd" : "q") + " (it has " +
                            std::to_string(size) + ")");
  // The entries' offsets ascend (a fixed joint's equals its successor's): the last entry starting at or before i.
  const auto it = std::upper_bound(entries_.begin(), entries_.end(), i,
                                   [rate](int x, const Entry& e) { return x < (rate ? e.v_offset : e.q_offset); });
  const Entry& e = *(it - 1);
  return {&e, i - (rate ? e.v_offset : e.q_offset)};
}

std::string CoordinateMap::q_name(int i) const {
  const auto [e, c] = locate(i, false);
  return e->name() + "." + coordinate_name(e->type, false, c);
}
std::string CoordinateMap::qd_name(int i) const {
  const auto [e, c] = locate(i, true);
  return e->name() + "." + coordinate_name(e->type, true, c);
}
const char* CoordinateMap::q_unit(int i) const {
  const auto [e, c] = locate(i, false);
  return unit_of(coordinate_name(e->type, false, c), false);
}
const char* CoordinateMap::qd_unit(int i) const {
  const auto [e, c] = locate(i, true);
  return unit_of(coordinate_name(e->type, true, c), true);
}
std::vector<std::string> CoordinateMap::q_names() const {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(nq_));
  for (int i = 0; i < nq_; ++i) out.push_back(q_name(i));
  return out;
}
std::vector<std::string> CoordinateMap::qd_names() const {
  std::vector<std::string> out;
  out.reserve(static_cast<std::size_t>(nv_));
  for (int i = 0; i < nv_; ++i) out.push_back(qd_name(i));
  return out;
}

const CoordinateMap::Entry& CoordinateMap::entry(const std::string& name) const {
  for (const Entry& e : entries_)
    if (e.name() == name) return e;
  std::string known;
  for (std::size_t k = 0; k < entries_.size() && k < 12; ++k) known += (k ? ", " : "") + entries_[k].name();
  if (entries_.size() > 12) known += ", ...";
  throw std::invalid_argument("unknown joint '" + name + "' (the model's joints" +
                              (entries_.empty() ? std::string(": none") : ": " + known) + ")");
}

void CoordinateMap::measure(const SystemState& bodies, Eigen::Ref<Eigen::VectorXd> q, Eigen::Ref<Eigen::VectorXd> qd,
                            const Eigen::VectorXd* reference) const {
  // Without angles no entry reads the reference (which may then be empty).
  if (reference && has_angles_ && reference->size() != nq_)
    throw std::invalid_argument("CoordinateMap::measure: the reference has " + std::to_string(reference->size()) +
                                " values, not nq = " + std::to_string(nq_));
  const double* r = reference && has_angles_ ? reference->data() : nullptr;
  for (const Entry& e : entries_)
    measure(bodies, e, q.data() + e.q_offset, qd.data() + e.v_offset, r ? r + e.q_offset : nullptr);
}

void CoordinateMap::measure(const SystemState& bodies, const Entry& e, double* q, double* qd, const double* reference) const {
  const BodyState& P = state_of(bodies, e.parent);
  const BodyState& C = state_of(bodies, e.child);
  const FramePose fp = frame_pose(P, parent_frame(e)), fc = frame_pose(C, child_frame(e));
  if (q) {
    coordinates_of(e.type, fp.R.transpose() * fc.R, fp.R.transpose() * (fc.o - fp.o), q);
    if (reference)
      for (unsigned bits = angle_entries(e.type), k = 0; bits; bits >>= 1, ++k)
        if (bits & 1u) q[k] = unwrap(q[k], reference[k]);
  }
  if (!qd || e.nv == 0) return;
  SubspaceMatrix H;
  motion_subspace(e.type, fp.R, fc.R, H);
  Eigen::Map<Eigen::VectorXd>(qd, e.nv).noalias() = H.transpose() * relative_twist(P, C, fc.o);
}

void CoordinateMap::track_angles(const SystemState& bodies, Eigen::VectorXd& reference) const {
  double q[7];
  for (const Entry& e : entries_) {
    const unsigned angles = angle_entries(e.type);
    if (!angles) continue;
    const FramePose fp = frame_pose(state_of(bodies, e.parent), parent_frame(e));
    const FramePose fc = frame_pose(state_of(bodies, e.child), child_frame(e));
    coordinates_of(e.type, fp.R.transpose() * fc.R, fp.R.transpose() * (fc.o - fp.o), q);
    for (unsigned bits = angles, k = 0; bits; bits >>= 1, ++k)
      if (bits & 1u) {
        double& r = reference(e.q_offset + static_cast<int>(k));
        r = unwrap(q[k], r);
      }
  }
}

void CoordinateMap::place(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& qd,
                          SystemState& out) const {
  out.assign(model_->bodies.size(), BodyState{});
  for (int k : placement_) {
    const Entry& e = entries_[static_cast<std::size_t>(k)];
    Mat3 R;
    Vec3 p;
    relative_transform(e.type, q.data() + e.q_offset, R, p);
    SubspaceMatrix H;
    if (!reversed_[static_cast<std::size_t>(k)]) {  // the child from its parent
      const BodyState& P = state_of(out, e.parent);
      BodyState& C = out[static_cast<std::size_t>(e.child)];
      const FramePose fp = frame_pose(P, parent_frame(e));
      const Mat3 Fc = fp.R * R;
      const Vec3 o = fp.o + fp.R * p;
      const Mat3 A = Fc * child_frame(e).rotation.transpose();
      C.q = Quat(A).normalized();
      C.r = o - A * child_frame(e).origin;
      motion_subspace(e.type, fp.R, Fc, H);
      const Vec6 Hv = H * qd.segment(e.v_offset, e.nv);
      C.w = P.w + Hv.tail<3>();
      C.v = P.v + P.w.cross(o - P.r) + Hv.head<3>() + C.w.cross(C.r - o);
    } else {  // the parent from its child: Fp = Fc R', o_p = o_c - Fp p; V_P(o) = V_C(o) - H qd
      const BodyState& C = state_of(out, e.child);
      BodyState& P = out[static_cast<std::size_t>(e.parent)];
      const FramePose fc = frame_pose(C, child_frame(e));
      const Mat3 Fp = fc.R * R.transpose();
      const Vec3 o = fc.o;
      const Mat3 A = Fp * parent_frame(e).rotation.transpose();
      P.q = Quat(A).normalized();
      P.r = (o - Fp * p) - A * parent_frame(e).origin;
      motion_subspace(e.type, Fp, fc.R, H);
      const Vec6 Hv = H * qd.segment(e.v_offset, e.nv);
      P.w = C.w - Hv.tail<3>();
      const Vec3 v_o = C.v + C.w.cross(o - C.r) - Hv.head<3>();
      P.v = v_o + P.w.cross(P.r - o);
    }
  }
}

void CoordinateMap::add_effort_wrenches(const SystemState& bodies, const Eigen::Ref<const Eigen::VectorXd>& effort,
                                        std::vector<Vec6>& wrenches) const {
  SubspaceMatrix H;
  for (const Entry& e : entries_) {
    if (e.nv == 0) continue;
    const auto tau = effort.segment(e.v_offset, e.nv);
    if ((tau.array() == 0.0).all()) continue;
    const BodyState& P = state_of(bodies, e.parent);
    const BodyState& C = state_of(bodies, e.child);
    const FramePose fp = frame_pose(P, parent_frame(e)), fc = frame_pose(C, child_frame(e));
    motion_subspace(e.type, fp.R, fc.R, H);
    const Vec6 W = H * tau;  // [force; moment about o], o the child frame's origin
    const Vec3 F = W.head<3>(), M = W.tail<3>();
    Vec6& on_child = wrenches[static_cast<std::size_t>(e.child)];
    on_child.head<3>() += F;
    on_child.tail<3>() += M + (fc.o - C.r).cross(F);
    if (e.parent != kGround) {
      Vec6& on_parent = wrenches[static_cast<std::size_t>(e.parent)];
      on_parent.head<3>() -= F;
      on_parent.tail<3>() -= M + (fc.o - P.r).cross(F);
    }
  }
}

}  // namespace treedyn
