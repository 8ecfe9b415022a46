// The SVG line chart: nice ticks (1, 2, 5 times a power of ten), bytes in
// binary units on the y axis, text escaped for XML.
#include "cli/svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "engine/api/output_text.h"

namespace graphrun::cli {

namespace {

// SVG is XML in UTF-8: a byte of a name that is not UTF-8 is written as
// \xHH, as in JSON (output_text.h), before XML's own escapes.
std::string xml_escape(const std::string& raw) {
    const std::string s = json_safe_text(raw);
    std::string out;
    for (char c : s) {
        switch (c) {
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '&': out += "&amp;"; break;
            case '"': out += "&quot;"; break;
            default:
                if (static_cast<unsigned char>(c) >= 0x20 || c == '\t') out += c;  // no control characters in XML
        }
    }
    return out;
}

std::string num(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.1f", v);
    return b;
}

// A tick step near span/target: 1, 2 or 5 times a power of ten.
double nice_step(double span, int target) {
    if (!(span > 0)) return 1;
    const double raw = span / target;
    const double p = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * p) return m * p;
    return 10 * p;
}

// A tick value without trailing zeros: 1.5, 20, 0.25.
std::string tick_text(double v) {
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v);
    return b;
}

}  // namespace

std::string line_chart_svg(const LineChart& c) {
    const double W = 900, H = 520, left = 90, right = 200, top = 50, bottom = 70;
    const double pw = W - left - right, ph = H - top - bottom;
    double xmax = 1, ymax = 1;
    for (const ChartSeries& s : c.series)
        for (const auto& [x, y] : s.points) xmax = std::max(xmax, x), ymax = std::max(ymax, y);
    // The y unit: the largest binary unit the top of the axis reaches.
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && ymax >= std::pow(1024.0, u + 1)) ++u;
    const double unit = std::pow(1024.0, u);
    const double ystep = nice_step(ymax / unit, 5) * unit;
    const double ytop = std::ceil(ymax / ystep) * ystep;
    const double xstep = nice_step(xmax, 6);
    const double xtop = std::ceil(xmax / xstep) * xstep;
    auto px = [&](double x) { return left + x / xtop * pw; };
    auto py = [&](double y) { return top + ph - y / ytop * ph; };

    std::string o;
    o += "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
    o += "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(W) + "\" height=\"" + num(H) + "\" viewBox=\"0 0 " +
         num(W) + " " + num(H) + "\" font-family=\"sans-serif\" font-size=\"12\">\n";
    o += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
    o += "<text x=\"" + num(left + pw / 2) + "\" y=\"28\" text-anchor=\"middle\" font-size=\"15\">" +
         xml_escape(c.title) + "</text>\n";
    // Grid and ticks.
    o += "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
    for (double y = 0; y <= ytop + ystep / 2; y += ystep)
        o += "<line x1=\"" + num(left) + "\" y1=\"" + num(py(y)) + "\" x2=\"" + num(left + pw) + "\" y2=\"" +
             num(py(y)) + "\"/>\n";
    for (double x = 0; x <= xtop + xstep / 2; x += xstep)
        o += "<line x1=\"" + num(px(x)) + "\" y1=\"" + num(top) + "\" x2=\"" + num(px(x)) + "\" y2=\"" +
             num(top + ph) + "\"/>\n";
    o += "</g>\n<g text-anchor=\"end\">\n";
    for (double y = 0; y <= ytop + ystep / 2; y += ystep)
        o += "<text x=\"" + num(left - 6) + "\" y=\"" + num(py(y) + 4) + "\">" + tick_text(y / unit) + " " +
             units[u] + "</text>\n";
    o += "</g>\n<g text-anchor=\"middle\">\n";
    for (double x = 0; x <= xtop + xstep / 2; x += xstep)
        o += "<text x=\"" + num(px(x)) + "\" y=\"" + num(top + ph + 18) + "\">" + tick_text(x) + "</text>\n";
    o += "</g>\n";
    // Axes and their labels.
    o += "<g stroke=\"black\" stroke-width=\"1.5\"><line x1=\"" + num(left) + "\" y1=\"" + num(top + ph) + "\" x2=\"" +
         num(left + pw) + "\" y2=\"" + num(top + ph) + "\"/><line x1=\"" + num(left) + "\" y1=\"" + num(top) +
         "\" x2=\"" + num(left) + "\" y2=\"" + num(top + ph) + "\"/></g>\n";
    o += "<text x=\"" + num(left + pw / 2) + "\" y=\"" + num(H - 22) + "\" text-anchor=\"middle\">" +
         xml_escape(c.x_label) + "</text>\n";
    o += "<text transform=\"translate(22," + num(top + ph / 2) + ") rotate(-90)\" text-anchor=\"middle\">" +
         xml_escape(c.y_label) + " (" + units[u] + ")</text>\n";
    // The series, then the legend.
    for (const ChartSeries& s : c.series) {
        if (s.points.empty()) continue;
        o += "<polyline fill=\"none\" stroke=\"" + xml_escape(s.color) + "\" stroke-width=\"2\"" +
             (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + " points=\"";
        for (const auto& [x, y] : s.points) o += num(px(x)) + "," + num(py(y)) + " ";
        o += "\"><title>" + xml_escape(s.name) + "</title></polyline>\n";
    }
    double ly = top + 10;
    for (const ChartSeries& s : c.series) {
        const double lx = left + pw + 20;
        o += "<line x1=\"" + num(lx) + "\" y1=\"" + num(ly) + "\" x2=\"" + num(lx + 28) + "\" y2=\"" + num(ly) +
             "\" stroke=\"" + xml_escape(s.color) + "\" stroke-width=\"3\"" +
             (s.dashed ? " stroke-dasharray=\"6 4\"" : "") + "/>\n";
        o += "<text x=\"" + num(lx + 36) + "\" y=\"" + num(ly + 4) + "\">" + xml_escape(s.name) + "</text>\n";
        ly += 22;
    }
    o += "</svg>\n";
    return o;
}

}  // namespace graphrun::cli
