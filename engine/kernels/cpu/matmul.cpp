// matmul with numpy.matmul semantics through CBLAS gemm: 1-D operands are
// promoted (a to a row, b to a column) and the added dimension dropped, batch
// dimensions broadcast, transpose_a/transpose_b are gemm's trans flags (no
// copies). One gemm per batch element, or one for the whole batch when b is a
// single matrix and a needs no transpose (a's batch folds into M).
#include <cblas.h>
#include <strings.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
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

namespace {

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
    MatmulKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        ta_ = bool_attr(n, "transpose_a", false);
        tb_ = bool_attr(n, "transpose_b", false);
        Shape sa = in_shapes_[0], sb = in_shapes_[1];
        if (sa.empty() || sb.empty()) {
            ok_ = false;
            return;
        }
        if (sa.size() == 1) sa.insert(sa.begin(), 1);
        if (sb.size() == 1) sb.push_back(1);
        const int64_t rows_a = sa[sa.size() - 2], cols_a = sa.back();
        const int64_t rows_b = sb[sb.size() - 2], cols_b = sb.back();
        m_ = ta_ ? cols_a : rows_a;
        k_ = ta_ ? rows_a : cols_a;
        n_ = tb_ ? rows_b : cols_b;
        lda_ = cols_a;
        ldb_ = cols_b;
        if ((tb_ ? cols_b : rows_b) != k_) ok_ = false;

        // Batch dimensions, broadcast right-aligned; strides counted in matrices.
        const size_t ra = sa.size() - 2, rb = sb.size() - 2, r = std::max(ra, rb);
        if (r > static_cast<size_t>(kMaxDims)) {
            ok_ = false;
            return;
        }
        int64_t stride_a = 1, stride_b = 1;
        int64_t b_batch = 1;
        batch_rank_ = static_cast<int>(r);
        for (size_t k = 0; k < r; ++k) {  // innermost first
            const int64_t ad = k < ra ? sa[ra - 1 - k] : 1, bd = k < rb ? sb[rb - 1 - k] : 1;
            const int64_t od = ad == 1 ? bd : ad;
            if (ad != od && ad != 1) ok_ = false;
            if (bd != od && bd != 1) ok_ = false;
            batch_size_[k] = od;
            batch_sa_[k] = ad == 1 ? 0 : stride_a;
            batch_sb_[k] = bd == 1 ? 0 : stride_b;
            stride_a *= ad;
            stride_b *= bd;
            batch_ *= od;
            b_batch *= bd;
        }
        mat_a_ = rows_a * cols_a;
        mat_b_ = rows_b * cols_b;
        // One matrix b against every matrix of a: the batch of a is contiguous
        // rows of one tall matrix (only without transpose_a).
        blas_ok_ = fits_int(m_) && fits_int(n_) && fits_int(k_) && fits_int(lda_) && fits_int(ldb_);
        fold_ = b_batch == 1 && !ta_ && batch_ > 1 && blas_ok_ &&
                batch_ <= INT_MAX / std::max<int64_t>(m_, 1);
        if (batch_ * m_ * n_ != out_numel_) ok_ = false;
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (!ok_) return "internal error: matmul operand shapes do not match";
        if (out.numel == 0) return "";
        T* c = static_cast<T*>(out.data);
        if (k_ == 0) {
            std::memset(c, 0,
                        static_cast<size_t>(out.numel) * sizeof(T));  // all-zero bytes are 0.0
            return "";
        }
        const T* a = static_cast<const T*>(in[0].data);
        const T* b = static_cast<const T*>(in[1].data);
        // --threads also bounds OpenBLAS's own pool (process-wide, nodes never run concurrently).
        if (ctx.threads >= 1 && openblas_get_num_threads() != ctx.threads)
            openblas_set_num_threads(ctx.threads);
        if (fold_) {
            gemm(false, tb_, static_cast<int>(batch_ * m_), static_cast<int>(n_),
                 static_cast<int>(k_), a, static_cast<int>(lda_), b, static_cast<int>(ldb_), c,
                 static_cast<int>(n_));
            return "";
        }
        std::array<int64_t, kMaxDims> idx;
        std::fill_n(idx.begin(), batch_rank_, int64_t{0});
        int64_t oa = 0, ob = 0;
        for (int64_t t = 0; t < batch_; ++t) {
            multiply(a + oa * mat_a_, b + ob * mat_b_, c + t * m_ * n_);
            for (int d = 0; d < batch_rank_; ++d) {
                oa += batch_sa_[d];
                ob += batch_sb_[d];
                if (++idx[d] < batch_size_[d]) break;
                oa -= batch_size_[d] * batch_sa_[d];
                ob -= batch_size_[d] * batch_sb_[d];
                idx[d] = 0;
            }
        }
        return "";
    }

  private:
    // One m x k by k x n product.
    void multiply(const T* a, const T* b, T* c) const {
        if (blas_ok_) {
            gemm(ta_, tb_, static_cast<int>(m_), static_cast<int>(n_), static_cast<int>(k_), a,
                 static_cast<int>(lda_), b, static_cast<int>(ldb_), c, static_cast<int>(n_));
            return;
        }
        // Dimensions beyond gemm's int arguments: a plain loop, accumulated in double.
        for (int64_t i = 0; i < m_; ++i)
            for (int64_t j = 0; j < n_; ++j) {
                double s = 0;
                for (int64_t p = 0; p < k_; ++p) {
                    const T x = ta_ ? a[p * lda_ + i] : a[i * lda_ + p];
                    const T y = tb_ ? b[j * ldb_ + p] : b[p * ldb_ + j];
                    s += static_cast<double>(x) * static_cast<double>(y);
                }
                c[i * n_ + j] = static_cast<T>(s);
            }
    }

    bool ta_ = false, tb_ = false, ok_ = true, fold_ = false, blas_ok_ = true;
    int64_t m_ = 0, n_ = 0, k_ = 0, lda_ = 1, ldb_ = 1, mat_a_ = 0, mat_b_ = 0, batch_ = 1;
    int batch_rank_ = 0;
    std::array<int64_t, kMaxDims> batch_size_{}, batch_sa_{}, batch_sb_{};
};

}  // namespace

std::unique_ptr<Kernel> make_matmul_kernel(const Graph& g, const Node& n) {
    select_openblas_core();
    if (n.inputs.size() == 2) {
        if (n.dtype == DType::F32) return std::make_unique<MatmulKernel<float>>(g, n);
        if (n.dtype == DType::F64) return std::make_unique<MatmulKernel<double>>(g, n);
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for matmul on ") +
                             dtype_name(n.dtype));
}

}  // namespace graphrun::kernels

namespace graphrun {

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
