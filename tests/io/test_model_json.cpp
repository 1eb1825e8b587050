#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <thread>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/result_writer.hpp"

using namespace treedyn;

namespace {

std::string error_of(const std::string& text) {
  try {
    parse_model_json(text, "test.json");
  } catch (const ModelError& e) {
    return e.what();
  }
  return "";
}

const char* kPendulum = R"({
  // a comment
  "name": "p", "gravity": [0, -9.81, 0],
  "bodies": [{"name": "A", "mass": 1, "inertia": [1, 1, 1], "position": [0.5, 0, 0]}],
  "joints": [{"name": "j", "type": "revolute", "parent": "ground", "child": "A", "location": [0, 0, 0]}]
})";

/// Every model element at once, from the builder.
Model feature_model() {
  ModelBuilder b("features");
  b.description("all elements").gravity({0.1, -9.8, 0.2});
  Body a;
  a.name = "A";
  a.mass = 2.5;
  a.inertia << 1.0, 0.1, 0.0, 0.1, 2.0, 0.2, 0.0, 0.2, 1.5;
  a.position = {0.1, 0.2, 0.3};
  a.orientation = Quat(Eigen::AngleAxisd(0.3, Vec3(1, 1, 0).normalized()));
  a.velocity = {0.0, 0.0, 0.0};
  a.shape.type = Shape::Type::Cylinder;
  a.shape.radius = 0.1;
  a.shape.length = 1.0;
  a.shape.axis = 1;
  Body c = a;
  c.name = "C";
  c.position = {1.0, 0.0, 0.0};
  c.shape = Shape{Shape::Type::Box, Vec3(1, 0.1, 0.1), 0, 0, 2};
  b.body(a).body(c);
  b.joint(JointSpec::at("j1", JointType::Cylindrical, "ground", "A", {0, 0, 0}, Vec3(0, 0, 1)));
  b.joint({"j2", JointType::Universal, "A", "C", FramePlacement{Frame{Vec3(0.5, 0, 0), Mat3::Identity()}, Frame{Vec3(-0.4, 0, 0), Mat3::Identity()}}});
  b.spring_damper({"s", "ground", "C", {Vec3(0, 1, 0), true}, {Vec3(0.1, 0, 0), false}, 100.0, 2.0, 0.8});
  b.rotational_spring_damper({"rs", "j1", 0, 5.0, 0.1, 0.2});
  b.body_force({"f", "C", Vec3(1, 0, 0), TimeFunction::sine(2.0, 3.0, 0.1, 0.5), LoadFrame::Body, PointSpec{Vec3(0.1, 0, 0), false}});
  b.body_torque({"t", "A", Vec3(0, 0, 1), TimeFunction::polynomial({1, 2, 3}), LoadFrame::Global});
  b.joint_actuator({"m", "j2", 1, TimeFunction::constant(0.5)});
  b.joint_friction({"fr", "j1", 0.3});
  b.driver({"d", "j1", 1, TimeFunction::polynomial({0.0, 0.1})});
  b.defaults({.t_end = 2.0, .dt = 1e-3, .formulation = "reference", .integrator = "rk4"});
  return b.build();
}

}  // namespace

TEST(ModelJson, ReadsCommentsAndProducesTheBuilderModel) {
  const Model m = parse_model_json(kPendulum);
  EXPECT_EQ(m.bodies.size(), 1u);
  EXPECT_EQ(m.joints[0].type, JointType::Revolute);
  EXPECT_LT((m.joints[0].child_frame.origin - Vec3(-0.5, 0, 0)).norm(), 1e-15);
}

TEST(ModelJson, SyntaxErrorReportsLineAndColumn) {
  const std::string e = error_of("{\n  \"name\": \"x\",\n  \"bodies\": [,]\n}");
  EXPECT_NE(e.find("test.json"), std::string::npos) << e;
  EXPECT_NE(e.find("line 3"), std::string::npos) << e;
  EXPECT_NE(e.find("column"), std::string::npos) << e;
}

