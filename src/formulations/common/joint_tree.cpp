#include "joint_tree.hpp"

namespace treedyn::jc {

JointLayout make_layout(const Model& model, const JointSpace& joints) {
  JointLayout layout;
  layout.sides.resize(model.joints.size());
  layout.tree_index.assign(model.joints.size(), -1);
  for (std::size_t k = 0; k < joints.tree().size(); ++k) {
    const TreeJoint& t = joints.tree()[k];
    if (t.joint < 0) continue;  // virtual free joint: no loads
    layout.tree_index[static_cast<std::size_t>(t.joint)] = static_cast<int>(k);
    layout.sides[static_cast<std::size_t>(t.joint)] = {t.parent, t.child, 6 - t.nv};
  }
  for (std::size_t j = 0; j < model.joints.size(); ++j)
    if (layout.tree_index[j] < 0) {
      const Joint& joint = model.joints[j];
      layout.sides[j] = {joint.parent, joint.child, joint_constraint_count(joint.type)};
    }
  return layout;
}

void handle_points(const Model& model, const JointLayout& layout, const std::vector<JointMotion>& motion,
                   const SystemState& bodies, std::vector<Vec3>& points) {
  points.resize(model.joints.size());
  for (std::size_t j = 0; j < model.joints.size(); ++j) {
    const int k = layout.tree_index[j];
    if (k >= 0) {
      points[j] = motion[static_cast<std::size_t>(k)].point;
    } else {
      const Joint& joint = model.joints[j];
      const BodyState& C = state_of(bodies, joint.child);
      points[j] = C.r + C.q * joint.child_frame.origin;
    }
  }
}

template <class S>
void body_mobility(S inverse_mass, const Mat3T<S>& J_inverse, std::span<const Vec3T<S>> l,
                   typename dc::HandleTree<S, 6>::Node& leaf) {
  // S(l_h)' M^-1 S(l_k) = [I/m - L_h Ji L_k, -L_h Ji; Ji L_k, Ji]  with L = skew(l), Ji = J^-1.
  // The skew products are cross products (27 flops where a 3x3 product takes 45): P_h = L_h Ji has
  // columns l_h x Ji(:, j); Ji L_k = -P_k' (Ji symmetric, L skew); row i of -P_h L_k is
  // l_k x P_h(i, :). The diagonal blocks first, then the others from their P's.
  using V3 = Vec3T<S>;
  const int h = leaf.size();
  for (int a = 0; a < h; ++a) {
    const V3& la = l[static_cast<std::size_t>(a)];
    Mat3T<S> P;
    for (int j = 0; j < 3; ++j) P.col(j) = la.cross(V3(J_inverse.col(j)));
    auto& K = leaf.k(a, a);
    for (int i = 0; i < 3; ++i) K.template block<1, 3>(i, 0) = la.cross(V3(P.row(i).transpose())).transpose();
    K.template topLeftCorner<3, 3>().diagonal().array() += inverse_mass;
    K.template topRightCorner<3, 3>() = -P;
    K.template bottomLeftCorner<3, 3>() = -P.transpose();
    K.template bottomRightCorner<3, 3>() = J_inverse;
  }
  for (int a = 0; a < h; ++a)
    for (int c = a + 1; c < h; ++c) {
      const auto& K_aa = leaf.k(a, a);
      const V3& lc = l[static_cast<std::size_t>(c)];
      auto& K = leaf.k(a, c);
      for (int i = 0; i < 3; ++i)  // -P_a = K_aa's top right
        K.template block<1, 3>(i, 0) = -lc.cross(V3(K_aa.template block<1, 3>(i, 3).transpose())).transpose();
      K.template topLeftCorner<3, 3>().diagonal().array() += inverse_mass;
      K.template topRightCorner<3, 3>() = K_aa.template topRightCorner<3, 3>();
      K.template bottomLeftCorner<3, 3>() = leaf.k(c, c).template bottomLeftCorner<3, 3>();
      K.template bottomRightCorner<3, 3>() = J_inverse;
      leaf.k(c, a) = K.transpose();
    }
}

template void body_mobility<double>(double, const Mat3&, std::span<const Vec3>, dc::HandleTree<double, 6>::Node&);
template void body_mobility<float>(float, const Mat3T<float>&, std::span<const Vec3T<float>>, dc::HandleTree<float, 6>::Node&);

void tree_rows(const JointMotion& motion, const Vec6& bias, Rows6& rows) {
  const int n = static_cast<int>(motion.D.cols());
  rows.set_tree_rows(motion.D);
  subspace_project(motion.D, n, bias, rows.r);
}

void loop_rows(const ConstraintBlock& block, const Vec3& point, const BodyState& P, const BodyState& C,
               const ConstraintVector& rhs, bool acceleration, Rows6& rows) {
  const int n = block.size();
  rows.reset(n);
  rows.r.head(n) = rhs;
  auto side = [&](const ConstraintRows& J, const BodyState& body, bool grounded, Rows6::RowsMat& G) {
    if (grounded) return;
    const Vec3 l = point - body.r;
    G.topLeftCorner(n, 3) = J.leftCols<3>();
    G.topRightCorner(n, 3).noalias() = J.leftCols<3>() * skew(l);
    G.topRightCorner(n, 3) += J.rightCols<3>();
    if (acceleration) rows.r.head(n).noalias() += J.leftCols<3>() * body.w.cross(body.w.cross(l));
  };
  side(block.J_P, P, block.parent == kGround, rows.G_p);
  side(block.J_C, C, block.child == kGround, rows.G_c);
}

}  // namespace treedyn::jc
