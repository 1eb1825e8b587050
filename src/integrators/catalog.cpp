#include <stdexcept>

#include "integrators_internal.hpp"

namespace treedyn {

const std::vector<IntegratorInfo>& integrator_catalog() {
  static const std::vector<IntegratorInfo> catalog = {
      {"euler", false, "explicit Euler, fixed step --dt"},
      {"rk4", false, "classical Runge-Kutta 4, fixed step --dt"},
      {"symplectic-euler", false, "semi-implicit Euler (velocities first), fixed step --dt"},
      {"dopri5", true, "Dormand-Prince 5(4), ARKODE (MATLAB ode45's method)"},
      {"bs23", true, "Bogacki-Shampine 3(2), ARKODE (MATLAB ode23's method)"},
      {"adams", true, "variable-order Adams-Moulton, CVODE (ode113's kind)"},
      {"bdf", true, "variable-order BDF with projection after every step, CVODE"},
  };
  return catalog;
}

bool is_adaptive_integrator(const std::string& name) {
  for (const auto& info : integrator_catalog())
    if (info.name == name) return info.adaptive;
  return false;
}

std::unique_ptr<Integrator> make_integrator(const std::string& name, OdeSystem& system, const IntegratorOptions& options) {
  for (const auto& info : integrator_catalog())
    if (info.name == name) return info.adaptive ? make_sundials(name, system, options) : make_fixed_step(name, system, options);
  std::string known;
  for (const auto& info : integrator_catalog()) known += (known.empty() ? "" : ", ") + info.name;
  throw std::invalid_argument("unknown integrator '" + name + "' (known: " + known + ")");
}

}  // namespace treedyn
