// treedyn — generated model families (for `treedyn generate`, tests and benchmarks).
#pragma once

#include "treedyn/model.hpp"

namespace treedyn {

/// The n-link pendulum of paper 000, Sect. 4.4: links of 1 m and 1 kg with centroidal inertia
/// diag(1, 1, 1) kg m^2, straight along +x from a joint at the origin, joined by `joint`
/// (spherical or revolute about z) joints, gravity 9.81 m/s^2 along -y, at rest.
Model make_chain(int bodies, JointType joint);

/// The N-link chain of paper 002's scaling study (Sect. 3.3, Fig. 7; ../shared/papers/002-models.md):
/// steel bars of 2 m with a 0.05 m square section (39 kg) hanging end to end straight down (-z)
/// from a spherical joint at the origin, joined by spherical joints, gravity 9.81 m/s^2 along
/// (0.0717, 0.6847, 0.7253); each bar spins about its long axis at a rate drawn uniformly from
/// (-10, 10) rad/s by std::mt19937(seed) (velocities consistent with the joints: the joint points
/// lie on the spin axes).
Model make_spinning_bar_chain(int bodies, unsigned seed = 1);

/// A ladder of `loops` coupled four-bar loops (2 loops + 1 bars, issue 28's loop-heavy scaling
/// model): loops + 1 rungs hang from revolute pivots on the ground 1 m apart along +x, and
/// `loops` couplers join the lower ends of neighbouring rungs, so each rung is the rocker of one
/// four-bar and the crank of the next. Bars of 1 m and 1 kg with a 0.05 m square section, all
/// joints revolute about z (planar: 3 redundant equations per loop in 3-D). The rungs start at
/// rest 0.5 rad from hanging straight down (a parallelogram, one degree of freedom, far from its
/// singular positions at +-pi/2), gravity 9.81 m/s^2 along -y.
Model make_ladder(int loops);

}  // namespace treedyn