TEST(ModelJson, UnknownFieldsAndWrongTypesNameTheItem) {
  std::string text = kPendulum;
  text.replace(text.find("\"mass\": 1"), 9, "\"mas\": 1");
  std::string e = error_of(text);
  EXPECT_NE(e.find("body 'A': unknown field 'mas'"), std::string::npos) << e;
  text = kPendulum;
  text.replace(text.find("\"mass\": 1"), 9, "\"mass\": \"heavy\"");
  e = error_of(text);
  EXPECT_NE(e.find("body 'A': field 'mass' must be a number"), std::string::npos) << e;
  text = kPendulum;
  text.replace(text.find("revolute"), 8, "hinge");
  e = error_of(text);
  EXPECT_NE(e.find("joint 'j': unknown joint type 'hinge'"), std::string::npos) << e;
}

TEST(ModelJson, BuilderErrorsCarryTheFileName) {
  std::string text = kPendulum;
  text.replace(text.find("\"mass\": 1"), 9, "\"mass\": 0");
  const std::string e = error_of(text);
  EXPECT_NE(e.find("test.json: invalid model: body 'A': mass must be positive"), std::string::npos) << e;
}

TEST(ModelJson, WriteThenReadReproducesEveryFeatureExactly) {
  const Model m = feature_model();
  const Model back = parse_model_json(write_model_json(m));
  EXPECT_TRUE(back == m);
  EXPECT_EQ(write_model_json(back), write_model_json(m));
}

// Issue 28: the writer refills one body's and one joint's document for the next (set_body,
// set_joint). Bodies and joints whose optional members come and go in turn (orientation,
// velocities, shapes of each type, full and diagonal inertias, turned and plain frames) must each
// be written whole and alone: read back, the model is the same, nothing of one item in the next.
TEST(ModelJson, ItemsOfDifferentShapesAreEachWrittenWhole) {
  ModelBuilder b("mixed");
  auto body = [](const std::string& name) {
    Body x;
    x.name = name;
    x.mass = 1.0;
    x.inertia = Vec3(2, 2, 3).asDiagonal();
    return x;
  };
  Body a = body("A");
  a.inertia << 1.0, 0.1, 0.0, 0.1, 2.0, 0.2, 0.0, 0.2, 1.5;
  a.orientation = Quat(Eigen::AngleAxisd(0.3, Vec3(1, 1, 0).normalized()));
  a.velocity = {1, 2, 3};
  a.angular_velocity = {0, 0, 4};
  a.shape = Shape{Shape::Type::Cylinder, Vec3::Zero(), 0.1, 1.0, 1};
  Body c = body("C");
  c.shape = Shape{Shape::Type::Box, Vec3(1, 0.1, 0.1), 0, 0, 2};
  Body d = body("D");
  d.velocity = {0, 1, 0};
  d.shape = Shape{Shape::Type::Sphere, Vec3::Zero(), 0.2, 0, 2};
  Body e = body("E");
  e.inertia(0, 2) = e.inertia(2, 0) = 0.05;
  b.body(a).body(body("B")).body(c).body(d).body(e).body(body("F"));
  const Mat3 turned = Eigen::AngleAxisd(0.4, Vec3::UnitX()).toRotationMatrix();
  b.joint({"j1", JointType::Revolute, "ground", "A", FramePlacement{Frame{Vec3(0, 0, 1), turned}, Frame{Vec3(0, 0, -1), turned}}});
  b.joint({"j2", JointType::Spherical, "A", "B", FramePlacement{Frame{Vec3(1, 0, 0), Mat3::Identity()}, Frame{Vec3(-1, 0, 0), Mat3::Identity()}}});
  b.joint({"j3", JointType::Prismatic, "B", "C", FramePlacement{Frame{Vec3(0, 1, 0), Mat3::Identity()}, Frame{Vec3(0, 0, 0), turned}}});
  b.joint({"j4", JointType::Universal, "C", "D", FramePlacement{Frame{Vec3(0, 0, 1), turned}, Frame{Vec3(0, 0, 0), Mat3::Identity()}}});
  b.joint(JointSpec::at("j5", JointType::Revolute, "D", "E", {0, 0, 0}, Vec3(0, 0, 1)));
  b.joint(JointSpec::at("j6", JointType::Fixed, "E", "F", {0, 0, 0}, Vec3(0, 0, 1)));
  const Model m = b.build();
  const Model back = parse_model_json(write_model_json(m));
  EXPECT_TRUE(back == m);
  ASSERT_EQ(back.bodies.size(), 6u);
  EXPECT_EQ(back.bodies[1].velocity, Vec3::Zero());
  EXPECT_EQ(back.bodies[1].shape.type, Shape::Type::None);
  EXPECT_EQ(back.bodies[1].inertia, Mat3(Vec3(2, 2, 3).asDiagonal()));
  EXPECT_EQ(back.bodies[5].inertia, Mat3(Vec3(2, 2, 3).asDiagonal()));
  EXPECT_EQ(back.joints[1].parent_frame.rotation, Mat3::Identity());
  const nlohmann::json document = nlohmann::json::parse(write_model_json(m));
  EXPECT_FALSE(document["bodies"][1].contains("orientation"));  // the canonical form leaves defaults out
  EXPECT_FALSE(document["bodies"][3].contains("orientation"));
  EXPECT_EQ(document["bodies"][3]["shape"], nlohmann::json({{"type", "sphere"}, {"radius", 0.2}}));
  EXPECT_FALSE(document["joints"][1]["parent_frame"].contains("orientation"));
}

