#include <algorithm>
#include <map>
#include "treedyn/model_json.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <memory>
#include <sstream>
#include <string_view>

#include "treedyn/model_builder.hpp"
#include "treedyn/model_import.hpp"

namespace treedyn {
namespace {

using json = nlohmann::json;

/// A JSON object read with checks: unknown keys and wrong types are errors naming the item.
/// Reads without allocating (a model file holds one such object per body and per joint: building
/// the allowed keys as a std::set and each vec3 as a std::vector cost about a tenth of loading
/// 65,536 bodies).
class Obj {
 public:
  Obj(const json& j, std::string who, std::initializer_list<std::string_view> allowed) : j_(j), who_(std::move(who)) {
    if (!j.is_object()) fail("must be a JSON object");
    for (auto it = j.begin(); it != j.end(); ++it)
      if (std::find(allowed.begin(), allowed.end(), std::string_view(it.key())) == allowed.end())
        fail("unknown field '" + it.key() + "'");
  }
  [[noreturn]] void fail(const std::string& what) const { throw ModelError(who_ + ": " + what); }
  const std::string& who() const { return who_; }
  bool has(std::string_view key) const { return find(key) != nullptr; }
  const json& at(std::string_view key) const {
    const json* v = find(key);
    if (!v) fail("missing field '" + std::string(key) + "'");
    return *v;
  }
  double number(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_number()) fail("field '" + std::string(key) + "' must be a number");
    return v.get<double>();
  }
  double number_or(std::string_view key, double fallback) const { return has(key) ? number(key) : fallback; }
  int integer_or(std::string_view key, int fallback) const {
    const json* v = find(key);
    if (!v) return fallback;
    if (!v->is_number_integer()) fail("field '" + std::string(key) + "' must be an integer");
    return v->get<int>();
  }
  std::string string(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_string()) fail("field '" + std::string(key) + "' must be a string");
    return v.get<std::string>();
  }
  std::string string_or(std::string_view key, const std::string& fallback) const {
    return has(key) ? string(key) : fallback;
  }
  std::vector<double> numbers(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_array()) fail("field '" + std::string(key) + "' must be an array of numbers");
    std::vector<double> out;
    out.reserve(v.size());
    for (const auto& x : v) out.push_back(number_in(x, key));
    return out;
  }
  Vec3 vec3(std::string_view key) const {
    const json& v = at(key);
    if (!v.is_array()) fail("field '" + std::string(key) + "' must be an array of numbers");
    if (v.size() != 3) {
      for (const auto& x : v) number_in(x, key);  // the type error first, as for any array
      fail("field '" + std::string(key) + "' must have 3 numbers");
    }
    return {number_in(v[0], key), number_in(v[1], key), number_in(v[2], key)};
  }
  Vec3 vec3_or(std::string_view key, const Vec3& fallback) const { return has(key) ? vec3(key) : fallback; }

 private:
  const json* find(std::string_view key) const {
    const auto it = j_.find(key);
    return it == j_.end() ? nullptr : &*it;
  }
  double number_in(const json& x, std::string_view key) const {
    if (!x.is_number()) fail("field '" + std::string(key) + "' must be an array of numbers");
    return x.get<double>();
  }

  const json& j_;
  std::string who_;
};

Mat3 read_matrix3(const json& rows, const Obj& owner, const std::string& key) {
  if (!rows.is_array() || rows.size() != 3) owner.fail("field '" + key + "' must be a 3x3 array");
  Mat3 m;
  for (int r = 0; r < 3; ++r) {
    const json& row = rows[static_cast<std::size_t>(r)];
    if (!row.is_array() || row.size() != 3) owner.fail("field '" + key + "' must be a 3x3 array");
    for (int c = 0; c < 3; ++c) {
      if (!row[static_cast<std::size_t>(c)].is_number()) owner.fail("field '" + key + "' must hold numbers");
      m(r, c) = row[static_cast<std::size_t>(c)].get<double>();
    }
  }
  return m;
}

/// {"quaternion": [w,x,y,z]} | {"axis": [..], "angle": rad} | {"axis": [..], "angle_deg": deg}
/// | {"matrix": [[..],[..],[..]]}
Mat3 read_rotation(const json& j, const std::string& who) {
  Obj o(j, who + " orientation", {"quaternion", "axis", "angle", "angle_deg", "matrix"});
  if (o.has("matrix")) return read_matrix3(o.at("matrix"), o, "matrix");
  if (o.has("quaternion")) {
    auto q = o.numbers("quaternion");
    if (q.size() != 4) o.fail("'quaternion' must have 4 numbers [w, x, y, z]");
    const Quat quat(q[0], q[1], q[2], q[3]);
    if (std::abs(quat.norm() - 1.0) > 1e-6) o.fail("quaternion must have unit norm (norm " + std::to_string(quat.norm()) + ")");
    return quat.normalized().toRotationMatrix();
  }
  const Vec3 axis = o.vec3("axis");
  if (axis.norm() < 1e-12) o.fail("rotation axis is zero");
  const double angle = o.has("angle") ? o.number("angle") : o.number("angle_deg") * M_PI / 180.0;
  return Eigen::AngleAxisd(angle, axis.normalized()).toRotationMatrix();
}

