#include "treedyn/result_writer.hpp"
#include "treedyn/model_json.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <initializer_list>
#include <string_view>
#include <cerrno>
#include <cstdint>
#include <limits>
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

/// The tables a writer writes, each as <table>.csv or <table>.npy (joints only with a CoordinateMap).
constexpr const char* kTables[] = {"trajectory", "metrics", "joints"};
constexpr const char* kExtensions[] = {".csv", ".npy"};

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
  for (const char* table : kTables)
    for (const char* extension : kExtensions) fs::remove(directory / (std::string(table) + extension), ignored);
  for (const char* name : {"columns.json", "summary.json", "plots.gp", "model.json", "viewer.html"}) fs::remove(directory / name, ignored);
}

/// NumPy's .npy header (format 1.0) for a C-ordered float64 matrix of `rows` x `columns`, padded
/// to kNpyHeaderBytes so that it can be rewritten in place as rows are added.
std::string npy_header(long rows, std::size_t columns) {
  const char* descr = std::endian::native == std::endian::little ? "<f8" : ">f8";
  std::string dict = std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(rows) +
                     ", " + std::to_string(columns) + "), }";
  dict.resize(kNpyHeaderBytes - 10 - 1, ' ');
  dict += '\n';
  const auto length = static_cast<std::uint16_t>(dict.size());
  std::string header = "\x93NUMPY";
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(length & 0xff);
  header += static_cast<char>(length >> 8);
  return header + dict;
}

nlohmann::json number_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

bool coordinate_is_rotation(const Model& m, int joint, int coordinate) {
  const auto coordinates = joint_coordinates(m.joints[static_cast<std::size_t>(joint)].type);
  return coordinate < static_cast<int>(coordinates.size()) &&
         coordinates[static_cast<std::size_t>(coordinate)].kind == JointCoordinate::Kind::Rotation;
}

/// The unit of a driver's effort: a torque on a rotation, a force on a translation.
std::string effort_unit(const Model& m, const Driver& d) { return coordinate_is_rotation(m, d.joint, d.coordinate) ? "N m" : "N"; }

/// CSV text is handed to the file in pieces of about this many bytes.
constexpr std::size_t kTextPiece = 1 << 16;

/// Hands `text` to `file` once it holds `at_least` bytes (0: whatever it holds). A write that
/// fails leaves its error in `error` (the first one): a piece larger than the file's buffer is
/// written past it, so a later fflush has nothing left to fail on and cannot say why.
void flush_text(std::string& text, std::FILE* file, std::size_t at_least, int& error) {
  if (text.empty() || text.size() < at_least) return;
  errno = 0;
  if (std::fwrite(text.data(), 1, text.size(), file) != text.size() && error == 0) error = errno != 0 ? errno : EIO;
  text.clear();
}

/// A file's error: the first failed write's, else what flushing it finds (write_error).
int file_error(int recorded, std::FILE* file) {
  const int flushed = write_error(file);
  return recorded != 0 ? recorded : flushed;
}

/// Appends `value` as printf's "%.12g" writes it (std::to_chars in that style: the same
/// characters, several times faster than fprintf per number).
void append_number(std::string& text, double value) {
  char digits[32];
  const auto [end, error] = std::to_chars(digits, digits + sizeof digits, value, std::chars_format::general, 12);
  text.append(digits, error == std::errc() ? end : digits);
}

/// One row of a file, written value by value as the sample is read: no row of the model's size is
/// held (at 65,536 bodies the three rows of doubles were 280 bytes a body). A row shorter than the
/// header (reactions that came and went) is padded with NaN, a longer one cut to the header's
/// columns; CSV text goes to the file in pieces of kTextPiece, a .npy row in blocks of doubles.
class RowStream {
 public:
  RowStream(std::string& text, std::FILE* file, int& error, std::size_t columns, bool csv)
      : text_(text), file_(file), error_(error), columns_(columns), csv_(csv) {
    text_.clear();
  }
  RowStream(const RowStream&) = delete;
  RowStream& operator=(const RowStream&) = delete;

  void operator()(double value) {
    if (count_ == columns_) return;
    if (csv_) {
      if (count_ > 0) text_ += ',';
      append_number(text_, value);
      flush_text(text_, file_, kTextPiece, error_);
    } else {
      block_[held_++] = value;
      if (held_ == block_.size()) write_block();
    }
    ++count_;
  }
  void operator()(const Vec3& v) {
    (*this)(v.x());
    (*this)(v.y());
    (*this)(v.z());
  }
  /// Pads the row to the header's columns and ends it.
  void finish() {
    while (count_ < columns_) (*this)(std::numeric_limits<double>::quiet_NaN());
    if (csv_) {
      text_ += '\n';
      flush_text(text_, file_, 0, error_);
    } else {
      write_block();
    }
  }

