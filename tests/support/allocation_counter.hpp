// Counts heap allocations made by this process while a Counting scope is alive (malloc is
// interposed in the test executable, which catches operator new, Eigen and the containers).
#pragma once

namespace treedyn {
class Formulation;
}

namespace treedyn::test {

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
