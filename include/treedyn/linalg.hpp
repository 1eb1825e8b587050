// treedyn — solving with symmetric positive semi-definite matrices (J M^-1 J' and the
// divide-and-conquer elimination matrices): Cholesky while the matrix is positive definite, a
// symmetric eigendecomposition (minimum-norm solutions) when it is singular, as it is with
// redundant constraints and at singular positions. Storage is sized once; solving reuses it.
#pragma once

#include <Eigen/Cholesky>
#include <Eigen/SVD>
#include <Eigen/Eigenvalues>
#include <algorithm>
#include <cmath>
#include <memory>

#include "treedyn/small_inverse.hpp"

namespace treedyn {

/// Index of the first entry of x that is not finite (x.size() if all are): where a failure
/// message says a solve or a state went wrong.
inline Eigen::Index first_non_finite(const Eigen::Ref<const Eigen::VectorXd>& x) {
  Eigen::Index i = 0;
  while (i < x.size() && std::isfinite(x(i))) ++i;
  return i;
}

/// How the divide-and-conquer eliminations invert their small symmetric matrices: by Cholesky
/// (the default), or as paper 004 does on its FPGA, by the adjugate (2 x 2) and LDUP (larger).
/// Either falls back to the minimum-norm solution when the matrix is singular.
enum class InverseMethod { Cholesky, AdjugateLdup };

/// The inverse of a small square matrix by the adjugate (2 x 2) or LDUP (paper 004, Sect. 3);
/// false if it is singular: a pivot (or, for 2 x 2, the determinant) below relative_pivot times
/// the largest entry (squared).
template <class DerivedA, class DerivedInverse>
bool paper_inverse(const Eigen::MatrixBase<DerivedA>& A, Eigen::MatrixBase<DerivedInverse>& inverse,
                   typename DerivedA::Scalar relative_pivot) {
  using S = typename DerivedA::Scalar;
  const int n = static_cast<int>(A.rows());
  if (n > kMaxLdupSize) return false;
  S a[kMaxLdupSize * kMaxLdupSize], x[kMaxLdupSize * kMaxLdupSize];
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) a[i * n + j] = A(i, j);
  const S tiny = relative_pivot * A.cwiseAbs().maxCoeff();
  const bool ok = n == 1   ? (std::abs(A(0, 0)) > tiny && (x[0] = S(1) / A(0, 0), true))
                  : n == 2 ? adjugate_inverse(a, x, tiny * A.cwiseAbs().maxCoeff())
                           : ldup_inverse(n, a, x, tiny);
  if (!ok) return false;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) inverse(i, j) = x[i * n + j];
  return true;
}

/// Eigendecomposition of a symmetric matrix, A = V diag(lambda) V', in storage sized by the
/// constructor: compute() allocates nothing at that size. The steps of Eigen 3.4's
/// SelfAdjointEigenSolver (scale to [-1, 1], Householder tridiagonalisation, Q formed in place,
/// implicit symmetric QR on the tridiagonal matrix; the same eigenvalues to the bit), with the
/// Householder workspace held here: Eigen's solver allocates it on every call. Only A's lower
/// triangle is read.
template <class S, int MaxSize = Eigen::Dynamic>
class SymmetricEigen {
 public:
  using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, 0, MaxSize, MaxSize>;
  using Vector = Eigen::Matrix<S, Eigen::Dynamic, 1, 0, MaxSize, 1>;

  explicit SymmetricEigen(Eigen::Index size = 0)
      : V_(size, size), lambda_(size), subdiag_(std::max<Eigen::Index>(size - 1, 0)),
        hcoeffs_(std::max<Eigen::Index>(size - 1, 0)), workspace_(size) {}

