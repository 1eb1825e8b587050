#include "treedyn/result_writer.hpp"

#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>

namespace treedyn {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void write_failed(const std::string& path, int error) {
  throw std::runtime_error("cannot write " + path + ": " + std::strerror(error));
}

std::FILE* open_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) write_failed(path, errno);
  return f;
}

/// 0 when everything written to f since the last check reached the file, else the system's error
/// (a full disk, a quota, an I/O error): fflush returns what buffered writes hid.
int write_error(std::FILE* f) {
  errno = 0;
  if (std::fflush(f) == 0 && !std::ferror(f)) return 0;
  return errno != 0 ? errno : EIO;
}

/// What an earlier run wrote in `directory`: its CSVs, summary and plots (the SVGs plots.gp names),
/// so that nothing of it is left beside the new run's files.
void remove_earlier_outputs(const fs::path& directory) {
  std::error_code ignored;
  const fs::path script = directory / "plots.gp";
  if (std::ifstream gp(script); gp) {
    static const std::regex output(R"(^\s*set output '([^'/]+)')");
    std::smatch m;
    for (std::string line; std::getline(gp, line);)
      if (std::regex_search(line, m, output)) fs::remove(directory / m[1].str(), ignored);
  }
  for (const char* name : {"trajectory.csv", "metrics.csv", "joints.csv", "summary.json", "plots.gp"})
    fs::remove(directory / name, ignored);
}

void put(std::FILE* f, double x) { std::fprintf(f, ",%.12g", x); }
void put(std::FILE* f, const Vec3& v) {
  for (int k = 0; k < 3; ++k) put(f, v(k));
}

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

void header(std::FILE* f, const std::string& name, const std::string& unit) {
  std::fprintf(f, ",%s", column(name, unit).c_str());
}

bool coordinate_is_rotation(const Model& m, int joint, int coordinate) {
  const auto coordinates = joint_coordinates(m.joints[static_cast<std::size_t>(joint)].type);
  return coordinate < static_cast<int>(coordinates.size()) &&
         coordinates[static_cast<std::size_t>(coordinate)].kind == JointCoordinate::Kind::Rotation;
}

/// The unit of a driver's effort: a torque on a rotation, a force on a translation.
std::string effort_unit(const Model& m, const Driver& d) { return coordinate_is_rotation(m, d.joint, d.coordinate) ? "N m" : "N"; }

}  // namespace

std::string column(const std::string& name, const std::string& unit) { return name + " [" + unit + "]"; }

std::string column_name(const std::string& cell) {
  const auto open = cell.rfind(" [");
  return open != std::string::npos && !cell.empty() && cell.back() == ']' ? cell.substr(0, open) : cell;
}

ResultWriter::ResultWriter(const Model& model, const std::string& directory, const CoordinateMap* coordinates)
    : model_(model), coordinates_(coordinates), directory_(directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) throw std::runtime_error("cannot create the output directory " + directory + ": " + error.message());
  remove_earlier_outputs(directory);
  for (const char* name : {"trajectory.csv", "metrics.csv", "joints.csv"}) {
    if (std::string(name) == "joints.csv" && !coordinates) break;
    csv_.push_back({directory + "/" + name, nullptr, 0});
    csv_.back().file = open_file(csv_.back().path);
  }
  if (coordinates) {
    q_.resize(coordinates->nq());
    qd_.resize(coordinates->nv());
  }
}

ResultWriter::~ResultWriter() { close_files(); }

void ResultWriter::set_write_every(int k) {
  if (k < 1) throw std::invalid_argument("ResultWriter: write every k-th sample needs k >= 1, got " + std::to_string(k));
  write_every_ = k;
}

