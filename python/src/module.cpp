// treedyn's Python module (treedyn._treedyn): the C++ library's Model, ModelBuilder, Simulator,
// whole runs and comparisons, with NumPy arrays. The Python package (python/treedyn/__init__.py)
// adds the Result class, load_result, plotting and the exceptions' Python side.
//
// Arrays handed to Python are copies that own their data: none points into a simulator that may
// be deleted or moved on. Long calls (simulate, compare, advance_to) release the GIL; a Python
// load function takes it back for each call.
#include <pybind11/eigen.h>
#include <pybind11/functional.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <fstream>

#include "treedyn/compare.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_import.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/options.hpp"
#include "treedyn/projection.hpp"
#include "treedyn/result_writer.hpp"
#include "treedyn/simulation.hpp"
#include "treedyn/topology.hpp"
#include "treedyn/version.hpp"

namespace py = pybind11;
using namespace treedyn;

namespace {

using Array = py::array_t<double>;

// Conversions -------------------------------------------------------------------------------------

Vec3 vec3(const py::handle& h, const char* what) {
  const auto a = py::cast<Array>(h);
  if (a.size() != 3) throw std::invalid_argument(std::string(what) + ": expected 3 numbers, got " + std::to_string(a.size()));
  const double* d = a.data();
  return {d[0], d[1], d[2]};
}

/// Inertia as a number (every axis), 3 numbers (principal) or a 3 x 3 matrix.
Mat3 inertia_of(const py::handle& h) {
  if (py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h)) return py::cast<double>(h) * Mat3::Identity();
  const auto a = py::cast<Array>(h);
  if (a.size() == 3) return Vec3(a.data()[0], a.data()[1], a.data()[2]).asDiagonal();
  if (a.size() == 9) {
    Mat3 J;
    for (int i = 0; i < 9; ++i) J(i / 3, i % 3) = a.data()[i];
    return J;
  }
  throw std::invalid_argument("inertia: expected a number, 3 principal values or a 3 x 3 matrix");
}

/// Orientation as a quaternion (w, x, y, z) or a 3 x 3 rotation matrix (body -> global).
Quat orientation_of(const py::handle& h) {
  const auto a = py::cast<Array>(h);
  if (a.size() == 4) return Quat(a.data()[0], a.data()[1], a.data()[2], a.data()[3]);
  if (a.size() == 9) {
    Mat3 R;
    for (int i = 0; i < 9; ++i) R(i / 3, i % 3) = a.data()[i];
    return Quat(R);
  }
  throw std::invalid_argument("orientation: expected a quaternion (w, x, y, z) or a 3 x 3 rotation matrix");
}

/// A function of time: a number (constant), {"polynomial": [a0, a1, ...]}, {"sine": {"amplitude",
/// "omega", "phase", "offset"}}, or a Python callable f(t) (optionally with "df", "ddf" in a dict
/// {"function": f, "df": ..., "ddf": ...}; called with the GIL, so slow).
TimeFunction time_function(const py::handle& h) {
  if (py::isinstance<py::float_>(h) || py::isinstance<py::int_>(h)) return TimeFunction::constant(py::cast<double>(h));
  auto callable = [](const py::handle& f) -> std::function<double(double)> {
    if (f.is_none()) return {};
    auto fn = py::reinterpret_borrow<py::function>(f);
    return [fn](double t) {
      py::gil_scoped_acquire gil;
      return py::cast<double>(fn(t));
    };
  };
  if (py::isinstance<py::dict>(h)) {
    const auto d = py::cast<py::dict>(h);
    if (d.contains("polynomial")) return TimeFunction::polynomial(py::cast<std::vector<double>>(d["polynomial"]));
    if (d.contains("sine")) {
      const auto s = py::cast<py::dict>(d["sine"]);
      auto get = [&](const char* k) { return s.contains(k) ? py::cast<double>(s[k]) : 0.0; };
      return TimeFunction::sine(get("amplitude"), get("omega"), get("phase"), get("offset"));
    }
    if (d.contains("function"))
      return TimeFunction::callback(callable(d["function"]), d.contains("df") ? callable(d["df"]) : nullptr,
                                    d.contains("ddf") ? callable(d["ddf"]) : nullptr);
    throw std::invalid_argument("a function of time: expected a number, {'polynomial': [...]}, {'sine': {...}} or a callable");
  }
  if (PyCallable_Check(h.ptr())) return TimeFunction::callback(callable(h));
  throw std::invalid_argument("a function of time: expected a number, {'polynomial': [...]}, {'sine': {...}} or a callable");
}

OptionValue option_value(const std::string& name, const py::handle& v) {
  if (py::isinstance<py::bool_>(v)) return py::cast<bool>(v);
  if (py::isinstance<py::int_>(v)) return py::cast<long>(v);
  if (py::isinstance<py::float_>(v)) return py::cast<double>(v);
  if (py::isinstance<py::str>(v)) return py::cast<std::string>(v);
  throw std::invalid_argument("option " + name + ": expected a number, a flag or a name, got " +
                              py::cast<std::string>(py::str(v.get_type())));
}

/// Formulation settings from keyword options, each checked (options.hpp).
FormulationSettings settings_of(const std::string& formulation, const py::dict& options) {
  FormulationSettings s;
  for (const auto& [key, value] : options) {
    const std::string name = py::cast<std::string>(key);
    set_option(s, formulation, name, option_value(name, value));
  }
  return s;
}

Array matrix(const std::vector<double>& data, std::vector<py::ssize_t> shape) {
  Array a(shape);
  std::copy(data.begin(), data.end(), a.mutable_data());
  return a;
}

Array vector_array(const Eigen::VectorXd& v) {
  Array a(v.size());
  std::copy(v.data(), v.data() + v.size(), a.mutable_data());
  return a;
}

/// One body's pose (7 numbers: x y z qw qx qy qz, trajectory.csv's order) and twist (6: v, w),
/// to and from flat arrays: the one place that knows the layout Python sees.
void pose_to(const BodyState& b, double* p) {
  p[0] = b.r.x(), p[1] = b.r.y(), p[2] = b.r.z(), p[3] = b.q.w(), p[4] = b.q.x(), p[5] = b.q.y(), p[6] = b.q.z();
}
void twist_to(const BodyState& b, double* w) {
  w[0] = b.v.x(), w[1] = b.v.y(), w[2] = b.v.z(), w[3] = b.w.x(), w[4] = b.w.y(), w[5] = b.w.z();
}
void pose_from(const double* p, BodyState& b) {
  b.r = Vec3(p[0], p[1], p[2]);
  b.q = Quat(p[3], p[4], p[5], p[6]);
}
void twist_from(const double* w, BodyState& b) {
  b.v = Vec3(w[0], w[1], w[2]);
  b.w = Vec3(w[3], w[4], w[5]);
}

