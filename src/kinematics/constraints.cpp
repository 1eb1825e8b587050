// Joint constraint equations in absolute coordinates, built from three primitives (Haug 1989,
// Ch. 9): point coincidence, dot-1 (two body-fixed vectors perpendicular) and dot-2 (a body-fixed
// vector perpendicular to the vector between the joint points). Each primitive supplies its
// value, its Jacobian with respect to both body twists, and the quadratic velocity term Jdot V.
#include <cmath>
#include <stdexcept>
#include <type_traits>
#include <string>

#include "treedyn/kinematics.hpp"

namespace treedyn {
namespace {

/// Global geometry of one joint at the current state. The joint frames' axes only `with_axes`
/// (every joint but the spherical uses them), the rate of d only `with_rates` (gamma, Jdot).
struct JointGeometry {
  const BodyState* P;
  const BodyState* C;
  Mat3 axes_P, axes_C;  // joint-frame axes (columns), global
  Vec3 s_P, s_C;        // joint-frame origins relative to the centres of mass, global
  Vec3 d, d_dot;        // (r_C + s_C) - (r_P + s_P) and its rate

  [[gnu::always_inline]] JointGeometry(const Joint& j, const BodyState& p, const BodyState& c, bool with_axes = true,
                                       bool with_rates = true)
      : P(&p), C(&c) {
    const Mat3 A_P = p.q.toRotationMatrix(), A_C = c.q.toRotationMatrix();
    if (with_axes) {
      axes_P.noalias() = A_P * j.parent_frame.rotation;
      axes_C.noalias() = A_C * j.child_frame.rotation;
    }
    s_P.noalias() = A_P * j.parent_frame.origin;
    s_C.noalias() = A_C * j.child_frame.origin;
    d = (c.r + s_C) - (p.r + s_P);
    if (with_rates) d_dot = (c.v + c.w.cross(s_C)) - (p.v + p.w.cross(s_P));
  }
  /// Centripetal part of the joint points' relative acceleration.
  Vec3 centripetal() const { return C->w.cross(C->w.cross(s_C)) - P->w.cross(P->w.cross(s_P)); }
};

/// The point-coincidence rows Phi = d at `row` of a ConstraintBlock or a PointBlock, with
/// J_P = [-I, skew(s_P)], J_C = [I, -skew(s_C)] and gamma = -(centripetal part) as `parts` asks
/// (not Jdot). Phi_t of these rows is zero, as the block holds it.
template <class Block>
void point_rows(const JointGeometry& g, Block& b, int row, ConstraintParts parts) {
  b.phi.template segment<3>(row) = g.d;
  if (parts.jacobians) {
    b.J_P.template block<3, 3>(row, 0) = -Mat3::Identity();
    b.J_P.template block<3, 3>(row, 3) = skew(g.s_P);
    b.J_C.template block<3, 3>(row, 0) = Mat3::Identity();
    b.J_C.template block<3, 3>(row, 3) = -skew(g.s_C);
    if constexpr (std::is_same_v<Block, PointBlock>) {
      b.arm_P = g.s_P;
      b.arm_C = g.s_C;
    }
  }
  if (parts.gamma) b.gamma.template segment<3>(row) = -g.centripetal();
}

/// Appends rows to a block: Phi (and Phi_t = 0) always, the other parts as asked.
class RowWriter {
 public:
  RowWriter(ConstraintBlock& b, ConstraintParts parts) : b_(b), parts_(parts) {}
  void reserve(int n) {
    b_.phi.setZero(n);
    b_.phi_t.setZero(n);
    if (parts_.jacobians) {
      b_.J_P.setZero(n, 6);
      b_.J_C.setZero(n, 6);
    }
    if (parts_.gamma) b_.gamma.setZero(n);
    if (parts_.jdot) {
      b_.Jdot_P.setZero(n, 6);
      b_.Jdot_C.setZero(n, 6);
    }
    row_ = 0;
  }

  /// Phi = d (3 rows).
  void point(const JointGeometry& g) {
    point_rows(g, b_, row_, parts_);
    if (parts_.jdot) {
      b_.Jdot_P.block<3, 3>(row_, 3) = skew(g.P->w.cross(g.s_P));
      b_.Jdot_C.block<3, 3>(row_, 3) = -skew(g.C->w.cross(g.s_C));
    }
    row_ += 3;
  }

