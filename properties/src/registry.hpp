// Internal: the property registry (name, statement, claim rule, generator, check).
#pragma once

#include <rapidcheck.h>

#include <optional>
#include <string_view>
#include <vector>

#include "softcheck/generators.hpp"
#include "softcheck/kernel.hpp"
#include "softcheck/properties.hpp"

namespace softcheck::props::detail {

// A set of coverage classes (properties.hpp, CaseClass) as bits.
constexpr unsigned class_bit(CaseClass c) { return 1u << static_cast<unsigned>(c); }
inline constexpr unsigned masks_ties_t = class_bit(CaseClass::masks) | class_bit(CaseClass::ties) |
                                         class_bit(CaseClass::t_not_1);

// What a property's cases feed an op: the logits alone; the logits with a
// class target or an upstream gradient (the gradient ops); or a bias row
// with q, K and V (the ops with a head dimension, attention).
enum class CaseInputs { logits, gradient, attention };
CaseInputs case_inputs(Op op);

struct PropertyDef {
  PropertyInfo info;
  Claim (*claim)(const Kernel&, Op);
  rc::Gen<Case> (*cases)(Format, const gen::RowOptions&);
  CaseResult (*check)(const Kernel&, Op, const Case&);
  // The classes a passing run should have met (print_coverage says when it
  // did not): masks, ties and T != 1, less what the property's scope rules
  // out, plus the class its statement is about.
  unsigned expected = masks_ties_t;
  // The inputs its cases carry: the logits alone, a target and an upstream
  // gradient besides (the gradient ops), or attention's q, K and V.
  CaseInputs inputs = CaseInputs::logits;
};

// The properties whose check measures the outputs in the kernel's output
// format (Kernel::output_format(): the result format of quantised outputs,
// whose ULPs their contracts are written in) or exactly: sum_to_one is the
// mass a quantised row keeps, |sum P - 1| <= B (2u + n eta) in the result
// format's u and eta; ordering holds up to the ties rounding makes (a
// rounding is monotone). The others are stated in the storage format.
inline constexpr std::string_view stated_in_output_format[] = {
    "sum_to_one",   "accuracy", "shift_invariance", "ordering",          "permutation",
    "no_nonfinite", "range",    "fully_masked",     "batch_independence"};

// The properties whose check runs the kernel on the case's row as given
// (at any temperature), never on a row it makes from it (shifted, permuted,
// compacted, or beside other rows): the ones a kernel reading MX blocks
// (Kernel::mx_inputs) claims, on rows the driver converts with mx_row,
// since a row made from an MX row is in general no MX row.
inline constexpr std::string_view stated_on_the_row_as_given[] = {
    "sum_to_one", "accuracy",     "ordering",    "range",      "no_nonfinite",
    "underflow",  "fully_masked", "temperature", "log_softmax"};

// Not claimed, with the reason, whatever the kernel declares or --force
// says: when the property's statement and the op take different inputs
// (PropertyDef::inputs against case_inputs(op)), or when the kernel's
// outputs are quantised to a narrower format (Kernel::quantised_outputs)
// and the property is not stated_in_output_format, or when it reads its rows
// as MX blocks (Kernel::mx_inputs) and the property is not
// stated_on_the_row_as_given. The inputs' reason comes first.
std::optional<Claim> cannot_claim(const PropertyDef& def, const Kernel& kernel, Op op);

// How the reason of a property claimed by the floor (no contract needed)
// starts; `check` shows it beside the verdict.
inline constexpr std::string_view floor_claim_prefix = "the floor: ";

const std::vector<PropertyDef>& registry();
const PropertyDef* find_def(std::string_view name);

}  // namespace softcheck::props::detail
