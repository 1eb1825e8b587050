// treedyn — the Hamiltonian divide-and-conquer algorithm (HDCA) of paper 001 (Chadaj, Malczyk,
// Fraczek) for open and closed loops, and its planar single-precision form of paper 004.
//
// State y = [q; p]: the spanning tree's joint coordinates q (joint_space.hpp) and one canonical
// momentum per tree-joint degree of freedom, p_k = H_k' Pbar_k, where the articulated momentum
// Pbar_k = H_k p_k + D_k sigma_k is the momentum the bodies outboard of joint k hold at its point
// o_k, less the impulses of the cut (loop-closing) joints among them (paper 001, Eqs. 6, 10).
// Initially sigma = 0 at the cut joints (paper 001, Sect. 2.1).
//
// First stage — velocities (paper 001 Eqs. 9-46, Alg. 3 steps 1-7; paper 004 Eqs. 11-49).
// Every body's momentum at its centre of mass is what flows in through its joints:
//     M_i V_i = P_i + sum_h S(l_h) T_h,   P_i = sum_k +-S(l_k) H_k p_k  (+ child side, - parent)
// with T_h the unknown constraint impulses at its handles (T = D sigma at a tree joint, J' sigma
// at a cut joint's body), so that at each handle
//     V_h = S(l_h)' V_i = sum_j xi_hj T_j + xi_h0,   xi_hj = S(l_h)' M^-1 S(l_j),
//     xi_h0 = S(l_h)' M^-1 P_i                                             (Eqs. 15-16; 004: 13-18)
// The tree joints' velocity constraints D' (V_c(o) - V_p(o)) = 0 (Eq. 24) and the cut joints'
// J V = -Phi_t close the system; the shared divide-and-conquer core (dc_core.hpp) eliminates them
// pairwise up the assembly tree (Eqs. 26-36 in paper 004's W^A, W^B, beta_hat form, Eqs. 27-37),
// connects the root to the ground (Eqs. 43-46: open, closed and free-floating alike) and walks
// back down (Alg. 2), giving every impulse; then V_i = M^-1 (P_i + sum_h S(l_h) T_h) and
//     qdot_k = H_k' (V_c(o_k) - V_p(o_k))                                    (Eq. 23; 004: 49)
//
// Second stage — momentum rates (paper 001 Eqs. 47-77, Alg. 3 steps 8-10). Differentiating the
// momentum balance at fixed sigma of the cut joints (their sigma_dot = lambda is the real force,
// which cancels) and using d/dt (M_i V_i) = Q_i (applied loads at the centre of mass) leaves, for
// every body, the load
//     R_i = Q_i - sum_k Sdot(ldot_k) L_k - sum_c Jdot_c,i' sigma_c,   L_k = +-H_k p_k + T_k,
// (ldot_k: velocity of o_k, which moves with joint k's child, minus that of i's centre of mass;
// Sdot L = [0; ldot x f], Eqs. 50-53), and for every tree joint
//     pdot_k = Hdot_k' Pbar_k + H_k' A_k,   A_k = sum over bodies i outboard of k of S(o_k <- i) R_i
// (Eq. 77: A_k is the articulated load of Eqs. 70-76, built here by one leaves-to-root sweep of
// the spanning tree; Hdot turns H's axes with their bodies). Nothing of the Hamiltonian itself
// is needed (Eq. 2 without dH/dq).
//
// Loops are closed at the velocity level, so velocity constraint errors stay at round-off and
// position drift is small without stabilisation (paper 001, Sect. 3.2). Redundant loop equations
// (a planar loop of spatial revolutes has 3) take the minimum-norm impulses; the motion is
// unaffected. Accelerations and joint reactions (sigma_dot = lambda, paper 001 Sect. 3.4) are
// reported at output times by one acceleration-level divide-and-conquer solve on the same state
// (the "separate module" of Sect. 3.4; it reuses dca's code).
//
// Error control. Near the base of a long chain p_k carries the momentum of everything outboard,
// and velocities come from differences of such momenta (M_i V_i = Pbar_k - S Pbar_k+1), so a
// relative tolerance on p is far looser than the same tolerance on v: on the 1024-link chain
// rtol = atol = 1e-6 on p lets the energy error reach 1e6 J in 10 s. The default weighs the error
// of p_k by the local inertia m_k of joint k's child (its inertia about that freedom), so that
// rtol and atol bound velocity-like errors as they do for dca (OdeSystem::error_weights); paper
// 001's plain tolerances on p remain available (ErrorControl::Momenta, `--error-control
// momenta`) and its study uses them.
//
// Planar form (paper 004): revolute and prismatic joints in the xy plane, 3-D vectors
// [x; y; angular], every quantity in the chosen scalar — single precision as on the paper's FPGA
// (the state is rounded to float after every step). The spatial form in float runs the
// divide-and-conquer arithmetic in float and the kinematics in double.
//
// Glossary (symbol — code — meaning, frame, shape)
//   q, p          y.head(nq), y.tail(nv)   joint coordinates; canonical momenta (nv)
//   H, D          Kin::H(k), Kin::D(k)     motion / constraint subspace at o_k, global (Dim x nv, Dim x (Dim-nv))
//   Hdot          Kin::Hdot(k)             rate of H (its axes turn with their bodies)
//   o_k, l_h      tree_point(k), l[h]      joint point; handle offset from a centre of mass
//   M^-1          inverse_inertia(b)       diag(I/m, J^-1), J global; planar diag(1/m, 1/m, 1/J)
//   P_i           P_known_                 momentum the canonical momenta bring to body i (at its CoM)
//   xi_hj, xi_h0  leaf K, b                handle coefficients (paper 001 Eqs. 15-16)
//   T, sigma      leaf f, multiplier()     constraint impulses at handles; Lagrange multipliers
//   V             V_                       body twists at the centres of mass (Dim)
//   Pbar_k        tree_load(child side)    articulated momentum H p + D sigma
//   R_i, A_k      R_, A_                   momentum-rate residual load; articulated load at o_k
//   S(l), Sdot    Geometry::shift_load, sub_shift_rate shift matrices (paper 001 Eqs. 14, 49-53)
#pragma once

