// Planar kinematics for HDCA (paper 004, Sect. 2): bodies moving in the global xy plane, revolute
// joints about z and prismatic joints along in-plane axes, every quantity in the scalar S
// (single precision as on paper 004's FPGA). Planar vectors are [x; y; angular].
//
// A body's pose is its centre of mass r (2-D) and its angle theta about z. For a tree joint with
// parent frame (origin s_P, angle phi_P, z axis sign sigma = +-1) and child frame (s_C, phi_C):
//   revolute:  theta_C = theta_P + phi_P + sigma q - phi_C,   o = r_P + R(theta_P) s_P,
//              H = [0; 0; sigma],          D = [e_x, e_y]                      (paper 004, Eq. 8)
//   prismatic: theta_C = theta_P + c,      o = r_P + R(theta_P) (s_P + q a_P),
//              H = [R(theta_P) a_P; 0],    D = [Omega R(theta_P) a_P; 0], [0; 0; 1]
// and r_C = o - R(theta_C) s_C. These are the spatial joint coordinates of joint_space.hpp for the
// same joints (a revolute's angle about its parent frame's z), so both describe one state.
// Loop-closing joints must be revolute: Phi = o_C - o_P (2 rows), o_C the child frame origin.
//
// Same interface as SpatialKinematics (see there). The model must be planar; the constructor
// says which item is not.
#pragma once

#include <cassert>
#include <span>
#include <vector>

#include "geometry.hpp"
#include "treedyn/joint_space.hpp"
#include "treedyn/loads.hpp"
#include "treedyn/parallel.hpp"

namespace treedyn::hdca {

template <class S>
class PlanarKinematics {
 public:
  using Scalar = S;
  static constexpr int Dim = 3;
  using G = Geometry<S, 3>;
  using Vec = typename G::Vec;
  using Point = typename G::Point;
  using Subspace = Eigen::Matrix<S, 3, Eigen::Dynamic, 0, 3, 3>;
  using Rows = dc::JointRows<S, 3>;

  /// Throws std::invalid_argument naming the first item that is not planar or not supported.
  /// Refers to `model`, `topology` and `external` (may be null), which must outlive it.
  PlanarKinematics(const Model& model, const Topology& topology, const ExternalLoads* external);

  const JointSpace& joints() const { return joints_; }
  const std::vector<dc::JointSides>& sides() const { return sides_; }
  int tree_index(int joint) const { return tree_index_[static_cast<std::size_t>(joint)]; }

  /// Poses from q, serial (a few operations a body: the planar inertias do not turn); the
  /// Parallel is SpatialKinematics' interface.
  void place(const Eigen::Ref<const Eigen::VectorXd>& q, const Parallel&);
  /// The same, then after(k) for every tree joint k on `parallel`'s threads (SpatialKinematics'
  /// interface: there the threads follow the placing one).
  template <class After>
  void place(const Eigen::Ref<const Eigen::VectorXd>& q, const Parallel& parallel, After&& after) {
    place(q, parallel);
    parallel.for_each(static_cast<int>(joints_.tree().size()), after);
  }
  const Point& com(int b) const { return r_[static_cast<std::size_t>(b)]; }
  const typename G::InverseInertia& inverse_inertia(int b) const { return inverse_inertia_[static_cast<std::size_t>(b)]; }
  const Point& tree_point(int k) const { return tree_point_[static_cast<std::size_t>(k)]; }
  const Subspace& H(int k) const { return H_[static_cast<std::size_t>(k)]; }
  const Subspace& D(int k) const { return D_[static_cast<std::size_t>(k)]; }
  const Point& loop_point(int j) const { return loop_point_[slot(j)]; }
  const Rows& loop_rows(int j) const { return loop_rows_[slot(j)]; }

  void move(double t, std::span<const Vec> V);
  /// Hdot' x of tree joint k into out(0..nv-1) (SpatialKinematics' interface; the twists are
  /// not read: move() made Hdot).
  template <class Out>
  void Hdot_transpose_times(int k, const Vec& x, std::span<const Vec>, Out&& out) const {
    const Subspace& Hdot = Hdot_[static_cast<std::size_t>(k)];
    for (Eigen::Index c = 0; c < Hdot.cols(); ++c) out(c) = Hdot.col(c).dot(x);
  }
  const Vec& applied(int b) const { return applied_[static_cast<std::size_t>(b)]; }
  void loop_rate_loads(int j, const Vec& sigma, Vec& on_parent, Vec& on_child) const;

  Vec momentum(int b, const Vec& V) const;

  void position_rate(const Eigen::Ref<const Eigen::VectorXd>&, const Eigen::Ref<const Eigen::VectorXd>& v,
                     Eigen::Ref<Eigen::VectorXd> qdot, const Parallel&) const {
    qdot = v;  // one coordinate per joint, its rate
  }
  double normalize(Eigen::Ref<Eigen::VectorXd>, double = 0.0) const { return 0.0; }
  void update_angle_references() { loads_.update_angle_references(bodies_); }
  void restart_angle_references(const SystemState& bodies) { loads_.update_angle_references(bodies); }
  bool measures_angles() const { return loads_.measures_angles(); }

 private:
  struct TreeGeometry {  // a tree joint's frames in the plane
    Point s_P = Point::Zero(), s_C = Point::Zero(), a_P = Point::Zero();
    S phi_P = S(0), phi_C = S(0), sign = S(1), c = S(0);
    bool revolute = true;
  };
  struct LoopGeometry {  // a loop-closing revolute joint
    Point s_P = Point::Zero(), s_C = Point::Zero();
  };
  static Point rotate(S angle, const Point& x);
  void check_planar(const Model& model, const Topology& topology) const;

  const Model& model_;
  JointSpace joints_;
  AppliedLoads loads_;
  std::vector<dc::JointSides> sides_;
  std::vector<int> tree_index_, loop_joints_;
  std::vector<int> loop_slot_;  // per model joint: its place in loop_joints_ (and in loop_geometry_, loop_point_, loop_rows_)
  std::size_t slot(int j) const {  // a loop-closing joint's (a tree joint has none: -1)
    assert(loop_slot_[static_cast<std::size_t>(j)] >= 0);
    return static_cast<std::size_t>(loop_slot_[static_cast<std::size_t>(j)]);
  }
  std::vector<TreeGeometry> tree_geometry_;
  std::vector<LoopGeometry> loop_geometry_;  // per loop-closing joint
  std::vector<double> z_;                    // each body's constant height
  std::vector<S> mass_, J_;
  std::vector<Point> r_, tree_point_, loop_point_;
  std::vector<S> theta_;
  std::vector<typename G::InverseInertia> inverse_inertia_;
  std::vector<Subspace> H_, D_, Hdot_;
  std::vector<Rows> loop_rows_;
  std::vector<Vec> applied_, V_;
  SystemState bodies_;  // the 3-D states the applied loads are evaluated on (double)
  std::vector<Vec6> wrenches_;
};

}  // namespace treedyn::hdca
