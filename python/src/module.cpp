// softcheck._softcheck: the C++ half of the Python module (docs/python.md).
// It takes float64 arrays that hold values of a format (the Python half,
// softcheck/__init__.py, converts NumPy and PyTorch arrays and checks shapes)
// and calls the same functions as `softcheck compare` (compare/): judge_rows
// for softcheck.check, exact_rows for softcheck.oracle. std::invalid_argument
// becomes ValueError (pybind11's translation).
#include <fmt/format.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/compare.hpp"
#include "softcheck/report.hpp"
#include "softcheck/version.hpp"

namespace py = pybind11;

namespace softcheck {
namespace {

using Array = py::array_t<double, py::array::c_style | py::array::forcecast>;

Format format_of(const std::string& dtype) {
  const std::optional<Format> f = parse_format(dtype);
  if (!f) throw std::invalid_argument("dtype '" + dtype + "' is not one of f64, f32, f16, bf16");
  return *f;
}

Op op_of(const std::string& op) {
  const std::optional<Op> o = parse_op(op);
  if (!o || !compare_takes(*o)) throw std::invalid_argument("op '" + op + "' is not one of " + compare_op_names());
  return *o;
}

MaskedRowPolicy policy_of(const std::string& p) {
  for (MaskedRowPolicy m : {MaskedRowPolicy::nan, MaskedRowPolicy::zeros, MaskedRowPolicy::uniform})
    if (name(m) == p) return m;
  throw std::invalid_argument("masked_policy '" + p + "' is not one of nan, zeros, uniform");
}

// rows x cols of a 2-D array (the Python half gives 2-D x).
std::pair<std::int64_t, std::int64_t> rows_cols(const Array& x) {
  if (x.ndim() != 2) throw std::invalid_argument("x must be 2-D here (the Python layer reshapes)");
  return {static_cast<std::int64_t>(x.shape(0)), static_cast<std::int64_t>(x.shape(1))};
}

std::span<const double> values(const Array& a) { return {a.data(), static_cast<std::size_t>(a.size())}; }

py::dict judge(const Array& x, const Array& y, const std::string& op, const std::string& dtype, double temperature,
               std::optional<double> contract_ulps, std::optional<std::string> contract_kernel,
               const std::string& reference_scope, double reference_k, double reference_slack,
               const std::string& masked_policy, std::size_t explain_limit, bool tiered, const std::string& name) {
  CompareSpec s;
  s.op = op_of(op);
  s.format = format_of(dtype);
  s.temperature = temperature;
  s.masked_policy = policy_of(masked_policy);
  if (contract_ulps && contract_kernel) throw std::invalid_argument("give the contract as ulps or as a kernel, not both");
  if (contract_ulps) {
    s.contract = ulp_contract(*contract_ulps);
    s.contract_source = fmt::format("{} ulps", *contract_ulps);
  } else if (contract_kernel) {
    s.contract = kernel_contract(*contract_kernel, s.op, s.format);
    s.contract_source = "the derived contract of kernel " + *contract_kernel;
  }
  s.reference_rule.scope = reference_scope;
  s.reference_rule.k = reference_k;
  s.reference_rule.slack = reference_slack;
  s.explain_limit = explain_limit;
  s.tiered = tiered;
  s.kernel_name = name;
  s.description = "outputs judged by softcheck.check (Python)";
  const auto [rows, cols] = rows_cols(x);
  CompareResult res;
  {
    py::gil_scoped_release unlocked;
    res = judge_rows(values(x), values(y), rows, cols, s);
  }
  const auto n = static_cast<py::ssize_t>(res.rows.size());
  py::array_t<bool> holds(n);
  py::array_t<double> max_error(n), got(n), bound(n), ratio(n), R(n), M(n);
  py::array_t<std::int64_t> element(n);
  std::vector<std::string> verdict, explain, repro, tier;
  for (py::ssize_t i = 0; i < n; ++i) {
    const CompareRow& r = res.rows[static_cast<std::size_t>(i)];
    holds.mutable_at(i) = r.holds;
    max_error.mutable_at(i) = r.max_error;
    element.mutable_at(i) = r.element;
    got.mutable_at(i) = r.got;
    bound.mutable_at(i) = r.bound;
    ratio.mutable_at(i) = r.reference_ratio;
    R.mutable_at(i) = r.R;
    M.mutable_at(i) = r.M;
    verdict.push_back(r.verdict);
    explain.push_back(r.explain);
    repro.push_back(r.repro);
    tier.push_back(r.tier);
  }
  py::dict d;
  d["held"] = res.held;
  d["rule"] = res.rule;
  d["max_error_all"] = res.max_error;
  d["violated_rows"] = res.violated_rows;
  d["undefined_rows"] = res.undefined_rows;
  d["masked_rows"] = res.masked_rows;
  d["verdict"] = verdict;
  d["holds"] = holds;
  d["max_error"] = max_error;
  d["element"] = element;
  d["got"] = got;
  d["bound"] = bound;
  d["reference_ratio"] = ratio;
  d["R"] = R;
  d["M"] = M;
  d["tier"] = tier;
  d["explain"] = explain;
  d["repro"] = repro;
  d["unit"] = spec(s.op).out[0].metric == Metric::ulp ? "ulp" : "u";
  if (res.worst.present) {
    const CompareWorst& w = res.worst;
    py::dict wd;
    wd["row"] = w.row;
    wd["column"] = w.element;
    wd["got"] = w.got;
    wd["exact"] = w.exact;
    wd["exact_rounded"] = w.exact_rounded;
    wd["error"] = w.error;
    wd["bound"] = w.bound;
    wd["reference_ratio"] = w.reference_ratio;
    wd["explain"] = w.explain;
    wd["repro"] = w.repro;
    d["worst"] = wd;
  } else {
    d["worst"] = py::none();
  }
  d["report_json"] = to_json(res.report);
  return d;
}

Array exact(const Array& x, const std::string& op, const std::string& dtype, double temperature,
            const std::string& masked_policy, unsigned bits) {
  const Format f = format_of(dtype);
  const Op o = op_of(op);
  const auto [rows, cols] = rows_cols(x);
  // Inputs are rounded to the dtype once, as `softcheck oracle` rounds its text.
  std::vector<double> xr(values(x).begin(), values(x).end());
  for (double& v : xr) v = round_to_format(v, f);
  std::vector<double> y;
  {
    py::gil_scoped_release unlocked;
    y = exact_rows(xr, rows, cols, o, f, temperature, policy_of(masked_policy), bits);
  }
  const std::int64_t ycols = output_cols(spec(o).out[0], cols);
  Array out({static_cast<py::ssize_t>(rows), static_cast<py::ssize_t>(ycols)});
  std::copy(y.begin(), y.end(), out.mutable_data());
  return out;
}

void write_report(const std::string& report_json, const std::string& dir) {
  const Report r = from_json(report_json);
  ensure_writable_dir(dir);
  write_files_atomically(report_files(r, dir));
}

}  // namespace
}  // namespace softcheck

