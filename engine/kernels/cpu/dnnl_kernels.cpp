// oneDNN's conv and gemm (dnnl_kernels.h), where scripts/bench/dnnl_conv_bench.cpp
// measured them faster than ours: its JIT kernels are picked by the ISA the
// CPU reports (dnnl::get_effective_cpu_isa, shown by `graphrun devices`).
//   conv: NCHW in and out, as every other kernel reads and writes. A conv with
//     a window (3x3, 7x7, depthwise) runs blocked: the input reordered into
//     the layout oneDNN picks (nChw16c), its blocked conv, the output
//     reordered back, all three counted in the time it beat ours by; a 1x1
//     conv runs oneDNN's conv on NCHW directly (no reorders). The filter is
//     reordered once into the layout oneDNN picks (format_tag::any).
//   conv, channels-last: a conv that reads or writes a value the layout pass
//     (engine/plan/channels_last.h) holds NHWC runs its primitive on NHWC src
//     and dst (brgconv_1x1, brgconv, brdgmm_dw with AVX-512; jit_1x1 and jit_dw
//     with AVX2, whose windowed direct conv runs blocked instead, reordered from
//     and to NHWC, as it is faster so: see prepare), post-ops included, and
//     reorders only x, the residual or the output held NCHW, so a chain of
//     such convs converts once at each end. NHWC has NCHW's bytes. Such a
//     node has no fallback to our kernel (which reads NCHW) when the memory
//     limit has no room for its scratch: it fails with the out-of-memory error
//     (prepare runs the layout pass only without --memory-limit).
//   gemm: oneDNN's matmul with b packed once and c as its bias.
//   matmul by a constant 2-D b (a transformer's projections): the same,
//     a's batch folded into the rows; OpenBLAS's sgemm was 1.2x (128x256x768)
//     to 2x (GPT-2's 32-row products) slower, and its idle threads spin.
// Memory: a constant weight's packed copy is made at the kernel's first run
// from the session's scratch and held until the kernel ends, so it is counted
// as `workspace` for the session's life (check cannot predict its size: the
// layout is oneDNN's choice on this CPU). A weight that is not a constant is
// reordered on every run into the run's scratch. oneDNN's own scratchpad is
// user-managed (scratchpad_mode::user) and comes from the run's scratch, as
// do the reordered input and output; all of it is given back before run()
// returns; where the memory limit has no room for them, our kernel runs the
// node instead (it needs less: im2col shrinks its tiles). Threads: Debian's oneDNN runs on OpenMP; each run sets OpenMP's
// thread count on the executing thread to --threads, so oneDNN, OpenBLAS and
// the session's workers each use at most --threads and only one runs at a time.
// Post-ops: a fused node's epilogue (engine/ir/epilogue.h) is a
// dnnl::post_ops chain on the primitive's attr: the residual a `sum` (the
// output starts as the residual, reordered into the blocked output where the
// primitive writes one: a binary_add of an NCHW tensor onto a blocked output
// has only reference code), the activation an eltwise (relu, clip, gelu_erf,
// gelu_tanh, tanh, logistic), in that order, as our kernels apply them. Where
// oneDNN has only reference code for the chain, or runs it through its
// im2col + GEMM path (a 1x1 conv on NCHW), whose post-ops are slow, oneDNN
// runs the conv alone and our epilogue code (epilogue.h) follows over the
// output; where it has no fast code for the conv, our kernel runs it. A
// node with any attribute conv or gemm do not have declines.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#include <unordered_map>

#include "engine/base/thread_pool.h"
#include "engine/ir/conv_geometry.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/common/norm_plan.h"
#include "engine/kernels/cpu/dnnl_kernels.h"
#include "engine/kernels/cpu/epilogue.h"
#include "engine/kernels/cpu/winograd.h"

namespace graphrun::kernels {

namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;
using md = dnnl::memory::desc;

const dnnl::engine& cpu_engine() {
    static const dnnl::engine e(dnnl::engine::kind::cpu, 0);
    return e;
}

// OpenMP's threads for the primitives this thread runs next (its own setting).
void use_threads(int n) {
    if (omp_get_max_threads() != n) omp_set_num_threads(n);
}

// Whether every attribute of n is one of `allowed` (what the op has on main):
// anything else, a fused epilogue for one, is not ours to run.
bool only_attrs(const Node& n, std::initializer_list<std::string_view> allowed) {
    for (const NamedAttr& a : n.attrs)
        if (std::find(allowed.begin(), allowed.end(), a.name) == allowed.end()) return false;
    return true;
}

// The epilogue's activation as a post-op (none: nothing appended).
void append_activation(dnnl::post_ops& po, const Epilogue& e) {
    using alg = dnnl::algorithm;
    switch (e.act) {
        case Activation::None: return;
        case Activation::Relu: po.append_eltwise(1.0f, alg::eltwise_relu, 0.0f, 0.0f); return;
        case Activation::Clip:
            po.append_eltwise(1.0f, alg::eltwise_clip, static_cast<float>(e.lo), static_cast<float>(e.hi));
            return;
        case Activation::Gelu: po.append_eltwise(1.0f, alg::eltwise_gelu_erf, 0.0f, 0.0f); return;
        case Activation::GeluTanh: po.append_eltwise(1.0f, alg::eltwise_gelu_tanh, 0.0f, 0.0f); return;
        case Activation::Tanh: po.append_eltwise(1.0f, alg::eltwise_tanh, 0.0f, 0.0f); return;
        case Activation::Sigmoid: po.append_eltwise(1.0f, alg::eltwise_logistic, 0.0f, 0.0f); return;
    }
}

bool const_input(const Graph& g, const Node& n, size_t i) {
    const Node& s = g.node(n.inputs[i].id);
    return s.op == OpKind::Const && s.valid;
}

// GRAPHRUN_NO_DNNL set (to anything) in the environment: every node runs our
// kernels, to compare the two (scripts/bench/dnnl_conv_bench.cpp) or to rule oneDNN out.
bool dnnl_disabled() {
    static const bool off = std::getenv("GRAPHRUN_NO_DNNL") != nullptr;
    return off;
}

// Whether nChw8c costs half the width here: oneDNN 2.6 has AVX2 code only for
// that layout (jit_1x1:avx2, jit_dw:avx2), which an Intel core with AVX-512
// runs at half the rate of its AVX-512 code on NHWC (brgconv). On the 2-core
// Ice Lake Xeon of session 28, MobileNet-v2 (channels multiples of 8, not all
// of 16) nChw8c -> NHWC: batch 1 7.3-7.5 -> 6.0-6.5 ms, batch 16 106-128 ->
// 96-105 ms. AMD's Zen 4 executes a 512-bit operation as two 256-bit
// halves, so its AVX2 code is as fast, and there nChw8c was 1.3-2.6x faster
// than NHWC per conv (session 18). AVX-512 on any other vendor is taken as
// Intel's.
bool blocked8_is_half_width() {
    static const bool half = [] {
        using isa = dnnl::cpu_isa;
        const isa i = dnnl::get_effective_cpu_isa();
        if (i != isa::avx512_core && i != isa::avx512_core_vnni && i != isa::avx512_core_bf16 &&
            i != isa::avx512_core_amx)
            return false;
#if defined(__x86_64__) || defined(__i386__)
        unsigned a = 0, b = 0, c = 0, d = 0;
        if (!__get_cpuid(0, &a, &b, &c, &d)) return false;
        char vendor[13] = {};
        std::memcpy(vendor, &b, 4);
        std::memcpy(vendor + 4, &d, 4);
        std::memcpy(vendor + 8, &c, 4);
        return std::string_view(vendor) != "AuthenticAMD";
#else
        return false;
#endif
    }();
    return half;
}

// oneDNN's reference implementations are slower than ours.
bool fast_impl(const std::string& impl) { return impl.rfind("ref", 0) != 0; }

// A pre-packed weight's layout (Graph::prepacked): oneDNN 2's memory
// descriptor, a plain struct, as bytes.
md prepacked_md(const PrepackedWeight& w) {
    dnnl_memory_desc_t d;
    if (w.layout.size() != sizeof d) throw dnnl::error(dnnl_invalid_arguments, "a pre-packed weight's layout");
    std::memcpy(&d, w.layout.data(), sizeof d);
    return md(d);
}

// The constant `plain` (laid out as `user`) reordered into `packed`, as a
// pre-packed weight; nullopt where `plain` does not hold `user`'s bytes.
std::optional<PrepackedWeight> prepack(const std::vector<uint8_t>& plain, const md& user, const md& packed) {
    if (plain.size() != user.get_size()) return std::nullopt;
    PrepackedWeight w;
    w.size = packed.get_size();
    void* p = std::aligned_alloc(64, (w.size + 63) / 64 * 64);
    if (!p) return std::nullopt;
    w.bytes = std::shared_ptr<uint8_t>(static_cast<uint8_t*>(p), std::free);
    dnnl::stream strm(cpu_engine());
    dnnl::memory from(user, cpu_engine(), const_cast<uint8_t*>(plain.data())), to(packed, cpu_engine(), p);
    dnnl::reorder(from, to).execute(strm, from, to);
    strm.wait();
    w.layout.resize(sizeof(dnnl_memory_desc_t));
    std::memcpy(w.layout.data(), &packed.data, sizeof(dnnl_memory_desc_t));
    return w;
}

uint64_t aligned(uint64_t bytes) { return (bytes + 63) / 64 * 64; }

// One run's scratch from the session's ScratchMemory (workspace), carved into
// 64-byte aligned parts; given back when it goes out of scope.
class RunScratch {
  public:
    RunScratch(ScratchMemory* s, uint64_t bytes) : s_(s), bytes_(bytes) {
        if (s_ && bytes_) p_ = static_cast<char*>(s_->allocate(bytes_));
    }
    ~RunScratch() {
        if (p_) s_->release(p_, bytes_);
    }
    RunScratch(const RunScratch&) = delete;
    RunScratch& operator=(const RunScratch&) = delete;
    bool ok() const { return p_ || !bytes_; }
    // The next `bytes` of the buffer (nullptr for 0 bytes).
    void* take(uint64_t bytes) {
        if (!bytes) return nullptr;
        void* r = p_ + used_;
        used_ += aligned(bytes);
        return r;
    }

