// The command line, end to end: it is what users run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "treedyn/model_json.hpp"

namespace {

struct Output {
  int status;
  std::string text;
};

/// A shell command line's standard output (redirect stderr in `command` to see it) and exit status.
Output run_shell(const std::string& command) {
  FILE* pipe = popen(command.c_str(), "r");
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) text += buf;
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), text};
}

/// `treedyn args`: its output and errors, and its exit status.
Output run(const std::string& args) { return run_shell(std::string(TREEDYN_BINARY) + " " + args + " 2>&1"); }

/// `treedyn args` started in the background and sent SIG`signal` ("INT", "TERM") once `file` has
/// content (after 30 s at most) and `settle` seconds more: its output, and its exit status.
Output run_signalled(const std::string& args, const std::string& file, const char* signal, const char* settle) {
  return run_shell("sh -c '" + std::string(TREEDYN_BINARY) + " " + args + " & pid=$!; i=0; while [ ! -s " + file +
                   " ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done; sleep " + settle + "; kill -" + signal +
                   " $pid; wait $pid' 2>&1");
}

std::string temp(const std::string& name) { return ::testing::TempDir() + "/treedyn_cli_" + name; }

}  // namespace

TEST(Cli, SimulateWritesResultsAndASummary) {
  const auto out = run("simulate " + treedyn::test::model_path("four_bar") + " --t-end 0.5 -o " + temp("fb"));
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("four_bar with reference"), std::string::npos) << out.text;
  for (const char* f : {"trajectory.csv", "metrics.csv", "summary.json"}) EXPECT_TRUE(std::filesystem::exists(temp("fb") + "/" + f)) << f;
}

// A formulation's own figures (ali3: the Euler parameters' normalisation error) reach the
// printed summary and summary.json.
TEST(Cli, SimulatePrintsAndWritesTheFormulationsDiagnostics) {
  const auto out = run("simulate " + treedyn::test::model_path("spatial_double_pendulum") + " -f ali3 --t-end 0.5 -o " + temp("sdp"));
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("euler_parameter_norm_error_max: "), std::string::npos) << out.text;
  std::ifstream summary(temp("sdp") + "/summary.json");
  const std::string json((std::istreambuf_iterator<char>(summary)), std::istreambuf_iterator<char>());
  EXPECT_NE(json.find("\"euler_parameter_norm_error_max\""), std::string::npos) << json;
}

TEST(Cli, InfoReportsMobilityRedundancyAndTheTree) {
  const auto out = run("info " + treedyn::test::model_path("four_bar"));
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("mobility 1, redundant constraints 3"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("assembly tree: height 2"), std::string::npos) << out.text;
}

TEST(Cli, GenerateWritesThePaperChain) {
  const auto out = run("generate chain --bodies 8 --joint revolute -o " + temp("chain8.json"));
  ASSERT_EQ(out.status, 0) << out.text;
  const treedyn::Model m = treedyn::read_model_file(temp("chain8.json"));
  EXPECT_EQ(m.body_count(), 8);
  EXPECT_EQ(m.joints[3].type, treedyn::JointType::Revolute);
}

// The notice of what was written goes to standard error: a model written to standard output is
// the model alone, readable as it comes.
TEST(Cli, GenerateToStandardOutputWritesTheModelAlone) {
  const auto out = run_shell(std::string(TREEDYN_BINARY) + " generate ladder -n 3 -o /dev/stdout 2>&1 > " + temp("piped.json"));
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("wrote /dev/stdout"), std::string::npos) << out.text;
  const treedyn::Model m = treedyn::read_model_file(temp("piped.json"));
  EXPECT_EQ(m.body_count(), 7);
}

TEST(Cli, InconsistentInitialStateIsRefusedUnlessAssembled) {
  std::string text;
  {
    std::ifstream in(treedyn::test::model_path("spatial_double_pendulum"));
    text.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  }
  text.replace(text.find("\"position\": [1.0, 0, 0.5],"), 26, "\"position\": [1.0, 0, 0.5], \"velocity\": [0.5, 0, 0],");
  std::ofstream(temp("bad.json")) << text;
  auto out = run("simulate " + temp("bad.json") + " --t-end 0.1 -o " + temp("bad"));
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.text.find("joint 'joint2': initial velocities violate it"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("--assemble"), std::string::npos) << out.text;
  out = run("simulate " + temp("bad.json") + " --t-end 0.1 --assemble -o " + temp("bad"));
  EXPECT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("B: moved"), std::string::npos) << out.text;
}

TEST(Cli, JsonSyntaxErrorsGiveLineAndColumn) {
  std::ofstream(temp("broken.json")) << "{\n  \"name\": \"x\"\n  \"bodies\": []\n}\n";
  const auto out = run("simulate " + temp("broken.json"));
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.text.find("line 3, column"), std::string::npos) << out.text;
}

TEST(Cli, UnknownFormulationIsAClearError) {
  const auto out = run("simulate " + treedyn::test::model_path("four_bar") + " --formulation magic -o " + temp("magic"));
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.text.find("unknown formulation 'magic' (known: reference"), std::string::npos) << out.text;
}

TEST(Cli, HelpListsFormulationsIntegratorsAndDefaults) {
  const auto out = run("simulate --help");
  EXPECT_EQ(out.status, 0);
  for (const char* s : {"--formulation", "--integrator", "--rtol", "--threads", "dopri5", "reference"})
    EXPECT_NE(out.text.find(s), std::string::npos) << s;
}

TEST(Cli, CompareWritesTablesAndEachFormulationsResults) {
  const std::string dir = temp("compare");
  std::filesystem::remove_all(dir);
  const auto out = run("compare " + treedyn::test::model_path("spatial_double_pendulum") +
                       " --formulations dca,ali3 --t-end 0.3 -o " + dir);
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("| ali3 | ok |"), std::string::npos) << out.text;
  for (const char* f : {"compare.csv", "compare.md", "deviation.csv", "dca/trajectory.csv", "ali3/metrics.csv", "reference/summary.json"})
    EXPECT_TRUE(std::filesystem::exists(dir + "/" + f)) << f;
}

TEST(Cli, CompareNamesAnUnknownFormulation) {
  const auto out = run("compare " + treedyn::test::model_path("spatial_double_pendulum") + " --formulations dca,abc -o " +
                       temp("compare_bad"));
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.text.find("unknown formulation 'abc'"), std::string::npos) << out.text;
}

