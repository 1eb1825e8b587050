// Paper 004's small-matrix inverses: correct against Eigen's, and costing exactly the operation
// counts the paper derives (Sect. 4.4), counted by a scalar type that counts what it does.
#include <gtest/gtest.h>

#include <Eigen/Cholesky>
#include <Eigen/LU>
#include <Eigen/QR>
#include <cmath>
#include <random>
#include <string>

#include "treedyn/linalg.hpp"
#include "treedyn/small_inverse.hpp"

using namespace treedyn;

namespace {

/// A float that counts multiplications, additions (a subtraction is the addition of a negated
/// value, as on the paper's FPGA) and reciprocals; negation and comparison are free.
struct Counted {
  float v = 0;
  static inline long multiplications = 0, additions = 0, reciprocals = 0;
  static void reset() { multiplications = additions = reciprocals = 0; }
  Counted() = default;
  explicit Counted(float x) : v(x) {}
  Counted operator-() const { return Counted(-v); }
  friend Counted operator*(Counted a, Counted b) { return ++multiplications, Counted(a.v * b.v); }
  friend Counted operator+(Counted a, Counted b) { return ++additions, Counted(a.v + b.v); }
  friend Counted operator-(Counted a, Counted b) { return ++additions, Counted(a.v - b.v); }
  friend Counted operator/(Counted a, Counted b) {
    EXPECT_EQ(a.v, 1.0f) << "only reciprocals are expected";
    return ++reciprocals, Counted(a.v / b.v);
  }
  friend bool operator>(Counted a, Counted b) { return a.v > b.v; }
  friend bool operator==(Counted a, Counted b) { return a.v == b.v; }
  friend Counted abs(Counted a) { return Counted(std::abs(a.v)); }
};

Eigen::MatrixXd random_matrix(int n, std::mt19937& rng) {
  std::uniform_real_distribution<double> u(-1.0, 1.0);
  Eigen::MatrixXd A(n, n);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) A(i, j) = u(rng);
  A(0, 0) = 0.0;  // forces a row exchange at the first pivot
  return A;
}

}  // namespace

TEST(SmallInverse, LdupInverseMatchesEigenWithPivoting) {
  std::mt19937 rng(11);
  for (int n = 1; n <= 8; ++n) {
    Eigen::MatrixXd A = random_matrix(n, rng);
    if (n == 1) A(0, 0) = 0.7;
    Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor> a = A, x(n, n);
    ASSERT_TRUE(ldup_inverse(n, a.data(), x.data())) << n;
    EXPECT_LT((x * A - Eigen::MatrixXd::Identity(n, n)).cwiseAbs().maxCoeff(), 1e-12) << n;
  }
}

TEST(SmallInverse, AdjugateInverseMatchesEigen) {
  const double A[4] = {0.3, -1.2, 2.0, 0.5};
  double x[4];
  ASSERT_TRUE(adjugate_inverse(A, x));
  const Eigen::Matrix2d expected = Eigen::Map<const Eigen::Matrix<double, 2, 2, Eigen::RowMajor>>(A).inverse();
  EXPECT_LT((Eigen::Map<const Eigen::Matrix<double, 2, 2, Eigen::RowMajor>>(x) - expected).cwiseAbs().maxCoeff(), 1e-15);
}

// Paper 004, Sect. 4.4: (n-1) n (n+1) multiplications and (n-1)^2 n additions (60 and 36 for a
// 4 x 4 matrix), with the n reciprocals of the pivots.
TEST(SmallInverse, LdupCostsThePapersOperationCounts) {
  std::mt19937 rng(12);
  for (int n = 2; n <= 8; ++n) {
    const Eigen::MatrixXd A = random_matrix(n, rng);
    std::vector<Counted> a(static_cast<std::size_t>(n * n)), x(a.size());
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) a[static_cast<std::size_t>(i * n + j)] = Counted(static_cast<float>(A(i, j)));
    Counted::reset();
    ASSERT_TRUE(ldup_inverse(n, a.data(), x.data()));
    EXPECT_EQ(Counted::multiplications, (n - 1) * n * (n + 1)) << n;
    EXPECT_EQ(Counted::additions, (n - 1) * (n - 1) * n) << n;
    EXPECT_EQ(Counted::reciprocals, n) << n;
    if (n == 4) {
      EXPECT_EQ(Counted::multiplications, 60);
      EXPECT_EQ(Counted::additions, 36);
    }
  }
}