  private:
    ScratchMemory* s_;
    char* p_ = nullptr;
    uint64_t bytes_, used_ = 0;
};

std::string oom(const char* op, uint64_t bytes, const char* what) {
    return "out of memory: " + std::to_string(bytes) + " bytes of scratch for " + op + "'s " + what +
           " (workspace) exceed the memory limit";
}

// A constant weight in the layout a primitive wants: reordered at the first
// run and held, from the session's scratch (workspace), until the kernel ends.
class PackedWeight {
  public:
    PackedWeight() = default;
    PackedWeight(const PackedWeight&) = delete;
    PackedWeight& operator=(const PackedWeight&) = delete;
    ~PackedWeight() { release(); }
    void release() {
        if (p_) s_->release(p_, bytes_);
        p_ = nullptr;
        src_ = nullptr;
    }
    // The packed copy of `src`, made now unless it was made from src already;
    // nullptr when the memory limit has no room for it.
    void* get(ScratchMemory* s, const void* src, const md& user, const md& packed, dnnl::stream& strm) {
        if (p_ && src_ == src && s_ == s) return p_;
        release();
        s_ = s;
        bytes_ = packed.get_size();
        p_ = s_->allocate(bytes_);
        if (!p_) return nullptr;
        dnnl::memory from(user, cpu_engine(), const_cast<void*>(src)), to(packed, cpu_engine(), p_);
        dnnl::reorder(from, to).execute(strm, from, to);
        strm.wait();
        src_ = src;
        return p_;
    }

  private:
    ScratchMemory* s_ = nullptr;
    void* p_ = nullptr;
    uint64_t bytes_ = 0;
    const void* src_ = nullptr;
};

// Tells the session's workers that OpenMP's team ran a region just now (it
// spins for a while: a parallel job of ours that follows finds it awake).
void team_used(const KernelContext& ctx) {
    if (ctx.pool) ctx.pool->note_team_used();
}

// A oneDNN conv's run: nothing for an empty output, its scratch there, oneDNN's errors as messages.
template <class Run>
std::string guarded_conv_run(const TensorRef& out, const KernelContext& ctx, const char* what, const Run& run) {
    if (out.numel == 0) return "";
    if (!ctx.scratch) return "internal error: conv has no scratch memory";
    try {
        std::string error = run();
        team_used(ctx);
        return error;
    } catch (const dnnl::error& e) {
        return std::string(what) + e.what();
    }
}

// A matmul primitive made, again, when the run's threads differ from those it
// was made for (oneDNN sizes its blocking by OpenMP's threads when made; the
// packed b goes with it); OpenMP's threads set for the run.
template <class MakePd>
void ready_matmul(dnnl::matmul::primitive_desc& pd, dnnl::matmul& prim, int& made_for, PackedWeight& packed,
                  int threads, const MakePd& make) {
    if (!prim || threads != made_for) {
        use_threads(threads);
        pd = make();
        prim = dnnl::matmul(pd);
        made_for = threads;
        packed.release();
    }
    use_threads(threads);
}

// Whether the primitive `make` describes runs int8 products in oneDNN's fast
// code that sums them exactly: VNNI's or AMX's (without them, oneDNN's int8
// code halves the weights so that 16-bit partial sums cannot saturate).
template <class MakePd>
bool exact_int8_code(const MakePd& make) {
    try {
        const std::string impl = make().impl_info_str();
        return fast_impl(impl) && (impl.find("vnni") != std::string::npos || impl.find("amx") != std::string::npos);
    } catch (const dnnl::error&) {
        return false;
    }
}

// The layout a value is held in (Node::channels_last, channel_block).
tag value_tag(const Node& v) {
    if (!v.channels_last) return tag::nchw;
    return v.channel_block == 16 ? tag::nChw16c : v.channel_block == 8 ? tag::nChw8c : tag::nhwc;
}

class ConvKernel final : public KernelBase {
  public:
    // post_ops: a fused node's epilogue as oneDNN post-ops (else our code after the primitive).
    // block: the primitive on channels-last src and dst (the layout pass's
    // mode): NHWC (0), nChw8c (8) or nChw16c (16); -1: NCHW or oneDNN's pick.
    // x, the residual and the output are read and written in the layout the
    // layout pass gave each value (Node::channels_last, channel_block),
    // reordered where it differs.
    ConvKernel(const Graph& g, const Node& n, const WindowGeometry& geo, std::unique_ptr<Kernel> ours,
               bool post_ops = true, int block = -1)
        : KernelBase(g, n),
          g_(geo),
          const_w_(const_input(g, n, 1)),
          epilogue_(post_ops ? g.epilogue_of(n) : nullptr),
          after_(g, n),
          bias_((g.epilogue_of(n) ? g.epilogue_of(n)->own_inputs(n.inputs.size()) : n.inputs.size()) > 2),
          ours_(std::move(ours)) {
        const int64_t groups = g_.group;
        src_d_ = {g_.batch, g_.channels, g_.in[0], g_.in[1]};
        dst_d_ = {g_.batch, g_.out_channels, g_.out[0], g_.out[1]};
        w_user_ = groups == 1 ? md({g_.out_channels, g_.channels, g_.kernel[0], g_.kernel[1]}, dt::f32, tag::oihw)
                              : md({groups, g_.out_channels / groups, g_.channels / groups, g_.kernel[0],
                                    g_.kernel[1]},
                                   dt::f32, tag::goihw);
        if (const PrepackedWeight* w = const_w_ ? g.prepacked_weight(n.inputs[1].id) : nullptr) {
            w_user_ = prepacked_md(*w);
            prepacked_ = true;
        }
        blocked_ = g_.kernel_plane() > 1;
        cl_ = block >= 0;
        io_ = block == 16 ? tag::nChw16c : block == 8 ? tag::nChw8c : tag::nhwc;
        const Node& x = g.node(n.inputs[0].id);
        x_cl_ = x.channels_last;
        x_tag_ = value_tag(x);
        y_cl_ = n.channels_last;
        y_tag_ = value_tag(n);
        const Epilogue* e = g.epilogue_of(n);
        if (e && e->residual >= 0) {
            const Node& r = g.node(n.inputs[static_cast<size_t>(e->residual)].id);
            r_cl_ = r.channels_last;
            r_tag_ = value_tag(r);
        }
        choose_winograd(e);
    }