 private:
  void write_block() {
    std::fwrite(block_.data(), sizeof(double), held_, file_);
    held_ = 0;
  }
  std::string& text_;
  std::FILE* file_;
  int& error_;
  std::size_t columns_, count_ = 0, held_ = 0;
  bool csv_;
  std::array<double, 512> block_;
};

}  // namespace

std::string column(const std::string& name, const std::string& unit) { return name + " [" + unit + "]"; }

std::string column_name(const std::string& cell) {
  const auto open = cell.rfind(" [");
  return open != std::string::npos && !cell.empty() && cell.back() == ']' ? cell.substr(0, open) : cell;
}

ResultWriter::ResultWriter(const Model& model, const std::string& directory, const CoordinateMap* coordinates,
                           OutputFormat format)
    : model_(model), coordinates_(coordinates), directory_(directory), format_(format) {
  std::error_code error;
  fs::create_directories(directory, error);
  if (error) throw std::runtime_error("cannot create the output directory " + directory + ": " + error.message());
  remove_earlier_outputs(directory);
  // The model the run is of, for `treedyn view` (which draws its shapes and joints) and for
  // anyone reading the results later. Best effort: a model holding C++ callbacks has no JSON
  // (ModelError), and a disk too full for model.json fails the CSVs' first rows too, which the
  // run then reports.
  try {
    write_file_atomically(directory + "/model.json", [&](std::ostream& out) { write_model_json(model, out); });
  } catch (const std::runtime_error&) {
  }
  const char* extension = kExtensions[format == OutputFormat::Npy ? 1 : 0];
  for (const char* name : kTables) {
    if (std::string(name) == "joints" && !coordinates) break;
    Output& o = out_.emplace_back();
    o.path = directory + "/" + name + extension;
    o.file = open_file(o.path);
  }
  if (coordinates && coordinates->has_angles()) reference_.resize(coordinates->nq());
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
  return format_ == OutputFormat::Npy ? 8.0 * numbers : 20.0 * numbers;  // "%.12g" and a comma: 20 characters at most
}

void ResultWriter::close_files() {
  bool complete = true;
  for (Output& o : out_)
    if (o.file) complete = complete && file_error(o.error, o.file) == 0;
  bool any = false;
  for (Output& o : out_) {
    if (o.file) std::fclose(o.file), any = true;
    o.file = nullptr;
  }
  if (!any || complete) return;
  // A write failed: every file ends with the last sample written whole (a .npy header says so).
  std::error_code ignored;
  for (const Output& o : out_) {
    fs::resize_file(o.path, static_cast<std::uintmax_t>(o.good), ignored);
    if (format_ == OutputFormat::Npy && headers_written_)
      if (std::FILE* f = std::fopen(o.path.c_str(), "r+b")) {
        const std::string header = npy_header(rows_, o.columns);
        std::fwrite(header.data(), 1, header.size(), f);
        std::fclose(f);
      }
  }
}

bool ResultWriter::restart() {
  close_files();
  for (Output& o : out_) {
    o.file = open_file(o.path);
    o.good = 0;
    o.error = 0;
    o.columns = 0;
  }
  headers_written_ = false;
  received_ = rows_ = 0;
  holding_ = false;
  return true;
}

