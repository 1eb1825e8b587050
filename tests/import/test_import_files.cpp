// URDF and SDFormat import: each test file against the same system written by hand as treedyn
// JSON (tests/import/data, models/four_bar.json), compared by trajectory; import-then-write gives
// the same model as reading the file; bad files are errors naming the element.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "support.hpp"
#include "treedyn/model_import.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/simulator.hpp"

namespace treedyn {
namespace {

std::string data(const std::string& name) { return std::string(TREEDYN_IMPORT_DATA) + "/" + name; }

/// Body centres of mass after `t` s of the reference formulation at a tight tolerance, with an
/// optional constant wrench on one body (for systems that at rest only fall).
std::map<std::string, Vec3> positions_after(const Model& model, double t, const std::string& pushed = "") {
  FormulationSettings settings;
  settings.rtol = 1e-11;
  settings.atol = 1e-12;
  Simulator sim(share(model), "reference", settings);
  if (!pushed.empty()) sim.set_body_wrench(pushed, {3.0, -2.0, 40.0}, {0.5, 1.5, -0.7});
  sim.advance_to(t);
  std::map<std::string, Vec3> out;
  for (int b = 0; b < model.body_count(); ++b)
    out[model.bodies[static_cast<std::size_t>(b)].name] = sim.body_states()[static_cast<std::size_t>(b)].r;
  return out;
}

/// Same bodies, same trajectories: both runs integrate the same equations at rtol 1e-11; models
/// that differ only in how their frames were written differ by round-off, so 1e-8 m.
void expect_same_motion(const Model& imported, const Model& written, double t, const std::string& pushed = "") {
  const auto a = positions_after(imported, t, pushed), b = positions_after(written, t, pushed);
  ASSERT_EQ(a.size(), b.size());
  double moved = 0.0;
  for (const auto& [name, r] : b) {
    ASSERT_TRUE(a.count(name)) << name;
    EXPECT_LT((a.at(name) - r).norm(), 1e-8) << name << " at " << a.at(name).transpose() << " vs " << r.transpose();
    const Body& body = written.bodies[static_cast<std::size_t>(written.body_index(name))];
    moved = std::max(moved, (r - body.position).norm());
  }
  EXPECT_GT(moved, 0.05);  // the systems really moved
}

TEST(ImportUrdf, SerialArmWithTiltedInertiaAndMassLessBaseMovesAsItsHandWrittenJson) {
  const ImportedModel imported = import_urdf_file(data("serial_arm.urdf"));
  EXPECT_EQ(imported.model.body_count(), 3);  // base_link and the massless root merged into the world
  ASSERT_EQ(imported.warnings.size(), 1u);
  EXPECT_NE(imported.warnings[0].find("limits of 3 joints (shoulder, elbow, slide), damping or friction of 1 joints (elbow)"),
            std::string::npos)
      << imported.warnings[0];
  EXPECT_EQ(imported.model.gravity, Vec3(0, 0, -9.81));  // ROS's convention: URDF has no gravity
  expect_same_motion(imported.model, read_model_file(data("serial_arm.json")), 1.0);
}

TEST(ImportUrdf, FloatingBaseMovesAsItsHandWrittenJson) {
  const ImportedModel imported = import_urdf_file(data("floating.urdf"));
  EXPECT_EQ(imported.model.joints[0].type, JointType::Free);
  expect_same_motion(imported.model, read_model_file(data("floating.json")), 1.0, "torso");
}

TEST(ImportUrdf, ConstraintElementClosesTheFourBarWhichMovesAsModelsFourBar) {
  const std::vector<ModelOverride> gravity{{"gravity", "[0, -9.81, 0]"}};
  const Model imported = read_model_file(data("four_bar.urdf"), gravity);
  EXPECT_EQ(imported.joint_count(), 4);
  EXPECT_EQ(imported.joints[3].name, "joint4");
  EXPECT_EQ(imported.bodies[0].shape.type, Shape::Type::Box);  // the visual box, centred on the centre of mass
  // 0.9 s: the reference formulation's bdf fails where the parallelogram aligns (t = 1.01 s), a
  // known limitation of that formulation (issue 24), not of the import.
  expect_same_motion(imported, read_model_file(test::model_path("four_bar")), 0.9);
}

#ifdef TREEDYN_TEST_SDF_MODULE
/// Whether libsdformat is mapped into this process.
bool libsdformat_loaded() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line))
    if (line.find("libsdformat") != std::string::npos) return true;
  return false;
}

/// Before any test ran: the program as loaded, with libtreedyn.
const bool libsdformat_at_start = libsdformat_loaded();