  /// False when the QR iterations did not converge (Eigen's NoConvergence). A: a Matrix, or a
  /// map of one (no copy).
  template <class Derived>
  bool compute(const Eigen::MatrixBase<Derived>& A) {
    const Eigen::Index n = A.rows();
    V_.resize(n, n);  // no-ops at the constructor's size
    lambda_.resize(n);
    if (n == 0) return true;
    if (n == 1) {
      lambda_(0) = A(0, 0);
      V_.setOnes();
      return true;
    }
    subdiag_.resize(n - 1);
    hcoeffs_.resize(n - 1);
    workspace_.resize(n);
    V_ = A.template triangularView<Eigen::Lower>();  // upper triangle zero, as in Eigen's solver
    S scale = V_.cwiseAbs().maxCoeff();
    if (scale == S(0)) scale = S(1);
    V_.template triangularView<Eigen::Lower>() /= scale;
    Eigen::internal::tridiagonalization_inplace(V_, hcoeffs_);
    lambda_ = V_.diagonal();
    subdiag_ = V_.template diagonal<-1>();
    Eigen::HouseholderSequence<Matrix, Vector>(V_, hcoeffs_).setLength(n - 1).setShift(1).evalTo(V_, workspace_);
    const Eigen::ComputationInfo info = Eigen::internal::computeFromTridiagonal_impl(lambda_, subdiag_, kMaxIterations, true, V_);
    lambda_ *= scale;
    return info == Eigen::Success;
  }
  /// Eigenvalues, ascending; the eigenvectors are V's columns.
  const Vector& eigenvalues() const { return lambda_; }
  const Matrix& eigenvectors() const { return V_; }

 private:
  static constexpr int kMaxIterations = 30;  // QR sweeps per eigenvalue, Eigen's default
  Matrix V_;
  Vector lambda_, subdiag_, hcoeffs_, workspace_;
};

/// MaxSize: a compile-time bound on the size (stack storage, no heap), or Eigen::Dynamic (heap
/// storage sized by the constructor; compute and solve then allocate nothing).
template <class S, int MaxSize = Eigen::Dynamic>
class PsdSolver {
 public:
  using Matrix = Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, 0, MaxSize, MaxSize>;
  using Vector = Eigen::Matrix<S, Eigen::Dynamic, 1, 0, MaxSize, 1>;

  /// The Cholesky factor starts as the identity's: an Eigen::LLT that never computed leaves its
  /// status uninitialised, and copying or moving it (PsdSolver is assigned when a workspace is
  /// resized) reads that value: undefined behaviour that UBSan reports.
  explicit PsdSolver(Eigen::Index size = 0, InverseMethod method = InverseMethod::Cholesky)
      : llt_(Matrix::Identity(size, size)),
        method_(method),
        scratch_(size),
        eigen_(size) {
    if (method == InverseMethod::AdjugateLdup) inverse_.setZero(size, size);
  }

  /// Factorises A (symmetric, positive semi-definite). A pivot below `relative_pivot` times the
  /// largest diagonal entry, or a condition of A scaled to a unit diagonal above 1 / relative_pivot
  /// (by the trace of its inverse: a near-null direction spread over several rows, which no single
  /// pivot shows; scaled, so that a badly scaled but regular A, light bodies beside heavy ones,
  /// stays regular), counts as singular and
  /// switches to the rank-revealing path: the symmetric
  /// eigendecomposition (SymmetricEigen; it allocates nothing once sized, and costs a tenth to a
  /// thirtieth of the Jacobi SVD it replaced: 1.3 -> 0.13 ms at 45 rows, 2.7 s -> 0.1 s at 500),
  /// whose eigenvalues below `relative_pivot` times the largest in magnitude count as zero. Should
  /// its QR iterations not converge, a Jacobi SVD (allocated then) takes over.
  /// A: a Matrix, or a map of one (a workspace in an arena: no copy but the factor's).
  template <class Derived>
  void compute(const Eigen::MatrixBase<Derived>& A, S relative_pivot = S(1e-10)) {
    use_inverse_ = false;
    if (A.rows() == 0) {
      use_llt_ = true;
      return;
    }
    if (method_ == InverseMethod::AdjugateLdup && paper_inverse(A, inverse_, relative_pivot)) {
      use_inverse_ = use_llt_ = true;
      return;
    }
    llt_.compute(A);
    const S diag = A.diagonal().cwiseAbs().maxCoeff();
    use_llt_ = llt_.info() == Eigen::Success && llt_.matrixLLT().diagonal().cwiseAbs2().minCoeff() > relative_pivot * diag &&
               scaled_inverse_trace_below(A, relative_pivot);
    if (use_llt_) return;
    use_svd_ = !eigen_.compute(A);
    if (use_svd_) {
      svd_ = std::make_unique<Eigen::JacobiSVD<Matrix>>(Matrix(A), Eigen::ComputeFullU | Eigen::ComputeFullV);
      cutoff_ = relative_pivot * svd_->singularValues()(0);
    } else {
      cutoff_ = relative_pivot * eigen_.eigenvalues().cwiseAbs().maxCoeff();
    }
  }

