/* What SUNDIALS' ERKStep does with a first-same-as-last table (dopri5) when a step
 * post-processing function is set, and that serving the first stage from the last one gives the
 * same solution (docs/benchmarks.md, "dopri5's last stage reused"; src/integrators/sundials.cpp).
 * A nonlinear oscillator to t = 10 in 20 outputs, rtol = atol = 1e-8, three ways:
 *   0: no post-processing function (SUNDIALS reuses the last stage itself)
 *   1: a post-processing function that does nothing (SUNDIALS evaluates f again every step)
 *   2: as 1, with the first stage after each accepted step served from the last stage
 * Build and run (Debian's libsundials-dev):
 *   gcc bench/sundials_fsal.c -o /tmp/sundials_fsal -lsundials_arkode -lsundials_nvecserial -lm && /tmp/sundials_fsal
 */
#include <arkode/arkode_erkstep.h>
#include <nvector/nvector_serial.h>
#include <stdio.h>

static int serve = 0, ready = 0, real = 0, served = 0;
static double ready_t = 0.0;
static N_Vector last = NULL;

static int f(sunrealtype t, N_Vector y, N_Vector ydot, void* user) {
  (void)user;
  if (serve && ready && t == ready_t && last && last != ydot) {
    ready = 0;
    N_VScale(1.0, last, ydot);
    ++served;
    return 0;
  }
  ready = 0;
  last = ydot;
  ++real;
  const double q = NV_Ith_S(y, 0);
  NV_Ith_S(ydot, 0) = NV_Ith_S(y, 1);
  NV_Ith_S(ydot, 1) = -q - 0.3 * q * q * q;
  return 0;
}

static int after_step(sunrealtype t, N_Vector y, void* user) {
  (void)y, (void)user;
  ready = 1;
  ready_t = t;
  return 0;
}

int main(void) {
  SUNContext ctx;
  SUNContext_Create(NULL, &ctx);
  for (int mode = 0; mode < 3; ++mode) {
    N_Vector y = N_VNew_Serial(2, ctx);
    NV_Ith_S(y, 0) = 1.0;
    NV_Ith_S(y, 1) = 0.0;
    void* mem = ERKStepCreate(f, 0.0, y, ctx);
    ERKStepSetTableNum(mem, ARKODE_DORMAND_PRINCE_7_4_5);
    ERKStepSStolerances(mem, 1e-8, 1e-8);
    if (mode > 0) ERKStepSetPostprocessStepFn(mem, after_step);
    serve = mode == 2;
    ready = real = served = 0;
    last = NULL;
    sunrealtype t = 0.0;
    for (int k = 1; k <= 20; ++k) ERKStepEvolve(mem, 0.5 * k, y, &t, ARK_NORMAL);
    long steps = 0, evaluations = 0;
    ERKStepGetNumSteps(mem, &steps);
    ERKStepGetNumRhsEvals(mem, &evaluations);
    printf("mode %d: %ld steps, %ld evaluations asked (%d made, %d served), y(10) = %.17g %.17g\n", mode, steps,
           evaluations, real, served, NV_Ith_S(y, 0), NV_Ith_S(y, 1));
    ERKStepFree(&mem);
    N_VDestroy(y);
  }
  SUNContext_Free(&ctx);
  return 0;
}