Quat read_quaternion(const json& j, const std::string& who) {
  Obj o(j, who + " orientation", {"quaternion", "axis", "angle", "angle_deg", "matrix"});
  if (o.has("quaternion")) {  // keep the given numbers exactly (round trip)
    auto q = o.numbers("quaternion");
    if (q.size() != 4) o.fail("'quaternion' must have 4 numbers [w, x, y, z]");
    const Quat quat(q[0], q[1], q[2], q[3]);
    if (std::abs(quat.norm() - 1.0) > 1e-6) o.fail("quaternion must have unit norm (norm " + std::to_string(quat.norm()) + ")");
    return quat;
  }
  return Quat(read_rotation(j, who));
}

TimeFunction read_function(const json& j, const std::string& who) {
  if (j.is_number()) return TimeFunction::constant(j.get<double>());
  Obj o(j, who + " function", {"type", "value", "coefficients", "amplitude", "omega", "phase", "offset"});
  const std::string type = o.string("type");
  if (type == "constant") return TimeFunction::constant(o.number("value"));
  if (type == "polynomial") return TimeFunction::polynomial(o.numbers("coefficients"));
  if (type == "sine")
    return TimeFunction::sine(o.number("amplitude"), o.number("omega"), o.number_or("phase", 0.0), o.number_or("offset", 0.0));
  o.fail("unknown function type '" + type + "' (constant, polynomial, sine)");
}

Shape read_shape(const json& j, const std::string& who) {
  Obj s(j, who, {"type", "size", "radius", "length", "axis"});
  Shape shape;
  const std::string type = s.string("type");
  if (type == "box") {
    shape.type = Shape::Type::Box;
    shape.size = s.vec3("size");
  } else if (type == "cylinder") {
    shape.type = Shape::Type::Cylinder;
    shape.radius = s.number("radius");
    shape.length = s.number("length");
    const std::string axis = s.string_or("axis", "z");
    if (axis != "x" && axis != "y" && axis != "z") s.fail("cylinder axis must be \"x\", \"y\" or \"z\"");
    shape.axis = axis[0] - 'x';
  } else if (type == "sphere") {
    shape.type = Shape::Type::Sphere;
    shape.radius = s.number("radius");
  } else {
    s.fail("unknown shape type '" + type + "' (box, cylinder, sphere)");
  }
  return shape;
}

Body read_body(const json& j, std::size_t index) {
  const std::string fallback = "bodies[" + std::to_string(index) + "]";
  const std::string who = j.is_object() && j.contains("name") && j["name"].is_string()
                              ? "body '" + j["name"].get<std::string>() + "'"
                              : fallback;
  Obj o(j, who, {"name", "mass", "inertia", "position", "orientation", "velocity", "angular_velocity", "shape"});
  Body b;
  b.name = o.string("name");
  b.mass = o.number("mass");
  const json& inertia = o.at("inertia");
  if (inertia.is_array() && inertia.size() == 3 && inertia[0].is_number()) {
    b.inertia = o.vec3("inertia").asDiagonal();
  } else {
    b.inertia = read_matrix3(inertia, o, "inertia");
  }
  b.position = o.vec3_or("position", Vec3::Zero());
  if (o.has("orientation")) b.orientation = read_quaternion(o.at("orientation"), who);
  b.velocity = o.vec3_or("velocity", Vec3::Zero());
  b.angular_velocity = o.vec3_or("angular_velocity", Vec3::Zero());
  if (o.has("shape")) b.shape = read_shape(o.at("shape"), who + " shape");
  return b;
}

Frame read_frame(const json& j, const std::string& who) {
  Obj o(j, who, {"position", "orientation"});
  Frame f;
  f.origin = o.vec3_or("position", Vec3::Zero());
  if (o.has("orientation")) f.rotation = read_rotation(o.at("orientation"), who);
  return f;
}

JointSpec read_joint(const json& j, std::size_t index) {
  const std::string who = j.is_object() && j.contains("name") && j["name"].is_string()
                              ? "joint '" + j["name"].get<std::string>() + "'"
                              : "joints[" + std::to_string(index) + "]";
  Obj o(j, who, {"name", "type", "parent", "child", "location", "axis", "axis2", "parent_frame", "child_frame"});
  JointSpec s;
  s.name = o.string("name");
  const std::string type = o.string("type");
  auto t = joint_type_from_string(type);
  if (!t) o.fail("unknown joint type '" + type + "' (revolute, prismatic, cylindrical, universal, spherical, planar, fixed, free)");
  s.type = *t;
  s.parent = o.string("parent");
  s.child = o.string("child");
  const bool frames = o.has("parent_frame") || o.has("child_frame");
  if (frames) {
    if (o.has("location") || o.has("axis") || o.has("axis2"))
      o.fail("give either 'location'/'axis' or 'parent_frame'/'child_frame', not both");
    s.placement = FramePlacement{read_frame(o.at("parent_frame"), who + " parent_frame"),
                                 read_frame(o.at("child_frame"), who + " child_frame")};
  } else {
    GlobalPlacement g;
    g.location = o.vec3("location");
    g.axis = o.vec3_or("axis", Vec3::UnitZ());
    if (o.has("axis2")) g.axis2 = o.vec3("axis2");
    s.placement = g;
  }
  return s;
}

PointSpec read_point(const Obj& o, const std::string& key) {
  if (o.has("local_" + key)) {
    if (o.has(key)) o.fail("give either '" + key + "' (global) or 'local_" + key + "', not both");
    return {o.vec3("local_" + key), false};
  }
  return {o.vec3(key), true};
}