PYBIND11_MODULE(_softcheck, m) {
  using namespace softcheck;
  m.doc() = "softcheck's C++ core: judge_rows and exact_rows of compare/ (use the softcheck package)";
  m.attr("__version__") = softcheck_version;
  m.def("judge", &judge, py::arg("x"), py::arg("y"), py::arg("op"), py::arg("dtype"), py::arg("temperature"),
        py::arg("contract_ulps"), py::arg("contract_kernel"), py::arg("reference_scope"), py::arg("reference_k"),
        py::arg("reference_slack"), py::arg("masked_policy"), py::arg("explain_limit"), py::arg("tiered"),
        py::arg("name"));
  m.def("exact", &exact, py::arg("x"), py::arg("op"), py::arg("dtype"), py::arg("temperature"),
        py::arg("masked_policy"), py::arg("bits"));
  m.def("write_report", &write_report, py::arg("report_json"), py::arg("directory"));
  m.def("ops", [] {
    std::vector<std::string> names;
    for (Op op : compare_ops()) names.emplace_back(name(op));
    return names;
  });
  m.def("kernel_contract", [](const std::string& kernel, const std::string& op, const std::string& dtype) {
    const Contract c = kernel_contract(kernel, op_of(op), format_of(dtype));
    return std::make_pair(c.formula(), c.why);
  });
  m.def("check_values", [](const Array& a, const std::string& dtype, const std::string& what) {
    const std::int64_t cols = a.ndim() >= 1 ? static_cast<std::int64_t>(a.shape(a.ndim() - 1)) : 1;
    check_format_values(values(a), cols, format_of(dtype), what);
  });
  // A report.json the strict reader refuses is a bad value, not a RuntimeError.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const softcheck::ReportFormatError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    }
  });
}
