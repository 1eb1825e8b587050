// treedyn — the reference formulation: the oracle every other formulation is checked against.
//
// Absolute coordinates, dense Lagrange multipliers, O(n^3): for small systems at tight
// tolerances, not for speed.
//
//   M Vdot + J' lambda = F,   J Vdot = gamma                     (Newton-Euler, global frame)
//   lambda = (J M^-1 J')^+ (J M^-1 F - gamma),  Vdot = M^-1 (F - J' lambda)
//
// The pseudo-inverse comes from a complete orthogonal decomposition, so redundant constraints
// (the spatial four-bar has 3) give the minimum-norm multipliers and the right motion. Drift of
// the position and velocity constraints is removed by mass-orthogonal coordinate projection
// (projection.hpp): after every step for the fixed-step integrators, dopri5, bs23 and bdf, at
// output times for adams.
//
// Glossary
//   y        state: [r_i, p_i (unit quaternion w,x,y,z)] for every body, then [v_i, w_i]
//   V        body twists [v; w] at the centres of mass, global frame (6n)
//   M        diag(m_i I, J_i global)               F   applied wrenches minus gyroscopic terms
//   J        constraint Jacobian (kinematics.hpp)  gamma  acceleration right-hand side
//   lambda   multipliers; the reaction on body i is -J_i' lambda
#pragma once

#include <memory>

#include "treedyn/formulation.hpp"
#include "treedyn/integrators.hpp"

namespace treedyn {

struct ReferenceOptions {
  std::string integrator = "dopri5";  // measured the more accurate at 1e-10: docs/formulations/reference.md
  double rtol = 1e-10, atol = 1e-10;
  double dt = 0.01;  // fixed-step integrators: the step
};

/// `external`: loads applied from outside the model (may be null).
std::unique_ptr<Formulation> make_reference(std::shared_ptr<const Model> model, const ReferenceOptions& options,
                                            std::shared_ptr<const ExternalLoads> external = nullptr);

}  // namespace treedyn
