// The Logic family on the GPU, with the CPU's arithmetic
// (engine/kernels/common/activation_ops.h): bools are bytes 0/1. Output
// element i of a broadcast reads each operand at its offset for i, from the
// output's dims with each operand's stride in them (0 where it broadcasts).
#include <cstdint>

#include "engine/kernels/common/activation_ops.h"
#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/logic.cuh"

namespace graphrun::gpu {

namespace {

// The output's dims, innermost first, with the strides of up to three operands.
struct Walk {
    int rank = 0;
    int64_t size[kMaxRank] = {};
    int64_t stride[3][kMaxRank] = {};
};

__device__ inline void walk_offsets(const Walk& w, int64_t i, int64_t* off, int operands) {
    for (int k = 0; k < operands; ++k) off[k] = 0;
    for (int d = 0; d < w.rank; ++d) {
        const int64_t q = i / w.size[d];
        const int64_t r = i - q * w.size[d];
        for (int k = 0; k < operands; ++k) off[k] += r * w.stride[k][d];
        i = q;
    }
}

// The walk of `out` for the operand shapes `in` (right-aligned); false when
// the rank is too large or an operand does not broadcast to out.
bool make_walk(const kernels::InputShapes& in, const Shape& out, Walk& w) {
    const int rank = static_cast<int>(out.size());
    if (rank > kMaxRank || in.size() > 3) return false;
    w.rank = rank;
    for (int d = 0; d < rank; ++d) w.size[d] = out[static_cast<size_t>(rank - 1 - d)];
    for (size_t k = 0; k < in.size(); ++k) {
        const Shape& s = in[k];
        const int shift = rank - static_cast<int>(s.size());
        if (shift < 0) return false;
        int64_t stride = 1;
        for (int d = 0; d < rank; ++d) {  // innermost first
            const int axis = rank - 1 - d;
            const int64_t size = axis >= shift ? s[static_cast<size_t>(axis - shift)] : 1;
            if (size != 1 && size != w.size[d]) return false;
            w.stride[k][d] = size == 1 ? 0 : stride;
            stride *= size;
        }
    }
    return true;
}

template <class T, class Op>
__global__ void compare_kernel(const T* __restrict__ a, const T* __restrict__ b,
                               uint8_t* __restrict__ o, int64_t n, const __grid_constant__ Walk w) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        int64_t off[2];
        walk_offsets(w, i, off, 2);
        o[i] = Op::apply(a[off[0]], b[off[1]]);
    }
}

__global__ void not_kernel(const uint8_t* __restrict__ x, uint8_t* __restrict__ o, int64_t n) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) o[i] = x[i] == 0;
}

template <class T>
__global__ void where_kernel(const uint8_t* __restrict__ c, const T* __restrict__ x,
                             const T* __restrict__ y, T* __restrict__ o, int64_t n,
                             const __grid_constant__ Walk w) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        int64_t off[3];
        walk_offsets(w, i, off, 3);
        o[i] = c[off[0]] ? x[off[1]] : y[off[2]];
    }
}

template <class T, class Op>
class CompareKernel final : public GpuKernel {
  public:
    CompareKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        ok_ = in_shapes_.size() == 2 && make_walk(in_shapes_, out_shape_, walk_);
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_) throw std::runtime_error("internal error: broadcast rank too large");
        if (out.numel == 0) return;
        launch<compare_kernel<T, Op>>(ctx_, grid_for(out.numel), kBlock,
            static_cast<const T*>(in[0].data), static_cast<const T*>(in[1].data),
            static_cast<uint8_t*>(out.data), out.numel, walk_);
    }

  private:
    bool ok_ = true;
    Walk walk_;
};

class NotKernel final : public GpuKernel {
  public:
    NotKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {}

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (out.numel == 0) return;
        launch<not_kernel>(ctx_, grid_for(out.numel), kBlock,
            static_cast<const uint8_t*>(in[0].data), static_cast<uint8_t*>(out.data), out.numel);
    }
};

template <class T>
class WhereKernel final : public GpuKernel {
  public:
    WhereKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        ok_ = in_shapes_.size() == 3 && make_walk(in_shapes_, out_shape_, walk_);
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_) throw std::runtime_error("internal error: where's operands do not broadcast");
        if (out.numel == 0) return;
        launch<where_kernel<T>>(ctx_, grid_for(out.numel), kBlock,
            static_cast<const uint8_t*>(in[0].data), static_cast<const T*>(in[1].data),
            static_cast<const T*>(in[2].data), static_cast<T*>(out.data), out.numel, walk_);
    }

  private:
    bool ok_ = true;
    Walk walk_;
};

template <class Op>
std::unique_ptr<Kernel> make_compare(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (g.node(n.inputs[0].id).dtype) {
        case DType::F32: return std::make_unique<CompareKernel<float, Op>>(g, n, ctx);
        case DType::F64: return std::make_unique<CompareKernel<double, Op>>(g, n, ctx);
        case DType::I32: return std::make_unique<CompareKernel<int32_t, Op>>(g, n, ctx);
        case DType::I64: return std::make_unique<CompareKernel<int64_t, Op>>(g, n, ctx);
        case DType::Bool: return std::make_unique<CompareKernel<uint8_t, Op>>(g, n, ctx);
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

std::unique_ptr<Kernel> make_logic_for_op(const Graph& g, const Node& n, GpuContext& ctx) {
    using namespace kernels;
    switch (n.op) {
        case OpKind::Equal: return make_compare<EqualOp>(g, n, ctx);
        case OpKind::NotEqual: return make_compare<NotEqualOp>(g, n, ctx);
        case OpKind::Less: return make_compare<LessOp>(g, n, ctx);
        case OpKind::LessEqual: return make_compare<LessEqualOp>(g, n, ctx);
        case OpKind::Greater: return make_compare<GreaterOp>(g, n, ctx);
        case OpKind::GreaterEqual: return make_compare<GreaterEqualOp>(g, n, ctx);
        case OpKind::LogicalAnd: return std::make_unique<CompareKernel<uint8_t, LogicalAndOp>>(g, n, ctx);
        case OpKind::LogicalOr: return std::make_unique<CompareKernel<uint8_t, LogicalOrOp>>(g, n, ctx);
        case OpKind::LogicalXor: return std::make_unique<CompareKernel<uint8_t, LogicalXorOp>>(g, n, ctx);
        case OpKind::LogicalNot: return std::make_unique<NotKernel>(g, n, ctx);
        case OpKind::Where:
            return kernels::dispatch_dtype(n.dtype, [&](auto tag) -> std::unique_ptr<Kernel> {
                return std::make_unique<WhereKernel<decltype(tag)>>(g, n, ctx);
            });
        default: return nullptr;
    }
}

}  // namespace

std::unique_ptr<Kernel> make_logic_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    const size_t arity = n.op == OpKind::LogicalNot ? 1 : n.op == OpKind::Where ? 3 : 2;
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == arity) k = make_logic_for_op(g, n, ctx);
    if (k) return k;
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") +
                                      op_name(n.op) + " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
