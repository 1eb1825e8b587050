#include "treedyn/version.hpp"

namespace treedyn {

const char* version() { return TREEDYN_VERSION_STRING; }

}  // namespace treedyn
