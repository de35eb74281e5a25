// The ops softcheck checks, as one table checked at compile time (the shape of
// LLVM libc's MPFR operation table). Everything that depends on what an op is
// (its name, operands, parameter, reference, metric, masked-row values, plugin
// code) is a field here: the suite, the oracle, the properties, the fuzzers,
// the reports, the plugin loader and the CLI read op_table or spec(op), and no
// op name is spelled anywhere else. Adding an op: docs/adding-an-op.md.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace softcheck {

enum class Op : std::uint8_t {
  softmax,
  log_softmax,
  sparsemax,
  entmax15,
  entmax,
  topk_softmax,
  threshold_softmax,
  lse,
  entropy,
  softmax_lse,
  cross_entropy,
  softmax_backward,
  log_softmax_backward,
  attention,
  relu_attention,
  linear_attention,
};

// Shape of one operand of a call on `rows` rows of `cols` inputs.
// An attention op's row is one query against `cols` keys of head dimension
// d (OpCall::head_dim).
enum class OperandShape : std::uint8_t {
  row,     // rows x cols elements, row-major
  scalar,  // one element per row
  head,    // rows x d elements: a query or an output vector per row
  keys,    // rows x cols x d elements: per row, `cols` key (or value) vectors of d, key-major
  window,  // one KeyWindow (three int64) per row: the query's position and its window
};

// What an op's output is. It fixes the output range, the values of a fully
// masked row under each policy, and which exact value of the oracle's row it
// is compared with.
enum class OutputKind : std::uint8_t {
  none,               // an input operand
  probabilities,      // in [0, 1], summing to 1 (softmax and the sparse family)
  log_probabilities,  // in [-inf, 0]
  log_sum_exp,        // lse(z) = log sum_i exp(z_i), one per row, in [max z, max z + log n]
  entropy,            // H(softmax(z)) = -sum_i p_i log p_i, one per row, in [0, log n]
  // Cross-entropy of softmax(z) against the class target t, one per row:
  // -log p_t = (max z - z_t) + log sum_j exp(z_j - max z), in [0, +inf]
  // (+inf when z_t = -inf); 0 for a row whose target is ignore_index.
  cross_entropy_loss,
  // Its gradient with respect to z, dL/dz_j = p_j - [j = t], in [-1, 1]
  // and summing to 0; all 0 for an ignored row. Measured in Metric::scaled
  // with the scale s_j = p_j + [j = t] (docs/gradients.md).
  cross_entropy_gradient,
  // The backward passes given the upstream gradient g (docs/gradients.md),
  // both measured in Metric::scaled:
  //   softmax:     dx_i = y_i (g_i - sum_j y_j g_j),  s_i = y_i (|g_i| + sum_j y_j |g_j|)
  //   log-softmax: dx_i = g_i - p_i sum_j g_j,        s_i = |g_i| + p_i sum_j |g_j|
  // (y = p = softmax(z)). A fully masked row's forward output is a constant
  // under every policy, so its exact gradient is 0 (NaN under nan).
  softmax_gradient,
  log_softmax_gradient,
  // Attention's output vector O = sum_j p_j V_j, p = softmax(z) over the
  // scores z_j = (q . K_j) / (T sqrt(d)) + x_j (docs/attention.md). Its
  // components can cancel (V has both signs), so it is measured in
  // Metric::scaled with s_i = sum_j p_j |V_ji|: the error of every algorithm
  // is a multiple of u s_i.
  attention_output,
  // ReLU attention's output (Wortsman et al. 2023, arXiv:2309.08586; the
  // softmax replaced by relu divided by the sequence length):
  //   O_i = (1/n) sum_j relu(z_j) V_ji, the scores z_j as attention's,
  // n the row length (masked keys count in n and add 0). A fully masked
  // row has the exact value O = 0 under every policy. Measured in
  // Metric::scaled with
  //   s_i = (1/n) sum_{j unmasked} (D_j + |x_j|) |V_ji|,
  //   D_j = sum_k |q_k K_jk| / (T sqrt(d)),
  // each key's score mass: relu is 1-Lipschitz, so a computed score's
  // absolute error, a multiple of u (D_j + |x_j|) for every way of forming
  // the dot product and adding the bias (Higham, ASNA eq. 3.5), reaches O
  // as that times |V_ji| / n, near relu's kink too; relu(z_j) <= D_j + |x_j|
  // makes the products' and the sum's errors multiples of the same s_i.
  // No global score scale enters: the metric is invariant under scaling q.
  relu_attention_output,
  // Linear attention's output (Katharopoulos et al. 2020, "Transformers
  // are RNNs", arXiv:2006.16236): with phi(t) = elu(t) + 1 > 0 componentwise
  // and the query scaled by the temperature, q' = q / T (T = 1 and a zero
  // bias are the paper's form),
  //   a_j = (phi(q') . phi(K_j)) exp(x_j),  w_j = a_j / sum_k a_k,
  //   O_i = sum_j w_j V_ji,
  // the bias a log-weight: x_j = -inf masks key j as the paper's masked
  // form does. A fully masked row is 0/0: the kernel's masked-row policy.
  // Every w_j > 0, so as for attention's O the scale is s_i = sum_j w_j
  // |V_ji|: a relative error r of the weights moves O_i by at most 2 r s_i.
  linear_attention_output,
};

