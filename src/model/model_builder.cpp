#include "treedyn/model_builder.hpp"

#include <Eigen/Eigenvalues>
#include <cmath>
#include <cstdint>
#include <functional>
#include <set>
#include <sstream>
#include <string_view>
#include <vector>

namespace treedyn {
namespace {

std::string fmt(double x) {
  std::ostringstream s;
  s.precision(6);
  s << x;
  return s.str();
}

std::string fmt(const Vec3& v) { return "[" + fmt(v.x()) + ", " + fmt(v.y()) + ", " + fmt(v.z()) + "]"; }

bool finite(const Vec3& v) { return v.allFinite(); }

/// Collects problems; throws them all at once.
class Problems {
 public:
  void add(std::string message) { lines_.push_back(std::move(message)); }
  void throw_if_any() const {
    if (lines_.empty()) return;
    std::string text = lines_.size() == 1 ? "invalid model: " : "invalid model (" + std::to_string(lines_.size()) + " problems):";
    for (const auto& l : lines_) text += (lines_.size() == 1 ? "" : "\n  ") + l;
    throw ModelError(text);
  }
  bool empty() const { return lines_.empty(); }

 private:
  std::vector<std::string> lines_;
};

/// Names to their places in a list of names, in one flat table: open addressing with linear
/// probing, at most half full, each slot 8 bytes (a name's place and the low bits of its hash, so
/// that most other names are told apart without reading them). A model's names are checked and
/// indexed a few times per build and run (validate's duplicates, the builder's references): with
/// std::unordered_set and std::unordered_map, a node allocated and freed per name, validate took
/// 19 ms on the 65,536-body chain. Refers to the list: it must outlive the table.
class NameTable {
 public:
  explicit NameTable(const std::vector<std::string_view>& names) : names_(names) {
    std::size_t size = 16;
    while (size < 2 * names.size()) size *= 2;
    slots_.resize(size);
    mask_ = size - 1;
  }
  /// Adds names[i] unless an equal name is there; returns that one's place (-1 if there was none).
  int insert(int i) {
    const std::string_view name = names_[static_cast<std::size_t>(i)];
    const std::size_t hash = std::hash<std::string_view>{}(name);
    Slot& s = slots_[position(name, hash)];
    if (s.index >= 0) return s.index;
    s = {static_cast<std::uint32_t>(hash), i};
    return -1;
  }
  /// The place of `name` among those inserted, or -1.
  int find(std::string_view name) const { return slots_[position(name, std::hash<std::string_view>{}(name))].index; }

 private:
  struct Slot {
    std::uint32_t hash = 0;
    int index = -1;  // -1: empty
  };
  /// The slot holding `name`, or the empty one where it would go (there is one: at most half full).
  std::size_t position(std::string_view name, std::size_t hash) const {
    const auto low = static_cast<std::uint32_t>(hash);
    for (std::size_t i = hash & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.index < 0 || (s.hash == low && names_[static_cast<std::size_t>(s.index)] == name)) return i;
    }
  }
  const std::vector<std::string_view>& names_;
  std::vector<Slot> slots_;
  std::size_t mask_ = 0;
};

/// The items' names, referring to them (they must outlive the list).
template <class T>
std::vector<std::string_view> names_of(const std::vector<T>& items) {
  std::vector<std::string_view> out;
  out.reserve(items.size());
  for (const auto& i : items) out.emplace_back(i.name);
  return out;
}

/// Items by name, built once per build() (a lookup per reference kept the 65,536-body chain's
/// build quadratic: 24 s). The first of equal names wins, as a search from the front would;
/// validate() reports the duplicates. Refers to the items' names: they must outlive it.
class NameIndex {
 public:
  template <class Items>
  explicit NameIndex(const Items& items) : names_(names_of(items)), table_(names_) {
    for (std::size_t i = 0; i < names_.size(); ++i) table_.insert(static_cast<int>(i));
  }
  NameIndex(const NameIndex&) = delete;  // the table refers to names_
  NameIndex& operator=(const NameIndex&) = delete;
  std::optional<int> find(const std::string& name) const {
    const int i = table_.find(name);
    return i < 0 ? std::nullopt : std::optional<int>(i);
  }

