// The shape ops' shape arithmetic (layout.h).
#include "engine/ir/layout.h"

#include <algorithm>

#include "engine/base/limits.h"

namespace graphrun {

namespace {

std::string list_text(const std::vector<int64_t>& v) {
    std::string s = "[";
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
    return s + "]";
}

std::string shape_text(const Shape& s) { return list_text(s); }

bool fail(LayoutError& err, const char* attr, std::string msg) {
    err.attr = attr;
    err.message = std::move(msg);
    return false;
}

// axis in [-rank, rank) made non-negative, or -1.
int64_t axis_in(int64_t axis, int64_t rank) {
    if (axis < -rank || axis >= rank) return -1;
    return axis < 0 ? axis + rank : axis;
}

std::string rank_words(int64_t r) { return "rank " + std::to_string(r); }

// Distinct axes in range, made non-negative; reports through err under attr.
bool normalize_axes(const std::vector<int64_t>& axes, int64_t rank, const char* attr, std::vector<int64_t>& out,
                    LayoutError& err, const std::string& of) {
    out.clear();
    std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
    for (int64_t a : axes) {
        const int64_t k = axis_in(a, rank);
        if (k < 0)
            return fail(err, attr, std::string(attr) + " " + list_text(axes) + ": axis " + std::to_string(a) +
                                       " is out of range for " + rank_words(rank) + of);
        if (seen[static_cast<size_t>(k)])
            return fail(err, attr, std::string(attr) + " " + list_text(axes) + ": axis " + std::to_string(k) +
                                       " appears twice");
        seen[static_cast<size_t>(k)] = true;
        out.push_back(k);
    }
    return true;
}

}  // namespace

bool slice_axes(const Shape& in, const std::vector<int64_t>& starts, const std::vector<int64_t>& ends,
                const std::optional<std::vector<int64_t>>& axes, const std::optional<std::vector<int64_t>>& steps,
                std::vector<AxisSlice>& out, LayoutError& err) {
    const auto r = static_cast<int64_t>(in.size());
    const size_t n = starts.size();
    if (ends.size() != n)
        return fail(err, "ends", "ends " + list_text(ends) + " has " + std::to_string(ends.size()) +
                                     " entries, starts " + list_text(starts) + " has " + std::to_string(n));
    if (axes && axes->size() != n)
        return fail(err, "axes", "axes " + list_text(*axes) + " has " + std::to_string(axes->size()) +
                                     " entries, starts " + list_text(starts) + " has " + std::to_string(n));
    if (steps && steps->size() != n)
        return fail(err, "steps", "steps " + list_text(*steps) + " has " + std::to_string(steps->size()) +
                                      " entries, starts " + list_text(starts) + " has " + std::to_string(n));
    std::vector<int64_t> ax;
    if (axes) {
        if (!normalize_axes(*axes, r, "axes", ax, err, " (the input is " + shape_text(in) + ")")) return false;
    } else {
        if (static_cast<int64_t>(n) > r)
            return fail(err, "starts", "starts " + list_text(starts) + " has " + std::to_string(n) +
                                           " entries, more than the input's " + rank_words(r) + " " + shape_text(in));
        for (size_t k = 0; k < n; ++k) ax.push_back(static_cast<int64_t>(k));
    }
    out.assign(in.size(), AxisSlice{});
    for (size_t k = 0; k < in.size(); ++k) out[k] = AxisSlice{0, 1, in[k]};
    for (size_t k = 0; k < n; ++k) {
        const int64_t step = steps ? (*steps)[k] : 1;
        if (step == 0) return fail(err, "steps", "steps " + list_text(*steps) + ": a step of 0 is not allowed");
        const int64_t d = in[static_cast<size_t>(ax[k])];
        int64_t s = starts[k], e = ends[k];
        if (s < 0) s += d;
        if (e < 0) e += d;
        int64_t count = 0;
        if (step > 0) {
            s = std::clamp<int64_t>(s, 0, d);
            e = std::clamp<int64_t>(e, 0, d);
            if (e > s) count = (e - s - 1) / step + 1;
        } else if (d > 0) {
            s = std::clamp<int64_t>(s, 0, d - 1);
            e = std::clamp<int64_t>(e, -1, d - 1);
            if (s > e) count = (s - e - 1) / (step == INT64_MIN ? d + 1 : -step) + 1;
        }
        // one element or none: the step never moves (and so never overflows an offset)
        out[static_cast<size_t>(ax[k])] = AxisSlice{count > 0 ? s : 0, count > 1 ? step : 1, count};
    }
    return true;
}

bool split_axes(const Shape& in, int64_t axis, const std::optional<std::vector<int64_t>>& sizes,
                std::optional<int64_t> parts, int64_t index, std::vector<AxisSlice>& out, LayoutError& err) {
    const auto r = static_cast<int64_t>(in.size());
    const int64_t k = axis_in(axis, r);
    if (k < 0)
        return fail(err, "axis", "axis " + std::to_string(axis) + " is out of range for " + rank_words(r) +
                                     " (the input is " + shape_text(in) + ")");
    const int64_t d = in[static_cast<size_t>(k)];
    if (sizes && parts) return fail(err, "parts", "give sizes or parts, not both");
    std::vector<int64_t> len;
    if (sizes) {
        int64_t sum = 0;
        for (int64_t s : *sizes) {
            if (s < 0) return fail(err, "sizes", "sizes " + list_text(*sizes) + " has a negative entry " + std::to_string(s));
            if (__builtin_add_overflow(sum, s, &sum)) sum = INT64_MAX;
        }
        if (sum != d)
            return fail(err, "sizes", "sizes " + list_text(*sizes) + " add up to " + std::to_string(sum) +
                                          ", but axis " + std::to_string(k) + " of " + shape_text(in) + " has " +
                                          std::to_string(d));
        len = *sizes;
    } else if (parts) {
        if (*parts <= 0) return fail(err, "parts", "parts=" + std::to_string(*parts) + " must be at least 1");
        if (d % *parts != 0)
            return fail(err, "parts", "axis " + std::to_string(k) + " of " + shape_text(in) + " (" + std::to_string(d) +
                                          ") does not split into " + std::to_string(*parts) +
                                          " equal parts; give sizes=[...] instead");
        len.assign(static_cast<size_t>(*parts), d / *parts);
    } else {
        return fail(err, nullptr, "split needs sizes=[...] or parts=N");
    }
    if (index < 0 || index >= static_cast<int64_t>(len.size()))
        return fail(err, "index", "index " + std::to_string(index) + " is out of range for " +
                                      std::to_string(len.size()) + " parts (0.." + std::to_string(len.size() - 1) + ")");
    int64_t start = 0;
    for (int64_t i = 0; i < index; ++i) start += len[static_cast<size_t>(i)];
    out.assign(in.size(), AxisSlice{});
    for (size_t j = 0; j < in.size(); ++j) out[j] = AxisSlice{0, 1, in[j]};
    out[static_cast<size_t>(k)] = AxisSlice{start, 1, len[static_cast<size_t>(index)]};
    return true;
}

bool expand_shape(const Shape& in, const std::vector<int64_t>& target, Shape& out, LayoutError& err) {
    const size_t r = std::max(in.size(), target.size());
    if (r > static_cast<size_t>(kMaxRank))
        return fail(err, "shape", "shape " + list_text(target) + " has " + std::to_string(target.size()) +
                                      " dimensions; at most " + std::to_string(kMaxRank) + " are supported");
    out.assign(r, 1);
    for (size_t k = 0; k < r; ++k) {
        const int64_t a = k + in.size() >= r ? in[k + in.size() - r] : 1;
        const int64_t b = k + target.size() >= r ? target[k + target.size() - r] : 1;
        if (b < 0) return fail(err, "shape", "shape " + list_text(target) + " has a negative entry " + std::to_string(b));
        if (a != b && a != 1 && b != 1)
            return fail(err, "shape", "cannot expand " + shape_text(in) + " to " + list_text(target) + ": dimension " +
                                          std::to_string(a) + " vs " + std::to_string(b) +
                                          " (a dimension broadcasts only from 1)");
        out[k] = a == 1 ? b : a;
    }
    return true;
}

bool tile_shape(const Shape& in, const std::vector<int64_t>& repeats, Shape& out, LayoutError& err) {
    if (repeats.size() != in.size())
        return fail(err, "repeats", "repeats " + list_text(repeats) + " has " + std::to_string(repeats.size()) +
                                        " entries, but the input " + shape_text(in) + " has " +
                                        rank_words(static_cast<int64_t>(in.size())));
    out = in;
    for (size_t k = 0; k < in.size(); ++k) {
        if (repeats[k] < 0)
            return fail(err, "repeats", "repeats " + list_text(repeats) + " has a negative entry " +
                                            std::to_string(repeats[k]));
        if (__builtin_mul_overflow(in[k], repeats[k], &out[k]) || out[k] > kMaxElements)
            return fail(err, "repeats", "tiling " + shape_text(in) + " by " + list_text(repeats) + " gives too many elements");
    }
    return true;
}

std::optional<PadMode> pad_mode(const std::string& name) {
    if (name == "constant") return PadMode::Constant;
    if (name == "reflect") return PadMode::Reflect;
    if (name == "edge") return PadMode::Edge;
    return std::nullopt;
}

bool pad_shape(const Shape& in, const std::vector<int64_t>& pads, const std::optional<std::vector<int64_t>>& axes,
               PadMode mode, std::vector<int64_t>& begin, Shape& out, LayoutError& err) {
    const auto r = static_cast<int64_t>(in.size());
    std::vector<int64_t> ax;
    if (axes) {
        if (!normalize_axes(*axes, r, "axes", ax, err, " (the input is " + shape_text(in) + ")")) return false;
    } else {
        for (int64_t k = 0; k < r; ++k) ax.push_back(k);
    }
    if (pads.size() != 2 * ax.size())
        return fail(err, "pads", "pads " + list_text(pads) + " has " + std::to_string(pads.size()) + " entries; " +
                                     std::to_string(2 * ax.size()) + " expected ([begin..., end...] for " +
                                     std::to_string(ax.size()) + " axes of " + shape_text(in) + ")");
    begin.assign(in.size(), 0);
    out = in;
    for (size_t j = 0; j < ax.size(); ++j) {
        const auto k = static_cast<size_t>(ax[j]);
        const int64_t b = pads[j], e = pads[j + ax.size()];
        int64_t d = 0;
        if (__builtin_add_overflow(in[k], b, &d) || __builtin_add_overflow(d, e, &d) || d > kMaxElements)
            return fail(err, "pads", "pads " + list_text(pads) + " make axis " + std::to_string(k) + " too long");
        if (d < 0)
            return fail(err, "pads", "pads " + list_text(pads) + " crop more than axis " + std::to_string(k) + " of " +
                                         shape_text(in) + " holds (" + std::to_string(in[k]) + ")");
        if (mode != PadMode::Constant && in[k] == 0 && d > 0)
            return fail(err, "mode", std::string(mode == PadMode::Edge ? "edge" : "reflect") + " padding of axis " +
                                         std::to_string(k) + " of " + shape_text(in) +
                                         ", which is empty: there is no element to repeat");
        begin[k] = b;
        out[k] = d;
    }
    return true;
}

bool squeeze_shape(const Shape& in, const std::optional<std::vector<int64_t>>& axes, Shape& out, LayoutError& err) {
    out.clear();
    if (!axes) {
        for (int64_t d : in)
            if (d != 1) out.push_back(d);
        return true;
    }
    std::vector<int64_t> ax;
    if (!normalize_axes(*axes, static_cast<int64_t>(in.size()), "axes", ax, err,
                        " (the input is " + shape_text(in) + ")"))
        return false;
    std::vector<bool> drop(in.size(), false);
    for (int64_t k : ax) {
        if (in[static_cast<size_t>(k)] != 1)
            return fail(err, "axes", "axes " + list_text(*axes) + ": axis " + std::to_string(k) + " of " +
                                         shape_text(in) + " has length " + std::to_string(in[static_cast<size_t>(k)]) +
                                         ", not 1");
        drop[static_cast<size_t>(k)] = true;
    }
    for (size_t k = 0; k < in.size(); ++k)
        if (!drop[k]) out.push_back(in[k]);
    return true;
}

bool unsqueeze_shape(const Shape& in, const std::vector<int64_t>& axes, Shape& out, LayoutError& err) {
    const auto r = static_cast<int64_t>(in.size() + axes.size());
    if (r > kMaxRank)
        return fail(err, "axes", "the result would have " + std::to_string(r) + " dimensions; at most " +
                                     std::to_string(kMaxRank) + " are supported");
    std::vector<int64_t> ax;
    if (!normalize_axes(axes, r, "axes", ax, err, " (the result's rank)")) return false;
    std::vector<bool> inserted(static_cast<size_t>(r), false);
    for (int64_t k : ax) inserted[static_cast<size_t>(k)] = true;
    out.clear();
    size_t next = 0;
    for (int64_t k = 0; k < r; ++k) out.push_back(inserted[static_cast<size_t>(k)] ? 1 : in[next++]);
    return true;
}

bool flatten_shape(const Shape& in, int64_t axis, Shape& out, LayoutError& err) {
    const auto r = static_cast<int64_t>(in.size());
    if (axis < -r || axis > r)
        return fail(err, "axis", "axis " + std::to_string(axis) + " is out of range for " + rank_words(r) + " " +
                                     shape_text(in) + " (flatten takes -" + std::to_string(r) + ".." + std::to_string(r) +
                                     ")");
    if (axis < 0) axis += r;
    int64_t outer = 1, inner = 1;
    for (int64_t k = 0; k < r; ++k) (k < axis ? outer : inner) *= in[static_cast<size_t>(k)];
    out = Shape{outer, inner};
    return true;
}

bool gather_shape(const Shape& x, const Shape& indices, int64_t axis, Shape& out, LayoutError& err) {
    const auto r = static_cast<int64_t>(x.size());
    if (r == 0) return fail(err, nullptr, "gather needs an input with at least 1 dimension, not a scalar");
    const int64_t k = axis_in(axis, r);
    if (k < 0)
        return fail(err, "axis", "axis " + std::to_string(axis) + " is out of range for " + rank_words(r) + " " +
                                     shape_text(x));
    if (x.size() - 1 + indices.size() > static_cast<size_t>(kMaxRank))
        return fail(err, nullptr, "the result would have more than " + std::to_string(kMaxRank) + " dimensions");
    out.assign(x.begin(), x.begin() + k);
    out.insert(out.end(), indices.begin(), indices.end());
    out.insert(out.end(), x.begin() + k + 1, x.end());
    return true;
}

}  // namespace graphrun