// The attention ops' head-shaped outputs (O of one query).
constexpr bool is_attention_output(OutputKind k) {
  return k == OutputKind::attention_output || k == OutputKind::relu_attention_output ||
         k == OutputKind::linear_attention_output;
}

// What an input operand holds: the row of logits x (scaled by the
// temperature inside the op), or one class index per row (int64, whatever the
// kernel's format; ignore_index marks a row that takes no part).
enum class InputKind : std::uint8_t {
  none,  // an output operand
  logits,
  class_index,
  upstream_gradient,  // a row in the kernel's format: dL/dy of the op's forward output
  query,              // attention: the query q, d values per row (OperandShape::head)
  keys,               // attention: the keys K_j, cols x d values per row (OperandShape::keys)
  values,             // attention: the values V_j, cols x d values per row (OperandShape::keys)
  key_window,         // attention: the query's position and window, one KeyWindow per row (OperandShape::window)
};

// Which keys a query sees by position, one per query row: key j (0-based
// among the row's cols keys) is visible when
//   position - left <= j <= position + right,
// a negative bound unbounded on its side. FlashAttention's local attention
// (window_size = (left, right)); causal is (left, right) = (-1, 0), a
// sliding window of w keys ending at the query (Mistral) (w - 1, 0); (-1,
// -1) sees every key, whatever the position. The kernel computes the mask
// from these (docs/attention.md); the bias row's -inf masks keys besides.
// Plain data (three int64, in this order): a call's window operand is an
// array of them, the CUDA kernels' too.
struct KeyWindow {
  std::int64_t position = 0;
  std::int64_t left = -1;
  std::int64_t right = -1;

  constexpr bool bounded() const { return left >= 0 || right >= 0; }
  // The visible keys of a row of n as the range [first, end) (empty when
  // first >= end), each bound clamped to [0, n]: the form every kernel tests
  // (first <= j < end), so that no kernel spells the rule again.
  constexpr std::int64_t first(std::int64_t n) const {
    if (left < 0) return 0;
    return position - left < 0 ? 0 : (position - left > n ? n : position - left);
  }
  constexpr std::int64_t end(std::int64_t n) const {
    if (right < 0) return n;
    return position + right + 1 < 0 ? 0 : (position + right + 1 > n ? n : position + right + 1);
  }
  // A window the op takes on a row of n keys: a bounded one's position in
  // [0, n), each bound in [-1, n] (no overflow in position +- bound).
  constexpr bool valid(std::int64_t n) const {
    if (left < -1 || right < -1 || left > n || right > n) return false;
    return !bounded() || (position >= 0 && position < n);
  }
  constexpr bool operator==(const KeyWindow& o) const {
    return position == o.position && left == o.left && right == o.right;
  }
};

// The output kinds that are gradients (measured in Metric::scaled).
constexpr bool is_gradient(OutputKind k) {
  return k == OutputKind::cross_entropy_gradient || k == OutputKind::softmax_gradient ||
         k == OutputKind::log_softmax_gradient;
}

// The output kinds measured in Metric::scaled (the oracle gives their scale).
constexpr bool has_scale(OutputKind k) { return is_gradient(k) || is_attention_output(k); }

// The scale s of an output's scaled metric, in words (reports, docs).
constexpr std::string_view scale_formula(OutputKind k) {
  switch (k) {
    case OutputKind::attention_output: return "s_i = sum_j p_j |V_ji|";
    case OutputKind::relu_attention_output: return "s_i = (1/n) sum_j (D_j + |x_j|) |V_ji|, D_j = sum_k |q_k K_jk| / (T sqrt d)";
    case OutputKind::linear_attention_output: return "s_i = sum_j w_j |V_ji|";
    case OutputKind::cross_entropy_gradient: return "s_j = p_j + [j = t]";
    case OutputKind::softmax_gradient: return "s_i = y_i (|g_i| + sum_j y_j |g_j|)";
    case OutputKind::log_softmax_gradient: return "s_i = |g_i| + p_i sum_j |g_j|";
    default: return "";
  }
}