 private:
  std::vector<std::string_view> names_;
  NameTable table_;
};

/// An item that refers to others, for its problems: its kind ("joint") and name, put together
/// only when there is a problem to report (not once per joint of a large model).
struct Referrer {
  const char* kind;
  const std::string& name;
  std::string who() const { return std::string(kind) + " '" + name + "'"; }
};

/// Resolves a body name; records a problem (and returns nullopt) when unknown.
std::optional<int> resolve_body(const NameIndex& bodies, const std::string& name, const Referrer& by, Problems& p) {
  if (name == kGroundName) return kGround;
  if (const auto i = bodies.find(name)) return i;
  p.add(by.who() + ": unknown body '" + name + "'");
  return std::nullopt;
}

std::optional<int> resolve_joint(const NameIndex& joints, const std::string& name, const Referrer& by, Problems& p) {
  if (const auto i = joints.find(name)) return i;
  p.add(by.who() + ": unknown joint '" + name + "'");
  return std::nullopt;
}

/// Pose of a body (or ground) at the initial configuration.
struct Pose {
  Vec3 r = Vec3::Zero();
  Mat3 A = Mat3::Identity();
};

Pose initial_pose(const std::vector<Body>& bodies, int index) {
  if (index == kGround) return {};
  const Body& b = bodies[static_cast<std::size_t>(index)];
  return {b.position, b.orientation.normalized().toRotationMatrix()};
}

Vec3 to_local(const Pose& pose, const Vec3& global_point) { return pose.A.transpose() * (global_point - pose.r); }

Vec3 point_in_body(const std::vector<Body>& bodies, int body, const PointSpec& p) {
  return p.global ? to_local(initial_pose(bodies, body), p.value) : p.value;
}

/// The joint frame (global) of a global placement; records problems with the axes.
std::optional<Frame> global_joint_frame(const JointSpec& spec, const GlobalPlacement& g, Problems& p) {
  const auto who = [&] { return Referrer{"joint", spec.name}.who(); };
  if (!finite(g.location) || !finite(g.axis)) {
    p.add(who() + ": location and axis must be finite");
    return std::nullopt;
  }
  if (g.axis.norm() < 1e-12) {
    p.add(who() + ": axis is zero");
    return std::nullopt;
  }
  Vec3 x_hint = any_perpendicular(Vec3(g.axis.normalized()));
  if (g.axis2) {
    if (!finite(*g.axis2) || g.axis2->norm() < 1e-12) {
      p.add(who() + ": axis2 is zero");
      return std::nullopt;
    }
    const double c = g.axis.normalized().dot(g.axis2->normalized());
    if (spec.type == JointType::Universal && std::abs(c) > 1e-6) {
      p.add(who() + ": a universal joint's two axes must be perpendicular (cosine " + fmt(c) + ")");
      return std::nullopt;
    }
    if (std::abs(std::abs(c) - 1.0) < 1e-9) {
      p.add(who() + ": axis2 is parallel to axis");
      return std::nullopt;
    }
    x_hint = *g.axis2;
  } else if (spec.type == JointType::Universal) {
    p.add(who() + ": a universal joint needs 'axis2', its second (child) axis");
    return std::nullopt;
  }
  return Frame{g.location, frame_from_z(Vec3(g.axis), x_hint)};
}

bool proper_rotation(const Mat3& R) {
  return R.allFinite() && (R.transpose() * R - Mat3::Identity()).norm() <= 1e-9 && R.determinant() >= 0.0;
}

void check_inertia(const Body& b, Problems& p) {
  const auto who = [&] { return "body '" + b.name + "'"; };
  const Mat3& J = b.inertia;
  if (!J.allFinite()) {
    p.add(who() + ": inertia has non-finite entries");
    return;
  }
  const double scale = std::max(J.cwiseAbs().maxCoeff(), 1e-300);
  if ((J - J.transpose()).cwiseAbs().maxCoeff() > 1e-9 * scale) {
    p.add(who() + ": inertia matrix is not symmetric");
    return;
  }
  const Vec3 moments = Eigen::SelfAdjointEigenSolver<Mat3>(J).eigenvalues();
  if (moments.minCoeff() <= 0.0) {
    p.add(who() + ": inertia is not positive definite (principal moments " + fmt(moments) + ")");
    return;
  }
  // Principal moments of a real body satisfy J1 + J2 >= J3 for every ordering.
  if (moments(0) + moments(1) < moments(2) * (1.0 - 1e-9))
    p.add(who() + ": principal moments " + fmt(moments) + " violate the triangle inequality (J1 + J2 >= J3)");
}

/// Masses or inertias so far apart that no formulation can resolve them in double precision (a
/// 1e300 kg body among 1 kg ones: its mass matrix swamps the others' 16 digits, and a run "ok"
/// would be meaningless) are refused, naming the lightest and the heaviest body: usually a unit
/// mistake. The bounds leave room for any mechanism built from real parts (a 1 g pin on a 100 t
/// frame is a ratio of 1e8 in mass).
void check_mass_range(const Model& m, Problems& p) {
  constexpr double kMassRatio = 1e12, kInertiaRatio = 1e15;
  const Body *light = nullptr, *heavy = nullptr, *small = nullptr, *large = nullptr;
  auto largest_moment = [](const Body& b) { return b.inertia.cwiseAbs().maxCoeff(); };
  for (const Body& b : m.bodies) {
    if (!(b.mass > 0.0) || !std::isfinite(b.mass) || !b.inertia.allFinite() || !(largest_moment(b) > 0.0)) return;  // reported already
    if (!light || b.mass < light->mass) light = &b;
    if (!heavy || b.mass > heavy->mass) heavy = &b;
    if (!small || largest_moment(b) < largest_moment(*small)) small = &b;
    if (!large || largest_moment(b) > largest_moment(*large)) large = &b;
  }
  if (light && heavy->mass > kMassRatio * light->mass)
    p.add("body '" + heavy->name + "': mass " + fmt(heavy->mass) + " kg is " + fmt(heavy->mass / light->mass) +
          " times that of body '" + light->name + "' (" + fmt(light->mass) + " kg); more than " + fmt(kMassRatio) +
          " apart is refused (double precision cannot resolve it): check the units");
  if (small && largest_moment(*large) > kInertiaRatio * largest_moment(*small))
    p.add("body '" + large->name + "': inertia " + fmt(largest_moment(*large)) + " kg m^2 is " +
          fmt(largest_moment(*large) / largest_moment(*small)) + " times that of body '" + small->name + "' (" +
          fmt(largest_moment(*small)) + " kg m^2); more than " + fmt(kInertiaRatio) +
          " apart is refused (double precision cannot resolve it): check the units");
}

void check_unique(const std::vector<std::string_view>& names, const std::string& kind, Problems& p) {
  NameTable seen(names);
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::string_view n = names[i];
    if (n.empty()) p.add(kind + " with an empty name");
    else if (seen.insert(static_cast<int>(i)) >= 0) p.add("duplicate " + kind + " name '" + std::string(n) + "'");
  }
}

