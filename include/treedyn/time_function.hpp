// treedyn — scalar functions of time for loads, actuators and drivers.
#pragma once

#include <functional>
#include <string>
#include <variant>
#include <vector>

namespace treedyn {

/// f(t) with its first and second derivatives (drivers need all three).
/// Kinds: constant, polynomial (sum a_k t^k), sine (offset + amplitude sin(omega t + phase)),
/// and a C++ callback (API only; a model holding one cannot be written to JSON). A callback is
/// part of the Model: simulators sharing the model call it from their own threads, so it must be
/// safe to call concurrently (a pure function of t is).
class TimeFunction {
 public:
  struct Constant {
    double value = 0.0;
  };
  struct Polynomial {
    std::vector<double> coefficients;  // a_0, a_1, ... : f(t) = sum a_k t^k
  };
  struct Sine {
    double amplitude = 0.0, omega = 0.0, phase = 0.0, offset = 0.0;  // omega in rad/s
  };
  struct Callback {
    std::function<double(double)> f, df, ddf;  // df, ddf optional (required by drivers)
  };
  using Kind = std::variant<Constant, Polynomial, Sine, Callback>;

  TimeFunction() = default;
  static TimeFunction constant(double value) { return TimeFunction(Constant{value}); }
  static TimeFunction polynomial(std::vector<double> c) { return TimeFunction(Polynomial{std::move(c)}); }
  static TimeFunction sine(double amplitude, double omega, double phase = 0.0, double offset = 0.0) {
    return TimeFunction(Sine{amplitude, omega, phase, offset});
  }
  static TimeFunction callback(std::function<double(double)> f,
                               std::function<double(double)> df = {},
                               std::function<double(double)> ddf = {}) {
    return TimeFunction(Callback{std::move(f), std::move(df), std::move(ddf)});
  }

  double value(double t) const;
  double first_derivative(double t) const;   // throws for a callback without df
  double second_derivative(double t) const;  // throws for a callback without ddf
  bool has_derivatives() const;
  bool is_callback() const { return std::holds_alternative<Callback>(kind_); }
  const Kind& kind() const { return kind_; }

  /// Exact equality of the data (callbacks compare equal only to themselves by identity).
  bool operator==(const TimeFunction& other) const;

 private:
  explicit TimeFunction(Kind k) : kind_(std::move(k)) {}
  Kind kind_ = Constant{};
};

}  // namespace treedyn