TEST(Cli, BenchScalingWritesItsTableAndRefusesABadRange) {
  const std::string dir = temp("scaling");
  const auto out = run("bench scaling --bodies 2..4 --t-end 0.05 --formulations dca,hdca --threads 1,2 -q -o " + dir);
  ASSERT_EQ(out.status, 0) << out.text;
  std::ifstream csv(dir + "/scaling.csv");
  int lines = 0;
  for (std::string line; std::getline(csv, line);) ++lines;
  EXPECT_EQ(lines, 1 + 2 * 2 * 2);
  const auto bad = run("bench scaling --bodies 2..x -o " + dir);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.text.find("expected N or MIN..MAX"), std::string::npos) << bad.text;
}

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// Data rows of a CSV file (lines after the header).
int rows_of(const std::string& csv) {
  const std::string text = read_file(csv);
  return static_cast<int>(std::count(text.begin(), text.end(), '\n')) - 1;
}

/// The points of each curve gnuplot drew into an SVG file: a curve is a path whose 'd' starts with
/// its key sample (one segment) and goes on through its points, so it holds one 'L' per point.
std::vector<int> curve_points(const std::string& svg_file) {
  const std::string svg = read_file(svg_file);
  std::vector<int> points;
  const std::string open = "<path stroke='rgb(";
  for (auto at = svg.find(open); at != std::string::npos; at = svg.find(open, at + 1)) {
    const auto d = svg.find("d='", at) + 3;
    const std::string path = svg.substr(d, svg.find('\'', d) - d);
    points.push_back(static_cast<int>(std::count(path.begin(), path.end(), 'L')));
  }
  return points;
}

/// gnuplot's 1-based index of a column of a CSV file's header, found here independently of the
/// plot code.
int column_of(const std::string& csv, const std::string& name) {
  const std::string text = read_file(csv);
  std::istringstream header(text.substr(0, text.find('\n')));
  int index = 1;
  for (std::string column; std::getline(header, column, ','); ++index)
    if (column.substr(0, column.find(" [")) == name) return index;  // "total [J]" is the column "total"
  return -1;
}

}  // namespace

// `simulate --plot` draws the energies, the drift, the constraint errors and the last body's
// position as SVG, from the columns of those names.
TEST(Cli, SimulatePlotDrawsTheRunAsSvg) {
  const std::string dir = temp("plot_fb");
  const auto out = run("simulate " + treedyn::test::model_path("four_bar") + " --t-end 0.5 --plot -o " + dir);
  ASSERT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("plots: " + dir + "/{energy.svg, energy_drift.svg, constraints.svg, C.svg}"), std::string::npos)
      << out.text;
  // Every curve holds every sample: 3, 1, 3 and 3 curves of metrics.csv's (= trajectory.csv's) rows.
  const int rows = rows_of(dir + "/metrics.csv");
  ASSERT_GT(rows, 10);
  for (const auto& [f, curves] : {std::pair{"energy.svg", 3}, {"energy_drift.svg", 1}, {"constraints.svg", 3}, {"C.svg", 3}})
    EXPECT_EQ(curve_points(dir + "/" + f), std::vector<int>(static_cast<std::size_t>(curves), rows)) << f;
  const std::string script = read_file(dir + "/plots.gp");
  const std::string metrics = dir + "/metrics.csv", trajectory = dir + "/trajectory.csv";
  EXPECT_NE(script.find("using 1:" + std::to_string(column_of(metrics, "total")) + " with lines title 'total'"),
            std::string::npos) << script;
  EXPECT_NE(script.find("using 1:" + std::to_string(column_of(metrics, "energy_drift")) + " with lines title 'energy drift'"),
            std::string::npos) << script;
  const int velocity = column_of(metrics, "velocity_error");
  EXPECT_NE(script.find("(abs($" + std::to_string(velocity) + ") > 1e-18 ? abs($" + std::to_string(velocity)),
            std::string::npos) << script;
  EXPECT_NE(script.find("using 1:" + std::to_string(column_of(trajectory, "C.y")) + " with lines title 'y'"),
            std::string::npos) << script;
}

// A diverging run keeps its results up to the failure, and --plot still draws them.
TEST(Cli, SimulatePlotDrawsAFailedRunUpToTheFailure) {
  ASSERT_EQ(run("generate chain -n 16 -o " + temp("chain16.json")).status, 0);
  const std::string dir = temp("plot_failed");
  const auto out = run("simulate " + temp("chain16.json") + " -f ali3 --dt 0.1 --alpha 100 --t-end 5 --plot -o " + dir);
  EXPECT_EQ(out.status, 2) << out.text;
  EXPECT_NE(out.text.find("simulation failed"), std::string::npos) << out.text;
  const int rows = rows_of(dir + "/metrics.csv");
  ASSERT_GE(rows, 2);
  EXPECT_EQ(curve_points(dir + "/energy.svg"), std::vector<int>(3, rows));
}

// `plot` on a directory whose files lack a column names the file and the column.
TEST(Cli, PlotNamesAMissingColumn) {
  const std::string dir = temp("plot_bad");
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/metrics.csv") << "t,kinetic,potential,total\n0,1,2,3\n";
  std::ofstream(dir + "/trajectory.csv") << "t,b.x,b.y,b.z\n0,0,0,0\n";
  const auto out = run("plot " + dir);
  EXPECT_EQ(out.status, 1) << out.text;
  EXPECT_NE(out.text.find("plot_bad/metrics.csv has no column 'energy_drift'"), std::string::npos) << out.text;
}

// `compare --plot` overlays the formulations: one curve per formulation that ran, the reference
// left out of the deviations (it is what they deviate from).
TEST(Cli, ComparePlotOverlaysTheFormulations) {
  const std::string dir = temp("plot_compare");
  const auto out = run("compare " + treedyn::test::model_path("loop4") +
                       " --formulations reference,dca,hdca --t-end 0.2 --plot -q -o " + dir);
  ASSERT_EQ(out.status, 0) << out.text;
  const std::string script = read_file(dir + "/plots.gp");
  // Every formulation's curve holds every common sample; deviations exist for dca and hdca only.
  const int rows = rows_of(dir + "/dca/metrics.csv");
  ASSERT_GT(rows, 10);
  EXPECT_EQ(curve_points(dir + "/deviation.svg"), std::vector<int>(2, rows));
  for (const char* f : {"energy_drift.svg", "position_error.svg", "velocity_error.svg", "acceleration_error.svg"})
    EXPECT_EQ(curve_points(dir + "/" + f), std::vector<int>(3, rows)) << f;
  const int hdca = column_of(dir + "/deviation.csv", "hdca");
  EXPECT_NE(script.find("'deviation.csv' skip 1 using 1:(abs($" + std::to_string(hdca)), std::string::npos) << script;
  const int drift = column_of(dir + "/dca/metrics.csv", "energy_drift");
  EXPECT_NE(script.find("'dca/metrics.csv' skip 1 using 1:(abs($" + std::to_string(drift)), std::string::npos) << script;
  const std::string deviation_plot = script.substr(0, script.find("set output 'energy_drift.svg'"));
  EXPECT_EQ(deviation_plot.find("title 'reference'"), std::string::npos) << deviation_plot;
}

