// Plots of a run's results through a gnuplot script (include/treedyn/plot.hpp).
#include "plot.hpp"

#include "treedyn/result_writer.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

#include "treedyn/result_writer.hpp"

namespace treedyn {
namespace {

namespace fs = std::filesystem;

/// Constraint errors below this are drawn at it: a log scale has no zero, and an error that is
/// exactly zero (a joint the formulation satisfies by construction) would otherwise leave its
/// curve, or the whole plot, empty.
constexpr const char* kErrorFloor = "1e-18";

/// The columns of a result file, CSV (names in its first line) or .npy (names in columns.json
/// beside it), and how gnuplot reads it. Errors name the file with its directory ("dca/metrics.csv"),
/// which tells a comparison's runs apart.
class Columns {
 public:
  /// `base`: the file relative to `dir` (where the script runs), without its extension:
  /// "metrics", "dca/metrics".
  Columns(const fs::path& dir, const std::string& base) {
    if (fs::exists(dir / (base + ".csv"))) {
      file_ = base + ".csv";
      std::ifstream in(dir / file_);
      std::string header;
      if (!in || !std::getline(in, header)) throw std::runtime_error("plot: cannot read " + (dir / file_).string());
      std::istringstream names(header);
      for (std::string name; std::getline(names, name, ',');) names_.push_back(column_name(name));  // "t [s]" -> "t"
      data_ = "'" + file_ + "' skip 1";
    } else if (fs::exists(dir / (base + ".npy"))) {
      file_ = base + ".npy";
      const fs::path listing = (dir / file_).parent_path() / "columns.json";
      std::ifstream in(listing);
      const nlohmann::json columns = nlohmann::json::parse(in, nullptr, false);
      const std::string key = fs::path(file_).filename().string();
      if (!columns.is_object() || !columns.contains(key) || !columns[key].is_array())
        throw std::runtime_error("plot: " + listing.string() + " does not list the columns of " + key);
      for (const auto& name : columns[key]) names_.push_back(column_name(name.get<std::string>()));
      data_ = "'" + file_ + "' binary skip=" + std::to_string(kNpyHeaderBytes) + " format='%" + std::to_string(names_.size()) +
              "float64' endian=" + (std::endian::native == std::endian::little ? "little" : "big");
    } else {
      throw std::runtime_error("plot: no " + base + ".csv or " + base + ".npy in " + dir.string());
    }
    const fs::path shown = fs::path(dir / file_).lexically_normal();
    shown_ = (shown.parent_path().filename() / shown.filename()).string();
  }

  bool has(const std::string& name) const { return std::find(names_.begin(), names_.end(), name) != names_.end(); }

  /// gnuplot's 1-based index of the column `name`.
  int operator[](const std::string& name) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<int>(i) + 1;
    throw std::runtime_error("plot: " + shown_ + " has no column '" + name + "'");
  }

  /// The file as gnuplot reads it: "'metrics.csv' skip 1", or the binary layout of a .npy.
  const std::string& data() const { return data_; }

  /// The body of the last "<body>.x" column (trajectory files list bodies in model order).
  std::string last_body() const {
    for (auto it = names_.rbegin(); it != names_.rend(); ++it)
      if (it->size() > 2 && it->compare(it->size() - 2, 2, ".x") == 0) return it->substr(0, it->size() - 2);
    throw std::runtime_error("plot: " + shown_ + " has no body position column ('<body>.x')");
  }