// The target of a row that takes no part in a cross-entropy: its loss and
// every gradient entry are exactly 0 (PyTorch's default ignore_index).
inline constexpr std::int64_t ignore_index = -100;

// Where a row's exact values come from: exact_row (one MPFR evaluation gives
// softmax, log-softmax, lse and entropy) or exact_sparse (a threshold tau and
// the support; docs/sparse.md).
enum class Reference : std::uint8_t { dense, sparse };

// How an output's error is measured: componentwise ULPs of the output format,
// or the absolute error in units of u, |r - v| / u. Absolute for entropy: H is
// near 0 on peaked rows, where a relative error means nothing. Absolute for
// lse: what consumers do with it is p_j = exp(z_j - lse) (FlashAttention's
// backward pass, cross-entropy), where an absolute error e of lse is a
// relative error e of every p_j; and lse crosses 0 (x = [-0.69, -0.69] has
// lse ~ 0.003), where its ULP error is unbounded for every algorithm
// (Blanchard-Higham-Higham's LSE bounds carry a 1/|y| factor, REFERENCE.md).
// Scaled for gradients: |r_j - v_j| / max(u s_j, denorm_min), with s_j an
// exact per-element scale the oracle gives with the values (for the
// cross-entropy gradient s_j = p_j + [j = t]): p_t - 1 cancels when p_t is
// near 1, so neither its ULP nor its relative error is fair, while the
// first-order error of every algorithm is a multiple of u s_j
// (docs/gradients.md). An entry with s_j = 0 (a masked entry, an ignored row)
// must be exactly 0.
enum class Metric : std::uint8_t { ulp, absolute, scaled };

// An operand. An output also says what its values are and how their error
// is measured; inputs keep kind none.
struct Operand {
  std::string_view name;
  OperandShape shape;
  OutputKind kind = OutputKind::none;
  Metric metric = Metric::ulp;
  // Blanchard-Higham-Higham's normwise error max|r - g| / (u max g) applies
  // (a dense probability row).
  bool normwise = false;
  // What an input holds; none for an output.
  InputKind input = InputKind::none;
};

// An op's inputs or outputs: a view of a constant array (std::span is C++20;
// this header is also read by the CUDA code, which is C++17).
class OperandList {
 public:
  template <std::size_t N>
  constexpr OperandList(const Operand (&a)[N]) : data_(a), size_(N) {}  // NOLINT(google-explicit-constructor)
  constexpr std::size_t size() const { return size_; }
  constexpr bool empty() const { return size_ == 0; }
  constexpr const Operand& operator[](std::size_t i) const { return data_[i]; }
  constexpr const Operand* begin() const { return data_; }
  constexpr const Operand* end() const { return data_ + size_; }

 private:
  const Operand* data_;
  std::size_t size_;
};

// The op's parameter beyond the temperature (OpParams field), if any.
enum class OpParam : std::uint8_t { none, alpha, k, threshold, label_smoothing, softcap };

// The parameter of a parametrised op, fixed per kernel (OpDecl::params):
// entmax: alpha > 1; topk_softmax: k >= 1; threshold_softmax: threshold in
// [0, 1]; cross_entropy: label smoothing eps in [0, 1], the target
// q = (1 - eps) onehot(t) + eps / n (PyTorch's label_smoothing;
// docs/gradients.md); attention: the tanh softcap c > 0 of the scores,
// c tanh(y / c) applied before the bias and mask (Gemma 2, Grok; 0: none;
// docs/attention.md), and the sink logit s: a learned logit in the
// softmax's denominator only, l = sum_j exp(z_j) + exp(s), with no value
// (gpt-oss; a key of score s and V = 0), so O sums to less than 1 with V = 1
// and a query with every key masked has O = 0 and lse = s. -inf (exp(-inf)
// = 0) is no sink. Unused fields stay 0 (the sink -inf).
struct OpParams {
  double alpha = 0;
  std::int64_t k = 0;
  double threshold = 0;
  double label_smoothing = 0;
  double softcap = 0;
  double sink = -HUGE_VAL;  // -inf (HUGE_VAL: a constant expression for nvcc too)