py::dict info_of(const Model& m) {
  const Topology topology(m);
  py::list bodies, joints, loops;
  for (const Body& b : m.bodies) bodies.append(b.name);
  for (const Joint& j : m.joints)
    joints.append(py::dict(py::arg("name") = j.name, py::arg("type") = to_string(j.type),
                           py::arg("parent") = m.body_name(j.parent), py::arg("child") = m.body_name(j.child)));
  for (int j : topology.loop_joints()) loops.append(m.joints[static_cast<std::size_t>(j)].name);
  const ConsistencyReport c = check_initial_state(m, 1e-6);
  return py::dict(py::arg("name") = m.name, py::arg("description") = m.description, py::arg("bodies") = bodies,
                  py::arg("joints") = joints, py::arg("drivers") = static_cast<int>(m.drivers.size()),
                  py::arg("constraint_equations") = topology.constraint_equations(),
                  py::arg("gruebler_mobility") = topology.gruebler_mobility(), py::arg("jacobian_rank") = topology.jacobian_rank(),
                  py::arg("mobility") = topology.mobility(), py::arg("redundant_constraints") = topology.redundant_constraints(),
                  py::arg("loop_joints") = loops,
                  py::arg("floating_subsystems") = static_cast<int>(topology.floating_subsystems().size()),
                  py::arg("initial_state_consistent") = c.consistent());
}

// Whole runs -------------------------------------------------------------------------------------

/// A growing buffer of doubles shared with the NumPy arrays that view it: an array keeps the
/// buffer alive (through a capsule) for as long as it exists, whatever happens to the run.
using Buffer = std::shared_ptr<std::vector<double>>;

/// A read-only array viewing `buffer` (no copy). Read-only because `save` writes from the same
/// numbers; `numpy.array(x)` gives a writable copy.
Array view(const Buffer& buffer, std::vector<py::ssize_t> shape) {
  auto* owner = new Buffer(buffer);
  py::capsule keep(owner, [](void* p) { delete static_cast<Buffer*>(p); });
  Array a(std::move(shape), buffer->data(), keep);
  py::detail::array_proxy(a.ptr())->flags &= ~py::detail::npy_api::NPY_ARRAY_WRITEABLE_;
  return a;
}

/// Every sample of a run, kept in C++ as flat arrays sample after sample: the arrays Python reads
/// (views, no copy) and the files `save` writes through the command line's own writer.
struct RecordedRun : SampleSink {
  ModelPtr model;
  std::shared_ptr<const CoordinateMap> map;
  std::size_t n = 0, nj = 0;  // bodies, joints
  Buffer t = std::make_shared<std::vector<double>>(), poses = std::make_shared<std::vector<double>>(),
         twists = std::make_shared<std::vector<double>>(), accelerations = std::make_shared<std::vector<double>>(),
         reactions = std::make_shared<std::vector<double>>(), q = std::make_shared<std::vector<double>>(),
         qd = std::make_shared<std::vector<double>>();
  std::vector<MetricsSample> metrics;
  std::vector<SolverStats> stats;
  std::vector<std::vector<double>> driver_efforts;
  std::vector<double> extra_power;
  bool with_reactions = false;  // decided by the first sample; later ones without reactions read NaN
  Eigen::VectorXd reference, q_now, qd_now;
  SimulationResult result;

  RecordedRun(ModelPtr m, std::shared_ptr<const CoordinateMap> coordinates)
      : model(std::move(m)),
        map(std::move(coordinates)),
        n(model->bodies.size()),
        nj(model->joints.size()),
        reference(Eigen::VectorXd::Zero(map->nq())),
        q_now(map->nq()),
        qd_now(map->nv()) {}

  std::size_t samples() const { return t->size(); }

  /// Room for `k` samples, so that recording does not reallocate during the run.
  void reserve(std::size_t k) {
    t->reserve(k), poses->reserve(k * n * 7), twists->reserve(k * n * 6), accelerations->reserve(k * n * 6);
    q->reserve(k * static_cast<std::size_t>(map->nq())), qd->reserve(k * static_cast<std::size_t>(map->nv()));
    metrics.reserve(k), stats.reserve(k), extra_power.reserve(k);
  }

  void write(const Snapshot& s, const MetricsSample& m, const SolverStats& st) override {
    if (samples() == 0) with_reactions = nj > 0 && s.reactions.size() == nj;
    t->push_back(s.t);
    const std::size_t at = poses->size() / 7;  // bodies recorded so far
    poses->resize(poses->size() + 7 * n), twists->resize(twists->size() + 6 * n);
    for (std::size_t i = 0; i < n; ++i) {
      const BodyState& b = s.bodies[i];
      pose_to(b, poses->data() + 7 * (at + i));
      twist_to(b, twists->data() + 6 * (at + i));
      accelerations->insert(accelerations->end(), {b.a.x(), b.a.y(), b.a.z(), b.alpha.x(), b.alpha.y(), b.alpha.z()});
    }
    if (with_reactions) {
      if (s.reactions.size() == nj) {
        for (const JointReaction& j : s.reactions)
          reactions->insert(reactions->end(), {j.force.x(), j.force.y(), j.force.z(), j.torque.x(), j.torque.y(), j.torque.z()});
      } else {
        reactions->insert(reactions->end(), nj * 6, std::numeric_limits<double>::quiet_NaN());
      }
    }
    metrics.push_back(m);
    stats.push_back(st);
    driver_efforts.push_back(s.driver_efforts);
    extra_power.push_back(s.extra_power);
    map->measure(s.bodies, q_now, qd_now, samples() > 1 ? &reference : nullptr);  // angles continuous
    reference = q_now;
    q->insert(q->end(), q_now.data(), q_now.data() + q_now.size());
    qd->insert(qd->end(), qd_now.data(), qd_now.data() + qd_now.size());
  }

  /// A run made again from its start (RunOptions::choose_step): every sample forgotten.
  bool restart() override {
    for (const Buffer& b : {t, poses, twists, accelerations, reactions, q, qd}) b->clear();
    metrics.clear(), stats.clear(), driver_efforts.clear(), extra_power.clear();
    with_reactions = false;
    reference.setZero();
    return true;
  }

