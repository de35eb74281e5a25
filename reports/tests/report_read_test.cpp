// Reading report.json back: round trip and strict validation.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "sample.hpp"
#include "softcheck/report.hpp"

namespace fs = std::filesystem;
using softcheck::from_json;
using softcheck::ReportFormatError;
using softcheck::to_json;
using Json = nlohmann::ordered_json;

namespace {

// The error message from_json gives for the document `text` edited by `edit`.
template <class Edit>
std::string error_after_editing(const std::string& text, Edit edit) {
  Json doc = Json::parse(text);
  edit(doc);
  try {
    from_json(doc.dump());
  } catch (const ReportFormatError& e) {
    return e.what();
  }
  return "(no error)";
}

// ... of the sample report.
template <class Edit>
std::string error_after(Edit edit) {
  return error_after_editing(to_json(softcheck::testing::sample()), edit);
}

}  // namespace

TEST(ReportRead, RoundTripIsByteIdentical) {
  const std::string text = to_json(softcheck::testing::sample());
  EXPECT_EQ(to_json(from_json(text)), text);
}

TEST(ReportRead, RoundTripWithPerformance) {
  softcheck::Report r = softcheck::testing::sample();
  r.performance = softcheck::testing::sample_performance();
  const std::string text = to_json(r);
  const softcheck::Report back = from_json(text);
  EXPECT_TRUE(back.performance.present);
  ASSERT_EQ(back.performance.results.size(), 3u);
  EXPECT_DOUBLE_EQ(back.performance.results[0].copy_fraction(), 0.5);
  EXPECT_EQ(to_json(back), text);
}

TEST(ReportRead, NonFiniteValuesComeBack) {
  const softcheck::Report r = from_json(to_json(softcheck::testing::sample()));
  const softcheck::KernelSummary& naive = r.kernels[2];
  EXPECT_TRUE(std::isnan(naive.worst.got));
  EXPECT_TRUE(std::isinf(naive.worst.bound));
  EXPECT_TRUE(std::isinf(naive.max_rel));
  EXPECT_FALSE(r.kernels[3].worst.present);
  EXPECT_EQ(r.kernels[3].properties.size(), 3u);
  EXPECT_EQ(r.kernels[3].properties[2].verdict, "skipped");
  EXPECT_EQ(r.kernels[0].by_temperature[0].key, 0.7);
  EXPECT_EQ(r.kernels[0].by_magnitude[0].key, -3);
}

TEST(ReportRead, BenchJsonRoundTrip) {
  const std::string text = softcheck::performance_to_json(softcheck::testing::sample_performance());
  EXPECT_EQ(softcheck::performance_to_json(softcheck::performance_from_json(text)), text);
  EXPECT_THROW(softcheck::performance_from_json(to_json(softcheck::testing::sample())), ReportFormatError);
}

TEST(ReportRead, SweepsAreOptional) {
  // A schema-1 report written before the sweeps existed still reads.
  const std::string msg = error_after([](Json& d) {
    for (Json& k : d["kernels"])
      for (const char* key : {"ulp_histogram", "by_size", "by_temperature", "by_magnitude"}) k.erase(key);
  });
  EXPECT_EQ(msg, "(no error)");
}

TEST(ReportRead, SparseSupportCountsRoundTrip) {
  // docs/report-schema.md: false_zeros / false_nonzeros exist for the sparse
  // ops only; the reader takes them back, and softmax entries stay without them.
  softcheck::Report r = softcheck::testing::sample();
  softcheck::KernelSummary s = r.kernels[0];
  s.kernel = "sparsemax_f32";
  s.op = "sparsemax";
  s.false_zeros = 3;
  s.false_nonzeros = 1;
  r.kernels.push_back(s);
  const std::string text = to_json(r);
  const Json doc = Json::parse(text);
  EXPECT_FALSE(doc["kernels"][0].contains("false_zeros"));
  EXPECT_EQ(doc["kernels"].back()["false_zeros"], 3);
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(back.kernels.back().false_zeros, 3u);
  EXPECT_EQ(back.kernels.back().false_nonzeros, 1u);
  EXPECT_EQ(to_json(back), text);
  const std::string bad = error_after([](Json& d) { d["kernels"][0]["false_zeros"] = -1; });
  EXPECT_NE(bad.find("false_zeros"), std::string::npos) << bad;
}

