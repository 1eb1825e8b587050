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

}  // namespace

ResultWriter::ResultWriter(const Model& model, const std::string& directory) : model_(model), directory_(directory) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) throw std::runtime_error("cannot create the output directory " + directory + ": " + error.message());
  remove_earlier_outputs(directory);
  trajectory_ = open_file(directory + "/trajectory.csv");
  metrics_ = open_file(directory + "/metrics.csv");
}

ResultWriter::~ResultWriter() { close_files(); }

void ResultWriter::close_files() {
  if (!trajectory_ && !metrics_) return;  // closed already
  const bool complete = trajectory_ && metrics_ && write_error(trajectory_) == 0 && write_error(metrics_) == 0;
  if (trajectory_) std::fclose(trajectory_);
  if (metrics_) std::fclose(metrics_);
  trajectory_ = metrics_ = nullptr;
  if (complete) return;
  // A write failed: both files end with the last sample written whole, at a line boundary.
  std::error_code ignored;
  fs::resize_file(directory_ + "/trajectory.csv", static_cast<std::uintmax_t>(trajectory_good_), ignored);
  fs::resize_file(directory_ + "/metrics.csv", static_cast<std::uintmax_t>(metrics_good_), ignored);
}

void ResultWriter::write_headers(bool with_reactions, bool with_efforts) {
  std::fprintf(trajectory_, "t");
  for (const Body& b : model_.bodies)
    for (const char* c : {"x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz"})
      std::fprintf(trajectory_, ",%s.%s", b.name.c_str(), c);
  std::fprintf(trajectory_, "\n");
  std::fprintf(metrics_,
               "t,kinetic,potential,total,work_nonconservative,energy_drift,position_error,velocity_error,"
               "acceleration_error,steps,rhs_evaluations,newton_iterations");
  for (const Joint& j : model_.joints)
    std::fprintf(metrics_, ",%s.position_error,%s.velocity_error,%s.acceleration_error", j.name.c_str(), j.name.c_str(),
                 j.name.c_str());
  for (const Driver& d : model_.drivers)
    std::fprintf(metrics_, ",%s.position_error,%s.velocity_error,%s.acceleration_error", d.name.c_str(), d.name.c_str(),
                 d.name.c_str());
  if (with_reactions)
    for (const Joint& j : model_.joints)
      for (const char* c : {"fx", "fy", "fz", "tx", "ty", "tz"}) std::fprintf(metrics_, ",%s.%s", j.name.c_str(), c);
  if (with_efforts)
    for (const Driver& d : model_.drivers) std::fprintf(metrics_, ",%s.effort", d.name.c_str());
  std::fprintf(metrics_, "\n");
  with_reactions_ = with_reactions;
  with_efforts_ = with_efforts;
  headers_written_ = true;
}

void ResultWriter::write(const Snapshot& s, const MetricsSample& m, const SolverStats& stats) {
  if (!headers_written_)
    write_headers(s.reactions.size() == model_.joints.size() && !model_.joints.empty(),
                  s.driver_efforts.size() == model_.drivers.size() && !model_.drivers.empty());
  std::fprintf(trajectory_, "%.12g", s.t);
  for (const BodyState& b : s.bodies) {
    put(trajectory_, b.r);
    for (double c : {b.q.w(), b.q.x(), b.q.y(), b.q.z()}) put(trajectory_, c);
    put(trajectory_, b.v);
    put(trajectory_, b.w);
  }
  std::fprintf(trajectory_, "\n");
  std::fprintf(metrics_, "%.12g", s.t);
  for (double x : {m.kinetic, m.potential, m.total, m.work_nonconservative, m.energy_drift, m.max.position, m.max.velocity,
                   m.max.acceleration})
    put(metrics_, x);
  std::fprintf(metrics_, ",%ld,%ld,%ld", stats.steps, stats.rhs_evaluations, stats.newton_iterations);
  for (const ConstraintErrors& e : m.joints)
    for (double x : {e.position, e.velocity, e.acceleration}) put(metrics_, x);
  if (with_reactions_)
    for (const JointReaction& r : s.reactions) {
      put(metrics_, r.force);
      put(metrics_, r.torque);
    }
  if (with_efforts_)
    for (double e : s.driver_efforts) put(metrics_, e);
  std::fprintf(metrics_, "\n");
  const int trajectory_error = write_error(trajectory_), metrics_error = write_error(metrics_);
  if (trajectory_error == 0 && metrics_error == 0) {
    trajectory_good_ = std::ftell(trajectory_);
    metrics_good_ = std::ftell(metrics_);
    return;
  }
  close_files();  // and cut both back to the samples written whole
  if (trajectory_error != 0) write_failed(directory_ + "/trajectory.csv", trajectory_error);
  write_failed(directory_ + "/metrics.csv", metrics_error);
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
  // The CSVs first (a run whose last write failed is already "failed" and says so), then the
  // summary whole or not at all: written beside, then renamed over.
  const int trajectory_error = trajectory_ ? write_error(trajectory_) : 0;
  const int metrics_error = metrics_ ? write_error(metrics_) : 0;
  close_files();
  if (result.ok() && trajectory_error != 0) write_failed(directory_ + "/trajectory.csv", trajectory_error);
  if (result.ok() && metrics_error != 0) write_failed(directory_ + "/metrics.csv", metrics_error);
  write_file_atomically(directory_ + "/summary.json", summary_json(model_, result));
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