 private:
  std::string file_, data_, shown_;  // shown_: with the directory's name, "dca/metrics.csv"
  std::vector<std::string> names_;
};

/// A run's summary.json (a discarded value when it is missing or unreadable).
nlohmann::json summary_of(const fs::path& run_dir) {
  std::ifstream in(run_dir / "summary.json");
  return nlohmann::json::parse(in, nullptr, false);
}

/// A string field of a summary, or "" without one.
std::string field(const nlohmann::json& summary, const char* name) {
  return summary.is_object() && summary.contains(name) && summary[name].is_string() ? summary[name].get<std::string>() : "";
}

/// "<model> with <formulation>" from summary.json, or the directory's name without one.
std::string run_title(const fs::path& dir) {
  const nlohmann::json summary = summary_of(dir);
  const std::string model = field(summary, "model"), formulation = field(summary, "formulation");
  return !model.empty() && !formulation.empty() ? model + " with " + formulation : fs::absolute(dir).filename().string();
}

/// A plot's opening lines: its file, title and y axis.
void open_plot(std::ostream& gp, const std::string& file, const std::string& title, const std::string& ylabel) {
  gp << "\nset output '" << file << "'\nset title '" << title << "'\nset ylabel '" << ylabel << "'\n";
}

/// One curve of a CSV file: column y against column 1 (time).
std::string curve(const Columns& file, const std::string& column, const std::string& title) {
  return file.data() + " using 1:" + std::to_string(file[column]) + " with lines title '" + title + "'";
}

/// Single quotes cannot appear inside a gnuplot single-quoted string; names are printed as they
/// are otherwise.
std::string quoted_safe(std::string s) {
  for (char& c : s)
    if (c == '\'') c = '"';
  return s;
}

/// A body's name as a file name: letters, digits, '-', '_' and '.' kept, anything else '_'.
std::string file_safe(std::string s) {
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') c = '_';
  return s;
}

/// The script's opening lines: its comment, the CSV format, the SVG terminal, the time axis.
void open_script(std::ostream& gp, const std::string& what) {
  gp << "# Plots of " << what << "; redraw with `gnuplot plots.gp` in this directory.\n"
     << "set datafile separator ','\n"
     << "set terminal svg size 900,500 dynamic noenhanced font 'sans,11'\n"
     << "set grid\nset key outside right\nset xlabel 't [s]'\n";
}

/// Column `column` of a result file as a curve on a log scale: |value|, floored at kErrorFloor.
std::string log_curve(const Columns& file, const std::string& column, const std::string& title) {
  const std::string c = std::to_string(file[column]);
  return file.data() + " using 1:(abs($" + c + ") > " + kErrorFloor + " ? abs($" + c + ") : " + kErrorFloor +
         ") with lines title '" + title + "'";
}

/// `plot` with the curves one per line.
void plot_curves(std::ostream& gp, const std::vector<std::string>& curves) {
  for (std::size_t i = 0; i < curves.size(); ++i) gp << (i == 0 ? "plot " : ", \\\n     ") << curves[i];
  gp << "\n";
}

/// A plot of curves on a log y scale, which is unset again after it.
void log_plot(std::ostream& gp, const std::string& file, const std::string& title, const std::string& ylabel,
              const std::vector<std::string>& curves) {
  open_plot(gp, file, title, ylabel);
  gp << "set logscale y\nset format y '%.0e'\n";
  plot_curves(gp, curves);
  gp << "unset logscale y\nset format y '% h'\n";
}

std::ofstream open_file(const fs::path& file) {
  std::ofstream out(file);
  if (!out) throw std::runtime_error("plot: cannot write " + file.string());
  return out;
}

void close_file(std::ofstream& gp, const fs::path& file) {
  gp << "\nset output\n";
  if (!gp.flush()) throw std::runtime_error("plot: cannot write " + file.string());
}

/// The formulations of a `treedyn compare` directory, in compare.csv's order, that have results.
std::vector<std::string> compared_formulations(const fs::path& dir) {
  std::ifstream in(dir / "compare.csv");
  std::vector<std::string> names;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const std::string name = line.substr(0, line.find(','));
    if (fs::exists(dir / name / "metrics.csv")) names.push_back(name);
  }
  if (names.empty()) throw std::runtime_error("plot: no formulation in " + (dir / "compare.csv").string() + " has results");
  return names;
}

/// `treedyn compare`'s directory: every formulation on one plot per quantity.
std::vector<std::string> write_compare_script(const fs::path& dir) {
  const std::vector<std::string> names = compared_formulations(dir);
  std::vector<Columns> metrics;
  for (const std::string& name : names) metrics.emplace_back(dir, name + "/metrics");
  std::string model = quoted_safe(field(summary_of(dir / names.front()), "model"));
  if (model.empty()) model = fs::absolute(dir).filename().string();
  const fs::path file = dir / "plots.gp";
  std::ofstream gp = open_file(file);
  open_script(gp, "treedyn compare's runs in this directory");
  std::vector<std::string> files;
  if (fs::exists(dir / "deviation.csv")) {
    const Columns deviation(dir, "deviation");
    std::vector<std::string> curves;
    for (const std::string& name : names)
      if (deviation.has(name))  // every formulation but the reference, if it ran
        curves.push_back(log_curve(deviation, name, quoted_safe(name)));
    log_plot(gp, "deviation.svg", model + ": largest body position deviation from reference", "deviation [m]", curves);
    files.push_back("deviation.svg");
  }
  auto overlay = [&](const std::string& out, const std::string& title, const std::string& ylabel,
                     const std::string& column) {
    std::vector<std::string> curves;
    for (std::size_t i = 0; i < names.size(); ++i)
      curves.push_back(log_curve(metrics[i], column, quoted_safe(names[i])));
    log_plot(gp, out, title, ylabel, curves);
    files.push_back(out);
  };
  overlay("energy_drift.svg", model + ": |energy drift|", "|drift| [J]", "energy_drift");
  for (const char* level : {"position", "velocity", "acceleration"})
    overlay(std::string(level) + "_error.svg", model + ": largest " + level + " constraint error", "error",
            std::string(level) + "_error");
  close_file(gp, file);
  return files;
}

