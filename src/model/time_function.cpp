#include "treedyn/time_function.hpp"

#include <cmath>
#include <stdexcept>

namespace treedyn {
namespace {

// d^order/dt^order of sum a_k t^k, by Horner's rule on the differentiated coefficients.
double polynomial_derivative(const std::vector<double>& a, double t, int order) {
  double result = 0.0;
  for (int k = static_cast<int>(a.size()) - 1; k >= order; --k) {
    double factor = 1.0;
    for (int j = 0; j < order; ++j) factor *= static_cast<double>(k - j);
    result = result * t + factor * a[static_cast<std::size_t>(k)];
  }
  return result;
}

template <class... Ts>
struct Overloaded : Ts... {
  using Ts::operator()...;
};
template <class... Ts>
Overloaded(Ts...) -> Overloaded<Ts...>;

double evaluate(const TimeFunction::Kind& kind, double t, int order) {
  return std::visit(
      Overloaded{
          [&](const TimeFunction::Constant& c) { return order == 0 ? c.value : 0.0; },
          [&](const TimeFunction::Polynomial& p) { return polynomial_derivative(p.coefficients, t, order); },
          [&](const TimeFunction::Sine& s) {
            const double arg = s.omega * t + s.phase;
            switch (order) {
              case 0: return s.offset + s.amplitude * std::sin(arg);
              case 1: return s.amplitude * s.omega * std::cos(arg);
              default: return -s.amplitude * s.omega * s.omega * std::sin(arg);
            }
          },
          [&](const TimeFunction::Callback& c) {
            const auto& fn = order == 0 ? c.f : (order == 1 ? c.df : c.ddf);
            if (!fn) throw std::invalid_argument("callback time function has no derivative of order " +
                                                 std::to_string(order));
            return fn(t);
          },
      },
      kind);
}

}  // namespace

double TimeFunction::value(double t) const { return evaluate(kind_, t, 0); }
double TimeFunction::first_derivative(double t) const { return evaluate(kind_, t, 1); }
double TimeFunction::second_derivative(double t) const { return evaluate(kind_, t, 2); }

bool TimeFunction::has_derivatives() const {
  if (const auto* c = std::get_if<Callback>(&kind_)) return c->df && c->ddf;
  return true;
}

bool TimeFunction::operator==(const TimeFunction& other) const {
  if (kind_.index() != other.kind_.index()) return false;
  return std::visit(
      Overloaded{
          [&](const Constant& a) { return a.value == std::get<Constant>(other.kind_).value; },
          [&](const Polynomial& a) { return a.coefficients == std::get<Polynomial>(other.kind_).coefficients; },
          [&](const Sine& a) {
            const auto& b = std::get<Sine>(other.kind_);
            return a.amplitude == b.amplitude && a.omega == b.omega && a.phase == b.phase && a.offset == b.offset;
          },
          [&](const Callback&) { return this == &other; },
      },
      kind_);
}

}  // namespace treedyn
