#include "allocation_counter.hpp"

#include <atomic>
#include <cstddef>

#include "treedyn/formulation.hpp"

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};
}  // namespace

#ifndef TREEDYN_SANITIZED  // the sanitizers interpose malloc themselves
extern "C" void* __libc_malloc(std::size_t);
extern "C" void* __libc_calloc(std::size_t, std::size_t);
extern "C" void* __libc_realloc(void*, std::size_t);

extern "C" void* malloc(std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_malloc(n);
}
extern "C" void* calloc(std::size_t n, std::size_t size) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_calloc(n, size);
}
extern "C" void* realloc(void* p, std::size_t n) {
  if (counting.load(std::memory_order_relaxed)) allocations.fetch_add(1, std::memory_order_relaxed);
  return __libc_realloc(p, n);
}
#endif

namespace treedyn::test {
bool allocations_counted() {
#ifdef TREEDYN_SANITIZED
  return false;
#else
  return true;
#endif
}

CountAllocations::CountAllocations() {
  allocations = 0;
  counting = true;
}
CountAllocations::~CountAllocations() { counting = false; }
long CountAllocations::count() const { return allocations.load(); }

long rhs_allocations(Formulation& formulation) {
  const Eigen::VectorXd y = formulation.ode_state();
  Eigen::VectorXd ydot(y.size());
  formulation.ode()->rhs(0.0, y, ydot);
  const CountAllocations count;
  formulation.ode()->rhs(0.0, y, ydot);
  return count.count();
}
}  // namespace treedyn::test
