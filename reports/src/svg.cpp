#include "svg.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

namespace softcheck::svg {

namespace {

// Pixel coordinates: one decimal is plenty and keeps the text stable.
std::string px(double v) { return fmt::format("{:.1f}", v); }

// The SVG document being written.
class Canvas {
 public:
  Canvas(double width, double height, std::string_view title) {
    out_ = fmt::format(
        "<svg class=\"plot\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{1}\" "
        "viewBox=\"0 0 {0} {1}\" role=\"img\" aria-label=\"{2}\">\n",
        px(width), px(height), escape(title));
    text(width / 2, 18, escape(title), "middle", "title");
  }

  void text(double x, double y, std::string_view escaped, std::string_view anchor, std::string_view cls,
            double rotate = 0) {
    const std::string turn = rotate != 0 ? fmt::format(" transform=\"rotate({} {} {})\"", px(rotate), px(x), px(y)) : "";
    out_ += fmt::format("<text x=\"{}\" y=\"{}\" text-anchor=\"{}\" class=\"{}\"{}>{}</text>\n", px(x), px(y),
                        anchor, cls, turn, escaped);
  }

  void line(double x1, double y1, double x2, double y2, std::string_view attrs) {
    out_ += fmt::format("<line x1=\"{}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" {}/>\n", px(x1), px(y1), px(x2), px(y2), attrs);
  }

  void rect(double x, double y, double w, double h, std::string_view attrs, std::string_view tip) {
    out_ += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" {}>{}</rect>\n", px(x), px(y), px(w),
                        px(h), attrs, tooltip(tip));
  }

  void polyline(const std::vector<std::pair<double, double>>& pts, std::string_view attrs) {
    std::string coords;
    for (const auto& [x, y] : pts) coords += (coords.empty() ? "" : " ") + px(x) + "," + px(y);
    out_ += fmt::format("<polyline points=\"{}\" fill=\"none\" {}/>\n", coords, attrs);
  }

  void circle(double x, double y, double r, std::string_view attrs, std::string_view tip) {
    out_ += fmt::format("<circle cx=\"{}\" cy=\"{}\" r=\"{}\" {}>{}</circle>\n", px(x), px(y), px(r), attrs,
                        tooltip(tip));
  }

  // A cross: marks a flagged point (e.g. NaN/inf results).
  void cross(double x, double y, double r, std::string_view color, std::string_view tip) {
    out_ += fmt::format(
        "<path class=\"mark\" d=\"M{0},{1}L{2},{3}M{0},{3}L{2},{1}\" stroke=\"{4}\" stroke-width=\"2\">{5}</path>\n",
        px(x - r), px(y - r), px(x + r), px(y + r), color, tooltip(tip));
  }

  std::string finish() { return out_ + "</svg>\n"; }

