#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <random>

#include "support.hpp"
#include "treedyn/generators.hpp"
#include "treedyn/model_builder.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/topology.hpp"

using namespace treedyn;

namespace {

/// Structural invariants every assembly tree must satisfy.
void expect_valid(const Model& m, const AssemblyTree& tree) {
  std::vector<int> eliminated_at(m.joints.size(), -1);
  for (int id = 0; id < static_cast<int>(tree.nodes().size()); ++id) {
    const AssemblyNode& n = tree.node(id);
    if (n.is_leaf()) {
      EXPECT_EQ(tree.bodies(id), std::vector<int>{n.body});
      EXPECT_TRUE(tree.contains(id, n.body));
      EXPECT_FALSE(tree.contains(id, kGround));
      continue;
    }
    // A subtree's ids run from `first` to its own (post-order): its bodies are its children's.
    std::vector<int> bodies = tree.bodies(n.left);
    const std::vector<int> right = tree.bodies(n.right);
    bodies.insert(bodies.end(), right.begin(), right.end());
    std::sort(bodies.begin(), bodies.end());
    EXPECT_EQ(bodies, tree.bodies(id));
    for (int b = 0; b < m.body_count(); ++b) EXPECT_EQ(tree.contains(id, b), std::binary_search(bodies.begin(), bodies.end(), b));
    EXPECT_EQ(n.height, 1 + std::max(tree.node(n.left).height, tree.node(n.right).height));
    for (int j : n.eliminated()) {
      EXPECT_EQ(eliminated_at[static_cast<std::size_t>(j)], -1) << "joint eliminated twice";
      eliminated_at[static_cast<std::size_t>(j)] = id;
      const Joint& joint = m.joints[static_cast<std::size_t>(j)];
      const std::vector<int> L = tree.bodies(n.left), R = tree.bodies(n.right);
      auto in = [](const std::vector<int>& v, int b) { return std::binary_search(v.begin(), v.end(), b); };
      if (joint.parent == kGround || joint.child == kGround) {  // one-sided, just above its body's leaf
        const int body = joint.parent == kGround ? joint.child : joint.parent;
        EXPECT_EQ(tree.node(tree.leaf_of(body)).parent, id) << joint.name;
      } else {
        EXPECT_TRUE((in(L, joint.parent) && in(R, joint.child)) || (in(R, joint.parent) && in(L, joint.child)));
      }
    }
    for (int j : n.handles())  // an inner node carries no joint to ground
      EXPECT_TRUE(m.joints[static_cast<std::size_t>(j)].parent != kGround && m.joints[static_cast<std::size_t>(j)].child != kGround)
          << m.joints[static_cast<std::size_t>(j)].name;
  }
  for (std::size_t j = 0; j < m.joints.size(); ++j) {
    const bool to_ground = m.joints[j].parent == kGround || m.joints[j].child == kGround;
    if (to_ground && tree.node(tree.root()).is_leaf()) {  // a one-body model: the base connection's
      const auto& root_handles = tree.node(tree.root()).handles();
      EXPECT_TRUE(std::find(root_handles.begin(), root_handles.end(), static_cast<int>(j)) != root_handles.end());
    } else {
      EXPECT_NE(eliminated_at[j], -1) << "joint " << m.joints[j].name << " never eliminated";
    }
  }
  std::size_t listed = 0;
  for (const auto& level : tree.levels()) listed += level.size();
  EXPECT_EQ(listed, tree.nodes().size());
}

}  // namespace

// A topology of another model is refused with both body counts, not read past its lists.
TEST(AssemblyTree, ATopologyOfAnotherModelIsRefused) {
  const Model small = make_chain(3, JointType::Revolute), large = make_chain(5, JointType::Revolute);
  const Topology other(small);
  try {
    AssemblyTree tree(large, other);
    FAIL() << "accepted a topology of 3 bodies for a model of 5";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the topology is of another model (3 bodies; the model has 5)"), std::string::npos)
        << e.what();
  }
}

