#include "fp_env_option.hpp"

#include <stdexcept>

namespace softcheck::cli {

void add_fp_env_option(CLI::App& sub, std::string& flag) {
  std::string envs;
  for (const std::string& e : fp_env_names()) envs += "\n  " + e + ": " + std::string(description(*parse_fp_env(e)));
  sub.add_option("--fp-env", flag,
                 "The floating-point environment of the kernels' calls (the oracle keeps the default; "
                 "docs/fp-env.md):" + envs)
      ->check(CLI::IsMember(fp_env_names()))
      ->capture_default_str();
}

FpEnv fp_env_of(const std::string& flag) {
  const std::optional<FpEnv> e = parse_fp_env(flag);
  if (!e) throw std::invalid_argument("--fp-env " + flag + ": unknown environment");
  if (const std::string why = fp_env_unsupported(*e); !why.empty())
    throw std::invalid_argument("--fp-env " + flag + ": " + why);
  return *e;
}

}  // namespace softcheck::cli
