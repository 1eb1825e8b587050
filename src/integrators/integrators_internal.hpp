#pragma once

#include "treedyn/integrators.hpp"

namespace treedyn {

std::unique_ptr<Integrator> make_fixed_step(const std::string& name, OdeSystem& system, const IntegratorOptions& options);
std::unique_ptr<Integrator> make_sundials(const std::string& name, OdeSystem& system, const IntegratorOptions& options);

}  // namespace treedyn
