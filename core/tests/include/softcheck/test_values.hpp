// Values the tests of every component spell often, defined once: a test file
// writes `using softcheck::test_values::inf;`, so that the files of a test
// executable can be compiled as one unit (softcheck_unity) without two
// definitions of the same name.
#pragma once

#include <limits>

namespace softcheck::test_values {

inline constexpr double inf = std::numeric_limits<double>::infinity();
inline constexpr double nan = std::numeric_limits<double>::quiet_NaN();

}  // namespace softcheck::test_values