    // Whether oneDNN has a fast implementation for this conv (the factory asks once).
    bool supported() {
        try {
            return fast_impl(primitive_desc().impl_info_str());
        } catch (const dnnl::error&) {
            return false;
        }
    }
    // Whether that implementation is im2col + GEMM ("x64:gemm:jit", a 1x1 conv on
    // NCHW), whose post-ops run slower than our epilogue pass after it:
    // MobileNet-v2's 16->96 1x1 conv at 112x112 took 3.4 ms with a clip
    // post-op, 0.4 ms without.
    bool gemm_based() {
        try {
            return std::string_view(primitive_desc().impl_info_str()).find("gemm") != std::string_view::npos;
        } catch (const dnnl::error&) {
            return false;
        }
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (winograd_) return guarded_conv_run(out, ctx, "conv (oneDNN): ", [&] { return run_winograd(in, out, ctx); });
        return guarded_conv_run(out, ctx, "conv (oneDNN): ", [&] { return run_dnnl(in, out, ctx); });
    }

    // Whether this conv runs as F(4x4, 3x3) Winograd (winograd.h) instead of
    // oneDNN's primitive: a 3x3 conv of stride 1 and padding 1 whose x,
    // output and residual are all held in one channels-last layout (NHWC,
    // nChw8c or nChw16c), with a filter in OIHW (not
    // pre-packed: pack_weight keeps it so) and enough tiles for it to pay.
    bool winograd() const { return winograd_; }

  private:
    // e: the node's epilogue, which the Winograd conv applies only as post-ops would.
    void choose_winograd(const Epilogue* e) {
        const bool layout = cl_ && x_tag_ == io_ && y_tag_ == io_ &&
                            (!epilogue_ || epilogue_->residual < 0 || r_tag_ == io_);
        const bool geometry = g_.spatial == 2 && g_.group == 1 && g_.kernel[0] == 3 && g_.kernel[1] == 3 &&
                              g_.stride[0] == 1 && g_.stride[1] == 1 && g_.dilation[0] == 1 &&
                              g_.dilation[1] == 1 && g_.pad_begin[0] == 1 && g_.pad_begin[1] == 1 &&
                              g_.pad_end[0] == 1 && g_.pad_end[1] == 1;
        if (!layout || !geometry || prepacked_ || e != epilogue_) return;
        wino_.block = io_ == tag::nChw16c ? 16 : io_ == tag::nChw8c ? 8 : 0;
        wino_.batch = g_.batch;
        wino_.channels = g_.channels;
        wino_.height = g_.in[0];
        wino_.width = g_.in[1];
        wino_.out_channels = g_.out_channels;
        if (epilogue_) {
            wino_.act = epilogue_->act;
            wino_.lo = static_cast<float>(epilogue_->lo);
            wino_.hi = static_cast<float>(epilogue_->hi);
        }
        winograd_ = winograd_fits(wino_);
    }

    // The conv as Winograd's, its scratch the run's; where the memory limit
    // has no room for it, oneDNN's primitive (which may still fit).
    std::string run_winograd(const TensorRef* in, TensorRef& out, const KernelContext& ctx) {
        const int threads = std::max(1, ctx.threads);
        use_threads(threads);
        KernelContext c = ctx;
        c.threads = threads;
        const uint64_t bytes = winograd_scratch_bytes(wino_, threads);
        RunScratch scratch(ctx.scratch, bytes);
        if (!scratch.ok()) return run_dnnl(in, out, ctx);
        const float* residual = nullptr;
        if (epilogue_ && epilogue_->residual >= 0)
            residual = static_cast<const float*>(in[epilogue_->residual].data);
        winograd_conv3x3(wino_, static_cast<const float*>(in[0].data), static_cast<const float*>(in[1].data),
                         bias_ ? static_cast<const float*>(in[2].data) : nullptr, residual,
                         static_cast<float*>(out.data), scratch.take(bytes), c);
        return "";
    }

    // The primitive for `images` of the batch at a time (0: all of it).
    dnnl::convolution_forward::primitive_desc primitive_desc(int64_t images = 0) const {
        if (!cl_) return primitive_desc(blocked_ ? tag::any : tag::nchw, images);
        dnnl::convolution_forward::primitive_desc pd = primitive_desc(io_, images);
        // A chain's first conv, x in NCHW: a blocked conv's fast code may want
        // another src layout (with 3 channels, oneDNN's is for src in NCHW).
        if (io_ != tag::nhwc && !x_cl_ && !fast_impl(pd.impl_info_str())) {
            dnnl::convolution_forward::primitive_desc any = primitive_desc(tag::any, io_, images);
            if (fast_impl(any.impl_info_str())) return any;
        }
        return pd;
    }
    // src's and dst's dims with `images` for the batch (0: the whole batch).
    dims batch_of(const dims& d, int64_t images) const {
        dims r = d;
        if (images > 0) r[0] = images;
        return r;
    }
    // The primitive with src in layout src and dst in dst (tag::any: the one oneDNN picks).
    dnnl::convolution_forward::primitive_desc primitive_desc(tag src, tag dst, int64_t images) const {
        const dims w_dims = w_user_.dims();
        dnnl::convolution_forward::desc d(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
            md(batch_of(src_d_, images), dt::f32, src), md(w_dims, dt::f32, tag::any),
            bias_ ? md({g_.out_channels}, dt::f32, tag::x) : md(), md(batch_of(dst_d_, images), dt::f32, dst),
            {g_.stride[0], g_.stride[1]}, {g_.dilation[0] - 1, g_.dilation[1] - 1},
            {g_.pad_begin[0], g_.pad_begin[1]}, {g_.pad_end[0], g_.pad_end[1]});
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (epilogue_) {
            dnnl::post_ops po;
            if (epilogue_->residual >= 0) po.append_sum(1.0f);
            append_activation(po, *epilogue_);
            attr.set_post_ops(po);
        }
        return dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
    }
    dnnl::convolution_forward::primitive_desc primitive_desc(tag io, int64_t images) const {
        return primitive_desc(io, io, images);
    }

  public:
    // The constant filter in the layout this kernel reads it in with `threads`
    // threads, for the pre-pack pass; nullopt where it reads it as it is.
    std::optional<PrepackedWeight> pack_weight(const Graph& g, const Node& n, int threads) const {
        if (!const_w_ || prepacked_ || winograd_) return std::nullopt;
        use_threads(threads);
        const md packed = chosen_primitive_desc().weights_desc();
        if (packed == w_user_) return std::nullopt;
        return prepack(g.node(n.inputs[1].id).literal, w_user_, packed);
    }

  private:
    // The primitive this kernel runs, for OpenMP's threads as they are set
    // now, and how many images of the batch it takes at a time (`images`).
    // Where src or dst is reordered into oneDNN's layout and back, the
    // blocked copies are scratch of the run: over conv_chunk_bytes() they
    // would hold a whole activation twice (SqueezeNet's first conv at batch
    // 16: 50 MB, beside its output), so the batch goes through in slices
    // whose copies fit (images are independent in a conv, and each slice of
    // every layout here is contiguous).
    dnnl::convolution_forward::primitive_desc chosen_primitive_desc(int64_t* images = nullptr) const {
        const int64_t n = src_d_[0];
        dnnl::convolution_forward::primitive_desc pd = chosen_for(0);
        uint64_t copies = 0;
        if (pd.src_desc() != md(src_d_, dt::f32, x_tag_)) copies += pd.src_desc().get_size();
        if (pd.dst_desc() != md(dst_d_, dt::f32, y_tag_)) copies += pd.dst_desc().get_size();
        int64_t slice = n;
        const uint64_t most = conv_chunk_bytes();
        if (copies > most && n > 1) {
            slice = 1;  // the largest divisor of the batch whose copies fit, else one image
            for (int64_t d = n / 2; d > 1; --d)
                if (n % d == 0 && copies / static_cast<uint64_t>(n) * static_cast<uint64_t>(d) <= most) {
                    slice = d;
                    break;
                }
            pd = chosen_for(slice);
        }
        if (images) *images = slice;
        return pd;
    }
    dnnl::convolution_forward::primitive_desc chosen_for(int64_t images) const {
        dnnl::convolution_forward::primitive_desc pd = primitive_desc(images);
        if (cl_ && io_ == tag::nhwc && blocked_ && std::string_view(pd.impl_info_str()).rfind("jit:", 0) == 0) {
            // oneDNN's direct conv ("jit:avx2": what a windowed conv gets on NHWC
            // where the CPU has no AVX-512, so no brgconv) is written for its
            // blocked layout: on an AVX2 Zen 3, ResNet-18's 3x3 convs took 2.1 to
            // 2.9 ms each on NHWC, 1.65 to 1.8 ms blocked. The NHWC values are
            // reordered into that layout and back, as NCHW ones are.
            dnnl::convolution_forward::primitive_desc b = primitive_desc(tag::any, images);
            if (fast_impl(b.impl_info_str())) pd = b;
        }
        return pd;
    }

