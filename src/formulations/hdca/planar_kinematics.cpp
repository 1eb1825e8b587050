#include "planar_kinematics.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace treedyn::hdca {
namespace {

constexpr double kPlanarTolerance = 1e-9;

/// Angle about z of a rotation whose z axis is +-z (and the sign of that axis).
std::pair<double, double> planar_angle(const Mat3& R) { return {std::atan2(R(1, 0), R(0, 0)), R(2, 2) > 0 ? 1.0 : -1.0}; }

}  // namespace

template <class S>
typename PlanarKinematics<S>::Point PlanarKinematics<S>::rotate(S angle, const Point& x) {
  const S c = std::cos(angle), s = std::sin(angle);
  return Point(c * x.x() - s * x.y(), s * x.x() + c * x.y());
}

template <class S>
void PlanarKinematics<S>::check_planar(const Model& model, const Topology& topology) const {
  auto fail = [](const std::string& what) { throw std::invalid_argument("planar hdca: " + what); };
  if (std::abs(model.gravity.z()) > kPlanarTolerance) fail("gravity has a z component; the plane of motion is xy");
  for (const Body& b : model.bodies) {
    if (std::abs(b.orientation.x()) > kPlanarTolerance || std::abs(b.orientation.y()) > kPlanarTolerance)
      fail("body '" + b.name + "' is not turned about z only");
    if (std::abs(b.velocity.z()) > kPlanarTolerance || b.angular_velocity.head<2>().cwiseAbs().maxCoeff() > kPlanarTolerance)
      fail("body '" + b.name + "' moves out of the xy plane");
  }
  if (!topology.floating_subsystems().empty())
    fail("body '" + model.body_name(topology.floating_subsystems().front().front()) + "' is not connected to ground");
  const auto& loops = topology.loop_joints();
  for (const Joint& j : model.joints) {
    const bool loop = std::find(loops.begin(), loops.end(), model.joint_index(j.name)) != loops.end();
    const double zp = j.parent_frame.rotation(2, 2), zc = j.child_frame.rotation(2, 2);
    if (j.type == JointType::Revolute) {
      if (std::abs(std::abs(zp) - 1.0) > kPlanarTolerance || std::abs(zp - zc) > kPlanarTolerance)
        fail("revolute joint '" + j.name + "' does not turn about z");
    } else if (j.type == JointType::Prismatic && !loop) {
      const Mat3 relative = j.parent_frame.rotation * j.child_frame.rotation.transpose();
      if (std::abs(zp) > kPlanarTolerance || std::abs(relative(2, 2) - 1.0) > kPlanarTolerance)
        fail("prismatic joint '" + j.name + "' does not slide in the xy plane");
    } else {
      fail(std::string(to_string(j.type)) + " joint '" + j.name + "' is not supported" +
           (loop ? " as a loop-closing joint (planar hdca closes loops at revolute joints)" : " (revolute and prismatic joints only)"));
    }
  }
}