// A shared libtreedyn loads libsdformat (whose start compiles some twenty std::regex, 0.05 s of
// every program's start) only when an SDFormat file is read, from its module beside libtreedyn.
// When an earlier test of this process has read an SDFormat file (the binary run whole; ctest
// runs each test alone), the check runs in a fresh process of this program instead.
TEST(ImportSdf, LibsdformatLoadsOnlyWhenAnSdfFileIsRead) {
  EXPECT_FALSE(libsdformat_at_start) << "libsdformat was loaded with the program, before any file was read";
  if (libsdformat_loaded() && !libsdformat_at_start && std::getenv("TREEDYN_TEST_FRESH_PROCESS") == nullptr) {
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const int status = std::system(("TREEDYN_TEST_FRESH_PROCESS=1 '" + self +
                                    "' --gtest_filter=ImportSdf.LibsdformatLoadsOnlyWhenAnSdfFileIsRead").c_str());
    EXPECT_EQ(status, 0) << "the check in a fresh process of " << self << " failed (its output is above)";
    return;
  }
  EXPECT_EQ(import_model_file(data("serial_arm.urdf")).model.body_count(), 3);
  EXPECT_EQ(import_model_file(data("four_bar.xml")).model.body_count(), 3);
  EXPECT_FALSE(libsdformat_loaded()) << "reading URDF and MJCF loaded libsdformat";
  EXPECT_EQ(import_model_file(data("four_bar.sdf")).model.joint_count(), 4);
  EXPECT_TRUE(libsdformat_loaded());
}
#endif

TEST(ImportSdf, FourBarWithAJointGraphLoopMovesAsModelsFourBar) {
  const ImportedModel imported = import_sdf_file(data("four_bar.sdf"));
  EXPECT_EQ(imported.model.gravity, Vec3(0, -9.81, 0));  // the world's
  EXPECT_EQ(imported.model.joint_count(), 4);
  expect_same_motion(imported.model, read_model_file(test::model_path("four_bar")), 0.9);
}

TEST(ImportSdf, SerialArmAndFloatingBaseMoveAsTheirHandWrittenJson) {
  const ImportedModel arm = import_sdf_file(data("serial_arm.sdf"));
  EXPECT_EQ(arm.model.body_count(), 3);
  expect_same_motion(arm.model, read_model_file(data("serial_arm.json")), 1.0);
  const ImportedModel floating = import_sdf_file(data("floating.sdf"));
  ASSERT_EQ(floating.model.joint_count(), 2);
  EXPECT_EQ(floating.model.joints[1].type, JointType::Free);  // the torso: no joint's child
  EXPECT_EQ(floating.model.joints[1].name, "torso_free");
  expect_same_motion(floating.model, read_model_file(data("floating.json")), 1.0, "torso");
}

TEST(Import, WrittenJsonReadsBackAsTheSameModelAndTheCliImportThenSimulateEqualsSimulatingTheFile) {
  for (const std::string file : {"serial_arm.urdf", "four_bar.sdf", "four_bar.xml"}) {
    const Model m = read_model_file(data(file));
    EXPECT_EQ(parse_model_json(write_model_json(m)), m) << file;
  }
  const std::string dir = (std::filesystem::temp_directory_path() / "treedyn_import_cli").string();
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string bin = TREEDYN_BINARY;
  const std::string urdf = data("serial_arm.urdf");
  ASSERT_EQ(std::system((bin + " import " + urdf + " -o " + dir + "/arm.json > " + dir + "/import.txt 2>&1").c_str()), 0);
  for (const auto& [from, out] : std::vector<std::pair<std::string, std::string>>{{urdf, "/a"}, {dir + "/arm.json", "/b"}})
    ASSERT_EQ(std::system((bin + " simulate " + from + " -f dca --t-end 1 -q -o " + dir + out + " 2>/dev/null").c_str()), 0);
  auto text = [](const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  };
  EXPECT_EQ(text(dir + "/a/trajectory.csv"), text(dir + "/b/trajectory.csv"));
  EXPECT_FALSE(text(dir + "/a/trajectory.csv").empty());
  EXPECT_NE(text(dir + "/import.txt").find("3 bodies, 3 joints, 0 loops, mobility 3"), std::string::npos) << text(dir + "/import.txt");
  // The run's summary lists what the import left out.
  EXPECT_NE(text(dir + "/a/summary.json").find("limits of 3 joints"), std::string::npos);
}