TEST(SmallInverse, AdjugateCostsSixMultiplicationsOneAdditionOneReciprocal) {
  const Counted A[4] = {Counted(0.3f), Counted(-1.2f), Counted(2.0f), Counted(0.5f)};
  Counted x[4];
  Counted::reset();
  ASSERT_TRUE(adjugate_inverse(A, x));
  EXPECT_EQ(Counted::multiplications, 6);
  EXPECT_EQ(Counted::additions, 1);
  EXPECT_EQ(Counted::reciprocals, 1);
}

TEST(SmallInverse, SingularMatricesAreReported) {
  const double A[9] = {1, 2, 3, 2, 4, 6, 0, 1, 1};  // second row twice the first
  double x[9];
  EXPECT_FALSE(ldup_inverse(3, A, x, 1e-12));
  const double B[4] = {1, 2, 2, 4};
  EXPECT_FALSE(adjugate_inverse(B, x, 1e-12));
}

// The solver the divide-and-conquer eliminations use gives the same solutions with the paper's
// inverses as with Cholesky, and the minimum-norm solution for a singular matrix either way.
TEST(SmallInverse, PsdSolverWithThePapersInversesMatchesCholesky) {
  std::mt19937 rng(13);
  const Eigen::MatrixXd F = random_matrix(5, rng);
  const Eigen::MatrixXd A = F * F.transpose() + 0.1 * Eigen::MatrixXd::Identity(5, 5);
  const Eigen::VectorXd b = Eigen::VectorXd::LinSpaced(5, -1.0, 2.0);
  PsdSolver<double> cholesky(5), paper(5, InverseMethod::AdjugateLdup);
  cholesky.compute(A);
  paper.compute(A);
  EXPECT_LT((cholesky.solve(b) - paper.solve(b)).cwiseAbs().maxCoeff(), 1e-12);
  const Eigen::MatrixXd G = F.leftCols(3);
  const Eigen::MatrixXd singular = G * G.transpose();  // rank 3
  const Eigen::VectorXd consistent = singular * b;
  paper.compute(singular);
  EXPECT_TRUE(paper.singular());
  const Eigen::VectorXd x = paper.solve(consistent);
  EXPECT_LT((singular * x - consistent).cwiseAbs().maxCoeff(), 1e-10);
  const Eigen::VectorXd minimum_norm = singular.completeOrthogonalDecomposition().solve(consistent);
  EXPECT_LT((x - minimum_norm).cwiseAbs().maxCoeff(), 1e-10);
}

