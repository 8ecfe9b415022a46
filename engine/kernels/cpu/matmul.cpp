// matmul with numpy.matmul semantics through CBLAS gemm: 1-D operands are
// promoted (a to a row, b to a column) and the added dimension dropped, batch
// dimensions broadcast, transpose_a/transpose_b are gemm's trans flags (no
// copies). One gemm per batch element, or one for the whole batch when b is a
// single matrix and a needs no transpose (a's batch folds into M). A batch of
// at least as many products as workers (attention's per-head q·kᵀ and p·v)
// runs whole products on each worker, each gemm on one thread: splitting
// every 128×32×128 product over the workers in turn cost OpenBLAS a start
// and a join per product, more than the product itself. A fused
// node's epilogue (bias, residual, activation: epilogue.h) follows in one
// pass over the output's rows, over the session's workers.
#include <cblas.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/kernels/cpu/epilogue.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/cpu/vmath.h"
#include "engine/kernels/cpu/simd.h"

// OpenBLAS built with DYNAMIC_ARCH picks its kernels by CPU model at load time;
// weak, so that another CBLAS (or a single-target OpenBLAS) links without them.
extern "C" {
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
// OpenBLAS's own fork handler: joins its worker threads; the next parallel
// gemm starts them again (blas_thread_init, "lazy re-init after fork").
void blas_thread_shutdown_(void) __attribute__((weak));
}

namespace graphrun::kernels {

// OpenBLAS up to 0.3.21 (Debian 12's) knows x86 CPUs by model number, and one
// newer than it (here Emerald Rapids) gets its generic Prescott (SSE3)
// kernels: sgemm at a third of the speed of its AVX-512 ones. When the core it
// chose is such a fallback and the CPU has AVX-512 (or AVX2 and FMA), this
// selects the SkylakeX (Haswell) kernels, the way OPENBLAS_CORETYPE would;
// a user's OPENBLAS_CORETYPE is left alone. Runs once, before the first gemm,
// while no other thread of the process calls into OpenBLAS or getenv.
void select_openblas_core() {
    static std::once_flag once;
    std::call_once(once, [] {
        if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || std::getenv("OPENBLAS_CORETYPE"))
            return;
        const char* core = openblas_get_corename();
        static const char* const kFallbacks[] = {"unknown", "prescott", "katmai", "coppermine",
                                                 "northwood", "banias", "core2", "penryn",
                                                 "dunnington", "atom", "nehalem"};
        bool fallback = false;
        for (const char* f : kFallbacks) fallback |= core && strcasecmp(core, f) == 0;
        const Isa isa = detected_isa();
        const char* want = isa == Isa::Avx512 ? "SkylakeX" : isa == Isa::Avx2 ? "Haswell" : nullptr;
        if (!fallback || !want || setenv("OPENBLAS_CORETYPE", want, 0) != 0) return;
        gotoblas_dynamic_quit();
        gotoblas_dynamic_init();
        unsetenv("OPENBLAS_CORETYPE");
    });
}

std::string cpu_kernels_text() {
    select_openblas_core();
    const char* core = openblas_get_corename();
    return std::string(isa_name(active_isa())) + " loops, OpenBLAS " + (core && *core ? core : "unknown") +
           " kernels, " + vec_math_library() + " for exp/tanh/erf/log/sigmoid/gelu";
}

namespace {

void gemm(bool ta, bool tb, int m, int n, int k, const float* a, int lda, const float* b, int ldb,
          float* c, int ldc) {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, 1.0f, a, lda, b, ldb, 0.0f, c, ldc);
}

void gemm(bool ta, bool tb, int m, int n, int k, const double* a, int lda, const double* b, int ldb,
          double* c, int ldc) {
    cblas_dgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n,
                k, 1.0, a, lda, b, ldb, 0.0, c, ldc);
}


bool fits_int(int64_t v) {
    return v >= 0 && v <= INT_MAX;
}