TEST(ModelJson, WriteThenReadReproducesEveryShippedModelExactly) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator(TREEDYN_MODELS_DIR)) {
    if (entry.path().extension() != ".json") continue;
    const Model m = read_model_file(entry.path().string());
    EXPECT_TRUE(parse_model_json(write_model_json(m)) == m) << entry.path();
    ++count;
  }
  EXPECT_GE(count, 11);
}

// The writer streams the document's bodies and joints one at a time (the whole document and its
// text built first were a run's peak memory). Its text must be exactly what nlohmann's own
// printer makes of the same document: indented up to 2,048 bodies, on one line above. The
// feature model carries every kind of item (forces, drivers, defaults, turned frames).
TEST(ModelJson, TheStreamedTextIsTheDocumentAsNlohmannPrintsIt) {
  Model no_joints = make_chain(1, JointType::Spherical);
  no_joints.joints.clear();  // "joints": []
  for (const Model& m : {feature_model(), make_chain(2048, JointType::Revolute), no_joints}) {
    const std::string text = write_model_json(m);
    EXPECT_EQ(text, nlohmann::json::parse(text).dump(2) + "\n") << m.name;
  }
  const std::string compact = write_model_json(make_chain(2049, JointType::Revolute));
  EXPECT_EQ(compact, nlohmann::json::parse(compact).dump() + "\n");
}

// Issue 28: large models are written on one line, their bodies and joints one at a time, and read
// while they are parsed; both paths must give exactly the model back, and a body that is not an
// object, or bodies that are not an array, must still be errors naming them.
TEST(ModelJson, ALargeModelIsWrittenCompactlyAndReadBackExactly) {
  Model chain = make_chain(3000, JointType::Spherical);
  chain.bodies[7].velocity = Vec3(0.1, 0.2, 0.3);  // fields the writer leaves out when they are defaults
  chain.bodies[8].orientation = Quat(Eigen::AngleAxisd(0.3, Vec3::UnitZ()));
  chain.bodies[9].inertia(0, 1) = chain.bodies[9].inertia(1, 0) = 0.01;
  const std::string text = write_model_json(chain);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1);
  EXPECT_EQ(parse_model_json(text), chain);
  EXPECT_EQ(parse_model_json(text, "big.json", {{"bodies.link5.mass", "2"}}).bodies[4].mass, 2.0);  // the document path
  EXPECT_EQ(parse_model_json(write_model_json(make_chain(4, JointType::Revolute))), make_chain(4, JointType::Revolute));
  auto error_of = [](const std::string& json) {
    try {
      parse_model_json(json, "m.json");
    } catch (const ModelError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of(R"({"bodies": [{"name": "a", "mass": 1, "inertia": [1, 1, 1]}, 3]})").find("bodies[1]"), std::string::npos);
  EXPECT_NE(error_of(R"({"bodies": {"a": {"name": "a"}}})").find("field 'bodies' must be an array"), std::string::npos);
  EXPECT_NE(error_of(R"({"bodies": [{"name": "a", "mass": -1, "inertia": [1, 1, 1]}]})").find("m.json: "), std::string::npos);
}