/// Writes `text` to a file named `name` in a temporary directory and imports it, expecting a
/// ModelError that contains every one of `wanted`.
void expect_import_error(const std::string& name, const std::string& text, const std::vector<std::string>& wanted) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  try {
    import_model_file(path);
    ADD_FAILURE() << "no error for " << name;
  } catch (const ModelError& e) {
    for (const auto& w : wanted) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

const char* kLink = "<inertial><mass value=\"1\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial>";

TEST(ImportUrdf, BadFilesAreErrorsNamingTheElement) {
  const std::string l = kLink;
  expect_import_error("treedyn_bad1.urdf", "<robot name=\"r\">\n<link name=\"a\">\n</robot>", {"treedyn_bad1.urdf:3:", "malformed XML"});
  expect_import_error("treedyn_bad2.urdf",
                      "<robot name=\"r\"><link name=\"a\">" + l + "</link><link name=\"b\"/>"
                      "<joint name=\"j\" type=\"revolute\"><parent link=\"a\"/><child link=\"b\"/><axis xyz=\"0 0 1\"/>"
                      "<limit lower=\"0\" upper=\"1\" effort=\"1\" velocity=\"1\"/></joint></robot>",
                      {"link 'b' has no mass", "moves (joint 'j', revolute)"});
  expect_import_error("treedyn_bad3.urdf",
                      "<robot name=\"r\"><link name=\"a\"><inertial><mass value=\"-2\"/><inertia ixx=\"1\" iyy=\"1\" izz=\"1\" "
                      "ixy=\"0\" ixz=\"0\" iyz=\"0\"/></inertial></link></robot>",
                      {"treedyn_bad3.urdf", "mass"});
  expect_import_error("treedyn_bad4.urdf",
                      "<robot name=\"r\"><link name=\"a\">" + l + "</link><link name=\"b\">" + l +
                          "</link><joint name=\"j\" type=\"screwy\"><parent link=\"a\"/><child link=\"b\"/></joint></robot>",
                      {"treedyn_bad4.urdf", "screwy"});
  expect_import_error("treedyn_bad5.urdf",
                      "<robot name=\"r\"><link name=\"a\">" + l + "</link>\n<constraint name=\"loop\" type=\"revolute\">"
                      "<parent link=\"a\"/><child link=\"nowhere\"/></constraint></robot>",
                      {"constraint 'loop' (line 2)", "unknown link 'nowhere'"});
}

TEST(ImportUrdf, MissingMeshIsAWarningAndTheLinkIsDrawnAsItsInertiaBox) {
  const std::string path = (std::filesystem::temp_directory_path() / "treedyn_mesh.urdf").string();
  std::ofstream(path) << "<robot name=\"r\"><link name=\"a\">" << kLink
                      << "<visual><geometry><mesh filename=\"meshes/none.stl\"/></geometry></visual></link></robot>";
  const ImportedModel m = import_urdf_file(path);
  ASSERT_EQ(m.warnings.size(), 1u);
  EXPECT_NE(m.warnings[0].find("mesh files not found (those links are drawn as their inertia boxes): meshes/none.stl"),
            std::string::npos)
      << m.warnings[0];
  EXPECT_EQ(m.model.bodies[0].shape.type, Shape::Type::Box);
}

TEST(ImportSdf, BadFilesAreErrorsNamingTheElement) {
  expect_import_error("treedyn_bad1.sdf", "<sdf version=\"1.8\"><model name=\"m\">\n<link name=\"a\">\n</model></sdf>",
                      {"treedyn_bad1.sdf", "libsdformat could not read"});
  expect_import_error("treedyn_bad2.sdf",
                      "<sdf version=\"1.8\"><model name=\"m\"><link name=\"a\"/><link name=\"b\"/>"
                      "<joint name=\"s\" type=\"screw\"><parent>a</parent><child>b</child><axis><xyz>0 0 1</xyz></axis></joint>"
                      "</model></sdf>",
                      {"joint 's': screw joints cannot be represented"});
}

TEST(Import, FormatsAreKnownByExtensionAndEveryOneIsBuiltIn) {
  EXPECT_EQ(model_format_of("a/robot.URDF"), ModelFormat::Urdf);
  EXPECT_EQ(model_format_of("humanoid.xml"), ModelFormat::Mjcf);
  EXPECT_EQ(model_format_of("w.sdf"), ModelFormat::Sdf);
  EXPECT_EQ(model_format_of("m.json"), ModelFormat::Json);
  for (ModelFormat f : {ModelFormat::Urdf, ModelFormat::Mjcf, ModelFormat::Sdf}) EXPECT_TRUE(format_supported(f)) << to_string(f);
}

}  // namespace
}  // namespace treedyn
