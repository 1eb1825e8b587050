// Paper 000's n-link spherical chain (treedyn::make_chain(n, JointType::Spherical)) built in
// Simbody 3.7, for the benchmark against Simbody (bench/bench_simbody.cpp) and the cross-engine
// test (tests/peers/test_simbody.cpp).
//
// The same system: links of 1 kg and unit central inertia, 1 m long along +x, each hung on a ball
// joint at its left end (the first at the origin), gravity -9.81 y. Each Simbody body frame sits
// at its link's centre of mass with the link's axes (treedyn's body frame), so body origins,
// rotations, twists and accelerations compare one to one. Simbody's Ball mobilizer uses a
// quaternion (4 q, 3 u: the angular velocity of M in F, expressed in F).
//
// Simbody 3.7's headers do not compile as C++20 (its index types' operator== become ambiguous
// with C++20's rewritten comparisons), so Simbody is reached only from simbody_chain.cpp, built
// as C++17, and this header speaks plain numbers.
#pragma once

#include <memory>

namespace treedyn::peers {

class SimbodyChain {
 public:
  /// Numbers per body in read_bodies(): origin (3), rotation as a unit quaternion w x y z (4),
  /// angular velocity (3), origin velocity (3), angular acceleration (3), origin acceleration (3),
  /// all in ground.
  static constexpr int kBodyValues = 19;

  /// The chain at rest, straight along +x, realized through accelerations.
  explicit SimbodyChain(int n);
  ~SimbodyChain();
  SimbodyChain(const SimbodyChain&) = delete;
  SimbodyChain& operator=(const SimbodyChain&) = delete;

  int size() const;

  /// One forward-dynamics evaluation from the joint coordinates and rates: everything from the
  /// Position stage on is recomputed (the coordinates are marked changed), as one right-hand side
  /// must.
  void evaluate();

  /// Joint i's rotation (the link's M frame in its parent's F frame, a unit quaternion w x y z)
  /// and angular velocity relative to the parent, expressed in F. evaluate() before reading.
  void set_joint(int i, const double q_FM[4], const double w_FM[3]);

  /// kBodyValues numbers per body into out (size() * kBodyValues), from the last evaluate().
  void read_bodies(double* out) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace treedyn::peers
