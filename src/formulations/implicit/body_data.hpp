// A body of paper 002's implicit integrators (implicit_core.hpp): its state at the iterate and at
// t_n, its Newton unknowns, and its mass matrix M = diag(m I, J_bar) with the inverse held by blocks.
// Apart from implicit_core.hpp so that tests can check the blocks alone.
#pragma once

#include "treedyn/model.hpp"
#include "treedyn/spatial.hpp"

namespace treedyn::implicit {

struct BodyData {
  Vec3 r, v, w_bar;                        // at the iterate (end of the step once converged)
  Quat q;                                  // A
  Vec3 a = Vec3::Zero(), wd_bar = Vec3::Zero();  // reported accelerations
  Vec3 r_n, v_n, w_bar_n;                  // at t_n
  Quat q_n;
  Vec6 F = Vec6::Zero();                   // [f; n_bar - w_bar x J_bar w_bar]
  Vec6 x = Vec6::Zero();                   // Newton unknowns (see the schemes)
  Vec6 g = Vec6::Zero();                   // right-hand side of the body's rows in the solve
  Vec6 delta = Vec6::Zero();               // the solve's increment of x
  // M = diag(m I, J_bar) (the model's mass and body-frame inertia: M_times) has the inverse
  // K = diag(k I, K_w), k = 1/m, K_w = J_bar^-1, held by its blocks (K_times): 10 numbers where
  // M and K as 6 x 6 matrices took 72.
  double k = 0.0;
  Mat3 K_w = Mat3::Zero();
};

/// K x for K = diag(k I, K_w) (BodyData).
inline Vec6 K_times(const BodyData& b, const Vec6& x) {
  Vec6 out;
  out.head<3>() = b.k * x.head<3>();
  out.tail<3>().noalias() = b.K_w * x.tail<3>();
  return out;
}

/// K as a 6 x 6, as the tree's leaves hold it (dc::LeafBlocks::Shared). Not as its two blocks
/// (LeafBlocks::SharedBlockDiagonal, 208 bytes a body less): these rows, in [v; w_bar] with w_bar
/// in the body's frame, are not arm rows, and the core would write K out for every product in
/// every full pass (fully-implicit's chain128 3 % slower).
inline Mat6 K_matrix(const BodyData& b) {
  Mat6 K = Mat6::Zero();
  K.topLeftCorner<3, 3>().diagonal().setConstant(b.k);
  K.bottomRightCorner<3, 3>() = b.K_w;
  return K;
}

/// M x for M = diag(m I, J_bar) of a body.
inline Vec6 M_times(const Body& body, const Vec6& x) {
  Vec6 out;
  out.head<3>() = body.mass * x.head<3>();
  out.tail<3>().noalias() = body.inertia * x.tail<3>();
  return out;
}

}  // namespace treedyn::implicit