// unbounded_rows: rows whose contract bound is infinite, never checked. It
// comes back, cannot exceed rows, and a report from before it was counted
// (no key) reads as 0.
TEST(ReportRead, UnboundedRowsRoundTripAndAreChecked) {
  softcheck::Report r = softcheck::testing::sample();
  r.kernels[0].unbounded_rows = 2;
  const std::string text = to_json(r);
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(back.kernels[0].unbounded_rows, 2u);
  EXPECT_EQ(to_json(back), text);
  Json doc = Json::parse(text);
  doc["kernels"][0].erase("unbounded_rows");
  EXPECT_EQ(from_json(doc.dump()).kernels[0].unbounded_rows, 0u);
  const std::string over = error_after([](Json& d) { d["kernels"][0]["unbounded_rows"] = d["kernels"][0]["rows"].get<std::uint64_t>() + 1; });
  EXPECT_NE(over.find("unbounded_rows: larger than rows"), std::string::npos) << over;
}

TEST(ReportRead, OutputsOfAnOpWithSeveralRoundTripAndAreChecked) {
  // docs/report-schema.md: an op with several outputs (softmax_lse) has one
  // entry per output, named by "output"; other entries have no such field.
  const softcheck::Report r = softcheck::testing::sample_with_two_outputs();
  const std::string text = to_json(r);
  const Json doc = Json::parse(text);
  EXPECT_FALSE(doc["kernels"][0].contains("output"));
  EXPECT_EQ(doc["kernels"].back()["output"], "lse");
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(back.kernels.back().label(), "softmax_lse:lse");
  EXPECT_EQ(to_json(back), text);
  const auto edited = [&](auto edit) { return error_after_editing(text, edit); };
  const std::string unknown = edited([](Json& d) { d["kernels"].back()["output"] = "h"; });
  EXPECT_NE(unknown.find("'h' is not an output of softmax_lse"), std::string::npos) << unknown;
  const std::string missing = edited([](Json& d) { d["kernels"].back().erase("output"); });
  EXPECT_NE(missing.find("output"), std::string::npos) << missing;
  const std::string extra = edited([](Json& d) { d["kernels"][0]["output"] = "y"; });
  EXPECT_NE(extra.find("has one output"), std::string::npos) << extra;
  const std::string twice = edited([](Json& d) { d["kernels"].back()["output"] = "y"; });
  EXPECT_NE(twice.find("duplicate entry for kernel 'online_f32', op softmax_lse:y"), std::string::npos) << twice;
}

// docs/report-schema.md: "floor" exists for entries without a contract only;
// violations need the status "violated", an opt-out its reason.
TEST(ReportRead, FloorRoundTripsAndIsChecked) {
  softcheck::Report r = softcheck::testing::sample();
  softcheck::KernelSummary s = r.kernels[0];
  s.kernel = "nc_f32";
  s.contract_declared = false;
  s.contract_formula = "none";
  s.status = "violated";
  s.contract_violations = 0;
  s.floor_checked = true;
  s.floor_violations = 3;
  s.nonfinite = 5;
  r.kernels.push_back(s);
  s.kernel = "nc_opted_f32";
  s.status = "no_contract";
  s.floor_violations = 0;
  s.floor_opt_out = "overflows by design";
  r.kernels.push_back(s);
  const std::string text = to_json(r);
  const Json doc = Json::parse(text);
  EXPECT_FALSE(doc["kernels"][0].contains("floor"));
  EXPECT_EQ(doc["kernels"][doc["kernels"].size() - 2]["floor"]["no_nonfinite"]["violations"], 3);
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(back.kernels[back.kernels.size() - 2].floor_violations, 3u);
  EXPECT_EQ(back.kernels.back().floor_opt_out, "overflows by design");
  EXPECT_EQ(to_json(back), text);
  const auto edited = [&](auto edit) { return error_after_editing(text, edit); };
  const std::size_t bad = doc["kernels"].size() - 2;
  EXPECT_NE(edited([&](Json& d) { d["kernels"][0]["floor"] = d["kernels"][bad]["floor"]; }).find("declared contract"),
            std::string::npos);
  EXPECT_NE(edited([&](Json& d) {
              d["kernels"][bad]["status"] = "no_contract";
              d["verdict"] = "violated";
            }).find("floor violations with status"),
            std::string::npos);
  EXPECT_NE(edited([&](Json& d) { d["kernels"].back()["floor"]["no_nonfinite"]["opted_out"] = ""; }).find("reason"),
            std::string::npos);
  // Floor rows are rows with a NaN/inf output: no more of them than either.
  EXPECT_NE(edited([&](Json& d) { d["kernels"][bad]["nonfinite"] = 0; }).find("floor rows"), std::string::npos);
  EXPECT_NE(edited([&](Json& d) {
              d["kernels"][bad]["status"] = "unavailable";
              d["verdict"] = "held";
            }).find("unavailable entry"),
            std::string::npos);
}

