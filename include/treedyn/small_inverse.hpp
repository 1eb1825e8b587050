// treedyn — explicit inverses of small matrices as paper 004 computes them on an FPGA (Sect. 3):
// the adjugate for 2 x 2 and the LDUP factorisation for n x n.
//
// Both are written on any scalar type T with +, -, *, / and unary minus, in the operation order
// of the paper, so that an operation-counting scalar reproduces its counts (Sect. 4.4): the LDUP
// inverse of an n x n matrix costs (n-1) n (n+1) multiplications, (n-1)^2 n additions (a
// subtraction is an addition of a negated value; negation is free) and n reciprocals — 60, 36
// and 4 for 4 x 4; the adjugate costs 6 multiplications, 1 addition and 1 reciprocal.
//
// LDUP (paper 004, Eqs. 54-82): Gaussian elimination with partial pivoting gives P A = L D U
// (L unit lower, D diagonal, U unit upper), then A^-1 = U^-1 D^-1 L^-1 P with
//   c_k = 1 / a_kk (Eqs. 62, 75),  D^-1 = diag(c) (Eq. 76),  U = D^-1 A_{n-1} (Eq. 77),
//   unit-triangular inverses by Eq. 78 (and Eq. 79 for U through its transpose),
//   B = U^-1 D^-1 (Eq. 80),  Y = B L^-1 (Eq. 81),  A^-1 = Y P (Eq. 82, a column permutation).
// Matrices are row-major arrays; nothing is allocated.
#pragma once

#include <cmath>
#include <utility>

namespace treedyn {

/// Largest n the LDUP inverse accepts (its scratch space lives on the stack).
inline constexpr int kMaxLdupSize = 12;

/// A^-1 of a 2 x 2 matrix by its adjugate (paper 004, Eq. 53). Returns false if |det A| is not
/// above `tiny`.
template <class T>
bool adjugate_inverse(const T* A, T* Ainv, T tiny = T(0)) {
  using std::abs;
  const T det = A[0] * A[3] - A[1] * A[2];
  if (!(abs(det) > tiny)) return false;
  const T r = T(1) / det;
  Ainv[0] = A[3] * r;
  Ainv[1] = -(A[1] * r);
  Ainv[2] = -(A[2] * r);
  Ainv[3] = A[0] * r;
  return true;
}

/// A^-1 of an n x n matrix (n <= kMaxLdupSize) by LDUP factorisation (paper 004, Sect. 3.2).
/// Returns false, leaving Ainv unspecified, if a pivot is not above `tiny` in magnitude (A
/// singular or nearly so).
template <class T>
bool ldup_inverse(int n, const T* A, T* Ainv, T tiny = T(0)) {
  // Zero-initialised beyond n x n too: GCC cannot see that only the first n rows and columns are read.
  T a[kMaxLdupSize][kMaxLdupSize] = {}, L[kMaxLdupSize][kMaxLdupSize] = {}, c[kMaxLdupSize] = {};
  int perm[kMaxLdupSize];
  for (int i = 0; i < n; ++i) {
    perm[i] = i;
    for (int j = 0; j < n; ++j) a[i][j] = A[i * n + j];
  }
  using std::abs;
  // Gaussian elimination with partial pivoting (Eqs. 60-69).
  for (int k = 0; k < n - 1; ++k) {
    int p = k;
    for (int i = k + 1; i < n; ++i)
      if (abs(a[i][k]) > abs(a[p][k])) p = i;
    if (!(abs(a[p][k]) > tiny)) return false;
    if (p != k) {  // R_pk on A and on the multipliers found so far (Eqs. 61, 69)
      for (int j = 0; j < n; ++j) std::swap(a[k][j], a[p][j]);
      for (int j = 0; j < k; ++j) std::swap(L[k][j], L[p][j]);
      std::swap(perm[k], perm[p]);
    }
    c[k] = T(1) / a[k][k];
    for (int i = k + 1; i < n; ++i) {
      const T m = -(c[k] * a[i][k]);  // Eq. 66
      L[i][k] = -m;
      for (int j = k + 1; j < n; ++j) a[i][j] = a[i][j] + m * a[k][j];  // Eq. 68
      a[i][k] = T(0);
    }
  }
  if (!(abs(a[n - 1][n - 1]) > tiny)) return false;
  c[n - 1] = T(1) / a[n - 1][n - 1];  // Eq. 75
  // U = D^-1 A_{n-1} (Eq. 77), stored in a's strict upper triangle.
  for (int i = 0; i < n; ++i)
    for (int j = i + 1; j < n; ++j) a[i][j] = c[i] * a[i][j];
  // Unit-triangular inverses (Eq. 78), diagonal by diagonal: Li = L^-1 (lower), Ui = U^-1 (upper,
  // through U' by Eq. 79).
  T Li[kMaxLdupSize][kMaxLdupSize], Ui[kMaxLdupSize][kMaxLdupSize];
  for (int d = 1; d < n; ++d)
    for (int j = 0; j + d < n; ++j) {
      const int i = j + d;
      if (d == 1) {
        Li[i][j] = -L[i][j];
        Ui[j][i] = -a[j][i];
        continue;
      }
      T sl = Li[i][j + 1] * L[j + 1][j], su = a[j][j + 1] * Ui[j + 1][i];
      for (int k = j + 2; k < i; ++k) {
        sl = sl + Li[i][k] * L[k][j];
        su = su + a[j][k] * Ui[k][i];
      }
      Li[i][j] = -sl - L[i][j];
      Ui[j][i] = -su - a[j][i];
    }
  // B = U^-1 D^-1 (Eq. 80): upper triangular, B_jj = c_j.
  T B[kMaxLdupSize][kMaxLdupSize];
  for (int j = 0; j < n; ++j) {
    B[j][j] = c[j];
    for (int i = 0; i < j; ++i) B[i][j] = Ui[i][j] * c[j];
  }
  // Y = B L^-1 (Eq. 81) and A^-1 = Y P (Eq. 82): column k of Y is column perm[k] of A^-1.
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < n; ++j) {
      T y;
      if (i > j) {
        y = B[i][i] * Li[i][j];
        for (int k = i + 1; k < n; ++k) y = y + B[i][k] * Li[k][j];
      } else {
        y = B[i][j];
        for (int k = j + 1; k < n; ++k) y = y + B[i][k] * Li[k][j];
      }
      Ainv[i * n + perm[j]] = y;
    }
  return true;
}

}  // namespace treedyn
