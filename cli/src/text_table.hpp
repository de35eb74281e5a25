// Tables and notes of the human-readable outputs (softcheck list, run, sweep)
// that fit a terminal of terminal_width columns whatever the kernel names and
// reasons are: the kernel column is sized from the data within what the other
// columns leave, a longer name stands on its own line above its row, the last
// column wraps at spaces, and a reason shared by several kernels is one note
// instead of a copy on each row. Machine-readable outputs
// (--json, report.json) never go through here.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace softcheck::cli {

inline constexpr std::size_t terminal_width = 100;

// The words of `text` on lines of at most `width` columns, continuation lines
// starting with `indent` (the first keeps the text's own leading spaces). A
// word longer than a line stands alone on its line.
inline std::vector<std::string> wrap_words(std::string_view text, std::size_t width, std::string_view indent = "") {
  std::vector<std::string> lines;
  std::size_t i = std::min(text.find_first_not_of(' '), text.size());
  std::string line(text.substr(0, i));
  bool has_word = false;
  while (i < text.size()) {
    if (text[i] == ' ') {
      ++i;
      continue;
    }
    const std::size_t end = std::min(text.find(' ', i), text.size());
    const std::string_view word = text.substr(i, end - i);
    i = end;
    if (!has_word) {
      line += word;
      has_word = true;
    } else if (line.size() + 1 + word.size() <= width) {
      line += ' ';
      line += word;
    } else {
      lines.push_back(line);
      line = std::string(indent) + std::string(word);
    }
  }
  lines.push_back(line);
  return lines;
}

// `text` wrapped to the terminal, continuation lines indented by 4; ends in "\n".
inline std::string wrapped(std::string_view text, std::string_view indent = "    ",
                           std::size_t width = terminal_width) {
  std::string out;
  for (const std::string& l : wrap_words(text, width, indent)) out += l + "\n";
  return out;
}

// "head text" on one line when it fits; else `head` alone and `text` under
// it, indented by 4 and wrapped only where it is itself too long, so that a
// message stays in one piece to search for whenever it can.
inline std::string labelled(std::string_view head, std::string_view text, std::size_t width = terminal_width) {
  if (head.size() + 1 + text.size() <= width) return fmt::format("{} {}\n", head, text);
  return fmt::format("{}\n{}", head, wrapped(fmt::format("    {}", text), "    ", width));
}

struct TableColumn {
  std::string header;
  bool right = false;  // right-aligned (numbers)
};

// Columns separated by one space. The first column (the kernel name) and the
// last one give way when the whole does not fit `width`: the first gets what
// the middle columns and at least `min_last` of the last leave (never less
// than `min_first`), a longer name stands alone on the line above its row,
// and the last column wraps at spaces under itself. No line ends in spaces.
class TextTable {
 public:
  explicit TextTable(std::vector<TableColumn> columns) : columns_(std::move(columns)) {}

  void add(std::vector<std::string> row) {
    row.resize(columns_.size());
    rows_.push_back(std::move(row));
  }

  std::string render(std::size_t width = terminal_width, std::size_t min_first = 12,
                     std::size_t min_last = 28) const {
    const std::size_t n = columns_.size();
    std::vector<std::size_t> w(n);
    for (std::size_t c = 0; c < n; ++c) {
      w[c] = columns_[c].header.size();
      for (const auto& r : rows_) w[c] = std::max(w[c], r[c].size());
    }
    std::size_t middle = n - 1;  // the separators
    for (std::size_t c = 1; c + 1 < n; ++c) middle += w[c];
    const std::size_t first = w[0], last = w[n - 1];
    if (n > 1 && first + middle + last > width) {
      const std::size_t room = width > middle ? width - middle : 0;
      const std::size_t keep_last = std::min(last, min_last);
      w[0] = std::clamp(room > keep_last ? room - keep_last : 0, std::min(min_first, first), first);
      w[n - 1] = std::max<std::size_t>(room > w[0] ? room - w[0] : 0, 1);
    }
    std::vector<std::string> header;
    for (const TableColumn& c : columns_) header.push_back(c.header);
    std::string out = line(header, w);
    for (const auto& r : rows_) out += line(r, w);
    return out;
  }

