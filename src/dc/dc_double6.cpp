// HandleTree<double, 6>: see dc_core_impl.hpp.
#include "dc/dc_core_impl.hpp"

template class treedyn::dc::HandleTree<double, 6>;