// The singular path's eigendecomposition (SymmetricEigen) gives Eigen's SelfAdjointEigenSolver's
// eigenvalues bit for bit and a decomposition that rebuilds A, with heap storage (sizes up to
// 120) and stack storage (MaxSize 6); PsdSolver's singular solves are the minimum-norm solutions
// of a complete orthogonal decomposition, also for an inconsistent right-hand side (least squares).
TEST(SmallInverse, SymmetricEigenAndTheSingularSolvesAreExact) {
  std::mt19937 rng(29);
  for (const int n : {2, 5, 30, 120}) {
    const Eigen::MatrixXd F = random_matrix(n, rng);
    const int rank = std::max(1, n - n / 4);
    const Eigen::MatrixXd A = F.leftCols(rank) * F.leftCols(rank).transpose();
    SymmetricEigen<double> eigen(n);
    ASSERT_TRUE(eigen.compute(A));
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> reference(A);
    EXPECT_EQ(eigen.eigenvalues(), reference.eigenvalues()) << n;
    const auto& V = eigen.eigenvectors();
    EXPECT_LT((V * eigen.eigenvalues().asDiagonal() * V.transpose() - A).cwiseAbs().maxCoeff(), 1e-13 * n * A.cwiseAbs().maxCoeff()) << n;
    PsdSolver<double> solver(n);
    solver.compute(A);
    EXPECT_EQ(solver.singular(), rank < n) << n;
    Eigen::VectorXd b(n);
    for (int i = 0; i < n; ++i) b(i) = std::sin(1.0 + i);  // inconsistent when A is singular
    const Eigen::VectorXd expected = A.completeOrthogonalDecomposition().solve(b);
    EXPECT_LT((solver.solve(b) - expected).cwiseAbs().maxCoeff(), 1e-9 * std::max(1.0, expected.cwiseAbs().maxCoeff())) << n;
  }
  using Small = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 6, 6>;
  const Eigen::MatrixXd F = random_matrix(5, rng);
  const Small A = F.leftCols(3) * F.leftCols(3).transpose();
  SymmetricEigen<double, 6> eigen(5);
  ASSERT_TRUE(eigen.compute(A));
  EXPECT_LT((eigen.eigenvectors() * eigen.eigenvalues().asDiagonal() * eigen.eigenvectors().transpose() - A).cwiseAbs().maxCoeff(), 1e-13);
}

// PsdSolver counts a matrix as singular when the trace of the inverse of A scaled to a unit
// diagonal, sum_j A_jj (A^-1)_jj, reaches 1 / relative_pivot (a near-null direction spread over
// many rows, which no single pivot shows). It first tries a cheap upper bound of that trace and
// computes it exactly only where the bound does not settle the verdict; the verdict must be the
// exact trace's on either side of the limit. The trace T here comes from Eigen's LU inverse of
// the scaled matrix; relative pivots of 0.9 / T and 1.1 / T sit 10 % either side of the limit, and
// 1e-3 / T far inside it, for dense matrices with a spread near-null direction and for diagonal
// ones (where the bound equals the trace: L is diagonal).
TEST(SmallInverse, PsdSolverCallsSingularExactlyWhereTheScaledInverseTraceReachesTheLimit) {
  std::mt19937 rng(41);
  auto check = [](const Eigen::MatrixXd& A, const std::string& what) {
    const Eigen::VectorXd d = A.diagonal().cwiseSqrt().cwiseInverse();
    const Eigen::MatrixXd scaled = d.asDiagonal() * A * d.asDiagonal();
    const double T = scaled.fullPivLu().inverse().trace();
    const Eigen::Index n = A.rows();
    // The other test, the smallest Cholesky pivot against the largest diagonal entry, passes
    // here at every one of these relative pivots: the trace decides.
    const double pivot2 = Eigen::LLT<Eigen::MatrixXd>(A).matrixLLT().diagonal().cwiseAbs2().minCoeff();
    ASSERT_GT(pivot2, 1.1 / T * A.diagonal().maxCoeff()) << what;
    PsdSolver<double> solver(n);
    for (const double share : {1e-3, 0.9, 1.1}) {
      solver.compute(A, share / T);
      EXPECT_EQ(solver.singular(), share > 1.0) << what << ": trace " << T << ", relative pivot " << share << " / trace";
    }
  };
  for (const int n : {3, 12, 60}) {
    const Eigen::MatrixXd Q = random_matrix(n, rng).householderQr().householderQ();
    Eigen::VectorXd lambda = Eigen::VectorXd::LinSpaced(n, 0.0, 1.0).unaryExpr([](double x) { return std::pow(10.0, -3.0 * x); });
    lambda(n - 1) = 1e-7;  // one near-null direction, spread over every row by Q
    check(Q * lambda.asDiagonal() * Q.transpose(), "dense, n = " + std::to_string(n));
    check(Eigen::VectorXd::LinSpaced(n, 1.0, 2.0).asDiagonal().toDenseMatrix(), "diagonal, n = " + std::to_string(n));
  }
}

