// gemm (ONNX Gemm) on the CPU: y = alpha · op(a) @ op(b) + beta · c. beta · c
// is broadcast into the output first, then one CBLAS gemm adds
// alpha · op(a) @ op(b) to it (its beta 1; 0 without c), the transposes being
// gemm's trans flags (no copies). Dimensions beyond gemm's int arguments: a
// plain loop accumulated in double. A fused node's epilogue (an activation:
// epilogue.h) follows in one pass over the rows.
#include <cblas.h>

#include <algorithm>
#include <climits>
#include <cstring>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/common/norm_plan.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/kernels/cpu/epilogue.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"

namespace graphrun::kernels {

namespace {

void blas_gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda,
               const float* b, int ldb, float beta, float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void blas_gemm(bool ta, bool tb, int m, int n, int k, double alpha, const double* a, int lda,
               const double* b, int ldb, double beta, double* c, int ldc) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool fits_int(int64_t v) {
    return v >= 0 && v <= INT_MAX;
}

template <class T>
class GemmKernel final : public KernelBase {
  public:
    GemmKernel(const Graph& g, const Node& n)
        : KernelBase(g, n), plan_(gemm_plan(n, in_shapes_)), epilogue_(g, n) {
        if (plan_)
            blas_ok_ = fits_int(plan_->m) && fits_int(plan_->n) && fits_int(plan_->k) &&
                       fits_int(plan_->lda) && fits_int(plan_->ldb);
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!plan_) return "internal error: gemm operand shapes do not match";
        if (out.numel == 0) return "";
        const GemmPlan& p = *plan_;
        const T* a = static_cast<const T*>(in[0].data);
        const T* b = static_cast<const T*>(in[1].data);
        T* y = static_cast<T*>(out.data);
        const auto alpha = static_cast<T>(p.alpha), beta = static_cast<T>(p.beta);
        if (p.has_c) {
            const T* c = static_cast<const T*>(in[2].data);
            const int64_t cols = p.n, sm = p.c_sm, sn = p.c_sn;
            parallel_for(ctx, p.m,
                         std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(cols, 1)),
                         [=](int64_t lo, int64_t hi) {
                             for (int64_t i = lo; i < hi; ++i) {
                                 const T* __restrict ci = c + i * sm;
                                 T* __restrict yi = y + i * cols;
                                 blocked_loop(cols, [=](int64_t j) { yi[j] = beta * ci[j * sn]; });
                             }
                         });
        } else if (p.k == 0 || !blas_ok_) {
            std::memset(y, 0,
                        static_cast<size_t>(out.numel) * sizeof(T));  // all-zero bytes are 0.0
        }
        if (p.k == 0) {
            apply_epilogue(epilogue_, in, out, out_shape_, ctx);
            return "";
        }
        if (!blas_ok_) {
            for (int64_t i = 0; i < p.m; ++i)
                for (int64_t j = 0; j < p.n; ++j) {
                    double s = 0;
                    for (int64_t q = 0; q < p.k; ++q) {
                        const T u = p.ta ? a[q * p.lda + i] : a[i * p.lda + q];
                        const T v = p.tb ? b[j * p.ldb + q] : b[q * p.ldb + j];
                        s += static_cast<double>(u) * static_cast<double>(v);
                    }
                    y[i * p.n + j] = static_cast<T>(static_cast<double>(alpha) * s +
                                                    static_cast<double>(y[i * p.n + j]));
                }
            apply_epilogue(epilogue_, in, out, out_shape_, ctx);
            return "";
        }
        // --threads also bounds OpenBLAS's own pool.
        blas_threads(std::max(1, ctx.threads));
        blas_gemm(p.ta, p.tb, static_cast<int>(p.m), static_cast<int>(p.n), static_cast<int>(p.k),
                  alpha, a, static_cast<int>(p.lda), b, static_cast<int>(p.ldb),
                  p.has_c ? T(1) : T(0), y, static_cast<int>(p.n));
        apply_epilogue(epilogue_, in, out, out_shape_, ctx);
        return "";
    }

  private:
    std::optional<GemmPlan> plan_;  // nullopt: the shapes do not match
    bool blas_ok_ = false;
    EpilogueRun<T> epilogue_;  // a fused node's; empty otherwise
};

}  // namespace

namespace {
std::unique_ptr<Kernel> make_own_gemm_kernel(const Graph& g, const Node& n);
}  // namespace

std::unique_ptr<Kernel> make_gemm_kernel(const Graph& g, const Node& n) {
    // oneDNN where it is faster (dnnl_kernels.h), ours where it declines.
    if (auto k = make_dnnl_gemm_kernel(g, n, make_own_gemm_kernel)) return k;
    if (auto k = refuse_prepacked_weight(g, n)) return k;
    return make_own_gemm_kernel(g, n);
}

namespace {
std::unique_ptr<Kernel> make_own_gemm_kernel(const Graph& g, const Node& n) {
    if (n.inputs.size() == 2 || n.inputs.size() == 3) {
        if (n.dtype == DType::F32) return std::make_unique<GemmKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<GemmKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for gemm on ") +
                             dtype_name(n.dtype));
}
}  // namespace

}  // namespace graphrun::kernels