// Issue 28: a file's bodies and joints are parsed into one item document that each refills in
// place (StreamingDocument). Items of different shapes in turn (members added and dropped, a
// member's type changed, nested objects and arrays of other lengths, a key given twice) must read
// exactly as nlohmann's whole document reads them: the override path parses the text whole.
TEST(ModelJson, ItemsOfDifferentShapesReadAsTheWholeDocumentReadsThem) {
  const std::string text = R"({"name": "h", "gravity": [0, 0, -9.81],
    "bodies": [
      {"name": "a", "mass": 1, "inertia": [[1, 0.1, 0], [0.1, 2, 0], [0, 0, 3]], "position": [1, 2, 3],
       "orientation": {"quaternion": [0, 1, 0, 0]}, "velocity": [1, 0, 0], "angular_velocity": [0, 0, 2],
       "shape": {"type": "box", "size": [1, 2, 3]}},
      {"name": "b", "mass": 2, "inertia": [1, 1, 1]},
      {"name": "c", "mass": 3, "inertia": [1, 2, 2], "orientation": {"axis": [0, 0, 1], "angle_deg": 90},
       "shape": {"type": "cylinder", "radius": 0.1, "length": 2, "axis": "y"}},
      {"name": "d", "mass": 4, "mass": 5, "inertia": [2, 2, 2], "position": [0, 0, 1], "shape": {"type": "sphere", "radius": 0.2}}],
    "joints": [
      {"name": "j1", "type": "revolute", "parent": "ground", "child": "a",
       "parent_frame": {"position": [0, 0, 1], "orientation": {"matrix": [[0, -1, 0], [1, 0, 0], [0, 0, 1]]}},
       "child_frame": {"position": [0, 0, -1]}},
      {"name": "j2", "type": "universal", "parent": "a", "child": "b", "location": [1, 0, 0], "axis": [0, 1, 0], "axis2": [0, 0, 1]},
      {"name": "j3", "type": "spherical", "parent": "b", "child": "c", "location": [2, 0, 0]},
      {"name": "j4", "type": "prismatic", "parent": "c", "child": "d",
       "parent_frame": {"position": [1, 1, 1]}, "child_frame": {"orientation": {"quaternion": [1, 0, 0, 0]}}}]})";
  const Model streamed = parse_model_json(text, "h.json");
  const Model whole = parse_model_json(text, "h.json", {{"name", "h"}});  // the same model, by the document path
  EXPECT_TRUE(streamed == whole);
  EXPECT_EQ(write_model_json(streamed), write_model_json(whole));
  // and what the items say, checked by hand: nothing of one item is left in the next
  ASSERT_EQ(streamed.bodies.size(), 4u);
  const Body& b = streamed.bodies[1];
  EXPECT_EQ(b.inertia, Mat3(Vec3(1, 1, 1).asDiagonal()));
  EXPECT_EQ(b.velocity, Vec3::Zero());
  EXPECT_EQ(b.angular_velocity, Vec3::Zero());
  EXPECT_EQ(b.position, Vec3::Zero());
  EXPECT_EQ(b.shape.type, Shape::Type::None);
  EXPECT_EQ(streamed.bodies[2].shape.type, Shape::Type::Cylinder);
  EXPECT_EQ(streamed.bodies[2].shape.axis, 1);
  EXPECT_EQ(streamed.bodies[3].mass, 5.0);  // a key given twice: the last value, as nlohmann's document keeps it
  EXPECT_EQ(streamed.bodies[3].shape.type, Shape::Type::Sphere);
  EXPECT_EQ(streamed.joints[3].type, JointType::Prismatic);

  // an unknown field is the item's own, not one the previous item left behind
  std::string typo = text;
  typo.replace(typo.find(R"("position": [0, 0, 1], "shape")"), 10, R"("postion")");
  const std::string e = error_of(typo);
  EXPECT_NE(e.find("test.json: body 'd': unknown field 'postion'"), std::string::npos) << e;
  std::string missing = text;
  const std::string type = R"("type": "spherical", )";
  missing.erase(missing.find(type), type.size());  // j3 without its type
  const std::string m = error_of(missing);
  EXPECT_NE(m.find("joint 'j3': missing field 'type'"), std::string::npos) << m;
  std::string shorter = text;  // an array shorter than the same member of the item before
  shorter.replace(shorter.find(R"("mass": 2, "inertia": [1, 1, 1])"), 31,
                  R"("mass": 2, "inertia": [1, 1, 1], "orientation": {"quaternion": [1, 0, 0]})");
  const std::string q = error_of(shorter);
  EXPECT_NE(q.find("body 'b' orientation: 'quaternion' must have 4 numbers"), std::string::npos) << q;
}

