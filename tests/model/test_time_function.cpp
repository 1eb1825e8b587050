#include <gtest/gtest.h>

#include <cmath>

#include "treedyn/time_function.hpp"

using treedyn::TimeFunction;

namespace {
void expect_derivatives_match_finite_differences(const TimeFunction& f, double t) {
  const double h = 1e-5;
  EXPECT_NEAR(f.first_derivative(t), (f.value(t + h) - f.value(t - h)) / (2 * h), 1e-7);
  EXPECT_NEAR(f.second_derivative(t), (f.first_derivative(t + h) - f.first_derivative(t - h)) / (2 * h), 1e-6);
}
}  // namespace

TEST(TimeFunction, PolynomialValueAndDerivatives) {
  const TimeFunction p = TimeFunction::polynomial({1.0, -2.0, 0.5, 3.0});  // 1 - 2t + 0.5t^2 + 3t^3
  EXPECT_DOUBLE_EQ(p.value(2.0), 1 - 4 + 2 + 24);
  EXPECT_DOUBLE_EQ(p.first_derivative(2.0), -2 + 2 + 36);
  EXPECT_DOUBLE_EQ(p.second_derivative(2.0), 1 + 36);
  expect_derivatives_match_finite_differences(p, 0.7);
}

TEST(TimeFunction, SineAndConstant) {
  const TimeFunction s = TimeFunction::sine(2.0, 3.0, 0.4, 1.0);
  EXPECT_DOUBLE_EQ(s.value(0.5), 1.0 + 2.0 * std::sin(1.5 + 0.4));
  expect_derivatives_match_finite_differences(s, 0.5);
  const TimeFunction c = TimeFunction::constant(4.5);
  EXPECT_EQ(c.value(9.0), 4.5);
  EXPECT_EQ(c.first_derivative(9.0), 0.0);
}

TEST(TimeFunction, CallbackWithoutDerivativesSaysSoWhenAsked) {
  const TimeFunction f = TimeFunction::callback([](double t) { return t * t; });
  EXPECT_EQ(f.value(3.0), 9.0);
  EXPECT_FALSE(f.has_derivatives());
  EXPECT_THROW(f.first_derivative(1.0), std::invalid_argument);
}
