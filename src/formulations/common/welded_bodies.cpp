#include "welded_bodies.hpp"

namespace treedyn::jc {
namespace {

/// x_a = R x_b + p: body b's coordinates into body a's (both about their centres of mass).
struct Placement {
  Mat3 R = Mat3::Identity();
  Vec3 p = Vec3::Zero();
  Placement then(const Placement& inner) const { return {R * inner.R, R * inner.p + p}; }
  Placement inverse() const { return {R.transpose(), -(R.transpose() * p)}; }
};

/// The child's coordinates into the parent's across a weld: its two frames coincide, so
/// x_parent = F_p F_c^-1 x_child (F_p, F_c: the frames on the parent and the child).
Placement across(const Joint& weld) {
  const Mat3 R = weld.parent_frame.rotation * weld.child_frame.rotation.transpose();
  return {R, weld.parent_frame.origin - R * weld.child_frame.origin};
}

}  // namespace

WeldedBodies::WeldedBodies(const Model& model, const Topology& topology, bool merge)
    : body_count_(model.body_count()), joint_count_(model.joint_count()) {
  if (!merge) return;
  const auto n = static_cast<std::size_t>(model.body_count());
  std::vector<int> root(n);
  std::vector<Placement> in_root(n);  // each body in its composite root's frame
  for (std::size_t b = 0; b < n; ++b) root[b] = static_cast<int>(b);
  std::vector<char> merged(model.joints.size(), 0);
  std::vector<Weld> welds;
  for (int j : topology.tree_joints()) {  // ground side first: a weld's tree parent is placed before its child
    const Joint& joint = model.joints[static_cast<std::size_t>(j)];
    if (joint.type != JointType::Fixed) continue;
    const bool downward = topology.tree_joint_of(joint.child) == j;  // the model's parent is the tree parent
    const int parent = downward ? joint.parent : joint.child, child = downward ? joint.child : joint.parent;
    const auto c = static_cast<std::size_t>(child);
    if (parent == kGround) {
      root[c] = kGround;
    } else {
      const auto p = static_cast<std::size_t>(parent);
      root[c] = root[p];  // kGround where the parent is static
      in_root[c] = in_root[p].then(downward ? across(joint) : across(joint).inverse());
    }
    merged[static_cast<std::size_t>(j)] = 1;
    welds.push_back({j, parent, child});
  }
  if (welds.empty()) return;

  std::vector<int> of(n, -1), roots, static_bodies;
  for (std::size_t b = 0; b < n; ++b)
    if (root[b] == static_cast<int>(b)) {
      of[b] = static_cast<int>(roots.size());
      roots.push_back(static_cast<int>(b));
    }
  if (roots.empty()) return;  // every body static: nothing left to solve for
  for (std::size_t b = 0; b < n; ++b) {
    if (root[b] == kGround) static_bodies.push_back(static_cast<int>(b));
    of[b] = root[b] == kGround ? kGround : of[static_cast<std::size_t>(root[b])];
  }

  Model contracted;
  contracted.name = model.name;
  std::vector<int> kept, kept_index(model.joints.size(), -1);
  for (int j = 0; j < model.joint_count(); ++j) {
    if (merged[static_cast<std::size_t>(j)]) continue;
    Joint joint = model.joints[static_cast<std::size_t>(j)];  // its frames are the model's: only its bodies are read
    if (joint.parent != kGround) joint.parent = of[static_cast<std::size_t>(joint.parent)];
    joint.child = of[static_cast<std::size_t>(joint.child)];  // a model joint's child is a body
    // A loop closed across welded bodies (or static ones), or a joint whose child is static (the
    // core's sides keep ground a joint's parent): merge nothing.
    if (joint.parent == joint.child || joint.child == kGround) return;
    contracted.joints.push_back(std::move(joint));
    kept_index[static_cast<std::size_t>(j)] = static_cast<int>(kept.size());
    kept.push_back(j);
  }

  const std::size_t count = roots.size();
  member_offset_.assign(count + 1, 0);
  for (std::size_t b = 0; b < n; ++b)
    if (of[b] != kGround) ++member_offset_[static_cast<std::size_t>(of[b]) + 1];
  for (std::size_t c = 0; c < count; ++c) member_offset_[c + 1] += member_offset_[c];
  members_.resize(n - static_bodies.size());
  std::vector<int> filled(member_offset_.begin(), member_offset_.end() - 1);
  for (std::size_t b = 0; b < n; ++b)
    if (of[b] != kGround) members_[static_cast<std::size_t>(filled[static_cast<std::size_t>(of[b])]++)] = static_cast<int>(b);

  // Mass, centre of mass and inertia about it in the root's frame (parallel axes).
  centre_.assign(count, Vec3::Zero());
  contracted.bodies.resize(count);
  for (std::size_t c = 0; c < count; ++c) {
    Body& composite = contracted.bodies[c];
    composite.name = model.bodies[static_cast<std::size_t>(roots[c])].name;
    for (int b : members(static_cast<int>(c))) {
      const double m = model.bodies[static_cast<std::size_t>(b)].mass;
      composite.mass += m;
      centre_[c] += m * in_root[static_cast<std::size_t>(b)].p;
    }
    centre_[c] /= composite.mass;
    for (int b : members(static_cast<int>(c))) {
      const Body& body = model.bodies[static_cast<std::size_t>(b)];
      const Placement& X = in_root[static_cast<std::size_t>(b)];
      const Vec3 d = X.p - centre_[c];
      composite.inertia += X.R * body.inertia * X.R.transpose() + body.mass * (d.squaredNorm() * Mat3::Identity() - d * d.transpose());
    }
    inertia_.emplace_back(composite.inertia);
  }

  // Children before parents: the spanning tree's order reversed.
  welds_.assign(welds.rbegin(), welds.rend());
  of_ = std::move(of);
  static_ = std::move(static_bodies);
  root_ = std::move(roots);
  kept_ = std::move(kept);
  kept_index_ = std::move(kept_index);
  contracted_ = std::move(contracted);
}

std::vector<int> WeldedBodies::root_tree_joints(const JointSpace& joints) const {
  std::vector<int> placing(static_cast<std::size_t>(count()), -1);
  if (!any()) return placing;
  for (std::size_t k = 0; k < joints.tree().size(); ++k) {
    const int child = joints.tree()[k].child, g = of(child);
    if (g != kGround && root(g) == child) placing[static_cast<std::size_t>(g)] = static_cast<int>(k);
  }
  return placing;
}

std::vector<dc::JointSides> WeldedBodies::core_sides(const std::vector<dc::JointSides>& sides) const {
  if (!any()) return sides;
  std::vector<dc::JointSides> kept;
  kept.reserve(kept_.size());
  for (int j : kept_) {
    dc::JointSides s = sides[static_cast<std::size_t>(j)];
    if (s.body_p != kGround) s.body_p = of(s.body_p);
    if (s.body_c != kGround) s.body_c = of(s.body_c);
    kept.push_back(s);
  }
  return kept;
}

WeldedTree::WeldedTree(const WeldedBodies& welded, const AssemblyTree& model_tree, int threads) : model_tree_(model_tree) {
  if (!welded.any()) return;
  topology_.emplace(welded.contracted(), RankMethod::None);
  tree_.emplace(welded.contracted(), *topology_, threads);
}

}  // namespace treedyn::jc
