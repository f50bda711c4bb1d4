#include "tapestry/search/front_plot.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "tapestry/support/text.h"

namespace tapestry::search {

namespace {

constexpr double kPanelW = 380;
constexpr double kPanelH = 300;
constexpr double kLeft = 70;  // room for tick labels and the y title
constexpr double kRight = 20;
constexpr double kTop = 20;
constexpr double kBottom = 50;
constexpr double kTitleH = 36;

std::string escape(std::string_view text) {
  return support::xml_escape(text);
}

// An axis: the objective's values shown in a readable unit.
struct Scale {
  std::string title;  // "time (ms)"
  double factor = 1;  // value · factor = the number shown
};

Scale scale_for(Objective o, double largest) {
  switch (o) {
    case Objective::kTime:
      if (largest < 1e-3) return {"time (µs)", 1e6};
      if (largest < 1) return {"time (ms)", 1e3};
      return {"time (s)", 1};
    case Objective::kMemory:
      if (largest < 1024.0 * 1024) return {"peak memory per device (KiB)", 1.0 / 1024};
      if (largest < 1024.0 * 1024 * 1024) return {"peak memory per device (MiB)", 1.0 / (1 << 20)};
      return {"peak memory per device (GiB)", 1.0 / (1 << 30)};
    case Objective::kDevices:
      return {"devices used", 1};
    case Objective::kEnergy:
      if (largest < 1) return {"energy (mJ)", 1e3};
      return {"energy (J)", 1};
  }
  return {"?", 1};
}

// Round tick positions covering [lo, hi] (about five).
std::vector<double> ticks(double lo, double hi) {
  const double span = hi - lo;
  const double raw = span / 5;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * magnitude >= raw) {
      step = m * magnitude;
      break;
    }
  }
  std::vector<double> out;
  for (double t = std::ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) {
    out.push_back(std::abs(t) < step * 1e-9 ? 0 : t);
  }
  return out;
}

std::string tick_text(double v) {
  std::string s = fmt::format("{:.4g}", v);
  return s;
}

struct Range1 {
  double lo, hi;
};

// The shown range of one axis: the values padded by 8% (or ±1 when they are all equal).
Range1 range_of(const std::vector<double>& values) {
  double lo = *std::min_element(values.begin(), values.end());
  double hi = *std::max_element(values.begin(), values.end());
  if (hi - lo < 1e-12 * std::max(1.0, std::abs(hi))) {
    const double pad = std::max(std::abs(hi) * 0.1, 1.0);
    return {lo - pad, hi + pad};
  }
  const double pad = (hi - lo) * 0.08;
  return {lo - pad, hi + pad};
}

// A label's box (x0, y0 top left; x1, y1 bottom right) in SVG units.
struct Box {
  double x0, y0, x1, y1;
  [[nodiscard]] bool overlaps(const Box& o) const {
    return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1;
  }
};

struct Label {
  Box box;
  bool leader = false;  // drawn away from its point: a line joins them
  double anchor_x = 0, anchor_y = 0;
};

// The box a name of 10 px text takes (DejaVu Sans: about 6.2 px a character, 12 px a line).
constexpr double kCharW = 6.2;
constexpr double kLineH = 12;

