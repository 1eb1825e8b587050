// The command line, end to end: it is what users run.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"
#include "treedyn/model_json.hpp"

namespace {

struct Output {
  int status;
  std::string text;
};

Output run(const std::string& args) {
  const std::string cmd = std::string(TREEDYN_BINARY) + " " + args + " 2>&1";
  FILE* pipe = popen(cmd.c_str(), "r");
  std::string text;
  char buf[4096];
  while (std::fgets(buf, sizeof buf, pipe)) text += buf;
  const int status = pclose(pipe);
  return {WEXITSTATUS(status), text};
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
    if (column == name) return index;
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