template <class S>
PlanarKinematics<S>::PlanarKinematics(const Model& model, const Topology& topology, const ExternalLoads* external)
    : model_(model),
      joints_(model, topology),
      loads_(model, external),
      sides_(model.joints.size()),
      tree_index_(model.joints.size(), -1),
      loop_joints_(topology.loop_joints()),
      loop_slot_(jc::loop_slots(model.joint_count(), loop_joints_)),
      tree_geometry_(joints_.tree().size()),
      loop_geometry_(loop_joints_.size()),
      z_(model.bodies.size()),
      mass_(model.bodies.size()),
      J_(model.bodies.size()),
      r_(model.bodies.size(), Point::Zero()),
      tree_point_(joints_.tree().size(), Point::Zero()),
      loop_point_(loop_joints_.size(), Point::Zero()),
      theta_(model.bodies.size(), S(0)),
      inverse_inertia_(model.bodies.size()),
      H_(joints_.tree().size()),
      D_(joints_.tree().size()),
      Hdot_(joints_.tree().size()),
      loop_rows_(loop_joints_.size()),
      applied_(model.bodies.size(), Vec::Zero()),
      V_(model.bodies.size(), Vec::Zero()),
      bodies_(initial_state(model)),
      wrenches_(model.bodies.size()) {
  check_planar(model, topology);
  for (std::size_t b = 0; b < model.bodies.size(); ++b) {
    z_[b] = model.bodies[b].position.z();
    mass_[b] = S(model.bodies[b].mass);
    J_[b] = S(model.bodies[b].inertia(2, 2));
    inverse_inertia_[b] = {S(1) / mass_[b], S(1) / J_[b]};
  }
  for (std::size_t k = 0; k < joints_.tree().size(); ++k) {
    const TreeJoint& t = joints_.tree()[k];
    TreeGeometry& g = tree_geometry_[k];
    const Frame parent_frame = joints_.parent_frame(static_cast<int>(k)), child_frame = joints_.child_frame(static_cast<int>(k));
    const auto [phi_P, sign] = planar_angle(parent_frame.rotation);
    g.s_P = parent_frame.origin.head<2>().cast<S>();
    g.s_C = child_frame.origin.head<2>().cast<S>();
    g.phi_P = S(phi_P);
    g.phi_C = S(planar_angle(child_frame.rotation).first);
    g.sign = S(sign);
    g.revolute = t.type == JointType::Revolute;
    g.a_P = parent_frame.rotation.col(2).head<2>().cast<S>();
    g.c = S(planar_angle(parent_frame.rotation * child_frame.rotation.transpose()).first);
    const bool revolute = g.revolute;
    H_[k].setZero(3, 1);
    D_[k].setZero(3, 2);
    Hdot_[k].setZero(3, 1);
    if (revolute) {
      D_[k](0, 0) = D_[k](1, 1) = S(1);
      H_[k](2, 0) = g.sign;
    }
    tree_index_[static_cast<std::size_t>(t.joint)] = static_cast<int>(k);
    sides_[static_cast<std::size_t>(t.joint)] = {t.parent, t.child, 2};
  }
  for (int j : loop_joints_) {
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    loop_geometry_[slot(j)] = {joint.parent_frame.origin.head<2>().cast<S>(), joint.child_frame.origin.head<2>().cast<S>()};
    sides_[static_cast<std::size_t>(j)] = {joint.parent, joint.child, 2};
    Rows& rows = loop_rows_[slot(j)];
    rows.reset(2);
    auto G_c = rows.edit_G_c();  // views of the rows' storage
    auto G_p = rows.edit_G_p();
    G_c(0, 0) = G_c(1, 1) = S(1);   // the velocity of the child's frame origin o ...
    G_p(0, 0) = G_p(1, 1) = S(-1);  // ... minus the parent's at o (plus Omega Phi w_P)
  }
}

