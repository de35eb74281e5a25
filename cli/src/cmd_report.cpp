// softcheck report: renders a saved report.json as HTML and/or Markdown.
#include <fmt/format.h>

#include <filesystem>

#include "commands.hpp"
#include "softcheck/report.hpp"

namespace softcheck::cli {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string input;
  std::string html, md;
  bool quiet = false;
};

// Where each rendering goes: the named outputs, or by default both next to the input.
std::vector<std::pair<fs::path, std::string>> renderings(const ReportArgs& a, const Report& r) {
  const fs::path in = a.input;
  std::vector<std::pair<fs::path, std::string>> files;
  const bool defaults = a.html.empty() && a.md.empty();
  const std::string digest = report_digest(to_json(r));  // what a run's renderings carry
  if (defaults || !a.html.empty())
    files.emplace_back(defaults ? fs::path(in).replace_extension(".html") : fs::path(a.html), to_html(r, digest));
  if (defaults || !a.md.empty())
    files.emplace_back(defaults ? fs::path(in).replace_extension(".md") : fs::path(a.md), to_markdown(r, digest));
  // By file identity, before any directory is made or file written.
  std::vector<fs::path> outputs;
  for (const auto& f : files) outputs.push_back(f.first);
  check_outputs_against_inputs({in}, outputs);
  for (const auto& [path, content] : files) {
    const fs::path dir = path.parent_path().empty() ? fs::path(".") : path.parent_path();
    ensure_writable_dir(dir);
  }
  return files;
}

}  // namespace

Command add_report(CLI::App& app) {
  auto* sub = app.add_subcommand("report", "Render a saved report.json as HTML and/or Markdown");
  auto a = std::make_shared<ReportArgs>();
  sub->add_option("file", a->input, "report.json written by `softcheck run` (or merged by `softcheck bench`)")
      ->required();
  sub->add_option("--html", a->html, "Write the HTML report here (default: FILE with .html, when neither option is given)");
  sub->add_option("--md", a->md, "Write the Markdown report here (default: FILE with .md, when neither option is given)");
  sub->add_flag("--quiet", a->quiet, "Print nothing on success");
  sub->footer("Exit status: 0 rendered (whatever the report's verdict), 2 the file is missing, malformed or not a "
              "softcheck report (nothing is written).");
  return [a] {
    const Report report = read_report(a->input);
    const auto files = renderings(*a, report);
    write_files_atomically(files);
    if (!a->quiet)
      for (const auto& f : files) fmt::print("wrote {}\n", f.first.string());
    return exit_ok;
  };
}

}  // namespace softcheck::cli