TEST(AssemblyTree, ChainOfNBodiesHasHeightCeilLog2N) {
  for (int n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 100, 128, 129, 1024}) {
    const Model m = make_chain(n, JointType::Spherical);
    const AssemblyTree tree(m, Topology(m));
    EXPECT_EQ(tree.height(), static_cast<int>(std::ceil(std::log2(n)))) << n;
    EXPECT_LE(tree.max_handles(), 2) << n;
    expect_valid(m, tree);
  }
}

TEST(AssemblyTree, FourLinkChainIsDrawnAsExpected) {
  const Model m = make_chain(4, JointType::Revolute);
  const AssemblyTree tree(m, Topology(m));
  EXPECT_EQ(tree.to_ascii(m),
            "(joint3)\n"
            "├── (joint1,joint2) handles joint3\n"
            "│   ├── link1\n"
            "│   └── link2\n"
            "└── (joint4) handles joint3\n"
            "    ├── link3\n"
            "    └── link4\n");
}

TEST(AssemblyTree, FourBarClosesItsLoopAtTheRoot) {
  const Model m = read_model_file(test::model_path("four_bar"));
  const AssemblyTree tree(m, Topology(m));
  EXPECT_EQ(tree.to_ascii(m),
            "(joint3,joint4)\n"
            "├── (joint1,joint2) handles joint3\n"
            "│   ├── A\n"
            "│   └── B\n"
            "└── C\n");
  expect_valid(m, tree);
}

TEST(AssemblyTree, LoopsAndCoupledLoopsGiveValidTrees) {
  for (const char* name : {"loop4", "loop8", "double_loop8", "slider_crank", "four_link"}) {
    SCOPED_TRACE(name);
    const Model m = read_model_file(test::model_path(name));
    const AssemblyTree tree(m, Topology(m));
    expect_valid(m, tree);
    // Balanced halves give ceil(log2 n) levels; a split at one joint into unequal parts may take
    // up to two more where it carries fewer handles (double_loop8 takes one).
    const int balanced = static_cast<int>(std::ceil(std::log2(m.body_count())));
    EXPECT_GE(tree.height(), balanced);
    EXPECT_LE(tree.height(), balanced + 2);
  }
}

// A robot's branched tree (MuJoCo's humanoid's shape: a torso with a head, two three-link arms
// and a waist, pelvis and two three-link legs below it). Halves of a breadth-first order cut it
// at several joints at once (the root node eliminated both hips and an elbow together, in the
// general several-joint kernel); split at single joints, every inner node eliminates one joint,
// within two levels of the balanced height.
TEST(AssemblyTree, ABranchedTreeIsSplitAtSingleJoints) {
  ModelBuilder b("humanoid_shape");
  auto body = [&](const std::string& name, const Vec3& at) {
    Body x;
    x.name = name;
    x.mass = 1.0;
    x.inertia = Mat3::Identity();
    x.position = at;
    b.body(x);
  };
  body("torso", {0, 0, 1.4});
  b.joint(JointSpec::at("root", JointType::Free, "ground", "torso", {0, 0, 1.4}));
  auto limb = [&](const std::string& side, const std::string& from, const Vec3& start, const Vec3& step,
                  const std::vector<JointType>& joints) {
    std::string parent = from;
    for (std::size_t k = 0; k < joints.size(); ++k) {
      const std::string name = side + std::to_string(k);
      const Vec3 at = start + (static_cast<double>(k) + 0.5) * step;
      body(name, at);
      const std::optional<Vec3> axis2 = joints[k] == JointType::Universal ? std::optional<Vec3>(Vec3::UnitX()) : std::nullopt;
      b.joint(JointSpec::at(name + "_joint", joints[k], parent, name, start + static_cast<double>(k) * step, Vec3::UnitZ(), axis2));
      parent = name;
    }
  };
  limb("head", "torso", {0, 0, 1.6}, {0, 0, 0.2}, {JointType::Fixed});
  limb("waist", "torso", {0, 0, 1.3}, {0, 0, -0.15}, {JointType::Universal, JointType::Revolute});  // waist, pelvis
  for (const char* side : {"r", "l"}) {
    const double y = side[0] == 'r' ? -0.1 : 0.1;
    limb(std::string(side) + "_arm", "torso", {0, 3 * y, 1.45}, {0.1, 0, 0}, {JointType::Universal, JointType::Revolute, JointType::Fixed});
    limb(std::string(side) + "_leg", "waist1", {0, y, 1.0}, {0, 0, -0.3}, {JointType::Spherical, JointType::Revolute, JointType::Universal});
  }
  const Model m = std::move(b).build();
  ASSERT_EQ(m.body_count(), 16);
  const AssemblyTree tree(m, Topology(m));
  expect_valid(m, tree);
  for (int id = 0; id < static_cast<int>(tree.nodes().size()); ++id) {
    const AssemblyNode& n = tree.node(id);
    if (n.is_leaf()) continue;
    const auto joined = std::count_if(n.eliminated().begin(), n.eliminated().end(), [&](int j) {
      return m.joints[static_cast<std::size_t>(j)].parent != kGround && m.joints[static_cast<std::size_t>(j)].child != kGround;
    });
    EXPECT_EQ(joined, 1) << "node " << id << " joins its children at " << joined << " joints";
  }
  EXPECT_LE(tree.height(), 4 + 2);
}