  /// Sample s as the writer's Snapshot.
  Snapshot snapshot(std::size_t s) const {
    Snapshot snap;
    snap.t = (*t)[s];
    snap.bodies.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
      const double* a = accelerations->data() + (s * n + i) * 6;
      BodyState& b = snap.bodies[i];
      pose_from(poses->data() + (s * n + i) * 7, b);
      twist_from(twists->data() + (s * n + i) * 6, b);
      b.a = Vec3(a[0], a[1], a[2]), b.alpha = Vec3(a[3], a[4], a[5]);
    }
    if (with_reactions) {
      snap.reactions.resize(nj);
      for (std::size_t j = 0; j < nj; ++j) {
        const double* r = reactions->data() + (s * nj + j) * 6;
        snap.reactions[j].force = Vec3(r[0], r[1], r[2]);
        snap.reactions[j].torque = Vec3(r[3], r[4], r[5]);
      }
    }
    snap.driver_efforts = driver_efforts[s];
    snap.extra_power = extra_power[s];
    return snap;
  }

  py::dict arrays() const {
    const auto k = static_cast<py::ssize_t>(samples());
    const auto nb = static_cast<py::ssize_t>(n);
    auto scalar = [&](double MetricsSample::*field) {
      Array a(k);
      for (py::ssize_t s = 0; s < k; ++s) a.mutable_data()[s] = metrics[static_cast<std::size_t>(s)].*field;
      return a;
    };
    auto error = [&](double ConstraintErrors::*field) {
      Array a(k);
      for (py::ssize_t s = 0; s < k; ++s) a.mutable_data()[s] = metrics[static_cast<std::size_t>(s)].max.*field;
      return a;
    };
    py::dict d;
    d["t"] = view(t, {k});
    d["poses"] = view(poses, {k, nb, 7});
    d["twists"] = view(twists, {k, nb, 6});
    d["accelerations"] = view(accelerations, {k, nb, 6});
    d["q"] = view(q, {k, static_cast<py::ssize_t>(map->nq())});
    d["qd"] = view(qd, {k, static_cast<py::ssize_t>(map->nv())});
    d["kinetic_energy"] = scalar(&MetricsSample::kinetic);
    d["potential_energy"] = scalar(&MetricsSample::potential);
    d["total_energy"] = scalar(&MetricsSample::total);
    d["work_nonconservative"] = scalar(&MetricsSample::work_nonconservative);
    d["energy_drift"] = scalar(&MetricsSample::energy_drift);
    d["position_error"] = error(&ConstraintErrors::position);
    d["velocity_error"] = error(&ConstraintErrors::velocity);
    d["acceleration_error"] = error(&ConstraintErrors::acceleration);
    d["reactions"] = with_reactions ? py::object(view(reactions, {k, static_cast<py::ssize_t>(nj), 6})) : py::none();
    d["q_names"] = map->q_names();
    d["qd_names"] = map->qd_names();
    std::vector<std::string> bodies, joints;
    for (const Body& b : model->bodies) bodies.push_back(b.name);
    for (const Joint& j : model->joints) joints.push_back(j.name);
    d["body_names"] = bodies;
    d["joint_names"] = joints;
    return d;
  }

  /// The rest of metrics.csv per sample, for Result.column: solver counters (k, 3: steps,
  /// rhs_evaluations, newton_iterations), each joint's then each driver's constraint errors
  /// (k, joints + drivers, 3), force elements (k, elements, 2: length or angle or coordinate,
  /// then tension or torque or effort; springs, rotational springs, actuators in the model's
  /// order), drivers' efforts (k, drivers) or None.
  /// Built only when asked (Result.column), not for every run.
  py::dict metric_columns() const {
    py::dict d;
    const auto k = static_cast<py::ssize_t>(samples());
    const auto nc = static_cast<py::ssize_t>(nj + model->drivers.size());
    const auto ne = static_cast<py::ssize_t>(model->springs.size() + model->rotational_springs.size() + model->actuators.size());
    const auto nd = static_cast<py::ssize_t>(model->drivers.size());
    Array solver({k, py::ssize_t{3}}), errors({k, nc, py::ssize_t{3}}), elements({k, ne, py::ssize_t{2}});
    bool with_efforts = nd > 0 && k > 0 && driver_efforts[0].size() == static_cast<std::size_t>(nd);
    Array efforts({with_efforts ? k : py::ssize_t{0}, nd});
    const double nan = std::numeric_limits<double>::quiet_NaN();
    for (py::ssize_t s = 0; s < k; ++s) {
      const auto u = static_cast<std::size_t>(s);
      double* row = solver.mutable_data(s);
      row[0] = static_cast<double>(stats[u].steps), row[1] = static_cast<double>(stats[u].rhs_evaluations);
      row[2] = static_cast<double>(stats[u].newton_iterations);
      for (py::ssize_t c = 0; c < nc; ++c) {
        const auto& e = metrics[u].joints;
        const bool has = static_cast<std::size_t>(c) < e.size();
        double* x = errors.mutable_data(s, c);
        x[0] = has ? e[static_cast<std::size_t>(c)].position : nan;
        x[1] = has ? e[static_cast<std::size_t>(c)].velocity : nan;
        x[2] = has ? e[static_cast<std::size_t>(c)].acceleration : nan;
      }
      for (py::ssize_t c = 0; c < ne; ++c) {
        const auto& e = metrics[u].elements;
        const bool has = static_cast<std::size_t>(c) < e.size();
        double* x = elements.mutable_data(s, c);
        x[0] = has ? e[static_cast<std::size_t>(c)].coordinate : nan;
        x[1] = has ? e[static_cast<std::size_t>(c)].load : nan;
      }
      if (with_efforts)
        for (py::ssize_t c = 0; c < nd; ++c)
          efforts.mutable_data(s)[c] = driver_efforts[u].size() == static_cast<std::size_t>(nd) ? driver_efforts[u][static_cast<std::size_t>(c)] : nan;
    }
    std::vector<std::string> drivers, element_columns;
    for (const Driver& x : model->drivers) drivers.push_back(x.name);
    for (const SpringDamper& e : model->springs) element_columns.insert(element_columns.end(), {e.name + ".length", e.name + ".tension"});
    for (const RotationalSpringDamper& e : model->rotational_springs)
      element_columns.insert(element_columns.end(), {e.name + ".angle", e.name + ".torque"});
    for (const JointActuator& e : model->actuators) element_columns.insert(element_columns.end(), {e.name + ".coordinate", e.name + ".effort"});
    d["solver"] = solver;
    d["constraint_errors"] = errors;
    d["element_loads"] = elements;
    d["driver_efforts"] = with_efforts ? py::object(efforts) : py::none();
    d["driver_names"] = drivers;
    d["element_columns"] = element_columns;  // two per element, as metrics.csv names them
    return d;
  }

  /// The command line's files (trajectory.csv, metrics.csv, joints.csv, summary.json), written by
  /// its own writer from the kept samples.
  void save(const std::string& directory) const {
    ResultWriter writer(*model, directory, map.get());
    for (std::size_t s = 0; s < samples(); ++s) writer.write(snapshot(s), metrics[s], stats[s]);
    writer.finish(result);
  }
};