// Where a point's name goes: the first of the spots around the point — right and up, then the
// other seven directions, then the same further out (with a leader line) — whose box stays in
// the panel and overlaps no box taken; when none is free, the one overlapping the fewest.
Label place_label(double x, double y, std::string_view name, const Box& inside,
                  const std::vector<Box>& taken) {
  const double bw = kCharW * static_cast<double>(name.size()) + 2;
  const double bh = kLineH;
  // Directions: (dx, dy) of the box's near corner from the point, as multiples of the radius.
  constexpr std::array<std::pair<double, double>, 8> kDirections = {
      {{1, -1}, {1, 1}, {-1, -1}, {-1, 1}, {1, 0}, {-1, 0}, {0, -1}, {0, 1}}};
  Label best{};
  std::size_t best_overlaps = SIZE_MAX;
  for (double r : {6.0, 16.0, 28.0, 42.0}) {
    for (const auto& [dx, dy] : kDirections) {
      // The box's corner nearest the point sits at (x + dx·r, y + dy·r); a box centred on an
      // axis direction is centred on that axis.
      const double cx = x + dx * r;
      const double cy = y + dy * r;
      const double bx0 = dx > 0 ? cx : dx < 0 ? cx - bw : cx - bw / 2;
      const double by0 = dy > 0 ? cy : dy < 0 ? cy - bh : cy - bh / 2;
      const Box box{bx0, by0, bx0 + bw, by0 + bh};
      if (box.x0 < inside.x0 || box.x1 > inside.x1 || box.y0 < inside.y0 || box.y1 > inside.y1) {
        continue;
      }
      std::size_t overlaps = 0;
      for (const Box& t : taken) overlaps += box.overlaps(t) ? 1 : 0;
      if (overlaps < best_overlaps) {
        best_overlaps = overlaps;
        best = {box, r > 6.0, std::clamp(x, box.x0, box.x1), std::clamp(y, box.y0, box.y1)};
      }
      if (overlaps == 0) return best;
    }
  }
  if (best_overlaps == SIZE_MAX) best = {{x + 6, y - 6 - bh, x + 6 + bw, y - 6}, false, x, y};
  return best;
}

void panel(std::string& svg, double x0, double y0, const std::vector<double>& xs,
           const std::vector<double>& ys, const std::string& x_title, const std::string& y_title,
           const std::vector<std::string>& names) {
  const double w = kPanelW - kLeft - kRight;
  const double h = kPanelH - kTop - kBottom;
  const Range1 rx = range_of(xs);
  const Range1 ry = range_of(ys);
  const auto px = [&](double v) { return x0 + kLeft + (v - rx.lo) / (rx.hi - rx.lo) * w; };
  const auto py = [&](double v) { return y0 + kTop + h - (v - ry.lo) / (ry.hi - ry.lo) * h; };
  svg += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"white\" "
      "stroke=\"#333\"/>\n",
      x0 + kLeft, y0 + kTop, w, h);
  for (double t : ticks(rx.lo, rx.hi)) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" text-anchor=\"middle\">{4}</text>\n",
        px(t), y0 + kTop, y0 + kTop + h, y0 + kTop + h + 16, tick_text(t));
  }
  for (double t : ticks(ry.lo, ry.hi)) {
    svg += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{2:.1f}\" x2=\"{1:.1f}\" y2=\"{2:.1f}\" stroke=\"#ddd\"/>\n"
        "<text x=\"{3:.1f}\" y=\"{4:.1f}\" text-anchor=\"end\">{5}</text>\n",
        x0 + kLeft, x0 + kLeft + w, py(t), x0 + kLeft - 6, py(t) + 4, tick_text(t));
  }
  svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">{}</text>\n",
                     x0 + kLeft + w / 2, y0 + kTop + h + 38, escape(x_title));
  svg += fmt::format(
      "<text x=\"{0:.1f}\" y=\"{1:.1f}\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 {0:.1f} {1:.1f})\">{2}</text>\n",
      x0 + 16, y0 + kTop + h / 2, escape(y_title));
  // The members this projection keeps undominated, joined by a step line.
  std::vector<std::size_t> order(xs.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return xs[a] < xs[b] || (xs[a] == xs[b] && ys[a] < ys[b]);
  });
  std::string path;
  double lowest = INFINITY;
  for (std::size_t i : order) {
    if (ys[i] >= lowest) continue;
    path += fmt::format("{}{:.1f},{:.1f} ", path.empty() ? "M" : "L", px(xs[i]),
                        path.empty() ? py(ys[i]) : py(lowest));
    path += fmt::format("L{:.1f},{:.1f} ", px(xs[i]), py(ys[i]));
    lowest = ys[i];
  }
  svg +=
      fmt::format("<path d=\"{}\" fill=\"none\" stroke=\"#4a7ebb\" stroke-width=\"1.2\"/>\n", path);
  // The points, then their names placed where they overlap no other name and no point.
  std::vector<Box> taken;
  for (std::size_t i = 0; i < xs.size(); ++i) {
    svg += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"#d9541e\"><title>{}</title>"
        "</circle>\n",
        px(xs[i]), py(ys[i]), escape(names[i]));
    taken.push_back({px(xs[i]) - 4, py(ys[i]) - 4, px(xs[i]) + 4, py(ys[i]) + 4});
  }
  const Box inside{x0 + kLeft, y0 + kTop, x0 + kLeft + w, y0 + kTop + h};
  for (std::size_t i = 0; i < xs.size(); ++i) {
    const Label at = place_label(px(xs[i]), py(ys[i]), names[i], inside, taken);
    taken.push_back(at.box);
    if (at.leader) {
      svg += fmt::format(
          "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#999\" "
          "stroke-width=\"0.7\" class=\"leader\"/>\n",
          px(xs[i]), py(ys[i]), at.anchor_x, at.anchor_y);
    }
    svg += fmt::format("<text x=\"{:.1f}\" y=\"{:.1f}\" class=\"name\">{}</text>\n", at.box.x0,
                       at.box.y1 - 2, escape(names[i]));
  }
}

}  // namespace