// Scrambled numbering: the tree must not rely on bodies being listed in chain order
// ("so we don't get the right answer by luck").
TEST(AssemblyTree, ScrambledChainNumberingStillGivesALogarithmicTwoHandleTree) {
  const Model chain = make_chain(37, JointType::Spherical);
  std::vector<int> perm(37);
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(42));
  Model m = chain;
  for (int i = 0; i < 37; ++i) m.bodies[static_cast<std::size_t>(perm[static_cast<std::size_t>(i)])] = chain.bodies[static_cast<std::size_t>(i)];
  for (auto& j : m.joints) {
    if (j.parent != kGround) j.parent = perm[static_cast<std::size_t>(j.parent)];
    j.child = perm[static_cast<std::size_t>(j.child)];
  }
  std::shuffle(m.joints.begin(), m.joints.end(), std::mt19937(7));
  const AssemblyTree tree(m, Topology(m));
  expect_valid(m, tree);
  EXPECT_EQ(tree.height(), 6);
  EXPECT_LE(tree.max_handles(), 2);
}

// A ladder of N coupled four-bars has N + 1 ground pivots. Eliminated just above their bodies'
// leaves, they do not ride up the tree: every node keeps a few handles whatever N (carried to the
// root, they made its base connection a dense system of 5 (N + 1) rows, and the step cubic in N).
TEST(AssemblyTree, ALaddersGroundPivotsStayLowAndItsNodesKeepFewHandles) {
  for (int n : {1, 4, 40, 400}) {
    const Model m = make_ladder(n);
    const AssemblyTree tree(m, Topology(m));
    expect_valid(m, tree);
    EXPECT_LE(tree.max_handles(), 4) << n;
    EXPECT_TRUE(tree.node(tree.root()).handles().empty()) << n;
    EXPECT_LE(tree.height(), static_cast<int>(std::ceil(std::log2(m.body_count()))) + 1) << n;
  }
}

// The nodes are numbered in post-order, so that the passes, which visit each subtree in
// post-order, read the nodes' records (here and in the formulations' trees) in address order:
// walking the tree children first, left before right, meets ids 0, 1, 2, ..., the root last, and
// every subtree the passes are given is a run of consecutive ids.
TEST(AssemblyTree, NodesAreNumberedInPostOrderSoEverySubtreeIsARunOfIds) {
  for (const Model& m : {make_chain(37, JointType::Spherical), make_ladder(40), read_model_file(test::model_path("double_loop8"))}) {
    for (int threads : {1, 2, 3}) {
      SCOPED_TRACE(m.name + ", " + std::to_string(threads) + " thread(s)");
      const AssemblyTree tree(m, Topology(m), threads);
      expect_valid(m, tree);
      ASSERT_EQ(tree.root(), static_cast<int>(tree.nodes().size()) - 1);
      EXPECT_EQ(tree.node(tree.root()).parent, -1);
      int next = 0;
      std::function<void(int)> walk = [&](int id) {
        const AssemblyNode& n = tree.node(id);
        if (!n.is_leaf()) {
          EXPECT_EQ(tree.node(n.left).parent, id);
          EXPECT_EQ(tree.node(n.right).parent, id);
          walk(n.left);
          walk(n.right);
        }
        EXPECT_EQ(id, next++);
      };
      walk(tree.root());
      for (int b = 0; b < m.body_count(); ++b) EXPECT_EQ(tree.node(tree.leaf_of(b)).body, b);
      for (const auto& subtree : tree.subtrees())
        for (std::size_t k = 1; k < subtree.size(); ++k) EXPECT_EQ(subtree[k], subtree[0] + static_cast<int>(k));
    }
  }
}

