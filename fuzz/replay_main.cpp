// Replays inputs through a fuzz target without libFuzzer, so that the normal
// (g++) build runs every committed corpus file as a test:
//   fuzz_X [FILE | DIRECTORY]...   each file once, directories recursively in
//                                  sorted order; exit 0 when none crashed.
// A violation aborts the process, as under libFuzzer (the target prints the
// report and the `softcheck repro` line first). A target that calls exit()
// during an input (a plugin kernel may: fuzz/lib/plugin_kernels.hpp) fails
// the replay, as libFuzzer reports "fuzz target exited": otherwise an exit(0)
// would read as a clean replay.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv);

namespace {

namespace fs = std::filesystem;

// The file being replayed; empty between inputs.
std::string replaying;

void exit_during_input() {
  if (replaying.empty()) return;
  std::fprintf(stderr, "==replay== the target called exit() while replaying %s\n", replaying.c_str());
  std::_Exit(1);
}

std::vector<fs::path> inputs_under(const fs::path& p) {
  if (!fs::is_directory(p)) return {p};
  std::vector<fs::path> files;
  for (const auto& e : fs::recursive_directory_iterator(p))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

bool read_file(const fs::path& p, std::vector<std::uint8_t>& out) {
  std::ifstream in(p, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s FILE_OR_DIRECTORY...\n", argv[0]);
    return 2;
  }
  // Registered before the target's exit handlers (a plugin kernel's report), so it runs after them.
  std::atexit(exit_during_input);
  LLVMFuzzerInitialize(&argc, &argv);
  std::size_t count = 0;
  for (int i = 1; i < argc; ++i) {
    if (!std::filesystem::exists(argv[i])) {
      std::fprintf(stderr, "%s: no such file or directory: %s\n", argv[0], argv[i]);
      return 2;
    }
    for (const fs::path& file : inputs_under(argv[i])) {
      std::vector<std::uint8_t> data;
      if (!read_file(file, data)) {
        std::fprintf(stderr, "%s: cannot read %s\n", argv[0], file.c_str());
        return 2;
      }
      std::fprintf(stderr, "replaying %s (%zu bytes)\n", file.c_str(), data.size());
      replaying = file.string();
      LLVMFuzzerTestOneInput(data.data(), data.size());
      replaying.clear();
      ++count;
    }
  }
  std::fprintf(stderr, "replayed %zu inputs, no crash\n", count);
  return 0;
}
