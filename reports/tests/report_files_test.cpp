// Output files: outputs checked against inputs by identity, the report set
// written as one (lock, digest, stale temporaries, signals), and report.md
// escaping text that comes from plugins and users.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "sample.hpp"
#include "softcheck/report.hpp"

namespace fs = std::filesystem;
using softcheck::check_outputs_against_inputs;

namespace {

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("softcheck-files-test-" + name + "-" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::vector<std::string> entries(const fs::path& d) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(d)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

// The message check_outputs_against_inputs gives, or "(accepted)".
std::string verdict(const std::vector<fs::path>& inputs, const std::vector<fs::path>& outputs) {
  try {
    check_outputs_against_inputs(inputs, outputs);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(accepted)";
}

bool contains(const std::string& s, const std::string& what) { return s.find(what) != std::string::npos; }

// A PID that no process has: a child that has exited and been reaped.
pid_t dead_pid() {
  const pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ::waitpid(pid, nullptr, 0);
  return pid;
}

}  // namespace

// Every spelling of the input is caught: the path strings differ, the file is the same.
TEST(OutputIdentity, EverySpellingOfAnInputIsCaught) {
  const fs::path d = fresh_dir("identity");
  fs::create_directories(d / "sub");
  put(d / "x.json", "{}");
  fs::create_symlink("x.json", d / "link.json");
  fs::create_hard_link(d / "x.json", d / "hard.json");
  const fs::path cwd = fs::current_path();
  fs::current_path(d);
  const std::string dot = verdict({"x.json"}, {"./x.json"});
  fs::current_path(cwd);
  EXPECT_TRUE(contains(dot, "would overwrite the input x.json")) << dot;
  for (const fs::path& same : {d / "sub" / ".." / "x.json", d / "link.json", d / "hard.json", d / "." / "x.json"}) {
    const std::string msg = verdict({d / "x.json"}, {d / "out.md", same});
    EXPECT_TRUE(contains(msg, "output " + same.string() + " would overwrite the input")) << same << ": " << msg;
  }
  // The input given through a link, the output as the real file.
  EXPECT_TRUE(contains(verdict({d / "link.json"}, {d / "x.json"}), "would overwrite the input"));
  EXPECT_EQ(verdict({d / "x.json"}, {d / "x.md", d / "x.html", d / "sub" / "x.json"}), "(accepted)");
  fs::remove_all(d);
}

TEST(OutputIdentity, OutputsMustBeDistinct) {
  const fs::path d = fresh_dir("distinct");
  fs::create_directories(d / "sub");
  // Neither exists yet: compared by canonical path.
  EXPECT_TRUE(contains(verdict({}, {d / "same", d / "sub" / ".." / "same"}), "are the same file"));
  EXPECT_TRUE(contains(verdict({}, {d / "same", d / "same"}), "are the same file"));
  put(d / "a", "a");
  fs::create_hard_link(d / "a", d / "b");
  EXPECT_TRUE(contains(verdict({}, {d / "a", d / "b"}), "are the same file"));
  EXPECT_EQ(verdict({}, {d / "a", d / "c"}), "(accepted)");
  // Renaming over a directory or a device would replace it.
  EXPECT_TRUE(contains(verdict({}, {d / "sub"}), "is a directory"));
  EXPECT_TRUE(contains(verdict({}, {"/dev/null"}), "not a regular file"));
  fs::remove_all(d);
}

// `softcheck report --html X --md X` used to write one and fail on the other,
// leaving X behind: the check comes before anything is written.
TEST(AtomicSet, SameTargetTwiceWritesNothing) {
  const fs::path d = fresh_dir("twice");
  EXPECT_THROW(softcheck::write_files_atomically({{d / "x", "A"}, {d / "." / "x", "B"}}), std::invalid_argument);
  EXPECT_TRUE(entries(d).empty());
  fs::remove_all(d);
}

TEST(AtomicSet, RenderingsCarryTheDigestOfTheirJson) {
  EXPECT_EQ(softcheck::report_digest(""), "fnv1a64:cbf29ce484222325");  // FNV-1a 64 test vectors
  EXPECT_EQ(softcheck::report_digest("a"), "fnv1a64:af63dc4c8601ec8c");
  const softcheck::Report r = softcheck::testing::sample();
  const auto files = softcheck::report_files(r, "out");
  ASSERT_EQ(files.size(), 3u);
  const std::string digest = softcheck::report_digest(files[0].second);
  EXPECT_TRUE(contains(files[1].second, "Rendered from report.json `" + digest + "`")) << digest;
  EXPECT_TRUE(contains(files[2].second, "<meta name=\"softcheck-report-digest\" content=\"" + digest + "\">"));
  // The one-argument renderings agree with the set (softcheck report re-renders).
  EXPECT_EQ(softcheck::to_markdown(r), files[1].second);
  EXPECT_EQ(softcheck::to_html(r), files[2].second);
  softcheck::Report other = r;
  other.seed = 8;
  EXPECT_FALSE(contains(softcheck::to_markdown(other), digest));
}

// Writers started together into one directory: each set on disk afterwards
// comes from one writer (the same tag in all three files), and neither a lock
// file nor a temporary is left. Without the lock the renames interleave.
TEST(AtomicSet, ConcurrentWritersLeaveOneWritersSet) {
  const fs::path d = fresh_dir("concurrent");
  // Large enough that writing the temporaries takes a while, as report.html does.
  const std::string padding(256 * 1024, 'x');
  int mixed = 0;
  constexpr int rounds = 40, writers = 4;
  for (int round = 0; round < rounds; ++round) {
    int go[2];
    ASSERT_EQ(::pipe(go), 0);
    std::vector<pid_t> pids;
    for (int w = 0; w < writers; ++w) {
      const pid_t pid = ::fork();
      if (pid == 0) {
        ::close(go[1]);
        char c;
        (void)!::read(go[0], &c, 1);  // all start when the parent closes the pipe
        const std::string tag = "writer " + std::to_string(w) + "\n";
        try {
          softcheck::write_files_atomically(
              {{d / "report.json", tag + padding}, {d / "report.md", tag + padding}, {d / "report.html", tag}});
        } catch (...) {
          ::_exit(1);
        }
        ::_exit(0);
      }
      pids.push_back(pid);
    }
    ::close(go[0]);
    ::close(go[1]);
    for (const pid_t pid : pids) {
      int status = 0;
      ::waitpid(pid, &status, 0);
      EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    const std::string json = slurp(d / "report.json").substr(0, 9);
    if (slurp(d / "report.md").substr(0, 9) != json || slurp(d / "report.html").substr(0, 9) != json) ++mixed;
    EXPECT_EQ(entries(d), (std::vector<std::string>{"report.html", "report.json", "report.md"}));
  }
  EXPECT_EQ(mixed, 0) << "of " << rounds << " rounds";
  fs::remove_all(d);
}

// What a process killed mid-write leaves (".NAME.tmp.PID" of a dead PID) is
// removed by the next write there; a live process's and unrelated files stay.
TEST(AtomicSet, StaleTemporariesOfDeadProcessesAreRemoved) {
  const fs::path d = fresh_dir("stale");
  const std::string dead = std::to_string(dead_pid()), live = std::to_string(::getppid());
  for (const std::string& name : {".report.json.tmp." + dead, ".report.md.tmp." + dead, ".probe.tmp." + dead,
                                  ".report.json.tmp." + live, ".notes.txt.tmp." + dead, "report.json.tmp." + dead})
    put(d / name, "old");
  softcheck::write_files_atomically({{d / "report.json", "{}"}, {d / "report.md", "md"}});
  EXPECT_EQ(entries(d), (std::vector<std::string>{".notes.txt.tmp." + dead, ".report.json.tmp." + live,
                                                  "report.json", "report.json.tmp." + dead, "report.md"}));
  fs::remove_all(d);
}

// A writer killed outright (SIGKILL: no handler runs) leaves its temporaries
// and the lock file; the next writer still gets the lock and cleans up.
TEST(AtomicSet, WriterKilledMidWriteIsCleanedUpAfter) {
  const fs::path d = fresh_dir("killed");
  const std::string big(8 << 20, 'x');
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (;;) softcheck::write_files_atomically({{d / "a", big}, {d / "b", big}, {d / "c", big}});
  }
  ::usleep(300000);
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  softcheck::write_files_atomically({{d / "a", "A"}, {d / "b", "B"}, {d / "c", "C"}});
  EXPECT_EQ(entries(d), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(slurp(d / "a") + slurp(d / "b") + slurp(d / "c"), "ABC");
  fs::remove_all(d);
}

TEST(TemporariesInFlight, RegisteredWhileTheyLive) {
  const fs::path d = fresh_dir("registry");
  const fs::path t = d / ".x.tmp.1";
  {
    const softcheck::TemporaryInFlight registered(t);
    put(t, "partial");
    softcheck::remove_temporaries_in_flight();
    EXPECT_FALSE(fs::exists(t));
  }
  put(t, "someone else's");
  softcheck::remove_temporaries_in_flight();
  EXPECT_TRUE(fs::exists(t)) << "a temporary no longer in flight was removed";
  // write_files_atomically's temporaries are out of the table once renamed.
  softcheck::write_files_atomically({{d / "y", "Y"}});
  const fs::path its_temporary = d / (".y.tmp." + std::to_string(::getpid()));
  put(its_temporary, "later");
  softcheck::remove_temporaries_in_flight();
  EXPECT_TRUE(fs::exists(its_temporary));
  fs::remove_all(d);
}

// A SIGTERM whose handler calls remove_temporaries_in_flight(), arriving at
// any moment of a stream of writes: what is left is one whole set (the first
// is written before the signal), with no temporary and no lock file (signals
// wait until the renames are done).
// The child says through a pipe when its handler is in place and its first
// set is written; only the moment of the signal after that varies, so a slow
// machine changes which moment is tested, never the verdict.
TEST(TemporariesInFlight, SignalMidWriteLeavesAWholeSetOrNothing) {
  for (int attempt = 0; attempt < 24; ++attempt) {
    const fs::path d = fresh_dir("signal");
    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      struct sigaction sa {};
      sa.sa_handler = [](int) {
        softcheck::remove_temporaries_in_flight();
        ::_exit(3);
      };
      ::sigaction(SIGTERM, &sa, nullptr);
      // Small files: the renames are a good part of each write, so a signal
      // often comes during them.
      for (int i = 0;; ++i) {
        const std::string tag = std::to_string(i) + ":";
        softcheck::write_files_atomically({{d / "a", tag + "a"}, {d / "b", tag + "b"}, {d / "c", tag}});
        if (i == 0) {
          const char byte = 1;
          if (::write(ready[1], &byte, 1) != 1) ::_exit(4);
          ::close(ready[1]);
        }
      }
    }
    ::close(ready[1]);
    char byte = 0;
    const ssize_t got = ::read(ready[0], &byte, 1);
    ::close(ready[0]);
    if (got == 1) ::usleep(200 * static_cast<useconds_t>(attempt));
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
    ASSERT_EQ(got, 1) << "the child ended before its first write (status " << status << ")";
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3)
        << "attempt " << attempt << ": exited " << WIFEXITED(status) << " with " << WEXITSTATUS(status)
        << ", signalled " << WIFSIGNALED(status) << " by " << WTERMSIG(status);
    ASSERT_EQ(entries(d), (std::vector<std::string>{"a", "b", "c"})) << "attempt " << attempt;
    const std::string c = slurp(d / "c");
    EXPECT_EQ(slurp(d / "a").substr(0, c.size()), c);
    EXPECT_EQ(slurp(d / "b").substr(0, c.size()), c);
    fs::remove_all(d);
  }
}

// report.md: text from plugins and users is shown, never interpreted.
TEST(ReportMarkdown, PluginTextIsEscaped) {
  softcheck::Report r = softcheck::testing::sample();
  r.kernels[0].description = "evil | cell\n# heading <script>alert(1)</script> `tick` *bold* [link](http://e) _x_";
  r.kernels[0].contract_why = "why |\nnot";
  r.kernels[0].contract_formula = "a `b` | c";
  r.kernels[1].status = "unavailable";
  r.kernels[1].unavailable_reason = "no | device\n- list";
  const std::string md = softcheck::to_markdown(r);
  EXPECT_FALSE(contains(md, "<script")) << md;
  EXPECT_TRUE(contains(md, "&lt;script>"));
  EXPECT_TRUE(contains(md, "\nevil \\| cell # heading &lt;script>alert(1)&lt;/script> \\`tick\\` \\*bold\\* "
                           "\\[link\\](http://e) \\_x\\_\n"))
      << md;
  EXPECT_TRUE(contains(md, "- contract: ``a `b` | c`` — why \\| not\n")) << md;
  // Every table row keeps its columns: unescaped '|' per line are as many as
  // the header's (code spans included: GFM splits cells there too).
  const std::regex unescaped_pipe(R"((^|[^\\])\|)");
  std::istringstream lines(md);
  std::size_t columns = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("| kernel | op | format |", 0) == 0 && columns == 0)
      columns = static_cast<std::size_t>(std::distance(
          std::sregex_iterator(line.begin(), line.end(), unescaped_pipe), std::sregex_iterator()));
    if (line.rfind("| shifted_f", 0) == 0) {
      EXPECT_EQ(static_cast<std::size_t>(std::distance(std::sregex_iterator(line.begin(), line.end(), unescaped_pipe),
                                                       std::sregex_iterator())),
                columns)
          << line;
    }
    EXPECT_NE(line.rfind("# heading", 0), 0u) << "a description started a heading";
    EXPECT_NE(line.rfind("- list", 0), 0u) << "a reason started a list item";
  }
  EXPECT_EQ(columns, 12u);
  // Identifiers stay readable: '_' inside a word opens no emphasis.
  EXPECT_TRUE(contains(md, "| shifted_f32 | softmax | f32 |"));
}

TEST(ReportMarkdown, ParagraphStartsAreLiteral) {
  softcheck::Report r = softcheck::testing::sample();
  for (const auto& [description, shown] :
       std::vector<std::pair<std::string, std::string>>{{"# h", "\\# h"}, {"- item", "\\- item"},
                                                        {"1. first", "1\\. first"}, {"    code", "code"},
                                                        {"> quote", "\\> quote"}, {"---", "\\---"}}) {
    r.kernels[0].description = description;
    EXPECT_TRUE(contains(softcheck::to_markdown(r), "\n\n" + shown + "\n\n")) << description;
  }
}
