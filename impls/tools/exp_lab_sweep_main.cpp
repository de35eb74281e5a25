// exp_lab_sweep: every f32 input of the exp lab's domain (or every K-th)
// through each primitive, against MPFR-certified exact exponentials
// (docs/exp-lab.md). A standalone tool, not a softcheck subcommand.
//
//   exp_lab_sweep [--threads N] [--stride K] [--json FILE] [--planted] [--check]
//   exp_lab_sweep --fold-m M --fold-s S ...   FlashAttention's fold over x <= M
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>

#include <CLI/CLI.hpp>

#include "exp_lab_sweep.hpp"

int main(int argc, char** argv) {
  using namespace softcheck::exp_lab;
  CLI::App app{"The exp lab's exhaustive sweep: each exp primitive over every f32 input that matters for softmax, "
               "against MPFR (docs/exp-lab.md)"};
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::uint64_t stride = 1;
  std::string json_path;
  bool planted = false, check = false;
  float fold_m = 0, fold_s = 1;
  app.add_option("--threads", threads, "Worker threads (the result does not depend on it)")
      ->check(CLI::Range(1u, 1024u))
      ->capture_default_str();
  app.add_option("--stride", stride, "Every K-th f32 of the domain, from its lowest")->check(CLI::Range(1ull, 1ull << 32));
  app.add_option("--json", json_path, "Write the result as JSON here");
  auto* m_opt = app.add_option("--fold-m", fold_m, "Sweep exp_fold_fma over x <= M with row max M instead of the z domain");
  app.add_option("--fold-s", fold_s, "The fold's softmax scale s (> 0)")->needs(m_opt)->check(CLI::PositiveNumber);
  app.add_flag("--planted", planted, "Also sweep exp2_poly5 with one coefficient mistyped (it must exceed the bound)");
  app.add_flag("--check", check, "Exit 1 unless the lab's expectations hold (bounds, glibc's 0.502, the planted error caught)");
  CLI11_PARSE(app, argc, argv);

  try {
    const bool fold = m_opt->count() > 0;
    const SweepDomain domain = fold ? fold_domain(fold_m, fold_s, stride) : z_domain(stride);
    std::vector<SweepPrimitive> primitives = fold ? fold_domain_primitives(fold_m, fold_s) : z_domain_primitives();
    if (planted) primitives.push_back(planted_coefficient_primitive());
    const auto start = std::chrono::steady_clock::now();
    const SweepResult result = run_sweep(domain, primitives, threads);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cout << text_table(result);
    std::cerr << "exp_lab_sweep: " << result.inputs << " inputs, " << primitives.size() << " primitives, " << threads
              << " threads, " << seconds << " s\n";
    if (!json_path.empty()) {
      std::ofstream out(json_path);
      out << to_json(result).dump(2) << '\n';
      if (!out) throw std::runtime_error("cannot write " + json_path);
    }
    if (check) {
      const std::vector<std::string> failed = check_expectations(result);
      for (const std::string& f : failed) std::cerr << "exp_lab_sweep: expectation failed: " << f << '\n';
      if (!failed.empty()) return 1;
      std::cerr << "exp_lab_sweep: every expectation holds\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "exp_lab_sweep: " << e.what() << '\n';
    return 2;
  }
  return 0;
}
