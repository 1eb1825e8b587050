// The spatial kinematics HDCA runs on: the spanning tree's joint coordinates (joint_space.hpp),
// loop-closing joints as absolute constraints (kinematics.hpp) and applied loads (loads.hpp), all
// evaluated in double and handed to the engine in its scalar S (float: the divide-and-conquer
// arithmetic runs in single precision, the kinematics in double).
//
// The engine (hdca_engine.hpp) reads, after place(q): each body's centre of mass and inverse
// inertia; each tree joint's point o, H and D; each loop joint's handle point and velocity-level
// rows. After move(t, V) with the bodies' twists: each tree joint's Hdot' x (Hdot not formed), each
// body's applied load, and each loop joint's Jdot' sigma. PlanarKinematics offers the same in the
// plane.
#pragma once

#include <cassert>
#include <span>
#include <type_traits>
#include <vector>

#include "../common/joint_tree.hpp"
#include "geometry.hpp"
#include "kinematics/principal_inertia.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/parallel.hpp"

namespace treedyn::hdca {

template <class S>
class SpatialKinematics {
 public:
  using Scalar = S;
  static constexpr int Dim = 6;
  using G = Geometry<S, 6>;
  using Vec = typename G::Vec;
  using Point = typename G::Point;
  using Subspace = Eigen::Matrix<S, 6, Eigen::Dynamic, 0, 6, 6>;
  using Rows = dc::JointRows<S, 6>;
  /// In double the engine reads the kinematics' own results; in float, copies rounded to float.
  static constexpr bool kDouble = std::is_same_v<S, double>;

  /// Refers to `model`, `topology` and `external` (may be null), which must outlive it.
  SpatialKinematics(const Model& model, const Topology& topology, const ExternalLoads* external);

  const JointSpace& joints() const { return joints_; }
  /// Every model joint's bodies and row count, for the divide-and-conquer core.
  const std::vector<dc::JointSides>& sides() const { return layout_.sides; }
  /// Index of a model joint among the tree joints, -1 if it closes a loop.
  int tree_index(int joint) const { return layout_.tree_index[static_cast<std::size_t>(joint)]; }

  /// Poses from q: everything the velocity-level solve needs. The joints' rotation matrices (and
  /// H, D) are made in tree order on this thread, their positions in tree order on another behind
  /// it; as each is placed, its child's quaternion (where orientations_read()), its inverse
  /// inertia (and float's copies of its motion) and then after(k) run on `parallel`'s threads
  /// behind both (Parallel::lead_second_and_follow); the loop-closing joints' rows last, on this
  /// thread.
  template <class After>
  void place(const Eigen::Ref<const Eigen::VectorXd>& q, const Parallel& parallel, After&& after) {
    joints_.prepare(motion_);
    const bool orient = orientations_read();
    parallel.lead_second_and_follow(
        static_cast<int>(joints_.tree().size()), [&](int k) { joints_.rotate_joint(k, q, motion_); },
        [&](int k) { joints_.locate_joint(k, q, bodies_, motion_); },
        [&](int k) {
          if (orient) joints_.orient_child(k, bodies_, motion_);
          placed(k);
          after(k);
        });
    place_loop_joints();
  }
  void place(const Eigen::Ref<const Eigen::VectorXd>& q, const Parallel& parallel) {
    place(q, parallel, [](int) {});
  }
  /// A copy of the body's position, in S, made by place(): in double too, as the engine's sweeps
  /// read it four times a right-hand side, 24 bytes a body where the BodyState takes 152.
  const Point& com(int b) const { return com_[static_cast<std::size_t>(b)]; }
  const typename G::InverseInertia& inverse_inertia(int b) const { return inverse_inertia_[static_cast<std::size_t>(b)]; }
  /// The bodies' inertias in their principal axes (constant; hdca's reporter reads them too).
  const std::vector<PrincipalInertia>& principal_inertias() const { return inertia_; }
  /// The joints' motions, which place() and move() make anew in every right-hand side before
  /// anything here reads them: hdca's reporter makes its own in them at output times.
  JointMotions& motions() { return motion_; }
  const Point& tree_point(int k) const {
    if constexpr (kDouble) return motion_[static_cast<std::size_t>(k)].point;
    else return tree_point_[static_cast<std::size_t>(k)];
  }
  // In double a map of the joint's columns in its JointMotions, in float a matrix of its own.
  decltype(auto) H(int k) const {
    if constexpr (kDouble) return motion_.H(k);
    else return H_[static_cast<std::size_t>(k)];
  }
  decltype(auto) D(int k) const {
    if constexpr (kDouble) return motion_.D(k);
    else return D_[static_cast<std::size_t>(k)];
  }
  const Point& loop_point(int j) const { return loop_point_[slot(j)]; }
  /// A loop-closing joint's velocity constraint G_p V_p(o) + G_c V_c(o) = -Phi_t at its handle o.
  const Rows& loop_rows(int j) const { return loop_rows_[slot(j)]; }