// read_model_file maps the file; what cannot be read is an error naming the path, and what is
// read is the model its text gives.
TEST(ModelJson, FilesAreReadWholeAndTheirProblemsNameThePath) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("treedyn_read_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto error_of_file = [](const std::string& path) {
    try {
      read_model_file(path);
    } catch (const ModelError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string missing = (dir / "missing.json").string();
  EXPECT_NE(error_of_file(missing).find(missing + ": cannot open the model file"), std::string::npos) << error_of_file(missing);
  EXPECT_NE(error_of_file(dir.string()).find(dir.string() + ": cannot read the model file (Is a directory)"), std::string::npos)
      << error_of_file(dir.string());
  const std::string empty = (dir / "empty.json").string();
  { std::ofstream(empty).flush(); }
  EXPECT_NE(error_of_file(empty).find(empty + ": JSON"), std::string::npos) << error_of_file(empty);
  const std::string chain = (dir / "chain.json").string();
  const Model written = make_chain(3000, JointType::Spherical);
  { std::ofstream(chain) << write_model_json(written); }
  EXPECT_EQ(read_model_file(chain), written);
  const std::string pendulum = (dir / "pendulum.json").string();
  { std::ofstream(pendulum) << kPendulum; }
  EXPECT_EQ(read_model_file(pendulum), parse_model_json(kPendulum));
  // A pipe is read whole, as `treedyn simulate <(cat model.json)` hands one. The writer thread is
  // joined whatever the reader does (std::jthread), and a reader that stops early fails its writes
  // (EPIPE) rather than killing the test (SIGPIPE).
  const std::string fifo = (dir / "pipe.json").string();
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  std::signal(SIGPIPE, SIG_IGN);
  Model piped;
  {
    std::jthread writer([&] { std::ofstream(fifo) << write_model_json(written); });
    EXPECT_NO_THROW(piped = read_model_file(fifo));
  }
  EXPECT_EQ(piped, written);
  std::filesystem::remove_all(dir);
}

TEST(ModelJson, ACallbackFunctionCannotBeWritten) {
  ModelBuilder b("cb");
  Body a;
  a.name = "A";
  a.mass = 1;
  a.inertia = Mat3::Identity();
  b.body(a).joint(JointSpec::at("j", JointType::Free, "ground", "A", {0, 0, 0}));
  b.body_force({"push", "A", Vec3(1, 0, 0), TimeFunction::callback([](double) { return 1.0; }), LoadFrame::Global, std::nullopt});
  try {
    write_model_json(b.build());
    FAIL() << "expected ModelError";
  } catch (const ModelError& e) {
    EXPECT_NE(std::string(e.what()).find("body_force 'push'"), std::string::npos);
  }
}

// Model overrides (ModelOverride, the CLI's --set, Python's load_model(overrides=)): every kind
// of path, and the errors that name the override.
TEST(ModelOverrides, EveryKindOfPathReachesItsValue) {
  const std::string text = R"({
    "name": "o", "gravity": [0, -9.81, 0],
    "bodies": [{"name": "arm.1", "mass": 1, "inertia": [0.1, 0.1, 0.01], "position": [0.5, 0, 0],
                "orientation": {"axis": [0, 0, 1], "angle_deg": 0}}],
    "joints": [{"name": "pin", "type": "revolute", "parent": "ground", "child": "arm.1", "location": [0, 0, 0], "axis": [0, 0, 1]}],
    "forces": [{"type": "rotational_spring_damper", "name": "torsion", "joint": "pin", "stiffness": 5, "damping": 0.1},
               {"type": "joint_actuator", "name": "motor", "joint": "pin", "function": {"type": "sine", "amplitude": 0.5, "omega": 6.28}}],
    "simulation": {"t_end": 5, "dt": 0.01}
  })";
  const Model m = parse_model_json(text, "o.json",
                                   {{"gravity", "[0, 0, -9.81]"},
                                    {"name", "renamed"},  // not JSON: taken as a string
                                    {"simulation.t_end", "2"},
                                    {"bodies.arm.1.mass", "3"},  // a name with a dot
                                    {"bodies.arm.1.orientation.angle_deg", "90"},
                                    {"joints.pin.axis", "[0, 1, 0]"},
                                    {"forces.torsion.stiffness", "50"},
                                    {"forces.motor.function.amplitude", "2"}});
  EXPECT_EQ(m.gravity, Vec3(0, 0, -9.81));
  EXPECT_EQ(m.name, "renamed");
  EXPECT_EQ(*m.defaults.t_end, 2.0);
  EXPECT_EQ(m.bodies[0].mass, 3.0);
  EXPECT_NEAR((m.bodies[0].orientation.toRotationMatrix() * Vec3::UnitX() - Vec3::UnitY()).norm(), 0.0, 1e-12);
  EXPECT_NEAR((m.joints[0].parent_frame.rotation.col(2) - Vec3::UnitY()).norm(), 0.0, 1e-12);  // the joint axis is its frame's z
  EXPECT_EQ(m.rotational_springs[0].stiffness, 50.0);
  EXPECT_NEAR(m.actuators[0].function.value(0.25), 2.0 * std::sin(6.28 * 0.25), 1e-12);

  auto refusal = [&](const ModelOverride& o) {
    try {
      parse_model_json(text, "o.json", {o});
    } catch (const ModelError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(refusal({"bodies.crank.mass", "2"}).find("o.json: override bodies.crank.mass: no body named 'crank' (bodies: arm.1)"),
            std::string::npos);
  EXPECT_NE(refusal({"forces.spring.stiffness", "2"}).find("no force element named 'spring' (forces: torsion, motor)"), std::string::npos);
  EXPECT_NE(refusal({"bodies.arm.1.mass", "-2"}).find("mass must be positive and finite (got -2)"), std::string::npos);
  EXPECT_NE(refusal({"bodies.arm.1.mass", "-2"}).find("(with the overrides bodies.arm.1.mass=-2)"), std::string::npos);
  EXPECT_NE(refusal({"joints.pin.axle", "[0, 1, 0]"}).find("unknown field 'axle'"), std::string::npos);
  EXPECT_NE(refusal({"bodies.arm.1.shape.radius", "1"}).find("no field 'shape' to go into"), std::string::npos);
  EXPECT_NE(refusal({"bodies.arm.1.mass.x", "1"}).find("inside a value that is not an object"), std::string::npos);
  EXPECT_THROW(parse_override("bodies.arm.mass"), ModelError);
  EXPECT_EQ(parse_override("gravity=[0,0,-1]").value, "[0,0,-1]");
}

// Issue 28: a large model's text goes into its file as it is made (write_model_json(model, out):
// 30 MB at 65,536 bodies were held whole, and copied, at the peak of a run's memory). Written
// through write_file_atomically, the file is the string writer's text; a model that cannot be
// written (a callback, the writer throws) or a writer that fails part-way leaves the file that
// was there and no temporary beside it.
TEST(ModelJson, ALargeModelStreamsIntoItsFileWholeOrNotAtAll) {
  const Model chain = make_chain(3000, JointType::Spherical);
  const std::string path = (std::filesystem::temp_directory_path() / ("treedyn_streamed_model_" + std::to_string(::getpid()) + ".json")).string();
  auto file = [&] {
    std::ifstream in(path);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  write_file_atomically(path, [&](std::ostream& out) { write_model_json(chain, out); });
  const std::string text = write_model_json(chain);
  EXPECT_EQ(file(), text);
  EXPECT_EQ(parse_model_json(file()), chain);

  Model with_callback = chain;
  with_callback.body_forces.push_back({"push", 5, Vec3(1, 0, 0), TimeFunction::callback([](double) { return 1.0; })});
  EXPECT_THROW(write_file_atomically(path, [&](std::ostream& out) { write_model_json(with_callback, out); }), ModelError);
  EXPECT_EQ(file(), text);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  EXPECT_THROW(write_file_atomically(path,
                                     [](std::ostream& out) {
                                       out << "{\"name\": ";
                                       throw std::runtime_error("stopped part-way");
                                     }),
               std::runtime_error);
  EXPECT_EQ(file(), text);
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  std::filesystem::remove(path);
}
