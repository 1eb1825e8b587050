// treedyn — solving with symmetric positive semi-definite matrices (J M^-1 J' and the
// divide-and-conquer elimination matrices): Cholesky while the matrix is positive definite, a
// complete orthogonal decomposition (minimum-norm solutions) when it is singular, as it is with
// redundant constraints and at singular positions. Storage is sized once; solving reuses it.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/QR>
#include <cmath>

namespace treedyn {

/// MaxSize: a compile-time bound on the size (stack storage, no heap), or Eigen::Dynamic.
template <class S, int MaxSize = Eigen::Dynamic>
class PsdSolver {
 public:
  using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, 0, MaxSize, MaxSize>;

  explicit PsdSolver(Eigen::Index size = 0) : llt_(size), cod_(size, size) {}

  /// Factorises A (symmetric, positive semi-definite). A pivot below `relative_pivot` times the
  /// largest diagonal entry counts as zero and switches to the rank-revealing path.
  void compute(const Matrix& A, S relative_pivot = S(1e-10)) {
    if (A.rows() == 0) {
      use_llt_ = true;
      return;
    }
    llt_.compute(A);
    const S diag = A.diagonal().cwiseAbs().maxCoeff();
    use_llt_ = llt_.info() == Eigen::Success && llt_.matrixLLT().diagonal().cwiseAbs2().minCoeff() > relative_pivot * diag;
    if (!use_llt_) {
      cod_.setThreshold(relative_pivot);
      cod_.compute(A);
    }
  }

  /// x = A^+ b (any number of right-hand sides), in place.
  template <class Derived>
  void solve_in_place(Eigen::MatrixBase<Derived>& b) const {
    if (b.rows() == 0) return;
    if (use_llt_) llt_.solveInPlace(b);
    else b = cod_.solve(b).eval();
  }

  /// A^+ b.
  template <class Derived>
  Eigen::Matrix<S, Eigen::Dynamic, Derived::ColsAtCompileTime, 0, MaxSize, Derived::MaxColsAtCompileTime> solve(
      const Eigen::MatrixBase<Derived>& b) const {
    Eigen::Matrix<S, Eigen::Dynamic, Derived::ColsAtCompileTime, 0, MaxSize, Derived::MaxColsAtCompileTime> x = b;
    solve_in_place(x);
    return x;
  }

  /// True when the last matrix was treated as singular (redundant or singular constraints).
  bool singular() const { return !use_llt_; }

 private:
  Eigen::LLT<Matrix> llt_;
  Eigen::CompleteOrthogonalDecomposition<Matrix> cod_;
  bool use_llt_ = true;
};

/// Inverse of a small symmetric positive definite matrix by Cholesky, written out so that a
/// compile-time size unrolls (Eigen's general triangular solvers do not for matrix right-hand
/// sides). Returns false, leaving `inverse` untouched, if a pivot falls below `relative_pivot`
/// times the largest diagonal entry (singular or nearly so).
template <class S, int M>
bool cholesky_inverse(const Eigen::Matrix<S, M, M>& A, Eigen::Matrix<S, M, M>& inverse, S relative_pivot = S(1e-10)) {
  Eigen::Matrix<S, M, M> L = Eigen::Matrix<S, M, M>::Zero();
  const S scale = A.diagonal().cwiseAbs().maxCoeff();
  for (int j = 0; j < M; ++j) {
    S d = A(j, j);
    for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k);
    if (!(d > relative_pivot * scale)) return false;
    L(j, j) = std::sqrt(d);
    for (int i = j + 1; i < M; ++i) {
      S x = A(i, j);
      for (int k = 0; k < j; ++k) x -= L(i, k) * L(j, k);
      L(i, j) = x / L(j, j);
    }
  }
  Eigen::Matrix<S, M, M> Li = Eigen::Matrix<S, M, M>::Zero();  // L^-1, lower triangular
  for (int j = 0; j < M; ++j) {
    Li(j, j) = S(1) / L(j, j);
    for (int i = j + 1; i < M; ++i) {
      S x = 0;
      for (int k = j; k < i; ++k) x += L(i, k) * Li(k, j);
      Li(i, j) = -x / L(i, i);
    }
  }
  inverse.noalias() = Li.transpose() * Li;
  return true;
}

/// Pseudo-inverse (complete orthogonal decomposition) of a small symmetric positive semidefinite
/// matrix; a 1x1 matrix that is not positive is rank 0 (round-off of a zero), its pseudo-inverse 0.
template <class S, int M>
Eigen::Matrix<S, M, M> small_pseudo_inverse(const Eigen::Matrix<S, M, M>& A, S relative_pivot = S(1e-10)) {
  if constexpr (M == 1) {  // scalar case; also keeps GCC 12 off a false -Warray-bounds in Eigen's COD
    const S a = A(0, 0);
    return Eigen::Matrix<S, 1, 1>(a > S(0) ? S(1) / a : S(0));
  } else {
    Eigen::CompleteOrthogonalDecomposition<Eigen::Matrix<S, M, M>> cod;
    cod.setThreshold(relative_pivot);
    cod.compute(A);
    return cod.pseudoInverse();
  }
}

}  // namespace treedyn
