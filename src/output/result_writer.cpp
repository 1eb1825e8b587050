#include "treedyn/result_writer.hpp"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>

namespace treedyn {
namespace {

std::FILE* open_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write " + path);
  return f;
}

void put(std::FILE* f, double x) { std::fprintf(f, ",%.12g", x); }
void put(std::FILE* f, const Vec3& v) {
  for (int k = 0; k < 3; ++k) put(f, v(k));
}

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

}  // namespace

ResultWriter::ResultWriter(const Model& model, const std::string& directory) : model_(model), directory_(directory) {
  std::filesystem::create_directories(directory);
  trajectory_ = open_file(directory + "/trajectory.csv");
  metrics_ = open_file(directory + "/metrics.csv");
}

ResultWriter::~ResultWriter() {
  if (trajectory_) std::fclose(trajectory_);
  if (metrics_) std::fclose(metrics_);
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
  std::fflush(trajectory_);
  std::fflush(metrics_);
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
  std::fflush(trajectory_);
  std::fflush(metrics_);
  std::ofstream(directory_ + "/summary.json") << summary_json(model_, result);
}

}  // namespace treedyn