  /// The bodies' twists at their centres of mass, at time t: rates and loads.
  void move(double t, std::span<const Vec> V);
  /// Hdot' x of tree joint k into out(0..nv-1), from the twists V given to the last move() (read
  /// there, not in the bodies' 152-byte states: the same numbers), without forming
  /// Hdot: its column c is w x H_c half by half, w the angular velocity of the body the column turns
  /// with (JointSpace::subspace_rate), and (w x h) . y = h . (y x w), so
  /// Hdot_c' x = H_c' [x_lin x w; x_ang x w]: two cross products per body the columns turn with,
  /// where Hdot costs two per column.
  template <class Out>
  void Hdot_transpose_times(int k, const Vec& x, std::span<const Vec> V, Out&& out) const {
    const TreeJoint& t = joints_.tree()[static_cast<std::size_t>(k)];
    auto turned = [&](int body) {  // in double, as the kinematics (in float: x's and w's entries widened, exactly)
      const Vec3 w = body == kGround ? Vec3::Zero() : Vec3(V[static_cast<std::size_t>(body)].template tail<3>().template cast<double>());
      const Vec3 f = x.template head<3>().template cast<double>().cross(w), m = x.template tail<3>().template cast<double>().cross(w);
      // Built from its six entries, not by halves: the columns' dot products read y by pairs,
      // and a pair across two halves just stored waits for them (store forwarding).
      return Vec(S(f.x()), S(f.y()), S(f.z()), S(m.x()), S(m.y()), S(m.z()));
    };
    const unsigned every = (1u << t.nv) - 1u;
    const Vec x_C = t.child_axes != 0 ? turned(t.child) : Vec::Zero();
    const Vec x_P = t.child_axes != every ? turned(t.parent) : Vec::Zero();
    const auto& H_k = H(k);
    for (int c = 0; c < t.nv; ++c) out(c) = H_k.col(c).dot((t.child_axes >> c) & 1u ? x_C : x_P);
  }
  const Vec& applied(int b) const {
    if constexpr (kDouble) return wrenches_[static_cast<std::size_t>(b)];
    else return applied_[static_cast<std::size_t>(b)];
  }
  /// Jdot' sigma of a loop-closing joint on its parent and child, at their centres of mass.
  void loop_rate_loads(int j, const Vec& sigma, Vec& on_parent, Vec& on_child) const;

  /// M V of a body (its momentum at the centre of mass).
  Vec momentum(int b, const Vec& V) const;

  /// qdot = G(q) v, joint by joint on `parallel`'s threads.
  void position_rate(const Eigen::Ref<const Eigen::VectorXd>& q, const Eigen::Ref<const Eigen::VectorXd>& v,
                     Eigen::Ref<Eigen::VectorXd> qdot, const Parallel& parallel) const {
    if (parallel.serial(static_cast<int>(joints_.tree().size()))) return joints_.position_rate(q, v, qdot);
    parallel.for_each(static_cast<int>(joints_.tree().size()), [&](int k) { joints_.position_rate(k, q, v, qdot); });
  }
  double normalize(Eigen::Ref<Eigen::VectorXd> q, double tolerance = 0.0) const { return joints_.normalize(q, tolerance); }
  /// Rotational springs and actuators unwrap their angles against the last move().
  void update_angle_references() { loads_.update_angle_references(bodies_); }
  void restart_angle_references(const SystemState& bodies) { loads_.update_angle_references(bodies); }
  bool measures_angles() const { return loads_.measures_angles(); }

 private:
  /// Whether anything here reads the bodies' quaternions between one place() and the next: the
  /// loop-closing joints' constraints and loads other than gravity (springs' attachment points,
  /// external loads, measured angles). Where nothing does (a tree under gravity alone: most
  /// chains and robots), place() makes none, a seventh of a right-hand side on the 1,024-link
  /// chain: bodies are placed, and their inertias and momenta turned, by rotation matrices
  /// (JointMotions::child_rotation), and the quaternions in bodies_ are left as they were.
  bool orientations_read() const { return !loop_joints_.empty() || !loads_.gravity_only() || loads_.measures_angles(); }
  /// What place() does for tree joint k once it is placed: its child's inverse inertia and
  /// position copy, and in float the joint's point, H and D rounded.
  void placed(int k);
  /// The loop-closing joints' points and velocity-level rows, once every body is placed.
  void place_loop_joints();

  const Model& model_;
  JointSpace joints_;
  jc::JointLayout layout_;
  AppliedLoads loads_;
  std::vector<int> loop_joints_;
  std::vector<int> loop_slot_;  // per model joint: its place in loop_joints_ (and in blocks_, loop_point_, loop_rows_)
  std::size_t slot(int j) const {  // a loop-closing joint's (a tree joint has none: -1)
    assert(loop_slot_[static_cast<std::size_t>(j)] >= 0);
    return static_cast<std::size_t>(loop_slot_[static_cast<std::size_t>(j)]);
  }
  SystemState bodies_;  // positions current after place(); quaternions only where orientations_read()
  JointMotions motion_;
  std::vector<ConstraintBlock> blocks_;  // per loop-closing joint
  std::vector<Vec6> wrenches_;
  bool weights_held_ = false;  // wrenches_ hold the weights alone (AppliedLoads::evaluate_unless_held)
  std::vector<PrincipalInertia> inertia_;  // body frame, in principal axes
  std::vector<Point> loop_point_;
  std::vector<typename G::InverseInertia> inverse_inertia_;
  std::vector<Rows> loop_rows_;
  jc::Rows6 loop_scratch_;  // a loop joint's rows in double before rounding (its G made once, not per pass)
  std::vector<Point> com_;  // the bodies' positions, in S
  // Float only: the results above rounded to float.
  std::vector<Point> tree_point_;
  std::vector<Subspace> H_, D_;
  std::vector<Vec> applied_;
};

}  // namespace treedyn::hdca
