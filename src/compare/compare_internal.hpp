// Helpers shared by compare.cpp and scaling.cpp.
#pragma once

#include <string>
#include <vector>

#include "treedyn/compare.hpp"

namespace treedyn::compare_detail {

/// x with `digits` significant digits; "-" for NaN.
std::string fmt(double x, int digits = 3);
/// A CSV field, quoted when it holds a comma, quote or newline.
std::string csv_field(const std::string& s);
/// x with 6 significant digits; empty for NaN or infinity.
std::string csv_number(double x);
/// The catalogue's names, or `requested` after checking each (std::invalid_argument if unknown).
std::vector<std::string> formulation_names(const std::vector<std::string>& requested);
/// Throws std::invalid_argument for a non-positive option.
void validate(const CompareOptions& options);
/// The interval of the common sample times.
double sample_interval(const CompareOptions& options, double t_end);

}  // namespace treedyn::compare_detail