/// A Python exception raised by a load function, kept on its way through the C++ step (which
/// turns it into a failure) to be raised again, as itself, by the call that stepped.
thread_local std::unique_ptr<py::error_already_set> pending_python_error;

/// Runs f (with the GIL held, or released while it runs when `release`); a Python exception a
/// load function raised inside comes out as itself, not as the step's failure.
template <class F>
auto stepping(F&& f, bool release) {
  try {
    if (!release) return f();
    py::gil_scoped_release unlocked;
    return f();
  } catch (...) {
    if (pending_python_error) {
      py::error_already_set e = std::move(*pending_python_error);
      pending_python_error.reset();
      throw e;
    }
    throw;
  }
}

/// A stop hook that answers Ctrl-C: takes the GIL to let Python see its signals (KeyboardInterrupt
/// is raised by the caller once the run has ended). Asked after each sample interval and, as the
/// simulator's interrupt check, before each step and right-hand side inside one; it takes the GIL
/// at most every 20 ms of the run (taking it after each of thousands of short intervals cost a
/// long run 1 %) and reads the coarse clock (a few ns, where a right-hand side of the smallest
/// models takes a few hundred).
struct InterruptCheck {
  bool interrupted = false;
  double last = now();
  bool operator()() {
    if (interrupted) return true;
    const double t = now();
    if (t - last < 0.02) return false;
    last = t;
    py::gil_scoped_acquire gil;
    if (PyErr_CheckSignals() != 0) {
      interrupted = true;
      return true;
    }
    return false;
  }
  static double now() {
    timespec ts{};
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
  }
};

/// A simulator's advance_to with Ctrl-C heard inside it: KeyboardInterrupt, the simulator at its
/// last completed output or step (Simulator::set_interrupt). The simulator's own interrupt check
/// is restored after.
void advance_interruptibly(Simulator& s, double t) {
  InterruptCheck check;
  const InterruptScope asked(s, [&check] { return check(); });
  try {
    stepping([&] { s.advance_to(t); }, true);
  } catch (const Interrupted&) {
    if (check.interrupted) throw py::error_already_set();  // Python's KeyboardInterrupt, as raised
    throw;
  }
}

/// Python's estimate_error: None leaves the defaults (fixed-step runs and passages near singular
/// positions checked); True a companion always, False none (RunOptions/CompareOptions
/// estimate_error and verify).
void set_estimate(const py::handle& value, bool& estimate_error, bool& verify) {
  if (value.is_none()) return;
  estimate_error = verify = py::cast<bool>(value);
}

/// The self-judgement's thresholds from Python's `checks`, as the CLI's --check-*.
JudgementOptions judgement_options(const py::dict& checks) {
  JudgementOptions o;
  for (const auto& [key, value] : checks) {
    const auto name = py::cast<std::string>(key);
    const double x = py::cast<double>(value);
    if (!(x >= 0.0) || !std::isfinite(x))
      throw std::invalid_argument("checks: " + name + " must be a finite number >= 0 (0: not checked), got " + sci(x));
    if (name == "energy") o.energy = x;
    else if (name == "position") o.position = x;
    else if (name == "velocity") o.velocity = x;
    else if (name == "quaternion") o.quaternion = x;
    else if (name == "accuracy") o.accuracy = x;
    else if (name == "branch") o.branch = x;
    else throw std::invalid_argument("checks: no check named '" + name +
                                     "' (energy, position, velocity, quaternion, accuracy, branch)");
  }
  return o;
}

std::shared_ptr<RecordedRun> simulate(const std::shared_ptr<Model>& model, const std::string& formulation, double t_end,
                                      double dt, int sample_every, const py::dict& options, const py::dict& checks,
                                      const py::object& estimate_error, bool choose_step) {
  if (!model) throw std::invalid_argument("simulate: no model");
  FormulationSettings settings = settings_of(formulation, options);
  if (!options.contains("dt")) settings.dt = dt;
  auto sim = std::make_shared<Simulator>(model, formulation, settings);
  auto run = std::make_shared<RecordedRun>(model, std::shared_ptr<const CoordinateMap>(sim, &sim->coordinates()));
  RunOptions ro;
  ro.t_end = t_end;
  ro.dt = dt;
  ro.sample_every = sample_every;
  set_estimate(estimate_error, ro.estimate_error, ro.verify);
  ro.choose_step = choose_step && !options.contains("dt");
  ro.judge = judgement_options(checks);
  run->reserve(static_cast<std::size_t>(std::clamp(std::ceil(t_end / (dt * sample_every)), 0.0, double(1 << 20))) + 2);
  InterruptCheck check;
  ro.stop = [&check] { return check(); };
  run->result = stepping([&] { return run_simulation(*sim, ro, run.get()); }, true);
  if (pending_python_error) {  // a load function raised: the run failed on it; raise it as itself
    py::error_already_set e = std::move(*pending_python_error);
    pending_python_error.reset();
    throw e;
  }
  if (check.interrupted) PyErr_Clear();  // raised again by the Python side, with the partial result
  return run;
}

// Simulator ----------------------------------------------------------------------------------------

/// The Python load function f(t, q, qd) -> effort, or (effort, wrenches), or None: called with the
/// GIL at every evaluation of the loads.
LoadFunction python_load_function(py::function fn, int nv, int bodies) {
  return [fn = std::move(fn), nv, bodies](const LoadState& s, LoadOutput& out) {
    py::gil_scoped_acquire gil;
    py::object r;
    try {
      r = fn(s.t, vector_array(s.q), vector_array(s.qd));
    } catch (py::error_already_set& e) {
      const std::string what = e.what();
      pending_python_error = std::make_unique<py::error_already_set>(std::move(e));
      throw std::runtime_error("the load function raised " + what);
    }
    if (r.is_none()) return;
    py::object effort = r, wrench = py::none();
    if (py::isinstance<py::tuple>(r)) {
      const auto t = py::cast<py::tuple>(r);
      if (t.size() != 2) throw std::invalid_argument("the load function returned a tuple of " + std::to_string(t.size()) + ", not (effort, wrenches)");
      effort = t[0];
      wrench = t[1];
    }
    if (!effort.is_none()) {
      const auto e = py::cast<Array>(effort);
      if (e.size() != nv)
        throw std::invalid_argument("the load function returned " + std::to_string(e.size()) + " efforts, not " + std::to_string(nv));
      std::copy(e.data(), e.data() + nv, out.effort.data());
    }
    if (!wrench.is_none()) {
      const auto w = py::cast<Array>(wrench);
      if (w.size() != 6 * bodies)
        throw std::invalid_argument("the load function returned wrenches of " + std::to_string(w.size()) + " numbers, not " +
                                    std::to_string(bodies) + " x 6");
      for (int b = 0; b < bodies; ++b)
        for (int c = 0; c < 6; ++c) out.wrench[static_cast<std::size_t>(b)](c) = w.data()[6 * b + c];
    }
  };
}

