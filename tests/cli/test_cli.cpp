// The command line, end to end: it is what users run.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

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