void check_coordinate(const Model& m, int joint, int coordinate, const std::string& who, Problems& p,
                      std::optional<JointCoordinate::Kind> required = std::nullopt) {
  if (joint < 0 || joint >= m.joint_count()) {
    p.add(who + ": joint index out of range");
    return;
  }
  const Joint& j = m.joints[static_cast<std::size_t>(joint)];
  const auto coords = joint_coordinates(j.type);
  if (coords.empty()) {
    p.add(who + ": a " + std::string(to_string(j.type)) + " joint ('" + j.name + "') has no scalar coordinate to act on");
    return;
  }
  if (coordinate < 0 || coordinate >= static_cast<int>(coords.size())) {
    p.add(who + ": coordinate " + std::to_string(coordinate) + " out of range for " + to_string(j.type) + " joint '" +
          j.name + "' (it has " + std::to_string(coords.size()) + ")");
    return;
  }
  if (required && coords[static_cast<std::size_t>(coordinate)].kind != *required)
    p.add(who + ": coordinate " + std::to_string(coordinate) + " of joint '" + j.name + "' is not a rotation");
}

}  // namespace

// ---------------------------------------------------------------------------------------------

void validate(const Model& m) {
  Problems p;
  if (m.bodies.empty()) p.add("the model has no bodies");
  if (!finite(m.gravity)) p.add("gravity must be finite");
  if (m.defaults.dt && !(*m.defaults.dt > 0.0 && std::isfinite(*m.defaults.dt)))
    p.add("simulation: dt must be positive and finite (got " + fmt(*m.defaults.dt) + ")");
  if (m.defaults.t_end && !(*m.defaults.t_end >= 0.0 && std::isfinite(*m.defaults.t_end)))
    p.add("simulation: t_end must be finite and not negative (got " + fmt(*m.defaults.t_end) + ")");

  auto body_names = names_of(m.bodies);
  check_unique(body_names, "body", p);
  for (const auto& n : body_names)
    if (n == kGroundName) p.add("'ground' is the implicit fixed body and cannot be defined");
  check_unique(names_of(m.joints), "joint", p);
  std::vector<std::string_view> element_names;
  for (const auto& v : {names_of(m.springs), names_of(m.rotational_springs), names_of(m.body_forces),
                        names_of(m.body_torques), names_of(m.actuators), names_of(m.frictions), names_of(m.drivers)})
    element_names.insert(element_names.end(), v.begin(), v.end());
  check_unique(element_names, "force element or driver", p);

  for (const Body& b : m.bodies) {  // names put together only for a problem (65,536 of them otherwise)
    const auto who = [&] { return "body '" + b.name + "'"; };
    if (!(b.mass > 0.0) || !std::isfinite(b.mass)) p.add(who() + ": mass must be positive and finite (got " + fmt(b.mass) + ")");
    check_inertia(b, p);
    if (!finite(b.position) || !finite(b.velocity) || !finite(b.angular_velocity))
      p.add(who() + ": initial position and velocities must be finite");
    if (!b.orientation.coeffs().allFinite() || std::abs(b.orientation.norm() - 1.0) > 1e-9)
      p.add(who() + ": orientation quaternion must have unit norm (norm " + fmt(b.orientation.norm()) + ")");
  }

  check_mass_range(m, p);

  const int nb = m.body_count();
  auto valid_body = [&](int i) { return i == kGround || (i >= 0 && i < nb); };
  std::vector<int> joint_count_of_body(static_cast<std::size_t>(nb), 0);
  for (const Joint& j : m.joints) {
    const auto who = [&] { return "joint '" + j.name + "'"; };
    if (!valid_body(j.parent) || !valid_body(j.child)) {
      p.add(who() + ": parent or child index out of range");
      continue;
    }
    if (j.parent == j.child)
      p.add(who() + ": connects " + (j.parent == kGround ? std::string("ground") : "body '" + m.body_name(j.parent) + "'") +
            " to itself");
    if (j.child == kGround) p.add(who() + ": the child cannot be ground (make ground the parent)");
    if (!proper_rotation(j.parent_frame.rotation)) p.add(who() + " (parent frame): frame orientation is not a proper rotation");
    if (!proper_rotation(j.child_frame.rotation)) p.add(who() + " (child frame): frame orientation is not a proper rotation");
    if (!finite(j.parent_frame.origin) || !finite(j.child_frame.origin)) p.add(who() + ": frame origins must be finite");
    for (int b : {j.parent, j.child})
      if (b != kGround) ++joint_count_of_body[static_cast<std::size_t>(b)];
  }
  for (int i = 0; i < nb; ++i)
    if (joint_count_of_body[static_cast<std::size_t>(i)] == 0)
      p.add("body '" + m.body_name(i) + "' is attached to nothing: connect it with a joint (a 'free' joint to ground for a free body)");

  for (const SpringDamper& s : m.springs) {
    const std::string who = "spring_damper '" + s.name + "'";
    if (!valid_body(s.body_a) || !valid_body(s.body_b)) p.add(who + ": body index out of range");
    else if (s.body_a == s.body_b) p.add(who + ": both ends are on the same body");
    if (!(s.stiffness >= 0.0) || !(s.damping >= 0.0) || !(s.free_length >= 0.0) || !std::isfinite(s.stiffness) ||
        !std::isfinite(s.damping) || !std::isfinite(s.free_length))
      p.add(who + ": stiffness, damping and free length must be finite and non-negative");
  }
  for (const RotationalSpringDamper& s : m.rotational_springs) {
    const std::string who = "rotational_spring_damper '" + s.name + "'";
    check_coordinate(m, s.joint, s.coordinate, who, p, JointCoordinate::Kind::Rotation);
    if (!(s.stiffness >= 0.0) || !(s.damping >= 0.0) || !std::isfinite(s.free_angle))
      p.add(who + ": stiffness and damping must be non-negative, the free angle finite");
  }
  for (const BodyForce& f : m.body_forces) {
    const std::string who = "body_force '" + f.name + "'";
    if (f.body < 0 || f.body >= nb) p.add(who + ": must act on a body (not ground)");
    if (!finite(f.vector) || !finite(f.point)) p.add(who + ": vector and point must be finite");
  }
  for (const BodyTorque& f : m.body_torques) {
    const std::string who = "body_torque '" + f.name + "'";
    if (f.body < 0 || f.body >= nb) p.add(who + ": must act on a body (not ground)");
    if (!finite(f.vector)) p.add(who + ": vector must be finite");
  }
  for (const JointActuator& a : m.actuators) check_coordinate(m, a.joint, a.coordinate, "joint_actuator '" + a.name + "'", p);
  for (const JointFriction& f : m.frictions) {
    const std::string who = "coulomb_friction '" + f.name + "'";
    check_coordinate(m, f.joint, 0, who, p);
    if (!(f.coefficient >= 0.0) || !std::isfinite(f.coefficient)) p.add(who + ": coefficient must be non-negative");
  }
  std::set<std::pair<int, int>> driven;
  for (const Driver& d : m.drivers) {
    const std::string who = "driver '" + d.name + "'";
    check_coordinate(m, d.joint, d.coordinate, who, p);
    if (d.joint >= 0 && d.joint < m.joint_count()) {
      const Joint& j = m.joints[static_cast<std::size_t>(d.joint)];
      if (j.type == JointType::Universal && d.coordinate == 1)
        p.add(who + ": drivers on a universal joint's second angle are not supported (drive its first angle)");
    }
    if (!d.function.has_derivatives()) p.add(who + ": a callback function needs its first and second derivatives");
    if (!driven.insert({d.joint, d.coordinate}).second) p.add(who + ": this joint coordinate is already driven");
  }
  p.throw_if_any();
}

