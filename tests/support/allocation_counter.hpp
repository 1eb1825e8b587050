// Counts heap allocations made by this process while a Counting scope is alive (malloc is
// interposed in the test executable, which catches operator new, Eigen and the containers).
#pragma once

namespace treedyn::test {

class CountAllocations {
 public:
  CountAllocations();
  ~CountAllocations();
  long count() const;
};

}  // namespace treedyn::test
