// Internal: the property registry (name, statement, claim rule, generator, check).
#pragma once

#include <rapidcheck.h>

#include <string_view>
#include <vector>

#include "softcheck/generators.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::props::detail {

struct PropertyDef {
  PropertyInfo info;
  Claim (*claim)(const Kernel&, Op);
  rc::Gen<Case> (*cases)(Format, const gen::RowOptions&);
  CaseResult (*check)(const Kernel&, Op, const Case&);
};

const std::vector<PropertyDef>& registry();
const PropertyDef* find_def(std::string_view name);

}  // namespace softcheck::props::detail