// Up to 24 rows PsdSolver solves L L' x = b by plain substitution (Eigen's blocked triangular
// solves pack their operands first, which costs more than a loop elimination's 10 to 20 rows);
// above, by Eigen's. Both must give the solution of the system: checked by the residual against
// A, and against Eigen's LLT solve of the same matrix, on well-conditioned random matrices
// (A = B B' + n I, condition below about 10), one and six right-hand sides. Tolerance 1e-13
// relative: a substitution's error is a few units of round-off times n times the condition.
TEST(SmallInverse, PsdSolverSolvesSmallAndLargeSystemsAlike) {
  std::mt19937 rng(17);
  for (int n : {1, 2, 3, 5, 10, 16, 23, 24, 25, 40}) {
    const Eigen::MatrixXd B = random_matrix(n, rng);
    const Eigen::MatrixXd A = B * B.transpose() + n * Eigen::MatrixXd::Identity(n, n);
    PsdSolver<double> solver(n);
    solver.compute(A);
    ASSERT_FALSE(solver.singular()) << n;
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    Eigen::Matrix<double, Eigen::Dynamic, 6> X(n, 6);
    for (double& v : X.reshaped()) v = u(rng);
    const Eigen::Matrix<double, Eigen::Dynamic, 6> rhs = X;
    solver.solve_in_place(X);
    const Eigen::MatrixXd expected = A.llt().solve(Eigen::MatrixXd(rhs));
    EXPECT_LE((A * X - rhs).norm(), 1e-13 * rhs.norm() * n) << n;
    EXPECT_LE((X - expected).norm(), 1e-13 * expected.norm()) << n;
    Eigen::VectorXd x = rhs.col(0);
    solver.solve_in_place(x);
    EXPECT_LE((x - expected.col(0)).norm(), 1e-13 * expected.col(0).norm()) << n;
  }
}

// cholesky_inverse's 3 x 3 case (a ball joint's Z in every elimination) works through leading
// minors and the adjugate rather than the factors: the same inverse as Eigen's LLT within
// round-off times the condition (relative 1e-14 times 1e3 on matrices of condition up to 1e3;
// 1e-9 at condition 1e6), the general factorisation's verdicts for a rank-2 matrix and an
// indefinite one, and the trace test's for a near-null direction spread over all rows.
TEST(SmallInverse, CholeskyInverseOfThreeByThreeMatchesTheFactorisation) {
  std::mt19937 rng(29);
  using Mat3 = Eigen::Matrix3d;
  for (int k = 0; k < 200; ++k) {
    const Mat3 Q = Eigen::Matrix3d(random_matrix(3, rng)).householderQr().householderQ();
    const double spread = k < 100 ? 1e3 : 1e6;
    const Eigen::Vector3d lambda(1.0, std::pow(spread, -0.5), 1.0 / spread);
    const Mat3 A = 3.7 * Q * lambda.asDiagonal() * Q.transpose();
    Mat3 inverse;
    ASSERT_TRUE((cholesky_inverse<double, 3>(A, inverse))) << k;
    const Mat3 reference = Eigen::LLT<Mat3>(A).solve(Mat3::Identity());
    EXPECT_LT((inverse - reference).cwiseAbs().maxCoeff() / reference.cwiseAbs().maxCoeff(), k < 100 ? 1e-14 * 1e3 : 1e-9) << k;
    EXPECT_EQ(inverse, inverse.transpose()) << k;
  }
  // A rank-2 matrix: its third pivot is round-off.
  const Eigen::Matrix<double, 3, 2> F = Eigen::MatrixXd(random_matrix(3, rng)).leftCols(2);
  Mat3 inverse = Mat3::Constant(7.0);
  EXPECT_FALSE((cholesky_inverse<double, 3>(Mat3(F * F.transpose()), inverse)));
  EXPECT_EQ(inverse, Mat3::Constant(7.0)) << "a failed pivot test leaves the inverse untouched";
  // Indefinite: the second pivot 1 - c^2 of [[1, c, 0], [c, 1, 0], [0, 0, 1]] below zero, or
  // above it and the trace (about 2 / (1 - c^2)) within the limit.
  for (const double pivot : {-1e-3, 1e-3}) {
    Mat3 A = Mat3::Identity();
    A(0, 1) = A(1, 0) = std::sqrt(1.0 - pivot);
    EXPECT_EQ((cholesky_inverse<double, 3>(A, inverse, 1e-6)), pivot > 0.0) << pivot;
  }
  // The trace test: a relative pivot that every pivot of this matrix passes and its scaled
  // inverse's trace T does not (between 1 / T and the smallest squared pivot over the diagonal).
  const Mat3 Q = Eigen::Matrix3d(random_matrix(3, rng)).householderQr().householderQ();
  const Mat3 near_null = Q * Eigen::Vector3d(1.0, 1.0, 1e-7).asDiagonal() * Q.transpose();
  const Eigen::Vector3d d = near_null.diagonal().cwiseSqrt().cwiseInverse();
  const double T = Mat3(d.asDiagonal() * near_null * d.asDiagonal()).inverse().trace();
  const double pivot_share = Eigen::LLT<Mat3>(near_null).matrixLLT().diagonal().cwiseAbs2().minCoeff() / near_null.diagonal().maxCoeff();
  ASSERT_GT(pivot_share, 1.0 / T);
  EXPECT_FALSE((cholesky_inverse<double, 3>(near_null, inverse, std::sqrt(pivot_share / T))));
  EXPECT_TRUE((cholesky_inverse<double, 3>(near_null, inverse, 0.5 / T)));
}