TEST(ReportRead, NotJson) {
  EXPECT_THROW(from_json("{\"schema\": "), ReportFormatError);
  try {
    from_json("not json");
  } catch (const ReportFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("not valid JSON"), std::string::npos) << e.what();
  }
}

// A number beyond double's range is a format error, not an escaping
// nlohmann::out_of_range (fuzz_inputs found `softcheck report` terminating).
TEST(ReportRead, HugeNumberIsAFormatError) {
  EXPECT_THROW(from_json("{\"schema\": \"softcheck-report\", \"schema_version\": 1e991}"), ReportFormatError);
  EXPECT_THROW(softcheck::performance_from_json("{\"performance\": 1e991}"), ReportFormatError);
}

TEST(ReportRead, ForeignDocuments) {
  EXPECT_NE(error_after([](Json& d) { d.erase("schema"); }).find("not a softcheck-report document"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& d) { d["schema"] = "other-tool"; }).find("schema is 'other-tool'"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& d) { d["schema_version"] = 2; }).find("unsupported schema_version 2"),
            std::string::npos);
  EXPECT_NE(error_after([](Json& d) { d = Json::array(); }).find("expected an object"), std::string::npos);
}

TEST(ReportRead, ErrorsNameTheField) {
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][1].erase("max_ulp"); }),
            "kernels[1].max_ulp: required field is missing");
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][0]["cases"] = "three"; }),
            "kernels[0].cases: expected a non-negative integer, found a string");
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][0]["cases"] = -1; }),
            "kernels[0].cases: expected a non-negative integer, found an integer");
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][0]["worst"]["got"] = "huge"; }),
            "kernels[0].worst.got: expected a number, \"nan\", \"inf\" or \"-inf\", found \"huge\"");
  EXPECT_EQ(error_after([](Json& d) { d["run"]["sizes"][1] = 1.5; }), "run.sizes[1]: expected an integer, found a number");
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][0]["status"] = "fine"; }),
            "kernels[0].status: 'fine' is not one of held, violated, no_contract, unavailable");
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][0]["contract"] = 3; }),
            "kernels[0].contract: expected an object, found an unsigned integer");
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][0]["by_size"][0]["cols"] = 500; }),
            "kernels[0].by_size: keys are not strictly ascending");
}

TEST(ReportRead, VerdictMustAgreeWithKernels) {
  EXPECT_NE(error_after([](Json& d) { d["verdict"] = "violated"; }).find("contradicts"), std::string::npos);
  EXPECT_EQ(error_after([](Json& d) {
              d["kernels"][0]["status"] = "violated";
              d["verdict"] = "violated";
            }),
            "(no error)");
}

TEST(ReportRead, FilesNameThePath) {
  const fs::path missing = fs::temp_directory_path() / "softcheck-no-such-report.json";
  fs::remove(missing);
  try {
    softcheck::read_report(missing);
    FAIL() << "no error";
  } catch (const ReportFormatError& e) {
    EXPECT_NE(std::string(e.what()).find(missing.string()), std::string::npos);
  }
  const fs::path bad = fs::temp_directory_path() / "softcheck-bad-report.json";
  std::ofstream(bad) << "{\"schema\": \"softcheck-report\", \"schema_version\": 1}";
  try {
    softcheck::read_report(bad);
    FAIL() << "no error";
  } catch (const ReportFormatError& e) {
    EXPECT_EQ(std::string(e.what()), bad.string() + ": tool: required field is missing");
  }
  fs::remove(bad);
}

