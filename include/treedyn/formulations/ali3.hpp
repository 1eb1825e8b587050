// treedyn — ALi3-DCA (paper 000): the index-3 augmented Lagrangian divide-and-conquer algorithm
// with the trapezoidal rule, modified Newton-Raphson and mass-orthogonal projections of
// velocities and accelerations, in absolute coordinates with Euler parameters.
//
// One step from t to t + h (paper 000, Sect. 3.5):
//   1. predictor  q = q_bar + h qd_bar + h^2/2 qdd_bar,  lambda = lambda_bar, mu = mu_bar;
//   2. modified Newton-Raphson on the trapezoidal equations scaled by h^2/4 (Eqs. 15-18): the
//      tangent coefficients of every body (Eqs. 22-26) and the elimination matrices of the
//      assembly tree (Eqs. 35-38) are built at the first iteration and held; each iteration
//      recomputes only the bias terms (Eqs. 27, 39), the base loads and the increments
//        Delta q = delta Delta F + delta_3,  Delta lambda = alpha (Phi + Phi_q Delta q),
//        Delta mu = alpha (Psi + Psi_q Delta q)                              (Eqs. 21, 24, 34);
//      it stops when ||Delta q|| < epsilon or after newton_max iterations;
//   3. velocity projection: the tangent coefficients and elimination matrices rebuilt once at the
//      converged positions (paper 000 reuses the last Newton iteration's, which its pseudo-code
//      rebuilds every iteration; held from the predictor they made chains diverge), bias theta
//      (Eqs. 45, 54);
//   4. acceleration projection: the same matrices, bias xi (Eqs. 60, 69); the projected velocities
//      and accelerations start the next step (predictor and Eqs. 15-16).
// Consistent accelerations and multipliers at t0 come from the same tree (Sect. 3.5, step 1).
//
// The tree is treedyn's dc::HandleTree with compliant joint rows: with K = (h^2/4) M_cc^-1 and
// loads f = -Phi_q' Delta lambda, every body reads Delta q = K f + b and every joint
// Phi_q,P Delta q_P + Phi_q,C Delta q_C + (1/alpha)(-Delta lambda) = -Phi, so that the matrix
// eliminated at a node is C^-1 = I/alpha + sum Phi_q K Phi_q' (Eq. 35, signs folded): positive
// definite even for redundant constraints and at singular positions. Since Phi_q = J T with the
// twist Jacobian J and T = diag(I, 2 E(p)), the tree runs in twist space (6 x 6 blocks):
// T K T' at the leaves, T b in and x = b + K T' f out, the same solution as in the 7 coordinates.
//
// Departures from the paper's text, each checked against the equations it comes from:
//   - M_c = M - (h^2/4) dQ/dq - (h/2) dQ/dqd: the paper's text (below Eq. 20) swaps the two
//     factors; the derivative of (h^2/4) g with respect to q through Eqs. 15-16 gives these.
//   - Psi = (p'p - 1)/2, so that Psi_q = [0, p'] and nu = -pd'pd are exactly Eqs. 5-6; the
//     penalty term of the bias is + Psi_q' alpha Psi (Eq. 22's minus sign does not follow from
//     substituting Eq. 21 into Eq. 19).
//   - Phi_q of a body's 7 coordinates is [J_v, 2 J_w E(p)] from the twist Jacobians of
//     kinematics.hpp (w = 2 E(p) pd); gamma is the same in both (Edot pd = 0).
//
// Glossary (paper 000 symbol -> code)
//   q = [r; p]   position of the centre of mass and Euler parameters      q (7 per body)
//   qd, qdd      their velocities and accelerations                       qd, qdd
//   M            diag(m I, 4 G' J' G), singular (Eq. 7)                   mass_matrix()
//   Q            [f; 2 G' n' - 8 Gd' J' G pd] (Eq. 8)                     generalized_forces(), quadratic_velocity()
//   g            M qdd + Phi_q' lambda + Psi_q' mu - Q (Eqs. 12-13)        newton_residual()
//   M_c, M_cc    M check, M double check (below Eqs. 20 and 23)           mass_c_times (M_check_ with geometric stiffness), K = (h^2/4) M_cc^-1
//   delta_3      Newton bias (Eq. 27)                                     b of the leaves
//   theta, xi    velocity and acceleration projection biases (45, 60)     b of the leaves
//   lambda, mu   joint and normalisation multipliers (Eq. 11)             lambda, mu
//   alpha        penalty factor                                           Ali3Options::alpha
//   epsilon      Newton tolerance on ||Delta q||                          Ali3Options::newton_tol
#pragma once

#include <memory>

#include "treedyn/formulation.hpp"
#include "treedyn/topology.hpp"
#include "treedyn/threading.hpp"

namespace treedyn {

struct Ali3Options {
  double dt = 0.01;          // trapezoidal step h (paper 000: 0.01 s in every test)
  /// Penalty factor; 0 (the default): ali3_penalty(model, dt). Paper 000 uses 1e6 for its small
  /// systems and 1e9 for chain128; 1e6 everywhere failed on six of the eleven shipped models.
  double alpha = 0.0;
  int newton_max = 3;        // iterations per step (paper 000: 3; 4 for the four-bar)
  double newton_tol = 1e-12; // stop when ||Delta q|| < newton_tol (paper 000: 1e-12, i.e. in
                             // practice a fixed count: deterministic real-time cost)
  bool geometric_stiffness = false;  // add Phi_qq' lambda + Psi_qq' mu to M_c (end of Sect. 4.4)
  bool project_velocities = true, project_accelerations = true;
  /// A step whose last Newton increment exceeds this (||Delta q||, in metres and Euler
  /// parameters) has diverged: the run stops with status "failed".
  double divergence = 1.0;
  Threading threading;
};

/// The penalty ali3 takes when none is given: 1e6 raised by powers of ten until
///   rho = alpha h^2 / (4 M) >= 50  and  alpha h^2 / (4 M D) >= 0.1,
/// M the model's total mass (the effective mass a joint sees is at most M) and D the spanning
/// tree's depth (Topology::depth): a chain's lowest constraint compliance falls like 1/(M D)
/// (1/n^2 for n equal links). The first bound is measured on every model of the papers, the
/// second on paper 000's chains of 1,024 to 16,384 links (docs/results/compare.md "penalty").
double ali3_penalty(const Model& model, const Topology& topology, double h);
/// The same, building the model's Topology.
double ali3_penalty(const Model& model, double h);

/// Throws std::invalid_argument for a bad option. `external`: loads applied from outside the
/// model (may be null).
std::unique_ptr<Formulation> make_ali3(std::shared_ptr<const Model> model, const Ali3Options& options,
                                       std::shared_ptr<const ExternalLoads> external = nullptr);

}  // namespace treedyn