template <class Column>
void ResultWriter::visit_columns(bool with_reactions, bool with_efforts, Column&& column) const {
  constexpr std::size_t kTrajectory = 0, kMetrics = 1, kJoints = 2;
  column(kTrajectory, {"t"}, "s");
  for (const Body& b : model_.bodies) {
    for (const char* c : {".x", ".y", ".z"}) column(kTrajectory, {b.name, c}, "m");
    for (const char* c : {".qw", ".qx", ".qy", ".qz"}) column(kTrajectory, {b.name, c}, "-");
    for (const char* c : {".vx", ".vy", ".vz"}) column(kTrajectory, {b.name, c}, "m/s");
    for (const char* c : {".wx", ".wy", ".wz"}) column(kTrajectory, {b.name, c}, "rad/s");
  }
  // Constraint errors are norms over rows in m (points) and rad (directions).
  const char* levels[3][2] = {{"position_error", "m|rad"}, {"velocity_error", "m/s|rad/s"}, {"acceleration_error", "m/s^2|rad/s^2"}};
  column(kMetrics, {"t"}, "s");
  for (const char* c : {"kinetic", "potential", "total", "work_nonconservative", "energy_drift"}) column(kMetrics, {c}, "J");
  for (const auto& level : levels) column(kMetrics, {level[0]}, level[1]);
  for (const char* c : {"steps", "rhs_evaluations", "newton_iterations"}) column(kMetrics, {c}, "-");
  for (const Joint& j : model_.joints)
    for (const auto& level : levels) column(kMetrics, {j.name, ".", level[0]}, level[1]);
  for (const Driver& d : model_.drivers)
    for (const auto& level : levels) column(kMetrics, {d.name, ".", level[0]}, level[1]);
  if (with_reactions)
    for (const Joint& j : model_.joints) {
      for (const char* c : {".fx", ".fy", ".fz"}) column(kMetrics, {j.name, c}, "N");
      for (const char* c : {".tx", ".ty", ".tz"}) column(kMetrics, {j.name, c}, "N m");
    }
  if (with_efforts)
    for (const Driver& d : model_.drivers) column(kMetrics, {d.name, ".effort"}, effort_unit(model_, d));
  for (const SpringDamper& e : model_.springs) column(kMetrics, {e.name, ".length"}, "m"), column(kMetrics, {e.name, ".tension"}, "N");
  for (const RotationalSpringDamper& e : model_.rotational_springs)
    column(kMetrics, {e.name, ".angle"}, "rad"), column(kMetrics, {e.name, ".torque"}, "N m");
  for (const JointActuator& e : model_.actuators) {
    const bool rotation = coordinate_is_rotation(model_, e.joint, e.coordinate);
    column(kMetrics, {e.name, ".coordinate"}, rotation ? "rad" : "m"), column(kMetrics, {e.name, ".effort"}, rotation ? "N m" : "N");
  }
  if (!coordinates_) return;
  column(kJoints, {"t"}, "s");
  for (int i = 0; i < coordinates_->nq(); ++i)
    column(kJoints, {"q:", coordinates_->q_name(i)}, coordinates_->q_unit(i));
  for (int i = 0; i < coordinates_->nv(); ++i)
    column(kJoints, {"qd:", coordinates_->qd_name(i)}, coordinates_->qd_unit(i));
  if (with_reactions)  // in the axes of each joint's frame on its child
    for (const Joint& j : model_.joints) {
      for (const char* c : {".fx", ".fy", ".fz"}) column(kJoints, {"reaction:", j.name, c}, "N");
      for (const char* c : {".tx", ".ty", ".tz"}) column(kJoints, {"reaction:", j.name, c}, "N m");
    }
}

void ResultWriter::write_headers(bool with_reactions, bool with_efforts) {
  for (Output& o : out_) o.columns = 0, o.text.clear();
  std::vector<std::vector<std::string>> names(format_ == OutputFormat::Npy ? out_.size() : 0);  // for columns.json
  visit_columns(with_reactions, with_efforts,
                [&](std::size_t table, std::initializer_list<std::string_view> pieces, std::string_view unit) {
                  Output& o = out_[table];
                  std::string& cell = format_ == OutputFormat::Csv ? o.text : names[table].emplace_back();
                  if (format_ == OutputFormat::Csv && o.columns > 0) cell += ',';
                  for (std::string_view piece : pieces) cell += piece;
                  cell.append(" [").append(unit).append("]");
                  if (format_ == OutputFormat::Csv) flush_text(o.text, o.file, kTextPiece, o.error);
                  ++o.columns;
                });
  for (Output& o : out_) {
    if (format_ == OutputFormat::Csv) {
      o.text += '\n';
      flush_text(o.text, o.file, 0, o.error);
    } else {
      const std::string header = npy_header(0, o.columns);
      std::fwrite(header.data(), 1, header.size(), o.file);
    }
  }
  if (format_ == OutputFormat::Npy) {  // the columns' names, which a .npy file cannot hold
    nlohmann::ordered_json json;
    for (std::size_t t = 0; t < out_.size(); ++t) json[fs::path(out_[t].path).filename().string()] = names[t];
    write_file_atomically(directory_ + "/columns.json", json.dump(1) + "\n");
  }
  with_reactions_ = with_reactions;
  with_efforts_ = with_efforts;
  headers_written_ = true;
  check_rows(0);  // the headers stay, whatever happens to the rows
}