// run.oracle (the tiered oracle's counts, docs/report-schema.md): written,
// read back identically, optional, and checked.
TEST(ReportRead, OracleUseRoundTripsAndIsChecked) {
  softcheck::Report r = softcheck::testing::sample();
  r.oracle = {"tiered", 120, 7};
  const std::string text = to_json(r);
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(back.oracle.mode, "tiered");
  EXPECT_EQ(back.oracle.rows, 120u);
  EXPECT_EQ(back.oracle.mpfr_rows, 7u);
  EXPECT_EQ(to_json(back), text);
  EXPECT_NE(softcheck::to_markdown(r).find("7 of 120 compared rows used MPFR"), std::string::npos);
  Json doc = Json::parse(text);
  doc["run"]["oracle"]["mpfr_rows"] = 121;
  EXPECT_THROW(from_json(doc.dump()), ReportFormatError);
  doc["run"]["oracle"]["mpfr_rows"] = 7;
  doc["run"]["oracle"]["mode"] = "guess";
  EXPECT_THROW(from_json(doc.dump()), ReportFormatError);
  doc["run"].erase("oracle");
  EXPECT_TRUE(from_json(doc.dump()).oracle.mode.empty());
}

// Errors, ratios and sizes that cannot be negative (or zero, for lengths and
// temperatures) are refused, naming the field and the kernel: a baseline with
// max_ulp -5 would make every candidate look like a regression, or hide one.
TEST(ReportRead, ImpossibleMetricsAreRefused) {
  for (const char* field : {"max_ulp", "mean_ulp", "max_bits", "mean_bits", "max_rel", "max_normwise",
                            "max_bound_ratio"}) {
    const std::string msg = error_after([&](Json& d) { d["kernels"][1][field] = -5; });
    EXPECT_EQ(msg, std::string("kernels[1].") + field +
                       ": -5 is negative (kernel 'shifted_f64', op softmax): expected a number >= 0 or null");
  }
  const auto refused = [](const std::string& msg, const std::string& field) {
    return msg.find(field + ": ") == 0 && msg.find("shifted_f32") != std::string::npos;
  };
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["worst"]["ulp"] = -0.5; }), "kernels[0].worst.ulp");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["worst"]["bound"] = -1; }),
               "kernels[0].worst.bound");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["worst"]["cols"] = 0; }), "kernels[0].worst.cols");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["worst"]["row"] = -1; }), "kernels[0].worst.row");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["worst"]["element"] = 8; }),  // cols is 8
               "kernels[0].worst.element");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["worst"]["temperature"] = 0; }),
               "kernels[0].worst.temperature");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["by_family"][0]["max_ulp"] = -1; }),
               "kernels[0].by_family[0].max_ulp");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["by_size"][0]["mean_ulp"] = -1; }),
               "kernels[0].by_size[0].mean_ulp");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["by_size"][0]["cols"] = 0; }),
               "kernels[0].by_size[0].cols");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["by_temperature"][0]["temperature"] = -0.7; }),
               "kernels[0].by_temperature[0].temperature");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["by_magnitude"].back()["decade"] = 11; }),
               "kernels[0].by_magnitude[2].decade");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["measured"] = 1201; }), "kernels[0].measured");
  EXPECT_PRED2(refused, error_after([](Json& d) { d["kernels"][0]["policy_violations"] = 1; }),
               "kernels[0].policy_violations");
  EXPECT_EQ(error_after([](Json& d) { d["run"]["sizes"][0] = 0; }), "run.sizes[0]: 0 is out of range (expected >= 1)");
  EXPECT_EQ(error_after([](Json& d) { d["run"]["temperatures"][1] = -1; }),
            "run.temperatures[1]: -1 is not a finite number > 0");
  // null is how an infinite error is written: still accepted.
  EXPECT_EQ(error_after([](Json& d) { d["kernels"][0]["max_ulp"] = nullptr; }), "(no error)");
}

TEST(ReportRead, ImpossibleBenchFiguresAreRefused) {
  softcheck::Report r = softcheck::testing::sample();
  r.performance = softcheck::testing::sample_performance();
  Json doc = Json::parse(to_json(r));
  doc["performance"]["results"][0]["bytes_per_second"] = -1;
  EXPECT_THROW(from_json(doc.dump()), ReportFormatError);
  doc = Json::parse(to_json(r));
  doc["performance"]["results"].push_back(doc["performance"]["results"][0]);
  try {
    from_json(doc.dump());
    FAIL() << "a repeated benchmark result was accepted";
  } catch (const ReportFormatError& e) {
    EXPECT_NE(std::string(e.what()).find("performance.results: results[3] repeats"), std::string::npos) << e.what();
  }
}

