#include <stdexcept>

#include "treedyn/formulations.hpp"

namespace treedyn {

const std::vector<FormulationInfo>& formulation_catalog() {
  static const std::vector<FormulationInfo> catalog = {
      {"reference", "dense absolute-coordinate Lagrange multipliers with projection, O(n^3): the oracle"},
      {"dca", "Featherstone's divide-and-conquer in joint coordinates, loops closed at acceleration level"},
  };
  return catalog;
}

std::unique_ptr<Formulation> make_formulation(const std::string& name, const Model& model,
                                              const FormulationSettings& s) {
  if (name == "reference") {
    ReferenceOptions o = s.reference;
    if (s.integrator) o.integrator = *s.integrator;
    if (s.rtol) o.rtol = *s.rtol;
    if (s.atol) o.atol = *s.atol;
    o.dt = s.dt;
    return make_reference(model, o);
  }
  if (name == "dca") {
    DcaOptions o = s.dca;
    if (s.integrator) o.integrator = *s.integrator;
    if (s.rtol) o.rtol = *s.rtol;
    if (s.atol) o.atol = *s.atol;
    o.dt = s.dt;
    o.threads = s.threads;
    return make_dca(model, o);
  }
  std::string known;
  for (const auto& f : formulation_catalog()) known += (known.empty() ? "" : ", ") + f.name;
  throw std::invalid_argument("unknown formulation '" + name + "' (known: " + known + ")");
}

}  // namespace treedyn
