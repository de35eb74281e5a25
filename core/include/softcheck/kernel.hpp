// A kernel as the harness sees it: its declarations (what it claims, per op)
// and a batched compute function over the op's operands. Adding a kernel is one small file in impls/src
// and one registration line in impls/src/registry.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "softcheck/format.hpp"
#include "softcheck/fp_env.hpp"
#include "softcheck/minifloat.hpp"
#include "softcheck/op.hpp"

namespace softcheck {

// Summary of a row of scaled inputs z = x / temperature that accuracy bounds
// are written in. Only "contributing" entries count: those with
// z_max - z_i <= L_T, L_T = (p - emin) ln 2 + ln 2: exp(-L_T) = denorm_min/4, one
// factor ln 2 below the rounding threshold denorm_min/2 as a margin (counting
// more entries only raises R and M, so the bound stays safe). Entries below
// that have an exact softmax that rounds to 0 and a computed one of at most
// denorm_min, whatever the formula.
struct RowShape {
  double n = 0;  // row length (cols)
  double R = 0;  // range of the contributing finite z: z_max - min z_i
  double M = 0;  // largest |z_i| over the contributing entries
  // Attention rows (attention_row_shape): the head dimension d and the
  // largest dot-product mass D = max_j sum_i (|q_i K_ji| + 2^emin) /
  // (T sqrt(d)) over the contributing keys, 2^emin the format's smallest
  // normal; the error of a computed score is a multiple of u D per product
  // and sum (Higham, Accuracy and Stability, eq. 3.5, |fl(q . k) - q . k| <=
  // gamma_d sum_i |q_i k_i|, with each product's underflow, up to u 2^emin).
  // 0 for other rows.
  double h = 0;
  double D = 0;
  bool temperature_is_one = true;
};

RowShape row_shape(std::span<const double> x, double temperature, Format f);

// The shape of one attention row: the scores z_j = (q . K_j) / (T sqrt(d)) +
// x_j (x the bias row, -inf masked) stand for z in n, R and M; h = d and D
// as above. A key contributes unless a kernel of format f, computing its
// score and the max within (h + 8) u (D_j + |x_j|) each, puts it below the
// cut-off: which keys count depends on the kernel's format, not only on
// the exact scores. q holds d values, K cols x d (key-major). Computed in double
// with a relative slack that keeps every figure an upper bound of the exact
// one (as row_shape).
// With a softcap c > 0 (OpParams::softcap) the scores are c tanh(y / c) +
// x_j, y = (q . K_j) / (T sqrt(d)); D stays the dot products' mass (tanh
// passes their error on times sech^2 <= 1).
// With a sink logit s (OpParams::sink, finite) the sink counts as one more
// key of exact score s (n + 1; in R and M when it contributes, with the
// error u|s| of a kernel's fl(s log2 e)) and no dot product.
RowShape attention_row_shape(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                             std::int64_t d, double temperature, Format f, double softcap = 0,
                             double sink = -HUGE_VAL);
// The shape of a relu_attention row (op.hpp, OutputKind::relu_attention_output):
// n and h = d only. Its scale holds each key's score mass, so no score
// figure (R, M, D) enters a contract: every first-order error is a
// multiple of u s_i with a coefficient in n and h (impls/src/attention_alternatives.cpp).
RowShape relu_attention_row_shape(std::span<const double> x, std::int64_t d, double temperature);
// The shape of a linear_attention row (op.hpp, OutputKind::linear_attention_output):
// n, h = d; R the range of the unmasked biases, which enter as
// exp(x_j - max x) (only those within format f's contributing cut-off of
// the largest, as row_shape); M the largest -q_i / T over the query's
// negative components, the argument of phi(t) = exp(t) for t <= 0 whose
// rounding at T != 1 is a relative error M u of phi. D = 0.
RowShape linear_attention_row_shape(std::span<const double> x, std::span<const double> q, std::int64_t d,
                                    double temperature, Format f);
// The contract's row shape for an op with a head dimension (has_head_dim):
// the one above for its output kind, attention_row_shape for attention's.
RowShape attention_op_row_shape(Op op, std::span<const double> x, std::span<const double> q,
                                std::span<const double> K, std::int64_t d, double temperature, Format f,
                                double softcap = 0, double sink = -HUGE_VAL);
// The bias row x of a query with window w: x_j, or -inf for each key
// outside the window (KeyWindow::first / end). The exact attention of (x,
// w) is that of this row with no window: the oracle, the row shapes and the
// properties take it (the kernel computes the same mask itself).
std::vector<double> window_masked_bias(std::span<const double> x, const KeyWindow& w);

// True when a kernel of format f can hold its intermediates on this
// attention row: every score's terms s |q_i K_ji| summed, the scores and
// their shifts from the max are finite values of f (with 4u of margin).
bool attention_row_fits_format(std::span<const double> x, std::span<const double> q, std::span<const double> K,
                               std::int64_t d, double temperature, Format f, double softcap = 0,
                               double sink = -HUGE_VAL);

// True when a kernel of format f can represent its own intermediates on this
// row: z = x / T and the shifts z_i - max z of the finite entries are finite
// values of f (with 4u for the roundings of x / fl(T) when T != 1). Outside
// that no contract or property applies (a log-softmax of [DBL_MAX/2, -DBL_MAX]
// at T = 1.5 has an exact value just inside the range that z_i - max z,
// rounded, overflows; found by fuzz_differential).
bool row_fits_format(std::span<const double> x, double temperature, Format f);

// A temperature a kernel of format f can use: finite, > 0 and rounding to a
// normal value of f (a subnormal or zero fl(T) makes x / fl(T) meaningless).
bool temperature_fits_format(double temperature, Format f);

// Accuracy contract: the largest componentwise ULP error (in the output format)
// the kernel promises on a row with finite entries (-inf masks allowed):
//   K = a + b*n + c*R + (d + t*[temperature != 1]) * M   (first order, in units of u)
//       + hd*h*D + dot*D + head*h                        (attention rows only)
//   bound = K / (1 - K*u)                                (Higham's gamma_K, covers
//                                                         the second-order terms)
// t accounts for rounding fl(x/temperature) (and of the temperature itself);
// hd and dot for the scores' dot products (RowShape::h, D). head, of h
// alone, is for the attention outputs whose scale already carries each
// key's dot-product mass (relu_attention: a score's absolute error u h D_j
// is u h times its key's share of s_i) or whose weights are dot products
// of positive terms (linear_attention: gamma_d relative): there the head
// dimension enters without D, which no other term can say.
// Each kernel derives its coefficients next to its code from REFERENCE.md.
struct Contract {
  bool declared = false;  // false: "none" (a baseline reported, never gated)
  double a = 0, b = 0, c = 0, d = 0, t = 0;
  double hd = 0, dot = 0;  // of h*D and D (attention)
  double head = 0;         // of h (relu and linear attention)
  std::string why;  // derivation or, when none, why there is no useful bound