Array poses_of(const SystemState& s) {
  Array poses({static_cast<py::ssize_t>(s.size()), py::ssize_t{7}});
  for (std::size_t i = 0; i < s.size(); ++i) pose_to(s[i], poses.mutable_data() + 7 * i);
  return poses;
}

Array twists_of(const SystemState& s) {
  Array twists({static_cast<py::ssize_t>(s.size()), py::ssize_t{6}});
  for (std::size_t i = 0; i < s.size(); ++i) twist_to(s[i], twists.mutable_data() + 6 * i);
  return twists;
}

SystemState states_of(const Array& poses, const Array& twists, std::size_t n) {
  if (poses.size() != static_cast<py::ssize_t>(7 * n) || twists.size() != static_cast<py::ssize_t>(6 * n))
    throw std::invalid_argument("body states: expected poses of " + std::to_string(n) + " x 7 and twists of " + std::to_string(n) +
                                " x 6 numbers, got " + std::to_string(poses.size()) + " and " + std::to_string(twists.size()));
  SystemState s(n);
  for (std::size_t i = 0; i < n; ++i) {
    pose_from(poses.data() + 7 * i, s[i]);
    twist_from(twists.data() + 6 * i, s[i]);
  }
  return s;
}

py::dict stats_of(const SolverStats& s) {
  return py::dict(py::arg("steps") = s.steps, py::arg("rhs_evaluations") = s.rhs_evaluations,
                  py::arg("newton_iterations") = s.newton_iterations, py::arg("projections") = s.projections,
                  py::arg("rejected_steps") = s.rejected_steps);
}

}  // namespace

