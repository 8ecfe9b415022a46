// The plans of layer_norm, batch_norm and gemm (norm_plan.h).
#include "engine/kernels/common/norm_plan.h"

namespace graphrun::kernels {

namespace {

// A parameter of shape `s` broadcast onto the row shape `row` (right-aligned,
// extra leading dimensions of size 1); false when it does not fit.
bool param_dims(const Shape& s, const Shape& row, int64_t len, LayerNormParam& p) {
    p.present = true;
    if (numel_of(s) == len) {  // the row's shape up to leading 1s: element j is element j
        p.dense = true;
        return true;
    }
    p.dense = false;
    p.dims.assign(row.size(), StridedDim{1, 0});
    int64_t stride = 1;
    for (size_t k = 0; k < s.size(); ++k) {
        const int64_t d = s[s.size() - 1 - k];
        if (k >= row.size()) {
            if (d != 1) return false;
            continue;
        }
        const size_t r = row.size() - 1 - k;
        if (d != 1 && d != row[r]) return false;
        p.dims[r] = StridedDim{row[r], d == 1 ? 0 : stride};
        stride *= d;
    }
    for (size_t r = 0; r + s.size() < row.size(); ++r) p.dims[r] = StridedDim{row[r], 0};
    return true;
}

}  // namespace

std::optional<LayerNormPlan> layer_norm_plan(const Node& n, const InputShapes& in) {
    if (in.size() < 2 || in[0].empty()) return std::nullopt;
    const Shape& x = in[0];
    const int64_t axis = normalize_axis(int_attr(n, "axis", -1), x.size());
    if (axis < 0) return std::nullopt;
    LayerNormPlan p;
    const Shape row(x.begin() + axis, x.end());
    p.rows = numel_of(Shape(x.begin(), x.begin() + axis));
    p.len = numel_of(row);
    if (!param_dims(in[1], row, p.len, p.scale)) return std::nullopt;
    if (in.size() > 2 && !param_dims(in[2], row, p.len, p.bias)) return std::nullopt;
    return p;
}

BatchNormPlan batch_norm_plan(const Shape& x) {
    BatchNormPlan p;
    if (x.empty()) return p;
    p.outer = x[0];
    if (x.size() >= 2) {
        p.channels = x[1];
        p.inner = numel_of(Shape(x.begin() + 2, x.end()));
    }
    return p;
}

std::optional<GemmPlan> gemm_plan(const Node& n, const InputShapes& in) {
    if (in.size() < 2 || in[0].size() != 2 || in[1].size() != 2) return std::nullopt;
    GemmPlan p;
    p.ta = bool_attr(n, "transpose_a", false);
    p.tb = bool_attr(n, "transpose_b", false);
    const Shape& a = in[0];
    const Shape& b = in[1];
    p.m = p.ta ? a[1] : a[0];
    p.k = p.ta ? a[0] : a[1];
    p.n = p.tb ? b[0] : b[1];
    if ((p.tb ? b[1] : b[0]) != p.k) return std::nullopt;
    p.lda = a[1];
    p.ldb = b[1];
    if (n.dtype == DType::F32) {
        p.alpha = float_attr_or<float>(n, "alpha", 1.0);
        p.beta = float_attr_or<float>(n, "beta", 1.0);
    } else {
        p.alpha = float_attr_or<double>(n, "alpha", 1.0);
        p.beta = float_attr_or<double>(n, "beta", 1.0);
    }
    p.has_c = in.size() > 2 && p.beta != 0;
    if (in.size() > 2) {
        const Shape& c = in[2];
        if (c.size() > 2) return std::nullopt;
        const int64_t cm = c.size() == 2 ? c[0] : 1, cn = c.empty() ? 1 : c.back();
        if ((cm != 1 && cm != p.m) || (cn != 1 && cn != p.n)) return std::nullopt;
        p.c_sn = cn == 1 ? 0 : 1;
        p.c_sm = cm == 1 ? 0 : cn;
    }
    return p;
}

}  // namespace graphrun::kernels