// The gate matches entries by (kernel, op) and properties by name: a second
// entry would make it compare against one of them at random.
TEST(ReportRead, DuplicateEntriesAreRefused) {
  EXPECT_EQ(error_after([](Json& d) { d["kernels"].push_back(d["kernels"][1]); }),
            "kernels[4]: duplicate entry for kernel 'shifted_f64', op softmax (also kernels[1])");
  // The same kernel with another op is a different entry.
  EXPECT_EQ(error_after([](Json& d) {
              Json k = d["kernels"][1];
              k["op"] = "log_softmax";
              d["kernels"].push_back(k);
            }),
            "(no error)");
  const std::string msg = error_after([](Json& d) {
    Json& props = d["kernels"][3]["properties"];
    props.push_back(props[0]);
  });
  EXPECT_NE(msg.find("kernels[3].properties: property '"), std::string::npos) << msg;
  EXPECT_NE(msg.find("appears twice"), std::string::npos) << msg;
}

namespace {

// Runs read_report(path) in a child process with a memory cap and a time
// limit, so that a reader that blocks or reads without end fails the test
// instead of hanging it or exhausting the machine. Returns the error message,
// "(no error)", or what went wrong with the child.
std::string read_in_child(const fs::path& path) {
  int fds[2];
  if (::pipe(fds) != 0) return "(pipe failed)";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(fds[0]);
    const rlimit cap{std::uint64_t{512} << 20, std::uint64_t{512} << 20};
    ::setrlimit(RLIMIT_AS, &cap);
    std::string msg = "(no error)";
    try {
      softcheck::read_report(path);
    } catch (const std::exception& e) {
      msg = e.what();
    }
    (void)!::write(fds[1], msg.data(), msg.size());
    ::_exit(0);
  }
  ::close(fds[1]);
  int status = 0;
  bool done = false;
  for (int i = 0; i < 500 && !done; ++i) {  // 5 s
    done = ::waitpid(pid, &status, WNOHANG) == pid;
    if (!done) ::usleep(10000);
  }
  if (!done) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &status, 0);
    ::close(fds[0]);
    return "(still reading after 5 s)";
  }
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) msg.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);
  return msg.empty() ? "(child died)" : msg;
}

}  // namespace

