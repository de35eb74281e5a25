// The plugin loader (softcheck/plugin.hpp): every failure mode of
// docs/plugin-abi.md with its exact message, the mapping of descriptors to
// kernels, and isolated calls (crashes become KernelFailure).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "softcheck/kernel_failure.hpp"
#include "softcheck/oracle.hpp"
#include "softcheck/plugin.hpp"

namespace softcheck {
namespace {

// What load_plugin throws for `path`, or "" when it loads.
std::string load_error(const std::string& path, const std::vector<std::string>& before = {}) {
  try {
    std::vector<std::string> paths = before;
    paths.push_back(path);
    load_plugins(paths, {});
  } catch (const PluginError& e) {
    return e.what();
  }
  return "";
}

std::string prefix(const std::string& path) { return "plugin '" + path + "': "; }

const Kernel& kernel_named(const Plugin& p, const std::string& name) {
  for (const Kernel& k : p.kernels)
    if (k.name == name) return k;
  throw std::logic_error("no kernel " + name);
}

// Runs an f32 kernel on one row.
std::vector<float> run_row(const Kernel& k, Op op, std::vector<float> x, double temperature = 1) {
  std::vector<float> y(x.size());
  k.run(op, x.data(), y.data(), 1, static_cast<std::int64_t>(x.size()), temperature);
  return y;
}

// What Kernel::run throws as KernelFailure, or "".
std::string failure_of(const Kernel& k) {
  try {
    run_row(k, Op::softmax, {1, 2, 3});
  } catch (const KernelFailure& e) {
    return e.what();
  }
  return "";
}

class PluginTest : public ::testing::Test {
 protected:
  static Plugin load(bool isolate) { return load_plugin(TEST_PLUGIN_MISBEHAVING_PATH, {isolate}); }
};

// ------------------------------------------------------------- load errors

TEST(PluginLoad, MissingFile) {
  const std::string p = "/nonexistent/libnope.so";
  EXPECT_EQ(load_error(p), prefix(p) + "no such file");
}

TEST(PluginLoad, Directory) {
  const std::string p = std::filesystem::temp_directory_path().string();
  EXPECT_EQ(load_error(p), prefix(p) + "not a regular file");
}

TEST(PluginLoad, NotASharedLibrary) {
  const auto p = (std::filesystem::temp_directory_path() / "softcheck_not_a_library.so").string();
  std::ofstream(p) << std::string(200, 'x') << "\n";
  EXPECT_EQ(load_error(p), prefix(p) + "not a loadable shared library (" + p + ": invalid ELF header)");
  std::filesystem::remove(p);
}

TEST(PluginLoad, MissingEntryPoint) {
  const std::string p = TEST_PLUGIN_NO_ENTRY_PATH;
  EXPECT_EQ(load_error(p),
            prefix(p) + "does not export softcheck_plugin_kernels (not a softcheck plugin? see docs/plugin-abi.md)");
}

TEST(PluginLoad, AbiVersionMismatch) {
  const std::string p = TEST_PLUGIN_ABI_V2_PATH;
  EXPECT_EQ(load_error(p), prefix(p) + "ABI version mismatch: softcheck speaks version 1, the plugin version 2 "
                                       "(rebuild it against this softcheck_plugin.h)");
}

TEST(PluginLoad, EntryPointFails) {
  const std::string p = TEST_PLUGIN_ENTRY_FAILS_PATH;
  EXPECT_EQ(load_error(p), prefix(p) + "softcheck_plugin_kernels failed with code -5");
}

TEST(PluginLoad, NoKernels) {
  const std::string p = TEST_PLUGIN_NO_KERNELS_PATH;
  EXPECT_EQ(load_error(p), prefix(p) + "declares no kernels");
}

TEST(PluginLoad, NullName) {
  const std::string p = TEST_PLUGIN_NULL_NAME_PATH;
  EXPECT_EQ(load_error(p), prefix(p) + "descriptor [1]: name is NULL");
}

TEST(PluginLoad, BadNamesAllListed) {
  const std::string p = TEST_PLUGIN_BAD_NAME_PATH;
  EXPECT_EQ(load_error(p), prefix(p) +
                               "2 problems:\n"
                               "  descriptor [0] 'tp ok': name must be non-empty and use only letters, digits, '_', "
                               "'-' and '.'\n"
                               "  descriptor [1] '': name must be non-empty and use only letters, digits, '_', '-' "
                               "and '.'");
}

TEST(PluginLoad, DuplicateNameAndOp) {
  const std::string p = TEST_PLUGIN_DUPLICATE_PATH;
  EXPECT_EQ(load_error(p), prefix(p) + "descriptor [2] 'tp_ok_f32': duplicate of descriptor [0] (same name and op)");
}

TEST(PluginLoad, OneKernelTwoFormats) {
  const std::string p = TEST_PLUGIN_MISMATCH_PATH;
  EXPECT_EQ(load_error(p), prefix(p) + "descriptor [1] 'tp_ok_f32': format or masked_policy differs from "
                                       "descriptor [0] (descriptors sharing a name are one kernel)");
}

TEST(PluginLoad, BadEnumValuesAndFlags) {
  const std::string p = TEST_PLUGIN_BAD_ENUMS_PATH;
  EXPECT_EQ(load_error(p), prefix(p) +
                               "8 problems:\n"
                               "  descriptor [1] 'tp_zeroed': bad op value 0 (expected 1..4)\n"
                               "  descriptor [1] 'tp_zeroed': bad format value 0 (expected 1..4)\n"
                               "  descriptor [1] 'tp_zeroed': bad masked_policy value 0 (expected 1..3)\n"
                               "  descriptor [2] 'tp_bad_f32': bad op value 9 (expected 1..4)\n"
                               "  descriptor [2] 'tp_bad_f32': bad format value 7 (expected 1..4)\n"
                               "  descriptor [2] 'tp_bad_f32': bad masked_policy value 4 (expected 1..3)\n"
                               "  descriptor [2] 'tp_bad_f32': unknown flags 16\n"
                               "  descriptor [3] 'tp_entmax': entmax_alpha must be finite and > 1 (got 1)");
}

TEST(PluginLoad, BadContractAndNullRun) {
  const std::string p = TEST_PLUGIN_BAD_CONTRACT_PATH;
  EXPECT_EQ(load_error(p), prefix(p) +
                               "3 problems:\n"
                               "  descriptor [0] 'tp_contract_f32': contract coefficient b is -1 (must be finite "
                               "and >= 0)\n"
                               "  descriptor [1] 'tp_declared_f32': contract.declared is 2 (expected 0 or 1)\n"
                               "  descriptor [1] 'tp_declared_f32': run is NULL");
}

TEST(PluginLoad, NameOfABuiltinKernel) {
  const std::string p = TEST_PLUGIN_CLASH_PATH;
  EXPECT_EQ(load_error(p), prefix(p) + "descriptor [1] 'shifted_f32': name already used by a built-in kernel "
                                       "(prefix your kernels' names, e.g. 'acme_')");
}

TEST(PluginLoad, NameOfAnEarlierPlugin) {
  const std::string p = TEST_PLUGIN_CLASH_PATH;
  EXPECT_EQ(load_error(p, {TEST_PLUGIN_MISBEHAVING_PATH}),
            prefix(p) +
                "2 problems:\n"
                "  descriptor [0] 'tp_ok_f32': name already used by a kernel of "
                "plugin:libtest_plugin_misbehaving.so (prefix your kernels' names, e.g. 'acme_')\n"
                "  descriptor [1] 'shifted_f32': name already used by a built-in kernel (prefix your kernels' "
                "names, e.g. 'acme_')");
}

// ------------------------------------------------------------ the mapping

TEST_F(PluginTest, DescriptorsSharingANameAreOneKernelWithSeveralOps) {
  const Plugin p = load(false);
  std::vector<std::string> names;
  for (const Kernel& k : p.kernels) names.push_back(k.name);
  EXPECT_EQ(names, (std::vector<std::string>{"tp_ok_f32", "tp_fails_f32", "tp_nan_f32", "tp_segv_f32",
                                             "tp_abort_f32", "tp_exit_f32", "tp_sparsemax_f32", "tp_entmax_f32",
                                             "tp_serial_f32"}));
  const Kernel& ok = kernel_named(p, "tp_ok_f32");
  ASSERT_EQ(ok.ops.size(), 2u);
  EXPECT_EQ(ok.ops[0].op, Op::softmax);
  EXPECT_TRUE(ok.ops[0].contract.declared);
  EXPECT_EQ(ok.ops[0].contract.formula(), "2 + 1*n + 2*R + 4*M[T!=1]");
  EXPECT_EQ(ok.ops[1].op, Op::log_softmax);
  EXPECT_FALSE(ok.ops[1].contract.declared);
  EXPECT_EQ(ok.format, Format::f32);
  EXPECT_EQ(ok.masked_policy, MaskedRowPolicy::zeros);
  EXPECT_EQ(ok.algorithm, "plugin:libtest_plugin_misbehaving.so");
  EXPECT_TRUE(ok.available);
}

TEST_F(PluginTest, OpsThisVersionCannotRunMakeTheKernelUnavailable) {
  const Plugin p = load(false);
  const Kernel& sparse = kernel_named(p, "tp_sparsemax_f32");
  EXPECT_FALSE(sparse.available);
  EXPECT_TRUE(sparse.ops.empty());
  EXPECT_EQ(sparse.unavailable_reason, "op sparsemax not supported by this softcheck version");
  EXPECT_EQ(kernel_named(p, "tp_entmax_f32").unavailable_reason,
            "op entmax(alpha=1.5) not supported by this softcheck version");
}

TEST_F(PluginTest, UndeclaredOpThrowsLikeABuiltin) {
  const Plugin p = load(false);
  EXPECT_THROW(run_row(kernel_named(p, "tp_nan_f32"), Op::log_softmax, {1, 2}), std::invalid_argument);
}

// -------------------------------------------------------------- run errors

TEST_F(PluginTest, CorrectKernelRunsInProcess) {
  const Plugin p = load(false);
  const std::vector<float> y = run_row(kernel_named(p, "tp_ok_f32"), Op::softmax, {-2, 0, 0.5f});
  EXPECT_NEAR(y[0], 0.0486, 1e-4);  // REFERENCE.md, "Known values"
  EXPECT_NEAR(y[1], 0.3592, 1e-4);
  EXPECT_NEAR(y[2], 0.5922, 1e-4);
}

TEST_F(PluginTest, NonZeroReturnIsAKernelFailure) {
  for (bool isolate : {false, true})
    EXPECT_EQ(failure_of(kernel_named(load(isolate), "tp_fails_f32")),
              "plugin kernel 'tp_fails_f32' (softmax): run returned 7");
}

TEST_F(PluginTest, NanOutputIsPassedOnForTheChecks) {
  const std::vector<float> y = run_row(kernel_named(load(false), "tp_nan_f32"), Op::softmax, {1, 2});
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
}

TEST_F(PluginTest, IsolatedCrashIsAKernelFailure) {
  const Plugin p = load(true);
  EXPECT_EQ(failure_of(kernel_named(p, "tp_segv_f32")),
            "plugin kernel 'tp_segv_f32' (softmax): crashed with signal 11 (SIGSEGV)");
  EXPECT_EQ(failure_of(kernel_named(p, "tp_abort_f32")),
            "plugin kernel 'tp_abort_f32' (softmax): crashed with signal 6 (SIGABRT)");
  EXPECT_EQ(failure_of(kernel_named(p, "tp_exit_f32")),
            "plugin kernel 'tp_exit_f32' (softmax): the isolated process exited with status 3 before run returned");
}

TEST_F(PluginTest, IsolatedResultsAreBitwiseTheInProcessOnes) {
  const Plugin in_process = load(false), isolated = load(true);
  const Kernel& in = kernel_named(in_process, "tp_ok_f32");
  const Kernel& iso = kernel_named(isolated, "tp_ok_f32");
  std::vector<float> x;
  for (int i = 0; i < 3 * 50; ++i) x.push_back(static_cast<float>(std::sin(i) * 30));
  for (Op op : {Op::softmax, Op::log_softmax}) {
    std::vector<float> a(x.size()), b(x.size()), inplace = x;
    in.run(op, x.data(), a.data(), 3, 50, 0.7);
    iso.run(op, x.data(), b.data(), 3, 50, 0.7);
    iso.run(op, inplace.data(), inplace.data(), 3, 50, 0.7);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a, inplace);
  }
}

TEST_F(PluginTest, NotThreadSafeKernelsAreSerialised) {
  const Plugin p = load(false);
  const Kernel& k = kernel_named(p, "tp_serial_f32");
  const std::vector<float> want = run_row(k, Op::softmax, {1, 2, 3, 4});
  std::vector<std::vector<float>> got(4);
  std::vector<std::thread> threads;
  for (auto& g : got) threads.emplace_back([&] { g = run_row(k, Op::softmax, {1, 2, 3, 4}); });
  for (auto& t : threads) t.join();
  for (const auto& g : got) EXPECT_EQ(g, want);
}

// ------------------------------------------------------------ the example

TEST(ExamplePlugin, TwoF32SoftmaxKernelsWithTheShiftedContract) {
  const Plugin p = load_plugin(EXAMPLE_PLUGIN_PATH, {});
  ASSERT_EQ(p.kernels.size(), 2u);
  EXPECT_EQ(p.kernels[0].name, "example_softmax_f32");
  EXPECT_EQ(p.kernels[1].name, "example_flawed_f32");
  for (const Kernel& k : p.kernels) {
    ASSERT_EQ(k.ops.size(), 1u);
    EXPECT_EQ(k.ops[0].contract.formula(), "2 + 1*n + 2*R + 4*M[T!=1]");
  }
  const std::vector<float> big = {1000, 1001, 1002};
  EXPECT_NEAR(run_row(p.kernels[0], Op::softmax, big)[2], 0.6652, 1e-4);
  EXPECT_TRUE(std::isnan(run_row(p.kernels[1], Op::softmax, big)[2]));  // the flaw: inf / inf
}

// ------------------------------------------------------------ ABI version 2

TEST(PluginAbiV2, LseKernelLoadsAndRunsThroughItsOperands) {
  const Plugin p = load_plugin(LSE_V2_PLUGIN_PATH, {});
  ASSERT_EQ(p.kernels.size(), 1u);
  const Kernel& k = p.kernels[0];
  EXPECT_EQ(k.name, "v2test_shifted_f64");
  ASSERT_EQ(k.ops.size(), 2u);
  ASSERT_NE(k.find(Op::lse), nullptr);
  EXPECT_EQ(k.find(Op::lse)->contract.formula(), "3*n + 1*R + 1*M + 2*M[T!=1]");
  // Two rows of three: one lse per row; the second row fully masked (-inf).
  const double x[] = {1, 2, 3, -INFINITY, -INFINITY, -INFINITY};
  double lse[2] = {0, 0};
  k.run(Op::lse, x, lse, 2, 3, 1.0);
  const oracle::ExactRow exact = oracle::exact_row(std::vector<double>{1, 2, 3});
  EXPECT_NEAR(lse[0], oracle::round_to(exact.lse, Format::f64), 4e-15);
  EXPECT_EQ(lse[1], -INFINITY);
  // The same kernel's softmax through the same compute function.
  double y[3];
  k.run(Op::softmax, x, y, 1, 3, 1.0);
  EXPECT_NEAR(y[2], oracle::round_to(exact.softmax[2], Format::f64), 1e-15);
  // Isolated: the child returns one value per row, not a row.
  const Plugin isolated = load_plugin(LSE_V2_PLUGIN_PATH, {.isolate = true});
  double lse_isolated[2] = {0, 0};
  isolated.kernels[0].run(Op::lse, x, lse_isolated, 2, 3, 1.0);
  EXPECT_EQ(lse_isolated[0], lse[0]);
  EXPECT_EQ(lse_isolated[1], lse[1]);
}

}  // namespace
}  // namespace softcheck