  // Written out: nvcc's front end (the CUDA kernels include this header)
  // rejects a defaulted comparison.
  constexpr bool operator==(const OpParams& o) const {
    return alpha == o.alpha && k == o.k && threshold == o.threshold && label_smoothing == o.label_smoothing &&
           softcap == o.softcap && sink == o.sink;
  }
};

// What a kernel returns for a row whose entries are all -inf (fully masked).
// The exact softmax is undefined there (0/0); each kernel declares its rule
// (REFERENCE.md, "What users keep reporting" and "FlashAttention tiling"):
//   nan:     every output NaN (plain softmax in PyTorch)
//   zeros:   softmax 0, log-softmax -inf, lse -inf, entropy 0
//            (FlashAttention-4 O = 0 with lse = -inf, PyTorch _safe_softmax)
//   uniform: softmax 1/n, log-softmax -log n, entropy log n; lse -inf (the
//            log of the empty sum: the rule is about p, lse has its exact value)
// lse = -inf is accepted under every policy (it is the exact value); under
// nan a NaN lse is accepted too.
enum class MaskedRowPolicy { nan, zeros, uniform };

constexpr std::string_view name(MaskedRowPolicy p) {
  switch (p) {
    case MaskedRowPolicy::nan: return "nan";
    case MaskedRowPolicy::zeros: return "zeros";
    case MaskedRowPolicy::uniform: return "uniform";
  }
  return "?";
}

struct OpSpec {
  Op op;
  std::string_view name;
  std::string_view math;  // what one row computes, for `list --ops` and --help
  OperandList in, out;       // out[i] says what output i is and how it is measured
  OpParam param;
  Reference reference;
  bool fast_tier;            // the oracle's fast tiers (fast_oracle.hpp) evaluate its outputs (rows, lse, entropy)
  std::int32_t plugin_code;  // its enum softcheck_op value in the plugin ABI, 0 if none
  // The alpha of an entmax-family op that fixes it (sparsemax 2, entmax15
  // 1.5; entmax takes OpParams::alpha); 0 for the other ops.
  double entmax_alpha = 0;

  constexpr bool sparse() const { return reference == Reference::sparse; }
  constexpr bool scalar_output() const { return out[0].shape == OperandShape::scalar; }  // first output
  constexpr bool several_outputs() const { return out.size() > 1; }
  // More than the row of logits in: the single-input paths (properties,
  // sweep, fuzzers, peers, plugins) leave such an op to `run`.
  constexpr bool several_inputs() const { return in.size() > 1; }
  // Whether an input operand holds `k` (InputKind: the class target, the
  // upstream gradient, ...).
  constexpr bool takes(InputKind k) const {
    for (const Operand& i : in)
      if (i.input == k) return true;
    return false;
  }
};

namespace op_operands {
inline constexpr Operand logits = {"x", OperandShape::row, OutputKind::none, Metric::ulp, false, InputKind::logits};
inline constexpr Operand x[] = {logits};
inline constexpr Operand x_and_target[] = {
    logits, {"target", OperandShape::scalar, OutputKind::none, Metric::ulp, false, InputKind::class_index}};
inline constexpr Operand p = {"y", OperandShape::row, OutputKind::probabilities, Metric::ulp, true};
inline constexpr Operand lse_value = {"lse", OperandShape::scalar, OutputKind::log_sum_exp, Metric::absolute};
inline constexpr Operand probabilities[] = {p};
inline constexpr Operand sparse_probabilities[] = {{"y", OperandShape::row, OutputKind::probabilities}};
inline constexpr Operand log_probabilities[] = {{"y", OperandShape::row, OutputKind::log_probabilities}};
inline constexpr Operand lse[] = {lse_value};
inline constexpr Operand h[] = {{"h", OperandShape::scalar, OutputKind::entropy, Metric::absolute}};
inline constexpr Operand probabilities_and_lse[] = {p, lse_value};
inline constexpr Operand x_and_upstream[] = {
    logits, {"g", OperandShape::row, OutputKind::none, Metric::ulp, false, InputKind::upstream_gradient}};
inline constexpr Operand probabilities_and_gradient[] = {
    p, {"dx", OperandShape::row, OutputKind::softmax_gradient, Metric::scaled}};
inline constexpr Operand log_probabilities_and_gradient[] = {
    {"y", OperandShape::row, OutputKind::log_probabilities},
    {"dx", OperandShape::row, OutputKind::log_softmax_gradient, Metric::scaled}};
// Attention: the row of logits is the additive score bias (0 for a plain
// key, -inf for a masked one, an ALiBi or sink bias), then q, K, V and the
// query's position and window (KeyWindow).
inline constexpr Operand bias = {"bias", OperandShape::row, OutputKind::none, Metric::ulp, false, InputKind::logits};
inline constexpr Operand bias_q_k_v[] = {
    bias,
    {"q", OperandShape::head, OutputKind::none, Metric::ulp, false, InputKind::query},
    {"K", OperandShape::keys, OutputKind::none, Metric::ulp, false, InputKind::keys},
    {"V", OperandShape::keys, OutputKind::none, Metric::ulp, false, InputKind::values},
    {"window", OperandShape::window, OutputKind::none, Metric::ulp, false, InputKind::key_window}};
inline constexpr Operand attention_output_and_lse[] = {
    {"O", OperandShape::head, OutputKind::attention_output, Metric::scaled}, lse_value};
inline constexpr Operand relu_attention_output[] = {
    {"O", OperandShape::head, OutputKind::relu_attention_output, Metric::scaled}};
inline constexpr Operand linear_attention_output[] = {
    {"O", OperandShape::head, OutputKind::linear_attention_output, Metric::scaled}};
inline constexpr Operand loss_and_gradient[] = {
    {"loss", OperandShape::scalar, OutputKind::cross_entropy_loss, Metric::ulp},
    {"dx", OperandShape::row, OutputKind::cross_entropy_gradient, Metric::scaled}};
}  // namespace op_operands