// Only regular files are read, up to a size limit: /dev/zero would grow
// without bound, a FIFO without a writer would block open(2) forever.
TEST(ReportRead, OnlyRegularFilesOfBoundedSize) {
  EXPECT_EQ(read_in_child("/dev/zero"), "/dev/zero: not a regular file (a device, FIFO or socket is not read)");
  EXPECT_EQ(read_in_child("/dev/urandom"),
            "/dev/urandom: not a regular file (a device, FIFO or socket is not read)");
  const fs::path dir = fs::temp_directory_path() / ("softcheck-read-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const fs::path fifo = dir / "fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(read_in_child(fifo), fifo.string() + ": not a regular file (a device, FIFO or socket is not read)");
  // A sparse file one byte over the limit: refused by its size, not read.
  const fs::path big = dir / "big.json";
  std::ofstream(big) << "{";
  fs::resize_file(big, softcheck::max_report_bytes + 1);
  EXPECT_EQ(read_in_child(big), big.string() + ": larger than the 64 MiB limit");
  // A link to a regular report is a regular report.
  const fs::path real = dir / "real.json", link = dir / "link.json";
  std::ofstream(real) << to_json(softcheck::testing::sample());
  fs::create_symlink(real, link);
  EXPECT_EQ(read_in_child(link), "(no error)");
  EXPECT_EQ(read_in_child(dir), dir.string() + ": is a directory");
  fs::remove_all(dir);
}

// The distribution, cells, reference rule, selection and load options round
// trip; the reader refuses what no run can produce.
// A backward's dx entry keeps its conditional-mode figures through a round
// trip; broken rows cannot outnumber the rows.
TEST(ReportRead, ConditionalModeRoundTrips) {
  softcheck::Report r = softcheck::testing::sample();
  softcheck::KernelSummary dx = r.kernels[0];
  dx.kernel = "softmax_backward_f32";
  dx.op = "softmax_backward";
  dx.output = "dx";
  dx.conditional = {true, 20, 1, 3.5};
  r.kernels.push_back(dx);
  const std::string text = to_json(r);
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(to_json(back), text);
  ASSERT_TRUE(back.kernels.back().conditional.present);
  EXPECT_EQ(back.kernels.back().conditional.rows, 20u);
  EXPECT_EQ(back.kernels.back().conditional.broken, 1u);
  EXPECT_EQ(back.kernels.back().conditional.max_error, 3.5);
  EXPECT_FALSE(back.kernels[0].conditional.present);
  const std::size_t last = back.kernels.size() - 1;
  EXPECT_NE(error_after_editing(text, [last](Json& d) { d["kernels"][last]["conditional"]["broken"] = 21; })
                .find("larger than rows"),
            std::string::npos);
}

TEST(ReportRead, DistributionCellsAndReferenceRuleAreChecked) {
  softcheck::Report r = softcheck::testing::sample();
  r.selection_recorded = true;
  r.selected_sizes = {8};
  r.reference_rule.scope = "no_contract";
  r.kernels[2].reference.kernel = "shifted_f32";
  r.kernels[2].reference.rows = 12;
  r.kernels[2].load_options = "--plugin /x/lib.so --isolate";
  r.kernels[3].reference.not_applied = "opted out: why";
  const std::string text = to_json(r);
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(to_json(back), text);
  EXPECT_EQ(back.kernels[0].cells.size(), 2u);
  EXPECT_EQ(back.kernels[2].load_options, "--plugin /x/lib.so --isolate");
  EXPECT_EQ(back.selected_sizes, (std::vector<std::int64_t>{8}));
  const auto edited = [&](auto edit) { return error_after_editing(text, edit); };
  EXPECT_NE(edited([](Json& d) { d["kernels"][0]["cells"][1]["cols"] = 8; }).find("appears twice"), std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["kernels"][0]["cells"][0]["violations"] = 7; }).find("larger than rows"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["kernels"][0]["cells"][0]["rows_above"] = 7; }).find("larger than rows"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["kernels"][0]["distribution"]["above"] = 1200; }).find("larger than measured"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["kernels"][0]["distribution"]["p50_ulp"] = 3; }).find("not ascending"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["kernels"][2]["reference"]["violations"] = 3; }).find("with status"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["kernels"][2]["reference"]["violations"] = 13; }).find("larger than rows"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["kernels"][3]["reference"]["not_applied"] = ""; }).find("needs its reason"),
            std::string::npos);
  // The conditional mode belongs to a backward's dx only, and its counts hold.
  EXPECT_NE(edited([](Json& d) { d["kernels"][0]["conditional"] = Json{{"rows", 4}, {"broken", 0}, {"max_error", 1.5}}; })
                .find("only a softmax or log-softmax backward's dx"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["run"]["reference_rule"]["scope"] = "some"; }).find("is not one of"),
            std::string::npos);
  EXPECT_NE(edited([](Json& d) { d["run"]["reference_rule"]["k"] = 0.5; }).find(">= 1"), std::string::npos);
  // Older reports without these fields still read (schema 1, optional fields).
  EXPECT_EQ(edited([](Json& d) {
              d["run"].erase("selection");
              d["run"].erase("reference_rule");
              for (Json& k : d["kernels"]) {
                k.erase("cells");
                k.erase("distribution");
                k.erase("reference");
                for (Json& f : k["by_family"]) f.erase("distribution");
              }
            }),
            "(no error)");
}

// Attention's O has d values per row (the family's head dimension), not
// cols: the worst element is checked against d, and its family must be an
// attention family.
TEST(ReportRead, AttentionWorstElementIsWithinTheHeadDimension) {
  const auto as_attention = [](Json& d, const char* family, int element) {
    Json& k = d["kernels"][0];
    k["op"] = "attention";
    k["output"] = "O";
    k["worst"]["family"] = family;
    k["worst"]["element"] = element;
  };
  const std::string text = to_json(softcheck::testing::sample());
  Json doc = Json::parse(text);
  as_attention(doc, "attn_gaussian_d64", 40);  // cols is 8, d is 64
  const softcheck::Report r = softcheck::from_json(doc.dump());
  EXPECT_EQ(r.kernels[0].worst.element, 40);
  EXPECT_NE(error_after([&](Json& d) { as_attention(d, "attn_gaussian_d64", 64); }).find("kernels[0].worst.element: 64 is out of range"),
            std::string::npos);
  EXPECT_NE(error_after([&](Json& d) { as_attention(d, "normal_s1", 0); }).find("is no attention family"),
            std::string::npos);
}