  double bound_ulps(const RowShape& s, Format f) const;  // +inf when K*u >= 1
  std::string formula() const;                             // e.g. "2 + 1*n + 2*R + 4*M[T!=1]"
  // The same terms, each non-zero one written by `term(coefficient, variable)`
  // (the constant's variable is ""), joined by " + "; "none" when undeclared.
  std::string formula(const std::function<std::string(double, std::string_view)>& term) const;
};

// One call of a kernel on `rows` rows of `cols` inputs (rows, cols >= 1,
// guaranteed by the caller; head_dim >= 1 for an op with a head dimension,
// has_head_dim(op), else 0). in[i] and out[i] point to the op's operands in
// op-table order (spec(op).in / .out), each in the kernel's `format` (double
// for f64, float for f32, uint16 bit patterns for f16/bf16) and row-major:
// a row operand holds rows x cols elements, a scalar operand one per row.
// A class-index input (InputKind::class_index) holds one std::int64_t per
// row, whatever the format: in [0, cols), or ignore_index. A head operand
// holds rows x head_dim elements, a keys operand rows x cols x head_dim
// (output_cols), a window operand one KeyWindow per row (every one valid
// for cols keys: KeyWindow::valid).
struct OpCall {
  Op op;
  std::span<const void* const> in;
  std::span<void* const> out;
  std::int64_t rows;
  std::int64_t cols;
  double temperature;
  std::int64_t head_dim = 0;
};
using ComputeFn = std::function<void(const OpCall&)>;

// The compute function of a kernel whose ops each have one input and one
// output, from fn(op, x, out, rows, cols, temperature).
template <class Fn>
ComputeFn single_operand(Fn fn) {
  return [fn = std::move(fn)](const OpCall& c) { fn(c.op, c.in[0], c.out[0], c.rows, c.cols, c.temperature); };
}

// The floor: checks every kernel gets whatever it declares, because they need
// no derived contract (docs/gating-your-kernel.md, "The floor"). A kernel may
// opt out of one for an op, with the reason the report shows.
//   no_nonfinite: no NaN/inf output where the exact value is finite, on rows
//                 the kernel's format can hold (row_fits_format); `run`
//                 counts it against the oracle, `check` claims the property
//   range, ordering: the exact properties of that name (docs/properties.md)
//   reference:    for an output without a contract, `run`'s reference rule:
//                 on every row, error <= k x the error of softcheck's stable
//                 kernel in the same format + slack (FlashAttention's test rule;
//                 docs/gating-your-kernel.md, "The reference rule")
//   sum_to_one, shift_invariance, permutation: the properties of that name
//                 with the floor's generic tolerance in place of a contract's
//                 bound (docs/properties.md)
inline constexpr std::string_view floor_no_nonfinite = "no_nonfinite";
inline constexpr std::string_view floor_range = "range";
inline constexpr std::string_view floor_ordering = "ordering";
inline constexpr std::string_view floor_reference = "reference";
inline constexpr std::string_view floor_sum_to_one = "sum_to_one";
inline constexpr std::string_view floor_shift_invariance = "shift_invariance";
inline constexpr std::string_view floor_permutation = "permutation";
// Every floor check, for validating an opt-out (a plugin's, e.g.).
inline constexpr std::string_view floor_checks[] = {floor_no_nonfinite, floor_range,        floor_ordering,
                                                    floor_sum_to_one,   floor_shift_invariance, floor_permutation,
                                                    floor_reference};

struct OptOut {
  std::string check;   // a floor check, e.g. floor_no_nonfinite
  std::string reason;  // why the kernel does not meet it (shown in the report)
};

struct OpDecl {
  Op op;
  Contract contract;  // of the op's first output
  OpParams params{};  // alpha / k / threshold of a parametrised sparse op (docs/sparse.md)
  // The contracts of the op's further outputs, spec(op).out[1], out[2], ...
  // (softmax_lse's lse); each in its output's metric.
  std::vector<Contract> further_contracts{};