  /// Phi = a . b, a fixed in P, b fixed in C. Returns the row index.
  int dot1(const JointGeometry& g, const Vec3& a, const Vec3& b) {
    const Vec3& wP = g.P->w;
    const Vec3& wC = g.C->w;
    b_.phi(row_) = a.dot(b);
    if (parts_.jacobians) {
      b_.J_P.block<1, 3>(row_, 3) = a.cross(b).transpose();
      b_.J_C.block<1, 3>(row_, 3) = b.cross(a).transpose();
    }
    if (parts_.jdot) {
      const Vec3 a_dot = wP.cross(a), b_dot = wC.cross(b);
      b_.Jdot_P.block<1, 3>(row_, 3) = (a_dot.cross(b) + a.cross(b_dot)).transpose();
      b_.Jdot_C.block<1, 3>(row_, 3) = -b_.Jdot_P.block<1, 3>(row_, 3);
    }
    if (parts_.gamma) {
      const double jdot_v =
          wP.cross(wP.cross(a)).dot(b) + 2.0 * wP.cross(a).dot(wC.cross(b)) + a.dot(wC.cross(wC.cross(b)));
      b_.gamma(row_) = -jdot_v;
    }
    return row_++;
  }

  /// Phi = a . d, a fixed in P. Returns the row index.
  int dot2(const JointGeometry& g, const Vec3& a) {
    const Vec3& wP = g.P->w;
    b_.phi(row_) = a.dot(g.d);
    if (parts_.jacobians) {
      b_.J_P.block<1, 3>(row_, 0) = -a.transpose();
      b_.J_P.block<1, 3>(row_, 3) = a.cross(g.d + g.s_P).transpose();
      b_.J_C.block<1, 3>(row_, 0) = a.transpose();
      b_.J_C.block<1, 3>(row_, 3) = g.s_C.cross(a).transpose();
    }
    if (parts_.jdot) {
      const Vec3 a_dot = wP.cross(a), s_C_dot = g.C->w.cross(g.s_C);
      b_.Jdot_P.block<1, 3>(row_, 0) = -a_dot.transpose();
      b_.Jdot_P.block<1, 3>(row_, 3) = (a_dot.cross(g.d + g.s_P) + a.cross(g.d_dot + wP.cross(g.s_P))).transpose();
      b_.Jdot_C.block<1, 3>(row_, 0) = a_dot.transpose();
      b_.Jdot_C.block<1, 3>(row_, 3) = (s_C_dot.cross(a) + g.s_C.cross(a_dot)).transpose();
    }
    if (parts_.gamma) {
      const double jdot_v = wP.cross(wP.cross(a)).dot(g.d) + 2.0 * wP.cross(a).dot(g.d_dot) + a.dot(g.centripetal());
      b_.gamma(row_) = -jdot_v;
    }
    return row_++;
  }

  ConstraintBlock& block() { return b_; }