double ResultWriter::bytes_per_sample() const {
  const double n = static_cast<double>(model_.bodies.size()), joints = static_cast<double>(model_.joints.size());
  const double elements = static_cast<double>(model_.springs.size() + model_.rotational_springs.size() + model_.actuators.size());
  const double numbers = 13 * n + 12 + 9 * joints + 6 * joints + 2 * elements + (coordinates_ ? coordinates_->nq() + coordinates_->nv() : 0);
  return 20.0 * numbers;  // "%.12g" and a comma: 20 characters at most, about 19 on average
}

void ResultWriter::close_files() {
  bool complete = true;
  for (Csv& c : csv_)
    if (c.file) complete = complete && write_error(c.file) == 0;
  bool any = false;
  for (Csv& c : csv_) {
    if (c.file) std::fclose(c.file), any = true;
    c.file = nullptr;
  }
  if (!any || complete) return;
  // A write failed: every file ends with the last sample written whole, at a line boundary.
  std::error_code ignored;
  for (const Csv& c : csv_) fs::resize_file(c.path, static_cast<std::uintmax_t>(c.good), ignored);
}

void ResultWriter::write_headers(bool with_reactions, bool with_efforts) {
  std::FILE* trajectory = csv_[0].file;
  std::FILE* metrics = csv_[1].file;
  std::fprintf(trajectory, "%s", column("t", "s").c_str());
  for (const Body& b : model_.bodies) {
    for (const char* c : {"x", "y", "z"}) header(trajectory, b.name + "." + c, "m");
    for (const char* c : {"qw", "qx", "qy", "qz"}) header(trajectory, b.name + "." + c, "-");
    for (const char* c : {"vx", "vy", "vz"}) header(trajectory, b.name + "." + c, "m/s");
    for (const char* c : {"wx", "wy", "wz"}) header(trajectory, b.name + "." + c, "rad/s");
  }
  std::fprintf(trajectory, "\n");
  // Constraint errors are norms over rows in m (points) and rad (directions).
  const char* levels[3][2] = {{"position_error", "m|rad"}, {"velocity_error", "m/s|rad/s"}, {"acceleration_error", "m/s^2|rad/s^2"}};
  std::fprintf(metrics, "%s", column("t", "s").c_str());
  for (const char* c : {"kinetic", "potential", "total", "work_nonconservative", "energy_drift"}) header(metrics, c, "J");
  for (const auto& level : levels) header(metrics, level[0], level[1]);
  for (const char* c : {"steps", "rhs_evaluations", "newton_iterations"}) header(metrics, c, "-");
  for (const Joint& j : model_.joints)
    for (const auto& level : levels) header(metrics, j.name + "." + level[0], level[1]);
  for (const Driver& d : model_.drivers)
    for (const auto& level : levels) header(metrics, d.name + "." + level[0], level[1]);
  if (with_reactions)
    for (const Joint& j : model_.joints) {
      for (const char* c : {"fx", "fy", "fz"}) header(metrics, j.name + "." + c, "N");
      for (const char* c : {"tx", "ty", "tz"}) header(metrics, j.name + "." + c, "N m");
    }
  if (with_efforts)
    for (const Driver& d : model_.drivers) header(metrics, d.name + ".effort", effort_unit(model_, d));
  for (const SpringDamper& e : model_.springs) header(metrics, e.name + ".length", "m"), header(metrics, e.name + ".tension", "N");
  for (const RotationalSpringDamper& e : model_.rotational_springs)
    header(metrics, e.name + ".angle", "rad"), header(metrics, e.name + ".torque", "N m");
  for (const JointActuator& e : model_.actuators) {
    const bool rotation = coordinate_is_rotation(model_, e.joint, e.coordinate);
    header(metrics, e.name + ".coordinate", rotation ? "rad" : "m"), header(metrics, e.name + ".effort", rotation ? "N m" : "N");
  }
  std::fprintf(metrics, "\n");
  if (coordinates_) {
    std::FILE* joints = csv_[2].file;
    std::fprintf(joints, "%s", column("t", "s").c_str());
    for (int i = 0; i < coordinates_->nq(); ++i)
      header(joints, "q:" + coordinates_->q_names()[static_cast<std::size_t>(i)], coordinates_->q_units()[static_cast<std::size_t>(i)]);
    for (int i = 0; i < coordinates_->nv(); ++i)
      header(joints, "qd:" + coordinates_->qd_names()[static_cast<std::size_t>(i)], coordinates_->qd_units()[static_cast<std::size_t>(i)]);
    if (with_reactions)  // in the axes of each joint's frame on its child
      for (const Joint& j : model_.joints) {
        for (const char* c : {"fx", "fy", "fz"}) header(joints, "reaction:" + j.name + "." + c, "N");
        for (const char* c : {"tx", "ty", "tz"}) header(joints, "reaction:" + j.name + "." + c, "N m");
      }
    std::fprintf(joints, "\n");
  }
  with_reactions_ = with_reactions;
  with_efforts_ = with_efforts;
  headers_written_ = true;
  check_rows();  // the headers stay, whatever happens to the rows
}

