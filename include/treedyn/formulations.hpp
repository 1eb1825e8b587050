// treedyn — the catalogue of formulations and the settings that configure any of them.
//
// Most programs use a Simulator (simulator.hpp), which makes its formulation with
// make_formulation; benchmarks and studies that need a formulation's own interface (its ODE, say)
// make one directly.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "treedyn/formulation.hpp"
#include "treedyn/formulations/ali3.hpp"
#include "treedyn/formulations/dca.hpp"
#include "treedyn/formulations/hdca.hpp"
#include "treedyn/formulations/implicit.hpp"
#include "treedyn/formulations/reference.hpp"

namespace treedyn {

/// Settings common to every formulation; a formulation takes what applies to it.
struct FormulationSettings {
  std::optional<std::string> integrator;   // default: the formulation's own
  std::optional<double> rtol, atol;        // default: the formulation's own
  double dt = 0.01;                        // fixed-step: the step
  Threading threading;                     // threads of the tree passes, serial threshold, pinning
  ReferenceOptions reference;              // formulation-specific defaults live in these
  DcaOptions dca;
  HdcaOptions hdca;
  Ali3Options ali3;
  ImplicitOptions implicit;                // half-implicit and fully-implicit (scheme set by name)
};

struct FormulationInfo {
  std::string name;
  std::string summary;
};

const std::vector<FormulationInfo>& formulation_catalog();

/// Throws std::invalid_argument for an unknown name (listing the known ones), a null model or a
/// bad setting. The formulation shares the model and the external loads (which may be null): they
/// live as long as it does.
std::unique_ptr<Formulation> make_formulation(const std::string& name, std::shared_ptr<const Model> model,
                                              const FormulationSettings& settings,
                                              std::shared_ptr<const ExternalLoads> external = nullptr);

}  // namespace treedyn
