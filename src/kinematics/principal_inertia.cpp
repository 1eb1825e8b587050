#include "principal_inertia.hpp"

#include <Eigen/Eigenvalues>
#include <stdexcept>

#include "treedyn/errors.hpp"

namespace treedyn {

PrincipalInertia::PrincipalInertia(const Mat3& J_body) {
  if (!J_body.allFinite()) throw std::invalid_argument("the inertia has non-finite entries");
  const Mat3 J = 0.5 * (J_body + J_body.transpose());
  if (J == Mat3(J.diagonal().asDiagonal())) {  // exactly diagonal: the body frame is principal
    d_ = J.diagonal();
  } else {
    // The iterative (QR) solver, not computeDirect's closed form: it keeps the small moments of a
    // thin body to the matrix's round-off.
    const Eigen::SelfAdjointEigenSolver<Mat3> eigen(J);
    Mat3 R = eigen.eigenvectors();
    if (R.determinant() < 0) R.col(2) = -R.col(2);  // a rotation, not a reflection
    d_ = eigen.eigenvalues();
    q_p_ = Quat(R).normalized();
    aligned_ = false;
  }
  if (!(d_.minCoeff() > 0.0))
    throw std::invalid_argument("the inertia is not positive definite (principal moments " + sci(d_(0)) + ", " + sci(d_(1)) +
                                ", " + sci(d_(2)) + ")");
  d_inverse_ = d_.cwiseInverse();
}

std::vector<PrincipalInertia> principal_inertias(const Model& model) {
  std::vector<PrincipalInertia> out;
  out.reserve(model.bodies.size());
  for (int b = 0; b < model.body_count(); ++b) {
    try {
      out.emplace_back(model.bodies[static_cast<std::size_t>(b)].inertia);
    } catch (const std::invalid_argument& e) {
      throw ModelError("body '" + model.body_name(b) + "': " + e.what());
    }
  }
  return out;
}

}  // namespace treedyn