    // The primitive for `threads` (oneDNN sizes its blocking by OpenMP's threads when made).
    void prepare(int threads) {
        use_threads(threads);
        pd_ = chosen_primitive_desc(&images_);
        prim_ = dnnl::convolution_forward(pd_);
        threads_ = threads;
        packed_.release();  // the layout may differ with the threads
        const md src_user(batch_of(src_d_, images_), dt::f32, x_tag_), dst_user(batch_of(dst_d_, images_), dt::f32, y_tag_);
        src_ = dnnl::memory(src_user, cpu_engine(), DNNL_MEMORY_NONE);
        dst_ = dnnl::memory(dst_user, cpu_engine(), DNNL_MEMORY_NONE);
        reorder_src_ = pd_.src_desc() != src_user;
        reorder_dst_ = pd_.dst_desc() != dst_user;
        reorder_w_ = pd_.weights_desc() != w_user_;
        src_b_ = dnnl::memory(pd_.src_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        dst_b_ = dnnl::memory(pd_.dst_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        w_ = dnnl::memory(pd_.weights_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        bias_m_ = dnnl::memory(md({g_.out_channels}, dt::f32, tag::x), cpu_engine(), DNNL_MEMORY_NONE);
        scratchpad_ = dnnl::memory(pd_.scratchpad_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        if (reorder_src_) to_blocked_ = dnnl::reorder(src_, src_b_);
        if (reorder_dst_) from_blocked_ = dnnl::reorder(dst_b_, dst_);
        if (epilogue_ && epilogue_->residual >= 0) {
            // The residual in its own layout; copied into the primitive's output where that is the same.
            const md r_user(batch_of(dst_d_, images_), dt::f32, r_tag_);
            residual_ = dnnl::memory(r_user, cpu_engine(), DNNL_MEMORY_NONE);
            copy_residual_ = r_user == pd_.dst_desc();
            if (!copy_residual_) to_dst_b_ = dnnl::reorder(residual_, reorder_dst_ ? dst_b_ : dst_);
        }
    }

    std::string run_dnnl(const TensorRef* in, TensorRef& out, const KernelContext& ctx) {
        const int threads = std::max(1, ctx.threads);
        if (!prim_ || threads != threads_) prepare(threads);
        use_threads(threads);
        dnnl::stream strm(cpu_engine());
        void* w = in[1].data;
        if (reorder_w_ && const_w_) {
            w = packed_.get(ctx.scratch, in[1].data, w_user_, pd_.weights_desc(), strm);
            if (!w) return fall_back(in, out, ctx, oom("conv", pd_.weights_desc().get_size(), "packed filter"));
        }
        // This run's scratch: a non-constant filter's reordered copy, the blocked
        // input and output, and oneDNN's scratchpad.
        const uint64_t w_bytes = reorder_w_ && !const_w_ ? pd_.weights_desc().get_size() : 0;
        const uint64_t s_bytes = reorder_src_ ? pd_.src_desc().get_size() : 0;
        const uint64_t d_bytes = reorder_dst_ ? pd_.dst_desc().get_size() : 0;
        const uint64_t p_bytes = pd_.scratchpad_desc().get_size();
        const uint64_t total = aligned(w_bytes) + aligned(s_bytes) + aligned(d_bytes) + aligned(p_bytes);
        RunScratch scratch(ctx.scratch, total);
        if (!scratch.ok()) return fall_back(in, out, ctx, oom("conv", total, "blocked buffers and oneDNN scratchpad"));
        if (w_bytes) {
            void* copy = scratch.take(w_bytes);
            dnnl::memory from(w_user_, cpu_engine(), in[1].data), to(pd_.weights_desc(), cpu_engine(), copy);
            dnnl::reorder(from, to).execute(strm, from, to);
            w = copy;
        }
        w_.set_data_handle(w);
        if (reorder_src_) src_b_.set_data_handle(scratch.take(s_bytes));
        if (reorder_dst_) dst_b_.set_data_handle(scratch.take(d_bytes));
        scratchpad_.set_data_handle(p_bytes ? scratch.take(p_bytes) : nullptr);
        if (bias_) bias_m_.set_data_handle(in[2].data);
        // The batch, images_ at a time: each slice of x, the output and the
        // residual is contiguous in every layout here (the batch is outermost).
        const int64_t n = src_d_[0], slices = n / images_;
        const size_t x_step = static_cast<size_t>(in[0].numel / slices) * sizeof(float);
        const size_t y_step = static_cast<size_t>(out.numel / slices) * sizeof(float);
        for (int64_t k = 0; k < slices; ++k) {
            const size_t at = static_cast<size_t>(k);
            src_.set_data_handle(static_cast<char*>(in[0].data) + at * x_step);
            dst_.set_data_handle(static_cast<char*>(out.data) + at * y_step);
            if (reorder_src_) to_blocked_.execute(strm, src_, src_b_);
            std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, reorder_src_ ? src_b_ : src_},
                                                       {DNNL_ARG_WEIGHTS, w_},
                                                       {DNNL_ARG_DST, reorder_dst_ ? dst_b_ : dst_},
                                                       {DNNL_ARG_SCRATCHPAD, scratchpad_}};
            if (bias_) args.emplace(DNNL_ARG_BIAS, bias_m_);
            if (epilogue_ && epilogue_->residual >= 0) {  // the sum post-op adds onto what the output holds
                const char* r = static_cast<const char*>(in[epilogue_->residual].data) + at * y_step;
                dnnl::memory& d = reorder_dst_ ? dst_b_ : dst_;
                if (copy_residual_) {
                    strm.wait();  // the last slice's reorder out of d has run
                    std::memcpy(d.get_data_handle(), r, y_step);
                } else {
                    residual_.set_data_handle(const_cast<char*>(r));
                    to_dst_b_.execute(strm, residual_, d);
                }
            }
            prim_.execute(strm, args);
            if (reorder_dst_) from_blocked_.execute(strm, dst_b_, dst_);
        }
        strm.wait();
        if (!epilogue_) apply_epilogue(after_, in, out, out_shape_, ctx);  // no-op without an epilogue
        return "";
    }

    // No room for oneDNN's memory under the limit: our kernel runs the node
    // (im2col takes smaller tiles), or the error when there is none.
    // A node that reads or writes a channels-last value has none: our kernel reads and writes NCHW.
    // A pre-packed filter has none either: our kernel reads the filter as OIHW.
    std::string fall_back(const TensorRef* in, TensorRef& out, const KernelContext& ctx, std::string error) {
        if (!ours_ || x_cl_ || y_cl_ || r_cl_ || prepacked_) return error;
        return ours_->run(in, in_shapes_.size(), out, ctx);
    }

    WindowGeometry g_;
    bool const_w_;
    bool prepacked_ = false;  // the filter is Graph::prepacked's, in w_user_'s layout
    const Epilogue* epilogue_;  // a fused node's (the graph's) as post-ops, or nullptr
    EpilogueRun<float> after_;  // the epilogue when it is not post-ops (empty when the node has none)
    bool bias_, blocked_ = false;
    bool cl_ = false;                              // the primitive runs channels-last, in io_
    tag io_ = tag::nhwc;
    bool x_cl_ = false, y_cl_ = false, r_cl_ = false;  // x, the output, the residual held channels-last
    tag x_tag_ = tag::nchw, y_tag_ = tag::nchw, r_tag_ = tag::nchw;  // ... in these layouts
    bool copy_residual_ = false;                   // the residual is in the primitive's output layout
    bool winograd_ = false;                        // runs as Winograd's F(4x4, 3x3) (choose_winograd)
    WinogradConv wino_;
    std::unique_ptr<Kernel> ours_;
    dims src_d_, dst_d_;
    md w_user_;
    int threads_ = 0;
    dnnl::convolution_forward::primitive_desc pd_;
    dnnl::convolution_forward prim_;
    int64_t images_ = 1;  // of the batch per run of prim_ (chosen_primitive_desc)
    bool reorder_src_ = false, reorder_dst_ = false, reorder_w_ = false;
    dnnl::memory src_, dst_, src_b_, dst_b_, w_, bias_m_, scratchpad_;
    dnnl::reorder to_blocked_, from_blocked_;
    dnnl::memory residual_;  // a fused residual, and its reorder into the blocked output
    dnnl::reorder to_dst_b_;
    PackedWeight packed_;
};

// A product by a constant matrix b, packed once: gemm (its c a bias row), and
// matmul (numpy.matmul) of any a, whose batch folds into the rows. A fused
// epilogue's bias is oneDNN's bias, its residual a binary add and a relu or
// clip an eltwise post-op, in the order our kernels apply them (each an f32
// add or an exact op, so the bits are the unfused ops'). Another activation
// (gelu, tanh, sigmoid: ours round them from double) runs in our epilogue
// code after the plain product.
class MatmulKernel final : public KernelBase {
  public:
    // rows x k by k x cols (b given transposed: tb); bias: the input index of
    // a bias row of cols, or -1; post_ops: the node's epilogue as post-ops
    // (its bias then passed as `bias`), else ours after the product.
    MatmulKernel(const Graph& g, const Node& n, int64_t rows, int64_t k, int64_t cols, bool tb, int bias,
                 std::unique_ptr<Kernel> ours, bool post_ops)
        : KernelBase(g, n),
          epilogue_(post_ops ? g.epilogue_of(n) : nullptr),
          after_(g, n),
          ours_(std::move(ours)),
          cols_(cols),
          bias_(bias),
          op_(n.op == OpKind::Gemm ? "gemm" : "matmul") {
        a_ = md({rows, k}, dt::f32, tag::ab);
        b_user_ = md({k, cols}, dt::f32, tb ? tag::ba : tag::ab);
        y_ = md({rows, cols}, dt::f32, tag::ab);
        if (const PrepackedWeight* w = const_input(g, n, 1) ? g.prepacked_weight(n.inputs[1].id) : nullptr) {
            b_user_ = prepacked_md(*w);
            prepacked_ = true;
        }
    }

    // The constant b in the layout this kernel reads it in with `threads`
    // threads, for the pre-pack pass; nullopt where it reads it as it is.
    std::optional<PrepackedWeight> pack_weight(const Graph& g, const Node& n, int threads) const {
        if (prepacked_ || !const_input(g, n, 1)) return std::nullopt;
        use_threads(threads);
        const md packed = primitive_desc().weights_desc();
        if (packed == b_user_) return std::nullopt;
        return prepack(g.node(n.inputs[1].id).literal, b_user_, packed);
    }

    bool supported() {
        try {
            return fast_impl(primitive_desc().impl_info_str());
        } catch (const dnnl::error&) {
            return false;
        }
    }

    // Whether oneDNN would run the product as its plain gemm ("gemm:jit", the
    // AVX2 path: no brgemm below AVX-512) with a bias or an eltwise post-op,
    // which that path applies in a slow pass of its own: on an AVX2 EPYC a
    // 128x256 by 256x1024 product took 0.80 ms, 1.87 with a bias, 1.41 with a
    // relu post-op, 0.79 with a residual (binary) post-op. Our epilogue pass
    // after the plain product costs a fraction of that.
    bool slow_post_processing() const {
        const bool eltwise = epilogue_ && epilogue_->act != Activation::None;
        if (bias_ < 0 && !eltwise) return false;
        try {
            using isa = dnnl::cpu_isa;
            const isa i = dnnl::get_effective_cpu_isa();
            return std::string_view(primitive_desc().impl_info_str()) == "gemm:jit" &&
                   (i == isa::avx2 || i == isa::avx2_vnni || i == isa::avx || i == isa::sse41);
        } catch (const dnnl::error&) {
            return false;
        }
    }

    // The bias row `bias` (gemm's c, not the epilogue's) added by our code after
    // the product rather than by oneDNN, before the epilogue (oneDNN's order).
    void add_bias_after() {
        late_bias_ = bias_;
        bias_ = -1;
    }

    // Whether oneDNN wants b in another layout than it is given (packed once, held
    // as workspace): the blocked panels of AVX-512's kernels; AVX2's gemm:jit reads it as it is.
    bool packs_b() const {
        try {
            return primitive_desc().weights_desc() != b_user_;
        } catch (const dnnl::error&) {
            return false;
        }
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        if (out.numel == 0) return "";
        if (!ctx.scratch) return std::string("internal error: ") + op_ + " has no scratch memory";
        try {
            std::string error = run_dnnl(in, out, ctx);
            team_used(ctx);
            if (error.empty() && late_bias_ >= 0) add_bias_row(static_cast<const float*>(in[late_bias_].data), out, ctx);
            if (error.empty() && !epilogue_) apply_epilogue(after_, in, out, out_shape_, ctx);
            return error;
        } catch (const dnnl::error& e) {
            return std::string(op_) + " (oneDNN): " + e.what();
        }
    }

  private:
    dnnl::matmul::primitive_desc primitive_desc() const {
        dnnl::matmul::desc d(a_, md({b_user_.dims()[0], cols_}, dt::f32, tag::any),
                             bias_ >= 0 ? md({1, cols_}, dt::f32, tag::ab) : md(), y_);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (epilogue_) {
            dnnl::post_ops po;
            if (epilogue_->residual >= 0) po.append_binary(dnnl::algorithm::binary_add, y_);
            append_activation(po, *epilogue_);
            attr.set_post_ops(po);
        }
        return dnnl::matmul::primitive_desc(d, attr, cpu_engine());
    }

    std::string run_dnnl(const TensorRef* in, TensorRef& out, const KernelContext& ctx) {
        ready_matmul(pd_, prim_, threads_, packed_, std::max(1, ctx.threads), [&] { return primitive_desc(); });
        dnnl::stream strm(cpu_engine());
        void* b = in[1].data;
        if (pd_.weights_desc() != b_user_) {
            b = packed_.get(ctx.scratch, in[1].data, b_user_, pd_.weights_desc(), strm);
            if (!b) return fall_back(in, out, ctx, oom(op_, pd_.weights_desc().get_size(), "packed b"));
        }
        const uint64_t p_bytes = pd_.scratchpad_desc().get_size();
        RunScratch scratch(ctx.scratch, aligned(p_bytes));
        if (!scratch.ok()) return fall_back(in, out, ctx, oom(op_, p_bytes, "oneDNN scratchpad"));
        dnnl::memory a(a_, cpu_engine(), in[0].data), w(pd_.weights_desc(), cpu_engine(), b),
            y(y_, cpu_engine(), out.data), sp(pd_.scratchpad_desc(), cpu_engine(), scratch.take(p_bytes));
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, y}, {DNNL_ARG_SCRATCHPAD, sp}};
        if (bias_ >= 0)
            args.emplace(DNNL_ARG_BIAS, dnnl::memory(md({1, cols_}, dt::f32, tag::ab), cpu_engine(), in[bias_].data));
        if (epilogue_ && epilogue_->residual >= 0)
            args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1,
                         dnnl::memory(y_, cpu_engine(), in[epilogue_->residual].data));
        prim_.execute(strm, args);
        strm.wait();
        return "";
    }

