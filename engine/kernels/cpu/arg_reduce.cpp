// argmax and argmin along one axis (ONNX ArgMax/ArgMin, numpy.argmax): the
// index (i64) of the first extreme element, or of the last with
// select_last_index; NaN counts as the extreme, as in NumPy. The input is
// walked as [outer, len, inner] around the axis, neighbouring inner lanes
// side by side.
#include <algorithm>
#include <cmath>
#include <type_traits>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"

namespace graphrun::kernels {

namespace {

constexpr int64_t kArgGrain = int64_t{1} << 14;  // input elements per thread, at least
constexpr int64_t kArgTile = 64;                 // inner lanes handled side by side

template <class T>
bool is_nan(T x) {
    if constexpr (std::is_floating_point_v<T>)
        return x != x;
    else
        return false;
}

template <class T, bool Max>
class ArgReduceKernel final : public KernelBase {
  public:
    ArgReduceKernel(const Graph& g, const Node& n)
        : KernelBase(g, n), last_(bool_attr(n, "select_last_index", false)) {
        const Shape& in = in_shapes_[0];
        const int64_t axis = normalize_axis(int_attr(n, "axis", 0), in.size());
        if (axis < 0) {
            ok_ = false;
            return;
        }
        for (size_t d = 0; d < in.size(); ++d) {
            const auto k = static_cast<int64_t>(d);
            if (k < axis) outer_ *= in[d];
            else if (k == axis) len_ = in[d];
            else inner_ *= in[d];
        }
        ok_ = len_ > 0;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: argmax/argmin axis does not match the input";
        if (out.numel == 0) return "";
        const T* x = static_cast<const T*>(in[0].data);
        auto* o = static_cast<int64_t*>(out.data);
        const int64_t tiles = (inner_ + kArgTile - 1) / kArgTile;
        const int64_t grain = std::max<int64_t>(1, kArgGrain / (len_ * std::min(inner_, kArgTile)));
        parallel_for(ctx, outer_ * tiles, grain, [&](int64_t lo, int64_t hi) {
            for (int64_t item = lo; item < hi; ++item) {
                const int64_t row = item / tiles, j0 = item % tiles * kArgTile;
                const int64_t w = std::min(kArgTile, inner_ - j0);
                lanes(x + row * len_ * inner_ + j0, o + row * inner_ + j0, w);
            }
        });
        return "";
    }

  private:
    // Whether v replaces the best so far, b.
    bool replaces(T v, T b) const {
        if (is_nan(b)) return last_ && is_nan(v);
        if (is_nan(v)) return true;
        if (last_ && v == b) return true;
        return Max ? v > b : v < b;
    }

    void lanes(const T* x, int64_t* o, int64_t w) const {
        T best[kArgTile];
        int64_t idx[kArgTile];
        for (int64_t j = 0; j < w; ++j) best[j] = x[j], idx[j] = 0;
        for (int64_t k = 1; k < len_; ++k) {
            const T* row = x + k * inner_;
            for (int64_t j = 0; j < w; ++j)
                if (replaces(row[j], best[j])) best[j] = row[j], idx[j] = k;
        }
        std::copy(idx, idx + w, o);
    }

    bool ok_ = true;
    bool last_ = false;
    int64_t outer_ = 1, len_ = 1, inner_ = 1;
};

template <bool Max>
std::unique_ptr<Kernel> make_typed(const Graph& g, const Node& n, DType t) {
    switch (t) {
        case DType::F32: return std::make_unique<ArgReduceKernel<float, Max>>(g, n);
        case DType::F64: return std::make_unique<ArgReduceKernel<double, Max>>(g, n);
        case DType::I32: return std::make_unique<ArgReduceKernel<int32_t, Max>>(g, n);
        case DType::I64: return std::make_unique<ArgReduceKernel<int64_t, Max>>(g, n);
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_arg_reduce_kernel(const Graph& g, const Node& n) {
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == 1) {
        const DType t = g.node(n.inputs[0].id).dtype;
        if (n.op == OpKind::Argmax) k = make_typed<true>(g, n, t);
        if (n.op == OpKind::Argmin) k = make_typed<false>(g, n, t);
    }
    if (k) return k;
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op));
}

}  // namespace graphrun::kernels
