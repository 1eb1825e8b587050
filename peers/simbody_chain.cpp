// Built as C++17 (see simbody_chain.hpp): Simbody only, none of treedyn's C++20 headers.
#include "simbody_chain.hpp"

#include <Simbody.h>

#include <stdexcept>
#include <vector>

namespace treedyn::peers {

struct SimbodyChain::Impl {
  SimTK::MultibodySystem system;
  SimTK::SimbodyMatterSubsystem matter{system};
  SimTK::GeneralForceSubsystem forces{system};
  std::vector<SimTK::MobilizedBody::Ball> links;
  SimTK::State state;
};

SimbodyChain::SimbodyChain(int n) : impl_(std::make_unique<Impl>()) {
  if (n < 1) throw std::invalid_argument("SimbodyChain: a chain needs at least one link");
  Impl& s = *impl_;
  SimTK::Force::UniformGravity(s.forces, s.matter, SimTK::Vec3(0.0, -9.81, 0.0));
  const SimTK::Body::Rigid link(SimTK::MassProperties(1.0, SimTK::Vec3(0.0), SimTK::Inertia(1.0)));
  const SimTK::Transform joint_on_child(SimTK::Vec3(-0.5, 0.0, 0.0));
  SimTK::MobilizedBody parent = s.matter.Ground();
  s.links.reserve(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const SimTK::Transform joint_on_parent(SimTK::Vec3(i == 0 ? 0.0 : 0.5, 0.0, 0.0));
    s.links.emplace_back(parent, joint_on_parent, link, joint_on_child);
    parent = s.links.back();
  }
  s.state = s.system.realizeTopology();
  s.system.realize(s.state, SimTK::Stage::Acceleration);
}

SimbodyChain::~SimbodyChain() = default;

int SimbodyChain::size() const { return static_cast<int>(impl_->links.size()); }

void SimbodyChain::evaluate() {
  impl_->state.updQ();
  impl_->system.realize(impl_->state, SimTK::Stage::Acceleration);
}

void SimbodyChain::set_joint(int i, const double q_FM[4], const double w_FM[3]) {
  const SimTK::MobilizedBody::Ball& link = impl_->links.at(static_cast<std::size_t>(i));
  link.setQToFitRotation(impl_->state, SimTK::Rotation(SimTK::Quaternion(q_FM[0], q_FM[1], q_FM[2], q_FM[3])));
  link.setUToFitAngularVelocity(impl_->state, SimTK::Vec3(w_FM[0], w_FM[1], w_FM[2]));
}

void SimbodyChain::read_bodies(double* out) const {
  const SimTK::State& state = impl_->state;
  double* x = out;
  for (const SimTK::MobilizedBody::Ball& b : impl_->links) {
    const auto put = [&x](const SimTK::Vec3& v) {
      for (int k = 0; k < 3; ++k) *x++ = v[k];
    };
    put(b.getBodyOriginLocation(state));
    const SimTK::Quaternion q = b.getBodyRotation(state).convertRotationToQuaternion();
    for (int k = 0; k < 4; ++k) *x++ = q[k];
    put(b.getBodyAngularVelocity(state));
    put(b.getBodyOriginVelocity(state));
    put(b.getBodyAngularAcceleration(state));
    put(b.getBodyOriginAcceleration(state));
  }
}

}  // namespace treedyn::peers