// `run --budget`: the cases it kept and skipped come back, are rendered, and
// figures that cannot be are refused (a gate compares the skipped lists).
// run.inputs: the digest of the rows the run's cases ran on (the gate
// refuses a rerun on other rows); optional, for reports written before it.
TEST(ReportRead, InputsDigestRoundTripsAndIsChecked) {
  softcheck::Report r = softcheck::testing::sample();
  r.inputs_digest = "fnv1a64:0123456789abcdef";
  const std::string text = to_json(r);
  EXPECT_NE(text.find("\"inputs\": \"fnv1a64:0123456789abcdef\""), std::string::npos) << text;
  const softcheck::Report back = from_json(text);
  EXPECT_EQ(back.inputs_digest, r.inputs_digest);
  EXPECT_EQ(to_json(back), text);
  EXPECT_EQ(to_json(softcheck::testing::sample()).find("\"inputs\""), std::string::npos);  // absent without one
  EXPECT_TRUE(from_json(to_json(softcheck::testing::sample())).inputs_digest.empty());
  for (const char* bad : {"fnv1a64:0123456789ABCDEF", "fnv1a64:0123", "md5:0123456789abcdef0123", "0123456789abcdef"}) {
    Json doc = Json::parse(text);
    doc["run"]["inputs"] = bad;
    EXPECT_THROW(from_json(doc.dump()), ReportFormatError) << bad;
  }
  Json doc = Json::parse(text);
  doc["run"]["inputs"] = 7;
  EXPECT_THROW(from_json(doc.dump()), ReportFormatError);
}

TEST(ReportRead, BudgetRoundTripsAndIsChecked) {
  softcheck::Report r = softcheck::testing::sample();
  r.budget.seconds = 4;
  r.budget.suite_seconds = 1.5;
  r.budget.modelled_seconds = 1.25;
  r.budget.cases_run = 3;
  r.budget.cases = 5;
  r.budget.skipped = {{"normal_s10", "f32", 65536, 1}, {"benchdnn", "f64", 4096, 0.7}};
  const std::string text = to_json(r);
  const softcheck::Report back = from_json(text);
  ASSERT_TRUE(back.budget.present());
  ASSERT_EQ(back.budget.skipped.size(), 2u);
  EXPECT_EQ(back.budget.skipped[1].family, "benchdnn");
  EXPECT_EQ(back.budget.skipped[1].cols, 4096);
  EXPECT_EQ(back.budget.skipped[1].temperature, 0.7);
  EXPECT_EQ(to_json(back), text);
  const std::string md = softcheck::to_markdown(r);
  EXPECT_NE(md.find("this run kept 3 of its 5 cases"), std::string::npos) << md;
  EXPECT_NE(md.find("`benchdnn` f64 n=4096 T=0.7"), std::string::npos) << md;
  EXPECT_NE(softcheck::to_html(r).find("this run kept 3 of its 5 cases"), std::string::npos);
  EXPECT_EQ(to_json(softcheck::testing::sample()).find("\"budget\": {"), std::string::npos);  // absent without one

  const auto refused = [&](auto edit) {
    Json doc = Json::parse(text);
    edit(doc["run"]["budget"]);
    EXPECT_THROW(from_json(doc.dump()), ReportFormatError) << doc["run"]["budget"].dump();
  };
  refused([](Json& b) { b["cases"] = 6; });                // run + skipped != cases
  refused([](Json& b) { b["seconds"] = 0; });
  refused([](Json& b) { b["suite_seconds"] = 5; });        // beyond the budget
  refused([](Json& b) { b["modelled_seconds"] = 2; });     // beyond the cases' share
  refused([](Json& b) { b["skipped"][0]["n"] = 0; });
  refused([](Json& b) { b["skipped"][0]["temperature"] = -1; });
}
