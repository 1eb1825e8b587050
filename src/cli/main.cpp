// treedyn — command-line tool. Thin: parses, calls the library, prints.
#include <sys/wait.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <functional>
#include <tuple>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "treedyn/compare.hpp"
#include "treedyn/errors.hpp"
#include "treedyn/formulations.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/integrators.hpp"
#include "treedyn/model_import.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/options.hpp"
#include "treedyn/threading.hpp"
#include "plot.hpp"
#include "treedyn/projection.hpp"
#include "treedyn/result_writer.hpp"
#include "treedyn/simulation.hpp"
#include "treedyn/topology.hpp"
#include "treedyn/version.hpp"

namespace {

using namespace treedyn;

/// A number option's check, said in words (CLI11's PositiveNumber prints its range up to
/// DBL_MAX): the value must parse and be finite, and positive, or not negative.
CLI::Validator number_check(bool zero_allowed) {
  return CLI::Validator(
      [zero_allowed](std::string& text) -> std::string {
        double value = 0.0;
        std::size_t used = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used != text.size() || !std::isfinite(value)) return "must be a finite number, got '" + text + "'";
        if (zero_allowed ? value < 0.0 : value <= 0.0)
          return std::string(zero_allowed ? "must not be negative" : "must be positive") + ", got " + text;
        return "";
      },
      zero_allowed ? "NONNEGATIVE" : "POSITIVE");
}
const CLI::Validator kPositive = number_check(false);
const CLI::Validator kNonNegative = number_check(true);

std::string list_formulations() {
  std::string s = "Formulations:\n";
  for (const auto& f : formulation_catalog()) s += "  " + f.name + std::string(14 - std::min<std::size_t>(13, f.name.size()), ' ') + f.summary + "\n";
  s += "Integrators (--integrator):\n";
  for (const auto& i : integrator_catalog()) s += "  " + i.name + std::string(18 - i.name.size(), ' ') + i.description + "\n";
  return s;
}

/// Progress on stderr: on a terminal a bar with the elapsed time and an estimate of the time left;
/// otherwise (a log, a pipe) one line every 5 s. Nothing when quiet.
class ProgressBar {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressBar(bool enabled) : enabled_(enabled), terminal_(isatty(STDERR_FILENO) != 0) {}
  void update(double t, double t_end) {
    if (!enabled_) return;
    const double elapsed = std::chrono::duration<double>(Clock::now() - start_).count();
    const double fraction = t_end > 0 ? std::clamp(t / t_end, 0.0, 1.0) : 1.0;
    const std::string eta = fraction > 0 && elapsed > 0.5 ? ", about " + seconds(elapsed * (1 - fraction) / fraction) + " left" : "";
    if (!terminal_) {
      if (elapsed < next_line_) return;
      next_line_ = elapsed + 5.0;
      std::fprintf(stderr, "treedyn: t = %.4g / %.4g s (%.0f %%), %s elapsed%s\n", t, t_end, 100 * fraction,
                   seconds(elapsed).c_str(), eta.c_str());
      return;
    }
    const int width = 30;
    const int filled = static_cast<int>(width * fraction);
    if (filled == last_ && elapsed < next_line_) return;  // redraw when the bar moves, or each second
    last_ = filled;
    next_line_ = elapsed + 1.0;
    std::fprintf(stderr, "\r[%s%s] t = %.4g / %.4g s, %s elapsed%s   ", std::string(static_cast<std::size_t>(filled), '#').c_str(),
                 std::string(static_cast<std::size_t>(width - filled), '.').c_str(), t, t_end, seconds(elapsed).c_str(),
                 eta.c_str());
    std::fflush(stderr);
  }
  void done() {
    if (enabled_ && terminal_ && last_ >= 0) std::fprintf(stderr, "\r%s\r", std::string(100, ' ').c_str());
  }

 private:
  static std::string seconds(double s) {
    char text[32];
    if (s < 60) std::snprintf(text, sizeof text, "%.1f s", s);
    else std::snprintf(text, sizeof text, "%d min %02d s", static_cast<int>(s / 60), static_cast<int>(s) % 60);
    return text;
  }
  bool enabled_, terminal_;
  int last_ = -1;
  double next_line_ = 5.0;
  Clock::time_point start_ = Clock::now();
};

/// SIGINT or SIGTERM during a run: the run stops at once (RunOptions::stop is asked between output
/// intervals and, through the simulator's interrupt check, before each step and right-hand side
/// inside one), the files end at the last sample and summary.json says "interrupted". A signal a
/// second or more after the first ends the process at once (the clean stop did not come); one
/// sooner is the same request sent twice: timeout(1) signals its child and then the child's
/// process group, so the child gets two signals microseconds apart, and ending the process at
/// the second lost summary.json in about a third of `timeout -s INT` runs.
volatile std::sig_atomic_t g_signal = 0;
std::atomic<long long> g_first_signal_ms{0};  // CLOCK_MONOTONIC at the first signal
static_assert(std::atomic<long long>::is_always_lock_free, "the signal handler needs a lock-free clock slot");

long long monotonic_ms() {  // clock_gettime is async-signal-safe
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<long long>(now.tv_sec) * 1000 + now.tv_nsec / 1000000;
}

extern "C" void on_signal(int signal) {
  const long long now = monotonic_ms();
  if (g_signal == 0) {
    g_first_signal_ms = now;
    g_signal = signal;
    return;
  }
  if (now - g_first_signal_ms < 1000) return;  // the same request, delivered twice
  std::signal(signal, SIG_DFL);
  std::raise(signal);
}

/// While it lives, SIGINT and SIGTERM stop the runs cleanly (RunOptions::stop, CompareOptions::stop).
struct CleanStop {
  CleanStop() {
    std::signal(SIGINT, on_signal);
    std::signal(SIGTERM, on_signal);
  }
  /// After a signal the handler stays: timeout(1)'s second delivery of the same request may come
  /// after the run has stopped (its two kill calls are apart by however long it is descheduled), and
  /// under SIG_DFL it ended the process halfway through the closing message (CI, under load). The
  /// handler still ends the process at a signal a second or more after the first.
  ~CleanStop() {
    if (g_signal != 0) return;
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
  }
  CleanStop(const CleanStop&) = delete;
  CleanStop& operator=(const CleanStop&) = delete;
  static std::function<bool()> hook() {
    return [] { return g_signal != 0; };
  }
  /// " by SIGINT" or " by SIGTERM", for a message.
  static std::string by() { return g_signal == SIGINT ? " by SIGINT" : g_signal == SIGTERM ? " by SIGTERM" : ""; }
  /// 128 + the signal when one came, else `normal`.
  static int exit_code(int normal) { return g_signal != 0 ? 128 + g_signal : normal; }
};

