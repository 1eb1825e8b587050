// SUNDIALS' serial vector operations compiled here; see serial_vector_ops.hpp. Built with
// -ffp-contract=off (src/CMakeLists.txt): a fused multiply-add would round a*x + y once where
// SUNDIALS rounds twice.
#include "serial_vector_ops.hpp"

#include <algorithm>
#include <cmath>

namespace treedyn::serial_vector_ops {
namespace {

struct View {
  sunrealtype* data;
  sunindextype size;
};
View view(N_Vector v) { return {NV_DATA_S(v), NV_LENGTH_S(v)}; }

/// z_i = f(x_i, y_i) over the vectors' entries.
template <class F>
void each(N_Vector x, N_Vector y, N_Vector z, F f) {
  const View X = view(x), Y = view(y), Z = view(z);
  for (sunindextype i = 0; i < Z.size; ++i) Z.data[i] = f(X.data[i], Y.data[i]);
}

/// y <- a x + y, with SUNDIALS' cases for a = 1 and a = -1 (Vaxpy_Serial).
void axpy(sunrealtype a, N_Vector x, N_Vector y) {
  if (a == 1.0) return each(x, y, y, [](sunrealtype xi, sunrealtype yi) { return yi + xi; });
  if (a == -1.0) return each(x, y, y, [](sunrealtype xi, sunrealtype yi) { return yi - xi; });
  each(x, y, y, [a](sunrealtype xi, sunrealtype yi) { return yi + a * xi; });
}

}  // namespace

// N_VLinearSum_Serial's cases in its order: each case rounds as SUNDIALS' does (a (x + y) is not
// a x + a y in floating point).
void linear_sum(sunrealtype a, N_Vector x, sunrealtype b, N_Vector y, N_Vector z) {
  if (b == 1.0 && z == y) return axpy(a, x, y);
  if (a == 1.0 && z == x) return axpy(b, y, x);
  if (a == 1.0 && b == 1.0) return each(x, y, z, [](sunrealtype xi, sunrealtype yi) { return xi + yi; });
  bool test = false;
  if ((test = (a == 1.0 && b == -1.0)) || (a == -1.0 && b == 1.0)) {  // v2 - v1
    N_Vector v1 = test ? y : x, v2 = test ? x : y;
    return each(v2, v1, z, [](sunrealtype p, sunrealtype q) { return p - q; });
  }
  if ((test = (a == 1.0)) || b == 1.0) {  // c v1 + v2
    const sunrealtype c = test ? b : a;
    N_Vector v1 = test ? y : x, v2 = test ? x : y;
    return each(v1, v2, z, [c](sunrealtype p, sunrealtype q) { return (c * p) + q; });
  }
  if ((test = (a == -1.0)) || b == -1.0) {  // c v1 - v2
    const sunrealtype c = test ? b : a;
    N_Vector v1 = test ? y : x, v2 = test ? x : y;
    return each(v1, v2, z, [c](sunrealtype p, sunrealtype q) { return (c * p) - q; });
  }
  if (a == b) return each(x, y, z, [a](sunrealtype xi, sunrealtype yi) { return a * (xi + yi); });
  if (a == -b) return each(x, y, z, [a](sunrealtype xi, sunrealtype yi) { return a * (xi - yi); });
  each(x, y, z, [a, b](sunrealtype xi, sunrealtype yi) { return (a * xi) + (b * yi); });
}

// N_VScale_Serial's cases: x <- c x in place, else a copy, a negation or c x.
void scale(sunrealtype c, N_Vector x, N_Vector z) {
  if (z == x) return each(x, x, x, [c](sunrealtype xi, sunrealtype) { return xi * c; });
  if (c == 1.0) return each(x, x, z, [](sunrealtype xi, sunrealtype) { return xi; });
  if (c == -1.0) return each(x, x, z, [](sunrealtype xi, sunrealtype) { return -xi; });
  each(x, x, z, [c](sunrealtype xi, sunrealtype) { return c * xi; });
}

namespace {

/// s <- s + c x over n entries, with axpy's cases for c = +-1.
void add_scaled(sunrealtype c, const sunrealtype* x, sunrealtype* s, int n) {
  if (c == 1.0)
    for (int j = 0; j < n; ++j) s[j] = s[j] + x[j];
  else if (c == -1.0)
    for (int j = 0; j < n; ++j) s[j] = s[j] - x[j];
  else
    for (int j = 0; j < n; ++j) s[j] = s[j] + c * x[j];
}

}  // namespace

// N_VScale(c[0], X[0], z), then N_VLinearSum(c[i], X[i], 1, z, z) (axpy) for each later vector,
// one block of entries at a time: each entry sees the same operations in the same order, and z
// is written once instead of once a vector. Where a later X[i] is z itself, SUNDIALS read z as
// updated so far: those calls are made one by one.
int linear_combination(int nvec, sunrealtype* c, N_Vector* X, N_Vector z) {
  if (nvec < 1) return -1;
  for (int i = 1; i < nvec; ++i)
    if (X[i] == z) {
      scale(c[0], X[0], z);
      for (int k = 1; k < nvec; ++k) linear_sum(c[k], X[k], 1.0, z, z);
      return 0;
    }
  constexpr int kBlock = 256;
  sunrealtype s[kBlock];
  const View Z = view(z);
  for (sunindextype from = 0; from < Z.size; from += kBlock) {
    const int n = static_cast<int>(std::min<sunindextype>(kBlock, Z.size - from));
    const sunrealtype* x0 = NV_DATA_S(X[0]) + from;
    if (X[0] == z)  // scale's cases, entry by entry
      for (int j = 0; j < n; ++j) s[j] = x0[j] * c[0];
    else if (c[0] == 1.0)
      std::copy(x0, x0 + n, s);
    else if (c[0] == -1.0)
      for (int j = 0; j < n; ++j) s[j] = -x0[j];
    else
      for (int j = 0; j < n; ++j) s[j] = c[0] * x0[j];
    for (int i = 1; i < nvec; ++i) add_scaled(c[i], NV_DATA_S(X[i]) + from, s, n);
    std::copy(s, s + n, Z.data + from);
  }
  return 0;
}

// N_VWSqrSumLocal_Serial and N_VWrmsNorm_Serial: the squares summed in order.
sunrealtype weighted_square_sum(N_Vector x, N_Vector w) {
  const View X = view(x), W = view(w);
  sunrealtype sum = 0.0;
  for (sunindextype i = 0; i < X.size; ++i) {
    const sunrealtype p = X.data[i] * W.data[i];
    sum += p * p;
  }
  return sum;
}

sunrealtype wrms_norm(N_Vector x, N_Vector w) {
  const sunrealtype mean = weighted_square_sum(x, w) / static_cast<sunrealtype>(NV_LENGTH_S(x));
  return mean <= 0.0 ? 0.0 : std::sqrt(mean);  // SUNRsqrt
}

void install(N_Vector v) {
  v->ops->nvlinearsum = linear_sum;
  v->ops->nvscale = scale;
  v->ops->nvlinearcombination = linear_combination;
  v->ops->nvwsqrsumlocal = weighted_square_sum;
  v->ops->nvwrmsnorm = wrms_norm;
}

}  // namespace treedyn::serial_vector_ops