// The general sizes (L D L': a hinge's 5 rows, a weld's 6, a planar joint's 2) against Eigen's
// LLT on matrices of condition up to 1e4 (round-off: 1e-16 times the condition, with a margin of
// 100 for the products), and the verdicts for a rank-deficient and an indefinite matrix.
template <int M>
void check_cholesky_inverse(std::mt19937& rng) {
  using Mat = Eigen::Matrix<double, M, M>;
  for (int k = 0; k < 50; ++k) {
    const Mat Q = Mat(random_matrix(M, rng)).householderQr().householderQ();
    const Eigen::Matrix<double, M, 1> lambda = Eigen::Matrix<double, M, 1>::LinSpaced(0.0, -4.0).unaryExpr([](double x) { return std::pow(10.0, x); });
    const Mat A = 2.3 * Q * lambda.asDiagonal() * Q.transpose();
    Mat inverse;
    ASSERT_TRUE((cholesky_inverse<double, M>(A, inverse))) << M << ", " << k;
    const Mat reference = Eigen::LLT<Mat>(A).solve(Mat::Identity());
    EXPECT_LT((inverse - reference).cwiseAbs().maxCoeff() / reference.cwiseAbs().maxCoeff(), 1e-10) << M << ", " << k;
  }
  const Mat F = random_matrix(M, rng);
  const Mat deficient = F.leftCols(M - 1) * F.leftCols(M - 1).transpose();  // rank M - 1
  Mat inverse = Mat::Constant(7.0);
  EXPECT_FALSE((cholesky_inverse<double, M>(deficient, inverse))) << M;
  Mat indefinite = Mat::Identity();
  indefinite(M - 1, M - 1) = -1e-3;
  EXPECT_FALSE((cholesky_inverse<double, M>(indefinite, inverse))) << M;
  EXPECT_EQ(inverse, Mat::Constant(7.0)) << M << ": a failed pivot test leaves the inverse untouched";
}

TEST(SmallInverse, CholeskyInverseOfOtherSizesMatchesEigen) {
  std::mt19937 rng(31);
  check_cholesky_inverse<2>(rng);
  check_cholesky_inverse<4>(rng);
  check_cholesky_inverse<5>(rng);
  check_cholesky_inverse<6>(rng);
}