PYBIND11_MODULE(_treedyn, m) {
  m.doc() = "treedyn's C++ core; use the treedyn package";
  m.attr("__version__") = treedyn::version();
  // What simulate() takes where neither its caller nor the model file says (SimulationDefaults).
  m.attr("_FALLBACK_T_END") = SimulationDefaults::kTEnd;
  m.attr("_FALLBACK_DT") = SimulationDefaults::kDt;
  m.attr("_FALLBACK_FORMULATION") = SimulationDefaults::kFormulation;

  py::register_exception<ModelError>(m, "ModelError", PyExc_ValueError);
  static py::exception<SimulationError> simulation_failed(m, "SimulationFailed", PyExc_RuntimeError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const SimulationError& e) {
      py::object instance = py::reinterpret_borrow<py::object>(simulation_failed.ptr())(e.what());
      instance.attr("time") = e.time();
      instance.attr("result") = py::none();
      PyErr_SetObject(simulation_failed.ptr(), instance.ptr());
    }
  });

  // Model ----------------------------------------------------------------------------------------
  py::class_<Model, std::shared_ptr<Model>>(m, "Model", "An immutable, validated model, shared by the simulators that run it.")
      .def_property_readonly("name", [](const Model& x) { return x.name; })
      .def_property_readonly("description", [](const Model& x) { return x.description; })
      .def_property_readonly("gravity", [](const Model& x) { return Eigen::Vector3d(x.gravity); })
      .def_property_readonly("body_names", [](const Model& x) {
        std::vector<std::string> n;
        for (const Body& b : x.bodies) n.push_back(b.name);
        return n;
      })
      .def_property_readonly("joint_names", [](const Model& x) {
        std::vector<std::string> n;
        for (const Joint& j : x.joints) n.push_back(j.name);
        return n;
      })
      .def_property_readonly("bodies", [](const Model& x) {
        py::list l;
        for (const Body& b : x.bodies)
          l.append(py::dict(py::arg("name") = b.name, py::arg("mass") = b.mass, py::arg("inertia") = Eigen::Matrix3d(b.inertia),
                            py::arg("position") = Eigen::Vector3d(b.position),
                            py::arg("orientation") = Eigen::Vector4d(b.orientation.w(), b.orientation.x(), b.orientation.y(), b.orientation.z()),
                            py::arg("velocity") = Eigen::Vector3d(b.velocity),
                            py::arg("angular_velocity") = Eigen::Vector3d(b.angular_velocity)));
        return l;
      })
      .def_property_readonly("defaults", [](const Model& x) {
        py::dict d;
        d["t_end"] = x.defaults.t_end ? py::cast(*x.defaults.t_end) : py::none();
        d["dt"] = x.defaults.dt ? py::cast(*x.defaults.dt) : py::none();
        d["formulation"] = x.defaults.formulation ? py::cast(*x.defaults.formulation) : py::none();
        d["integrator"] = x.defaults.integrator ? py::cast(*x.defaults.integrator) : py::none();
        return d;
      })
      .def("info", &info_of, "bodies, joints, mobility, redundancy, loops, as a dict")
      .def("to_json", [](const Model& x) { return write_model_json(x); })
      .def("save", [](const Model& x, const std::string& path) { write_model_file(x, path); }, py::arg("path"))
      .def("assembled", [](const Model& x) {
            AssemblyReport report;
            return std::make_shared<Model>(assemble_initial_state(x, report));
          }, "a copy with the initial state projected onto the joints (the command line's --assemble)")
      .def("__repr__", [](const Model& x) {
        return "<treedyn.Model '" + x.name + "': " + std::to_string(x.body_count()) + " bodies, " +
               std::to_string(x.joint_count()) + " joints>";
      });
  // overrides: (path, JSON text) pairs, as ModelOverride (include/treedyn/model_json.hpp)
  auto overrides_of = [](const std::vector<std::pair<std::string, std::string>>& pairs) {
    std::vector<ModelOverride> o;
    for (const auto& [path, value] : pairs) o.push_back({path, value});
    return o;
  };
  // (model, import warnings): the warnings of a URDF, MJCF or SDFormat file (python/treedyn
  // raises them as ModelImportWarning).
  m.def("load_model",
        [overrides_of](const std::string& path, const std::vector<std::pair<std::string, std::string>>& overrides) {
          std::vector<std::string> warnings;
          auto model = std::make_shared<Model>(read_model_file(path, overrides_of(overrides), &warnings));
          return py::make_tuple(model, warnings);
        },
        py::arg("path"), py::arg("overrides") = std::vector<std::pair<std::string, std::string>>{});
  m.def("model_format", [](const std::string& path) { return std::string(to_string(model_format_of(path))); },
        py::arg("path"), "the format a model file is read as, from its extension: JSON, URDF, MJCF or SDFormat");
  m.def("import_model_file",
        [](const std::string& path, double connector_mass_fraction) {
          ImportOptions options;
          options.connector_mass_fraction = connector_mass_fraction;
          ImportedModel imported = import_model_file(path, options);
          return py::make_tuple(std::make_shared<Model>(std::move(imported.model)), imported.warnings);
        },
        py::arg("path"), py::arg("connector_mass_fraction") = ImportOptions{}.connector_mass_fraction);
  m.def("model_from_json",
        [overrides_of](const std::string& text, const std::vector<std::pair<std::string, std::string>>& overrides,
                       const std::string& source) {
          return std::make_shared<Model>(parse_model_json(text, source, overrides_of(overrides)));
        },
        py::arg("text"), py::arg("overrides") = std::vector<std::pair<std::string, std::string>>{},
        py::arg("source") = "<model>");

  // ModelBuilder ---------------------------------------------------------------------------------
  py::class_<ModelBuilder>(m, "ModelBuilder", "Builds a model item by item; placements in global coordinates.")
      .def(py::init<std::string>(), py::arg("name") = "model")
      .def("description", [](ModelBuilder& b, std::string t) -> ModelBuilder& { return b.description(std::move(t)); },
           py::return_value_policy::reference_internal)
      .def("gravity", [](ModelBuilder& b, const py::object& g) -> ModelBuilder& { return b.gravity(vec3(g, "gravity")); },
           py::return_value_policy::reference_internal)
      .def("body",
           [](ModelBuilder& builder, const std::string& name, double mass, const py::object& inertia, const py::object& position,
              const py::object& orientation, const py::object& velocity, const py::object& angular_velocity,
              const py::object& shape) -> ModelBuilder& {
             Body b;
             b.name = name;
             b.mass = mass;
             b.inertia = inertia_of(inertia);
             b.position = vec3(position, "position");
             if (!orientation.is_none()) b.orientation = orientation_of(orientation);
             b.velocity = vec3(velocity, "velocity");
             b.angular_velocity = vec3(angular_velocity, "angular_velocity");
             if (!shape.is_none())  // read as a model file's shape is, with its checks
               b.shape = parse_shape_json(py::cast<std::string>(py::module_::import("json").attr("dumps")(shape)),
                                          "body '" + name + "' shape");
             return builder.body(b);
           },
           py::arg("name"), py::arg("mass"), py::arg("inertia"), py::arg("position") = Eigen::Vector3d::Zero(),
           py::arg("orientation") = py::none(), py::arg("velocity") = Eigen::Vector3d::Zero(),
           py::arg("angular_velocity") = Eigen::Vector3d::Zero(), py::arg("shape") = py::none(),
           py::return_value_policy::reference_internal)
      .def("joint",
           [](ModelBuilder& b, const std::string& name, const std::string& type, const std::string& parent, const std::string& child,
              const py::object& location, const py::object& axis, const py::object& axis2) -> ModelBuilder& {
             const auto t = joint_type_from_string(type);
             if (!t) throw std::invalid_argument("joint '" + name + "': unknown type '" + type + "'");
             std::optional<Vec3> second;
             if (!axis2.is_none()) second = vec3(axis2, "axis2");
             return b.joint(JointSpec::at(name, *t, parent, child, vec3(location, "location"), vec3(axis, "axis"), second));
           },
           py::arg("name"), py::arg("type"), py::arg("parent"), py::arg("child"), py::arg("location"),
           py::arg("axis") = Eigen::Vector3d::UnitZ(), py::arg("axis2") = py::none(), py::return_value_policy::reference_internal)
      .def("spring_damper",
           [](ModelBuilder& b, const std::string& name, const std::string& body_a, const py::object& point_a,
              const std::string& body_b, const py::object& point_b, double stiffness, double damping,
              std::optional<double> free_length) -> ModelBuilder& {
             SpringDamperSpec s;
             s.name = name;
             s.body_a = body_a;
             s.body_b = body_b;
             s.point_a = {vec3(point_a, "point_a"), true};
             s.point_b = {vec3(point_b, "point_b"), true};
             s.stiffness = stiffness;
             s.damping = damping;
             s.free_length = free_length;
             return b.spring_damper(s);
           },
           py::arg("name"), py::arg("body_a"), py::arg("point_a"), py::arg("body_b"), py::arg("point_b"), py::arg("stiffness"),
           py::arg("damping") = 0.0, py::arg("free_length") = py::none(), py::return_value_policy::reference_internal)
      .def("rotational_spring_damper",
           [](ModelBuilder& b, const std::string& name, const std::string& joint, double stiffness, double damping,
              double free_angle, int coordinate) -> ModelBuilder& {
             return b.rotational_spring_damper({name, joint, coordinate, stiffness, damping, free_angle});
           },
           py::arg("name"), py::arg("joint"), py::arg("stiffness"), py::arg("damping") = 0.0, py::arg("free_angle") = 0.0,
           py::arg("coordinate") = 0, py::return_value_policy::reference_internal)
      .def("body_force",
           [](ModelBuilder& b, const std::string& name, const std::string& body, const py::object& vector,
              const py::object& function, const std::string& frame, const py::object& point) -> ModelBuilder& {
             BodyForceSpec s;
             s.frame = load_frame_named(frame, "body_force '" + name + "'");
             s.name = name;
             s.body = body;
             s.vector = vec3(vector, "vector");
             s.function = time_function(function);
             if (!point.is_none()) s.point = PointSpec{vec3(point, "point"), true};
             return b.body_force(s);
           },
           py::arg("name"), py::arg("body"), py::arg("vector"), py::arg("function") = 1.0, py::arg("frame") = "global",
           py::arg("point") = py::none(), py::return_value_policy::reference_internal)
      .def("body_torque",
           [](ModelBuilder& b, const std::string& name, const std::string& body, const py::object& vector,
              const py::object& function, const std::string& frame) -> ModelBuilder& {
             BodyTorqueSpec s;
             s.frame = load_frame_named(frame, "body_torque '" + name + "'");
             s.name = name;
             s.body = body;
             s.vector = vec3(vector, "vector");
             s.function = time_function(function);
             return b.body_torque(s);
           },
           py::arg("name"), py::arg("body"), py::arg("vector"), py::arg("function") = 1.0, py::arg("frame") = "global",
           py::return_value_policy::reference_internal)
      .def("joint_actuator",
           [](ModelBuilder& b, const std::string& name, const std::string& joint, const py::object& function,
              int coordinate) -> ModelBuilder& { return b.joint_actuator({name, joint, coordinate, time_function(function)}); },
           py::arg("name"), py::arg("joint"), py::arg("function"), py::arg("coordinate") = 0,
           py::return_value_policy::reference_internal)
      .def("joint_friction",
           [](ModelBuilder& b, const std::string& name, const std::string& joint, double coefficient) -> ModelBuilder& {
             return b.joint_friction({name, joint, coefficient});
           },
           py::arg("name"), py::arg("joint"), py::arg("coefficient"), py::return_value_policy::reference_internal)
      .def("driver",
           [](ModelBuilder& b, const std::string& name, const std::string& joint, const py::object& function,
              int coordinate) -> ModelBuilder& { return b.driver({name, joint, coordinate, time_function(function)}); },
           py::arg("name"), py::arg("joint"), py::arg("function"), py::arg("coordinate") = 0,
           py::return_value_policy::reference_internal)
      .def("defaults",
           [](ModelBuilder& b, std::optional<double> t_end, std::optional<double> dt, std::optional<std::string> formulation,
              std::optional<std::string> integrator) -> ModelBuilder& {
             return b.defaults({t_end, dt, formulation, integrator});
           },
           py::arg("t_end") = py::none(), py::arg("dt") = py::none(), py::arg("formulation") = py::none(),
           py::arg("integrator") = py::none(), py::return_value_policy::reference_internal)
      .def("build", [](const ModelBuilder& b) { return std::make_shared<Model>(b.build()); });

  // Simulator ------------------------------------------------------------------------------------
  py::class_<Simulator, std::shared_ptr<Simulator>>(m, "Simulator", "One run of one model under one formulation, stepped from Python.")
      .def(py::init([](const std::shared_ptr<Model>& model, const std::string& formulation, double state_tolerance,
                       const py::kwargs& options) {
             if (!model) throw std::invalid_argument("Simulator: no model");
             return std::make_shared<Simulator>(model, formulation, settings_of(formulation, options), state_tolerance);
           }),
           py::arg("model"), py::arg("formulation") = "hdca", py::arg("state_tolerance") = 1e-6)
      .def_property_readonly("time", &Simulator::time)
      .def_property_readonly("formulation", &Simulator::formulation_name)
      .def_property_readonly("integrator", [](const Simulator& s) { return s.formulation().integrator(); })
      .def_property_readonly("model", [](const Simulator& s) { return std::const_pointer_cast<Model>(s.model_ptr()); })
      .def("step", [](Simulator& s) { return stepping([&] { return s.step(); }, false); },
           "one step of the formulation; returns the time reached")
      .def("advance_to", &advance_interruptibly, py::arg("t"),
           "advances to t (the GIL released meanwhile). Ctrl-C raises KeyboardInterrupt from inside the call; "
           "the simulator is then at its last completed output or step, and goes on from there")
      .def("reset", [](Simulator& s) { s.reset(); })
      .def_property_readonly("failed", &Simulator::failed)
      .def_property_readonly("failure", &Simulator::failure)
      .def_property_readonly("q", [](const Simulator& s) { return vector_array(s.q()); })
      .def_property_readonly("qd", [](const Simulator& s) { return vector_array(s.qd()); })
      .def_property_readonly("q_names", [](const Simulator& s) { return s.coordinates().q_names(); })
      .def_property_readonly("qd_names", [](const Simulator& s) { return s.coordinates().qd_names(); })
      .def("joint_q", [](const Simulator& s, const std::string& j) { return vector_array(s.joint_q(j)); }, py::arg("joint"))
      .def("joint_qd", [](const Simulator& s, const std::string& j) { return vector_array(s.joint_qd(j)); }, py::arg("joint"))
      .def("set_state",
           [](Simulator& s, const Eigen::VectorXd& q, const Eigen::VectorXd& qd, bool project) {
             s.set_state(q, qd, project ? StateFix::Project : StateFix::Refuse);
           },
           py::arg("q"), py::arg("qd"), py::arg("project") = false)
      .def("set_joint_state",
           [](Simulator& s, const std::string& j, const Eigen::VectorXd& q, const Eigen::VectorXd& qd, bool project) {
             s.set_joint_state(j, q, qd, project ? StateFix::Project : StateFix::Refuse);
           },
           py::arg("joint"), py::arg("q"), py::arg("qd"), py::arg("project") = false)
      .def_property_readonly("body_poses", [](const Simulator& s) { return poses_of(s.body_states()); })
      .def_property_readonly("body_twists", [](const Simulator& s) { return twists_of(s.body_states()); })
      .def("set_body_states",
           [](Simulator& s, const Array& poses, const Array& twists, bool project) {
             s.set_body_states(states_of(poses, twists, s.model().bodies.size()), project ? StateFix::Project : StateFix::Refuse);
           },
           py::arg("poses"), py::arg("twists"), py::arg("project") = false)
      .def_property("effort", [](const Simulator& s) { return vector_array(s.effort()); },
                    [](Simulator& s, const Eigen::VectorXd& e) { s.set_effort(e); })
      .def("set_joint_effort", &Simulator::set_joint_effort, py::arg("joint"), py::arg("effort"))
      .def("set_body_wrench",
           [](Simulator& s, const std::string& body, const py::object& force, const py::object& torque) {
             s.set_body_wrench(body, vec3(force, "force"), vec3(torque, "torque"));
           },
           py::arg("body"), py::arg("force"), py::arg("torque") = Eigen::Vector3d::Zero())
      .def("clear_inputs", &Simulator::clear_inputs)
      .def("set_load_function",
           [](Simulator& s, const py::object& fn) {
             if (fn.is_none()) return s.set_load_function({});
             s.set_load_function(python_load_function(py::reinterpret_borrow<py::function>(fn), s.coordinates().nv(),
                                                      static_cast<int>(s.model().bodies.size())));
           },
           py::arg("function"))
      .def_property_readonly("reactions",
                             [](const Simulator& s) -> py::object {
                               const Snapshot& snap = s.snapshot();
                               if (snap.reactions.empty()) return py::none();
                               std::vector<double> r;
                               for (const JointReaction& j : snap.reactions)
                                 for (double x : {j.force.x(), j.force.y(), j.force.z(), j.torque.x(), j.torque.y(), j.torque.z()}) r.push_back(x);
                               return matrix(r, {static_cast<py::ssize_t>(snap.reactions.size()), py::ssize_t{6}});
                             })
      .def("reaction",
           [](const Simulator& s, const std::string& joint) {
             const JointReaction r = s.reaction(joint);
             return py::make_tuple(Eigen::Vector3d(r.force), Eigen::Vector3d(r.torque));
           },
           py::arg("joint"))
      .def_property_readonly("accelerations", [](const Simulator& s) {
        const Snapshot& snap = s.snapshot();
        std::vector<double> a;
        for (const BodyState& b : snap.bodies)
          for (double x : {b.a.x(), b.a.y(), b.a.z(), b.alpha.x(), b.alpha.y(), b.alpha.z()}) a.push_back(x);
        return matrix(a, {static_cast<py::ssize_t>(snap.bodies.size()), py::ssize_t{6}});
      })
      .def_property_readonly("energy", [](const Simulator& s) {
        const Energies e = s.energy();
        return py::dict(py::arg("kinetic") = e.kinetic, py::arg("potential") = e.potential, py::arg("total") = e.total);
      })
      .def_property_readonly("constraint_errors", [](const Simulator& s) {
        const ConstraintErrors e = s.constraint_errors();
        return py::dict(py::arg("position") = e.position, py::arg("velocity") = e.velocity, py::arg("acceleration") = e.acceleration);
      })
      .def_property_readonly("stats", [](const Simulator& s) { return stats_of(s.stats()); })
      .def_property_readonly("warnings", &Simulator::warnings)
      .def(
          "check",
          [](const Simulator& s, const py::object& energy0, const py::dict& checks) {
            const StateCheck c = check_state(s, judgement_options(checks),
                                             energy0.is_none() ? std::nullopt : std::optional<double>(py::cast<double>(energy0)));
            py::list list;
            for (const Judgement::Check& k : c.judgement.checks)
              list.append(py::dict(py::arg("name") = k.name, py::arg("value") = k.value, py::arg("threshold") = k.threshold,
                                   py::arg("passed") = k.passed, py::arg("note") = k.note));
            return py::dict(py::arg("status") = c.status, py::arg("message") = c.message, py::arg("checks") = list,
                            py::arg("length") = c.judgement.length, py::arg("speed") = c.judgement.speed,
                            py::arg("energy_range") = c.judgement.energy_range);
          },
          py::arg("energy0") = py::none(), py::arg("checks") = py::dict(),
          "judges the state now as a whole run judges its samples (constraint errors, Euler-parameter norms; the energy's "
          "drift since energy0 when given): {'status': 'ok'|'warning'|'failed', 'message', 'checks', scales}");

  // Whole runs and comparisons -------------------------------------------------------------------
  py::class_<RecordedRun, std::shared_ptr<RecordedRun>>(m, "_RecordedRun")
      .def("arrays", &RecordedRun::arrays)
      .def("metric_columns", &RecordedRun::metric_columns)
      .def("summary_json", [](const RecordedRun& r) { return summary_json(*r.model, r.result); })
      .def("save", &RecordedRun::save, py::arg("directory"));
  m.def("_simulate", &simulate, py::arg("model"), py::arg("formulation"), py::arg("t_end"), py::arg("dt"),
        py::arg("sample_every"), py::arg("options"), py::arg("checks") = py::dict(), py::arg("estimate_error") = py::none(),
        py::arg("choose_step") = false);
  m.def("_compare",
        [](const std::shared_ptr<Model>& model, const py::dict& o, const std::string& output) {
          CompareOptions options;
          if (o.contains("formulations") && !o["formulations"].is_none())
            options.formulations = py::cast<std::vector<std::string>>(o["formulations"]);
          auto opt = [&](const char* k, std::optional<double>& target) {
            if (o.contains(k) && !o[k].is_none()) target = py::cast<double>(o[k]);
          };
          opt("t_end", options.t_end);
          opt("dt", options.dt);
          opt("rtol", options.rtol);
          opt("alpha", options.alpha);
          opt("sample", options.sample_interval);
          if (o.contains("threads")) options.threads = py::cast<int>(o["threads"]);
          if (o.contains("reference_max_bodies")) options.reference_max_bodies = py::cast<int>(o["reference_max_bodies"]);
          if (o.contains("estimate_error")) set_estimate(o["estimate_error"], options.estimate_error, options.verify);
          InterruptCheck check;
          options.stop = [&check] { return check(); };
          CompareReport report;
          {
            py::gil_scoped_release release;
            report = compare_formulations(model, options, output);
          }
          if (check.interrupted) PyErr_Clear();  // raised again by the Python side, with the table so far
          py::list rows;
          for (const CompareRow& r : report.rows) {
            const bool ran = r.ran();
            auto number = [&](double x) { return ran && std::isfinite(x) ? py::cast(x) : py::none(); };
            rows.append(py::dict(
                py::arg("formulation") = r.formulation, py::arg("status") = r.status, py::arg("settings") = r.settings,
                py::arg("message") = r.message, py::arg("wall_s") = number(r.result.wall_seconds),
                py::arg("real_time_factor") = number(r.result.real_time_factor()), py::arg("t_reached") = number(r.result.t_reached),
                py::arg("steps") = ran ? py::cast(r.result.stats.steps) : py::none(),
                py::arg("rhs_evaluations") = ran ? py::cast(r.result.stats.rhs_evaluations) : py::none(),
                py::arg("position_deviation_m") = std::isfinite(r.position_deviation) ? py::cast(r.position_deviation) : py::none(),
                py::arg("energy_drift_J") = number(r.result.energy_drift_max),
                py::arg("position_error") = number(r.result.constraint_error_max.position),
                py::arg("velocity_error") = number(r.result.constraint_error_max.velocity),
                py::arg("acceleration_error") = number(r.result.constraint_error_max.acceleration),
                py::arg("error_estimate_m") = r.result.error_estimate.made() ? py::cast(r.result.error_estimate.position) : py::none(),
                py::arg("converged") = r.converged().empty() ? py::none() : py::cast(r.converged())));
          }
          return py::make_tuple(rows, check.interrupted);
        },
        py::arg("model"), py::arg("options"), py::arg("output") = "");
  // For bench/python_bench.py: the same work in C++ alone, timed there, in the same process.
  m.def("_cpp_steps",
        [](Simulator& s, long n) {
          const auto start = std::chrono::steady_clock::now();
          for (long k = 0; k < n; ++k) s.step();
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        },
        py::arg("simulator"), py::arg("steps"));
  m.def("_cpp_run",
        [](const std::shared_ptr<Model>& model, const std::string& formulation, double t_end, double dt, int sample_every,
           const py::dict& options) {
          const auto start = std::chrono::steady_clock::now();
          FormulationSettings settings = settings_of(formulation, options);
          settings.dt = dt;
          Simulator sim(model, formulation, settings);
          Recording recording;
          RunOptions ro;
          ro.t_end = t_end;
          ro.dt = dt;
          ro.sample_every = sample_every;
          ro.verify = false;  // timed against the Python loop: no refined companion
          run_simulation(sim, ro, &recording);
          return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        },
        py::arg("model"), py::arg("formulation"), py::arg("t_end"), py::arg("dt"), py::arg("sample_every"), py::arg("options"));
  m.def("formulations", [] {
    py::list l;
    for (const auto& f : formulation_catalog()) l.append(py::make_tuple(f.name, f.summary));
    return l;
  });
  m.def("options", [] {
    py::list l;
    for (const auto& o : option_catalog())
      l.append(py::dict(py::arg("name") = o.name, py::arg("type") = o.type, py::arg("formulations") = o.formulations,
                        py::arg("description") = o.description));
    return l;
  });
}
