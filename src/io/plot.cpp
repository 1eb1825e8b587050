// Plots of a run's results through a gnuplot script (include/treedyn/plot.hpp).
#include "treedyn/plot.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <stdexcept>

namespace treedyn {
namespace {

namespace fs = std::filesystem;

/// Constraint errors below this are drawn at it: a log scale has no zero, and an error that is
/// exactly zero (a joint the formulation satisfies by construction) would otherwise leave its
/// curve, or the whole plot, empty.
constexpr const char* kErrorFloor = "1e-18";

/// A CSV file's column names (its first line).
class Columns {
 public:
  explicit Columns(const fs::path& file) : file_(file.filename().string()) {
    std::ifstream in(file);
    std::string header;
    if (!in || !std::getline(in, header)) throw std::runtime_error("plot: cannot read " + file.string());
    std::istringstream names(header);
    for (std::string name; std::getline(names, name, ',');) names_.push_back(name);
  }

  /// gnuplot's 1-based index of the column `name`.
  int operator[](const std::string& name) const {
    for (std::size_t i = 0; i < names_.size(); ++i)
      if (names_[i] == name) return static_cast<int>(i) + 1;
    throw std::runtime_error("plot: " + file_ + " has no column '" + name + "'");
  }

  /// The body of the last "<body>.x" column (trajectory.csv lists bodies in model order).
  std::string last_body() const {
    for (auto it = names_.rbegin(); it != names_.rend(); ++it)
      if (it->size() > 2 && it->compare(it->size() - 2, 2, ".x") == 0) return it->substr(0, it->size() - 2);
    throw std::runtime_error("plot: " + file_ + " has no body position column ('<body>.x')");
  }

 private:
  std::string file_;
  std::vector<std::string> names_;
};

/// "<model> with <formulation>" from summary.json, or the directory's name without one.
std::string run_title(const fs::path& dir) {
  std::ifstream in(dir / "summary.json");
  const nlohmann::json summary = nlohmann::json::parse(in, nullptr, false);
  if (summary.is_object() && summary.contains("model") && summary.contains("formulation"))
    return summary["model"].get<std::string>() + " with " + summary["formulation"].get<std::string>();
  return fs::absolute(dir).filename().string();
}

/// A plot's opening lines: its file, title and y axis.
void open_plot(std::ostream& gp, const std::string& file, const std::string& title, const std::string& ylabel) {
  gp << "\nset output '" << file << "'\nset title '" << title << "'\nset ylabel '" << ylabel << "'\n";
}

/// One curve of a CSV file: column y against column 1 (time).
std::string curve(const std::string& csv, int y, const std::string& title) {
  return "'" + csv + "' skip 1 using 1:" + std::to_string(y) + " with lines title '" + title + "'";
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

}  // namespace

std::vector<std::string> write_plot_script(const std::string& dir_name) {
  const fs::path dir(dir_name);
  const Columns metrics(dir / "metrics.csv");
  const Columns trajectory(dir / "trajectory.csv");
  const std::string title = quoted_safe(run_title(dir));
  const std::string body = trajectory.last_body();
  const std::string body_file = file_safe(body) + ".svg";

  std::ofstream gp(dir / "plots.gp");
  if (!gp) throw std::runtime_error("plot: cannot write " + (dir / "plots.gp").string());
  gp << "# Plots of the treedyn run in this directory (" << title << "); redraw with `gnuplot plots.gp` here.\n"
     << "set datafile separator ','\n"
     << "set terminal svg size 900,500 dynamic noenhanced font 'sans,11'\n"
     << "set grid\nset key outside right\nset xlabel 't [s]'\n";

  open_plot(gp, "energy.svg", title + ": energy", "energy [J]");
  gp << "plot " << curve("metrics.csv", metrics["kinetic"], "kinetic") << ", \\\n     "
     << curve("metrics.csv", metrics["potential"], "potential") << ", \\\n     "
     << curve("metrics.csv", metrics["total"], "total") << "\n";

  open_plot(gp, "energy_drift.svg", title + ": energy drift (change of the total less the work of non-conservative loads)",
            "drift [J]");
  gp << "plot " << curve("metrics.csv", metrics["energy_drift"], "energy drift") << "\n";

  open_plot(gp, "constraints.svg", title + ": largest constraint errors (below " + kErrorFloor + " drawn at it)",
            "error");
  gp << "set logscale y\nset format y '%.0e'\nplot";
  const char* separator = " ";
  for (const char* level : {"position", "velocity", "acceleration"}) {
    const int column = metrics[std::string(level) + "_error"];
    gp << separator << "'metrics.csv' skip 1 using 1:($" << column << " > " << kErrorFloor << " ? $" << column << " : "
       << kErrorFloor << ") with lines title '" << level << "'";
    separator = ", \\\n     ";
  }
  gp << "\nunset logscale y\nset format y '% h'\n";

  open_plot(gp, body_file, title + ": centre of mass of " + quoted_safe(body), "position [m]");
  gp << "plot " << curve("trajectory.csv", trajectory[body + ".x"], "x") << ", \\\n     "
     << curve("trajectory.csv", trajectory[body + ".y"], "y") << ", \\\n     "
     << curve("trajectory.csv", trajectory[body + ".z"], "z") << "\n";
  gp << "\nset output\n";
  if (!gp.flush()) throw std::runtime_error("plot: cannot write " + (dir / "plots.gp").string());
  return {"energy.svg", "energy_drift.svg", "constraints.svg", body_file};
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