// A node of at most 64 bodies keeps, of the halves of a breadth-first order from each of its
// bodies, one with the lowest score (the most handles of either half, then their total). The
// search stops once a split reaches the score no split can go below (AssemblyTree::build); were
// that bound wrong, a skipped start would beat the node's split here. Random trees with branches
// and loops, the candidates recomputed from the joints alone.
TEST(AssemblyTree, SmallNodesKeepASplitNoBreadthFirstHalvesBeat) {
  std::mt19937 random(5);
  for (int trial = 0; trial < 60; ++trial) {
    const int n = 3 + static_cast<int>(random() % 40);
    Model m = make_chain(n, JointType::Spherical);
    for (int c = 1; c < n; ++c)  // branches: a parent among the earlier bodies
      if (random() % 2 == 0) m.joints[static_cast<std::size_t>(c)].parent = static_cast<int>(random() % static_cast<unsigned>(c));
    for (int k = static_cast<int>(random() % 4); k > 0; --k) {  // loops between two bodies
      Joint loop = m.joints[1];
      loop.name = "loop" + std::to_string(k);
      loop.parent = static_cast<int>(random() % static_cast<unsigned>(n));
      do loop.child = static_cast<int>(random() % static_cast<unsigned>(n));
      while (loop.child == loop.parent);
      m.joints.push_back(loop);
    }
    SCOPED_TRACE("trial " + std::to_string(trial) + ", " + std::to_string(n) + " bodies");
    const AssemblyTree tree(m, Topology(m));
    expect_valid(m, tree);
    std::vector<std::vector<int>> neighbours(static_cast<std::size_t>(n));
    for (const Joint& j : m.joints)
      if (j.parent != kGround) {
        neighbours[static_cast<std::size_t>(j.parent)].push_back(j.child);
        neighbours[static_cast<std::size_t>(j.child)].push_back(j.parent);
      }
    auto handles = [&](const std::vector<int>& part) {  // joints, not to ground, with one end in the part
      int count = 0;
      for (const Joint& j : m.joints) {
        const bool p = std::count(part.begin(), part.end(), j.parent) > 0, c = std::count(part.begin(), part.end(), j.child) > 0;
        if (j.parent != kGround && p != c) ++count;
      }
      return count;
    };
    auto score = [&](const std::vector<int>& a, const std::vector<int>& b) {
      return std::pair<int, int>{std::max(handles(a), handles(b)), handles(a) + handles(b)};
    };
    for (int id = 0; id < static_cast<int>(tree.nodes().size()); ++id) {
      const AssemblyNode& node = tree.node(id);
      const std::vector<int> bodies = tree.bodies(id);
      if (node.is_leaf() || bodies.size() > 64) continue;
      const std::pair<int, int> kept = score(tree.bodies(node.left), tree.bodies(node.right));
      for (int start : bodies) {
        std::vector<int> order{start};  // breadth-first inside the node's bodies
        for (std::size_t k = 0; k < order.size(); ++k)
          for (int b : neighbours[static_cast<std::size_t>(order[k])])
            if (std::binary_search(bodies.begin(), bodies.end(), b) && std::count(order.begin(), order.end(), b) == 0)
              order.push_back(b);
        if (order.size() != bodies.size()) break;  // not connected: its components' order is the tree's own
        const auto half = order.begin() + static_cast<std::ptrdiff_t>((order.size() + 1) / 2);
        EXPECT_LE(kept, score({order.begin(), half}, {half, order.end()})) << "node " << id << ", start " << start;
      }
    }
  }
}
