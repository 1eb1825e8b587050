// treedyn — Featherstone's divide-and-conquer algorithm (DCA) for forward dynamics in joint
// coordinates: the acceleration-level baseline paper 001 compares HDCA with.
//
// State y = [q; v], the spanning tree's joint coordinates and velocities (joint_space.hpp).
// One right-hand side:
//   1. forward kinematics: body poses and twists, each tree joint's H, D, kappa;
//   2. leaves: for body i with handles h (the points of its joints),
//        A_h = sum_k K_hk f_k + b_h,   K_hk = S(l_h)' M^-1 S(l_k),
//        b_h = S(l_h)' M^-1 F_e + [w x (w x l_h); 0]
//      (A: classical acceleration at the handle; F_e: applied wrench minus w x J w);
//   3. rows: a tree joint gives D' (A_c - A_p) = D' kappa; a loop-closing joint gives its
//      absolute-coordinate acceleration constraint J A = gamma moved to its handle, with
//      Baumgarte stabilisation J A = gamma - 2 alpha Phi_dot - beta^2 Phi;
//   4. assembly, base connection, disassembly (dc_core.hpp) give every handle load f;
//   5. A_com = M^-1 (F_e + sum_h S(l_h) f_h);  vdot = H' (A_c(o) - A_p(o) - kappa);
//      qdot = G(q) v.
// Loops are closed at the acceleration level only: without stabilisation their position and
// velocity errors drift (paper 001, Sect. 3.2 reports the position error growing quadratically),
// and at a singular position (a four-bar with its links aligned) the run can leave its assembly
// branch. By default alpha = beta = 3 / T, T = length / speed of the model's scales at t0
// (metrics.hpp: ModelScales), keeps both (docs/formulations/dca.md).
// Redundant loop equations (every planar loop of spatial revolutes) are resolved with the
// minimum-norm (pseudo-inverse) solution.
//
// Glossary
//   q, v      joint coordinates and velocities            nq, nv
//   H, D      motion / constraint subspace of a joint     6 x nv, 6 x (6 - nv), global, at its point
//   kappa     relative acceleration bias of a joint       6
//   l_h       handle point minus centre of mass           3, global
//   S(l)      shift matrix (spatial.hpp)                  6 x 6
//   K_hk, b_h handle coefficients (Phi_ij and bias accelerations in Featherstone 1999)
//   f_h       constraint load at handle h on the body     6: [force; moment about the handle]
#pragma once

#include <memory>
#include <optional>

#include "treedyn/formulation.hpp"
#include "treedyn/threading.hpp"

namespace treedyn {

struct DcaOptions {
  std::string integrator = "dopri5";
  double rtol = 1e-6, atol = 1e-6;  // paper 001 sets rtol = atol
  double dt = 0.01;                 // fixed-step integrators: the step
  Threading threading;
  /// Baumgarte stabilisation of loop-closing joints: J A = gamma - 2 alpha Phi_dot - beta^2 Phi,
  /// 1/s. Unset (the default): each is kBaumgartePerTime / T, T = length / speed of the model's
  /// scales at t0 (0 for a model with no speed scale). Zero leaves the loops unstabilised, as in
  /// paper 001. diagnostics() reports the values used (baumgarte_alpha, baumgarte_beta).
  std::optional<double> baumgarte_alpha, baumgarte_beta;
};

/// The default Baumgarte rate in units of the model's time scale T = length / speed: on paper
/// 000's four-bar (T = 0.30 s) every rate from 1.2 / T to 7.4 / T keeps the run on its assembly
/// branch with the same steps, 0.6 / T and below lets it leave, and from 9 / T the rate nears
/// dopri5's stability limit at the steps the tolerance allows (docs/formulations/dca.md).
inline constexpr double kBaumgartePerTime = 3.0;

/// The rate alpha = beta a dca run on `model` uses when none is given (1/s).
double default_baumgarte_rate(const Model& model);

/// Throws std::invalid_argument if the model has a feature dca does not support (drivers).
/// `external`: loads applied from outside the model (may be null).
std::unique_ptr<Formulation> make_dca(std::shared_ptr<const Model> model, const DcaOptions& options,
                                      std::shared_ptr<const ExternalLoads> external = nullptr);

}  // namespace treedyn