/// `treedyn bench scaling`'s directory: wall seconds per simulated second against the number of
/// bodies, one curve per formulation and thread count, log-log. The curves are written into the
/// script as data blocks: scaling.csv interleaves them, and gnuplot breaks a line at every row a
/// filter leaves out.
std::vector<std::string> write_scaling_script(const fs::path& dir) {
  const fs::path csv = dir / "scaling.csv";
  const Columns columns(dir, "scaling");
  const int bodies = columns["bodies"] - 1, threads = columns["threads"] - 1, formulation = columns["formulation"] - 1,
            status = columns["status"] - 1, cost = columns["wall_per_simulated_s"] - 1;
  std::vector<std::pair<std::string, std::string>> blocks;  // (title, "bodies,cost" lines)
  std::ifstream in(csv);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> f;  // the fields read here all come before the (possibly quoted) message
    std::istringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) f.push_back(field);
    if (static_cast<int>(f.size()) <= std::max({bodies, threads, formulation, status, cost}) || (f[status] != "ok" && f[status] != "warning")) continue;
    const std::string title = f[formulation] + ", " + f[threads] + (f[threads] == "1" ? " thread" : " threads");
    auto block = std::find_if(blocks.begin(), blocks.end(), [&](const auto& b) { return b.first == title; });
    if (block == blocks.end()) block = blocks.insert(blocks.end(), {title, ""});
    block->second += f[bodies] + "," + f[cost] + "\n";
  }
  if (blocks.empty()) throw std::runtime_error("plot: " + csv.string() + " has no run that ended ok");
  const fs::path file = dir / "plots.gp";
  std::ofstream gp = open_file(file);
  open_script(gp, "treedyn bench scaling's runs in this directory");
  std::vector<std::string> curves;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    gp << "$curve" << i << " << EOD\n" << blocks[i].second << "EOD\n";
    curves.push_back("$curve" + std::to_string(i) + " using 1:2 with linespoints title '" + quoted_safe(blocks[i].first) + "'");
  }
  curves.push_back("1 with lines dashtype 2 linecolor 'black' title 'real time'");
  gp << "\nset output 'scaling.svg'\nset title 'wall seconds per simulated second on n-link chains (below 1: faster "
        "than real time)'\nset xlabel 'bodies'\nset ylabel 'wall s per simulated s'\nset logscale xy\nset format y '%.0e'\n";
  plot_curves(gp, curves);
  close_file(gp, file);
  return {"scaling.svg"};
}

/// One run's directory.
std::vector<std::string> write_run_script(const fs::path& dir) {
  const Columns metrics(dir, "metrics");
  const Columns trajectory(dir, "trajectory");
  const std::string title = quoted_safe(run_title(dir));
  const std::string body = trajectory.last_body();
  const std::string body_file = file_safe(body) + ".svg";
  const fs::path file = dir / "plots.gp";
  std::ofstream gp = open_file(file);
  open_script(gp, "the treedyn run in this directory (" + title + ")");

  open_plot(gp, "energy.svg", title + ": energy", "energy [J]");
  plot_curves(gp, {curve(metrics, "kinetic", "kinetic"), curve(metrics, "potential", "potential"), curve(metrics, "total", "total")});

  open_plot(gp, "energy_drift.svg", title + ": energy drift (change of the total less the work of non-conservative loads)",
            "drift [J]");
  plot_curves(gp, {curve(metrics, "energy_drift", "energy drift")});

  std::vector<std::string> levels;
  for (const char* level : {"position", "velocity", "acceleration"})
    levels.push_back(log_curve(metrics, std::string(level) + "_error", level));
  log_plot(gp, "constraints.svg", title + ": largest constraint errors (below " + kErrorFloor + " drawn at it)", "error",
           levels);

  open_plot(gp, body_file, title + ": centre of mass of " + quoted_safe(body), "position [m]");
  plot_curves(gp, {curve(trajectory, body + ".x", "x"), curve(trajectory, body + ".y", "y"), curve(trajectory, body + ".z", "z")});
  close_file(gp, file);
  return {"energy.svg", "energy_drift.svg", "constraints.svg", body_file};
}

}  // namespace

std::vector<std::string> write_plot_script(const std::string& dir) {
  if (fs::exists(fs::path(dir) / "compare.csv")) return write_compare_script(dir);
  if (fs::exists(fs::path(dir) / "scaling.csv")) return write_scaling_script(dir);
  return write_run_script(dir);
}

void run_plot_script(const std::string& dir) {
  if (std::system("command -v gnuplot > /dev/null 2>&1") != 0)
    throw std::runtime_error("plot: gnuplot is not installed (Debian: apt-get install gnuplot-nox); the script is " +
                             (fs::path(dir) / "plots.gp").string());
  std::string escaped;  // dir inside single quotes for the shell
  for (char c : dir) escaped += c == '\'' ? std::string("'\\''") : std::string(1, c);
  if (std::system(("cd '" + escaped + "' && gnuplot plots.gp").c_str()) != 0)
    throw std::runtime_error("plot: gnuplot failed on " + (fs::path(dir) / "plots.gp").string());
}

}  // namespace treedyn
