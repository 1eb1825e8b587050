#include "import/link_tree.hpp"

#include <cmath>
#include <map>

#include "treedyn/model_builder.hpp"

namespace treedyn::importing {

Mat3 frame_with_z(const Vec3& axis, const std::string& who, const Vec3& x_hint) {
  const double n = axis.norm();
  if (!(n > 0.0) || !std::isfinite(n)) throw ModelError(who + ": the axis is zero or not finite");
  const Vec3 z = axis / n;
  Vec3 x = x_hint - x_hint.dot(z) * z;
  if (x.norm() < 1e-9) {  // no usable hint: the global axis least aligned with z
    Vec3 e = Vec3::Zero();
    int k = 0;
    z.cwiseAbs().minCoeff(&k);
    e[k] = 1.0;
    x = e - e.dot(z) * z;
  }
  x.normalize();
  Mat3 R;
  R.col(0) = x;
  R.col(1) = z.cross(x);
  R.col(2) = z;
  return R;
}

Shape inertia_box(double mass, const Mat3& inertia) {
  Shape s;
  if (!(mass > 0.0)) return s;
  const Vec3 d = inertia.diagonal();
  const Vec3 sq{d.y() + d.z() - d.x(), d.x() + d.z() - d.y(), d.x() + d.y() - d.z()};  // l_i^2 m / 6
  if ((sq.array() <= 0.0).any()) return s;
  s.type = Shape::Type::Box;
  s.size = (6.0 * sq / mass).cwiseSqrt();
  return s;
}

std::string listed(const std::vector<std::string>& names, std::size_t max) {
  std::string out;
  for (std::size_t i = 0; i < names.size() && i < max; ++i) out += (i ? ", " : "") + names[i];
  if (names.size() > max) out += " and " + std::to_string(names.size() - max) + " more";
  return out;
}

void LeftOut::add(const std::string& kind, const std::vector<std::string>& names) {
  if (!names.empty()) parts_.push_back(kind + " (" + listed(names, 4) + ")");
}

void LeftOut::counted(const std::string& what, const std::string& noun, const std::vector<std::string>& names) {
  add((what.empty() ? "" : what + " ") + std::to_string(names.size()) + " " + noun, names);
}

std::vector<std::string> LeftOut::warning(const std::string& source) const {
  if (parts_.empty()) return {};
  return {source + ": treedyn does not model, and leaves out: " + listed(parts_, parts_.size())};
}

void not_built(const std::string& path, const std::string& format, const std::string& package) {
  throw ModelError(path + ": this treedyn was built without " + format + " support (install " + package + " and rebuild)");
}

namespace {

/// Merges links without mass into the link (or world) they are welded to, rewriting the frames
/// of every joint that refers to them. Repeats until nothing changes (chains of welded frames).
void merge_massless_welded(LinkTree& tree) {
  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < tree.links.size(); ++i) index[tree.links[i].name] = i;
  auto massless = [&](const std::string& name) { return name != tree.world && tree.links[index.at(name)].mass == 0.0; };
  auto pose_of = [&](const std::string& name) { return name == tree.world ? Pose{} : tree.links[index.at(name)].pose; };
  for (bool changed = true; changed;) {
    changed = false;
    for (std::size_t j = 0; j < tree.joints.size(); ++j) {
      const LinkJoint weld = tree.joints[j];
      if (weld.type != JointType::Fixed) continue;
      std::string gone, kept;
      if (massless(weld.child)) gone = weld.child, kept = weld.parent;
      else if (massless(weld.parent)) gone = weld.parent, kept = weld.child;
      else continue;
      const Pose kept_from_gone = pose_of(kept).inverse() * pose_of(gone);
      tree.joints.erase(tree.joints.begin() + static_cast<std::ptrdiff_t>(j));
      for (LinkJoint& other : tree.joints) {
        if (other.parent == gone) other.parent = kept, other.on_parent = kept_from_gone * other.on_parent;
        if (other.child == gone) other.child = kept, other.on_child = kept_from_gone * other.on_child;
      }
      tree.links[index.at(gone)].name.clear();  // removed below
      changed = true;
      break;
    }
  }
  std::erase_if(tree.links, [](const Link& l) { return l.name.empty(); });
}

void check_masses(const LinkTree& tree) {
  std::vector<std::string> problems;
  for (const Link& l : tree.links) {
    if (!std::isfinite(l.mass) || l.mass < 0.0) {
      problems.push_back(l.element + ": mass must be positive and finite (got " + std::to_string(l.mass) + ")");
      continue;
    }
    if (l.mass > 0.0) continue;
    std::string how = "is joined to nothing";
    for (const LinkJoint& j : tree.joints)
      if (j.parent == l.name || j.child == l.name) {
        how = "moves (" + j.element + ", " + to_string(j.type) + ")";
        break;
      }
    problems.push_back(l.element + " has no mass (no inertial data) but " + how +
                       ": treedyn's bodies need a mass and inertia; give it some, or weld it to a body with a fixed joint");
  }
  if (!problems.empty()) {
    std::string text = tree.source + ":";
    for (const auto& p : problems) text += "\n  " + p;
    throw ModelError(text);
  }
}

}  // namespace

Model build_model(LinkTree tree) {
  merge_massless_welded(tree);
  check_masses(tree);
  ModelBuilder b(tree.name);
  b.description(tree.description);
  b.gravity(tree.gravity);
  std::map<std::string, Pose> inertial_of;  // body frame in the link frame
  for (const Link& l : tree.links) {
    const Pose body = l.pose * l.inertial;
    Body out;
    out.name = l.name;
    out.mass = l.mass;
    out.inertia = 0.5 * (l.inertia + l.inertia.transpose());
    out.position = body.p;
    out.orientation = Quat(body.R).normalized();
    out.shape = l.shape.type == Shape::Type::None ? inertia_box(l.mass, out.inertia) : l.shape;
    b.body(out);
    inertial_of[l.name] = l.inertial;
  }
  auto frame_on = [&](const std::string& link, const Pose& frame) {
    const Pose f = link == tree.world ? frame : inertial_of.at(link).inverse() * frame;
    return Frame{f.p, f.R};
  };
  for (const LinkJoint& j : tree.joints) {
    for (const std::string* end : {&j.parent, &j.child})
      if (*end != tree.world && !inertial_of.count(*end))
        throw ModelError(tree.source + ": " + j.element + " names an unknown link '" + *end + "'");
    if (j.child == tree.world)
      throw ModelError(tree.source + ": " + j.element + " has the world as its child; the world can only be a parent");
    b.joint({j.name, j.type, j.parent == tree.world ? std::string(kGroundName) : j.parent, j.child,
             FramePlacement{frame_on(j.parent, j.on_parent), frame_on(j.child, j.on_child)}});
  }
  try {
    return b.build();
  } catch (const ModelError& e) {
    throw ModelError(tree.source + ": " + e.what());
  }
}

}  // namespace treedyn::importing