// `bench scaling --plot`: one curve per formulation and thread count, holding exactly that
// combination's rows of scaling.csv (bodies and wall seconds per simulated second).
TEST(Cli, BenchScalingPlotDrawsOneCurvePerFormulationAndThreadCount) {
  const std::string dir = temp("plot_scaling");
  const auto out = run("bench scaling --bodies 2..4 --t-end 0.05 --formulations dca,ali3 --threads 1,2 --plot -q -o " + dir);
  ASSERT_EQ(out.status, 0) << out.text;
  const std::vector<int> points = curve_points(dir + "/scaling.svg");  // 4 curves of 2 lengths, then the real-time line
  ASSERT_EQ(points.size(), 5u);
  EXPECT_EQ(std::vector<int>(points.begin(), points.begin() + 4), std::vector<int>(4, 2));
  const std::string script = read_file(dir + "/plots.gp");
  // The expected data block of ali3 with two threads, from scaling.csv's rows.
  const std::string csv = read_file(dir + "/scaling.csv");
  std::istringstream rows(csv);
  std::string row, expected;
  std::getline(rows, row);
  const int cost = column_of(dir + "/scaling.csv", "wall_per_simulated_s");
  while (std::getline(rows, row)) {
    std::vector<std::string> f;
    std::istringstream fields(row);
    for (std::string field; std::getline(fields, field, ',');) f.push_back(field);
    if (f[2] == "ali3" && f[1] == "2") expected += f[0] + "," + f[static_cast<std::size_t>(cost - 1)] + "\n";
  }
  ASSERT_EQ(std::count(expected.begin(), expected.end(), '\n'), 2) << csv;
  const auto title = script.find("title 'ali3, 2 threads'");
  ASSERT_NE(title, std::string::npos) << script;
  const std::string block = script.substr(0, title).substr(script.substr(0, title).rfind("$curve"));  // "$curveK using ..."
  const std::string name = block.substr(0, block.find(' '));
  EXPECT_NE(script.find(name + " << EOD\n" + expected + "EOD\n"), std::string::npos) << script;
  int blocks = 0;  // dca and ali3, each with 1 and 2 threads
  for (auto at = script.find(" << EOD\n"); at != std::string::npos; at = script.find(" << EOD\n", at + 1)) ++blocks;
  EXPECT_EQ(blocks, 4) << script;
}

// Number options are checked as they are read, and the message says what is wrong in words.
TEST(Cli, RefusesANonPositiveStepInWords) {
  const auto out = run("simulate " + treedyn::test::model_path("four_bar") + " --dt -1 -o " + temp("bad_dt"));
  EXPECT_NE(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("--dt: must be positive, got -1"), std::string::npos) << out.text;
  const auto nan = run("simulate " + treedyn::test::model_path("four_bar") + " --t-end nan -o " + temp("bad_dt"));
  EXPECT_NE(nan.status, 0) << nan.text;
  EXPECT_NE(nan.text.find("--t-end: must be a finite number, got 'nan'"), std::string::npos) << nan.text;
}

namespace {

/// The model file of `name` with its first occurrence of `from` replaced by `to`, written to a
/// temporary file (named after `tag`: tests run in parallel) whose path is returned.
std::string edited_model(const std::string& tag, const std::string& name, const std::string& from, const std::string& to) {
  std::string text = read_file(treedyn::test::model_path(name));
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  text.replace(at, from.size(), to);
  const std::string path = temp("edited_" + tag + "_" + name + ".json");
  std::ofstream(path) << text;
  return path;
}

std::size_t count_lines(const std::string& text) { return static_cast<std::size_t>(std::count(text.begin(), text.end(), '\n')); }

}  // namespace

// Issue 25: options of another formulation are refused with the formulations they apply to,
// never ignored (ali3 has its own integrator; the reference has no penalty).
TEST(Cli, OptionsOfAnotherFormulationAreRefusedNamingWhereTheyApply) {
  const std::string model = treedyn::test::model_path("four_bar");
  const auto integrator = run("simulate " + model + " -f ali3 --integrator rk4 -q -o " + temp("refuse"));
  EXPECT_EQ(integrator.status, 1) << integrator.text;
  EXPECT_NE(integrator.text.find("--integrator: option integrator does not apply to ali3 (it applies to reference, dca, hdca)"),
            std::string::npos)
      << integrator.text;
  const auto alpha = run("simulate " + model + " -f reference --alpha 1e9 -q -o " + temp("refuse"));
  EXPECT_EQ(alpha.status, 1) << alpha.text;
  EXPECT_NE(alpha.text.find("--alpha: option alpha does not apply to reference (it applies to ali3)"), std::string::npos) << alpha.text;
  const auto baumgarte = run("simulate " + model + " -f dca --baumgarte nan,1 -q -o " + temp("refuse"));
  EXPECT_EQ(baumgarte.status, 1) << baumgarte.text;
  EXPECT_NE(baumgarte.text.find("--baumgarte: must be a finite number, got 'nan'"), std::string::npos) << baumgarte.text;
  const auto tol = run("simulate " + model + " -f half-implicit --newton-tol 0 -q -o " + temp("refuse"));
  EXPECT_EQ(tol.status, 1) << tol.text;
  EXPECT_NE(tol.text.find("option newton_tol: must be positive, got 0"), std::string::npos) << tol.text;
  const auto applies = run("simulate " + model + " -f ali3 --alpha 1e8 --newton-max 4 --t-end 0.1 -q -o " + temp("applies"));
  EXPECT_EQ(applies.status, 0) << applies.text;
}

TEST(Cli, ThreadsBeyondTheCoresWarn) {
  const auto out = run("simulate " + treedyn::test::model_path("four_bar") + " -f dca --threads 4096 --t-end 0.05 -q -o " +
                       temp("threads"));
  EXPECT_EQ(out.status, 0) << out.text;
  EXPECT_NE(out.text.find("warning: --threads 4096 is more than the"), std::string::npos) << out.text;
}