LoadFrame read_load_frame(const Obj& o) { return load_frame_named(o.string_or("frame", "global"), o.who()); }

void read_force(ModelBuilder& b, const json& j, std::size_t index) {
  const std::string name = j.is_object() && j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : "";
  const std::string type = j.is_object() && j.contains("type") && j["type"].is_string() ? j["type"].get<std::string>() : "";
  const std::string who = (type.empty() ? "forces[" + std::to_string(index) + "]" : type) + (name.empty() ? "" : " '" + name + "'");
  if (type == "spring_damper") {
    Obj o(j, who, {"type", "name", "body_a", "point_a", "local_point_a", "body_b", "point_b", "local_point_b",
                   "stiffness", "damping", "free_length"});
    SpringDamperSpec s{o.string("name"), o.string("body_a"), o.string("body_b"), read_point(o, "point_a"),
                       read_point(o, "point_b"), o.number_or("stiffness", 0.0), o.number_or("damping", 0.0), std::nullopt};
    if (o.has("free_length")) s.free_length = o.number("free_length");
    b.spring_damper(s);
  } else if (type == "rotational_spring_damper") {
    Obj o(j, who, {"type", "name", "joint", "coordinate", "stiffness", "damping", "free_angle"});
    b.rotational_spring_damper({o.string("name"), o.string("joint"), o.integer_or("coordinate", 0),
                                o.number_or("stiffness", 0.0), o.number_or("damping", 0.0), o.number_or("free_angle", 0.0)});
  } else if (type == "body_force") {
    Obj o(j, who, {"type", "name", "body", "vector", "function", "frame", "point", "local_point"});
    BodyForceSpec s{o.string("name"), o.string("body"), o.vec3("vector"),
                    o.has("function") ? read_function(o.at("function"), who) : TimeFunction::constant(1.0),
                    read_load_frame(o), std::nullopt};
    if (o.has("point") || o.has("local_point")) s.point = read_point(o, "point");
    b.body_force(s);
  } else if (type == "body_torque") {
    Obj o(j, who, {"type", "name", "body", "vector", "function", "frame"});
    b.body_torque({o.string("name"), o.string("body"), o.vec3("vector"),
                   o.has("function") ? read_function(o.at("function"), who) : TimeFunction::constant(1.0),
                   read_load_frame(o)});
  } else if (type == "joint_actuator") {
    Obj o(j, who, {"type", "name", "joint", "coordinate", "function"});
    b.joint_actuator({o.string("name"), o.string("joint"), o.integer_or("coordinate", 0), read_function(o.at("function"), who)});
  } else if (type == "coulomb_friction") {
    Obj o(j, who, {"type", "name", "joint", "coefficient"});
    b.joint_friction({o.string("name"), o.string("joint"), o.number("coefficient")});
  } else {
    throw ModelError(who + ": unknown force type '" + type +
                     "' (spring_damper, rotational_spring_damper, body_force, body_torque, joint_actuator, coulomb_friction)");
  }
}

/// Bodies and joints read into the model's builder while the document is parsed
/// (parse_document): a document holding the 65,536 bodies of a chain whole cost 2 s to build and
/// free, one item at a time 0.5 s. (Gathered in vectors of their own first, they were copied once
/// more.)
struct StreamedItems {
  ModelBuilder builder;
  std::size_t bodies = 0, joints = 0;
};

Model from_json(const json& root, StreamedItems* streamed = nullptr) {
  Obj o(root, "model", {"name", "description", "gravity", "bodies", "joints", "forces", "drivers", "simulation"});
  ModelBuilder b = streamed ? std::move(streamed->builder) : ModelBuilder();
  b.name(o.string_or("name", "model"));
  b.description(o.string_or("description", ""));
  b.gravity(o.vec3_or("gravity", Vec3::Zero()));
  auto array = [&](const std::string& key) -> const json& {
    static const json empty = json::array();
    if (!o.has(key)) return empty;
    if (!o.at(key).is_array()) o.fail("field '" + key + "' must be an array");
    return o.at(key);
  };
  // Streamed items first; what is left in the document's arrays was not an object (an error).
  const json& bodies = array("bodies");
  const std::size_t streamed_bodies = streamed ? streamed->bodies : 0;
  for (std::size_t i = 0; i < bodies.size(); ++i) b.body(read_body(bodies[i], streamed_bodies + i));
  const json& joints = array("joints");
  const std::size_t streamed_joints = streamed ? streamed->joints : 0;
  for (std::size_t i = 0; i < joints.size(); ++i) b.joint(read_joint(joints[i], streamed_joints + i));
  const json& forces = array("forces");
  for (std::size_t i = 0; i < forces.size(); ++i) read_force(b, forces[i], i);
  const json& drivers = array("drivers");
  for (std::size_t i = 0; i < drivers.size(); ++i) {
    const std::string who = "drivers[" + std::to_string(i) + "]";
    Obj d(drivers[i], who, {"name", "joint", "coordinate", "function"});
    b.driver({d.string("name"), d.string("joint"), d.integer_or("coordinate", 0), read_function(d.at("function"), who)});
  }
  if (o.has("simulation")) {
    Obj s(o.at("simulation"), "simulation", {"t_end", "dt", "formulation", "integrator"});
    SimulationDefaults d;
    if (s.has("t_end")) d.t_end = s.number("t_end");
    if (s.has("dt")) d.dt = s.number("dt");
    if (s.has("formulation")) d.formulation = s.string("formulation");
    if (s.has("integrator")) d.integrator = s.string("integrator");
    b.defaults(d);
  }
  return std::move(b).build();
}

