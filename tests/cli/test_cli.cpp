// The command line, end to end: it is what users run.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

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
