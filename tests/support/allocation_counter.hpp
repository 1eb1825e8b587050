// Counts heap allocations made by this process while a Counting scope is alive (malloc is
// interposed in the test executable, which catches operator new, Eigen and the containers).
#pragma once

namespace treedyn {
class Formulation;
}

namespace treedyn::test {

/// False in the sanitizer build, where the sanitizers own malloc: tests of allocations skip.
bool allocations_counted();

#define TREEDYN_SKIP_UNLESS_ALLOCATIONS_COUNTED()                                   \
  if (!::treedyn::test::allocations_counted())                                       \
  GTEST_SKIP() << "allocations are not counted under the sanitizers (they own malloc)"

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  long count() const;
};

/// Allocations made by one evaluation of an ODE formulation's right-hand side at its current
/// state (after a first call, which may size scratch space).
long rhs_allocations(Formulation& formulation);

}  // namespace treedyn::test