// ---------------------------------------------------------------------------------------------
// Writer (canonical form)

json vec(const Vec3& v) { return json::array({v.x(), v.y(), v.z()}); }

json matrix(const Mat3& m) {
  json rows = json::array();
  for (int r = 0; r < 3; ++r) rows.push_back(json::array({m(r, 0), m(r, 1), m(r, 2)}));
  return rows;
}

json function_json(const TimeFunction& f, const std::string& who) {
  if (const auto* c = std::get_if<TimeFunction::Constant>(&f.kind())) return {{"type", "constant"}, {"value", c->value}};
  if (const auto* p = std::get_if<TimeFunction::Polynomial>(&f.kind())) return {{"type", "polynomial"}, {"coefficients", p->coefficients}};
  if (const auto* s = std::get_if<TimeFunction::Sine>(&f.kind()))
    return {{"type", "sine"}, {"amplitude", s->amplitude}, {"omega", s->omega}, {"phase", s->phase}, {"offset", s->offset}};
  throw ModelError(who + ": a C++ callback function cannot be written to a model file");
}

json load_frame_json(LoadFrame f) { return f == LoadFrame::Global ? "global" : "body"; }

constexpr int kIndentedBodies = 2048;

// A body's and a joint's documents are refilled in place by the next body or joint
// (write_model_json): the members every item has are assigned where they are (a string keeps its
// room, an array of three its elements), and those an item leaves out are erased. Making and
// freeing a small document for every item was a fifth of writing a 65,536-body chain's file.
void set_string(json& slot, std::string_view text) {
  if (slot.is_string()) slot.get_ref<json::string_t&>().assign(text);
  else slot = std::string(text);
}

void set_vec(json& slot, const Vec3& v) {
  if (!slot.is_array() || slot.size() != 3) slot = json::array({0.0, 0.0, 0.0});
  for (std::size_t i = 0; i < 3; ++i) slot[i] = v[static_cast<Eigen::Index>(i)];
}

void set_matrix(json& slot, const Mat3& m) {
  if (!slot.is_array() || slot.size() != 3) slot = json::array({json(), json(), json()});
  for (std::size_t r = 0; r < 3; ++r) set_vec(slot[r], m.row(static_cast<Eigen::Index>(r)).transpose());
}

/// The member `key` set by `set` where `present`, and left out where not.
template <class Set>
void set_if(json& object, const char* key, bool present, Set&& set) {
  if (present) set(object[key]);
  else object.erase(key);
}

// The canonical form leaves out what the reader defaults exactly (an identity rotation, zero
// velocities) and writes a diagonal inertia as its diagonal: a 65,536-body chain's file went from
// 113 MB to a third of it, read the more quickly.
void set_frame(json& slot, const Frame& f) {
  if (!slot.is_object()) slot = json::object();
  set_vec(slot["position"], f.origin);
  set_if(slot, "orientation", f.rotation != Mat3::Identity(), [&](json& o) { o = {{"matrix", matrix(f.rotation)}}; });
}

json shape_json(const Shape& shape) {
  switch (shape.type) {
    case Shape::Type::Box: return {{"type", "box"}, {"size", vec(shape.size)}};
    case Shape::Type::Cylinder:
      return {{"type", "cylinder"}, {"radius", shape.radius}, {"length", shape.length},
              {"axis", std::string(1, static_cast<char>('x' + shape.axis))}};
    case Shape::Type::Sphere: return {{"type", "sphere"}, {"radius", shape.radius}};
    case Shape::Type::None: break;
  }
  return nullptr;
}

void set_body(json& jb, const Body& b) {
  if (!jb.is_object()) jb = json::object();
  set_string(jb["name"], b.name);
  jb["mass"] = b.mass;
  if (b.inertia == Mat3(b.inertia.diagonal().asDiagonal())) set_vec(jb["inertia"], b.inertia.diagonal());
  else set_matrix(jb["inertia"], b.inertia);
  set_vec(jb["position"], b.position);
  set_if(jb, "orientation", b.orientation.coeffs() != Quat::Identity().coeffs(), [&](json& o) {
    o = {{"quaternion", {b.orientation.w(), b.orientation.x(), b.orientation.y(), b.orientation.z()}}};
  });
  set_if(jb, "velocity", b.velocity != Vec3::Zero(), [&](json& v) { set_vec(v, b.velocity); });
  set_if(jb, "angular_velocity", b.angular_velocity != Vec3::Zero(), [&](json& w) { set_vec(w, b.angular_velocity); });
  set_if(jb, "shape", b.shape.type != Shape::Type::None, [&](json& s) { s = shape_json(b.shape); });
}

void set_joint(json& jj, const Model& m, const Joint& j) {
  if (!jj.is_object()) jj = json::object();
  set_string(jj["name"], j.name);
  set_string(jj["type"], to_string(j.type));
  set_string(jj["parent"], m.body_name(j.parent));
  set_string(jj["child"], m.body_name(j.child));
  set_frame(jj["parent_frame"], j.parent_frame);
  set_frame(jj["child_frame"], j.child_frame);
}