// Indexed by Op (checked below). Plugin codes are fixed by softcheck_plugin.h.
// Columns: op, name, math, inputs, outputs (each with its kind, metric and
// normwise flag), parameter, reference, fast tier, plugin code, entmax alpha.
inline constexpr OpSpec op_table[] = {
    {Op::softmax, "softmax", "exp(z_i) / sum_j exp(z_j), z = x / T", op_operands::x, op_operands::probabilities,
     OpParam::none, Reference::dense, true, 1},
    {Op::log_softmax, "log_softmax", "z_i - log sum_j exp(z_j)", op_operands::x, op_operands::log_probabilities,
     OpParam::none, Reference::dense, true, 2},
    {Op::sparsemax, "sparsemax", "Euclidean projection of z onto the simplex", op_operands::x,
     op_operands::sparse_probabilities, OpParam::none, Reference::sparse, false, 3, 2.0},
    {Op::entmax15, "entmax15", "1.5-entmax of z", op_operands::x, op_operands::sparse_probabilities, OpParam::none,
     Reference::sparse, false, 0, 1.5},
    {Op::entmax, "entmax", "alpha-entmax of z", op_operands::x, op_operands::sparse_probabilities, OpParam::alpha,
     Reference::sparse, false, 4},
    {Op::topk_softmax, "topk_softmax", "softmax of the k largest z (ties kept), 0 elsewhere", op_operands::x,
     op_operands::sparse_probabilities, OpParam::k, Reference::sparse, false, 0},
    {Op::threshold_softmax, "threshold_softmax", "softmax of the z whose softmax is >= threshold, 0 elsewhere",
     op_operands::x, op_operands::sparse_probabilities, OpParam::threshold, Reference::sparse, false, 0},
    {Op::lse, "lse", "log sum_j exp(z_j), one per row", op_operands::x, op_operands::lse, OpParam::none,
     Reference::dense, true, 5},
    {Op::entropy, "entropy", "-sum_j p_j log p_j, p = softmax(z), one per row", op_operands::x, op_operands::h,
     OpParam::none, Reference::dense, true, 6},
    // What a tiled or split-KV kernel hands on between passes: the row and
    // its lse from one pass (REFERENCE.md, "FlashAttention tiling"). No
    // plugin code: a plugin descriptor carries one contract, and an isolated
    // call copies one output back (docs/plugin-abi.md).
    {Op::softmax_lse, "softmax_lse", "softmax(z) and lse(z) from one call", op_operands::x,
     op_operands::probabilities_and_lse, OpParam::none, Reference::dense, true, 0},
    // The loss of a classifier and its gradient, from the logits and one
    // class target per row, with the kernel's label smoothing eps
    // (docs/gradients.md). No plugin code yet: the plugin ABI passes one input.
    {Op::cross_entropy, "cross_entropy",
     "-sum_j q_j log softmax(z)_j and its gradient softmax(z) - q, q = (1 - eps) onehot(t) + eps / n, per row",
     op_operands::x_and_target, op_operands::loss_and_gradient, OpParam::label_smoothing, Reference::dense, false, 0},
    // The forward output y and the backward pass given the upstream g, end
    // to end from the logits (docs/gradients.md).
    {Op::softmax_backward, "softmax_backward", "y = softmax(z) and dx = y (g - <g, y>), per row",
     op_operands::x_and_upstream, op_operands::probabilities_and_gradient, OpParam::none, Reference::dense, false, 0},
    {Op::log_softmax_backward, "log_softmax_backward", "y = log_softmax(z) and dx = g - softmax(z) sum g, per row",
     op_operands::x_and_upstream, op_operands::log_probabilities_and_gradient, OpParam::none, Reference::dense, false,
     0},
    // One query row of attention, with the lse of its scores (what a tiled
    // or split-KV kernel hands on; docs/attention.md).
    {Op::attention, "attention",
     "O = sum_j p_j V_j and lse(z), p = softmax(z), z_j = cap((q . K_j) / (T sqrt(d))) + bias_j, per query "
     "(cap(y) = c tanh(y / c) with the kernel's softcap c, y without one; with the kernel's sink logit s, "
     "exp(s) joins softmax's denominator and lse; the keys outside the query's window masked)",
     op_operands::bias_q_k_v, op_operands::attention_output_and_lse, OpParam::softcap, Reference::dense, false, 0},
    // Attention with the softmax replaced by relu / n (Wortsman et al. 2023,
    // arXiv:2309.08586), on the same operands and scores (docs/attention.md).
    {Op::relu_attention, "relu_attention",
     "O = (1/n) sum_j relu(z_j) V_j, z_j = (q . K_j) / (T sqrt(d)) + bias_j, per query (n the row length; "
     "the keys outside the query's window masked)",
     op_operands::bias_q_k_v, op_operands::relu_attention_output, OpParam::none, Reference::dense, false, 0},
    // Linear attention (Katharopoulos et al. 2020, arXiv:2006.16236): a
    // kernel feature map in place of exp, the bias a log-weight
    // (docs/attention.md).
    {Op::linear_attention, "linear_attention",
     "O = sum_j w_j V_j, w_j proportional to (phi(q / T) . phi(K_j)) exp(bias_j), phi(t) = elu(t) + 1, per query "
     "(the keys outside the query's window masked)",
     op_operands::bias_q_k_v, op_operands::linear_attention_output, OpParam::none, Reference::dense, false, 0},
};