void ResultWriter::write(const Snapshot& s, const MetricsSample& m, const SolverStats& stats) {
  const bool first = received_ == 0, written = received_++ % write_every_ == 0;
  if (written) {
    holding_ = false;
    write_row(s, m, stats, first ? nullptr : &reference_);
    return;
  }
  // Skipped, and written by finish if it is the last. Angles stay continuous however many samples
  // are skipped: a skipped one moves the angle coordinates' references alone (track_angles, the
  // same unwrapping as measure's), not every joint's coordinates and rates. Without angles (a
  // ball-joint chain) no reference is read.
  if (coordinates_ && coordinates_->has_angles()) {
    held_reference_ = reference_;
    coordinates_->track_angles(s.bodies, reference_);
  }
  held_.snapshot = s;
  held_.metrics = m;
  held_.stats = stats;
  holding_ = true;
}

void ResultWriter::write_row(const Snapshot& s, const MetricsSample& m, const SolverStats& stats,
                             const Eigen::VectorXd* reference) {
  if (!headers_written_)
    write_headers(s.reactions.size() == model_.joints.size() && !model_.joints.empty(),
                  s.driver_efforts.size() == model_.drivers.size() && !model_.drivers.empty());
  const bool csv = format_ == OutputFormat::Csv;
  auto row_of = [&](Output& o) { return RowStream(o.text, o.file, o.error, o.columns, csv); };
  RowStream trajectory = row_of(out_[0]);
  trajectory(s.t);
  for (const BodyState& b : s.bodies) {
    trajectory(b.r);
    for (double x : {b.q.w(), b.q.x(), b.q.y(), b.q.z()}) trajectory(x);
    trajectory(b.v);
    trajectory(b.w);
  }
  trajectory.finish();
  RowStream metrics = row_of(out_[1]);
  for (double x : {s.t, m.kinetic, m.potential, m.total, m.work_nonconservative, m.energy_drift, m.max.position, m.max.velocity,
                   m.max.acceleration, static_cast<double>(stats.steps), static_cast<double>(stats.rhs_evaluations),
                   static_cast<double>(stats.newton_iterations)})
    metrics(x);
  for (const ConstraintErrors& e : m.joints) metrics(e.position), metrics(e.velocity), metrics(e.acceleration);
  if (with_reactions_)
    for (const JointReaction& r : s.reactions) metrics(r.force), metrics(r.torque);
  if (with_efforts_)
    for (double effort : s.driver_efforts) metrics(effort);
  for (const AppliedLoads::ElementLoad& e : m.elements) metrics(e.coordinate), metrics(e.load);
  metrics.finish();
  if (coordinates_) {
    RowStream joints = row_of(out_[2]);
    joints(s.t);
    // Every q, then every qd, measured entry by entry as written (no vector of the model's size
    // held); where there are angles, reference_ becomes this row's q (it may be `reference` itself:
    // an entry reads only its own part, before it is replaced).
    const bool angles = coordinates_->has_angles();
    const double* r = angles && reference ? reference->data() : nullptr;
    double x[7];
    for (const CoordinateMap::Entry& e : coordinates_->entries()) {
      coordinates_->measure(s.bodies, e, x, nullptr, r ? r + e.q_offset : nullptr);
      for (int k = 0; k < e.nq; ++k) joints(x[k]);
      if (angles) std::copy_n(x, e.nq, reference_.data() + e.q_offset);
    }
    for (const CoordinateMap::Entry& e : coordinates_->entries()) {
      coordinates_->measure(s.bodies, e, nullptr, x, nullptr);
      for (int k = 0; k < e.nv; ++k) joints(x[k]);
    }
    if (with_reactions_)
      for (std::size_t j = 0; j < model_.joints.size(); ++j) {
        const Joint& joint = model_.joints[j];
        const Mat3 axes = state_of(s.bodies, joint.child).q.toRotationMatrix() * joint.child_frame.rotation;  // joint frame -> world
        joints(Vec3(axes.transpose() * s.reactions[j].force));
        joints(Vec3(axes.transpose() * s.reactions[j].torque));
      }
    joints.finish();
  }
  check_rows(rows_ + 1);
  ++rows_;
}

