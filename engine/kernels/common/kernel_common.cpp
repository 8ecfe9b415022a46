// Attribute reading and buffer checks shared by the CPU kernel families.
#include "engine/kernels/common/kernel_common.h"

#include <algorithm>
#include <limits>

namespace graphrun::kernels {

std::optional<ScalarAttr> scalar_attr(const Node& n, std::string_view name) {
    const NamedAttr* a = n.find_attr(name);
    if (!a) return std::nullopt;
    const Attr& v = a->value;
    ScalarAttr s;
    switch (v.kind) {
        case Attr::Kind::Bool:
            s.is_bool = true;
            s.b = v.b;
            s.f = v.b ? 1 : 0;
            return s;
        case Attr::Kind::Number:
            s.is_int = v.is_int;
            s.i = v.i;
            s.f = v.is_int ? static_cast<double>(v.i) : v.f;
            return s;
        case Attr::Kind::String:
        case Attr::Kind::Ident:
            // JSON spells the non-finite numbers as strings.
            if (v.s == "nan")
                s.f = std::numeric_limits<double>::quiet_NaN();
            else if (v.s == "inf")
                s.f = std::numeric_limits<double>::infinity();
            else if (v.s == "-inf")
                s.f = -std::numeric_limits<double>::infinity();
            else
                return std::nullopt;
            return s;
        case Attr::Kind::List:
            // A one-element list is not a scalar; validation refuses it.
            break;
    }
    return std::nullopt;
}

int64_t int_attr(const Node& n, std::string_view name, int64_t def) {
    const NamedAttr* a = n.find_attr(name);
    if (!a || a->value.kind != Attr::Kind::Number) return def;
    return a->value.is_int ? a->value.i : static_cast<int64_t>(a->value.f);
}

bool bool_attr(const Node& n, std::string_view name, bool def) {
    const NamedAttr* a = n.find_attr(name);
    if (!a || a->value.kind != Attr::Kind::Bool) return def;
    return a->value.b;
}

std::optional<std::vector<int64_t>> ints_attr(const Node& n, std::string_view name) {
    const NamedAttr* a = n.find_attr(name);
    if (!a) return std::nullopt;
    auto as_int = [](const Attr& e) { return e.is_int ? e.i : static_cast<int64_t>(e.f); };
    if (a->value.kind == Attr::Kind::Number) return std::vector<int64_t>{as_int(a->value)};
    std::vector<int64_t> v;
    v.reserve(a->value.list.size());
    for (const Attr& e : a->value.list) v.push_back(as_int(e));
    return v;
}

std::optional<DType> dtype_attr(const Node& n, std::string_view name) {
    const NamedAttr* a = n.find_attr(name);
    if (!a || !a->value.is_word()) return std::nullopt;
    return parse_dtype(a->value.s);
}

std::vector<BroadcastDim> broadcast_dims(const Shape& a, const Shape& b, const Shape& out) {
    using Dim = BroadcastDim;
    std::vector<Dim> dims;
    int64_t stride_a = 1, stride_b = 1;
    const size_t r = out.size();
    for (size_t k = 0; k < r; ++k) {
        const int64_t ad = k < a.size() ? a[a.size() - 1 - k] : 1;
        const int64_t bd = k < b.size() ? b[b.size() - 1 - k] : 1;
        const int64_t od = out[r - 1 - k];
        const int64_t sa = ad == 1 ? 0 : stride_a, sb = bd == 1 ? 0 : stride_b;
        stride_a *= ad;
        stride_b *= bd;
        if (od == 1) continue;
        if (!dims.empty()) {
            Dim& last = dims.back();
            if (sa == last.sa * last.size && sb == last.sb * last.size) {
                last.size *= od;
                continue;
            }
        }
        dims.push_back({od, sa, sb});
    }
    return dims;
}

namespace {
std::vector<int64_t> contiguous_strides(const Shape& s) {
    std::vector<int64_t> stride(s.size(), 1);
    for (size_t k = s.size(); k > 1; --k) stride[k - 2] = stride[k - 1] * s[k - 1];
    return stride;
}
}  // namespace

std::optional<std::vector<StridedDim>> transpose_dims(const Node& n, const Shape& s) {
    const size_t r = s.size();
    std::vector<int64_t> perm;
    if (auto given = ints_attr(n, "perm")) {
        perm = *given;
    } else {
        for (size_t k = r; k > 0; --k) perm.push_back(static_cast<int64_t>(k - 1));
    }
    if (perm.size() != r) return std::nullopt;
    const std::vector<int64_t> in_stride = contiguous_strides(s);
    std::vector<StridedDim> dims;
    std::vector<bool> used(r, false);
    for (int64_t p : perm) {
        const int64_t axis = normalize_axis(p, r);
        if (axis < 0 || used[static_cast<size_t>(axis)]) return std::nullopt;
        used[static_cast<size_t>(axis)] = true;
        const int64_t d = s[static_cast<size_t>(axis)], st = in_stride[static_cast<size_t>(axis)];
        if (d == 1) continue;
        if (!dims.empty() && dims.back().stride == st * d) {  // neighbours in the input too
            dims.back().size *= d;
            dims.back().stride = st;
            continue;
        }
        dims.push_back({d, st});
    }
    return dims;
}

std::optional<ReduceDims> reduce_dims(const Node& n, const Shape& s) {
    const size_t r = s.size();
    std::vector<bool> reduced(r, true);  // axes absent: every axis
    if (auto axes = ints_attr(n, "axes")) {
        reduced.assign(r, false);
        for (int64_t a : *axes) {
            const int64_t k = normalize_axis(a, r);
            if (k < 0) return std::nullopt;
            reduced[static_cast<size_t>(k)] = true;
        }
    }
    // The input is contiguous, so a merged run keeps a single stride.
    ReduceDims out;
    const std::vector<int64_t> stride = contiguous_strides(s);
    for (size_t k = 0; k < r; ++k) {
        if (reduced[k]) out.count *= s[k];
        if (s[k] == 1) continue;
        if (!out.dims.empty() && out.dims.back().reduced == reduced[k]) {
            out.dims.back().size *= s[k];
            out.dims.back().stride = stride[k];
            continue;
        }
        out.dims.push_back({s[k], stride[k], reduced[k]});
    }
    return out;
}

std::optional<AxisSplit> softmax_split(const Node& n, const Shape& s) {
    const int64_t axis = normalize_axis(int_attr(n, "axis", -1), s.size());
    if (axis < 0) return std::nullopt;
    AxisSplit split;
    for (size_t d = 0; d < s.size(); ++d) {
        const auto k = static_cast<int64_t>(d);
        if (k < axis)
            split.outer *= s[d];
        else if (k == axis)
            split.len = s[d];
        else
            split.inner *= s[d];
    }
    return split;
}

std::optional<MatmulPlan> matmul_plan(const Node& n, const Shape& a, const Shape& b,
                                      int64_t out_numel) {
    if (a.empty() || b.empty()) return std::nullopt;
    MatmulPlan p;
    p.ta = bool_attr(n, "transpose_a", false);
    p.tb = bool_attr(n, "transpose_b", false);
    Shape sa = a, sb = b;
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    const int64_t rows_a = sa[sa.size() - 2], cols_a = sa.back();
    const int64_t rows_b = sb[sb.size() - 2], cols_b = sb.back();
    p.m = p.ta ? cols_a : rows_a;
    p.k = p.ta ? rows_a : cols_a;
    p.n = p.tb ? rows_b : cols_b;
    p.lda = cols_a;
    p.ldb = cols_b;
    p.mat_a = rows_a * cols_a;
    p.mat_b = rows_b * cols_b;
    if ((p.tb ? cols_b : rows_b) != p.k) return std::nullopt;
    const Shape batch_a(sa.begin(), sa.end() - 2), batch_b(sb.begin(), sb.end() - 2);
    Shape batch_out(std::max(batch_a.size(), batch_b.size()));
    for (size_t k = 0; k < batch_out.size(); ++k) {  // innermost first
        const int64_t ad = k < batch_a.size() ? batch_a[batch_a.size() - 1 - k] : 1;
        const int64_t bd = k < batch_b.size() ? batch_b[batch_b.size() - 1 - k] : 1;
        if (ad != bd && ad != 1 && bd != 1) return std::nullopt;
        batch_out[batch_out.size() - 1 - k] = ad == 1 ? bd : ad;
        p.batch *= ad == 1 ? bd : ad;
    }
    p.batch_dims = broadcast_dims(batch_a, batch_b, batch_out);
    if (p.batch * p.m * p.n != out_numel) return std::nullopt;
    return p;
}

std::optional<ConcatSplit> concat_split(const Node& n, const Shape& out, const InputShapes& in) {
    const size_t r = out.size();
    const int64_t axis = normalize_axis(int_attr(n, "axis", 0), r);
    if (axis < 0 || in.empty()) return std::nullopt;
    const auto ax = static_cast<size_t>(axis);
    ConcatSplit split;
    int64_t inner = 1;
    for (size_t d = ax + 1; d < r; ++d) inner *= out[d];
    for (size_t d = 0; d < ax; ++d) split.outer *= out[d];
    int64_t total = 0;
    for (const Shape& s : in) {
        if (s.size() != r) return std::nullopt;
        split.widths.push_back(s[ax] * inner);
        total += s[ax];
    }
    if (total != out[ax]) return std::nullopt;
    split.pitch = total * inner;
    return split;
}

int64_t normalize_axis(int64_t axis, size_t rank) {
    const auto r = static_cast<int64_t>(rank);
    if (axis < -r || axis >= r) return -1;
    return axis < 0 ? axis + r : axis;
}

int64_t numel_of(const Shape& s) {
    return checked_numel(s).value_or(0);
}

NodeKernel::NodeKernel(const Graph& g, const Node& n)
    : op_(n.op), out_dtype_(n.dtype), out_shape_(n.shape), out_numel_(numel_of(n.shape)) {
    // Up to three inputs inline: a graph may hold a million kernels.
    in_dtypes_.reserve(n.inputs.size());
    in_shapes_.reserve(n.inputs.size());
    in_numel_.reserve(n.inputs.size());
    for (const Input& in : n.inputs) {
        const Node& x = g.node(in.id);
        in_dtypes_.push_back(x.dtype);
        in_shapes_.push_back(x.shape);
        in_numel_.push_back(numel_of(x.shape));
    }
}

std::string NodeKernel::check(const TensorRef* inputs, size_t n_inputs, const TensorRef& out,
                              const char* what) const {
    auto where = [&] { return std::string("internal error: ") + op_name(op_) + " " + what + ": "; };
    if (n_inputs != in_dtypes_.size())
        return where() + "expected " + std::to_string(in_dtypes_.size()) + " inputs, got " + std::to_string(n_inputs);
    for (size_t k = 0; k < n_inputs; ++k) {
        const TensorRef& t = inputs[k];
        if (t.dtype != in_dtypes_[k] || t.numel != in_numel_[k] || (t.numel > 0 && !t.data))
            return where() + "input " + std::to_string(k) + " is " + dtype_name(t.dtype) + " with " +
                   std::to_string(t.numel) + " elements, expected " + dtype_name(in_dtypes_[k]) + " with " +
                   std::to_string(in_numel_[k]);
    }
    if (out.dtype != out_dtype_ || out.numel != out_numel_ || (out.numel > 0 && !out.data))
        return where() + "output is " + dtype_name(out.dtype) + " with " + std::to_string(out.numel) +
               " elements, expected " + dtype_name(out_dtype_) + " with " + std::to_string(out_numel_);
    return "";
}

std::string KernelBase::run(const TensorRef* inputs, size_t n_inputs, TensorRef& out,
                            const KernelContext& ctx) {
    try {
        if (!checked_) {
            std::string problem = check(inputs, n_inputs, out, "kernel");
            if (!problem.empty()) return problem;
            checked_ = true;
        }
        return compute(inputs, out, ctx);
    } catch (...) {
        return "out of memory";  // fits the small-string buffer: returning it cannot throw
    }
}

namespace {

class ErrorKernel final : public Kernel {
  public:
    explicit ErrorKernel(std::string message) : message_(std::move(message)) {}
    std::string run(const TensorRef*, size_t, TensorRef&, const KernelContext&) override {
        return message_;
    }

  private:
    std::string message_;
};

}  // namespace

std::unique_ptr<Kernel> make_error_kernel(std::string message) {
    return std::make_unique<ErrorKernel>(std::move(message));
}

}  // namespace graphrun::kernels
