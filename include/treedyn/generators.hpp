// treedyn — generated model families (for `treedyn generate`, tests and benchmarks).
#pragma once

#include "treedyn/model.hpp"

namespace treedyn {

/// The n-link pendulum of paper 000, Sect. 4.4: links of 1 m and 1 kg with centroidal inertia
/// diag(1, 1, 1) kg m^2, straight along +x from a joint at the origin, joined by `joint`
/// (spherical or revolute about z) joints, gravity 9.81 m/s^2 along -y, at rest.
Model make_chain(int bodies, JointType joint);

}  // namespace treedyn
