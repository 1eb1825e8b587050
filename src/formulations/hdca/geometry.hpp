// The algebra of HDCA's per-body kernels, written once for spatial (Dim = 6: [v; w], points in
// 3-D) and planar (Dim = 3: [vx; vy; w], points in the plane) vectors, on any scalar.
//
// A load (force, momentum) L = [f; m] is "at" a point: m is its moment about that point. A twist
// V = [v; w] is at a point: v is that point's velocity. Shift matrices (paper 001, Eq. 14; paper
// 004, Eq. 1) move them:
//   shift_load(L, d)   = [f; m + d x f]      the load at a point y of a load L at x, d = x - y
//   shift_twist(V, d)  = [v + w x d; w]      the twist at y of a twist V at x,     d = y - x
// so S(l) L = shift_load(L, l) and S(l)' V = shift_twist(V, l) for a handle at l from the centre
// of mass. Sdot(l) L = [0; ldot x f], the rate of S(l) L at fixed L (paper 001, Eqs. 50-53),
// reads only L's force f: sub_shift_rate(R, ldot, f) takes it from a Load R (a sum by halves).
//
// In the plane, a x b = a_x b_y - a_y b_x (a scalar) and w x d = w Omega d (paper 004, Eq. 2).
#pragma once

#include <span>

#include "../common/joint_tree.hpp"
#include "treedyn/dc_core.hpp"
#include "treedyn/spatial.hpp"

namespace treedyn::hdca {

template <class S, int Dim>
struct Geometry;

template <class S>
struct Geometry<S, 6> {
  using Vec = Vec6T<S>;
  using Point = Vec3T<S>;
  struct InverseInertia {  // M^-1 = diag(I / m, J^-1), J global
    S inverse_mass = S(0);
    Mat3T<S> J_inverse = Mat3T<S>::Zero();
  };

  // (Halves are assigned as fixed-size blocks: a comma initializer's dynamic-size blocks make GCC 12
  // warn, wrongly, of SIMD loads past a float 3-vector's end.)
  static Vec shift_load(const Vec& L, const Point& d) {
    Vec out;
    out.template head<3>() = L.template head<3>();
    out.template tail<3>() = L.template tail<3>() + d.cross(L.template head<3>());
    return out;
  }
  /// P += shift_load(L, d), in place and by halves: summing the 6-vector that shift_load builds
  /// in two halves read it across them, which stalled on its stores (the same numbers).
  static void add_shifted_load(Vec& P, const Vec& L, const Point& d) {
    P.template head<3>() += L.template head<3>();
    P.template tail<3>() += L.template tail<3>() + d.cross(L.template head<3>());
  }
  /// V_rel -= shift_twist(V, d), in place and by halves (as add_shifted_load).
  static void sub_shifted_twist(Vec& V_rel, const Vec& V, const Point& d) {
    V_rel.template head<3>() -= point_velocity(V, d);
    V_rel.template tail<3>() -= V.template tail<3>();
  }
  /// A load summed by halves, its force f and its moment m, and stored once: a 6-vector summed
  /// in place is written by 3-vector halves and read back by pairs, and the pair across the
  /// halves cannot be forwarded from the stores just made (docs/benchmarks.md, "Session 25").
  struct Load {
    Point f = Point::Zero();
    Point m = Point::Zero();
  };
  static Load halves(const Vec& L) { return {L.template head<3>(), L.template tail<3>()}; }
  static void store(const Load& P, Vec& out) {
    out.template head<3>() = P.f;
    out.template tail<3>() = P.m;
  }
  /// P += shift_load(sign L, d) for sign = +-1 (exact: the same numbers as with sign L made first).
  static void add_shifted_load(Load& P, S sign, const Vec& L, const Point& d) {
    const Point f = sign * L.template head<3>();
    P.f += f;
    P.m += sign * L.template tail<3>() + d.cross(f);
  }
  /// P += shift_load(L, d).
  static void add_shifted_load(Load& P, const Vec& L, const Point& d) {
    P.f += L.template head<3>();
    P.m += L.template tail<3>() + d.cross(L.template head<3>());
  }
  /// R -= Sdot(l) L = [0; ldot x f] from L's force f: its zero half leaves R's as it is.
  static void sub_shift_rate(Load& R, const Point& ldot, const Point& f) { R.m -= ldot.cross(f); }
  /// out = M^-1 P (apply's numbers).
  static void apply(const InverseInertia& Mi, const Load& P, Vec& out) {
    out.template head<3>() = Mi.inverse_mass * P.f;
    out.template tail<3>() = Mi.J_inverse * P.m;
  }