inline constexpr std::size_t op_count = std::size(op_table);

constexpr const OpSpec& spec(Op op) { return op_table[static_cast<std::size_t>(op)]; }
constexpr std::string_view name(Op op) { return spec(op).name; }
constexpr bool is_sparse(Op op) { return spec(op).sparse(); }

// Values per row of `cols` inputs of operand o: cols for a row, 1 for one
// value per row, d = head_dim for a head vector, cols x d for keys.
constexpr std::int64_t output_cols(const Operand& o, std::int64_t cols, std::int64_t head_dim = 0) {
  switch (o.shape) {
    case OperandShape::row: return cols;
    case OperandShape::scalar: return 1;
    case OperandShape::head: return head_dim;
    case OperandShape::keys: return cols * head_dim;
    case OperandShape::window: return 1;  // one KeyWindow
  }
  return cols;
}
// The same for the op's first output.
constexpr std::int64_t output_cols(Op op, std::int64_t cols, std::int64_t head_dim = 0) {
  return output_cols(spec(op).out[0], cols, head_dim);
}
// Whether op's operands have a head dimension (attention).
constexpr bool has_head_dim(Op op) {
  for (const Operand& o : spec(op).in)
    if (o.shape == OperandShape::head || o.shape == OperandShape::keys) return true;
  return false;
}

// The entmax alpha of a kernel's op: fixed by the op (sparsemax 2, entmax15
// 1.5), the kernel's parameter for entmax, 0 for an op outside the family.
constexpr double entmax_alpha(Op op, const OpParams& p) {
  return spec(op).param == OpParam::alpha ? p.alpha : spec(op).entmax_alpha;
}

// How tables and reports name output `i` of op: the op's name, or
// "op:output" for an op with several outputs (softmax_lse:lse).
inline std::string output_label(Op op, std::size_t i) {
  std::string s(name(op));
  if (spec(op).several_outputs()) (s += ':') += spec(op).out[i].name;
  return s;
}

// The ops' names, in table order (for option checks).
inline std::vector<std::string> op_table_names() {
  std::vector<std::string> names;
  for (const OpSpec& o : op_table) names.emplace_back(o.name);
  return names;
}

