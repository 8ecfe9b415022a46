// Binary elementwise ops with NumPy broadcasting, with the CPU's arithmetic
// (engine/kernels/common/elementwise_ops.h): integer arithmetic wraps (done
// in unsigned), division truncates, INT_MIN / -1 is INT_MIN, maximum/minimum
// propagate NaN. Integer division by zero and integer negative powers (base
// other than 1 or -1) set the device error flag; only those two ops wait for
// the stream to read it back.
#include <type_traits>

#include "engine/kernels/common/elementwise_ops.h"
#include "engine/kernels/common/kernel_common.h"
#include "gpu/kernels/binary.cuh"

namespace graphrun::gpu {

namespace {

constexpr int kFlagDivByZero = 1;
constexpr int kFlagNegativePower = 2;

using kernels::kIsInt;

// The shared arithmetic (engine/kernels/common/elementwise_ops.h), as the
// kernel calls it: with the error flag, which only div and pow set.
template <class Op>
struct Flagless {
    template <class T>
    __device__ static T apply(T a, T b, int*) {
        return Op::apply(a, b);
    }
};
using AddOp = Flagless<kernels::AddOp>;
using SubOp = Flagless<kernels::SubOp>;
using MulOp = Flagless<kernels::MulOp>;
using MaxOp = Flagless<kernels::MaxOp>;
using MinOp = Flagless<kernels::MinOp>;
struct DivOp {
    template <class T>
    __device__ static T apply(T a, T b, int* flag) {
        if (kIsInt<T> && b == 0) *flag = kFlagDivByZero;
        return kernels::DivOp::apply(a, b);
    }
};
struct PowOp {
    template <class T>
    __device__ static T apply(T base, T exp, int* flag) {
        if constexpr (kIsInt<T>) {
            if (exp < 0 && base != 1 && base != -1) *flag = kFlagNegativePower;
            return kernels::int_pow(base, exp);
        } else if constexpr (std::is_same_v<T, float>) {
            // CUDA's powf: at most 4 ulp from the correctly rounded value, within
            // the f32 rtol of 1e-6 (8 ulp) of tests/gpu_ops_test.py; in double
            // it was 30-60x slower on sm_86/89.
            return powf(base, exp);
        } else {
            return pow(base, exp);
        }
    }
};

// Output element i reads a[offset_a(i)] and b[offset_b(i)]: the broadcast,
// with size-1 dims dropped and neighbours merged, innermost dim first.
struct Broadcast {
    int rank = 0;
    int64_t size[kMaxRank] = {};
    int64_t sa[kMaxRank] = {};
    int64_t sb[kMaxRank] = {};
};

template <class T, class Op>
__global__ void binary_kernel(const T* __restrict__ a, const T* __restrict__ b, T* __restrict__ o,
                              int64_t n, const __grid_constant__ Broadcast p, int* flag) {
    for (int64_t i = thread_index(); i < n; i += thread_count()) {
        int64_t rest = i, oa = 0, ob = 0;
        for (int d = 0; d + 1 < p.rank; ++d) {
            const int64_t q = rest / p.size[d];
            const int64_t r = rest - q * p.size[d];
            oa += r * p.sa[d];
            ob += r * p.sb[d];
            rest = q;
        }
        if (p.rank > 0) {
            oa += rest * p.sa[p.rank - 1];
            ob += rest * p.sb[p.rank - 1];
        }
        o[i] = Op::apply(a[oa], b[ob], flag);
    }
}

// The merged dimensions of kernels::broadcast_dims, as the kernel takes them.
bool make_broadcast(const Shape& a, const Shape& b, const Shape& out, Broadcast& p) {
    const std::vector<kernels::BroadcastDim> dims = kernels::broadcast_dims(a, b, out);
    if (dims.size() > static_cast<size_t>(kMaxRank)) return false;
    p.rank = static_cast<int>(dims.size());
    for (size_t k = 0; k < dims.size(); ++k) {
        p.size[k] = dims[k].size;
        p.sa[k] = dims[k].sa;
        p.sb[k] = dims[k].sb;
    }
    return true;
}

template <class T, class Op>
class BinaryKernel final : public GpuKernel {
  public:
    BinaryKernel(const Graph& g, const Node& n, GpuContext& ctx) : GpuKernel(g, n, ctx) {
        ok_ = in_shapes_.size() == 2 &&
              make_broadcast(in_shapes_[0], in_shapes_[1], out_shape_, plan_);
    }

  protected:
    void compute(const TensorRef* in, TensorRef& out) override {
        if (!ok_) throw std::runtime_error("internal error: broadcast rank too large");
        if (out.numel == 0) return;
        constexpr bool checked =
            kIsInt<T> && (std::is_same_v<Op, DivOp> || std::is_same_v<Op, PowOp>);
        int* flag = ctx_.error_flag;
        if (checked && !flag)
            throw std::runtime_error("internal error: the GPU context has no error flag");
        launch<binary_kernel<T, Op>>(ctx_, grid_for(out.numel), kBlock,
                                     static_cast<const T*>(in[0].data),
                                     static_cast<const T*>(in[1].data), static_cast<T*>(out.data),
                                     out.numel, plan_, flag);
        if constexpr (checked) {
            const int f = take_error_flag(ctx_);
            if (f == kFlagDivByZero) throw DataError("integer division by zero");
            if (f == kFlagNegativePower)
                throw DataError("integers to negative integer powers are not allowed");
            if (f != 0)
                throw DataError("internal error: unknown device error flag " + std::to_string(f));
        }
    }

  private:
    bool ok_ = true;
    Broadcast plan_;
};

template <class Op>
std::unique_ptr<Kernel> make_binary_typed(const Graph& g, const Node& n, GpuContext& ctx) {
    switch (n.dtype) {
        case DType::F32:
            return std::make_unique<BinaryKernel<float, Op>>(g, n, ctx);
        case DType::F64:
            return std::make_unique<BinaryKernel<double, Op>>(g, n, ctx);
        case DType::I32:
            return std::make_unique<BinaryKernel<int32_t, Op>>(g, n, ctx);
        case DType::I64:
            return std::make_unique<BinaryKernel<int64_t, Op>>(g, n, ctx);
        case DType::Bool:
        GR_STORAGE_DTYPE_CASES:  // widened before any kernel (engine/plan/storage_types.h)
            break;
    }
    return nullptr;
}

}  // namespace

std::unique_ptr<Kernel> make_binary_kernel(const Graph& g, const Node& n, GpuContext& ctx) {
    std::unique_ptr<Kernel> k;
    if (n.inputs.size() == 2) {
        switch (n.op) {
            case OpKind::Add:
                k = make_binary_typed<AddOp>(g, n, ctx);
                break;
            case OpKind::Sub:
                k = make_binary_typed<SubOp>(g, n, ctx);
                break;
            case OpKind::Mul:
                k = make_binary_typed<MulOp>(g, n, ctx);
                break;
            case OpKind::Div:
                k = make_binary_typed<DivOp>(g, n, ctx);
                break;
            case OpKind::Maximum:
                k = make_binary_typed<MaxOp>(g, n, ctx);
                break;
            case OpKind::Minimum:
                k = make_binary_typed<MinOp>(g, n, ctx);
                break;
            case OpKind::Pow:
                k = make_binary_typed<PowOp>(g, n, ctx);
                break;
            default:
                break;
        }
    }
    if (k) return k;
    return kernels::make_error_kernel(std::string("internal error: no GPU kernel for ") +
                                      op_name(n.op) + " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::gpu
