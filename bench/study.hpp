// treedyn — small helpers shared by the paper-study executables in bench/ (whole simulations
// whose figures go to docs/results/).
#pragma once

#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "treedyn/formulations.hpp"
#include "treedyn/simulation.hpp"

namespace treedyn::study {

/// Runs `formulation` on `model` from t = 0 to t_end, sampling every `every` seconds into `sink`.
inline SimulationResult run(const Model& model, const std::string& formulation, const FormulationSettings& settings,
                            double t_end, double every, SampleSink* sink = nullptr) {
  RunOptions options;
  options.t_end = t_end;
  options.dt = every;
  Simulator simulator(share(model), formulation, settings);
  return run_simulation(simulator, options, sink);
}

/// x with `digits` significant digits.
inline std::string sci(double x, int digits = 3) {
  std::ostringstream s;
  s << std::setprecision(digits) << x;
  return s.str();
}

/// One command-line option of a study executable: "--name VALUE" into a string or an int, or a
/// bare "--name" setting a flag.
struct Option {
  Option(std::string name, std::string metavar, std::string& text) : name(std::move(name)), metavar(std::move(metavar)), text(&text) {}
  Option(std::string name, std::string metavar, int& number) : name(std::move(name)), metavar(std::move(metavar)), number(&number) {}
  Option(std::string name, bool& flag) : name(std::move(name)), flag(&flag) {}
  std::string name, metavar;
  std::string* text = nullptr;
  int* number = nullptr;
  bool* flag = nullptr;
};

/// Reads argv into `options`; on an unknown option, a missing value or a bad number prints
/// "usage: program [--name VALUE] ..." and returns false.
inline bool parse_options(int argc, char** argv, const std::string& program, const std::vector<Option>& options) {
  auto parse_one = [&](int& i) {
    for (const Option& o : options) {
      if (argv[i] != o.name) continue;
      if (o.flag) return *o.flag = true;
      if (i + 1 >= argc) return false;
      const std::string value = argv[++i];
      if (o.text) *o.text = value;
      else *o.number = std::stoi(value);
      return true;
    }
    return false;
  };
  for (int i = 1; i < argc; ++i) {
    bool ok = false;
    try {
      ok = parse_one(i);
    } catch (const std::logic_error&) {  // std::stoi: not a number, or out of range
    }
    if (ok) continue;
    std::cerr << "usage: " << program;
    for (const Option& o : options) std::cerr << " [" << o.name << (o.flag ? "" : " " + o.metavar) << "]";
    std::cerr << "\n";
    return false;
  }
  return true;
}

}  // namespace treedyn::study
