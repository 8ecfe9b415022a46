// The host-side plans of the norm ops (layer_norm, batch_norm, gemm), shared
// by the CPU's (engine/kernels/cpu/norm.cpp, gemm.cpp) and the GPU's
// (gpu/kernels/norm.cu, matmul.cu) kernels: the node's shapes and attributes
// read once, as the kernels walk them. Host code.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/kernels/common/kernel_common.h"

namespace graphrun::kernels {

// A number attribute as T (ONNX's float attributes are applied in the
// tensor's type: epsilon of an f32 op is f32(epsilon)), or def.
template <class T>
T float_attr_or(const Node& n, std::string_view name, double def) {
    auto s = scalar_attr(n, name);
    if (!s) return static_cast<T>(def);
    return s->is_int ? static_cast<T>(s->i) : static_cast<T>(s->f);
}

// layer_norm: x as `rows` rows of `len` elements (the dimensions from axis
// on); scale and bias broadcast onto a row: `len` elements each, or walked
// through `dims` (the row's dimensions, outermost first, with the
// parameter's strides: 0 where it is broadcast).
struct LayerNormParam {
    bool present = false;
    bool dense = true;             // numel == len: element j of a row is element j
    std::vector<StridedDim> dims;  // when !dense
};
struct LayerNormPlan {
    int64_t rows = 0, len = 0;
    LayerNormParam scale, bias;
};
// nullopt when the node's shapes do not fit (validation refuses those).
std::optional<LayerNormPlan> layer_norm_plan(const Node& n, const InputShapes& in);

// The offset into a non-dense parameter of element j of a row.
inline int64_t param_offset(const std::vector<StridedDim>& dims, int64_t j) {
    int64_t off = 0;
    for (size_t k = dims.size(); k-- > 0;) {
        const int64_t q = j / dims[k].size;
        off += (j - q * dims[k].size) * dims[k].stride;
        j = q;
    }
    return off;
}

// batch_norm: x as [outer, channels, inner] (ONNX: channels on axis 1; a
// 1-D x is one channel).
struct BatchNormPlan {
    int64_t outer = 0, channels = 1, inner = 1;
};
BatchNormPlan batch_norm_plan(const Shape& x);

// gemm: y[m,n] = alpha * op(a) @ op(b) + beta * c, row-major a (lda) and b
// (ldb) as gemm takes them; c broadcast to [m,n] with strides c_sm, c_sn
// (0 where broadcast). has_c is false without c or with beta == 0 (ONNX
// then ignores c).
struct GemmPlan {
    bool ta = false, tb = false, has_c = false;
    int64_t m = 0, n = 0, k = 0, lda = 1, ldb = 1;
    int64_t c_sm = 0, c_sn = 0;
    double alpha = 1, beta = 1;  // as the node's dtype rounds them
};
std::optional<GemmPlan> gemm_plan(const Node& n, const InputShapes& in);

}  // namespace graphrun::kernels