inline std::optional<Op> parse_op(std::string_view s) {
  for (const OpSpec& o : op_table)
    if (o.name == s) return o.op;
  return std::nullopt;
}

// The op whose plugin code is `code`, if one has it.
inline std::optional<Op> op_of_plugin_code(std::int32_t code) {
  for (const OpSpec& o : op_table)
    if (o.plugin_code != 0 && o.plugin_code == code) return o.op;
  return std::nullopt;
}

// "softmax, log_softmax, ..." (`sep` between names), for help and errors.
inline std::string op_names(std::string_view sep = ", ") {
  std::string s;
  for (const OpSpec& o : op_table) {
    if (!s.empty()) s += sep;
    s += o.name;
  }
  return s;
}

// The value every output of a fully masked row of length n takes under policy
// p: NaN for the nan policy; the exact value where one exists (0, -inf); the
// uniform row's 1/n, -log n or log n.
inline double masked_row_value(OutputKind kind, MaskedRowPolicy p, double n) {
  if (kind == OutputKind::relu_attention_output) return 0.0;  // exact, whatever the policy
  if (p == MaskedRowPolicy::nan) return NAN;
  const bool uniform = p == MaskedRowPolicy::uniform;
  switch (kind) {
    case OutputKind::probabilities: return uniform ? 1 / n : 0.0;
    case OutputKind::log_probabilities: return uniform ? -std::log(n) : -INFINITY;
    case OutputKind::log_sum_exp: return -INFINITY;  // the exact value, log 0
    case OutputKind::entropy: return uniform ? std::log(n) : 0.0;
    // A fully masked row's loss: that of an ignored row (zeros), or of the
    // uniform p (log n). Its gradient: 0, or 1/n off the target (1/n - 1 on it:
    // is_masked_row_value accepts either there).
    case OutputKind::cross_entropy_loss: return uniform ? std::log(n) : 0.0;
    case OutputKind::cross_entropy_gradient: return uniform ? 1 / n : 0.0;
    case OutputKind::softmax_gradient:
    case OutputKind::log_softmax_gradient: return 0.0;  // the derivative of a constant row
    // O of a query with no visible key: 0 (FlashAttention). The uniform
    // p's O is the mean of V, no constant: no attention kernel can declare
    // uniform (is_masked_row_value never accepts it).
    case OutputKind::attention_output:
    case OutputKind::linear_attention_output: return uniform ? NAN : 0.0;
    // ReLU attention's O of a fully masked row is exactly 0 (a sum of
    // nothing over n): the judge measures it like any row, no policy.
    case OutputKind::relu_attention_output: return 0.0;
    case OutputKind::none: break;
  }
  return NAN;
}

// The exact value of one masked (-inf) entry of a row output: probability 0,
// log-probability -inf, softmax and cross-entropy gradient 0 (the
// log-softmax gradient's is g_i there, no fixed value).
inline double masked_entry_value(OutputKind kind) { return kind == OutputKind::log_probabilities ? -INFINITY : 0.0; }

// Whether v is masked_row_value(kind, p, n) as a kernel of unit roundoff u
// returns it: NaN, 0 and -inf exactly; 1/n and +-log n rounded in the
// kernel's format, within 4u (relative; for the logs relative to max(1, log n)).
inline bool is_masked_row_value(double v, OutputKind kind, MaskedRowPolicy p, double n, double u) {
  if (kind == OutputKind::log_sum_exp && v == -INFINITY) return true;
  if ((kind == OutputKind::attention_output || kind == OutputKind::linear_attention_output) &&
      p == MaskedRowPolicy::uniform)
    return false;
  const double target = masked_row_value(kind, p, n);
  if (std::isnan(target)) return std::isnan(v);
  if (target == 0 || std::isinf(target)) return v == target;
  if (kind == OutputKind::probabilities) return std::fabs(v * n - 1) <= 4 * u;
  if (kind == OutputKind::cross_entropy_gradient)  // 1/n off the target, 1/n - 1 on it
    return std::fabs(v * n - 1) <= 4 * u || std::fabs((v + 1) * n - 1) <= 4 * u * n;
  return std::fabs(v - target) <= 4 * u * std::max(1.0, std::log(n));
}

