// Benchmark results as a grid for the Markdown and HTML tables: one row per
// (kernel, op), one column per shape, in the order the bench ran them.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "softcheck/report.hpp"

namespace softcheck {

struct PerfGrid {
  struct Row {
    std::string kernel, op, format;
    std::vector<const BenchResult*> cells;  // one per shape; nullptr where not run
  };
  std::vector<std::pair<std::int64_t, std::int64_t>> shapes;  // (rows, cols)
  std::vector<Row> rows;
};

inline PerfGrid perf_grid(const Performance& p) {
  PerfGrid g;
  for (const BenchResult& b : p.results)
    if (std::find(g.shapes.begin(), g.shapes.end(), std::pair{b.rows, b.cols}) == g.shapes.end())
      g.shapes.emplace_back(b.rows, b.cols);
  for (const BenchResult& b : p.results) {
    auto row = std::find_if(g.rows.begin(), g.rows.end(),
                            [&](const PerfGrid::Row& r) { return r.kernel == b.kernel && r.op == b.op; });
    if (row == g.rows.end()) {
      g.rows.push_back({b.kernel, b.op, b.format, std::vector<const BenchResult*>(g.shapes.size(), nullptr)});
      row = g.rows.end() - 1;
    }
    const auto col = std::find(g.shapes.begin(), g.shapes.end(), std::pair{b.rows, b.cols}) - g.shapes.begin();
    row->cells[static_cast<std::size_t>(col)] = &b;
  }
  return g;
}

}  // namespace softcheck