std::string front_svg(const ParetoArchive& archive, std::string_view title) {
  const auto& objectives = archive.objectives();
  const auto& front = archive.front();
  std::vector<std::pair<std::size_t, std::size_t>> pairs;
  for (std::size_t i = 0; i < objectives.size(); ++i) {
    for (std::size_t j = i + 1; j < objectives.size(); ++j) pairs.emplace_back(i, j);
  }
  const std::size_t panels = std::max<std::size_t>(pairs.size(), 1);
  const std::size_t columns = std::min<std::size_t>(panels, 3);
  const std::size_t rows = (panels + columns - 1) / columns;
  // Wide enough for the title; the panels centred.
  const double panels_w = kPanelW * static_cast<double>(columns);
  const double width = std::max(panels_w, 7.0 * static_cast<double>(title.size()) + 200);
  const double left = (width - panels_w) / 2;
  const double height = kTitleH + kPanelH * static_cast<double>(rows);
  std::string svg = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0:.0f}\" height=\"{1:.0f}\" "
      "viewBox=\"0 0 {0:.0f} {1:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\" "
      "font-size=\"11\">\n<style>.name {{ font-size: 10px; fill: #444; }}</style>\n"
      "<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n"
      "<text x=\"{2:.1f}\" y=\"24\" text-anchor=\"middle\" font-size=\"14\">{3}</text>\n",
      width, height, width / 2,
      escape(fmt::format("Pareto front: {} ({} plan{})", title, front.size(),
                         front.size() == 1 ? "" : "s")));
  if (front.empty()) {
    svg += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" text-anchor=\"middle\">no feasible plan"
        "</text>\n</svg>\n",
        width / 2, height / 2);
    return svg;
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < front.size(); ++i) names.push_back(fmt::format("p{}", i));
  std::vector<Scale> scales;
  for (std::size_t k = 0; k < objectives.size(); ++k) {
    double largest = 0;
    for (const ArchiveEntry& e : front) largest = std::max(largest, e.score[k]);
    scales.push_back(scale_for(objectives[k], largest));
  }
  const auto values = [&](std::size_t k) {
    std::vector<double> v;
    for (const ArchiveEntry& e : front) v.push_back(e.score[k] * scales[k].factor);
    return v;
  };
  if (pairs.empty()) {
    std::vector<double> index;
    for (std::size_t i = 0; i < front.size(); ++i) index.push_back(static_cast<double>(i));
    panel(svg, left, kTitleH, index, values(0), "plan (front order)", scales[0].title, names);
  }
  for (std::size_t p = 0; p < pairs.size(); ++p) {
    const double x0 = left + kPanelW * static_cast<double>(p % columns);
    const double y0 = kTitleH + kPanelH * static_cast<double>(p / columns);
    panel(svg, x0, y0, values(pairs[p].first), values(pairs[p].second),
          scales[pairs[p].first].title, scales[pairs[p].second].title, names);
  }
  svg += "</svg>\n";
  return svg;
}

}  // namespace tapestry::search