#include <memory>
#include <string>

#include "treedyn/formulation.hpp"
#include "treedyn/linalg.hpp"
#include "treedyn/threading.hpp"

namespace treedyn {

struct HdcaOptions {
  std::string integrator = "dopri5";
  double rtol = 1e-6, atol = 1e-6;  // paper 001 sets rtol = atol (1e-6 in its Sect. 3.2)
  double dt = 0.01;                 // fixed-step integrators: the step (paper 004: euler, 1e-4)
  Threading threading;
  bool planar = false;              // paper 004's planar form (the model must be planar)
  bool single_precision = false;    // float arithmetic (paper 004)
  InverseMethod inverse = InverseMethod::Cholesky;  // AdjugateLdup: paper 004's Sect. 3 inverses
  /// Error control of the adaptive integrators. Momenta (paper 001): rtol and atol on q and p as
  /// they are. Velocities: the error of p_k is weighed as m_k (rtol |v_k| + atol), m_k the
  /// inertia of joint k's child alone about that freedom, so that it measures like a velocity
  /// error (see "Error control" above).
  enum class ErrorControl { Momenta, Velocities } error_control = ErrorControl::Velocities;
};

/// Throws std::invalid_argument for a model hdca cannot run (drivers; for the planar form, a
/// model that is not planar), naming the item. `external`: loads applied from outside the model
/// (may be null).
std::unique_ptr<Formulation> make_hdca(std::shared_ptr<const Model> model, const HdcaOptions& options,
                                       std::shared_ptr<const ExternalLoads> external = nullptr);

}  // namespace treedyn