  // Floor checks not claimed for this op, each with its reason.
  std::vector<OptOut> opt_outs{};

  // The contract of output `i`: none ("declared" false) for an output past
  // the declared ones (a declaration that forgot one promises nothing).
  const Contract& contract_of(std::size_t i) const {
    static const Contract undeclared{.why = "no contract declared for this output"};
    if (i == 0) return contract;
    return i - 1 < further_contracts.size() ? further_contracts[i - 1] : undeclared;
  }
  // The opt-out of floor check `check`, or nullptr when the op claims it (an
  // opt-out without a reason does not count: the report must say why).
  const OptOut* opted_out(std::string_view check) const {
    for (const OptOut& o : opt_outs)
      if (o.check == check && !o.reason.empty()) return &o;
    return nullptr;
  }
};

struct Kernel {
  std::string name;         // e.g. "shifted_log1p_f32"
  std::string algorithm;    // family, e.g. "shifted_log1p"
  Format format;            // input and output element format
  // Set when every output is rounded to a narrower result format before it
  // is stored (in `format`): P cast to FP8 E4M3, as FP8 attention kernels
  // do before P.V, held exactly in f32 storage as fake quantisation does.
  // Its outputs are then measured in that format's ULPs and contracts are
  // written in them (0.5 is the floor: the correctly rounded value). `run`
  // and the properties stated in the output format's ULPs take such a
  // kernel; sweep, compare and the fuzzers, whose tolerances are in the
  // storage format, do not (docs/low-precision.md).
  std::optional<Format> quantised_outputs;
  // Set when the kernel reads its rows as OCP MX blocks of this element
  // format (MXFP8 E4M3 ...): blocks of 32 consecutive entries, an E8M0
  // scale each, -inf masks kept beside them (minifloat.hpp, mx_row). Its
  // input buffer, in `format`, holds the values the blocks hold (each exact
  // in f32), and `run` gives it rows converted so and judges it against
  // the exact op of those values, as every kernel is judged on values exact
  // in its input; so does `check`, for the properties stated on the row as
  // given. sweep, compare and the fuzzers, which make rows of `format`'s
  // values, do not take it.
  std::optional<MiniFloat> mx_inputs;
  std::vector<OpDecl> ops;  // the ops it provides, each with its contract
  MaskedRowPolicy masked_policy = MaskedRowPolicy::nan;
  std::string description;
  ComputeFn compute;
  bool available = true;           // false: listed and reported, never run
  std::string unavailable_reason;  // e.g. "no CUDA device"
  // The command-line options that load this kernel, for repro lines
  // ("--plugin /abs/lib.so --isolate"); empty for a built-in kernel.
  std::string load_options;
  bool test_only = false;          // deliberately broken kernels for mutation tests
  // Non-empty: why the kernel runs only in the default floating-point
  // environment (fp_env.hpp; e.g. an exp that builds 2^n from exponent bits
  // and relies on subnormal intermediates). `run --fp-env` reports it
  // unavailable in any other, never as held.
  std::string requires_default_fp_env;

