// run_blocks (impls/src/parallel_blocks.hpp): every block runs exactly once,
// whoever runs it; batches from several threads at once (one gets OpenMP's
// threads, the others run their own blocks); and a forked child of a process
// that ran batches runs its blocks (on its own thread: libgomp's would hang).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cfenv>
#include <cfloat>
#include <thread>
#include <vector>

#include "parallel_blocks.hpp"
#include "softcheck/fp_env.hpp"
#include "softcheck/kernel.hpp"

namespace softcheck::kernels {
namespace {

// Runs `blocks` blocks `batches` times; true when every block ran exactly
// once per batch.
bool every_block_once(unsigned blocks, int batches) {
  for (int batch = 0; batch < batches; ++batch) {
    std::vector<std::atomic<int>> ran(blocks);
    run_blocks(blocks, [&](unsigned b) { ran[b].fetch_add(1); });
    for (const std::atomic<int>& r : ran)
      if (r.load() != 1) return false;
  }
  return true;
}

TEST(RunBlocks, EveryBlockOnceForAnyCount) {
  for (unsigned blocks : {0u, 1u, 2u, 3u, 7u, 64u, 1000u}) EXPECT_TRUE(every_block_once(blocks, 50)) << blocks;
}

TEST(RunBlocks, BlocksRunOnSeveralThreadsWhenThereAreCores) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "one core: every block runs on the caller";
  if (block_threads_available() < 2) GTEST_SKIP() << "one core, or built without OpenMP: every block runs on the caller";
  // Each of the two blocks waits until both have started: that ends only when
  // two threads run them at once (run one after the other, this test hangs
  // until ctest's timeout fails it). Nothing else runs batches here. Built
  // without OpenMP, run_blocks has one thread, and says so.
  std::atomic<int> started{0};
  run_blocks(2, [&](unsigned) {
    started.fetch_add(1);
    while (started.load() < 2) std::this_thread::yield();
  });
  EXPECT_EQ(started.load(), 2);
}

TEST(RunBlocks, ConcurrentBatchesEachRunEveryBlockOnce) {
  std::atomic<bool> all_ok{true};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      if (!every_block_once(5, 200)) all_ok = false;
    });
  for (std::thread& t : callers) t.join();
  EXPECT_TRUE(all_ok);
}

TEST(RunBlocks, ForkedChildRunsEveryBlock) {
  ASSERT_TRUE(every_block_once(8, 10));  // the parent's OpenMP threads exist now
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(every_block_once(8, 100) ? 0 : 1);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_TRUE(every_block_once(8, 10));  // and the parent's still works
}

// A batch's blocks run in the caller's floating-point environment on every
// thread (run --fp-env, docs/fp-env.md): two blocks that wait for each
// other (so two threads run them) both see FTZ flush a subnormal product and
// the caller's rounding mode; after the batch the workers are back in theirs.
volatile float tiny_normal = FLT_MIN;
volatile float halving = 0.5f;

TEST(RunBlocks, BlocksRunInTheCallersFloatingPointEnvironment) {
  if (block_threads_available() < 2) GTEST_SKIP() << "one core, or built without OpenMP: every block runs on the caller";
  if (!fp_env_unsupported(FpEnv::ftz).empty()) GTEST_SKIP() << fp_env_unsupported(FpEnv::ftz);
  const auto both_blocks = [](float* product, int* rounding) {
    std::atomic<int> started{0};
    run_blocks(2, [&](unsigned b) {
      started.fetch_add(1);
      while (started.load() < 2) std::this_thread::yield();
      product[b] = tiny_normal * halving;  // 2^-127: subnormal
      rounding[b] = std::fegetround();
    });
  };
  float product[2];
  int rounding[2];
  {
    const FpEnvScope ftz(FpEnv::ftz);
    both_blocks(product, rounding);
  }
  EXPECT_EQ(product[0], 0.0f);
  EXPECT_EQ(product[1], 0.0f);
  {
    const FpEnvScope up(FpEnv::upward);
    both_blocks(product, rounding);
  }
  EXPECT_EQ(rounding[0], FE_UPWARD);
  EXPECT_EQ(rounding[1], FE_UPWARD);
  both_blocks(product, rounding);  // the default again, on both threads
  EXPECT_GT(product[0], 0.0f);
  EXPECT_GT(product[1], 0.0f);
  EXPECT_EQ(rounding[0], FE_TONEAREST);
  EXPECT_EQ(rounding[1], FE_TONEAREST);
}

// The row-parallel kernel computes what its single-threaded twin computes
// under FTZ + DAZ, on rows whose outputs are subnormal in round to nearest
// (x in [-100, 0]: e^-100 is below f32's smallest normal); and the
// environment is in effect (some outputs differ from the default's).
TEST(RunBlocks, RowParallelKernelsMatchTheirTwinUnderFtzDaz) {
  if (!fp_env_unsupported(FpEnv::ftz_daz).empty()) GTEST_SKIP() << fp_env_unsupported(FpEnv::ftz_daz);
  const Kernel* mt = find_kernel("shifted_simd_mt_f32");
  const Kernel* one = find_kernel("shifted_simd_f32");
  ASSERT_NE(mt, nullptr);
  ASSERT_NE(one, nullptr);
  constexpr std::int64_t rows = 256, cols = 64;
  std::vector<float> x(rows * cols);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = -100.0f * static_cast<float>((i * 37) % cols) / (cols - 1);
  std::vector<float> y_mt(x.size()), y_one(x.size()), y_default(x.size());
  mt->run(Op::softmax, x.data(), y_default.data(), rows, cols, 1.0);
  {
    const FpEnvScope env(FpEnv::ftz_daz);
    mt->run(Op::softmax, x.data(), y_mt.data(), rows, cols, 1.0);
    one->run(Op::softmax, x.data(), y_one.data(), rows, cols, 1.0);
  }
  EXPECT_EQ(y_mt, y_one);
  EXPECT_NE(y_mt, y_default);
}

}  // namespace
}  // namespace softcheck::kernels