/// The model as a JSON document with "bodies" and "joints" null: write_model_json streams them,
/// one item at a time (body_json, joint_json), in their places.
json to_json(const Model& m) {
  json root;
  root["name"] = m.name;
  if (!m.description.empty()) root["description"] = m.description;
  root["gravity"] = vec(m.gravity);
  auto body_name = [&](int i) { return m.body_name(i); };
  auto joint_name = [&](int i) { return m.joints[static_cast<std::size_t>(i)].name; };
  root["bodies"] = nullptr;
  root["joints"] = nullptr;
  json forces = json::array();
  for (const auto& s : m.springs)
    forces.push_back({{"type", "spring_damper"}, {"name", s.name}, {"body_a", body_name(s.body_a)}, {"local_point_a", vec(s.point_a)},
                      {"body_b", body_name(s.body_b)}, {"local_point_b", vec(s.point_b)}, {"stiffness", s.stiffness},
                      {"damping", s.damping}, {"free_length", s.free_length}});
  for (const auto& s : m.rotational_springs)
    forces.push_back({{"type", "rotational_spring_damper"}, {"name", s.name}, {"joint", joint_name(s.joint)},
                      {"coordinate", s.coordinate}, {"stiffness", s.stiffness}, {"damping", s.damping}, {"free_angle", s.free_angle}});
  for (const auto& f : m.body_forces)
    forces.push_back({{"type", "body_force"}, {"name", f.name}, {"body", body_name(f.body)}, {"vector", vec(f.vector)},
                      {"function", function_json(f.function, "body_force '" + f.name + "'")}, {"frame", load_frame_json(f.frame)},
                      {"local_point", vec(f.point)}});
  for (const auto& f : m.body_torques)
    forces.push_back({{"type", "body_torque"}, {"name", f.name}, {"body", body_name(f.body)}, {"vector", vec(f.vector)},
                      {"function", function_json(f.function, "body_torque '" + f.name + "'")}, {"frame", load_frame_json(f.frame)}});
  for (const auto& a : m.actuators)
    forces.push_back({{"type", "joint_actuator"}, {"name", a.name}, {"joint", joint_name(a.joint)}, {"coordinate", a.coordinate},
                      {"function", function_json(a.function, "joint_actuator '" + a.name + "'")}});
  for (const auto& f : m.frictions)
    forces.push_back({{"type", "coulomb_friction"}, {"name", f.name}, {"joint", joint_name(f.joint)}, {"coefficient", f.coefficient}});
  if (!forces.empty()) root["forces"] = forces;
  json drivers = json::array();
  for (const auto& d : m.drivers)
    drivers.push_back({{"name", d.name}, {"joint", joint_name(d.joint)}, {"coordinate", d.coordinate},
                       {"function", function_json(d.function, "driver '" + d.name + "'")}});
  if (!drivers.empty()) root["drivers"] = drivers;
  json sim = json::object();
  if (m.defaults.t_end) sim["t_end"] = *m.defaults.t_end;
  if (m.defaults.dt) sim["dt"] = *m.defaults.dt;
  if (m.defaults.formulation) sim["formulation"] = *m.defaults.formulation;
  if (m.defaults.integrator) sim["integrator"] = *m.defaults.integrator;
  if (!sim.empty()) root["simulation"] = sim;
  return root;
}

/// "number overflow parsing '1e999'" (nlohmann's out_of_range 406 carries no position) as
/// "line L, column C: the number 1e999 is beyond the range of a double", the position found by
/// looking for the number in the text.
std::string number_overflow(std::string_view text, const std::string& what) {
  const auto open = what.find('\'');
  const auto close = what.rfind('\'');
  if (open == std::string::npos || close <= open) return "JSON " + what;
  const std::string number = what.substr(open + 1, close - open - 1);
  std::size_t at = 0;
  while ((at = text.find(number, at)) != std::string::npos) {  // the number, not a part of a longer one
    const bool starts = at == 0 || std::string(",:[ \t\r\n").find(text[at - 1]) != std::string::npos;
    const std::size_t end = at + number.size();
    const bool ends = end == text.size() || std::string(",]} \t\r\n/").find(text[end]) != std::string::npos;
    if (starts && ends) break;
    ++at;
  }
  std::string where;
  if (at != std::string::npos) {
    const long line = 1 + std::count(text.begin(), text.begin() + static_cast<long>(at), '\n');
    const auto line_start = text.rfind('\n', at == 0 ? 0 : at - 1);
    const std::size_t column = at - (line_start == std::string::npos || at == 0 ? 0 : line_start + 1) + 1;
    where = "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
  }
  return "JSON " + where + "the number " + number + " is beyond the range of a double (about 1.8e308)";
}

/// nlohmann's SAX events of a model file made into its document (as nlohmann's own DOM parser
/// would), except the objects of the top-level "bodies" and "joints" arrays: each is read into the
/// builder (read_body, read_joint) as it ends and left out of the document. Those items are parsed
/// into one document, `item_`, that every item refills in place: a member or element already
/// there is assigned, not freed and made again, and what the item does not have is erased at its
/// end. Items of one shape (a chain's bodies) then parse without allocating; building and freeing a
/// small document for each (nlohmann's parser callback) was a quarter of loading 65,536 bodies.
class StreamingDocument {
 public:
  explicit StreamingDocument(StreamedItems& items) : items_(items) {}
  json root;