/// "; did you mean 'simulate'?" for a word within two edits of a command, else "".
std::string closest_hint(const std::string& word, const std::vector<std::string>& commands) {
  auto distance = [](const std::string& a, const std::string& b) {  // Levenshtein
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
      std::size_t diagonal = row[0];
      row[0] = i;
      for (std::size_t j = 1; j <= b.size(); ++j) {
        const std::size_t above = row[j];
        row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
        diagonal = above;
      }
    }
    return row[b.size()];
  };
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& c : commands)
    if (const std::size_t d = distance(word, c); d < best_distance) best = c, best_distance = d;
  return best.empty() ? "" : "; did you mean '" + best + "'?";
}

/// Cores this process may run on (allowed_cpus), or those online if the mask cannot be read.
int available_cores() {
  const std::size_t allowed = allowed_cpus().size();
  return allowed > 0 ? static_cast<int>(allowed) : static_cast<int>(std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)));
}

/// A formulation option given on the command line, by the option catalogue's name
/// (include/treedyn/options.hpp): applied, and refused where it does not apply.
struct GivenOption {
  std::string flag;  // as typed: --newton-max
  std::string name;  // the catalogue's: newton_max
  OptionValue value;
};

/// The interpreter the Python package was built for (TREEDYN_PYTHON in the environment overrides
/// it) and the package's folder beside this executable (<dir>/python in the build tree, or
/// <dir>/../<libdir>/python3/dist-packages installed), with PYTHONPATH set to find it; an error
/// message instead when there is none.
std::string find_python_package(std::string& python) {
#ifndef TREEDYN_PYTHON
  (void)python;
  return "this treedyn was built without its Python package (TREEDYN_BUILD_PYTHON=OFF)";
#else
  namespace fs = std::filesystem;
  std::error_code error;
  const fs::path self = fs::read_symlink("/proc/self/exe", error).parent_path();
  std::string package;
  for (const fs::path& dir : {self / "python", self / ".." / TREEDYN_PYTHON_INSTALL_DIR})
    if (fs::exists(dir / "treedyn" / "__main__.py", error)) {
      package = fs::weakly_canonical(dir, error).string();
      break;
    }
  if (package.empty())
    return "the treedyn Python package is not beside " + self.string() + " (build it: make python; or install it: make install)";
  const char* earlier = std::getenv("PYTHONPATH");
  const std::string path = package + (earlier && *earlier ? ":" + std::string(earlier) : "");
  setenv("PYTHONPATH", path.c_str(), 1);
  const char* chosen = std::getenv("TREEDYN_PYTHON");
  python = chosen && *chosen ? chosen : TREEDYN_PYTHON;
  return "";
#endif
}

/// `treedyn sweep ...` and `treedyn view ...` are the Python package's commands (`python3 -m
/// treedyn sweep|view`: python/treedyn/sweeps.py, sweeps on Dask; python/treedyn/viewer.py, the
/// 3-D viewer's page). Replaces this process (signals and the exit status are the command's own);
/// returns only when it cannot.
int python_command(int argc, char** argv) {
  std::string python;
  if (const std::string problem = find_python_package(python); !problem.empty()) {
    std::cerr << "treedyn " << argv[1] << ": " << problem << "\n";
    return 1;
  }
  std::vector<char*> args = {python.data(), const_cast<char*>("-m"), const_cast<char*>("treedyn")};
  for (int k = 1; k < argc; ++k) args.push_back(argv[k]);
  args.push_back(nullptr);
  execv(python.c_str(), args.data());
  std::cerr << "treedyn " << argv[1] << ": cannot run " << python << ": " << std::strerror(errno) << "\n";
  return 1;
}

/// `treedyn view DIR` as a child process (simulate --view, compare --view); its exit status.
int view_results(const std::string& dir) {
  std::string python;
  if (const std::string problem = find_python_package(python); !problem.empty()) {
    std::cerr << "treedyn: --view: " << problem << "\n";
    return 1;
  }
  const pid_t child = fork();
  if (child == 0) {
    std::vector<char*> args = {python.data(), const_cast<char*>("-m"), const_cast<char*>("treedyn"), const_cast<char*>("view"),
                               const_cast<char*>(dir.c_str()), nullptr};
    execv(python.c_str(), args.data());
    std::fprintf(stderr, "treedyn: --view: cannot run %s: %s\n", python.c_str(), std::strerror(errno));
    _exit(127);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) < 0) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

