// treedyn — where a step-based formulation's iteration failed: the body with the largest
// increment, named in the failure message.
#pragma once

#include <cmath>
#include <limits>
#include <string>

#include "treedyn/model.hpp"

namespace treedyn {

/// The name of the body i whose value_of(i) is largest: the first NaN if there is one, else the
/// first of equals.
template <class ValueOf>
const std::string& largest_body(const Model& model, ValueOf&& value_of) {
  std::size_t largest = 0;
  double value = -std::numeric_limits<double>::infinity();
  for (std::size_t i = 0; i < model.bodies.size(); ++i) {
    const double v = value_of(static_cast<int>(i));
    if (std::isnan(v)) return model.bodies[i].name;
    if (v > value) {
      value = v;
      largest = i;
    }
  }
  return model.bodies[largest].name;
}

}  // namespace treedyn