  // nlohmann::json_sax<json>'s events (duck-typed: json::sax_parse takes any such handler)
  bool null() { return scalar(nullptr); }
  bool boolean(bool v) { return scalar(v); }
  bool number_integer(json::number_integer_t v) { return scalar(v); }
  bool number_unsigned(json::number_unsigned_t v) { return scalar(v); }
  bool number_float(json::number_float_t v, const json::string_t& /*text*/) { return scalar(v); }
  bool string(json::string_t& v) {
    json& at = slot();
    if (at.is_string()) at.get_ref<json::string_t&>() = v;  // the string's room kept
    else at = v;
    return end_value();
  }
  bool binary(json::binary_t& v) {  // never in JSON text
    return scalar(json::binary(static_cast<json::binary_t::container_type&>(v)));
  }
  bool start_object(std::size_t /*elements*/) { return open(json::value_t::object); }
  bool key(json::string_t& k) {
    Level& level = stack_.back();
    auto& members = level.value->get_ref<json::object_t&>();
    const auto member = members.try_emplace(k).first;
    const auto touched = touched_.begin() + static_cast<std::ptrdiff_t>(level.touched);
    // a key given twice keeps its last value, as in nlohmann's document
    if (std::find(touched, touched_.end(), member) == touched_.end()) touched_.push_back(member);
    level.member = member;
    return true;
  }
  bool end_object() {
    close_object(stack_.back());
    const bool item = stack_.back().value == &item_;
    stack_.pop_back();
    if (!item) return end_value();
    if (stack_.back().items == Items::Bodies) items_.builder.body(read_body(item_, items_.bodies++));
    else items_.builder.joint(read_joint(item_, items_.joints++));
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    // the top-level "bodies" and "joints": their objects go to item_
    const Items items = stack_.size() == 1 && stack_.back().value->is_object() ? items_named(stack_.back().member->first) : Items::None;
    open(json::value_t::array);
    stack_.back().items = items;
    return true;
  }
  bool end_array() {
    Level& level = stack_.back();
    auto& elements = level.value->get_ref<json::array_t&>();
    elements.erase(elements.begin() + static_cast<std::ptrdiff_t>(level.filled), elements.end());
    stack_.pop_back();
    return end_value();
  }
  template <class Exception>
  bool parse_error(std::size_t /*position*/, const std::string& /*token*/, const Exception& e) {
    throw e;  // json::parse_error or json::out_of_range, as json::parse throws them
  }

 private:
  enum class Items : unsigned char { None, Bodies, Joints };  // what an array's objects are
  struct Level {
    json* value;                        // the object or array being filled
    json::object_t::iterator member{};  // an object's member named by the last key
    std::size_t filled = 0;             // an array's elements given so far
    std::size_t touched = 0;            // where the object's members given so far start in touched_
    Items items = Items::None;          // an array's objects
  };

  static Items items_named(const std::string& key) {
    return key == "bodies" ? Items::Bodies : key == "joints" ? Items::Joints : Items::None;
  }

  /// Where the next value goes: the member of the last key, the array's next element, the root,
  /// or item_ for an object of "bodies" or "joints".
  json& slot() {
    if (stack_.empty()) return root;
    Level& level = stack_.back();
    if (level.value->is_object()) return level.member->second;
    auto& elements = level.value->get_ref<json::array_t&>();
    if (level.filled == elements.size()) elements.emplace_back();
    return elements[level.filled];
  }
  /// After a value: an array's next element.
  bool end_value() {
    if (!stack_.empty() && stack_.back().value->is_array()) ++stack_.back().filled;
    return true;
  }
  template <class T>
  bool scalar(T&& v) {
    slot() = std::forward<T>(v);
    return end_value();
  }
  bool open(json::value_t type) {
    const bool item = type == json::value_t::object && !stack_.empty() && stack_.back().value->is_array() &&
                      stack_.back().items != Items::None;
    json& at = item ? item_ : slot();
    if (at.type() != type) at = json(type);  // one of the same type is refilled
    stack_.push_back({&at, {}, 0, touched_.size(), Items::None});
    return true;
  }
  /// The members of an object that this one did not give are erased (a refilled object).
  void close_object(const Level& level) {
    auto& members = level.value->get_ref<json::object_t&>();
    const std::size_t given = touched_.size() - level.touched;
    if (given != members.size()) {
      const auto touched = touched_.begin() + static_cast<std::ptrdiff_t>(level.touched);
      for (auto m = members.begin(); m != members.end();)
        m = std::find(touched, touched_.end(), m) == touched_.end() ? members.erase(m) : std::next(m);
    }
    touched_.resize(level.touched);
  }

  StreamedItems& items_;
  json item_;                                          // the body or joint being read
  std::vector<Level> stack_;                           // the objects and arrays open
  std::vector<json::object_t::iterator> touched_;      // their members given, the innermost last
};

/// The document; with `items`, the objects of its top-level "bodies" and "joints" arrays are read
/// into them as they are parsed and left out of the document (StreamingDocument).
json parse_document(std::string_view text, const std::string& source, StreamedItems* items = nullptr) {
  try {
    if (!items)
      return json::parse(text.data(), text.data() + text.size(), nullptr, /*allow_exceptions=*/true, /*ignore_comments=*/true);
    StreamingDocument document(*items);
    try {
      json::sax_parse(text.data(), text.data() + text.size(), &document, json::input_format_t::json, /*strict=*/true,
                      /*ignore_comments=*/true);
    } catch (const ModelError& e) {
      throw ModelError(source + ": " + e.what());
    }
    return std::move(document.root);
  } catch (const json::parse_error& e) {
    // e.what() reads "[json.exception.parse_error.101] parse error at line L, column C: ..."
    std::string what = e.what();
    const auto pos = what.find("parse error");
    throw ModelError(source + ": JSON " + (pos == std::string::npos ? what : what.substr(pos)));
  } catch (const json::out_of_range& e) {
    throw ModelError(source + ": " + number_overflow(text, e.what()));
  }
}

