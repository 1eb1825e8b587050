// treedyn against Simbody 3.7 (Debian's libsimbody-dev), another engine, on paper 000's spherical
// chain: the same bodies' accelerations at random states, from each of treedyn's joint-space
// formulations and its reference formulation. This is also what makes bench/bench_simbody.cpp's
// timings a comparison of like with like: both engines solve the same forward dynamics.
#include <gtest/gtest.h>

#include <random>

#include "simbody_chain.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/simulator.hpp"

namespace treedyn {
namespace {

/// The chain's bodies as Simbody holds them, in treedyn's terms (centre of mass, orientation,
/// twist, accelerations of its last evaluation).
SystemState body_states(const peers::SimbodyChain& chain) {
  std::vector<double> raw(static_cast<std::size_t>(chain.size() * peers::SimbodyChain::kBodyValues));
  chain.read_bodies(raw.data());
  SystemState s(static_cast<std::size_t>(chain.size()));
  for (std::size_t i = 0; i < s.size(); ++i) {
    const double* x = raw.data() + i * peers::SimbodyChain::kBodyValues;
    s[i].r = Vec3(x[0], x[1], x[2]);
    s[i].q = Quat(x[3], x[4], x[5], x[6]);
    s[i].w = Vec3(x[7], x[8], x[9]);
    s[i].v = Vec3(x[10], x[11], x[12]);
    s[i].alpha = Vec3(x[13], x[14], x[15]);
    s[i].a = Vec3(x[16], x[17], x[18]);
  }
  return s;
}

/// A random joint state: rotation uniform over SO(3), relative angular velocity up to 2 rad/s
/// per axis.
void randomise_joint(peers::SimbodyChain& chain, int i, std::mt19937& rng) {
  std::normal_distribution<double> g(0.0, 1.0);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  Eigen::Vector4d q(g(rng), g(rng), g(rng), g(rng));
  q.normalize();
  const double w[3] = {u(rng), u(rng), u(rng)};
  chain.set_joint(i, q.data(), w);
}

/// Largest difference of any body's angular or centre-of-mass acceleration, and the largest
/// acceleration (its scale).
std::pair<double, double> worst_acceleration_difference(const SystemState& a, const SystemState& b) {
  double worst = 0.0, scale = 0.0;
  for (std::size_t i = 0; i < a.size(); ++i) {
    worst = std::max({worst, (a[i].alpha - b[i].alpha).norm(), (a[i].a - b[i].a).norm()});
    scale = std::max({scale, b[i].alpha.norm(), b[i].a.norm()});
  }
  return {worst, scale};
}

class SimbodyPeer : public ::testing::TestWithParam<std::string> {};

TEST_P(SimbodyPeer, SphericalChainAccelerationsAgreeWithSimbodysAtRandomStates) {
  const std::string formulation = GetParam();
  for (const int n : {1, 3, 16, 64}) {
    const auto model = share(make_chain(n, JointType::Spherical));
    peers::SimbodyChain chain(n);
    Simulator sim(model, formulation);
    std::mt19937 rng(static_cast<unsigned>(11 * n));
    for (int trial = 0; trial < 3; ++trial) {
      for (int i = 0; i < n; ++i) randomise_joint(chain, i, rng);
      chain.evaluate();
      const SystemState simbody = body_states(chain);
      // Both engines place the bodies from the same joint values: the state is one treedyn
      // accepts as it stands (no projection).
      sim.set_body_states(simbody);
      const SystemState& treedyn = sim.snapshot().bodies;
      ASSERT_EQ(treedyn.size(), simbody.size());
      // The same poses and twists, to round-off accumulated along the chain (1e-14 per link of
      // the largest distance or speed).
      double r_scale = 0.0, v_scale = 0.0;
      for (const BodyState& x : simbody) r_scale = std::max(r_scale, x.r.norm()), v_scale = std::max(v_scale, x.v.norm());
      for (std::size_t i = 0; i < simbody.size(); ++i) {
        ASSERT_LT((treedyn[i].r - simbody[i].r).norm(), 1e-14 * n * r_scale) << "body " << i;
        ASSERT_LT((treedyn[i].v - simbody[i].v).norm(), 1e-14 * n * v_scale) << "body " << i;
      }
      const auto [worst, scale] = worst_acceleration_difference(treedyn, simbody);
      // Both are exact O(n) solutions of the same equations in double precision; a chain of
      // 64 links amplifies round-off by at most its length in either engine, so 1e-10 of the
      // largest acceleration leaves room for both (measured: at most 2e-13 relative, hdca at 64).
      EXPECT_LT(worst, 1e-10 * scale) << formulation << ", " << n << " links, trial " << trial
                                      << ": largest acceleration difference " << worst << " of " << scale;
      if (trial == 0) std::printf("%s, %d links: largest acceleration difference %.3g of %.3g\n", formulation.c_str(), n, worst, scale);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Formulations, SimbodyPeer, ::testing::Values("dca", "hdca", "reference"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace treedyn