    // No room for oneDNN's memory under the limit: our kernel (no scratch) runs the node,
    // unless b is pre-packed (ours reads it as given).
    std::string fall_back(const TensorRef* in, TensorRef& out, const KernelContext& ctx, std::string error) {
        if (!ours_ || prepacked_) return error;
        return ours_->run(in, in_shapes_.size(), out, ctx);
    }

    // out[r][j] += bias[j], an f32 add as oneDNN's bias and our gemm's c make it.
    void add_bias_row(const float* bias, TensorRef& out, const KernelContext& ctx) const {
        float* y = static_cast<float*>(out.data);
        const int64_t cols = cols_, rows = out.numel / cols_;
        parallel_for(
            ctx, rows, std::max<int64_t>(1, (int64_t{1} << 15) / cols),
            [=](int64_t r0, int64_t r1) {
                for (int64_t r = r0; r < r1; ++r) {
                    float* __restrict row = y + r * cols;
                    const float* __restrict b = bias;
                    for (int64_t j = 0; j < cols; ++j) row[j] = row[j] + b[j];
                }
            },
            (int64_t{1} << 19) / cols);
    }

    const Epilogue* epilogue_;  // a fused node's as bias and post-ops, or nullptr
    EpilogueRun<float> after_;  // the epilogue when it is not post-ops (empty when the node has none)
    std::unique_ptr<Kernel> ours_;
    int64_t cols_;
    int bias_;
    int late_bias_ = -1;  // a bias row ours adds after the product (add_bias_after), or -1
    bool prepacked_ = false;  // b is Graph::prepacked's, in b_user_'s layout
    const char* op_;  // in messages
    md a_, b_user_, y_;
    int threads_ = 0;
    dnnl::matmul::primitive_desc pd_;
    dnnl::matmul prim_;
    PackedWeight packed_;
};

