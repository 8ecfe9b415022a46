// A line chart as a standalone SVG document: axes with ticks and units, one
// polyline per series, a legend. Used by `graphrun compare --plot`.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace graphrun::cli {

struct ChartSeries {
    std::string name;   // in the legend
    std::string color;  // an SVG colour ("#d62728")
    bool dashed = false;
    std::vector<std::pair<double, double>> points;  // (x, y), x increasing
};

struct LineChart {
    std::string title;
    std::string x_label;  // "executed nodes"
    std::string y_label;  // "in_use"; the y axis is bytes, labelled in B, KiB, MiB or GiB
    std::vector<ChartSeries> series;
};

std::string line_chart_svg(const LineChart& c);

}  // namespace graphrun::cli
