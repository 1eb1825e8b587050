// treedyn — a body's rotational inertia held in its principal axes, for the per-evaluation
// global inverse and gyroscopic product of the divide-and-conquer formulations.
#pragma once

#include <vector>

#include "treedyn/model.hpp"
#include "treedyn/spatial.hpp"

namespace treedyn {

/// J_body = R(q_p) diag(d) R(q_p)': the principal moments d and the rotation q_p from the principal
/// axes to the body frame (MuJoCo's body_inertia and body_iquat hold the same). With A_p = A R(q_p)
/// (the principal axes in the global frame, A the body's rotation), the global inverse
/// J^-1 = A J_body^-1 A' = A_p diag(1/d) A_p' is one symmetric product (six entries, mirrored,
/// where A J_body^-1 A' costs two full 3 x 3 products) and J w = A_p (d o (A_p' w)). An inertia
/// diagonal in its body frame (the generated models', most imported links) keeps q_p = 1 and
/// A_p = A bit for bit, with no decomposition; any other is decomposed once, here.
/// A value type: it holds no reference.
class PrincipalInertia {
 public:
  PrincipalInertia() = default;
  /// J_body: finite, positive definite; its symmetric part is used (the model's validation allows
  /// an asymmetry of 1e-9 relative). Throws std::invalid_argument otherwise.
  explicit PrincipalInertia(const Mat3& J_body);

  /// A_p for the body's orientation q (unit).
  Mat3 axes(const Quat& q) const { return aligned_ ? q.toRotationMatrix() : (q * q_p_).toRotationMatrix(); }
  /// A_p for the body's rotation matrix A (orthonormal): A itself where aligned (no quaternion).
  Mat3 axes(const Mat3& A) const { return aligned_ ? A : Mat3(A * q_p_.toRotationMatrix()); }
  /// J^-1 in the frame whose principal axes are A_p's columns; symmetric to the last bit.
  Mat3 inverse(const Mat3& A_p) const {
    const Mat3 T = A_p * d_inverse_.asDiagonal();  // column k scaled by 1 / d_k
    Mat3 J_inverse;
    for (int i = 0; i < 3; ++i)
      for (int j = i; j < 3; ++j) J_inverse(j, i) = J_inverse(i, j) = T.row(i).dot(A_p.row(j));
    return J_inverse;
  }
  /// J w in the same frame.
  Vec3 times(const Mat3& A_p, const Vec3& w) const { return A_p * d_.cwiseProduct(A_p.transpose() * w); }

  const Vec3& moments() const { return d_; }
  const Quat& rotation() const { return q_p_; }
  bool aligned() const { return aligned_; }

 private:
  Vec3 d_ = Vec3::Ones(), d_inverse_ = Vec3::Ones();
  Quat q_p_ = Quat::Identity();
  bool aligned_ = true;
};

/// Every body's, in body order; a ModelError names a body whose inertia is not positive definite.
std::vector<PrincipalInertia> principal_inertias(const Model& model);

}  // namespace treedyn