namespace op_table_checks {
constexpr bool same(std::string_view a, std::string_view b) { return a == b; }
constexpr bool indexed_by_op() {
  for (std::size_t i = 0; i < op_count; ++i)
    if (static_cast<std::size_t>(op_table[i].op) != i) return false;
  return true;
}
constexpr bool names_and_codes_unique() {
  for (std::size_t i = 0; i < op_count; ++i)
    for (std::size_t j = i + 1; j < op_count; ++j)
      if (same(op_table[i].name, op_table[j].name) ||
          (op_table[i].plugin_code != 0 && op_table[i].plugin_code == op_table[j].plugin_code))
        return false;
  return true;
}
constexpr bool well_formed() {
  for (const OpSpec& o : op_table) {
    if (o.name.empty() || o.in.empty() || o.out.empty()) return false;
    // Inputs say what they hold, outputs what they are; the logits come first.
    for (const Operand& i : o.in)
      if (i.kind != OutputKind::none || i.input == InputKind::none) return false;
    if (o.in[0].input != InputKind::logits || o.in[0].shape != OperandShape::row) return false;
    for (const Operand& i : o.in)
      if ((i.input == InputKind::class_index) != (i.shape == OperandShape::scalar)) return false;
    // Attention's operands: q a head vector, K and V keys, all or none.
    for (const Operand& i : o.in)
      if ((i.input == InputKind::query) != (i.shape == OperandShape::head) ||
          (i.input == InputKind::keys || i.input == InputKind::values) != (i.shape == OperandShape::keys))
        return false;
    if (o.takes(InputKind::query) != o.takes(InputKind::keys) || o.takes(InputKind::keys) != o.takes(InputKind::values) ||
        o.takes(InputKind::values) != o.takes(InputKind::key_window))
      return false;
    for (const Operand& i : o.in)
      if ((i.input == InputKind::key_window) != (i.shape == OperandShape::window)) return false;
    for (const Operand& out : o.out)
      if (is_attention_output(out.kind) != (out.shape == OperandShape::head) ||
          (is_attention_output(out.kind) && !o.takes(InputKind::values)))
        return false;
    // A gradient is the gradient of its op's inputs: its op takes what it needs.
    for (const Operand& out : o.out) {
      if (out.kind == OutputKind::cross_entropy_gradient && !o.takes(InputKind::class_index)) return false;
      if ((out.kind == OutputKind::softmax_gradient || out.kind == OutputKind::log_softmax_gradient) &&
          !o.takes(InputKind::upstream_gradient))
        return false;
    }
    // The sparse oracle knows row outputs first; the fast tiers row outputs,
    // and of scalars the row's lse and entropy.
    if (o.reference == Reference::sparse && o.out[0].shape != OperandShape::row) return false;
    if (o.fast_tier && o.out[0].shape != OperandShape::row && o.out[0].kind != OutputKind::log_sum_exp &&
        o.out[0].kind != OutputKind::entropy)
      return false;
    // The fast tiers know the logits alone.
    if (o.fast_tier && o.in.size() > 1) return false;
    // One sparse output per op (its exact row is the threshold and support).
    if (o.reference == Reference::sparse && o.out.size() != 1) return false;
    // An entmax alpha is fixed by a sparse op without a parameter, and is > 1.
    if (o.entmax_alpha != 0 && (o.reference != Reference::sparse || o.param != OpParam::none || !(o.entmax_alpha > 1)))
      return false;
    for (const Operand& out : o.out) {
      if (out.kind == OutputKind::none || out.input != InputKind::none) return false;
      // Absolute error is for scalar outputs whose value can be 0 (lse, entropy).
      if (out.metric == Metric::absolute && out.shape != OperandShape::scalar) return false;
      // The scaled error is for gradients and attention's O (the oracle gives their scale).
      if ((out.metric == Metric::scaled) != has_scale(out.kind)) return false;
      // Normwise error is for dense probability rows.
      if (out.normwise && (out.kind != OutputKind::probabilities || o.reference != Reference::dense)) return false;
      // Row outputs are probabilities, their logs or a gradient; scalars lse,
      // entropy or a loss.
      const bool row_kind =
          out.kind == OutputKind::probabilities || out.kind == OutputKind::log_probabilities || is_gradient(out.kind);
      if (row_kind != (out.shape == OperandShape::row)) return false;
      if (out.shape == OperandShape::keys || out.shape == OperandShape::window) return false;
    }
  }
  return true;
}
}  // namespace op_table_checks
static_assert(op_table_checks::indexed_by_op(), "op_table must list the ops in enum order");
static_assert(op_table_checks::names_and_codes_unique(), "op names and plugin codes must be unique");
static_assert(op_table_checks::well_formed(), "an op_table entry is inconsistent");

}  // namespace softcheck