void ResultWriter::write(const Snapshot& s, const MetricsSample& m, const SolverStats& stats) {
  if (coordinates_) {  // every sample, written or not: angles stay continuous however many are skipped
    coordinates_->measure(s.bodies, q_, qd_, received_ > 0 ? &reference_ : nullptr);
    reference_ = q_;
  }
  if (received_++ % write_every_ == 0) {
    held_.reset();
    write_row(s, m, stats);
  } else {
    held_ = Held{s, m, stats};  // written by finish if it is the last
  }
}

void ResultWriter::write_row(const Snapshot& s, const MetricsSample& m, const SolverStats& stats) {
  if (!headers_written_)
    write_headers(s.reactions.size() == model_.joints.size() && !model_.joints.empty(),
                  s.driver_efforts.size() == model_.drivers.size() && !model_.drivers.empty());
  std::FILE* trajectory = csv_[0].file;
  std::FILE* metrics = csv_[1].file;
  std::fprintf(trajectory, "%.12g", s.t);
  for (const BodyState& b : s.bodies) {
    put(trajectory, b.r);
    for (double c : {b.q.w(), b.q.x(), b.q.y(), b.q.z()}) put(trajectory, c);
    put(trajectory, b.v);
    put(trajectory, b.w);
  }
  std::fprintf(trajectory, "\n");
  std::fprintf(metrics, "%.12g", s.t);
  for (double x : {m.kinetic, m.potential, m.total, m.work_nonconservative, m.energy_drift, m.max.position, m.max.velocity,
                   m.max.acceleration})
    put(metrics, x);
  std::fprintf(metrics, ",%ld,%ld,%ld", stats.steps, stats.rhs_evaluations, stats.newton_iterations);
  for (const ConstraintErrors& e : m.joints)
    for (double x : {e.position, e.velocity, e.acceleration}) put(metrics, x);
  if (with_reactions_)
    for (const JointReaction& r : s.reactions) {
      put(metrics, r.force);
      put(metrics, r.torque);
    }
  if (with_efforts_)
    for (double e : s.driver_efforts) put(metrics, e);
  for (const AppliedLoads::ElementLoad& e : m.elements) put(metrics, e.coordinate), put(metrics, e.load);
  std::fprintf(metrics, "\n");
  if (coordinates_) {
    std::FILE* joints = csv_[2].file;
    std::fprintf(joints, "%.12g", s.t);
    for (int i = 0; i < q_.size(); ++i) put(joints, q_(i));
    for (int i = 0; i < qd_.size(); ++i) put(joints, qd_(i));
    if (with_reactions_)
      for (std::size_t j = 0; j < model_.joints.size(); ++j) {
        const Joint& joint = model_.joints[j];
        const Mat3 axes = state_of(s.bodies, joint.child).q.toRotationMatrix() * joint.child_frame.rotation;  // joint frame -> world
        put(joints, Vec3(axes.transpose() * s.reactions[j].force));
        put(joints, Vec3(axes.transpose() * s.reactions[j].torque));
      }
    std::fprintf(joints, "\n");
  }
  check_rows();
  ++rows_;
}

