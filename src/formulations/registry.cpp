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
  o.threading = s.threading;
  return o;
}

}  // namespace

Formulation::Formulation(std::shared_ptr<const Model> model, std::shared_ptr<const ExternalLoads> external)
    : model_(std::move(model)), external_(std::move(external)) {
  if (!model_) throw std::invalid_argument("a formulation needs a model (got a null pointer)");
  if (external_ && external_->map().body_count() != model_->body_count())
    throw std::invalid_argument("the external loads were made for a model of " +
                                std::to_string(external_->map().body_count()) + " bodies, not this one's " +
                                std::to_string(model_->body_count()));
}

std::unique_ptr<Formulation> make_formulation(const std::string& name, std::shared_ptr<const Model> model,
                                              const FormulationSettings& s, std::shared_ptr<const ExternalLoads> external) {
  if (!model) throw std::invalid_argument("make_formulation: the model is a null pointer");
  if (name == "reference") return make_reference(std::move(model), with_common(s.reference, s), std::move(external));
  if (name == "dca") return make_dca(std::move(model), with_threads(s.dca, s), std::move(external));
  if (name == "hdca") return make_hdca(std::move(model), with_threads(s.hdca, s), std::move(external));
  if (name == "ali3") {
    Ali3Options o = s.ali3;
    o.dt = s.dt;
    o.threading = s.threading;
    return make_ali3(std::move(model), o, std::move(external));
  }
  if (name == "half-implicit" || name == "fully-implicit") {
    ImplicitOptions o = s.implicit;
    o.scheme = name == "half-implicit" ? ImplicitOptions::Scheme::HalfImplicit : ImplicitOptions::Scheme::FullyImplicit;
    o.dt = s.dt;
    o.threading = s.threading;
    return make_implicit(std::move(model), o, std::move(external));
  }
  std::string known;
  for (const auto& f : formulation_catalog()) known += (known.empty() ? "" : ", ") + f.name;
  throw std::invalid_argument("unknown formulation '" + name + "' (known: " + known + ")");
}

}  // namespace treedyn
