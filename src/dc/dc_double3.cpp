// HandleTree<double, 3>: see dc_core_impl.hpp.
#include "dc/dc_core_impl.hpp"

template class treedyn::dc::HandleTree<double, 3>;