 private:
  std::string line(const std::vector<std::string>& cells, const std::vector<std::size_t>& w) const {
    const std::size_t n = cells.size();
    std::string out;
    std::string first = cells[0];
    if (first.size() > w[0]) {  // a long name: alone above its row
      out += first + "\n";
      first.clear();
    }
    std::string text = n > 1 ? fmt::format("{:<{}}", first, w[0]) : first;
    for (std::size_t c = 1; c + 1 < n; ++c)
      text += columns_[c].right ? fmt::format(" {:>{}}", cells[c], w[c]) : fmt::format(" {:<{}}", cells[c], w[c]);
    if (n > 1) {
      const std::size_t indent = text.size() + 1;
      const std::vector<std::string> parts = wrap_words(cells[n - 1], w[n - 1]);
      text += " " + parts[0];
      for (std::size_t p = 1; p < parts.size(); ++p) text += "\n" + std::string(indent, ' ') + parts[p];
    }
    // No trailing spaces, on any of the lines.
    std::string trimmed;
    std::size_t start = 0;
    while (start <= text.size()) {
      const std::size_t end = std::min(text.find('\n', start), text.size());
      std::string_view l(text.data() + start, end - start);
      while (!l.empty() && l.back() == ' ') l.remove_suffix(1);
      trimmed += std::string(l) + "\n";
      start = end + 1;
    }
    return out + trimmed;
  }

  std::vector<TableColumn> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// One note per distinct reason (e.g. why kernels are unavailable), in order of
// first appearance, naming the kernels that share it, for a table that says
// "unavailable" on the rows instead of the reason on each.
class ReasonNotes {
 public:
  void add(const std::string& kernel, const std::string& reason) {
    auto it = std::find_if(notes_.begin(), notes_.end(), [&](const auto& e) { return e.first == reason; });
    if (it == notes_.end()) {
      notes_.push_back({reason, {}});
      it = notes_.end() - 1;
    }
    if (std::find(it->second.begin(), it->second.end(), kernel) == it->second.end()) it->second.push_back(kernel);
  }

  // "cuda_* (6 kernels): unavailable: <reason>" per reason (labelled()).
  // `shown`: every kernel of the table, so that "prefix*" stands for a group
  // only when no other kernel shown has that prefix.
  std::string render(const std::vector<std::string>& shown, std::string_view what) const {
    std::string out;
    for (const auto& [reason, kernels] : notes_)
      out += labelled(fmt::format("{}: {}:", label(kernels, shown), what), reason);
    return out;
  }

  bool empty() const { return notes_.empty(); }

 private:
  static std::string label(const std::vector<std::string>& group, const std::vector<std::string>& shown) {
    if (group.size() == 1) return group.front();
    std::string prefix = group.front();
    for (const std::string& k : group)
      prefix.resize(std::mismatch(prefix.begin(), prefix.end(), k.begin(), k.end()).first - prefix.begin());
    prefix.resize(prefix.find_last_of('_') == std::string::npos ? 0 : prefix.find_last_of('_') + 1);
    const auto outside = [&](const std::string& k) {
      return k.starts_with(prefix) && std::find(group.begin(), group.end(), k) == group.end();
    };
    if (!prefix.empty() && std::none_of(shown.begin(), shown.end(), outside))
      return fmt::format("{}* ({} kernels)", prefix, group.size());
    std::string names;
    for (const std::string& k : group) names += (names.empty() ? "" : ", ") + k;
    return names;
  }

  std::vector<std::pair<std::string, std::vector<std::string>>> notes_;  // reason, its kernels
};

}  // namespace softcheck::cli