TEST(Cli, AMistypedCommandNamesTheClosestAndVersionAnswers) {
  const auto typo = run("simulat x.json");
  EXPECT_EQ(typo.status, 1);
  EXPECT_NE(typo.text.find("unknown command 'simulat'; did you mean 'simulate'?"), std::string::npos) << typo.text;
  const auto far = run("frobnicate");
  EXPECT_EQ(far.status, 1);
  EXPECT_EQ(far.text.find("did you mean"), std::string::npos) << far.text;
  const auto version = run("--version");
  EXPECT_EQ(version.status, 0);
  EXPECT_EQ(version.text.rfind("treedyn ", 0), 0u) << version.text;
}

TEST(Cli, ANumberBeyondDoubleNamesFileLineAndColumn) {
  const std::string path = edited_model("overflow", "four_bar", "\"mass\": 1,", "\"mass\": 1e999,");
  const auto out = run("simulate " + path + " -q -o " + temp("overflow"));
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.text.find(path + ": JSON line 14, column 27: the number 1e999 is beyond the range of a double"), std::string::npos)
      << out.text;
}

TEST(Cli, MassesTooFarApartAreRefusedNamingTheBodies) {
  const auto out = run("simulate " + edited_model("heavy", "four_bar", "\"mass\": 1,", "\"mass\": 1e300,") + " -q -o " + temp("heavy"));
  EXPECT_EQ(out.status, 1);
  EXPECT_NE(out.text.find("body 'A': mass 1e+300 kg is 1e+300 times that of body 'B'"), std::string::npos) << out.text;
}

TEST(Cli, ImpossibleStepCountsAndHugeModelsAreRefusedUpFront) {
  const auto dt = run("simulate " + treedyn::test::model_path("four_bar") + " -f dca --dt 1e-300 -q -o " + temp("tiny_dt"));
  EXPECT_EQ(dt.status, 1);
  EXPECT_NE(dt.text.find("output intervals; more than 1.000e+12 is refused"), std::string::npos) << dt.text;
  const auto bodies = run("generate chain --bodies 2000000000 -o " + temp("huge.json"));
  EXPECT_EQ(bodies.status, 1);
  EXPECT_NE(bodies.text.find("--bodies: Value 2000000000 not in range 1 to 1000000"), std::string::npos) << bodies.text;
}

// SIGINT and SIGTERM end a run cleanly: the CSVs end at a line boundary, summary.json says
// "interrupted" with the time reached, and the exit status is 128 + the signal.
TEST(Cli, SignalsEndARunWithItsResultsWhole) {
  for (const char* signal : {"INT", "TERM"}) {
    const std::string dir = temp(std::string("signal_") + signal);
    std::filesystem::remove_all(dir);
    // A run of minutes, signalled once its first rows are on disk.
    const Output out = run_signalled("simulate " + treedyn::test::model_path("chain128") +
                                         " -f dca --integrator rk4 --dt 1e-3 --t-end 1000 -q -o " + dir,
                                     dir + "/metrics.csv", signal, "0.3");
    const std::string& text = out.text;
    EXPECT_EQ(out.status, 128 + (std::string(signal) == "INT" ? 2 : 15)) << signal << ": " << text;
    EXPECT_NE(text.find(std::string("by SIG") + signal), std::string::npos) << text;
    const std::string summary = read_file(dir + "/summary.json");
    EXPECT_NE(summary.find("\"status\": \"interrupted\""), std::string::npos) << summary;
    const std::string trajectory = read_file(dir + "/trajectory.csv"), metrics = read_file(dir + "/metrics.csv");
    ASSERT_FALSE(trajectory.empty());
    EXPECT_EQ(trajectory.back(), '\n');
    EXPECT_EQ(metrics.back(), '\n');
    EXPECT_EQ(count_lines(trajectory), count_lines(metrics));
    // The summary counts the rows on disk (and a header); this long run is decimated to its size
    // budget, the last sample (where it stopped) written too.
    const auto at = summary.find("\"rows\": ", summary.find("\"output\""));
    ASSERT_NE(at, std::string::npos);
    EXPECT_EQ(std::stoul(summary.substr(at + 8)) + 1, count_lines(trajectory));
    EXPECT_EQ(count_lines(trajectory), count_lines(read_file(dir + "/joints.csv")));
  }
}

// timeout(1) signals its child and then the child's process group: two signals microseconds
// apart, which are one request to stop. A second signal used to end the process at once, so that in
// about one run in eight here (and two of three of hdca's float four-bar) the run died by SIGINT
// with no summary.json and no message (this test failed in one of three tries before the change).
// Each of six runs must now stop cleanly (signalled after 1 s: long after the run has started,
// also under the sanitizers).
TEST(Cli, TimeoutsDoubleSignalStopsTheRunCleanly) {
  const std::string dir = temp("signal_timeout");
  for (int k = 0; k < 6; ++k) {
    std::filesystem::remove_all(dir);
    const auto [status, text] = run_shell("timeout --preserve-status -s INT 1 " + std::string(TREEDYN_BINARY) +
                                          " simulate " + treedyn::test::model_path("chain128") +
                                          " -f dca --integrator rk4 --dt 1e-3 --t-end 1000 -q -o " + dir + " 2>&1");
    EXPECT_EQ(status, 130) << "run " << k << ": " << text;
    EXPECT_NE(text.find("by SIGINT"), std::string::npos) << "run " << k << ": " << text;
    EXPECT_NE(read_file(dir + "/summary.json").find("\"status\": \"interrupted\""), std::string::npos) << "run " << k;
  }
}

// Inside an output interval too: one interval of 10,000 s, which dopri5 crosses in hundreds of
// thousands of steps, is stopped by the signal within it (asked before each right-hand side), with
// the initial sample kept. Before, the run went on to the interval's end and said "ok".
TEST(Cli, ASignalStopsARunInsideALongOutputInterval) {
  const std::string dir = temp("signal_inside");
  std::filesystem::remove_all(dir);
  const Output out = run_signalled("simulate " + treedyn::test::model_path("chain128") +
                                       " -f dca --dt 10000 --t-end 10000 --no-estimate-error -q -o " + dir,
                                   dir + "/metrics.csv", "INT", "0.3");
  EXPECT_EQ(out.status, 130) << out.text;
  EXPECT_NE(out.text.find("inside the output interval to t = 10000 s"), std::string::npos) << out.text;
  const std::string summary = read_file(dir + "/summary.json");
  EXPECT_NE(summary.find("\"status\": \"interrupted\""), std::string::npos) << summary;
  EXPECT_NE(summary.find("\"t_reached\": 0.0"), std::string::npos) << summary;
  EXPECT_EQ(count_lines(read_file(dir + "/trajectory.csv")), 2u);  // the header and the initial sample
}

