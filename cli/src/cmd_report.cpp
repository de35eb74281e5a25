// softcheck report: renders a saved report.json as HTML and/or Markdown.
#include <fmt/format.h>

#include <filesystem>

#include "commands.hpp"
#include "softcheck/report.hpp"
#include "softcheck/run_suite.hpp"

namespace softcheck::cli {

namespace {

namespace fs = std::filesystem;

struct ReportArgs {
  std::string input;
  std::string html, md;
  bool quiet = false;
  std::vector<std::string> merge;
  std::string out;
};

// `--merge`: the shards' reports into the whole run's report set in --out.
int merge_shards(const ReportArgs& a) {
  if (!a.input.empty() || !a.html.empty() || !a.md.empty())
    throw std::invalid_argument("--merge takes the shards' report.json files and --out DIR, not FILE, --html or --md");
  if (a.out.empty()) throw std::invalid_argument("--merge needs --out DIR (where the merged report set goes)");
  std::vector<Report> shards;
  for (const std::string& f : a.merge) shards.push_back(read_report(f));
  const Report merged = merge_shard_reports(shards);
  const auto files = report_files(merged, a.out);
  std::vector<fs::path> outputs;
  for (const auto& f : files) outputs.push_back(f.first);
  check_outputs_against_inputs({a.merge.begin(), a.merge.end()}, outputs);
  ensure_writable_dir(a.out);
  write_files_atomically(files);
  if (!a.quiet)
    fmt::print("merged {} shards: {}; wrote report.json, report.md and report.html in {}\n", shards.size(),
               merged.all_held() ? "every declared contract held" : "VIOLATED", a.out);
  return merged.all_held() ? exit_ok : exit_violation;
}

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
  sub->add_option("file", a->input, "report.json written by `softcheck run` (or merged by `softcheck bench`)");
  sub->add_option("--html", a->html, "Write the HTML report here (default: FILE with .html, when neither option is given)");
  sub->add_option("--md", a->md, "Write the Markdown report here (default: FILE with .md, when neither option is given)");
  sub->add_option("--merge", a->merge,
                  "Merge the report.json files of the N shards of one run (`run --shard I/N`, any order) into the "
                  "report the unsharded run writes, byte for byte (docs/scaling.md)")
      ->expected(1, -1);
  sub->add_option("--out", a->out, "With --merge: the directory for the merged report.json, report.md, report.html");
  sub->add_flag("--quiet", a->quiet, "Print nothing on success");
  sub->footer("Exit status: 0 rendered (whatever the report's verdict); with --merge 0 every declared contract of "
              "the merged run held, 1 one was violated; 2 a file is missing, malformed or not a softcheck report, "
              "or the shards are not the N shards of one run (nothing is written).");
  return [a] {
    if (!a->merge.empty()) return merge_shards(*a);
    if (!a->out.empty()) throw std::invalid_argument("--out is for --merge; render one report with --html / --md");
    if (a->input.empty()) throw std::invalid_argument("give a report.json to render, or --merge SHARD... --out DIR");
    const Report report = read_report(a->input);
    const auto files = renderings(*a, report);
    write_files_atomically(files);
    if (!a->quiet)
      for (const auto& f : files) fmt::print("wrote {}\n", f.first.string());
    return exit_ok;
  };
}

}  // namespace softcheck::cli
