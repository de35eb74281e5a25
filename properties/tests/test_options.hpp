// Test budget of the property ctest: RC_PARAMS (RapidCheck's own variable) when
// set, otherwise the CI default SOFTCHECK_PROPERTY_TESTS cases per property with a
// fixed seed (deterministic CI).
#pragma once

#include <rapidcheck.h>

#include <cstdlib>

#include "softcheck/properties.hpp"

namespace softcheck::props::testing {

inline constexpr std::uint64_t kCiSeed = 20240611;

inline CheckOptions ci_options() {
  CheckOptions o;
  if (std::getenv("RC_PARAMS") != nullptr) {
    const rc::detail::TestParams& tp = rc::detail::configuration().testParams;
    o.tests = tp.maxSuccess;
    o.seed = tp.seed;
    o.max_size = tp.maxSize;
    o.shrink = !tp.disableShrinking;
  } else {
    o.tests = SOFTCHECK_PROPERTY_TESTS;
    o.seed = kCiSeed;
  }
  return o;
}

}  // namespace softcheck::props::testing