// A write that fails (here past a file-size limit, as a full disk would) ends the run "failed"
// with the file and the system's error named; both CSVs end with the last sample written whole.
TEST(Cli, AFailedWriteStopsTheRunNamingTheFileAndKeepsWholeRows) {
  const std::string dir = temp("full");
  std::filesystem::remove_all(dir);
  const std::string cmd = "sh -c 'ulimit -f 256; exec " + std::string(TREEDYN_BINARY) + " simulate " +
                          treedyn::test::model_path("chain128") + " -f dca --integrator rk4 --dt 1e-3 --t-end 1 -q -o " + dir + "' 2>&1";
  const auto [status, text] = run_shell(cmd);
  EXPECT_EQ(status, 2) << text;
  // The first file to pass 128 KiB is named, with the system's error.
  const bool named = text.find("cannot write " + dir + "/trajectory.csv: File too large") != std::string::npos ||
                     text.find("cannot write " + dir + "/joints.csv: File too large") != std::string::npos;
  EXPECT_TRUE(named) << text;
  const std::string trajectory = read_file(dir + "/trajectory.csv"), metrics = read_file(dir + "/metrics.csv");
  const std::string joints = read_file(dir + "/joints.csv");
  ASSERT_FALSE(trajectory.empty());
  EXPECT_EQ(trajectory.back(), '\n');
  EXPECT_EQ(joints.back(), '\n');
  EXPECT_GT(count_lines(trajectory), 1u);  // a header and whole rows
  EXPECT_EQ(count_lines(trajectory), count_lines(metrics));
  EXPECT_EQ(count_lines(trajectory), count_lines(joints));
  const std::string summary = read_file(dir + "/summary.json");
  EXPECT_NE(summary.find("\"status\": \"failed\""), std::string::npos) << summary;
}

