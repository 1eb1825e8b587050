#include <stdexcept>

#include "treedyn/formulations.hpp"

namespace treedyn {

const std::vector<FormulationInfo>& formulation_catalog() {
  static const std::vector<FormulationInfo> catalog = {
      {"reference", "dense absolute-coordinate Lagrange multipliers with projection, O(n^3): the oracle"},
      {"dca", "Featherstone's divide-and-conquer in joint coordinates, loops closed at acceleration level"},
      {"hdca", "Hamiltonian divide-and-conquer: joint coordinates and canonical momenta, loops at velocity level"},
      {"ali3", "index-3 augmented Lagrangian divide-and-conquer, trapezoidal rule with projections (paper 000)"},
      {"half-implicit", "index-3 symplectic Euler in absolute coordinates, Lie-group rotations, tree solve (paper 002)"},
      {"fully-implicit", "index-3 backward Euler in absolute coordinates, Lie-group rotations, tree solve (paper 002)"},
  };
  return catalog;
}

namespace {

/// A formulation's own options with the settings common to all applied over them.
template <class Options>
Options with_common(Options o, const FormulationSettings& s) {
  if (s.integrator) o.integrator = *s.integrator;
  if (s.rtol) o.rtol = *s.rtol;
  if (s.atol) o.atol = *s.atol;
  o.dt = s.dt;
  return o;
}

template <class Options>
Options with_threads(Options o, const FormulationSettings& s) {
  o = with_common(o, s);
  o.threads = s.threads;
  return o;
}

}  // namespace

std::unique_ptr<Formulation> make_formulation(const std::string& name, const Model& model,
                                              const FormulationSettings& s) {
  if (name == "reference") return make_reference(model, with_common(s.reference, s));
  if (name == "dca") return make_dca(model, with_threads(s.dca, s));
  if (name == "hdca") return make_hdca(model, with_threads(s.hdca, s));
  if (name == "ali3") {
    Ali3Options o = s.ali3;
    o.dt = s.dt;
    o.threads = s.threads;
    return make_ali3(model, o);
  }
  if (name == "half-implicit" || name == "fully-implicit") {
    ImplicitOptions o = s.implicit;
    o.scheme = name == "half-implicit" ? ImplicitOptions::Scheme::HalfImplicit : ImplicitOptions::Scheme::FullyImplicit;
    o.dt = s.dt;
    o.threads = s.threads;
    return make_implicit(model, o);
  }
  std::string known;
  for (const auto& f : formulation_catalog()) known += (known.empty() ? "" : ", ") + f.name;
  throw std::invalid_argument("unknown formulation '" + name + "' (known: " + known + ")");
}

}  // namespace treedyn