template <class S>
void PlanarKinematics<S>::place(const Eigen::Ref<const Eigen::VectorXd>& q, const Parallel&) {
  for (std::size_t k = 0; k < joints_.tree().size(); ++k) {
    const TreeJoint& t = joints_.tree()[k];
    const TreeGeometry& g = tree_geometry_[k];
    const bool grounded = t.parent == kGround;
    const S theta_P = grounded ? S(0) : theta_[static_cast<std::size_t>(t.parent)];
    const Point r_P = grounded ? Point::Zero() : r_[static_cast<std::size_t>(t.parent)];
    const S qk = S(q(t.q_offset));
    S& theta_C = theta_[static_cast<std::size_t>(t.child)];
    Point& o = tree_point_[k];
    o = r_P + rotate(theta_P, g.s_P);
    if (g.revolute) {
      theta_C = theta_P + g.phi_P + g.sign * qk - g.phi_C;
    } else {
      theta_C = theta_P + g.c;
      const Point a = rotate(theta_P, g.a_P);
      o += qk * a;
      H_[k].template topRows<2>() = a;
      D_[k].col(0) << G::turn(S(1), a), S(0);
      D_[k](2, 1) = S(1);
    }
    r_[static_cast<std::size_t>(t.child)] = o - rotate(theta_C, g.s_C);
  }
  for (int j : loop_joints_) {  // Phi = o_C - o_P;  G_p = [-I, Omega Phi] (see the header)
    const Joint& joint = model_.joints[static_cast<std::size_t>(j)];
    const LoopGeometry& g = loop_geometry_[slot(j)];
    const int c = joint.child, p = joint.parent;
    const Point o_C = r_[static_cast<std::size_t>(c)] + rotate(theta_[static_cast<std::size_t>(c)], g.s_C);
    const Point o_P = p == kGround ? g.s_P : Point(r_[static_cast<std::size_t>(p)] + rotate(theta_[static_cast<std::size_t>(p)], g.s_P));
    loop_point_[slot(j)] = o_C;
    loop_rows_[slot(j)].edit_G_p().template block<2, 1>(0, 2) = p == kGround ? Point::Zero() : G::turn(S(1), o_C - o_P);
  }
}

template <class S>
void PlanarKinematics<S>::move(double t, std::span<const Vec> V) {
  for (std::size_t b = 0; b < V.size(); ++b) {
    V_[b] = V[b];
    BodyState& s = bodies_[b];
    s.r << double(r_[b].x()), double(r_[b].y()), z_[b];
    s.q = Quat(Eigen::AngleAxisd(double(theta_[b]), Vec3::UnitZ()));
    s.v << double(V[b].x()), double(V[b].y()), 0.0;
    s.w << 0.0, 0.0, double(V[b].z());
  }
  for (std::size_t k = 0; k < joints_.tree().size(); ++k) {  // prismatic axes turn with the parent
    const TreeJoint& tj = joints_.tree()[k];
    if (tree_geometry_[k].revolute) continue;
    const S w_P = tj.parent == kGround ? S(0) : V[static_cast<std::size_t>(tj.parent)].z();
    Hdot_[k].template topRows<2>() = G::turn(w_P, H_[k].template topRows<2>());
  }
  loads_.evaluate(t, bodies_, wrenches_);
  for (std::size_t b = 0; b < V.size(); ++b)
    applied_[b] = Vec(S(wrenches_[b].x()), S(wrenches_[b].y()), S(wrenches_[b](5)));
}

template <class S>
void PlanarKinematics<S>::loop_rate_loads(int j, const Vec& sigma, Vec& on_parent, Vec& on_child) const {
  // Jdot_C' sigma = [0; 0; -w_C (R_C s_C) . sigma],  Jdot_P' sigma = [0; 0; w_P (R_P s_P) . sigma]
  const Joint& joint = model_.joints[static_cast<std::size_t>(j)];
  const LoopGeometry& g = loop_geometry_[slot(j)];
  const auto c = static_cast<std::size_t>(joint.child);
  on_child = Vec(S(0), S(0), -V_[c].z() * rotate(theta_[c], g.s_C).dot(sigma.template head<2>()));
  on_parent = Vec::Zero();
  if (joint.parent != kGround) {
    const auto p = static_cast<std::size_t>(joint.parent);
    on_parent.z() = V_[p].z() * rotate(theta_[p], g.s_P).dot(sigma.template head<2>());
  }
}

template <class S>
typename PlanarKinematics<S>::Vec PlanarKinematics<S>::momentum(int b, const Vec& V) const {
  const auto i = static_cast<std::size_t>(b);
  return Vec(mass_[i] * V.x(), mass_[i] * V.y(), J_[i] * V.z());
}

template class PlanarKinematics<double>;
template class PlanarKinematics<float>;

}  // namespace treedyn::hdca