// ---------------------------------------------------------------------------------------------

ModelBuilder::ModelBuilder(std::string name) : name_(std::move(name)) {}
ModelBuilder& ModelBuilder::name(std::string name) { name_ = std::move(name); return *this; }
ModelBuilder& ModelBuilder::description(std::string text) { description_ = std::move(text); return *this; }
ModelBuilder& ModelBuilder::gravity(const Vec3& g) { gravity_ = g; return *this; }
ModelBuilder& ModelBuilder::body(Body b) { bodies_.push_back(std::move(b)); return *this; }
ModelBuilder& ModelBuilder::joint(JointSpec s) { joints_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::spring_damper(SpringDamperSpec s) { springs_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::rotational_spring_damper(RotationalSpringDamperSpec s) { rotational_springs_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::body_force(BodyForceSpec s) { body_forces_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::body_torque(BodyTorqueSpec s) { body_torques_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::joint_actuator(JointActuatorSpec s) { actuators_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::joint_friction(JointFrictionSpec s) { frictions_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::driver(DriverSpec s) { drivers_.push_back(std::move(s)); return *this; }
ModelBuilder& ModelBuilder::defaults(SimulationDefaults d) { defaults_ = std::move(d); return *this; }
ModelBuilder& ModelBuilder::reserve(std::size_t bodies, std::size_t joints) {
  bodies_.reserve(bodies);
  joints_.reserve(joints);
  return *this;
}

Model ModelBuilder::build() const& { return assemble(bodies_); }
Model ModelBuilder::build() && { return assemble(std::move(bodies_)); }

Model ModelBuilder::assemble(std::vector<Body> bodies) const {
  Problems p;
  Model m;
  m.name = name_;
  m.description = description_;
  m.gravity = gravity_;
  m.bodies = std::move(bodies);
  m.defaults = defaults_;
  for (Body& b : m.bodies) {  // accept quaternions within 1e-6 of unit norm, store them normalised
    const double deviation = std::abs(b.orientation.norm() - 1.0);  // (left alone when already unit, so
    if (b.orientation.coeffs().allFinite() && deviation < 1e-6 && deviation > 1e-14)  // files round-trip)
      b.orientation.normalize();
  }
  const NameIndex body_names(m.bodies), joint_names(joints_);

  m.joints.reserve(joints_.size());
  for (const JointSpec& s : joints_) {
    const Referrer who{"joint", s.name};
    auto parent = resolve_body(body_names, s.parent, who, p);
    auto child = resolve_body(body_names, s.child, who, p);
    Joint j{s.name, s.type, parent.value_or(kGround), child.value_or(kGround), {}, {}};
    if (const auto* g = std::get_if<GlobalPlacement>(&s.placement)) {
      if (!parent || !child) continue;
      auto frame = global_joint_frame(s, *g, p);
      if (!frame) continue;
      for (auto [index, target] : {std::pair{*parent, &j.parent_frame}, std::pair{*child, &j.child_frame}}) {
        const Pose pose = initial_pose(m.bodies, index);
        *target = Frame{to_local(pose, frame->origin), pose.A.transpose() * frame->rotation};
      }
    } else {
      const auto& f = std::get<FramePlacement>(s.placement);
      j.parent_frame = f.parent;
      j.child_frame = f.child;
    }
    if (parent && child) m.joints.push_back(std::move(j));
  }

  for (const auto& s : springs_) {
    const Referrer who{"spring_damper", s.name};
    auto a = resolve_body(body_names, s.body_a, who, p);
    auto b = resolve_body(body_names, s.body_b, who, p);
    if (!a || !b) continue;
    SpringDamper e{s.name, *a, point_in_body(m.bodies, *a, s.point_a), *b, point_in_body(m.bodies, *b, s.point_b),
                   s.stiffness, s.damping, 0.0};
    if (s.free_length) {
      e.free_length = *s.free_length;
    } else {  // the initial distance
      const Pose pa = initial_pose(m.bodies, *a), pb = initial_pose(m.bodies, *b);
      e.free_length = ((pb.r + pb.A * e.point_b) - (pa.r + pa.A * e.point_a)).norm();
    }
    m.springs.push_back(e);
  }
  for (const auto& s : rotational_springs_)
    if (auto j = resolve_joint(joint_names, s.joint, Referrer{"rotational_spring_damper", s.name}, p))
      m.rotational_springs.push_back({s.name, *j, s.coordinate, s.stiffness, s.damping, s.free_angle});
  for (const auto& s : body_forces_) {
    auto b = resolve_body(body_names, s.body, Referrer{"body_force", s.name}, p);
    if (!b) continue;
    const Vec3 point = s.point ? point_in_body(m.bodies, *b, *s.point) : Vec3::Zero();
    m.body_forces.push_back({s.name, *b, s.vector, s.function, s.frame, point});
  }
  for (const auto& s : body_torques_)
    if (auto b = resolve_body(body_names, s.body, Referrer{"body_torque", s.name}, p))
      m.body_torques.push_back({s.name, *b, s.vector, s.function, s.frame});
  for (const auto& s : actuators_)
    if (auto j = resolve_joint(joint_names, s.joint, Referrer{"joint_actuator", s.name}, p))
      m.actuators.push_back({s.name, *j, s.coordinate, s.function});
  for (const auto& s : frictions_)
    if (auto j = resolve_joint(joint_names, s.joint, Referrer{"coulomb_friction", s.name}, p))
      m.frictions.push_back({s.name, *j, s.coefficient});
  for (const auto& s : drivers_)
    if (auto j = resolve_joint(joint_names, s.joint, Referrer{"driver", s.name}, p))
      m.drivers.push_back({s.name, *j, s.coordinate, s.function});

  p.throw_if_any();
  validate(m);
  return m;
}

}  // namespace treedyn
