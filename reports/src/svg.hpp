// A small SVG writer for the HTML report: line charts (linear or log10 axes)
// and bar charts, as inline <svg> text. No scripts, no external resources;
// the output is a pure function of the input (coordinates printed with one
// decimal), so a report renders byte for byte the same every time.
//
// Every data mark (point, line, bar) carries class="mark": scripts/check-html.sh
// counts them to prove that no plot is empty.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace softcheck::svg {

// Text for HTML/SVG content and attribute values.
std::string escape(std::string_view s);
// Short, readable number: 3 significant digits, "1e+06" style for large ones.
std::string short_number(double v);

// A numeric axis mapping [lo, hi] to pixels [p0, p1] (p1 < p0 for y).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1;

  double to_px(double v) const;     // values outside [lo, hi] are clamped to it
  // At most ~10, at round values: on a log axis decades, or 1-2-5 steps when
  // the axis spans under 3 decades.
  std::vector<double> ticks() const;
};

struct Point {
  double x = 0, y = 0;
  bool flagged = false;  // drawn as a cross: e.g. NaN/inf results in this bin
  std::string tip;       // tooltip
};

struct Series {
  std::string name;
  std::string color;  // CSS color
  std::string dash;   // SVG stroke-dasharray, "" for a solid line
  std::vector<Point> points;  // in ascending x
};

struct LineChart {
  double width = 760;  // pixels; the legend takes the right 200
  std::string title, x_label, y_label;
  bool x_log = false, y_log = false;
  double y_floor = 0;  // log y: values below it (0 included) are drawn on it
  std::vector<Series> series;
};

// "" when no series has a point: callers say why instead of drawing an empty plot.
std::string render(const LineChart& c);

struct Bar {
  std::string label;  // under the bar ("" for none)
  double value = 0;
  std::string color;
  std::string tip;
};

struct BarChart {
  double width = 420;
  std::string title, x_label, y_label;
  bool y_log = false;  // counts: log axis from 1/2 up, a bar of 1 still shows
  std::vector<Bar> bars;
};

// "" when every bar is 0.
std::string render(const BarChart& c);

}  // namespace softcheck::svg