/// The value a ModelOverride sets: its JSON, or the text as a string when it is not JSON.
json override_value(const std::string& text) {
  json value = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return value.is_discarded() ? json(text) : value;
}

/// Applies one override to a model document (see ModelOverride).
void apply_override(json& root, const ModelOverride& o) {
  const std::string where = "override " + o.path;
  if (!root.is_object()) throw ModelError(where + ": the model is not a JSON object");
  static const std::map<std::string, std::string> collections = {
      {"bodies", "body"}, {"joints", "joint"}, {"forces", "force element"}, {"drivers", "driver"}};
  const auto dot = o.path.find('.');
  const std::string head = o.path.substr(0, dot);
  json* target = &root;
  std::string rest = dot == std::string::npos ? "" : o.path.substr(dot + 1);
  if (const auto c = collections.find(head); c != collections.end()) {
    json& items = root[head];
    std::string names;
    json* item = nullptr;
    std::size_t matched = 0;
    for (json& candidate : items) {  // the longest name that opens the rest: names may hold dots
      const std::string name = candidate.value("name", "");
      names += (names.empty() ? "" : ", ") + name;
      if (rest.size() > name.size() && rest.compare(0, name.size(), name) == 0 && rest[name.size()] == '.' && name.size() > matched)
        item = &candidate, matched = name.size();
    }
    if (!item) {
      const std::string wanted = rest.substr(0, rest.find('.'));
      throw ModelError(where + ": no " + c->second + " named '" + wanted + "' (" + head + ": " + (names.empty() ? "none" : names) +
                       "), or no field after its name");
    }
    target = item;
    rest = rest.substr(matched + 1);
  } else {
    rest = o.path;
  }
  if (rest.empty()) throw ModelError(where + ": no field to set");
  for (std::size_t start = 0;;) {  // down the fields, the last one set
    const auto next = rest.find('.', start);
    const std::string key = rest.substr(start, next == std::string::npos ? std::string::npos : next - start);
    if (key.empty()) throw ModelError(where + ": an empty field name");
    if (!target->is_object()) throw ModelError(where + ": '" + key + "' is inside a value that is not an object");
    if (next == std::string::npos) {
      (*target)[key] = override_value(o.value);
      return;
    }
    if (!target->contains(key)) throw ModelError(where + ": no field '" + key + "' to go into");
    target = &(*target)[key];
    start = next + 1;
  }
}

std::string listed(const std::vector<ModelOverride>& overrides) {
  std::string s;
  for (const ModelOverride& o : overrides) s += (s.empty() ? "" : ", ") + o.path + "=" + o.value;
  return s;
}

}  // namespace

Shape parse_shape_json(const std::string& text, const std::string& who) {
  return read_shape(parse_document(text, who), who);
}

LoadFrame load_frame_named(const std::string& name, const std::string& who) {
  if (name == "global") return LoadFrame::Global;
  if (name == "body") return LoadFrame::Body;
  throw ModelError(who + ": 'frame' must be \"global\" or \"body\"");
}

ModelOverride parse_override(const std::string& text) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) throw ModelError("override '" + text + "': expected PATH=VALUE (bodies.crank.mass=2)");
  return {text.substr(0, eq), text.substr(eq + 1)};
}

namespace {

/// How often `word` occurs in `text` (an upper bound on the items that must have it).
std::size_t occurrences(std::string_view text, std::string_view word) {
  std::size_t n = 0;  // memmem: a quarter of the time string_view::find took on a 30 MB file
  for (const char *at = text.data(), *end = at + text.size();
       (at = static_cast<const char*>(::memmem(at, static_cast<std::size_t>(end - at), word.data(), word.size()))); at += word.size())
    ++n;
  return n;
}

/// A model file's text: a regular file mapped into memory read-only (reading it into a buffer, a
/// copy of every byte, was 8 % of loading a 30 MB file; an empty file has no mapping); anything
/// else that reads as a stream (a pipe, `<(treedyn generate ...)`) read whole. POSIX.
class ModelText {
 public:
  explicit ModelText(const std::string& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ModelError(path + ": cannot open the model file (" + std::strerror(errno) + ")");
    struct stat st {};
    const int error = ::fstat(fd, &st) != 0 ? errno : S_ISDIR(st.st_mode) ? EISDIR : 0;
    if (error == 0 && S_ISREG(st.st_mode)) map(fd, static_cast<std::size_t>(st.st_size));
    else if (error == 0) read_all(fd);
    ::close(fd);  // a mapping stays
    if (error != 0 || error_ != 0) throw ModelError(path + ": cannot read the model file (" + std::strerror(error ? error : error_) + ")");
  }
  ~ModelText() {
    if (mapped_) ::munmap(mapped_, size_);
  }
  ModelText(const ModelText&) = delete;
  ModelText& operator=(const ModelText&) = delete;
  std::string_view text() const { return mapped_ ? std::string_view(static_cast<const char*>(mapped_), size_) : read_; }

