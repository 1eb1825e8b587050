// treedyn — small helpers shared by the paper-study executables in bench/ (whole simulations
// whose figures go to docs/results/).
#pragma once

#include <iomanip>
#include <sstream>
#include <string>

#include "treedyn/formulations.hpp"
#include "treedyn/simulation.hpp"

namespace treedyn::study {

/// Runs `formulation` on `model` from t = 0 to t_end, sampling every `every` seconds into `sink`.
inline SimulationResult run(const Model& model, const std::string& formulation, const FormulationSettings& settings,
                            double t_end, double every, SampleSink* sink = nullptr) {
  RunOptions options;
  options.t_end = t_end;
  options.dt = every;
  auto f = make_formulation(formulation, model, settings);
  return run_simulation(model, *f, options, sink);
}

/// x with `digits` significant digits.
inline std::string sci(double x, int digits = 3) {
  std::ostringstream s;
  s << std::setprecision(digits) << x;
  return s.str();
}

}  // namespace treedyn::study