  static Vec shift_twist(const Vec& V, const Point& d) {
    Vec out;
    out.template head<3>() = point_velocity(V, d);
    out.template tail<3>() = V.template tail<3>();
    return out;
  }
  static Vec apply(const InverseInertia& Mi, const Vec& P) {
    Vec out;
    out.template head<3>() = Mi.inverse_mass * P.template head<3>();
    out.template tail<3>() = Mi.J_inverse * P.template tail<3>();
    return out;
  }
  /// Linear velocity of the point at d from a body's centre of mass.
  static Point point_velocity(const Vec& V, const Point& d) { return V.template head<3>() + V.template tail<3>().cross(d); }

  /// G_h S(l_h)' M^-1 S(l_k) G_k' (paper 001, Eqs. 15-16, in the handles' rows), shared with dca.
  static void mobility(const InverseInertia& Mi, std::span<const Point> l, const std::vector<dc::JointRows<S, 6>>& rows,
                       typename dc::HandleTree<S, 6>::Node& leaf) {
    jc::mobility_rows<S, 6>(Mi.inverse_mass, Mi.J_inverse, l, rows, leaf);
  }
};

template <class S>
struct Geometry<S, 3> {
  using Vec = Vec3T<S>;
  using Point = Vec2T<S>;
  struct InverseInertia {  // M^-1 = diag(1/m, 1/m, 1/J)
    S inverse_mass = S(0);
    S J_inverse = S(0);
  };

  static S cross(const Point& a, const Point& b) { return a.x() * b.y() - a.y() * b.x(); }
  static Point turn(S w, const Point& d) { return Point(-w * d.y(), w * d.x()); }  // w x d = w Omega d

  static Vec shift_load(const Vec& L, const Point& d) { return Vec(L.x(), L.y(), L.z() + cross(d, L.template head<2>())); }
  static void add_shifted_load(Vec& P, const Vec& L, const Point& d) {
    P.x() += L.x();
    P.y() += L.y();
    P.z() += L.z() + cross(d, L.template head<2>());
  }
  static Vec shift_twist(const Vec& V, const Point& d) {
    const Point v = V.template head<2>() + turn(V.z(), d);
    return Vec(v.x(), v.y(), V.z());
  }
  struct Load {  // as in space: the force and its moment (a scalar) summed apart
    Point f = Point::Zero();
    S m = S(0);
  };
  static Load halves(const Vec& L) { return {L.template head<2>(), L.z()}; }
  static void store(const Load& P, Vec& out) { out = Vec(P.f.x(), P.f.y(), P.m); }
  static void add_shifted_load(Load& P, S sign, const Vec& L, const Point& d) {
    const Point f = sign * L.template head<2>();
    P.f += f;
    P.m += sign * L.z() + cross(d, f);
  }
  static void add_shifted_load(Load& P, const Vec& L, const Point& d) {
    P.f += L.template head<2>();
    P.m += L.z() + cross(d, L.template head<2>());
  }
  static void sub_shift_rate(Load& R, const Point& ldot, const Point& f) { R.m -= cross(ldot, f); }
  static void apply(const InverseInertia& Mi, const Load& P, Vec& out) {
    out = Vec(Mi.inverse_mass * P.f.x(), Mi.inverse_mass * P.f.y(), Mi.J_inverse * P.m);
  }
  static void sub_shifted_twist(Vec& V_rel, const Vec& V, const Point& d) {
    V_rel.template head<2>() -= point_velocity(V, d);
    V_rel.z() -= V.z();
  }
  static Vec apply(const InverseInertia& Mi, const Vec& P) {
    return Vec(Mi.inverse_mass * P.x(), Mi.inverse_mass * P.y(), Mi.J_inverse * P.z());
  }
  static Point point_velocity(const Vec& V, const Point& d) { return V.template head<2>() + turn(V.z(), d); }

  /// G_h S(l_h)' M^-1 S(l_k) G_k': paper 004, Eq. 13 (and 14-16 for the other handle pairs) in
  /// the handles' rows, shared with the spatial case.
  static void mobility(const InverseInertia& Mi, std::span<const Point> l, const std::vector<dc::JointRows<S, 3>>& rows,
                       typename dc::HandleTree<S, 3>::Node& leaf) {
    jc::mobility_rows<S, 3>(Mi.inverse_mass, jc::AngularInverse<S, 3>::Constant(Mi.J_inverse), l, rows, leaf);
  }
};

}  // namespace treedyn::hdca