 private:
  ConstraintBlock& b_;
  ConstraintParts parts_;
  int row_ = 0;
};

Vec3 frame_axis(const JointGeometry& g, JointCoordinate::Axis axis) {
  switch (axis) {
    case JointCoordinate::Axis::ParentX: return g.axes_P.col(0);
    case JointCoordinate::Axis::ParentY: return g.axes_P.col(1);
    case JointCoordinate::Axis::ParentZ: return g.axes_P.col(2);
    case JointCoordinate::Axis::ChildX: return g.axes_C.col(0);
  }
  return Vec3::UnitZ();
}

double wrap_near(double angle, double reference) {
  return reference + std::remainder(angle - reference, 2.0 * M_PI);
}

}  // namespace

SystemState initial_state(const Model& model) {
  SystemState s(model.bodies.size());
  for (int i = 0; i < model.body_count(); ++i) s[static_cast<std::size_t>(i)] = initial_state(model, i);
  return s;
}

BodyState initial_state(const Model& model, int body) {
  BodyState s;
  if (body == kGround) return s;
  const Body& b = model.bodies[static_cast<std::size_t>(body)];
  s.r = b.position;
  s.q = b.orientation;
  s.v = b.velocity;
  s.w = b.angular_velocity;
  return s;
}

void joint_constraint(const Joint& joint, const BodyState& P, const BodyState& C, ConstraintBlock& out,
                      ConstraintParts parts) {
  const JointGeometry g(joint, P, C, joint.type != JointType::Spherical, parts.gamma || parts.jdot);
  out.parent = joint.parent;
  out.child = joint.child;
  RowWriter w(out, parts);
  w.reserve(joint_constraint_count(joint.type));
  if (joint.type == JointType::Spherical) {  // the one joint without axes
    w.point(g);
    return;
  }
  const Vec3 xP = g.axes_P.col(0), yP = g.axes_P.col(1), zP = g.axes_P.col(2);
  const Vec3 xC = g.axes_C.col(0), yC = g.axes_C.col(1);
  switch (joint.type) {
    case JointType::Revolute:
      w.point(g);
      w.dot1(g, zP, xC);
      w.dot1(g, zP, yC);
      break;
    case JointType::Prismatic:  // a cylindrical joint that cannot turn
    case JointType::Cylindrical:
      w.dot1(g, zP, xC);
      w.dot1(g, zP, yC);
      w.dot2(g, xP);
      w.dot2(g, yP);
      if (joint.type == JointType::Prismatic) w.dot1(g, xP, yC);
      break;
    case JointType::Universal:
      w.point(g);
      w.dot1(g, zP, xC);
      break;
    case JointType::Spherical: break;  // above
    case JointType::Planar:
      w.dot1(g, zP, xC);
      w.dot1(g, zP, yC);
      w.dot2(g, zP);
      break;
    case JointType::Fixed:
      w.point(g);
      w.dot1(g, zP, xC);
      w.dot1(g, zP, yC);
      w.dot1(g, xP, yC);
      break;
    case JointType::Free: break;
  }
}

void driver_constraint(const Driver& driver, const Joint& joint, double t, const BodyState& P, const BodyState& C,
                       ConstraintBlock& out, ConstraintParts parts) {
  const JointGeometry g(joint, P, C, true, parts.gamma || parts.jdot);
  out.parent = joint.parent;
  out.child = joint.child;
  RowWriter w(out, parts);
  w.reserve(1);
  const JointCoordinate coord = joint_coordinates(joint.type)[static_cast<std::size_t>(driver.coordinate)];
  const double f = driver.function.value(t);
  const double f1 = driver.function.first_derivative(t);
  const double f2 = driver.function.second_derivative(t);
  if (coord.kind == JointCoordinate::Kind::Translation) {
    // Phi = a . d - f(t)
    w.dot2(g, frame_axis(g, coord.axis));
    out.phi(0) -= f;
    out.phi_t(0) = -f1;
    if (parts.gamma) out.gamma(0) += f2;
    return;
  }
  // Rotation about z_P of x_C by angle f(t): Phi = u . x_C with u = cos f y_P - sin f x_P.
  const Vec3 xP = g.axes_P.col(0), yP = g.axes_P.col(1), xC = g.axes_C.col(0);
  const double c = std::cos(f), s = std::sin(f);
  const Vec3 u = c * yP - s * xP;
  const Vec3 du = -s * yP - c * xP;  // du/df
  w.dot1(g, u, xC);
  out.phi_t(0) = f1 * du.dot(xC);
  // u also turns with time: d/dt (u x x_C) gains f1 du x x_C.
  if (parts.jdot) {
    out.Jdot_P.block<1, 3>(0, 3) += f1 * du.cross(xC).transpose();
    out.Jdot_C.block<1, 3>(0, 3) -= f1 * du.cross(xC).transpose();
  }
  // Time-dependent part of Phi_ddot beyond the dot-1 term:
  // 2 f1 (w_P x du).x_C + 2 f1 du.(w_C x x_C) + f2 du.x_C - f1^2 u.x_C
  if (parts.gamma)
    out.gamma(0) -= 2.0 * f1 * P.w.cross(du).dot(xC) + 2.0 * f1 * du.dot(C.w.cross(xC)) + f2 * du.dot(xC) -
                    f1 * f1 * u.dot(xC);
}

ConstraintSet::ConstraintSet(const Model& model) : model_(&model) {
  for (const Joint& j : model.joints) {
    offsets_.push_back(rows_);
    point_.push_back(j.type == JointType::Spherical ? 1 : 0);
    rows_ += joint_constraint_count(j.type);
  }
  for (std::size_t d = 0; d < model.drivers.size(); ++d) {
    offsets_.push_back(rows_);
    point_.push_back(0);  // a driver's block
    rows_ += 1;
  }
}

void ConstraintSet::evaluate(double t, const SystemState& state, std::vector<ConstraintBlock>& blocks,
                             ConstraintParts parts) const {
  blocks.resize(offsets_.size());
  for (int k = 0; k < block_count(); ++k) evaluate_block(k, t, state, blocks[static_cast<std::size_t>(k)], parts);
}

void ConstraintSet::evaluate_block(int k, double t, const SystemState& state, ConstraintBlock& out,
                                   ConstraintParts parts) const {
  const Joint& j = model_->joints[static_cast<std::size_t>(joint_of_block(k))];
  evaluate_block(k, t, state_of(state, j.parent), state_of(state, j.child), out, parts);
}

void ConstraintSet::evaluate_block(int k, double t, const BodyState& P, const BodyState& C, ConstraintBlock& out,
                                   ConstraintParts parts) const {
  const Model& m = *model_;
  const Joint& j = m.joints[static_cast<std::size_t>(joint_of_block(k))];
  if (k < m.joint_count()) joint_constraint(j, P, C, out, parts);
  else driver_constraint(m.drivers[static_cast<std::size_t>(k - m.joint_count())], j, t, P, C, out, parts);
}

void ConstraintSet::evaluate_point(int k, const SystemState& state, PointBlock& out, ConstraintParts parts) const {
  if (k < 0 || k >= block_count()) throw std::out_of_range("ConstraintSet::evaluate_point: no block " + std::to_string(k));
  const Joint& j = model_->joints[static_cast<std::size_t>(joint_of_block(k))];
  if (!is_point(k))
    throw std::invalid_argument("ConstraintSet::evaluate_point: block " + std::to_string(k) + " (joint '" + j.name +
                                "') is not a spherical joint's own block");
  if (parts.jdot) throw std::invalid_argument("ConstraintSet::evaluate_point: a PointBlock holds no Jdot (joint '" + j.name + "')");
  const JointGeometry g(j, state_of(state, j.parent), state_of(state, j.child), false, parts.gamma);
  out.parent = j.parent;
  out.child = j.child;
  point_rows(g, out, 0, parts);
}

int ConstraintSet::joint_of_block(int k) const {
  const Model& m = *model_;
  return k < m.joint_count() ? k : m.drivers[static_cast<std::size_t>(k - m.joint_count())].joint;
}

void ConstraintSet::stack(const std::vector<ConstraintBlock>& blocks, Eigen::SparseMatrix<double>& J,
                          Eigen::VectorXd& phi, Eigen::VectorXd& phi_t, Eigen::VectorXd& gamma) const {
  std::vector<Eigen::Triplet<double>> entries;
  entries.reserve(static_cast<std::size_t>(12 * rows_));
  phi.resize(rows_);
  phi_t.resize(rows_);
  gamma.resize(rows_);
  for (std::size_t k = 0; k < blocks.size(); ++k) {
    const ConstraintBlock& b = blocks[k];
    const int o = offsets_[k], m = b.size();
    phi.segment(o, m) = b.phi;
    phi_t.segment(o, m) = b.phi_t;
    gamma.segment(o, m) = b.gamma;
    for (int r = 0; r < m; ++r)
      for (int c = 0; c < 6; ++c) {
        if (b.parent != kGround && b.J_P(r, c) != 0.0) entries.emplace_back(o + r, 6 * b.parent + c, b.J_P(r, c));
        if (b.child != kGround && b.J_C(r, c) != 0.0) entries.emplace_back(o + r, 6 * b.child + c, b.J_C(r, c));
      }
  }
  J.resize(rows_, 6 * model_->body_count());
  J.setFromTriplets(entries.begin(), entries.end());
}

CoordinateMeasure measure_coordinate(const Joint& joint, int coordinate, const BodyState& P, const BodyState& C,
                                     const double* reference) {
  const JointGeometry g(joint, P, C);
  const JointCoordinate coord = joint_coordinates(joint.type)[static_cast<std::size_t>(coordinate)];
  CoordinateMeasure m;
  m.axis = frame_axis(g, coord.axis);
  m.point = C.r + g.s_C;
  if (coord.kind == JointCoordinate::Kind::Translation) {
    m.rotation = false;
    m.value = m.axis.dot(g.d);
    m.rate = m.axis.dot(g.d_dot) + P.w.cross(m.axis).dot(g.d);
    return m;
  }
  m.rotation = true;
  const Vec3 xP = g.axes_P.col(0), yP = g.axes_P.col(1), zP = g.axes_P.col(2);
  const Vec3 xC = g.axes_C.col(0), yC = g.axes_C.col(1);
  m.value = coord.axis == JointCoordinate::Axis::ChildX ? std::atan2(zP.dot(yC), zP.cross(xC).dot(yC))
                                                        : std::atan2(yP.dot(xC), xP.dot(xC));
  if (reference) m.value = wrap_near(m.value, *reference);
  m.rate = m.axis.dot(C.w - P.w);
  return m;
}

}  // namespace treedyn