template <class T>
class MatmulKernel final : public KernelBase {
  public:
    MatmulKernel(const Graph& g, const Node& n) : KernelBase(g, n), epilogue_(g, n) {
        std::optional<MatmulPlan> plan = matmul_plan(n, in_shapes_[0], in_shapes_[1], out_numel_);
        if (!plan || plan->batch_dims.size() > static_cast<size_t>(kMaxDims)) {
            ok_ = false;
            return;
        }
        p_ = std::move(*plan);
        // One matrix b against every matrix of a: the batch of a is contiguous
        // rows of one tall matrix (only without transpose_a).
        bool b_batched = false;
        for (const BroadcastDim& d : p_.batch_dims) b_batched |= d.sb != 0;
        blas_ok_ = fits_int(p_.m) && fits_int(p_.n) && fits_int(p_.k) && fits_int(p_.lda) &&
                   fits_int(p_.ldb);
        fold_ = !b_batched && !p_.ta && p_.batch > 1 && blas_ok_ &&
                p_.batch <= INT_MAX / std::max<int64_t>(p_.m, 1);
        large_batch_ = static_cast<double>(p_.batch) * static_cast<double>(p_.m) * static_cast<double>(p_.n) *
                           static_cast<double>(p_.k) >=
                       static_cast<double>(kPerWorkerMacs);
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: matmul operand shapes do not match";
        if (out.numel == 0) return "";
        T* c = static_cast<T*>(out.data);
        if (p_.k == 0) {
            std::memset(c, 0,
                        static_cast<size_t>(out.numel) * sizeof(T));  // all-zero bytes are 0.0
            return finish(in, out, ctx);
        }
        const T* a = static_cast<const T*>(in[0].data);
        const T* b = static_cast<const T*>(in[1].data);
        const int threads = std::max(1, ctx.threads);
        if (fold_) {
            // --threads also bounds OpenBLAS's own pool.
            blas_threads(threads);
            gemm(false, p_.tb, static_cast<int>(p_.batch * p_.m), static_cast<int>(p_.n),
                 static_cast<int>(p_.k), a, static_cast<int>(p_.lda), b,
                 static_cast<int>(p_.ldb), c, static_cast<int>(p_.n));
            return finish(in, out, ctx);
        }
        // Below kPerWorkerMacs in all, handing products to sleeping workers
        // costs more than it saves (GPT-2's 8 heads of 32x32x32 at batch 1).
        const bool per_item = threads > 1 && ctx.pool != nullptr && p_.batch >= threads && large_batch_;
        blas_threads(per_item ? 1 : threads);
        auto products = [&](int64_t t0, int64_t t1) {
            const std::vector<BroadcastDim>& dims = p_.batch_dims;  // innermost first
            // Product t0's place in every batch dimension, and its matrices' offsets.
            std::array<int64_t, kMaxDims> idx;
            int64_t oa = 0, ob = 0, rest = t0;
            for (size_t d = 0; d < dims.size(); ++d) {
                idx[d] = rest % dims[d].size;
                rest /= dims[d].size;
                oa += idx[d] * dims[d].sa;
                ob += idx[d] * dims[d].sb;
            }
            for (int64_t t = t0; t < t1; ++t) {
                multiply(a + oa * p_.mat_a, b + ob * p_.mat_b, c + t * p_.m * p_.n);
                for (size_t d = 0; d < dims.size(); ++d) {
                    oa += dims[d].sa;
                    ob += dims[d].sb;
                    if (++idx[d] < dims[d].size) break;
                    oa -= dims[d].size * dims[d].sa;
                    ob -= dims[d].size * dims[d].sb;
                    idx[d] = 0;
                }
            }
        };
        if (per_item) parallel_for(ctx, p_.batch, 1, products);
        else products(0, p_.batch);
        return finish(in, out, ctx);
    }

  private:
    std::string finish(const TensorRef* in, TensorRef& out, const KernelContext& ctx) {
        apply_epilogue(epilogue_, in, out, out_shape_, ctx);
        return "";
    }

    // One m x k by k x n product.
    void multiply(const T* a, const T* b, T* c) const {
        if (blas_ok_) {
            gemm(p_.ta, p_.tb, static_cast<int>(p_.m), static_cast<int>(p_.n),
                 static_cast<int>(p_.k), a, static_cast<int>(p_.lda), b, static_cast<int>(p_.ldb),
                 c, static_cast<int>(p_.n));
            return;
        }
        // Dimensions beyond gemm's int arguments: a plain loop, accumulated in double.
        for (int64_t i = 0; i < p_.m; ++i)
            for (int64_t j = 0; j < p_.n; ++j) {
                double s = 0;
                for (int64_t p = 0; p < p_.k; ++p) {
                    const T x = p_.ta ? a[p * p_.lda + i] : a[i * p_.lda + p];
                    const T y = p_.tb ? b[j * p_.ldb + p] : b[p * p_.ldb + j];
                    s += static_cast<double>(x) * static_cast<double>(y);
                }
                c[i * p_.n + j] = static_cast<T>(s);
            }
    }

    bool ok_ = true, fold_ = false, blas_ok_ = true;
    bool large_batch_ = false;  // kPerWorkerMacs or more in all (the shapes are fixed when made)
    MatmulPlan p_;
    EpilogueRun<T> epilogue_;  // a fused node's; empty otherwise
};

}  // namespace

namespace {

// Ours (OpenBLAS), or an error kernel for a node it cannot run.
std::unique_ptr<Kernel> make_own_matmul_kernel(const Graph& g, const Node& n) {
    // A fused matmul reads its epilogue's bias and residual after a and b.
    if (n.inputs.size() == 2 || (g.epilogue_of(n) && n.inputs.size() <= 4)) {
        if (n.dtype == DType::F32) return std::make_unique<MatmulKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<MatmulKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for matmul on ") +
                             dtype_name(n.dtype));
}

}  // namespace

std::unique_ptr<Kernel> make_matmul_kernel(const Graph& g, const Node& n) {
    select_openblas_core();
    if (n.op == OpKind::Gemm) return make_gemm_kernel(g, n);
    if (const Epilogue* e = g.epilogue_of(n); e && e->attention.on) return make_attention_kernel(g, n);
    // The fusion pass's int8 matmul (8-bit a): oneDNN's, which the pass asked for.
    if (n.inputs.size() >= 2 && n.inputs[0].id >= 0 && g.node(n.inputs[0].id).dtype != n.dtype)
        return make_dnnl_int8_kernel(g, n);
    // oneDNN where it is faster (a constant b, packed once: dnnl_kernels.h), ours where it declines.
    if (auto k = make_dnnl_matmul_kernel(g, n, make_own_matmul_kernel)) return k;
    if (auto k = refuse_prepacked_weight(g, n)) return k;
    return make_own_matmul_kernel(g, n);
}

}  // namespace graphrun::kernels

namespace graphrun {

void kernels::blas_threads(int n) {
    if (openblas_get_num_threads() != n) openblas_set_num_threads(n);
}

void set_blas_threads(int threads, bool graph_uses_blas) {
    openblas_set_num_threads(threads);
    // OpenBLAS starts its workers when the library loads, and each spins
    // (sched_yield) for about 2^28 cycles after its last job: a tenth of a
    // second of a core at every start of the process, taken from the
    // executor and the reclaimer thread on a small machine. A graph with no
    // CPU matmul stops them; the first gemm of a later session restarts them.
    if (!graph_uses_blas) stop_blas_workers();
}

void stop_blas_workers() {
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}

}  // namespace graphrun
