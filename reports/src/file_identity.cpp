// Outputs against inputs by file identity, not by spelling: "./x.json",
// "d/../x.json", a symbolic or a hard link to x.json all name the same file
// as x.json, and a command that wrote over its own input would destroy what
// it was asked to read (a gate overwriting its baseline with JUnit XML).
#include <sys/stat.h>

#include <cerrno>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "softcheck/report.hpp"

namespace softcheck {

namespace fs = std::filesystem;

namespace {

struct Identity {
  fs::path given;
  fs::path canonical;  // the directory resolved (links, "..", "."), the last component as named
  bool exists = false;
  bool regular = false;
  bool directory = false;
  dev_t dev = 0;
  ino_t ino = 0;
};

// Where a rename(2) onto `p` would land: the canonical parent directory plus
// the name. The last component is kept as named because rename replaces a
// link itself, not what it points to; stat() below catches a link to an input.
fs::path canonical_target(const fs::path& p) {
  std::error_code ec;
  fs::path abs = fs::absolute(p, ec);
  if (ec) abs = p;
  const fs::path name = abs.filename();
  if (name.empty() || name == "." || name == "..") {
    fs::path whole = fs::weakly_canonical(abs, ec);
    return ec ? abs.lexically_normal() : whole;
  }
  fs::path parent = fs::weakly_canonical(abs.parent_path(), ec);
  if (ec) parent = abs.parent_path().lexically_normal();
  return parent / name;
}

Identity identify(const fs::path& p) {
  Identity id;
  id.given = p;
  id.canonical = canonical_target(p);
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) {  // follows links: a link to an input is that input
    id.exists = true;
    id.regular = S_ISREG(st.st_mode);
    id.directory = S_ISDIR(st.st_mode);
    id.dev = st.st_dev;
    id.ino = st.st_ino;
  }
  return id;
}

bool same_file(const Identity& a, const Identity& b) {
  if (a.exists && b.exists && a.dev == b.dev && a.ino == b.ino) return true;
  return a.canonical == b.canonical;
}

}  // namespace

void check_outputs_against_inputs(const std::vector<fs::path>& inputs, const std::vector<fs::path>& outputs) {
  std::vector<Identity> ins, outs;
  for (const fs::path& p : inputs) ins.push_back(identify(p));
  for (const fs::path& p : outputs) outs.push_back(identify(p));
  for (std::size_t i = 0; i < outs.size(); ++i) {
    const Identity& o = outs[i];
    if (o.exists && o.directory)
      throw std::invalid_argument("output " + o.given.string() + " is a directory");
    if (o.exists && !o.regular)
      throw std::invalid_argument("output " + o.given.string() +
                                  " exists and is not a regular file (writing would replace it)");
    for (const Identity& in : ins)
      if (same_file(o, in))
        throw std::invalid_argument("output " + o.given.string() + " would overwrite the input " +
                                    in.given.string() + " (the same file)");
    for (std::size_t j = 0; j < i; ++j)
      if (same_file(o, outs[j]))
        throw std::invalid_argument("outputs " + outs[j].given.string() + " and " + o.given.string() +
                                    " are the same file");
  }
}

}  // namespace softcheck
