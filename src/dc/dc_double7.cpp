// HandleTree<double, 7>: paper 000's absolute coordinates (r, Euler parameters) for ali3; see
// dc_core_impl.hpp.
#include "dc/dc_core_impl.hpp"

template class treedyn::dc::HandleTree<double, 7>;
