// treedyn — formulation settings by name, as the command line and the Python package take them.
//
// Every option has one name (the command line's, with '_' for '-': "newton_max" is
// --newton-max), a type, and the formulations it applies to; setting one that does not apply to
// the formulation chosen is an error, never a silent no-op (`-f ali3 --integrator rk4` would run
// ali3's own trapezoidal rule).
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "treedyn/formulations.hpp"

namespace treedyn {

using OptionValue = std::variant<bool, long, double, std::string>;

struct OptionInfo {
  std::string name;
  std::string type;                        // "number", "integer", "flag", or "a|b|c" (one of)
  std::vector<std::string> formulations;   // those it applies to
  std::string description;
};

const std::vector<OptionInfo>& option_catalog();

/// Sets option `name` of `settings` for `formulation`. Throws std::invalid_argument naming the
/// option for an unknown name (listing the known ones), one that does not apply to the formulation
/// (listing those it applies to), or a bad value (wrong type, not finite, out of range, not one of
/// the choices). Integers are accepted where numbers are asked.
void set_option(FormulationSettings& settings, const std::string& formulation, const std::string& name,
                const OptionValue& value);

}  // namespace treedyn