// Without --sample-every, a run whose files would pass --max-output-mb writes every k-th sample
// and the last; the summary says so and its maxima still cover every sample.
TEST(Cli, BigRunsAreDecimatedToTheirSizeBudget) {
  const std::string all = temp("decimate_all"), few = temp("decimate_few");
  const std::string common = "simulate " + treedyn::test::model_path("chain128") + " -f dca --integrator rk4 --dt 1e-3 --t-end 0.2 -q ";
  ASSERT_EQ(run(common + "--max-output-mb 0 -o " + all).status, 0);
  ASSERT_EQ(run(common + "--max-output-mb 0.5 -o " + few).status, 0);
  const std::string every = read_file(all + "/trajectory.csv"), kept = read_file(few + "/trajectory.csv");
  EXPECT_EQ(count_lines(every), 202u);  // header, t = 0 and 200 steps
  EXPECT_LE(kept.size(), 600'000u);     // near the budget (one row over at most: the last)
  EXPECT_GT(count_lines(kept), 3u);
  // The last rows are the same sample, t = 0.2.
  auto last_line = [](const std::string& text) {
    const auto end = text.size() - 1;
    return text.substr(text.rfind('\n', end - 1) + 1);
  };
  EXPECT_EQ(last_line(every), last_line(kept));
  const std::string summary = read_file(few + "/summary.json");
  EXPECT_EQ(summary.find("\"write_every\": 1,"), std::string::npos) << summary;
  // The maxima are those of every sample, written or not.
  auto field = [](const std::string& json, const std::string& key) {
    const auto at = json.find("\"" + key + "\": ");
    return json.substr(at, json.find(',', at) - at);
  };
  EXPECT_EQ(field(summary, "energy_drift_max"), field(read_file(all + "/summary.json"), "energy_drift_max"));
}

// A decimated joints.csv holds rows of the full one: the angles stay continuous through the
// skipped samples (which move only the angles' references, not every joint's coordinates). The
// four-link's rotor turns four times in 8 s, and a row is written about every second (1,009
// samples), so its angle moves by more than pi between written rows: unwrapped against the last
// written row instead, it would fall back by 2 pi.
TEST(Cli, DecimatedJointAnglesAreThoseOfTheFullRun) {
  const std::string all = temp("angles_all"), few = temp("angles_few");
  const std::string common = "simulate " + treedyn::test::model_path("four_link") + " -f half-implicit --t-end 8 -q ";
  ASSERT_EQ(run(common + "--max-output-mb 0 -o " + all).status, 0);
  ASSERT_EQ(run(common + "--max-output-mb 0.02 -o " + few).status, 0);
  std::map<std::string, std::string> full;  // row by its time field
  std::istringstream every(read_file(all + "/joints.csv"));
  for (std::string line; std::getline(every, line);) full[line.substr(0, line.find(','))] = line;
  std::istringstream kept(read_file(few + "/joints.csv"));
  std::size_t rows = 0;
  double largest = 0.0;
  for (std::string line; std::getline(kept, line); ++rows) {
    const std::string t = line.substr(0, line.find(','));
    ASSERT_EQ(full.count(t), 1u) << t;
    EXPECT_EQ(line, full[t]);
    if (rows > 0) largest = std::max(largest, std::abs(std::stod(line.substr(line.find(',') + 1))));
  }
  EXPECT_GT(rows, 5u);
  EXPECT_LT(rows, 50u);  // decimated (8,002 lines in full)
  EXPECT_GT(largest, 6.0 * M_PI);  // the rotor's angle, continuous through three turns and more
}

// A new run in a folder removes what an earlier one wrote there (no stale summary or plots), and
// each formulation has its own default folder.
TEST(Cli, ANewRunLeavesNothingOfTheLastAndFormulationsHaveTheirOwnFolders) {
  const std::string dir = temp("stale");
  std::filesystem::remove_all(dir);
  ASSERT_EQ(run("simulate " + treedyn::test::model_path("four_bar") + " -f dca --t-end 0.05 -q --plot -o " + dir).status, 0);
  ASSERT_TRUE(std::filesystem::exists(dir + "/energy.svg"));
  std::ofstream(dir + "/notes.txt") << "mine";
  ASSERT_EQ(run("simulate " + treedyn::test::model_path("four_bar") + " -f dca --t-end 0.05 -q -o " + dir).status, 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/energy.svg"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/plots.gp"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/notes.txt"));  // not treedyn's: left alone
  const std::string cwd = temp("cwd");
  std::filesystem::create_directories(cwd);
  const auto out = run("simulate " + treedyn::test::model_path("four_bar") + " -f hdca --t-end 0.05 -o " + cwd + "/x >/dev/null; cd " +
                       cwd + " && " + TREEDYN_BINARY + " simulate " + treedyn::test::model_path("four_bar") + " -f hdca --t-end 0.05");
  EXPECT_EQ(out.status, 0) << out.text;
  EXPECT_TRUE(std::filesystem::exists(cwd + "/results/four_bar/hdca/summary.json")) << out.text;
}

// Not on a terminal (a log), progress is one line every 5 s on stderr, with the elapsed time;
// -q silences it. The run is stopped after 10 s (the first line comes 5 s after the set-up,
// which a sanitizer build slows).
TEST(Cli, ProgressReachesALogEveryFewSeconds) {
  const std::string args = "simulate " + treedyn::test::model_path("chain128") + " -f dca --integrator rk4 --dt 1e-3 --t-end 40 -o " +
                           temp("progress");
  const std::string cmd = std::string("timeout -s INT 10 ") + TREEDYN_BINARY + " " + args + " 2>&1 >/dev/null";
  const std::string text = run_shell(cmd).text;
  EXPECT_NE(text.find(" s elapsed"), std::string::npos) << text;
  EXPECT_NE(text.find("treedyn: t = "), std::string::npos) << text;
}

namespace {

/// A CSV file as its header cells and rows of numbers.
std::pair<std::vector<std::string>, std::vector<std::vector<double>>> read_csv(const std::string& path) {
  std::istringstream in(read_file(path));
  std::string line;
  std::getline(in, line);
  std::vector<std::string> header;
  std::istringstream cells(line);
  for (std::string c; std::getline(cells, c, ',');) header.push_back(c);
  std::vector<std::vector<double>> rows;
  while (std::getline(in, line)) {
    rows.emplace_back();
    std::istringstream values(line);
    for (std::string v; std::getline(values, v, ',');) rows.back().push_back(std::stod(v));
  }
  return {header, rows};
}

}  // namespace

// joints.csv holds each joint's own coordinate: the crank's angle is the rotation of body A about
// z (its joint to ground), read independently here from A's quaternion in trajectory.csv,
// continuous through turns; its rate is A's angular velocity about z. Tolerance 1e-9 rad: the
// files hold 12 significant digits.
TEST(Cli, JointsCsvIsTheJointCoordinatesOfTheBodyStates) {
  const std::string dir = temp("joints");
  ASSERT_EQ(run("simulate " + treedyn::test::model_path("four_bar") + " -f dca --integrator rk4 --dt 1e-3 --t-end 3 -q -o " + dir).status, 0);
  const auto [jh, joints] = read_csv(dir + "/joints.csv");
  const auto [th, trajectory] = read_csv(dir + "/trajectory.csv");
  ASSERT_EQ(jh[1], "q:joint1.angle [rad]");
  ASSERT_EQ(th[4], "A.qw [-]");
  ASSERT_EQ(th[7], "A.qz [-]");
  ASSERT_EQ(th[13], "A.wz [rad/s]");
  ASSERT_EQ(joints.size(), trajectory.size());
  const std::size_t rate = 1 + 4;  // qd:joint1.angle after the four angles
  ASSERT_EQ(jh[rate], "qd:joint1.angle [rad/s]");
  double previous = 0.0, turned = 0.0;
  for (std::size_t k = 0; k < joints.size(); ++k) {
    const double attitude = 2.0 * std::atan2(trajectory[k][7], trajectory[k][4]);  // A about z, from the world
    double angle = attitude - 2.0 * std::atan2(trajectory[0][7], trajectory[0][4]);
    angle = previous + std::remainder(angle - previous, 2.0 * M_PI);  // continuous, as joints.csv
    previous = angle;
    turned = std::max(turned, std::abs(angle));
    EXPECT_NEAR(joints[k][1] - joints[0][1], angle, 1e-9) << "t = " << joints[k][0];
    EXPECT_NEAR(joints[k][rate], trajectory[k][13], 1e-9) << "t = " << joints[k][0];  // A's angular velocity about z
  }
  EXPECT_GT(turned, 2.0);  // the crank swings through a good part of a turn
}

// compare stops cleanly on SIGINT too: the run in progress "interrupted" (its files whole), the
// rest "skipped", the tables written, exit 130.
TEST(Cli, CompareStopsCleanlyOnASignal) {
  const std::string dir = temp("compare_signal");
  std::filesystem::remove_all(dir);
  const Output out = run_signalled("compare " + treedyn::test::model_path("four_bar") + " --t-end 100000 -q -o " + dir,
                                   dir + "/reference/metrics.csv", "INT", "0.2");
  const std::string& text = out.text;
  EXPECT_EQ(out.status, 130) << text;
  EXPECT_NE(text.find("compare interrupted by SIGINT"), std::string::npos) << text;
  const std::string table = read_file(dir + "/compare.csv");
  EXPECT_NE(table.find("\nreference,interrupted,"), std::string::npos) << table;
  EXPECT_NE(table.find("\ndca,skipped,"), std::string::npos) << table;
  EXPECT_NE(read_file(dir + "/reference/summary.json").find("\"status\": \"interrupted\""), std::string::npos);
  EXPECT_EQ(read_file(dir + "/reference/trajectory.csv").back(), '\n');
}

// A real full disk: a 1 MiB tmpfs, when this test may mount one (root with CAP_SYS_ADMIN), else
// skipped with the reason. The run fails naming the file and "No space left on device", exit 2;
// the rows on disk are whole.
TEST(Cli, AFullDiskStopsTheRunNamingTheFile) {
  const std::string mount_point = temp("tmpfs");
  std::filesystem::create_directories(mount_point);
  if (std::system(("mount -t tmpfs -o size=1m tmpfs " + mount_point + " 2>/dev/null").c_str()) != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here (needs root with CAP_SYS_ADMIN); the file-size-limit test covers the same path";
  const std::string dir = mount_point + "/run";
  const auto out = run("simulate " + treedyn::test::model_path("chain128") + " -f dca --integrator rk4 --dt 1e-3 --t-end 1 -q -o " + dir);
  const std::string trajectory = read_file(dir + "/trajectory.csv"), metrics = read_file(dir + "/metrics.csv");
  const std::string summary = read_file(dir + "/summary.json");
  std::system(("umount " + mount_point).c_str());
  EXPECT_EQ(out.status, 2) << out.text;
  EXPECT_NE(out.text.find("No space left on device"), std::string::npos) << out.text;
  EXPECT_NE(out.text.find("cannot write " + dir + "/"), std::string::npos) << out.text;
  ASSERT_FALSE(trajectory.empty());
  EXPECT_EQ(trajectory.back(), '\n');
  EXPECT_EQ(count_lines(trajectory), count_lines(metrics));
  // The summary fits beside the cut-back CSVs, or its write failed whole (no partial file).
  if (!summary.empty()) {
    EXPECT_NE(summary.find("\"status\": \"failed\""), std::string::npos) << summary;
  }
}

// --format npy: NumPy files whose headers always count the rows on disk (after a failed write
// too), column names in columns.json, and `treedyn plot` draws them as it draws the CSVs.
TEST(Cli, NpyResultsPlotLikeCsvAndStayLoadableAfterAFailedWrite) {
  const std::string csv = temp("fmt_csv"), npy = temp("fmt_npy");
  const std::string common = "simulate " + treedyn::test::model_path("four_bar") + " -f dca --t-end 1 -q --plot -o ";
  ASSERT_EQ(run(common + csv).status, 0);
  ASSERT_EQ(run(common + npy + " --format npy").status, 0);
  for (const char* svg : {"energy.svg", "energy_drift.svg", "constraints.svg", "C.svg"})
    EXPECT_EQ(read_file(csv + "/" + svg), read_file(npy + "/" + svg)) << svg;  // the same curves, drawn alike
  EXPECT_NE(read_file(npy + "/columns.json").find("\"t [s]\""), std::string::npos);

  const std::string cut = temp("fmt_cut");
  std::filesystem::remove_all(cut);
  const std::string cmd = "sh -c 'ulimit -f 256; exec " + std::string(TREEDYN_BINARY) + " simulate " +
                          treedyn::test::model_path("chain128") + " -f dca --integrator rk4 --dt 1e-3 --t-end 1 -q --format npy -o " +
                          cut + "' 2>&1";
  const auto [status, text] = run_shell(cmd);
  EXPECT_EQ(status, 2) << text;
  for (const char* name : {"trajectory.npy", "metrics.npy", "joints.npy"}) {
    const std::string data = read_file(cut + "/" + name);
    ASSERT_GT(data.size(), 128u) << name;
    const std::string header = data.substr(0, 128);
    const auto shape = header.find("'shape': (");
    ASSERT_NE(shape, std::string::npos) << header;
    const long rows = std::stol(header.substr(shape + 10));
    const long columns = std::stol(header.substr(header.find(", ", shape) + 2));
    EXPECT_GT(rows, 0) << name;
    EXPECT_EQ(static_cast<long>(data.size()) - 128, rows * columns * 8) << name << ": " << header;
  }
}

// info on a large model lists the first 20 bodies, joints and closing joints and says how many
// more there are, and draws the assembly tree up to 64 bodies; --all lists and draws everything
// (a ladder of 4,000 loops printed its 4,000 closing joints on one line, and 8,001 bodies).
TEST(Cli, InfoSummarisesALargeModelAndListsEverythingWithAll) {
  const std::string ladder = temp("ladder40.json");  // 81 bars, 121 joints, 40 loops
  ASSERT_EQ(run("generate ladder -n 40 -o " + ladder).status, 0);
  const auto brief = run("info " + ladder);
  ASSERT_EQ(brief.status, 0) << brief.text;
  EXPECT_NE(brief.text.find("81 bodies:"), std::string::npos) << brief.text;
  EXPECT_NE(brief.text.find("  ... and 61 more bodies (--all lists every one)"), std::string::npos) << brief.text;
  EXPECT_NE(brief.text.find("  ... and 101 more joints (--all lists every one)"), std::string::npos) << brief.text;
  EXPECT_NE(brief.text.find(" ... and 20 more)"), std::string::npos) << brief.text;
  EXPECT_NE(brief.text.find("mobility 1, redundant constraints 120"), std::string::npos) << brief.text;
  EXPECT_NE(brief.text.find("(drawn up to 64 bodies; --all draws it)"), std::string::npos) << brief.text;
  const auto all = run("info " + ladder + " --all");
  ASSERT_EQ(all.status, 0) << all.text;
  EXPECT_EQ(all.text.find("more"), std::string::npos) << all.text;
  EXPECT_EQ(all.text.find("--all draws it"), std::string::npos) << all.text;
  EXPECT_GT(std::count(all.text.begin(), all.text.end(), '\n'), std::count(brief.text.begin(), brief.text.end(), '\n') + 81 + 100);
  // A small model is listed whole either way.
  const auto four_bar = run("info " + treedyn::test::model_path("four_bar"));
  EXPECT_EQ(four_bar.text.find("more"), std::string::npos) << four_bar.text;
}

// --set PATH=VALUE changes the model before it is read (simulate, compare, info), validated as
// the file is; the errors name the override.
TEST(Cli, SetChangesTheModelAndNamesWhatIsWrong) {
  const std::string model = treedyn::test::model_path("four_bar");
  const auto info = run("info " + model + " --set bodies.B.mass=3 --set gravity=[0,0,-9.81]");
  ASSERT_EQ(info.status, 0) << info.text;
  EXPECT_NE(info.text.find("gravity [0, 0, -9.81]"), std::string::npos) << info.text;
  EXPECT_NE(info.text.find("B                mass 3 "), std::string::npos) << info.text;
  // Gravity turned along the joints' axes (z), normal to the mechanism's plane z = 0: it has no
  // potential there, so the run starts with no energy at all (the file's gravity, along -y, gives
  // 28.6 J).
  const std::string dir = temp("set");
  ASSERT_EQ(run("simulate " + model + " --set gravity=[0,0,-9.81] -f dca --t-end 1 -q -o " + dir).status, 0);
  EXPECT_NE(read_file(dir + "/summary.json").find("\"energy_initial\": 0.0"), std::string::npos);
  const auto unknown = run("simulate " + model + " --set bodies.crank.mass=2 -q -o " + dir);
  EXPECT_EQ(unknown.status, 1);
  EXPECT_NE(unknown.text.find("override bodies.crank.mass: no body named 'crank' (bodies: A, B, C)"), std::string::npos) << unknown.text;
  const auto bad = run("compare " + model + " --set bodies.A.mass=-1 -q -o " + dir);
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.text.find("(with the overrides bodies.A.mass=-1)"), std::string::npos) << bad.text;
}

// Self-judgement (issue 24): runs that used to end "ok" far off now say warning, with the check
// that failed, exit status 3 and the checks in summary.json; a run that keeps its accuracy stays
// ok; a check switched off no longer judges. Measured before the change (issue 24): over 30 s of
// paper 000's four-bar, fully-implicit at its default step drains 28.8 J of the 28.6 J and said
// "ok". dca leaving the four-bar's assembly branch with its constraints kept (1.99 m off in 30 s)
// is caught by the branch watch (test_simulation's singular-position tests).
TEST(Cli, ARunThatLeftItsAccuracyEndsWarningWithTheCheckThatFailed) {
  const std::string model = treedyn::test::model_path("four_bar");
  const auto implicit = run("simulate " + model + " -f fully-implicit --t-end 30 -q -o " + temp("judge_fi"));
  EXPECT_EQ(implicit.status, 3) << implicit.text;
  EXPECT_NE(implicit.text.find("status warning"), std::string::npos) << implicit.text;
  EXPECT_NE(implicit.text.find("energy drift"), std::string::npos) << implicit.text;
  const auto summary = nlohmann::json::parse(std::ifstream(temp("judge_fi") + "/summary.json"));
  EXPECT_EQ(summary["status"], "warning");
  bool energy_failed = false;
  for (const auto& c : summary["judgement"]["checks"])
    if (c["name"] == "energy") energy_failed = !c["passed"].get<bool>() && c["value"] > c["threshold"];
  EXPECT_TRUE(energy_failed) << summary.dump(1);
  EXPECT_GT(summary["judgement"]["energy_range"].get<double>(), 20.0);  // the four-bar swings through ~28 J

  const auto reference = run("simulate " + model + " --t-end 5 -q -o " + temp("judge_ref"));
  EXPECT_EQ(reference.status, 0) << reference.text;
  const auto ok = nlohmann::json::parse(std::ifstream(temp("judge_ref") + "/summary.json"));
  EXPECT_EQ(ok["status"], "ok");
  // energy, position, velocity, quaternion; accuracy and branch: the aligned position at 0.98 s
  // started a refined companion, which agrees
  std::vector<std::string> names;
  for (const auto& c : ok["judgement"]["checks"]) {
    names.push_back(c["name"]);
    EXPECT_TRUE(c["passed"].get<bool>()) << c.dump();
  }
  EXPECT_EQ(names, (std::vector<std::string>{"energy", "position", "velocity", "quaternion", "accuracy", "branch"}));
  EXPECT_GT(ok["judgement"]["length"].get<double>(), 0.5);  // links of 1 m

  // Without the energy check, the refined companion (a fixed-step run gets one from the start)
  // still sees the drained run metres from a refined one; with no companion and no branch watch,
  // nothing judges it.
  const auto accuracy = run("simulate " + model + " -f fully-implicit --t-end 30 -q --check-energy 0 -o " + temp("judge_off"));
  EXPECT_EQ(accuracy.status, 3) << accuracy.text;
  EXPECT_NE(accuracy.text.find("--check-accuracy"), std::string::npos) << accuracy.text;
  const auto unchecked = run("simulate " + model + " -f fully-implicit --t-end 30 -q --check-energy 0 --no-estimate-error --check-branch 0 -o " +
                             temp("judge_off"));
  EXPECT_EQ(unchecked.status, 0) << unchecked.text;
}

// Issue 24: dca on paper 000's four-bar comes near its singular position 20 times, where a run
// can change assembly branch, and ends far from where a refined run ends, with every constraint
// kept: only an error estimate sees it. How far depends on the round-off with which each run
// passes those positions (1.79 m until session 33, 0.33 m since its kinematics carry rotation
// matrices down the tree), so the test asks for ten times the accuracy check's limit (1 % of
// the 1.73 m length), not for one distance. With --estimate-error the run says warning (exit 3)
// and summary.json carries the estimate; ali3, which keeps the branch, stays ok; compare marks
// each run converged or not.
TEST(Cli, EstimateErrorCatchesTheFourBarsBranchSwitchThatTheConstraintsCannotSee) {
  const std::string model = treedyn::test::model_path("four_bar");
  // dca unstabilised (paper 001's setting): it leaves the branch (its default Baumgarte rate keeps it).
  const auto dca = run("simulate " + model + " -f dca --baumgarte 0,0 --t-end 30 --estimate-error -o " + temp("estimate_dca"));
  EXPECT_EQ(dca.status, 3) << dca.text;
  EXPECT_NE(dca.text.find("error estimate (against a companion run with rtol 1.000e-08"), std::string::npos) << dca.text;
  const auto summary = nlohmann::json::parse(std::ifstream(temp("estimate_dca") + "/summary.json"));
  double limit = 0.0;
  for (const auto& c : summary["judgement"]["checks"])
    if (c["name"] == "accuracy") limit = c["threshold"].get<double>();
  EXPECT_NEAR(limit, 0.01 * std::sqrt(3.0), 1e-12);  // 1 % of the characteristic length
  EXPECT_GT(summary["error_estimate"]["position"].get<double>(), 10.0 * limit);
  EXPECT_LT(summary["constraint_error_max"]["position"].get<double>(), 1e-3);  // the loop itself is kept
  const auto ali3 = run("simulate " + model + " -f ali3 --t-end 5 --estimate-error -q -o " + temp("estimate_ali3"));
  EXPECT_EQ(ali3.status, 0) << ali3.text;
  const auto ok = nlohmann::json::parse(std::ifstream(temp("estimate_ali3") + "/summary.json"));
  EXPECT_EQ(ok["error_estimate"]["refinement"], "dt 5.000e-03 s (halved; order 2: the differences x 1.333)");
  EXPECT_LT(ok["error_estimate"]["position"].get<double>(), 1e-2);
  EXPECT_EQ(ok["error_estimate"]["t_compared"].get<double>(), 5.0);

  // compare's column: backward Euler drains the four-bar and passes its aligned positions 2 m off
  // (its half-step companion too: "no"); ali3 and dca are converged.
  const auto cmp = run("compare " + model + " --formulations ali3,dca,fully-implicit --t-end 30 --estimate-error -q -o " +
                       temp("estimate_cmp"));
  const std::string csv = read_file(temp("estimate_cmp") + "/compare.csv");
  EXPECT_NE(csv.find(",error_estimate_m,converged\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\nali3,ok,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("\ndca,ok,\"dopri5, rtol = atol = 1e-06, Baumgarte 3/T"), std::string::npos) << csv;
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4) << csv;
  EXPECT_EQ(csv.find(",no\n"), csv.rfind(",no\n")) << csv;  // one run not converged: fully-implicit
  EXPECT_NE(csv.find("\nfully-implicit,warning,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",no\n", csv.find("\nfully-implicit,")), std::string::npos) << csv;
}