const char* isa_text(dnnl::cpu_isa isa) {
    switch (isa) {
        case dnnl::cpu_isa::sse41:
            return "sse41";
        case dnnl::cpu_isa::avx:
            return "avx";
        case dnnl::cpu_isa::avx2:
            return "avx2";
        case dnnl::cpu_isa::avx2_vnni:
            return "avx2_vnni";
        case dnnl::cpu_isa::avx512_mic:
        case dnnl::cpu_isa::avx512_mic_4ops:
            return "avx512_mic";
        case dnnl::cpu_isa::avx512_core:
            return "avx512_core";
        case dnnl::cpu_isa::avx512_core_vnni:
            return "avx512_core_vnni";
        case dnnl::cpu_isa::avx512_core_bf16:
            return "avx512_core_bf16";
        case dnnl::cpu_isa::avx512_core_amx:
            return "avx512_core_amx";
        default:
            return "no JIT";
    }
}

}  // namespace

namespace {

// The geometry of a conv oneDNN may run, or nullopt.
// conv of 8-bit x minus its zero point by a constant i8 filter, f32 out
// (dnnl_kernels.h: make_dnnl_int8_kernel): oneDNN's int8 conv on NHWC,
// which is where it has fast code (on NCHW only its reference code, a thousand
// times slower); x is reordered into NHWC and the output back, in the run's
// scratch, and the filter packed once. The output scale is 1: each output is
// its s32 sum, converted to f32 once, exactly (the fusion pass bounds the
// sums below 2^24).
class Int8ConvKernel final : public KernelBase {
  public:
    Int8ConvKernel(const Graph& g, const Node& n, const WindowGeometry& geo) : KernelBase(g, n), g_(geo) {
        x_t_ = g.node(n.inputs[0].id).dtype == DType::U8 ? dt::u8 : dt::s8;
        if (const NamedAttr* a = n.find_attr("x_zero_point"); a && a->value.kind == Attr::Kind::Number)
            zp_ = static_cast<int32_t>(a->value.i);
        const int64_t groups = g_.group;
        src_d_ = {g_.batch, g_.channels, g_.in[0], g_.in[1]};
        dst_d_ = {g_.batch, g_.out_channels, g_.out[0], g_.out[1]};
        w_user_ = groups == 1 ? md({g_.out_channels, g_.channels, g_.kernel[0], g_.kernel[1]}, dt::s8, tag::oihw)
                              : md({groups, g_.out_channels / groups, g_.channels / groups, g_.kernel[0],
                                    g_.kernel[1]},
                                   dt::s8, tag::goihw);
    }

    // Whether oneDNN sums it exactly in fast code: VNNI's or AMX's int8 products.
    bool supported() const {
        return exact_int8_code([&] { return primitive_desc(); });
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        return guarded_conv_run(out, ctx, "conv (oneDNN int8): ", [&] { return run_dnnl(in, out, ctx); });
    }

