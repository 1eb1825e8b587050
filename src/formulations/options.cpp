// Formulation settings by name; see include/treedyn/options.hpp.
#include "treedyn/options.hpp"

#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "treedyn/errors.hpp"
#include "treedyn/integrators.hpp"

namespace treedyn {
namespace {

const std::vector<std::string> kOde = {"reference", "dca", "hdca"};
const std::vector<std::string> kThreaded = {"dca", "hdca", "ali3", "half-implicit", "fully-implicit"};
const std::vector<std::string> kAll = {"reference", "dca", "hdca", "ali3", "half-implicit", "fully-implicit"};
const std::vector<std::string> kNewton = {"ali3", "half-implicit", "fully-implicit"};
const std::vector<std::string> kImplicit = {"half-implicit", "fully-implicit"};

std::string integrator_choices() {
  std::string s;
  for (const auto& i : integrator_catalog()) s += (s.empty() ? "" : "|") + i.name;
  return s;
}

struct Option {
  OptionInfo info;
  std::function<void(FormulationSettings&, const OptionValue&, const std::string& formulation)> set;
};

std::string describe(const OptionValue& v) {
  return std::visit(
      [](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        std::ostringstream s;
        if constexpr (std::is_same_v<T, bool>) s << (x ? "true" : "false");
        else if constexpr (std::is_same_v<T, std::string>) s << "'" << x << "'";
        else s << x;
        return s.str();
      },
      v);
}

[[noreturn]] void bad(const std::string& name, const std::string& what, const OptionValue& v) {
  throw std::invalid_argument("option " + name + ": " + what + ", got " + describe(v));
}

double number(const std::string& name, const OptionValue& v, bool zero_allowed) {
  double x = 0.0;
  if (const auto* d = std::get_if<double>(&v)) x = *d;
  else if (const auto* l = std::get_if<long>(&v)) x = static_cast<double>(*l);
  else bad(name, "expected a number", v);
  if (!std::isfinite(x)) bad(name, "must be finite", v);
  if (zero_allowed ? x < 0.0 : x <= 0.0) bad(name, zero_allowed ? "must not be negative" : "must be positive", v);
  return x;
}

int integer(const std::string& name, const OptionValue& v, long minimum) {
  long x = 0;
  if (const auto* l = std::get_if<long>(&v)) x = *l;
  else if (const auto* d = std::get_if<double>(&v); d && std::floor(*d) == *d && std::abs(*d) < 1e9) x = static_cast<long>(*d);
  else bad(name, "expected a whole number", v);
  if (x < minimum) bad(name, "must be at least " + std::to_string(minimum), v);
  if (x > 1'000'000) bad(name, "must be at most 1000000", v);
  return static_cast<int>(x);
}

bool flag(const std::string& name, const OptionValue& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b;
  bad(name, "expected true or false", v);
}

std::string choice(const std::string& name, const OptionValue& v, const std::string& choices) {
  const auto* s = std::get_if<std::string>(&v);
  if (!s) bad(name, "expected one of " + choices, v);
  std::stringstream all(choices);
  for (std::string c; std::getline(all, c, '|');)
    if (c == *s) return *s;
  bad(name, "expected one of " + choices, v);
}

const std::vector<Option>& options() {
  static const std::vector<Option> list = [] {
    std::vector<Option> o;
    auto add = [&](std::string name, std::string type, std::vector<std::string> formulations, std::string description,
                   std::function<void(FormulationSettings&, const OptionValue&, const std::string&)> set) {
      o.push_back({{std::move(name), std::move(type), std::move(formulations), std::move(description)}, std::move(set)});
    };
    add("integrator", integrator_choices(), kOde, "ODE integrator (default dopri5)",
        [](auto& s, const auto& v, auto&) { s.integrator = choice("integrator", v, integrator_choices()); });
    add("rtol", "number", kOde, "relative tolerance of the adaptive integrators",
        [](auto& s, const auto& v, auto&) { s.rtol = number("rtol", v, false); });
    add("atol", "number", kOde, "absolute tolerance of the adaptive integrators",
        [](auto& s, const auto& v, auto&) { s.atol = number("atol", v, false); });
    add("dt", "number", kAll, "step of the fixed-step methods, s (adaptive ones: the first step's scale)",
        [](auto& s, const auto& v, auto&) { s.dt = number("dt", v, false); });
    add("threads", "integer", kThreaded, "threads of the tree passes",
        [](auto& s, const auto& v, auto&) { s.threading.threads = integer("threads", v, 1); });
    add("thread_fallback", "flag", kThreaded,
        "time the passes on the threads against one thread while running and use the faster (default true)",
        [](auto& s, const auto& v, auto&) { s.threading.fallback = flag("thread_fallback", v); });
    add("min_parallel_bodies", "integer", kThreaded, "models with fewer bodies run their passes serially",
        [](auto& s, const auto& v, auto&) { s.threading.min_parallel_bodies = integer("min_parallel_bodies", v, 1); });
    add("baumgarte_alpha", "number", {"dca"}, "Baumgarte stabilisation of loop-closing joints: alpha, 1/s (default 3/T, T = length / speed; 0: none)",
        [](auto& s, const auto& v, auto&) { s.dca.baumgarte_alpha = number("baumgarte_alpha", v, true); });
    add("baumgarte_beta", "number", {"dca"}, "Baumgarte stabilisation of loop-closing joints: beta, 1/s (default 3/T, T = length / speed; 0: none)",
        [](auto& s, const auto& v, auto&) { s.dca.baumgarte_beta = number("baumgarte_beta", v, true); });
    add("planar", "flag", {"hdca"}, "paper 004's planar form", [](auto& s, const auto& v, auto&) { s.hdca.planar = flag("planar", v); });
    add("precision", "double|float", {"hdca"}, "arithmetic (paper 004: float)",
        [](auto& s, const auto& v, auto&) { s.hdca.single_precision = choice("precision", v, "double|float") == "float"; });
    add("inverse", "cholesky|ldup", {"hdca"}, "small-matrix inverses (paper 004: adjugate and LDUP)", [](auto& s, const auto& v, auto&) {
      s.hdca.inverse = choice("inverse", v, "cholesky|ldup") == "ldup" ? InverseMethod::AdjugateLdup : InverseMethod::Cholesky;
    });
    add("error_control", "momenta|velocities", {"hdca"}, "what rtol and atol bound", [](auto& s, const auto& v, auto&) {
      s.hdca.error_control = choice("error_control", v, "momenta|velocities") == "momenta" ? HdcaOptions::ErrorControl::Momenta
                                                                                             : HdcaOptions::ErrorControl::Velocities;
    });
    add("alpha", "number", {"ali3"}, "penalty factor (default: 1e6 raised by powers of ten until alpha h^2 / (4 M) >= 50 and alpha h^2 / (4 M D) >= 0.1, M the total mass, D the tree depth)",
        [](auto& s, const auto& v, auto&) { s.ali3.alpha = number("alpha", v, false); });
    add("newton_max", "integer", kNewton, "Newton-Raphson iterations per step at most", [](auto& s, const auto& v, auto& f) {
      const int n = integer("newton_max", v, 1);
      if (f == "ali3") s.ali3.newton_max = n;
      else s.implicit.newton_max = n;
    });
    add("newton_tol", "number", kNewton, "stop iterating when the Newton increment's norm falls below this",
        [](auto& s, const auto& v, auto& f) {
          if (f == "ali3") s.ali3.newton_tol = number("newton_tol", v, true);
          else s.implicit.newton_tol = number("newton_tol", v, false);
        });
    add("projections", "both|velocities|accelerations|none", {"ali3"}, "mass-orthogonal projections after each step",
        [](auto& s, const auto& v, auto&) {
          const std::string p = choice("projections", v, "both|velocities|accelerations|none");
          s.ali3.project_velocities = p == "both" || p == "velocities";
          s.ali3.project_accelerations = p == "both" || p == "accelerations";
        });
    add("geometric_stiffness", "flag", {"ali3"}, "constraint loads' derivatives in the tangent (paper 000, Sect. 4.4)",
        [](auto& s, const auto& v, auto&) { s.ali3.geometric_stiffness = flag("geometric_stiffness", v); });
    add("linear_solver", "tree|sparse", kImplicit, "Newton systems on the assembly tree or by sparse LU",
        [](auto& s, const auto& v, auto&) {
          s.implicit.linear_solver = choice("linear_solver", v, "tree|sparse") == "sparse" ? ImplicitOptions::LinearSolver::Sparse
                                                                                         : ImplicitOptions::LinearSolver::Tree;
        });
    return o;
  }();
  return list;
}

std::string joined(const std::vector<std::string>& items) {
  std::string s;
  for (const auto& i : items) s += (s.empty() ? "" : ", ") + i;
  return s;
}

}  // namespace

const std::vector<OptionInfo>& option_catalog() {
  static const std::vector<OptionInfo> catalog = [] {
    std::vector<OptionInfo> c;
    for (const Option& o : options()) c.push_back(o.info);
    return c;
  }();
  return catalog;
}

void set_option(FormulationSettings& settings, const std::string& formulation, const std::string& name,
                const OptionValue& value) {
  for (const Option& o : options()) {
    if (o.info.name != name) continue;
    bool applies = false;
    for (const auto& f : o.info.formulations) applies = applies || f == formulation;
    if (!applies)
      throw std::invalid_argument("option " + name + " does not apply to " + formulation + " (it applies to " +
                                  joined(o.info.formulations) + ")");
    o.set(settings, value, formulation);
    return;
  }
  std::vector<std::string> known;
  for (const Option& o : options()) known.push_back(o.info.name);
  throw std::invalid_argument("unknown option " + name + " (known: " + joined(known) + ")");
}

}  // namespace treedyn
