#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>
#include <string>

#include "softcheck/report.hpp"

namespace softcheck {

namespace fs = std::filesystem;

namespace {

std::string describe(const fs::path& p, const std::string& what) {
  return "cannot write " + p.string() + ": " + what;
}

fs::path temporary_beside(const fs::path& target) {
  return target.parent_path() /
         ("." + target.filename().string() + ".tmp." + std::to_string(::getpid()));
}

void write_whole_file(const fs::path& p, const std::string& content) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(describe(p, std::strerror(errno)));
  out.write(content.data(), static_cast<std::streamsize>(content.size()));
  out.flush();
  if (!out) throw std::runtime_error(describe(p, "write failed"));
}

}  // namespace

void ensure_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create output directory " + dir.string() + ": " + ec.message());
  if (!fs::is_directory(dir)) throw std::runtime_error("output path is not a directory: " + dir.string());
  // Probe with a real file: access(2) lies for root on read-only mounts.
  const fs::path probe = temporary_beside(dir / "probe");
  {
    std::ofstream out(probe);
    if (!out) throw std::runtime_error("output directory is not writable: " + dir.string() + ": " + std::strerror(errno));
  }
  fs::remove(probe, ec);
}

void write_files_atomically(const std::vector<std::pair<fs::path, std::string>>& files) {
  std::vector<fs::path> temps;
  auto cleanup = [&temps] {
    std::error_code ignored;
    for (const fs::path& t : temps) fs::remove(t, ignored);
  };
  try {
    for (const auto& [path, content] : files) {
      temps.push_back(temporary_beside(path));
      write_whole_file(temps.back(), content);
    }
    // rename(2) within one directory is atomic per file; all temporaries
    // exist and are complete before the first rename.
    for (std::size_t i = 0; i < files.size(); ++i) {
      std::error_code ec;
      fs::rename(temps[i], files[i].first, ec);
      if (ec) throw std::runtime_error(describe(files[i].first, ec.message()));
    }
  } catch (...) {
    cleanup();
    throw;
  }
}

}  // namespace softcheck

namespace softcheck {

std::vector<std::pair<fs::path, std::string>> report_files(const Report& r, const fs::path& dir) {
  return {{dir / "report.json", to_json(r)}, {dir / "report.md", to_markdown(r)}, {dir / "report.html", to_html(r)}};
}

}  // namespace softcheck