  /// x = A^+ b (any number of right-hand sides), in place.
  template <class Derived>
  void solve_in_place(Eigen::MatrixBase<Derived>& b) const {
    if (b.rows() == 0) return;
    if (use_inverse_) {
      for (Eigen::Index c = 0; c < b.cols(); ++c) {
        scratch_.noalias() = inverse_ * b.col(c);
        b.col(c) = scratch_;
      }
    } else if (use_llt_) {
      if (llt_.rows() <= kSmallSolve) substitute_in_place(b);
      else llt_.solveInPlace(b);
    } else if (!use_svd_) {  // minimum norm: V diag(1/lambda, 0 for lambda <= cutoff) V' b
      const auto& lambda = eigen_.eigenvalues();
      const auto& V = eigen_.eigenvectors();
      for (Eigen::Index c = 0; c < b.cols(); ++c) {
        scratch_.noalias() = V.transpose() * b.col(c);
        for (Eigen::Index i = 0; i < scratch_.size(); ++i) scratch_(i) = lambda(i) > cutoff_ ? scratch_(i) / lambda(i) : S(0);
        b.col(c).noalias() = V * scratch_;
      }
    } else {  // minimum norm: V diag(1/s, 0 for s <= cutoff) U' b
      const auto& s = svd_->singularValues();
      for (Eigen::Index c = 0; c < b.cols(); ++c) {
        scratch_.noalias() = svd_->matrixU().transpose() * b.col(c);
        for (Eigen::Index i = 0; i < scratch_.size(); ++i) scratch_(i) = s(i) > cutoff_ ? scratch_(i) / s(i) : S(0);
        b.col(c).noalias() = svd_->matrixV() * scratch_;
      }
    }
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
  /// Up to this size L L' x = b is solved by plain substitution: Eigen's blocked triangular
  /// solves pack their operands first, which costs more than the solve itself on the 10 to 20
  /// rows of a closed loop's elimination (the multiple kernel's W = Z^-1 Y', six right-hand sides).
  /// On ladders of 40 to 4,000 four-bar loops under ali3: 6 % fewer instructions per step, 2 to
  /// 9 % less time (docs/benchmarks.md, "Ladders of coupled four-bar loops").
  static constexpr Eigen::Index kSmallSolve = 24;

  /// Every right-hand side at once, row by row: the columns are independent streams of work. (One
  /// column after another, each a chain of dependent operations, took 9 % more time than Eigen's
  /// blocked solve on the ladders, with 5 % fewer instructions.)
  template <class Derived>
  void substitute_in_place(Eigen::MatrixBase<Derived>& b) const {
    const auto& L = llt_.matrixLLT();  // column-major, lower triangle
    const Eigen::Index n = L.rows();
    for (Eigen::Index j = 0; j < n; ++j) {  // L Y = B, by columns of L
      b.row(j) /= L(j, j);
      b.bottomRows(n - j - 1).noalias() -= L.col(j).tail(n - j - 1) * b.row(j);
    }
    for (Eigen::Index j = n - 1; j >= 0; --j) {  // L' X = Y, by columns of L (rows of L')
      b.row(j).noalias() -= L.col(j).tail(n - j - 1).transpose() * b.bottomRows(n - j - 1);
      b.row(j) /= L(j, j);
    }
  }

  /// Whether sum_j A_jj (A^-1)_jj (scaled_inverse_trace) times relative_pivot is below 1: first by
  /// an upper bound in n^2 / 2 operations, and only where that does not settle it, exactly (n^3 / 6).
  /// The trace is |X|_F^2 for X = L^-1 D^1/2 (D = diag A), and |L^-1| <= M(L)^-1 elementwise for
  /// the comparison matrix M(L) (|L_ii| on the diagonal, -|L_ij| below it; Higham, Accuracy and
  /// Stability of Numerical Algorithms, 2nd ed., Thm. 8.12), so row i of X has |x_i|^2 <=
  /// (sum_j |X_ij|)^2 <= y_i^2 where M(L) y = D^1/2 e: a substitution in non-negative terms, and
  /// trace <= |y|^2. A bound below half the limit (room for rounding in both) gives the verdict the
  /// exact trace would. On the reference formulation's J M^-1 J' of chain128 (384 rows) the bound
  /// is 84 times the trace, far below the limit; the exact trace was half of that formulation's time.
  template <class Derived>
  bool scaled_inverse_trace_below(const Eigen::MatrixBase<Derived>& A, S relative_pivot) const {
    const auto& L = llt_.matrixLLT();
    const Eigen::Index n = L.rows();
    if (scratch_.size() != n) scratch_.resize(n);  // as in scaled_inverse_trace
    Vector& y = scratch_;
    y = A.diagonal().cwiseSqrt();
    for (Eigen::Index j = 0; j < n; ++j) {  // column by column (L is column-major)
      y(j) /= std::abs(L(j, j));
      y.tail(n - j - 1) += L.col(j).tail(n - j - 1).cwiseAbs() * y(j);
    }
    if (y.squaredNorm() * relative_pivot < S(0.5)) return true;  // false for inf or NaN: decided exactly
    return scaled_inverse_trace(A) * relative_pivot < S(1);
  }

  /// sum_j A_jj (A^-1)_jj, (A^-1)_jj = |L^-1 e_j|^2 from the Cholesky factor (n^3 / 6 operations,
  /// no heap): the trace of the inverse of A scaled to a unit diagonal, within a factor n of its
  /// condition number, which the pivots alone do not bound (cholesky_inverse).
  template <class Derived>
  S scaled_inverse_trace(const Eigen::MatrixBase<Derived>& A) const {
    const auto& L = llt_.matrixLLT();
    const Eigen::Index n = L.rows();
    if (scratch_.size() != n) scratch_.resize(n);  // sized by the constructor for the solvers that ask for no heap
    S trace = S(0);
    for (Eigen::Index j = 0; j < n; ++j) {
      auto y = scratch_.tail(n - j);
      y.setZero();
      y(0) = S(1);
      L.bottomRightCorner(n - j, n - j).template triangularView<Eigen::Lower>().solveInPlace(y);
      trace += A(j, j) * y.squaredNorm();
    }
    return trace;
  }

  // What every solve reads first, then the singular path's storage: a tree keeps one solver per
  // closed loop, and its passes then touch the fewest cache lines of each.
  Eigen::LLT<Matrix> llt_;
  InverseMethod method_;
  Matrix inverse_;          // AdjugateLdup: the explicit inverse
  mutable Vector scratch_;  // one column of a product
  S cutoff_ = S(0);
  bool use_llt_ = true, use_inverse_ = false, use_svd_ = false;
  SymmetricEigen<S, MaxSize> eigen_;
  std::unique_ptr<Eigen::JacobiSVD<Matrix>> svd_;  // only if the eigendecomposition failed (held
                                                   // apart: 0.55 KB in place, with MaxSize Dynamic)
};

/// Inverse of a small symmetric positive definite matrix by Cholesky (as L D L'), written out so that a
/// compile-time size unrolls (Eigen's general triangular solvers do not for matrix right-hand
/// sides). Returns false if a pivot falls below `relative_pivot` times the largest diagonal entry
/// (leaving `inverse` untouched), or if the condition of A scaled to a unit diagonal exceeds
/// 1 / relative_pivot, by sum_j A_jj (A^-1)_jj (`inverse` then holds the inverse): singular or nearly so.
template <class S, int M>
bool cholesky_inverse(const Eigen::Matrix<S, M, M>& A, Eigen::Matrix<S, M, M>& inverse, S relative_pivot = S(1e-10)) {
  const S scale = A.diagonal().cwiseAbs().maxCoeff();
  if constexpr (M == 3) {
    // 3 x 3 (a ball joint's rows): the same test and result through the leading minors and the
    // adjugate, one division where the factors take three square roots and six dependent divisions.
    // Cholesky's pivots are ratios of leading minors, L_jj^2 = m_j / m_(j-1), so each pivot test
    // is m_j > relative_pivot scale m_(j-1). Only the lower triangle is read, as below.
    const S a00 = A(0, 0), a10 = A(1, 0), a20 = A(2, 0), a11 = A(1, 1), a21 = A(2, 1), a22 = A(2, 2);
    const S tolerance = relative_pivot * scale;
    const S c00 = a11 * a22 - a21 * a21, c10 = a20 * a21 - a10 * a22, c20 = a10 * a21 - a20 * a11;
    const S m2 = a00 * a11 - a10 * a10, det = a00 * c00 + a10 * c10 + a20 * c20;
    if (!(a00 > tolerance) || !(m2 > tolerance * a00) || !(det > tolerance * m2)) return false;
    const S r = S(1) / det;
    inverse(0, 0) = c00 * r;
    inverse(1, 0) = inverse(0, 1) = c10 * r;
    inverse(2, 0) = inverse(0, 2) = c20 * r;
    inverse(1, 1) = (a00 * a22 - a20 * a20) * r;
    inverse(2, 1) = inverse(1, 2) = (a10 * a20 - a00 * a21) * r;
    inverse(2, 2) = m2 * r;
    return A.diagonal().cwiseProduct(inverse.diagonal()).sum() * relative_pivot < S(1);
  }
  // A = L D L' with L unit lower triangular: D's entries are Cholesky's squared pivots, tested
  // the same way, and each is inverted once (no square roots; M divisions where L L' took
  // M (M + 1)). A^-1 = L^-T D^-1 L^-1.
  Eigen::Matrix<S, M, M> L = Eigen::Matrix<S, M, M>::Identity();
  Eigen::Matrix<S, M, 1> D, D_inverse;
  for (int j = 0; j < M; ++j) {
    S d = A(j, j);
    for (int k = 0; k < j; ++k) d -= L(j, k) * L(j, k) * D(k);
    if (!(d > relative_pivot * scale)) return false;
    D(j) = d;
    D_inverse(j) = S(1) / d;
    for (int i = j + 1; i < M; ++i) {
      S x = A(i, j);
      for (int k = 0; k < j; ++k) x -= L(i, k) * L(j, k) * D(k);
      L(i, j) = x * D_inverse(j);
    }
  }
  Eigen::Matrix<S, M, M> Li = Eigen::Matrix<S, M, M>::Identity();  // L^-1, unit lower triangular
  for (int j = 0; j < M; ++j)
    for (int i = j + 1; i < M; ++i) {
      S x = L(i, j);
      for (int k = j + 1; k < i; ++k) x += L(i, k) * Li(k, j);
      Li(i, j) = -x;
    }
  inverse.noalias() = Li.transpose() * D_inverse.asDiagonal() * Li;
  // Pivots alone miss a near-null direction spread over several rows (the last pivot is
  // 1 / (A^-1)_nn, which can exceed the smallest eigenvalue many times); the trace of the inverse of
  // A scaled to a unit diagonal, sum A_jj (A^-1)_jj (within a factor M of its condition number)
  // does not: a subtree locked to ground gives a Z whose null direction is round-off.
  return A.diagonal().cwiseProduct(inverse.diagonal()).sum() * relative_pivot < S(1);
}

/// Pseudo-inverse of a small symmetric positive semidefinite matrix (at most 8 x 8) by its
/// eigen-decomposition: eigenvalues below relative_pivot times the largest count as zero. The
/// decomposition is compiled once per scalar (sizes bounded at 8, stack storage) rather than once
/// per fixed size: fixed-size decompositions for every joint row count made the divide-and-conquer
/// core take minutes to compile.
template <class S>
Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, 0, 8, 8> bounded_pseudo_inverse(
    const Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, 0, 8, 8>& A, S relative_pivot) {
  Eigen::SelfAdjointEigenSolver<Eigen::Matrix<S, Eigen::Dynamic, Eigen::Dynamic, 0, 8, 8>> eig(A);
  const auto& d = eig.eigenvalues();
  const S cutoff = relative_pivot * d.cwiseAbs().maxCoeff();
  Eigen::Matrix<S, Eigen::Dynamic, 1, 0, 8, 1> inv_d(d.size());
  for (Eigen::Index i = 0; i < d.size(); ++i) inv_d(i) = d(i) > cutoff ? S(1) / d(i) : S(0);
  return eig.eigenvectors() * inv_d.asDiagonal() * eig.eigenvectors().transpose();
}

template <class S, int M>
Eigen::Matrix<S, M, M> small_pseudo_inverse(const Eigen::Matrix<S, M, M>& A, S relative_pivot = S(1e-10)) {
  static_assert(M <= 8, "small_pseudo_inverse: at most 8 x 8");
  return bounded_pseudo_inverse<S>(A, relative_pivot);
}

}  // namespace treedyn