 private:
  void map(int fd, std::size_t size) {
    if (size == 0) return;
    void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
    if (data == MAP_FAILED) error_ = errno;
    else mapped_ = data, size_ = size;
  }
  void read_all(int fd) {
    char chunk[1 << 16];
    for (;;) {
      const ssize_t n = ::read(fd, chunk, sizeof chunk);
      if (n > 0) read_.append(chunk, static_cast<std::size_t>(n));
      else if (n == 0) return;
      else if (errno != EINTR) return void(error_ = errno);
    }
  }

  void* mapped_ = nullptr;
  std::size_t size_ = 0;
  std::string read_;
  int error_ = 0;
};

/// parse_model_json of text anywhere in memory.
Model parse_model_text(std::string_view text, const std::string& source, const std::vector<ModelOverride>& overrides) {
  // Overrides edit the whole document; without them, bodies and joints are read as they come.
  StreamedItems items;
  StreamedItems* streamed = overrides.empty() ? &items : nullptr;
  if (streamed) {  // room for them, counted from keys every body and every joint has (growing as they
    // came cost 7 % of loading 65,536 bodies); at most one per 32 bytes, the least a body or joint takes
    const std::size_t most = text.size() / 32;
    items.builder.reserve(std::min(occurrences(text, "\"mass\""), most), std::min(occurrences(text, "\"child\""), most));
  }
  json root = parse_document(text, source, streamed);  // its errors name the source
  for (const ModelOverride& o : overrides) {
    try {
      apply_override(root, o);
    } catch (const ModelError& e) {
      throw ModelError(source + ": " + e.what());
    }
  }
  try {
    return from_json(root, streamed);
  } catch (const ModelError& e) {
    throw ModelError(source + ": " + e.what() + (overrides.empty() ? "" : "\n  (with the overrides " + listed(overrides) + ")"));
  }
}

}  // namespace

Model parse_model_json(const std::string& text, const std::string& source, const std::vector<ModelOverride>& overrides) {
  return parse_model_text(text, source, overrides);
}

Model parse_model_json(const std::string& text, const std::string& source) { return parse_model_text(text, source, {}); }

Model read_model_file(const std::string& path, const std::vector<ModelOverride>& overrides,
                      std::vector<std::string>* import_warnings) {
  if (model_format_of(path) != ModelFormat::Json) {
    ImportedModel imported = import_model_file(path, {}, overrides);
    if (import_warnings)
      import_warnings->insert(import_warnings->end(), imported.warnings.begin(), imported.warnings.end());
    return std::move(imported.model);
  }
  const ModelText file(path);
  return parse_model_text(file.text(), path, overrides);
}

Model read_model_file(const std::string& path, const std::vector<ModelOverride>& overrides) {
  return read_model_file(path, overrides, nullptr);
}
Model read_model_file(const std::string& path) { return read_model_file(path, {}, nullptr); }

namespace {

/// Writes `text` (a value dumped on its own) as nlohmann's pretty printer would inside a
/// document: every line after the first indented by `pad` more, and the first too with `first`.
void write_shifted(std::ostream& out, const std::string& text, const std::string& pad, bool first) {
  if (first) out << pad;
  std::size_t from = 0;
  for (std::size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', from)) {
    out.write(text.data() + from, static_cast<std::streamsize>(nl + 1 - from)) << pad;
    from = nl + 1;
  }
  out.write(text.data() + from, static_cast<std::streamsize>(text.size() - from));
}

}  // namespace

void write_model_json(const Model& model, std::ostream& out) {
  // The document's bodies and joints are written one at a time as they are made, the same bytes
  // as the whole document dumped at once: building that document and its text first was the
  // peak memory of a run (at 65,536 bodies 130 MB of strings while the text grew and was copied;
  // at 2,001 bodies 19 of ali3's 45 MB). Up to kIndentedBodies bodies the file is indented for
  // reading and editing; a larger model is written on one line (the indentation was two thirds
  // of a 65,536-body file and of its reading time).
  const int indent = model.body_count() <= kIndentedBodies ? 2 : -1;
  const bool pretty = indent >= 0;
  const std::string nl = pretty ? "\n" : "", pad1(pretty ? 2 : 0, ' '), pad2(pretty ? 4 : 0, ' ');
  const json root = to_json(model);  // throws for a callback before anything is written
  out << '{' << nl;
  bool first = true;
  for (const auto& [key, value] : root.items()) {  // keys in the document's (sorted) order
    out << (first ? "" : "," + nl) << pad1 << json(key).dump() << (pretty ? ": " : ":");
    first = false;
    if (key != "bodies" && key != "joints") {
      write_shifted(out, value.dump(indent), pad1, false);
      continue;
    }
    const std::size_t n = key == "bodies" ? model.bodies.size() : model.joints.size();
    if (n == 0) {
      out << "[]";
      continue;
    }
    out << '[' << nl;
    json item;  // each body, or each joint, refilled in place
    for (std::size_t i = 0; i < n; ++i) {
      if (i) out << ',' << nl;
      if (key == "bodies") set_body(item, model.bodies[i]);
      else set_joint(item, model, model.joints[i]);
      write_shifted(out, item.dump(indent), pad2, true);
    }
    out << nl << pad1 << ']';
  }
  out << nl << "}\n";
}

std::string write_model_json(const Model& model) {
  std::ostringstream text;
  write_model_json(model, text);
  return std::move(text).str();
}

void write_model_file(const Model& model, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw ModelError(path + ": cannot write the model file");
  write_model_json(model, out);
  out.close();
  if (!out) throw ModelError(path + ": writing the model file failed (disk full?)");
}

}  // namespace treedyn