 private:
  static std::string tooltip(std::string_view tip) {
    return tip.empty() ? "" : "<title>" + escape(tip) + "</title>";
  }
  std::string out_;
};

// Round bounds around the data: decades on a log axis, a 1-2-5 step on a linear one.
double nice_step(double span) {
  const double raw = span / 7;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

// Log axis bounds: whole decades when the data spans 3 or more, otherwise
// the nearest 1-2-5 values around it (a 0.7..1 temperature range stays wide).
void fit_log(Axis& a, double lo, double hi) {
  const double decades = std::log10(hi) - std::log10(lo);
  if (decades >= 3) {
    a.lo = std::pow(10.0, std::floor(std::log10(lo)));
    a.hi = std::pow(10.0, std::ceil(std::log10(hi)));
    return;
  }
  a.lo = lo;
  a.hi = hi;
  for (double m : {5.0, 2.0, 1.0}) {  // largest 1-2-5 value <= lo, smallest >= hi
    const double e = std::pow(10.0, std::floor(std::log10(lo)));
    if (m * e <= lo) {
      a.lo = m * e;
      break;
    }
  }
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    const double e = std::pow(10.0, std::floor(std::log10(hi)));
    if (m * e >= hi) {
      a.hi = m * e;
      break;
    }
  }
  if (a.hi <= a.lo) a.lo /= 2, a.hi *= 2;
}

Axis fit(const std::vector<double>& values, bool log, double floor_value, double p0, double p1) {
  Axis a;
  a.log = log;
  a.p0 = p0;
  a.p1 = p1;
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (double v : values) {
    if (!std::isfinite(v) || (log && v < floor_value) || (log && v <= 0)) continue;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  if (log) {
    if (!(lo <= hi)) lo = hi = floor_value > 0 ? floor_value : 1;
    if (floor_value > 0) lo = std::min(lo, floor_value);
    fit_log(a, lo, hi);
    return a;
  }
  if (!(lo <= hi)) lo = hi = 0;
  a.lo = std::min(0.0, lo);
  const double step = nice_step(hi > a.lo ? hi - a.lo : 1);
  a.hi = std::ceil(hi / step) * step;
  if (a.hi <= a.lo) a.hi = a.lo + step;
  return a;
}

// The frame, grid lines, tick labels and axis titles of a plot area.
void draw_axes(Canvas& c, const Axis& x, const Axis& y, const std::string& x_label, const std::string& y_label,
               bool x_ticks) {
  const double left = x.p0, right = x.p1, top = y.p1, bottom = y.p0;
  for (double t : y.ticks()) {
    const double py = y.to_px(t);
    c.line(left, py, right, py, "class=\"grid\"");
    c.text(left - 6, py + 4, escape(short_number(t)), "end", "tick");
  }
  if (x_ticks)
    for (double t : x.ticks()) {
      const double pxv = x.to_px(t);
      c.line(pxv, top, pxv, bottom, "class=\"grid\"");
      c.text(pxv, bottom + 16, escape(short_number(t)), "middle", "tick");
    }
  c.rect(left, top, right - left, bottom - top, "class=\"frame\"", "");
  c.text((left + right) / 2, bottom + 34, escape(x_label), "middle", "axis");
  c.text(14, (top + bottom) / 2, escape(y_label), "middle", "axis", -90);
}

void draw_series(Canvas& c, const Series& s, const Axis& x, const Axis& y) {
  std::vector<std::pair<double, double>> pts;
  for (const Point& p : s.points) pts.emplace_back(x.to_px(p.x), y.to_px(p.y));
  const std::string dash = s.dash.empty() ? "" : " stroke-dasharray=\"" + s.dash + "\"";
  if (pts.size() > 1)
    c.polyline(pts, fmt::format("class=\"mark\" stroke=\"{}\" stroke-width=\"1.6\"{}", s.color, dash));
  for (std::size_t i = 0; i < s.points.size(); ++i) {
    const Point& p = s.points[i];
    if (p.flagged)
      c.cross(pts[i].first, pts[i].second, 4.5, "#222", p.tip);
    else
      c.circle(pts[i].first, pts[i].second, 3, fmt::format("class=\"mark\" fill=\"{}\"", s.color), p.tip);
  }
}

void draw_legend(Canvas& c, const std::vector<Series>& series, double x0, double y0, bool any_flag) {
  double yy = y0;
  for (const Series& s : series) {
    const std::string dash = s.dash.empty() ? "" : " stroke-dasharray=\"" + s.dash + "\"";
    c.line(x0, yy - 4, x0 + 26, yy - 4, fmt::format("stroke=\"{}\" stroke-width=\"2\"{}", s.color, dash));
    c.text(x0 + 32, yy, escape(s.name), "start", "legend");
    yy += 17;
  }
  if (any_flag) {
    c.text(x0, yy + 4, "&#215; NaN/inf in this bin", "start", "legend");
  }
}

// Which bars get a label: every `every`-th, and always the last one (the
// histograms' NaN/inf bar), dropping a regular label too close to it.
bool labelled(std::size_t i, std::size_t n, std::size_t every) {
  if (i + 1 == n) return true;
  return i % every == 0 && n - 1 - i >= std::max<std::size_t>(2, every / 2 + 1);
}

}  // namespace

std::string escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += ch;
    }
  }
  return out;
}