struct SimulateArgs {
  std::string model_path, output, formulation, integrator;
  double t_end = NAN, dt = NAN, rtol = NAN, atol = NAN, tolerance = 1e-6;
  int threads = 1, sample_every = 1;
  bool assemble = false, quiet = false, profile = false, plot = false, view = false;
  JudgementOptions judge;         // --check-*: the self-judgement's thresholds
  bool estimate_error = false;    // --estimate-error
  bool no_estimate_error = false; // --no-estimate-error: RunOptions::verify = false
  std::vector<double> baumgarte;  // dca: alpha, beta
  bool planar = false;            // hdca: paper 004's planar form
  bool fixed_threads = false;     // --fixed-threads: Threading::fallback = false
  std::string precision = "double", inverse = "cholesky", error_control = "velocities";  // hdca
  Ali3Options ali3;                    // ali3: penalty, Newton-Raphson, projections
  std::string projections = "both";    // ali3
  int newton_max = 0;                  // ali3, half- and fully-implicit (0: the formulation's default)
  double newton_tol = NAN;             // ali3, half- and fully-implicit (NaN: the formulation's default)
  std::string linear_solver = "tree";  // half- and fully-implicit
  std::vector<GivenOption> given;      // the formulation options typed, applied through the catalogue
  double max_output_mb = 20;           // decimate the files beyond this (0: write every sample)
  std::string format = "csv";          // csv or npy
  std::vector<std::string> sets;       // --set PATH=VALUE: model overrides
  bool sample_every_given = false;
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

/// Every how many samples the files get a row, so that a run writes about `max_output_mb` at most
/// (1: every sample; also when the user chose --sample-every, or gave no budget).
long output_decimation(const ResultWriter& writer, const RunOptions& run, const SimulateArgs& a) {
  if (!(a.max_output_mb > 0.0) || a.sample_every_given) return 1;
  const double samples = std::ceil(run.t_end / run.dt / run.sample_every) + 1;
  const double rows = std::max(2.0, a.max_output_mb * 1e6 / writer.bytes_per_sample());
  return samples <= rows ? 1 : static_cast<long>(std::min(std::ceil(samples / rows), 1e9));
}

/// Per-stage split of the time spent advancing (stages the formulation times, the rest "other").
void print_profile(const SimulationResult& r) {
  if (r.stage_seconds.empty() || r.wall_seconds <= 0.0) {
    std::printf("profile: %s keeps no stage timers\n", r.formulation.c_str());
    return;
  }
  double staged = 0.0;
  for (const auto& [name, seconds] : r.stage_seconds) staged += seconds;
  std::printf("profile (%% of %.3f s advancing):\n", r.wall_seconds);
  for (const auto& [name, seconds] : r.stage_seconds)
    std::printf("  %-20s %6.1f %%  %9.4f s\n", name.c_str(), 100.0 * seconds / r.wall_seconds, seconds);
  const double other = std::max(0.0, r.wall_seconds - staged);
  std::printf("  %-20s %6.1f %%  %9.4f s   (integrator, bookkeeping)\n", "other", 100.0 * other / r.wall_seconds, other);
}

/// Loads the model and makes its initial state consistent (or explains why it is not).
/// The --set PATH=VALUE options as model overrides.
std::vector<ModelOverride> overrides_of(const std::vector<std::string>& sets) {
  std::vector<ModelOverride> o;
  for (const std::string& text : sets) o.push_back(parse_override(text));
  return o;
}

const char* const kModelFileHelp = "model file: treedyn JSON, or URDF (.urdf), MJCF (.xml) or SDFormat (.sdf), imported";

/// treedyn import: writes the JSON of a URDF, MJCF or SDFormat file, with the overrides applied.
int import_model(const std::string& path, const std::string& output, const std::vector<std::string>& sets,
                 const ImportOptions& options) {
  if (model_format_of(path) == ModelFormat::Json)
    throw ModelError(path + ": treedyn import reads URDF (.urdf), MJCF (.xml, .mjcf) and SDFormat (.sdf) files");
  const ImportedModel imported = import_model_file(path, options, overrides_of(sets));
  for (const auto& w : imported.warnings) std::cerr << "warning: " << w << "\n";
  const Model& m = imported.model;
  const Topology topo(m);
  write_model_file(m, output);
  std::printf("imported %s (%s): %d bodies, %d joints, %zu loops, mobility %d\nwrote %s\n", path.c_str(),
              to_string(model_format_of(path)), m.body_count(), m.joint_count(), topo.loop_joints().size(), topo.mobility(),
              output.c_str());
  return 0;
}

/// Reads a model file (JSON, or imported from URDF, MJCF, SDFormat) with the --set overrides. An
/// import's warnings go to `import_warnings` when given, else to standard error.
Model read_model(const std::string& path, const std::vector<std::string>& sets,
                 std::vector<std::string>* import_warnings = nullptr) {
  std::vector<std::string> warnings;
  Model model = read_model_file(path, overrides_of(sets), &warnings);
  if (import_warnings) import_warnings->insert(import_warnings->end(), warnings.begin(), warnings.end());
  else for (const auto& w : warnings) std::cerr << "warning: " << w << "\n";
  return model;
}

Model load_consistent_model(const std::string& path, const std::vector<std::string>& sets, bool assemble, double tolerance,
                            bool quiet, std::vector<std::string>* import_warnings = nullptr) {
  Model model = read_model(path, sets, import_warnings);
  const ConsistencyReport report = check_initial_state(model, tolerance);
  if (report.consistent()) return model;
  if (!assemble) {
    std::string text = path + ": the initial state violates the constraints (tolerance " + sci(tolerance) + "):";
    for (const auto& v : report.violations) text += "\n  " + v;
    text += "\nrun with --assemble to project it onto the constraints";
    throw ModelError(text);
  }
  AssemblyReport assembly;
  Model fixed = assemble_initial_state(model, assembly);
  if (!quiet) std::cout << assembly.summary(fixed);
  return fixed;
}

/// Writes <dir>/plots.gp and draws it with gnuplot.
void plot(const std::string& dir, bool quiet) {
  const std::vector<std::string> files = write_plot_script(dir);
  run_plot_script(dir);
  if (!quiet) {
    std::printf("  plots: %s/{", dir.c_str());
    for (std::size_t i = 0; i < files.size(); ++i) std::printf("%s%s", i ? ", " : "", files[i].c_str());
    std::printf("} (gnuplot script plots.gp)\n");
  }
}

int simulate(const SimulateArgs& a) {
  std::vector<std::string> import_warnings;  // listed with the run's own warnings, in summary.json too
  const auto model_ptr = std::make_shared<const Model>(
      load_consistent_model(a.model_path, a.sets, a.assemble, a.tolerance, a.quiet, &import_warnings));
  const Model& model = *model_ptr;
  const std::string formulation = !a.formulation.empty() ? a.formulation : model.defaults.formulation_or_fallback();
  RunOptions run;
  run.t_end = !std::isnan(a.t_end) ? a.t_end : model.defaults.t_end_or_fallback();
  run.dt = !std::isnan(a.dt) ? a.dt : model.defaults.dt_or_fallback();
  run.sample_every = a.sample_every;
  FormulationSettings settings;
  settings.dt = run.dt;
  settings.threading.pin = true;  // the command line owns its process: pinning makes two threads pay off
  if (a.integrator.empty() && model.defaults.integrator && !model.defaults.formulation)
    settings.integrator = model.defaults.integrator;
  for (const GivenOption& o : a.given) {
    try {
      set_option(settings, formulation, o.name, o.value);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(o.flag + ": " + e.what());
    }
  }
  const int cores = available_cores();
  if (settings.threading.threads > cores)
    std::cerr << "warning: --threads " << settings.threading.threads << " is more than the " << cores
              << " core(s) this process may use: threads beyond the cores wait for each other (use --threads "
              << cores << " or fewer)\n";
  Simulator simulator(model_ptr, formulation, settings, a.tolerance);
  const std::string out_dir = !a.output.empty() ? a.output : "results/" + model.name + "/" + formulation;
  ResultWriter writer(model, out_dir, &simulator.coordinates(), a.format == "npy" ? OutputFormat::Npy : OutputFormat::Csv);
  const long write_every = output_decimation(writer, run, a);
  writer.set_write_every(static_cast<int>(write_every));
  if (write_every > 1 && !a.quiet)
    std::printf("treedyn: writing every %ld-th sample to keep the files near %g MB (--max-output-mb 0 writes all; "
                "the summary's maxima still cover every sample)\n",
                write_every, a.max_output_mb);
  ProgressBar bar(!a.quiet);
  run.stop = CleanStop::hook();
  run.judge = a.judge;
  run.estimate_error = a.estimate_error;
  run.verify = !a.no_estimate_error;
  run.choose_step = std::isnan(a.dt);  // the model's step: a fixed-step run may take a smaller one
  const auto stepping = std::chrono::steady_clock::now();
  SimulationResult r;
  {
    CleanStop clean_stop;
    r = run_simulation(simulator, run, &writer, [&](double t, double te) { bar.update(t, te); });
  }
  bar.done();
  if (r.status == "interrupted") r.message += CleanStop::by();
  r.setup_seconds = std::chrono::duration<double>(stepping - a.started).count();
  r.total_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - a.started).count();
  r.warnings.insert(r.warnings.begin(), import_warnings.begin(), import_warnings.end());
  std::string summary_failure;  // the CSVs or summary.json could not be finished (a full disk)
  try {
    writer.finish(r);
  } catch (const std::exception& e) {
    summary_failure = e.what();
  }
  for (const auto& w : r.warnings) std::cerr << "warning: " << w << "\n";
  if (!a.quiet) {
    std::printf("treedyn: %s with %s (%s)\n", model.name.c_str(), r.formulation.c_str(), r.integrator.c_str());
    std::printf("  simulated %.6g s in %.3f s of stepping (%.1fx real time; %.3f s set-up, %.3f s in all): %ld steps",
                r.t_reached, r.wall_seconds, r.real_time_factor(), r.setup_seconds, r.total_seconds, r.stats.steps);
    if (r.stats.rejected_steps > 0) std::printf(" (and %ld refused by the error test)", r.stats.rejected_steps);
    std::printf(", %ld RHS evaluations", r.stats.rhs_evaluations);
    if (r.stats.newton_iterations > 0) std::printf(", %ld Newton iterations", r.stats.newton_iterations);
    std::printf("\n  energy: initial %.9g J, final %.9g J, largest drift %s J\n", r.energy_initial, r.energy_final,
                std::isnan(r.energy_drift_max) ? "unknown (driver work not reported)" : sci(r.energy_drift_max).c_str());
    std::printf("  largest constraint error (norms of Phi and its rates; point rows in m, direction rows in rad): "
                "position %s, velocity %s /s, acceleration %s /s^2\n",
                sci(r.constraint_error_max.position).c_str(), sci(r.constraint_error_max.velocity).c_str(),
                sci(r.constraint_error_max.acceleration).c_str());
    for (const auto& [name, value] : r.diagnostics) std::printf("  %s: %s\n", name.c_str(), sci(value).c_str());
    const ErrorEstimate& e = r.error_estimate;
    if (e.made())
      std::printf("  error estimate (against a companion run with %s, t = %g to %g s%s%s): body positions %s m, joint "
                  "coordinates %s, energy %s J%s%s\n",
                  e.refinement.c_str(), e.t_from, e.t_compared, e.reason == "asked" ? "" : ", made because ",
                  e.reason == "asked" ? "" : e.reason == "fixed step" ? "the run has a fixed step" : e.reason.c_str(), sci(e.position).c_str(), sci(e.coordinate).c_str(),
                  sci(e.energy).c_str(), e.note.empty() ? "" : "; ", e.note.c_str());
    else if (!e.note.empty())
      std::printf("  error estimate %s\n", e.note.c_str());
    if (const std::string choice = describe_step_choice(r); !choice.empty())
      std::printf("  step chosen (no --dt given): %s\n", choice.c_str());
    const char* ext = a.format == "npy" ? "npy" : "csv";
    std::printf("  results: %s/{trajectory.%s, metrics.%s, joints.%s, summary.json}: %ld rows\n", out_dir.c_str(), ext, ext, ext,
                writer.rows_written());
  }
  if (a.profile) print_profile(r);
  if (r.status == "warning")
    std::cerr << "treedyn: status warning: the run reached t_end but left its accuracy: " << r.message
              << "\n  results are in " << out_dir << " (summary.json's judgement has each check)\n";
  if (r.status == "interrupted")
    std::cerr << "treedyn: " << r.message << "\n  results up to t = " << sci(r.t_reached) << " s are in " << out_dir << "\n";
  else if (!r.completed())
    std::cerr << "treedyn: simulation failed: " << r.message << "\n"
              << "  results up to the failure are in " << out_dir << "\n";
  if (!summary_failure.empty()) {
    std::cerr << "treedyn: " << summary_failure << " (the CSVs hold every sample written whole)\n";
    return CleanStop::exit_code(2);
  }
  if (a.plot) {  // after a failure too: the results up to it
    try {
      plot(out_dir, a.quiet);
    } catch (const std::exception& e) {
      std::cerr << "treedyn: " << e.what() << "\n";
      return r.completed() ? 1 : 2;
    }
  }
  const int status = r.ok() ? 0 : r.status == "warning" ? 3 : 2;
  if (a.view && r.status != "interrupted" && view_results(out_dir) != 0) return r.completed() ? 1 : 2;  // after a failure too
  return CleanStop::exit_code(status);
}