  private:
    dnnl::convolution_forward::primitive_desc primitive_desc() const {
        dnnl::convolution_forward::desc d(
            dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, md(src_d_, x_t_, tag::nhwc),
            md(w_user_.dims(), dt::s8, tag::any), md(), md(dst_d_, dt::f32, tag::nhwc), {g_.stride[0], g_.stride[1]},
            {g_.dilation[0] - 1, g_.dilation[1] - 1}, {g_.pad_begin[0], g_.pad_begin[1]},
            {g_.pad_end[0], g_.pad_end[1]});
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (zp_ != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
        return dnnl::convolution_forward::primitive_desc(d, attr, cpu_engine());
    }

    void prepare(int threads) {
        use_threads(threads);
        pd_ = primitive_desc();
        prim_ = dnnl::convolution_forward(pd_);
        threads_ = threads;
        packed_.release();
        src_ = dnnl::memory(md(src_d_, x_t_, tag::nchw), cpu_engine(), DNNL_MEMORY_NONE);
        dst_ = dnnl::memory(md(dst_d_, dt::f32, tag::nchw), cpu_engine(), DNNL_MEMORY_NONE);
        src_b_ = dnnl::memory(pd_.src_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        dst_b_ = dnnl::memory(pd_.dst_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        w_ = dnnl::memory(pd_.weights_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        scratchpad_ = dnnl::memory(pd_.scratchpad_desc(), cpu_engine(), DNNL_MEMORY_NONE);
        zp_m_ = dnnl::memory(md({1}, dt::s32, tag::x), cpu_engine(), &zp_);
        to_nhwc_ = dnnl::reorder(src_, src_b_);
        to_nchw_ = dnnl::reorder(dst_b_, dst_);
    }

    std::string run_dnnl(const TensorRef* in, TensorRef& out, const KernelContext& ctx) {
        const int threads = std::max(1, ctx.threads);
        if (!prim_ || threads != threads_) prepare(threads);
        use_threads(threads);
        dnnl::stream strm(cpu_engine());
        void* w = packed_.get(ctx.scratch, in[1].data, w_user_, pd_.weights_desc(), strm);
        if (!w) return oom("conv", pd_.weights_desc().get_size(), "packed int8 filter");
        const uint64_t s_bytes = pd_.src_desc().get_size(), d_bytes = pd_.dst_desc().get_size();
        const uint64_t p_bytes = pd_.scratchpad_desc().get_size();
        const uint64_t total = aligned(s_bytes) + aligned(d_bytes) + aligned(p_bytes);
        RunScratch scratch(ctx.scratch, total);
        if (!scratch.ok()) return oom("conv", total, "NHWC buffers and oneDNN scratchpad");
        w_.set_data_handle(w);
        src_.set_data_handle(in[0].data);
        dst_.set_data_handle(out.data);
        src_b_.set_data_handle(scratch.take(s_bytes));
        dst_b_.set_data_handle(scratch.take(d_bytes));
        scratchpad_.set_data_handle(p_bytes ? scratch.take(p_bytes) : nullptr);
        to_nhwc_.execute(strm, src_, src_b_);
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, src_b_}, {DNNL_ARG_WEIGHTS, w_}, {DNNL_ARG_DST, dst_b_}, {DNNL_ARG_SCRATCHPAD, scratchpad_}};
        if (zp_ != 0) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, zp_m_);
        prim_.execute(strm, args);
        to_nchw_.execute(strm, dst_b_, dst_);
        strm.wait();
        return "";
    }

    WindowGeometry g_;
    dt x_t_ = dt::u8;
    int32_t zp_ = 0;
    dims src_d_, dst_d_;
    md w_user_;
    int threads_ = 0;
    dnnl::convolution_forward::primitive_desc pd_;
    dnnl::convolution_forward prim_;
    dnnl::memory src_, dst_, src_b_, dst_b_, w_, scratchpad_, zp_m_;
    dnnl::reorder to_nhwc_, to_nchw_;
    PackedWeight packed_;
};

// The geometry of an int8 conv (Int8ConvKernel), or nullopt where n is none.
std::optional<WindowGeometry> int8_conv_geometry(const Graph& g, const Node& n) {
    if (dnnl_disabled() || n.op != OpKind::Conv || n.dtype != DType::F32 || n.inputs.size() != 2 ||
        n.shape.size() != 4 || !only_attrs(n, {"strides", "pads", "dilations", "group", "auto_pad", "x_zero_point"}))
        return std::nullopt;
    const Node& x = g.node(n.inputs[0].id);
    const Node& w = g.node(n.inputs[1].id);
    if ((x.dtype != DType::U8 && x.dtype != DType::I8) || w.dtype != DType::I8 || !const_input(g, n, 1) ||
        x.shape.size() != 4)
        return std::nullopt;
    std::optional<WindowGeometry> geo = window_geometry(n, x.shape, &w.shape, nullptr);
    if (!geo || geo->global || checked_numel(n.shape).value_or(0) == 0 || geo->channels == 0) return std::nullopt;
    return geo;
}

std::optional<WindowGeometry> dnnl_conv_geometry(const Graph& g, const Node& n) {
    // A fused node's inputs: x, w, [bias], then its epilogue's residual (a conv's epilogue has no bias).
    const Epilogue* e = g.epilogue_of(n);
    const size_t own = e ? e->own_inputs(n.inputs.size()) : n.inputs.size();
    const size_t extra = e && e->residual >= 0 ? 1 : 0;
    if (dnnl_disabled() || n.op != OpKind::Conv || n.dtype != DType::F32 || own < 2 || own > 3 ||
        (e && e->bias >= 0) || n.inputs.size() != own + extra ||
        !only_attrs(n, {"strides", "pads", "dilations", "group", "auto_pad"}))
        return std::nullopt;
    const Shape& x = g.node(n.inputs[0].id).shape;
    const Shape& w = g.node(n.inputs[1].id).shape;
    std::optional<WindowGeometry> geo = window_geometry(n, x, &w, nullptr);
    if (!geo || geo->global || checked_numel(n.shape).value_or(0) == 0 || geo->channels == 0)
        return std::nullopt;
    return geo;
}

// gemm's or matmul's product by a constant b in oneDNN (MatmulKernel), the
// epilogue as post-ops where they keep the unfused ops' bits and oneDNN has
// fast code for them, else ours after the product; nullptr where oneDNN has
// no fast code at all. bias: gemm's c, or the epilogue's bias, as an input index.
std::unique_ptr<Kernel> make_product(const Graph& g, const Node& n, int64_t rows, int64_t k, int64_t cols, bool tb,
                                     int bias, OwnKernelFactory ours) {
    const Epilogue* e = g.epilogue_of(n);
    bool late_bias = false;  // gemm's c added by ours after the product
    if (!e || e->act == Activation::None || e->act == Activation::Relu || e->act == Activation::Clip) {
        auto kernel = std::make_unique<MatmulKernel>(g, n, rows, k, cols, tb, bias, ours ? ours(g, n) : nullptr, true);
        if (!kernel->supported()) {
            if (!e) return nullptr;
        } else if (!kernel->slow_post_processing()) {
            return kernel;
        } else {
            late_bias = true;
        }
    }
    // The product (and gemm's own c) in oneDNN, the epilogue ours after it.
    const int own_bias = e && e->bias >= 0 && bias == e->bias ? -1 : bias;
    auto kernel = std::make_unique<MatmulKernel>(g, n, rows, k, cols, tb, own_bias, ours ? ours(g, n) : nullptr,
                                                 false);
    if (late_bias || kernel->slow_post_processing()) kernel->add_bias_after();
    return kernel->supported() ? std::move(kernel) : nullptr;
}

}  // namespace

bool dnnl_conv_runs_channels_last(const Graph& g, const Node& n, int block) {
    std::optional<WindowGeometry> geo = dnnl_conv_geometry(g, n);
    if (!geo || n.shape.size() != 4) return false;
    if (block == 8 && blocked8_is_half_width()) return false;  // NHWC's AVX-512 code is faster
    // MobileNet-v2 on NHWC: a 1x1 conv is brgconv_1x1 (0.05 to 0.2 ms, its post-ops
    // as fast), where NCHW has only the im2col + GEMM path; a depthwise conv brdgmm_dw.
    ConvKernel k(g, n, *geo, nullptr, true, block);
    return k.supported() && !k.gemm_based();
}

bool dnnl_conv_runs_winograd(const Graph& g, const Node& n) {
    if (!n.channels_last) return false;  // its output is channels-last, as x's must be
    std::unique_ptr<Kernel> k = make_dnnl_conv_kernel(g, n, nullptr);
    const auto* conv = dynamic_cast<const ConvKernel*>(k.get());
    return conv && conv->winograd();
}

int dnnl_free_op_block() {
    if (dnnl_disabled()) return 0;
    using isa = dnnl::cpu_isa;
    const isa i = dnnl::get_effective_cpu_isa();
    return i == isa::avx2 || i == isa::avx2_vnni ? 8 : 0;
}

std::unique_ptr<Kernel> make_dnnl_conv_kernel(const Graph& g, const Node& n, OwnKernelFactory ours) {
    std::optional<WindowGeometry> geo = dnnl_conv_geometry(g, n);
    if (!geo) return nullptr;
    const Epilogue* e = g.epilogue_of(n);
    // A node next to a channels-last value runs channels-last, in the layout the
    // layout pass chose for them all, as it asked of it (dnnl_conv_runs_channels_last):
    // nothing else reads that layout.
    int block = -1;
    for (const Node* v : {&n, &g.node(n.inputs[0].id),
                          e && e->residual >= 0 ? &g.node(n.inputs[static_cast<size_t>(e->residual)].id) : nullptr})
        if (v && v->channels_last) block = v->channel_block;
    if (block >= 0) return std::make_unique<ConvKernel>(g, n, *geo, ours ? ours(g, n) : nullptr, true, block);
    auto k = std::make_unique<ConvKernel>(g, n, *geo, ours ? ours(g, n) : nullptr);
    if (!e) return k->supported() ? std::move(k) : nullptr;
    if (k->supported() && !k->gemm_based()) return k;
    // The conv in oneDNN, the epilogue ours after it.
    k = std::make_unique<ConvKernel>(g, n, *geo, ours ? ours(g, n) : nullptr, false);
    if (!k->supported()) return nullptr;
    return k;
}

// a (8-bit, its zero point the x_zero_point attribute; its batch folded into
// the rows) by a constant 2-D i8 b, f32 out: oneDNN's int8 matmul, b packed
// once; each output its s32 sum converted to f32 once (dnnl_kernels.h).
class Int8MatmulKernel final : public KernelBase {
  public:
    Int8MatmulKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        const Shape& a = g.node(n.inputs[0].id).shape;
        const Shape& b = g.node(n.inputs[1].id).shape;
        x_t_ = g.node(n.inputs[0].id).dtype == DType::U8 ? dt::u8 : dt::s8;
        if (const NamedAttr* z = n.find_attr("x_zero_point"); z && z->value.kind == Attr::Kind::Number)
            zp_ = static_cast<int32_t>(z->value.i);
        k_ = b[0];
        cols_ = b[1];
        rows_ = k_ > 0 ? checked_numel(a).value_or(0) / k_ : 0;
        b_user_ = md({k_, cols_}, dt::s8, tag::ab);
    }

    bool supported() const {
        return rows_ > 0 && k_ > 0 && cols_ > 0 && exact_int8_code([&] { return primitive_desc(); });
    }

    std::string compute(const TensorRef* in, TensorRef& out, const KernelContext& ctx) override {
        return guarded_conv_run(out, ctx, "matmul (oneDNN int8): ", [&] { return run_dnnl(in, out, ctx); });
    }