std::string short_number(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  if (v != 0 && (std::fabs(v) >= 1e5 || std::fabs(v) < 1e-3)) return fmt::format("{:.0e}", v);
  return fmt::format("{:.3g}", v);
}

double Axis::to_px(double v) const {
  const double c = std::clamp(v, lo, hi);
  const double f = log ? (std::log10(c) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (c - lo) / (hi - lo);
  return p0 + f * (p1 - p0);
}

std::vector<double> Axis::ticks() const {
  std::vector<double> t;
  if (log) {
    const int kmin = static_cast<int>(std::floor(std::log10(lo)));
    const int kmax = static_cast<int>(std::ceil(std::log10(hi)));
    const bool wide = kmax - kmin >= 3;
    const int step = wide ? std::max(1, (kmax - kmin + 9) / 10) : 1;
    for (int k = kmin; k <= kmax; k += step)
      for (double m : wide ? std::vector<double>{1} : std::vector<double>{1, 2, 5}) {
        const double v = m * std::pow(10.0, k);
        if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
      }
    return t;
  }
  const double step = nice_step(hi - lo);
  for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::fabs(v) < step * 1e-9 ? 0 : v);
  return t;
}

std::string render(const LineChart& ch) {
  std::vector<double> xs, ys;
  bool any_flag = false;
  for (const Series& s : ch.series)
    for (const Point& p : s.points) {
      xs.push_back(p.x);
      ys.push_back(p.y);
      any_flag = any_flag || p.flagged;
    }
  if (xs.empty()) return "";
  const double width = ch.width, legend_x = width - 200;
  const double legend_height = 17.0 * static_cast<double>(ch.series.size()) + (any_flag ? 30 : 10);
  const double height = std::max(width > 900 ? 420.0 : 300.0, legend_height + 60);
  const double left = 72, right = legend_x - 20, top = 34, bottom = height - 48;
  const Axis x = fit(xs, ch.x_log, 0, left, right);
  const Axis y = fit(ys, ch.y_log, ch.y_floor, bottom, top);
  Canvas c(width, height, ch.title);
  draw_axes(c, x, y, ch.x_label, ch.y_label, true);
  for (const Series& s : ch.series)
    if (!s.points.empty()) draw_series(c, s, x, y);
  draw_legend(c, ch.series, legend_x, top + 10, any_flag);
  return c.finish();
}

std::string render(const BarChart& ch) {
  std::vector<double> values;
  for (const Bar& b : ch.bars)
    if (b.value > 0) values.push_back(b.value);
  if (values.empty()) return "";
  const double width = ch.width, height = 230;
  const double left = 58, right = width - 12, top = 32, bottom = height - 52;
  Axis y = fit(values, ch.y_log, 0, bottom, top);
  if (ch.y_log) y.lo = 0.5;  // a bar of 1 keeps a visible height
  Axis x;
  x.p0 = left;
  x.p1 = right;
  Canvas c(width, height, ch.title);
  draw_axes(c, x, y, ch.x_label, ch.y_label, false);
  const double slot = (right - left) / static_cast<double>(ch.bars.size());
  const double label_every = std::ceil(static_cast<double>(ch.bars.size()) / 8.0);
  for (std::size_t i = 0; i < ch.bars.size(); ++i) {
    const Bar& b = ch.bars[i];
    const double x0 = left + slot * static_cast<double>(i);
    if (b.value > 0) {
      const double top_px = y.to_px(b.value);
      c.rect(x0 + slot * 0.1, top_px, slot * 0.8, bottom - top_px, fmt::format("class=\"mark\" fill=\"{}\"", b.color),
             b.tip);
    }
    if (!b.label.empty() && labelled(i, ch.bars.size(), static_cast<std::size_t>(label_every)))
      c.text(x0 + slot / 2, bottom + 14, escape(b.label), "middle", "tick");
  }
  return c.finish();
}

}  // namespace softcheck::svg