/// Options `compare` and `bench scaling` share.
struct CompareArgs {
  std::vector<std::string> formulations;
  std::vector<std::string> sets;  // --set PATH=VALUE: model overrides (compare only)
  double dt = NAN, rtol = NAN, alpha = NAN, sample = NAN;
  int reference_max_bodies = 64;
  std::string output;
  bool estimate_error = false, no_estimate_error = false;

  CompareOptions options() const {
    CompareOptions o;
    o.estimate_error = estimate_error;
    o.verify = !no_estimate_error;
    if (!(formulations.size() == 1 && formulations[0] == "all")) o.formulations = formulations;
    auto set = [](std::optional<double>& target, double x) {
      if (!std::isnan(x)) target = x;
    };
    set(o.dt, dt);
    set(o.rtol, rtol);
    set(o.alpha, alpha);
    set(o.sample_interval, sample);
    o.reference_max_bodies = reference_max_bodies;
    o.pin_threads = true;  // the command line owns its process
    return o;
  }
};

void add_compare_options(CLI::App* cmd, CompareArgs& a) {
  cmd->add_option("--formulations", a.formulations, "formulations to run, comma-separated, or all (default: all)")
      ->delimiter(',');
  cmd->add_option("--dt", a.dt, "step of ali3, half- and fully-implicit (default: the model file's step, else their papers', 0.01 s and 1e-3 s)")
      ->check(kPositive);
  cmd->add_option("--rtol", a.rtol, "rtol = atol of dca and hdca (default 1e-6; the reference keeps 1e-10)")->check(kPositive);
  cmd->add_option("--alpha", a.alpha,
                  "ali3's penalty (default 1e6, raised by powers of ten until alpha h^2 / (4 M) >= 50 and alpha h^2 / (4 M D) >= 0.1, M the total mass, D the tree depth)")
      ->check(kPositive);
  cmd->add_option("--sample", a.sample, "interval of the common sample times, s (default max(0.01, dt); finer refines the work of drivers and dampers in the energy balance but costs the adaptive methods an interpolation per output)")
      ->check(kPositive);
  cmd->add_option("--reference-max-bodies", a.reference_max_bodies,
                  "run the dense O(n^3) reference only on models with at most this many bodies")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void write_text(const std::string& path, const std::string& text) { write_file_atomically(path, text); }

int compare(const std::string& path, const CompareArgs& a, double t_end, int threads, bool assemble, bool quiet,
            bool plots) {
  const auto model_ptr = std::make_shared<const Model>(load_consistent_model(path, a.sets, assemble, 1e-6, quiet));
  const Model& model = *model_ptr;
  CompareOptions options = a.options();
  if (!std::isnan(t_end)) options.t_end = t_end;
  options.threads = threads;
  const std::string dir = !a.output.empty() ? a.output : "results/" + model.name + "/compare";
  std::filesystem::create_directories(dir);
  options.stop = CleanStop::hook();
  CompareReport report;
  {
    CleanStop clean_stop;
    report = compare_formulations(model_ptr, options, dir, [&](const CompareRow& row) {
      if (!quiet) std::printf("  %-15s %s%s\n", row.formulation.c_str(), row.status.c_str(),
                              row.status == "ok" ? (" in " + sci(row.result.wall_seconds) + " s wall").c_str() : "");
    });
  }
  write_text(dir + "/compare.csv", compare_csv(report));
  write_text(dir + "/compare.md", compare_markdown(report));
  write_text(dir + "/deviation.csv", compare_deviation_csv(report));
  if (!quiet) std::printf("\n%s\nwrote %s/{compare.csv, compare.md, deviation.csv} and one folder of results per formulation\n",
                          compare_markdown(report).c_str(), dir.c_str());
  if (g_signal != 0) std::cerr << "treedyn: compare interrupted" << CleanStop::by() << "; the tables hold what was done\n";
  if (plots) plot(dir, quiet);
  return CleanStop::exit_code(0);
}

/// "2..1024" (or "64") into [min, max].
std::pair<int, int> parse_range(const std::string& text) {
  const auto dots = text.find("..");
  try {
    std::size_t used = 0;
    const int lo = std::stoi(text.substr(0, dots), &used);
    if (used != (dots == std::string::npos ? text.size() : dots)) throw std::invalid_argument(text);
    if (dots == std::string::npos) return {lo, lo};
    const std::string rest = text.substr(dots + 2);
    const int hi = std::stoi(rest, &used);
    if (used != rest.size()) throw std::invalid_argument(text);
    return {lo, hi};
  } catch (const std::logic_error&) {
    throw std::invalid_argument("--bodies: expected N or MIN..MAX (e.g. 2..1024), got '" + text + "'");
  }
}

int bench_scaling(const CompareArgs& a, ScalingOptions o, const std::string& joint, const std::string& bodies, bool quiet, bool plots) {
  o.compare = a.options();
  o.joint = *joint_type_from_string(joint);
  std::tie(o.min_bodies, o.max_bodies) = parse_range(bodies);
  const std::string dir = !a.output.empty() ? a.output : "results/scaling";
  std::filesystem::create_directories(dir);
  o.compare.stop = CleanStop::hook();
  ScalingReport report;
  {
    CleanStop clean_stop;
    report = scaling_study(o, [&](const ScalingRow& r) {
      if (!quiet) std::printf("  %5d bodies, %d thread(s), %-15s %s%s\n", r.bodies, r.threads, r.formulation.c_str(),
                              r.status.c_str(), r.t_reached > 0 ? (": " + sci(r.cost()) + " s per simulated s").c_str() : "");
    });
  }
  write_text(dir + "/scaling.csv", scaling_csv(report));
  write_text(dir + "/scaling.md", scaling_markdown(report));
  if (!quiet) std::printf("\n%s\nwrote %s/{scaling.csv, scaling.md}\n", scaling_markdown(report).c_str(), dir.c_str());
  if (g_signal != 0) std::cerr << "treedyn: bench scaling interrupted" << CleanStop::by() << "; the tables hold what was measured\n";
  if (plots) plot(dir, quiet);
  return CleanStop::exit_code(0);
}

/// `info` lists this many bodies, joints, drivers and closing joints, and draws the assembly tree
/// up to kInfoDrawnBodies bodies, unless --all is given.
constexpr std::size_t kInfoListed = 20;
constexpr int kInfoDrawnBodies = 64;

/// Prints items [0, count) with `item`, or the first kInfoListed and how many more there are.
template <class Item>
void print_listed(std::size_t count, bool all, const char* what, Item&& item) {
  const std::size_t shown = all ? count : std::min(count, kInfoListed);
  for (std::size_t k = 0; k < shown; ++k) item(k);
  if (shown < count) std::printf("  ... and %zu more %s (--all lists every one)\n", count - shown, what);
}

int info(const std::string& path, const std::vector<std::string>& sets, bool all) {
  const Model model = read_model(path, sets);
  const Topology topo(model);
  const AssemblyTree tree(model, topo);
  std::printf("model %s: %s\n", model.name.c_str(), model.description.c_str());
  std::printf("gravity [%g, %g, %g]\n\n%d bodies:\n", model.gravity.x(), model.gravity.y(), model.gravity.z(),
              model.body_count());
  print_listed(model.bodies.size(), all, "bodies", [&](std::size_t k) {
    const Body& b = model.bodies[k];
    std::printf("  %-16s mass %-10g at [%g, %g, %g]\n", b.name.c_str(), b.mass, b.position.x(), b.position.y(), b.position.z());
  });
  std::printf("\n%d joints:\n", model.joint_count());
  print_listed(model.joints.size(), all, "joints", [&](std::size_t k) {
    const Joint& j = model.joints[k];
    std::printf("  %-16s %-12s %s -> %s\n", j.name.c_str(), to_string(j.type), model.body_name(j.parent).c_str(),
                model.body_name(j.child).c_str());
  });
  if (!model.drivers.empty()) {
    std::printf("\n%zu drivers:\n", model.drivers.size());
    print_listed(model.drivers.size(), all, "drivers", [&](std::size_t k) {
      const Driver& d = model.drivers[k];
      std::printf("  %-16s joint %s, coordinate %d\n", d.name.c_str(), model.joints[static_cast<std::size_t>(d.joint)].name.c_str(),
                  d.coordinate);
    });
  }
  std::printf("\nconstraint equations: %d\n", topo.constraint_equations());
  std::printf("Gruebler-Kutzbach mobility: 6*%d - %d = %d\n", model.body_count(), topo.constraint_equations(),
              topo.gruebler_mobility());
  std::printf("Jacobian rank at t0: %d -> mobility %d, redundant constraints %d\n", topo.jacobian_rank(), topo.mobility(),
              topo.redundant_constraints());
  const std::vector<int>& loops = topo.loop_joints();
  const std::size_t named = all ? loops.size() : std::min(loops.size(), kInfoListed);
  std::printf("loops: %zu (closing joints:", loops.size());
  for (std::size_t k = 0; k < named; ++k) std::printf(" %s", model.joints[static_cast<std::size_t>(loops[k])].name.c_str());
  if (named < loops.size()) std::printf(" ... and %zu more", loops.size() - named);
  std::printf(")\nfree-floating sub-systems: %zu\n", topo.floating_subsystems().size());
  const ConsistencyReport c = check_initial_state(model, 1e-6);
  std::printf("initial state: %s (position error %s, velocity error %s)\n", c.consistent() ? "consistent" : "INCONSISTENT",
              sci(c.max_position_error).c_str(), sci(c.max_velocity_error).c_str());
  std::printf("\nassembly tree: height %d, at most %d handles per node\n", tree.height(), tree.max_handles());
  if (all || model.body_count() <= kInfoDrawnBodies) std::printf("%s", tree.to_ascii(model).c_str());
  else std::printf("  (drawn up to %d bodies; --all draws it)\n", kInfoDrawnBodies);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && (std::string(argv[1]) == "sweep" || std::string(argv[1]) == "view")) return python_command(argc, argv);
  const std::string threads_help =
      "threads for the tree passes (models under " + std::to_string(Threading::kDefaultMinParallelBodies) +
      " bodies run serially)";
  CLI::App app{"treedyn: dynamics of constrained multi-rigid-body systems by divide and conquer"};
  app.require_subcommand(1);
  app.set_version_flag("--version", std::string("treedyn ") + treedyn::version());
  app.footer(list_formulations());

  SimulateArgs sim;
  auto* s = app.add_subcommand("simulate", "simulate a model, write trajectory.csv, metrics.csv, summary.json");
  s->add_option("model", sim.model_path, kModelFileHelp)->required()->check(CLI::ExistingFile);
  s->add_option("--formulation,-f", sim.formulation, "formulation (default: the model's, else reference)");
  s->add_option("--t-end", sim.t_end, "end time, s (default: the model's, else 10)")->check(kNonNegative);
  s->add_option("--dt", sim.dt, "step of fixed-step methods, output interval of adaptive ones, s (default: the model's, else 0.01)")
      ->check(kPositive);
  s->add_option("--integrator", sim.integrator, "ODE integrator (defaults: dopri5; ali3, half-implicit and fully-implicit have their own)");
  s->add_option("--rtol", sim.rtol, "relative tolerance of adaptive integrators (defaults: reference 1e-10, dca and hdca 1e-6)")->check(kPositive);
  s->add_option("--atol", sim.atol, "absolute tolerance of adaptive integrators (defaults: reference 1e-10, dca and hdca 1e-6)")->check(kPositive);
  s->add_option("--threads", sim.threads, threads_help)->capture_default_str()->check(kPositive);
  s->add_flag("--fixed-threads", sim.fixed_threads,
              "run every tree pass on the --threads threads; by default they are timed against one thread while running "
              "and the faster is used (a busy machine makes threads slower than one; docs/cli.md)");
  s->add_option("--sample-every", sim.sample_every, "sample every k-th step (then every sample is written)")
      ->capture_default_str()
      ->check(kPositive);
  s->add_option("--set", sim.sets, "change one value of the model before it is read, PATH=VALUE (repeatable): bodies.crank.mass=2, joints.pin.axis=[0,0,1], forces.spring.stiffness=50, gravity=[0,0,-9.81]; validated as the file is")
      ->allow_extra_args(false)->take_all();
  s->add_option("--format", sim.format,
                "result files: csv (text) or npy (NumPy binary, exact, about 2.5 times smaller; column names in "
                "columns.json; read by numpy.load, treedyn.load_result and treedyn plot)")
      ->capture_default_str()
      ->check(CLI::IsMember({"csv", "npy"}));
  s->add_option("--max-output-mb", sim.max_output_mb,
                "without --sample-every, write every k-th sample (and the last) so the files stay near this size; "
                "metrics and maxima still cover every sample (0: write all)")
      ->capture_default_str()
      ->check(kNonNegative);
  s->add_option("--output,-o", sim.output,
                "output directory (default: results/<model name>/<formulation>); what an earlier run wrote there is removed");
  s->add_flag("--assemble", sim.assemble, "project an inconsistent initial state onto the constraints");
  s->add_option("--consistency-tol", sim.tolerance, "largest initial constraint violation accepted")
      ->capture_default_str()
      ->check(kPositive);
  s->add_flag("--quiet,-q", sim.quiet, "print nothing but errors");
  s->add_flag("--profile", sim.profile, "print the time split per stage of the formulation");
  s->add_flag("--plot", sim.plot, "draw the results as SVG with gnuplot (as `treedyn plot` does)");
  // The self-judgement's thresholds (JudgementOptions), each a share of a scale of the model or run.
  for (const auto& [flag, threshold, help] : {
           std::tuple{"--check-energy", &sim.judge.energy,
                      "status warning when the energy drift (beyond the work of non-conservative loads) exceeds this share "
                      "of the run's energy range (0: not checked)"},
           std::tuple{"--check-position", &sim.judge.position,
                      "status warning when the position constraint error exceeds this share of the model's length (0: not "
                      "checked)"},
           std::tuple{"--check-velocity", &sim.judge.velocity,
                      "status warning when the velocity constraint error exceeds this share of the characteristic speed "
                      "sqrt(2 energy range / mass) (0: not checked)"},
           std::tuple{"--check-quaternion", &sim.judge.quaternion,
                      "status warning when a body's Euler parameters' norm leaves 1 by more than this (0: not checked)"},
           std::tuple{"--check-accuracy", &sim.judge.accuracy,
                      "wherever an error estimate is made (--estimate-error, fixed-step runs, passages near singular "
                      "positions): status warning when the estimated error of the body positions exceeds this share "
                      "of the model's length (0: not checked)"},
           std::tuple{"--check-branch", &sim.judge.branch,
                      "closed loops: when their conditioning (1 far from, 0 at a singular position, where assembly branches "
                      "meet) falls below this, a refined companion checks the run from there on (judged by "
                      "--check-accuracy), or the status is warning when none can be made (0: not watched)"}})
    s->add_option(flag, *threshold, help)->capture_default_str()->check(kNonNegative);
  auto* always = s->add_flag("--estimate-error", sim.estimate_error,
              "run a refined companion beside the run (half the step, or a hundredth of the tolerances) and report the "
              "largest differences of body positions, joint coordinates and energy (summary.json's error_estimate; "
              "judged by --check-accuracy); costs about two runs or more. Without it, fixed-step runs (ali3, half- and "
              "fully-implicit, euler, rk4, symplectic-euler), which control no error of their own, are checked so anyway, "
              "and any run from where it comes near a singular position of its loops (--check-branch)");
  s->add_flag("--no-estimate-error", sim.no_estimate_error,
              "no refined companion at all, not even for a fixed-step run or a singular position: about a third of the "
              "cost of a fixed-step run, whose status then says nothing of its accuracy (a passage near a singular "
              "position is a warning)")
      ->excludes(always);
  s->add_flag("--view", sim.view, "write viewer.html beside the results: the run in 3-D with its plots (as `treedyn view` does)");
  s->add_option("--baumgarte", sim.baumgarte,
                "dca: Baumgarte stabilisation of loop-closing joints, alpha,beta in 1/s (default: both 3/T, T = the model's "
                "length / speed, which keeps its loops on their constraints and branch; 0,0: none, as in paper 001)")
      ->delimiter(',')
      ->expected(2)
      ->check(kNonNegative);
  s->add_flag("--planar", sim.planar, "hdca: planar form of paper 004 (revolute and prismatic joints in the xy plane)");
  s->add_option("--precision", sim.precision, "hdca: arithmetic, double or float (paper 004)")
      ->capture_default_str()
      ->check(CLI::IsMember({"double", "float"}));
  s->add_option("--inverse", sim.inverse,
                "hdca: small-matrix inverses, cholesky or ldup (paper 004: adjugate for 2x2, LDUP factorisation beyond)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cholesky", "ldup"}));
  s->add_option("--error-control", sim.error_control,
                "hdca: what rtol/atol bound: the canonical momenta's velocity equivalents, or the momenta as they are (paper 001)")
      ->capture_default_str()
      ->check(CLI::IsMember({"momenta", "velocities"}));
  s->add_option("--alpha", sim.ali3.alpha, "ali3: penalty factor (default: 1e6 raised by powers of ten until alpha h^2 / (4 M) >= 50 and alpha h^2 / (4 M D) >= 0.1, M the total mass, D the tree depth; paper 000: 1e6, 1e9 for the 128-link chain)")
      ->capture_default_str()
      ->check(kPositive);
  s->add_option("--newton-max", sim.newton_max,
                "ali3, half-implicit, fully-implicit: Newton-Raphson iterations per step at most "
                "(defaults: ali3 3 as in paper 000; half- and fully-implicit 50, a step that needs more fails)")
      ->check(kPositive);
  s->add_option("--newton-tol", sim.newton_tol,
                "ali3, half-implicit, fully-implicit: stop iterating when the Newton increment's norm falls below this "
                "(defaults: ali3 1e-12 as in paper 000, in effect a fixed count; paper 002: half-implicit 1e-10, "
                "fully-implicit 1e-10/h^2; 0, ali3 only: always newton-max iterations)")
      ->check(kNonNegative);
  s->add_option("--linear-solver", sim.linear_solver,
                "half-implicit, fully-implicit: Newton systems solved on the assembly tree in O(n), or by Eigen's "
                "sparse LU (the cross-check)")
      ->capture_default_str()
      ->check(CLI::IsMember({"tree", "sparse"}));
  s->add_flag("--geometric-stiffness", sim.ali3.geometric_stiffness,
              "ali3: add the constraint loads' derivatives Phi_qq' lambda + Psi_qq' mu to the tangent (paper 000, Sect. 4.4)");
  s->add_option("--projections", sim.projections, "ali3: mass-orthogonal projections after each step")
      ->capture_default_str()
      ->check(CLI::IsMember({"both", "velocities", "accelerations", "none"}));
  s->footer(list_formulations());

  std::string info_path;
  bool info_all = false;
  auto* i = app.add_subcommand("info", "print bodies, joints, mobility, redundancy, loops and the assembly tree");
  i->add_option("model", info_path, kModelFileHelp)->required()->check(CLI::ExistingFile);
  i->add_flag("--all", info_all, "list every body, joint, driver and closing joint, and draw the assembly tree, "
              "however large the model (default: the first 20 of each, the tree up to 64 bodies)");
  std::vector<std::string> info_sets;
  i->add_option("--set", info_sets, "as simulate --set")->allow_extra_args(false)->take_all();

  std::string family, joint = "spherical", gen_out;
  int bodies = 0;
  unsigned seed = 1;
  auto* g = app.add_subcommand("generate", "write a generated model");
  g->add_option("family", family,
                "model family: chain (paper 000's n-link pendulum), spinning-bars (paper 002's scaling chain) or ladder "
                "(coupled four-bar loops)")
      ->required()
      ->check(CLI::IsMember({"chain", "spinning-bars", "ladder"}));
  g->add_option("--bodies,-n", bodies, "number of bodies, 1 to 1000000 (ladder: number of loops, 2 n + 1 bars)")
      ->required()
      ->check(CLI::Range(1, 1000000));
  g->add_option("--joint", joint, "joint type")->capture_default_str()->check(CLI::IsMember({"spherical", "revolute"}));
  g->add_option("--seed", seed, "spinning-bars: seed of the random spin rates")->capture_default_str();
  g->add_option("--output,-o", gen_out, "model file to write")->required();

  std::string plot_dir;
  auto* p = app.add_subcommand("plot",
                               "draw a run's results (energy, energy drift, constraint errors, the last body's position), "
                               "a comparison's (every formulation overlaid) or a scaling run's (cost against bodies) as "
                               "SVG with gnuplot; the script plots.gp is kept in the directory");
  p->add_option("results", plot_dir,
                "results directory of a run (metrics.csv, trajectory.csv), of `treedyn compare` (compare.csv) or of "
                "`treedyn bench scaling` (scaling.csv)")
      ->required()
      ->check(CLI::ExistingDirectory);

  std::string asm_path, asm_out;
  auto* as = app.add_subcommand("assemble", "project a model's initial state onto its constraints and write it");
  as->add_option("model", asm_path, kModelFileHelp)->required()->check(CLI::ExistingFile);
  as->add_option("--output,-o", asm_out, "model file to write")->required();

  std::string imp_path, imp_out;
  std::vector<std::string> imp_sets;
  ImportOptions imp_options;
  auto* im = app.add_subcommand("import", "read a URDF, MJCF or SDFormat file and write treedyn's JSON of it (docs/import.md)");
  im->add_option("model", imp_path, "URDF (.urdf), MJCF (.xml, .mjcf) or SDFormat (.sdf) file")->required()->check(CLI::ExistingFile);
  im->add_option("--output,-o", imp_out, "model file to write (JSON)")->required();
  im->add_option("--set", imp_sets, "as simulate --set, on the imported model (gravity=[0,0,-9.80665])")
      ->allow_extra_args(false)
      ->take_all();
  im->add_option("--connector-mass-fraction", imp_options.connector_mass_fraction,
                 "MJCF: share of a body's mass and inertia each connector body carries where several joints of the body are "
                 "no single treedyn joint; 0 refuses such bodies")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.1));

  std::string cmp_path;
  CompareArgs cmp;
  double cmp_t_end = NAN;
  int cmp_threads = 1;
  bool cmp_assemble = false, cmp_quiet = false, cmp_plot = false;
  auto* c = app.add_subcommand("compare", "run one model under several formulations and tabulate accuracy, cost and constraint errors side by side");
  c->add_option("model", cmp_path, kModelFileHelp)->required()->check(CLI::ExistingFile);
  c->add_option("--set", cmp.sets, "as simulate --set")->allow_extra_args(false)->take_all();
  add_compare_options(c, cmp);
  c->add_option("--t-end", cmp_t_end, "end time, s (default: the model's, else 10)")->check(kNonNegative);
  c->add_option("--threads", cmp_threads, threads_help)->capture_default_str()->check(kPositive);
  c->add_option("--output,-o", cmp.output, "output directory (default: results/<model name>/compare)");
  c->add_flag("--assemble", cmp_assemble, "project an inconsistent initial state onto the constraints");
  auto* cmp_always = c->add_flag("--estimate-error", cmp.estimate_error,
              "run each formulation beside a refined companion (as simulate --estimate-error): compare.csv's "
              "error_estimate_m and converged say which runs are converged; about twice the cost (fixed-step runs "
              "are checked so without it too, as simulate does)");
  c->add_flag("--no-estimate-error", cmp.no_estimate_error, "no refined companions at all (as simulate --no-estimate-error)")
      ->excludes(cmp_always);
  c->add_flag("--quiet,-q", cmp_quiet, "print nothing but errors");
  c->add_flag("--plot", cmp_plot, "overlay the formulations' deviations, energy drifts and constraint errors as SVG (gnuplot)");

  CompareArgs sc;
  ScalingOptions sc_options;
  std::string sc_joint = "spherical", sc_bodies = "2..1024";
  bool sc_quiet = false, sc_plot = false;
  auto* b = app.add_subcommand("bench", "whole-run benchmarks across formulations");
  b->require_subcommand(1);
  auto* bs = b->add_subcommand("scaling", "every formulation on n-link chains: wall time per simulated second as n grows");
  add_compare_options(bs, sc);
  bs->add_option("--joint", sc_joint, "joint type of the chains")->capture_default_str()->check(CLI::IsMember({"spherical", "revolute"}));
  bs->add_option("--bodies", sc_bodies, "chain lengths MIN..MAX, doubling from MIN")->capture_default_str();
  bs->add_option("--threads", sc_options.threads, "thread counts, comma-separated")->delimiter(',')->capture_default_str()->check(kPositive);
  bs->add_option("--t-end", sc_options.t_end, "simulated time per run, s")->capture_default_str()->check(kPositive);
  bs->add_option("--budget", sc_options.budget_seconds,
                 "skip a run predicted (linearly from the previous length) to take more wall seconds than this")
      ->capture_default_str()->check(kPositive);
  bs->add_option("--output,-o", sc.output, "output directory (default: results/scaling)");
  bs->add_flag("--quiet,-q", sc_quiet, "print nothing but errors");
  bs->add_flag("--plot", sc_plot, "draw the cost per simulated second against the bodies, log-log, as SVG (gnuplot)");

  app.add_subcommand("sweep",
                     "run a model over a grid or random samples of its parameters on Dask, one row per sample in "
                     "sweep.csv (the Python package's command: treedyn sweep --help)");

  app.add_subcommand("view",
                     "write viewer.html: a run, or a comparison's runs overlaid, in 3-D with its time plots, one "
                     "self-contained page (the Python package's command: treedyn view --help)");

  const std::vector<std::string> commands = {"simulate", "info", "generate", "plot", "assemble", "import", "compare", "bench", "sweep", "view"};
  if (argc > 1 && argv[1][0] != '-' && std::find(commands.begin(), commands.end(), argv[1]) == commands.end()) {
    std::cerr << "treedyn: unknown command '" << argv[1] << "'" << closest_hint(argv[1], commands) << " (commands:";
    for (const auto& c : commands) std::cerr << " " << c;
    std::cerr << "; treedyn --help)\n";
    return 1;
  }
  // A write beyond a file-size limit (ulimit -f) fails with EFBIG and is reported like a full disk,
  // instead of the signal ending the process mid-row.
  std::signal(SIGXFSZ, SIG_IGN);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);  // prints help, the version, or the error
    return code == 0 ? 0 : 1;
  }
  // The formulation options typed, by the catalogue's names: each is checked against the
  // formulation chosen (simulate refuses one that would be ignored).
  const std::vector<std::tuple<const char*, const char*, std::function<OptionValue()>>> formulation_options = {
      {"--integrator", "integrator", [&] { return OptionValue(sim.integrator); }},
      {"--rtol", "rtol", [&] { return OptionValue(sim.rtol); }},
      {"--atol", "atol", [&] { return OptionValue(sim.atol); }},
      {"--threads", "threads", [&] { return OptionValue(static_cast<long>(sim.threads)); }},
      {"--planar", "planar", [&] { return OptionValue(sim.planar); }},
      {"--fixed-threads", "thread_fallback", [&] { return OptionValue(!sim.fixed_threads); }},
      {"--precision", "precision", [&] { return OptionValue(sim.precision); }},
      {"--inverse", "inverse", [&] { return OptionValue(sim.inverse); }},
      {"--error-control", "error_control", [&] { return OptionValue(sim.error_control); }},
      {"--alpha", "alpha", [&] { return OptionValue(sim.ali3.alpha); }},
      {"--newton-max", "newton_max", [&] { return OptionValue(static_cast<long>(sim.newton_max)); }},
      {"--newton-tol", "newton_tol", [&] { return OptionValue(sim.newton_tol); }},
      {"--projections", "projections", [&] { return OptionValue(sim.projections); }},
      {"--geometric-stiffness", "geometric_stiffness", [&] { return OptionValue(sim.ali3.geometric_stiffness); }},
      {"--linear-solver", "linear_solver", [&] { return OptionValue(sim.linear_solver); }},
  };
  sim.sample_every_given = s->count("--sample-every") > 0;
  for (const auto& [flag, name, value] : formulation_options)
    if (s->count(flag) > 0) sim.given.push_back({flag, name, value()});
  if (s->count("--baumgarte") > 0) {
    sim.given.push_back({"--baumgarte", "baumgarte_alpha", sim.baumgarte[0]});
    sim.given.push_back({"--baumgarte", "baumgarte_beta", sim.baumgarte[1]});
  }
  try {
    if (*s) return simulate(sim);
    if (*c) return compare(cmp_path, cmp, cmp_t_end, cmp_threads, cmp_assemble, cmp_quiet, cmp_plot);
    if (*bs) return bench_scaling(sc, sc_options, sc_joint, sc_bodies, sc_quiet, sc_plot);
    if (*i) return info(info_path, info_sets, info_all);
    if (*p) {
      plot(plot_dir, false);
      return 0;
    }
    if (*g) {
      if (family == "chain") {
        write_model_file(make_chain(bodies, *joint_type_from_string(joint)), gen_out);
        std::fprintf(stderr, "wrote %s: %d-link %s chain\n", gen_out.c_str(), bodies, joint.c_str());
      } else if (family == "ladder") {
        write_model_file(make_ladder(bodies), gen_out);
        std::fprintf(stderr, "wrote %s: ladder of %d coupled four-bar loops (%d bars)\n", gen_out.c_str(), bodies, 2 * bodies + 1);
      } else {
        write_model_file(make_spinning_bar_chain(bodies, seed), gen_out);
        std::fprintf(stderr, "wrote %s: %d spinning bars on spherical joints (seed %u)\n", gen_out.c_str(), bodies, seed);
      }
      return 0;
    }
    if (*im) return import_model(imp_path, imp_out, imp_sets, imp_options);
    if (*as) {
      AssemblyReport report;
      const Model m = assemble_initial_state(read_model(asm_path, {}), report);
      write_model_file(m, asm_out);
      std::cerr << report.summary(m) << "wrote " << asm_out << "\n";
      return 0;
    }
  } catch (const std::exception& e) {
    std::cerr << "treedyn: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
