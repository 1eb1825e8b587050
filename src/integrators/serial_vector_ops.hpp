// Optimised replacements for the hot operations of SUNDIALS' serial N_Vector.
//
// Debian's SUNDIALS (libsundials-dev 6.4.1) is compiled without optimisation (-O0: every loop
// keeps its index and pointers on the stack, about 20 instructions an element where -O2 takes
// two). Its vector operations took 15 % of a 10 s dopri5 run of hdca on the 1,024-body chain. An
// N_Vector's operations are a table of function pointers that SUNDIALS lets a user replace, and a
// clone copies its table (N_VCopyOps), so replacing them on the state vector before a solver is
// created reaches every vector the solver makes.
//
// Each replacement computes what the operation it replaces computes, element for element and
// operation for operation (SUNDIALS' nvector_serial.c, with its special cases), so results are the
// same bits: tests/integrators/test_integrators.cpp compares each with the library's own on random vectors.
// N_VLinearCombination had no fused operation (serial vectors are made with fused operations
// off), so SUNDIALS scaled the first vector and added the others one N_VLinearSum at a time, a
// pass over z per vector; the replacement does the same arithmetic in one pass.
#pragma once

#include <nvector/nvector_serial.h>

namespace treedyn::serial_vector_ops {

/// Installs the replacements in the operations table of `v`, a serial vector (N_VNew_Serial).
/// Clones made of `v` afterwards carry them too.
void install(N_Vector v);

// The replacements, exposed for the tests that compare them with SUNDIALS' own.
void linear_sum(sunrealtype a, N_Vector x, sunrealtype b, N_Vector y, N_Vector z);
void scale(sunrealtype c, N_Vector x, N_Vector z);
/// What N_VLinearCombination computes when a vector has no fused operation:
/// N_VScale(c[0], X[0], z), then N_VLinearSum(c[i], X[i], 1, z, z) for i = 1 ... nvec - 1.
int linear_combination(int nvec, sunrealtype* c, N_Vector* X, N_Vector z);
sunrealtype weighted_square_sum(N_Vector x, N_Vector w);
sunrealtype wrms_norm(N_Vector x, N_Vector w);

}  // namespace treedyn::serial_vector_ops