  private:
    dnnl::matmul::primitive_desc primitive_desc() const {
        dnnl::matmul::desc d(md({rows_, k_}, x_t_, tag::ab), md({k_, cols_}, dt::s8, tag::any),
                             md({rows_, cols_}, dt::f32, tag::ab));
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        if (zp_ != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
        return dnnl::matmul::primitive_desc(d, attr, cpu_engine());
    }

    std::string run_dnnl(const TensorRef* in, TensorRef& out, const KernelContext& ctx) {
        ready_matmul(pd_, prim_, threads_, packed_, std::max(1, ctx.threads), [&] { return primitive_desc(); });
        dnnl::stream strm(cpu_engine());
        void* w = in[1].data;
        if (pd_.weights_desc() != b_user_) {
            w = packed_.get(ctx.scratch, in[1].data, b_user_, pd_.weights_desc(), strm);
            if (!w) return oom("matmul", pd_.weights_desc().get_size(), "packed int8 b");
        }
        const uint64_t p_bytes = pd_.scratchpad_desc().get_size();
        RunScratch scratch(ctx.scratch, aligned(p_bytes));
        if (!scratch.ok()) return oom("matmul", p_bytes, "oneDNN scratchpad");
        int32_t zp = zp_;
        std::unordered_map<int, dnnl::memory> args{
            {DNNL_ARG_SRC, dnnl::memory(pd_.src_desc(), cpu_engine(), const_cast<void*>(in[0].data))},
            {DNNL_ARG_WEIGHTS, dnnl::memory(pd_.weights_desc(), cpu_engine(), w)},
            {DNNL_ARG_DST, dnnl::memory(pd_.dst_desc(), cpu_engine(), out.data)},
            {DNNL_ARG_SCRATCHPAD,
             dnnl::memory(pd_.scratchpad_desc(), cpu_engine(), p_bytes ? scratch.take(p_bytes) : nullptr)}};
        if (zp_ != 0) args.emplace(DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC, dnnl::memory(md({1}, dt::s32, tag::x), cpu_engine(), &zp));
        prim_.execute(strm, args);
        strm.wait();
        return "";
    }

    dt x_t_ = dt::u8;
    int32_t zp_ = 0;
    int64_t rows_ = 0, k_ = 0, cols_ = 0;
    md b_user_;
    int threads_ = 0;
    dnnl::matmul::primitive_desc pd_;
    dnnl::matmul prim_;
    PackedWeight packed_;
};

// Whether n is the fusion pass's int8 matmul: a (8-bit, rank 2 or more) by a
// constant 2-D i8 b, f32 out, no transposes.
bool int8_matmul_shape(const Graph& g, const Node& n) {
    if (dnnl_disabled() || n.op != OpKind::Matmul || n.dtype != DType::F32 || n.inputs.size() != 2 ||
        !only_attrs(n, {"x_zero_point"}))
        return false;
    const Node& a = g.node(n.inputs[0].id);
    const Node& b = g.node(n.inputs[1].id);
    return (a.dtype == DType::U8 || a.dtype == DType::I8) && b.dtype == DType::I8 && const_input(g, n, 1) &&
           a.shape.size() >= 2 && b.shape.size() == 2 && a.shape.back() == b.shape[0] &&
           checked_numel(n.shape).value_or(0) > 0;
}

bool dnnl_int8_runs(const Graph& g, const Node& n) {
    if (n.op == OpKind::Matmul) return int8_matmul_shape(g, n) && Int8MatmulKernel(g, n).supported();
    std::optional<WindowGeometry> geo = int8_conv_geometry(g, n);
    return geo && Int8ConvKernel(g, n, *geo).supported();
}

std::unique_ptr<Kernel> make_dnnl_int8_kernel(const Graph& g, const Node& n) {
    if (n.op == OpKind::Matmul) {
        if (!int8_matmul_shape(g, n)) return nullptr;
        auto k = std::make_unique<Int8MatmulKernel>(g, n);
        return k->supported() ? std::move(k) : nullptr;
    }
    std::optional<WindowGeometry> geo = int8_conv_geometry(g, n);
    if (!geo) return nullptr;
    auto k = std::make_unique<Int8ConvKernel>(g, n, *geo);
    return k->supported() ? std::move(k) : nullptr;
}

std::unique_ptr<Kernel> make_dnnl_gemm_kernel(const Graph& g, const Node& n, OwnKernelFactory ours) {
    const Epilogue* e = g.epilogue_of(n);
    if (dnnl_disabled() || n.op != OpKind::Gemm || n.dtype != DType::F32 || n.inputs.size() < 2 || n.inputs.size() > 3 ||
        (e && (e->bias >= 0 || e->residual >= 0)) ||
        !only_attrs(n, {"alpha", "beta", "transpose_a", "transpose_b"}) || !const_input(g, n, 1))
        return nullptr;
    InputShapes shapes;
    for (const Input& i : n.inputs) shapes.push_back(g.node(i.id).shape);
    std::optional<GemmPlan> p = gemm_plan(n, shapes);
    // alpha 1, a not transposed, c (if read) a row of n biases; k > 0 and a non-empty output.
    if (!p || p->ta || p->alpha != 1 || p->m == 0 || p->n == 0 || p->k == 0) return nullptr;
    if (p->has_c && (p->beta != 1 || p->c_sm != 0 || p->c_sn != 1)) return nullptr;
    if (n.inputs.size() > 2 && !p->has_c) return nullptr;  // beta 0: c ignored, not worth a case
    return make_product(g, n, p->m, p->k, p->n, p->tb, p->has_c ? 2 : -1, ours);
}

std::unique_ptr<Kernel> make_dnnl_matmul_kernel(const Graph& g, const Node& n, OwnKernelFactory ours) {
    const Epilogue* e = g.epilogue_of(n);
    const size_t own = e ? e->own_inputs(n.inputs.size()) : n.inputs.size();
    if (dnnl_disabled() || n.op != OpKind::Matmul || n.dtype != DType::F32 || own != 2 ||
        !only_attrs(n, {"transpose_a", "transpose_b"}) || !const_input(g, n, 1))
        return nullptr;
    const Shape& a = g.node(n.inputs[0].id).shape;
    const Shape& b = g.node(n.inputs[1].id).shape;
    if (a.size() < 2 || b.size() != 2) return nullptr;  // a 1-D operand drops a dimension: ours
    std::optional<MatmulPlan> p = matmul_plan(n, a, b, checked_numel(n.shape).value_or(-1));
    if (!p || p->ta || p->m == 0 || p->n == 0 || p->k == 0) return nullptr;
    // a's batch folds into the rows
    return make_product(g, n, p->batch * p->m, p->k, p->n, p->tb, e && e->bias >= 0 ? e->bias : -1, ours);
}

bool dnnl_packs_weight(const Graph& g, const Node& n) {
    std::unique_ptr<Kernel> k = n.op == OpKind::Gemm ? make_dnnl_gemm_kernel(g, n, nullptr)
                                                     : make_dnnl_matmul_kernel(g, n, nullptr);
    const auto* m = dynamic_cast<const MatmulKernel*>(k.get());
    return m && m->packs_b();
}

std::optional<PrepackedWeight> dnnl_pack_weight(const Graph& g, const Node& n, int threads) {
    // Int8 convs and matmuls (8-bit x) keep their own packing.
    if (n.inputs.size() < 2 || n.inputs[0].id < 0 || g.node(n.inputs[0].id).dtype != n.dtype) return std::nullopt;
    try {
        // The factory sees the threads the session's does (it sets them before making its kernels).
        use_threads(threads);
        std::unique_ptr<Kernel> k;
        if (n.op == OpKind::Conv) k = make_dnnl_conv_kernel(g, n, nullptr);
        else if (n.op == OpKind::Gemm) k = make_dnnl_gemm_kernel(g, n, nullptr);
        else if (n.op == OpKind::Matmul) k = make_dnnl_matmul_kernel(g, n, nullptr);
        if (const auto* c = dynamic_cast<const ConvKernel*>(k.get())) return c->pack_weight(g, n, threads);
        if (const auto* m = dynamic_cast<const MatmulKernel*>(k.get())) return m->pack_weight(g, n, threads);
    } catch (const dnnl::error&) {
        // oneDNN cannot make it here: the kernel packs at its first run, as without the pass.
    }
    return std::nullopt;
}

std::string dnnl_text() {
    const dnnl_version_t* v = dnnl_version();
    return "oneDNN " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch) +
           " (" + isa_text(dnnl::get_effective_cpu_isa()) + ")";
}

namespace {
std::atomic<uint64_t> chunk_bytes{uint64_t{8} << 20};
}  // namespace

uint64_t conv_chunk_bytes() { return chunk_bytes.load(std::memory_order_relaxed); }
void set_conv_chunk_bytes(uint64_t bytes) { chunk_bytes.store(bytes, std::memory_order_relaxed); }

}  // namespace graphrun::kernels