void ResultWriter::check_rows() {
  for (const Csv& c : csv_) {
    if (const int error = write_error(c.file); error != 0) {
      close_files();  // and cut every file back to the samples written whole
      write_failed(c.path, error);
    }
  }
  for (Csv& c : csv_) c.good = std::ftell(c.file);
}

std::string summary_json(const Model& model, const SimulationResult& r) {
  nlohmann::ordered_json j;
  j["model"] = model.name;
  j["formulation"] = r.formulation;
  j["integrator"] = r.integrator;
  j["dt"] = r.dt;
  j["t_end"] = r.t_end;
  j["t_reached"] = r.t_reached;
  j["steps"] = r.stats.steps;
  j["wall_seconds"] = r.wall_seconds;
  if (r.setup_seconds > 0.0) j["setup_seconds"] = r.setup_seconds;
  if (r.total_seconds > 0.0) j["total_seconds"] = r.total_seconds;
  j["real_time_factor"] = r.real_time_factor();
  j["rhs_evaluations"] = r.stats.rhs_evaluations;
  j["newton_iterations"] = r.stats.newton_iterations;
  j["projections"] = r.stats.projections;
  j["samples"] = r.samples;
  j["energy_initial"] = r.energy_initial;
  j["energy_final"] = r.energy_final;
  j["energy_drift_max"] = number_or_null(r.energy_drift_max);
  j["constraint_error_max"] = {{"position", r.constraint_error_max.position},
                               {"velocity", r.constraint_error_max.velocity},
                               {"acceleration", r.constraint_error_max.acceleration}};
  j["status"] = r.status;
  j["message"] = r.message;
  if (!r.ok()) j["failure_time"] = r.failure_time;
  j["warnings"] = r.warnings;
  if (!r.stage_seconds.empty()) j["stage_seconds"] = r.stage_seconds;
  if (!r.diagnostics.empty()) j["diagnostics"] = r.diagnostics;
  return j.dump(2) + "\n";
}

void ResultWriter::finish(const SimulationResult& result) {
  // The sample held back by decimation (the run's last), then the CSVs (a run whose last write
  // failed is already "failed" and says so), then the summary whole or not at all.
  std::string late_failure;
  try {
    if (held_ && csv_.front().file) write_row(held_->snapshot, held_->metrics, held_->stats);
    held_.reset();
    for (const Csv& c : csv_)
      if (c.file)
        if (const int error = write_error(c.file); error != 0) write_failed(c.path, error);
  } catch (const std::runtime_error& e) {
    late_failure = e.what();
  }
  close_files();
  SimulationResult r = result;
  if (!late_failure.empty() && r.ok()) {
    r.status = "failed";
    r.message = late_failure;
    r.failure_time = r.t_reached;
  }
  auto summary = nlohmann::ordered_json::parse(summary_json(model_, r));
  summary["output"] = {{"rows", rows_}, {"write_every", write_every_}, {"joint_coordinates", coordinates_ != nullptr}};
  write_file_atomically(directory_ + "/summary.json", summary.dump(2) + "\n");
  if (!late_failure.empty() && result.ok()) throw std::runtime_error(late_failure);
}

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string temporary = path + ".partial";
  std::FILE* f = open_file(temporary);
  errno = 0;
  const bool written = std::fwrite(text.data(), 1, text.size(), f) == text.size() && std::fflush(f) == 0;
  const int error = errno != 0 ? errno : EIO;
  if (std::fclose(f) != 0 || !written) {
    std::remove(temporary.c_str());
    write_failed(path, error);
  }
  std::error_code renamed;
  fs::rename(temporary, path, renamed);
  if (renamed) {
    std::remove(temporary.c_str());
    throw std::runtime_error("cannot write " + path + ": " + renamed.message());
  }
}

}  // namespace treedyn