void ResultWriter::check_rows(long rows) {
  for (const Output& o : out_) {
    if (const int error = file_error(o.error, o.file); error != 0) {
      close_files();  // and cut every file back to the samples written whole
      write_failed(o.path, error);
    }
  }
  for (Output& o : out_) {
    o.good = std::ftell(o.file);
    if (format_ == OutputFormat::Npy) {  // the header counts the rows now on disk
      const std::string header = npy_header(rows, o.columns);
      if (pwrite(fileno(o.file), header.data(), header.size(), 0) != static_cast<ssize_t>(header.size())) {
        const int error = errno;
        close_files();
        write_failed(o.path, error);
      }
    }
  }
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
  j["rejected_steps"] = r.stats.rejected_steps;
  j["samples"] = r.samples;
  j["energy_initial"] = r.energy_initial;
  j["energy_final"] = r.energy_final;
  j["energy_drift_max"] = number_or_null(r.energy_drift_max);
  j["constraint_error_max"] = {{"position", r.constraint_error_max.position},
                               {"velocity", r.constraint_error_max.velocity},
                               {"acceleration", r.constraint_error_max.acceleration}};
  j["status"] = r.status;
  j["message"] = r.message;
  if (!r.completed()) j["failure_time"] = r.failure_time;
  j["warnings"] = r.warnings;
  if (r.completed()) {  // how the run judged itself (status ok or warning)
    nlohmann::ordered_json checks = nlohmann::ordered_json::array();
    for (const Judgement::Check& c : r.judgement.checks) {
      nlohmann::ordered_json x = {{"name", c.name}, {"value", number_or_null(c.value)}, {"threshold", c.threshold},
                                  {"passed", c.passed}};
      if (!c.note.empty()) x["note"] = c.note;
      checks.push_back(x);
    }
    j["judgement"] = {{"energy_range", r.judgement.energy_range},
                      {"length", r.judgement.length},
                      {"speed", r.judgement.speed},
                      {"checks", checks}};
  }
  const ErrorEstimate& e = r.error_estimate;
  if (e.made() || !e.note.empty()) {
    j["error_estimate"] = {{"refinement", e.refinement}, {"reason", e.reason},     {"position", e.position},
                           {"coordinate", e.coordinate}, {"energy", e.energy}, {"t_from", e.t_from},
                           {"t_compared", e.t_compared}};
    if (!e.note.empty()) j["error_estimate"]["note"] = e.note;
  }
  if (r.step > 0.0 && (!r.step_tries.empty() || !r.step_note.empty())) {  // RunOptions::choose_step
    nlohmann::ordered_json tries = nlohmann::ordered_json::array();
    for (const SimulationResult::StepTry& s : r.step_tries)
      tries.push_back({{"step", s.step}, {"error_estimate", s.error}, {"threshold", s.threshold},
                       {"wall_seconds", s.wall_seconds}, {"steps", s.steps}});
    j["step_choice"] = {{"step", r.step}, {"tries", tries}};
    if (!r.step_note.empty()) j["step_choice"]["note"] = r.step_note;
  }
  if (!r.stage_seconds.empty()) j["stage_seconds"] = r.stage_seconds;
  if (!r.diagnostics.empty()) j["diagnostics"] = r.diagnostics;
  return j.dump(2) + "\n";
}

void ResultWriter::finish(const SimulationResult& result) {
  // The sample held back by decimation (the run's last), then the CSVs (a run whose last write
  // failed is already "failed" and says so), then the summary whole or not at all.
  std::string late_failure;
  try {
    if (holding_ && out_.front().file) write_row(held_.snapshot, held_.metrics, held_.stats, &held_reference_);
    holding_ = false;
    for (const Output& o : out_)
      if (o.file)
        if (const int error = file_error(o.error, o.file); error != 0) write_failed(o.path, error);
  } catch (const std::runtime_error& e) {
    late_failure = e.what();
  }
  close_files();
  SimulationResult r = result;
  if (!late_failure.empty() && r.completed()) {
    r.status = "failed";
    r.message = late_failure;
    r.failure_time = r.t_reached;
  }
  auto summary = nlohmann::ordered_json::parse(summary_json(model_, r));
  summary["output"] = {{"rows", rows_},
                       {"write_every", write_every_},
                       {"format", format_ == OutputFormat::Npy ? "npy" : "csv"},
                       {"joint_coordinates", coordinates_ != nullptr}};
  write_file_atomically(directory_ + "/summary.json", summary.dump(2) + "\n");
  if (!late_failure.empty() && result.completed()) throw std::runtime_error(late_failure);
}

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const std::string temporary = path + ".partial";
  std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
  if (!out) write_failed(temporary, errno);
  errno = 0;
  try {
    write(out);
  } catch (...) {
    out.close();
    std::remove(temporary.c_str());
    throw;
  }
  out.flush();
  const int error = errno != 0 ? errno : EIO;  // the failed write's, when one failed
  out.close();
  if (!out) {
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

void write_file_atomically(const std::string& path, const std::string& text) {
  write_file_atomically(path, [&](std::ostream& out) { out.write(text.data(), static_cast<std::streamsize>(text.size())); });
}

}  // namespace treedyn
