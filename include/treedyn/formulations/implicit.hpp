// treedyn — half-implicit and fully-implicit index-3 integrators in absolute coordinates with a
// Lie-group rotation update (paper 002: Fang, Kissel, Zhang, Negrut 2022).
//
// Per body: centre of mass r, orientation A (body -> global), rdot and the body-frame angular
// velocity w_bar; constant mass matrix M_i = diag(m I, J_bar) (Eq. 2). Joints and drivers are
// the absolute-coordinate constraint equations Phi(r, A, t) = 0 of kinematics.hpp; their
// variations are Phi_r = J_v and Pi_bar = J_w A (twist Jacobians; delta A = A skew(delta pi_bar)).
//
// half-implicit (symplectic Euler, Eqs. 4-12), one step t_n -> t_n+1 = t_n + h:
//   unknowns x_i = [r_n+1; theta_i] with theta = h w_bar_n+1 (Eq. 6) and lambda_hat = h^2 lambda_n;
//   e_x = M x + P_n' lambda_hat - M [r_n + h rdot_n; h w_bar_n] - h^2 [f_n; n_bar_n - w_bar x J w_bar]
//                                                                                 (Eqs. 5a-b, 7)
//   e_3 = Phi(r_n+1, A_n exp(skew theta), t_n+1)                                  (Eqs. 5c-d)
//   quasi-Newton with N = [M P_n'; P_n 0] built once per step (Eq. 12), P = [Phi_r, Pi_bar];
//   rdot_n+1 = (r_n+1 - r_n)/h, w_bar_n+1 = theta/h, accelerations a_n from Eq. 4a-b.
// fully-implicit (backward Euler, Eqs. 13-14):
//   unknowns x_i = [rddot; w_bar_dot] at t_n+1 and lambda_n+1;
//   e_x = M x + P_n+1' lambda - [f; n_bar - w_bar x J w_bar]_n+1,   e_3 = Phi_n+1 / h^2;
//   rdot = rdot_n + h rddot, r = r_n + h rdot, w_bar = w_bar_n + h w_bar_dot,
//   A = A_n exp(h skew w_bar)                                                      (Eqs. 14a-d)
//   Newton with N = [M P'; P 0] rebuilt at every iterate: the Jacobians of the reaction forces
//   (as in the paper) and of the applied and gyroscopic forces are dropped, which keeps N
//   symmetric so that the tree can solve it.
// Both stop when ||delta q|| = ||(delta x, delta lambda)|| < newton_tol (the paper's criterion,
// in the scaled unknowns of each scheme).
//
// The Newton systems [M P'; P 0] [delta x; delta lambda] = [-e_x; -e_3] have the body/joint
// structure of the divide-and-conquer tree: the default solver eliminates them on the shared
// dc::HandleTree in O(n) (minimum-norm multipliers for redundant constraints); `sparse` assembles
// N and factorises it with Eigen's SparseLU, as the paper's reference code does with SciPy.
//
// Coulomb friction (paper 002, Sect. 3.4) on prismatic and cylindrical joints, explicit: before
// each step the friction force is mu |N| along the joint axis against the sliding velocity (zero
// below 1e-5 m/s), N the joint's reaction force normal to the axis from the last multipliers.
//
// What is reported at t_n+1: positions and velocities of t_n+1; the half-implicit method's
// accelerations and multipliers are those of the step that reached it (a_n, lambda_n: Eq. 3
// evaluates them at t_n), the fully-implicit method's are of t_n+1.
//
// Glossary (paper 002 symbol -> code)
//   r, A, rdot, w_bar     BodyData::r, q (quaternion of A), v, w_bar
//   theta = h w_bar_n+1   half-implicit rotation unknown (the paper's bar-omega of Eq. 6)
//   M, J_bar              diag(m I, J_bar): BodyData's mass M and its inverse K
//   P_r, P_A (Phi_r, Pi)  tree rows G_p, G_c: [J_v, J_w A] per body
//   lambda_hat            h^2 lambda (half-implicit), mu_ in the Newton iteration
//   e_1..e_3, N           residuals and Newton matrix (Eqs. 8-12)
#pragma once

#include <memory>
#include <optional>

#include "treedyn/formulation.hpp"
#include "treedyn/threading.hpp"

namespace treedyn {

struct ImplicitOptions {
  enum class Scheme { HalfImplicit, FullyImplicit };
  enum class LinearSolver { Tree, Sparse };
  Scheme scheme = Scheme::HalfImplicit;
  LinearSolver linear_solver = LinearSolver::Tree;
  double dt = 1e-3;      // step h (paper 002: 1e-4 ... 1e-2)
  int newton_max = 50;   // a step that has not converged after this many iterations fails
  /// Stop when ||delta q|| falls below this. Default (paper 002, Sect. 3.1): 1e-10 for the
  /// half-implicit method, 1e-10 / h^2 for the fully-implicit one (its Phi is scaled by 1/h^2).
  std::optional<double> newton_tol;
  Threading threading;
  double tolerance(double h) const {
    return newton_tol ? *newton_tol : (scheme == Scheme::HalfImplicit ? 1e-10 : 1e-10 / (h * h));
  }
};

/// Throws std::invalid_argument for a bad option. `external`: loads applied from outside the
/// model (may be null).
std::unique_ptr<Formulation> make_implicit(std::shared_ptr<const Model> model, const ImplicitOptions& options,
                                           std::shared_ptr<const ExternalLoads> external = nullptr);

}  // namespace treedyn