  // The format its outputs are measured in: quantised_outputs, else format.
  Format output_format() const { return quantised_outputs.value_or(format); }
  // "f32", "f32->e4m3" for quantised outputs, "mxfp8_e4m3->f32" for MX
  // inputs (format.hpp).
  std::string format_label() const {
    return softcheck::format_label(softcheck::name(format),
                                   quantised_outputs ? softcheck::name(*quantised_outputs) : std::string_view{},
                                   mx_inputs ? mx_format_name(*mx_inputs) : std::string{});
  }

  const OpDecl* find(Op op) const;
  // The call of an op with one input and one output: x in, `out` its output
  // operand (rows x cols elements, or rows for a scalar op). Throws
  // std::invalid_argument for an op with several outputs (use the form below).
  void run(Op op, const void* x, void* out, std::int64_t rows, std::int64_t cols, double temperature) const;
  // The call of an op with one input and any number of outputs: `outs[i]`
  // holds output i (spec(op).out[i]).
  void run(Op op, const void* x, std::span<void* const> outs, std::int64_t rows, std::int64_t cols,
           double temperature) const;
  // The call of any op, every operand given (OpCall: an op with several
  // inputs, such as cross_entropy's logits and targets). Throws
  // std::invalid_argument when the operand counts are not the op's.
  void call(const OpCall& c) const;
};

// The registry of built-in kernels (in registration order).
const std::vector<Kernel>& builtin_kernels();
// Deliberately broken test-only kernels (mutation self-test); never in builtin_kernels().
const std::vector<Kernel>& mutant_kernels();
const Kernel* find_kernel(std::string_view name);  // searches builtin, peers (peers.hpp), gradient, attention, quantised, then mutants
// The kernels of the ops that take more than the logits (cross_entropy,
// softmax_backward, log_softmax_backward; docs/gradients.md), in registration order, the test-only careless one
// included (Kernel::test_only). Kept out of builtin_kernels(): the
// single-input paths (properties, sweep, fuzzers, plugins) do not take
// them; `run` does.
const std::vector<Kernel>& gradient_kernels();
// The reference of `run`'s reference rule for an output of kind `kind` in
// format f: softcheck's stable kernel, the textbook algorithm the peers'
// test suites compare with (subtract the max, exp, sum in order, divide; log
// of the sum for log-softmax and lse): shifted_f32 / shifted_f64, and for the
// kinds it lacks (entropy) shifted_log1p; in f16 and bf16 f16/bf16_shifted_f32acc
// (the shifted_log1p core in f32, each output rounded once: what PyTorch's
// half softmax does, accumulating in f32). With the op that
// computes the output alone; {nullptr, nullptr} when there is none.
// Gradients (docs/gradients.md): the two-pass cross-entropy kernels
// (cross_entropy_f32 / _f64, bf16/f16_cross_entropy_f32acc) and the naive
// backward kernels (softmax_backward_f32 / _f64, log_softmax_backward_f32 /
// _f64), `output` naming which of the op's outputs serves; for a
// cross-entropy output the kernel declaring the same label smoothing
// (`params`; cross_entropy_ls0p1_f32, ...).
struct StableReference {
  const Kernel* kernel = nullptr;
  const OpDecl* decl = nullptr;
  std::size_t output = 0;  // index into spec(decl->op).out
};
StableReference stable_reference_kernel(Format f, OutputKind kind, const OpParams& params = {});
// The attention kernels (docs/attention.md), in registration order, the
// test-only broken ones included (Kernel::test_only: a flash kernel that
// forgets to rescale O, one that rounds P to bf16 before P.V). Kept out of
// builtin_kernels() like gradient_kernels(); `run --attention` or `--op
// attention` takes them.
const std::vector<Kernel>& attention_kernels();
// The reference rule's kernel for output `output` of a kernel of op (one
// with a head dimension) in format f: the op's naive kernel, the textbook
// algorithm (attention_naive: three passes, the max subtracted; for relu
// and linear attention the quadratic form: weights, then their sum with V);
// {nullptr, nullptr} when there is none.
StableReference stable_attention_reference(Op op, Format f, std::size_t output);
// The sparse and sharpened kernels (sparsemax, entmax15, entmax_bisect_*,
// topk_softmax_*, threshold_softmax_*; docs/sparse.md), in registration order.
// Kept out of builtin_kernels(): the softmax paths (suite, properties, fuzzers,
// sweep) check them against exact_row, which does not apply.
const std::vector<Kernel>& sparse_kernels();
const Kernel* find_sparse_kernel(std::string_view name);
// The kernels whose outputs are quantised to a narrower format
// (Kernel::quantised_outputs: softmax with P cast to E4M3) or whose inputs
// are MX blocks (Kernel::mx_inputs), in registration order, the test-only
// ones included. Kept out of builtin_kernels(): `run` and `check` take them,
// the paths that judge in the storage format do not.
const std::vector<Kernel>& quantised_kernels();
// Why `command` (e.g. "`softcheck compare`") does not take k: empty unless
// k's outputs are quantised, whose errors are in the result format's ULPs
// while command's tolerances are in the storage format's, or k reads MX
// blocks (Kernel::mx_inputs) while command gives rows of the storage
// format's values. One text for every command that refuses them.
std::string quantised_refusal(const Kernel& k, std::string_view command);

// Why kernel k is not run in environment e: empty when it can be (e is the
// default, or k does not require it), else the unavailable reason `run` and
// `check` report (Kernel::requires_default_fp_env).
std::string not_run_in_fp_env(const Kernel& k, FpEnv e);

// k as `check` and `repro` run it in environment e (docs/fp-env.md): each
// call of its compute inside FpEnvScope(e), only the call, so the
// properties' oracle and tolerances stay in the default; "--fp-env E" in its
// load_options, so that its repro lines replay it there. A kernel that
// requires the default environment comes back unavailable with
// not_run_in_fp_env's reason. For e = default, k unchanged.
Kernel in_fp_env(const Kernel& k, FpEnv e);

}  // namespace softcheck
