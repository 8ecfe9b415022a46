// Creation kernels: const (the validated literal), zeros, ones, fill, range
// (numpy.arange) and the Philox streams of random_uniform and random_normal.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/kernel_families.h"
#include "engine/kernels/cpu/parallel.h"
#include "engine/kernels/common/philox.h"

namespace graphrun::kernels {

namespace {

constexpr int64_t kFillGrain = int64_t{1} << 16;
constexpr int64_t kRandomGrain = int64_t{1} << 14;

// A scalar as the dtype stores it, converted the way validation encodes const
// literals (an integer written as such converts directly, not through double).
template <class T>
T convert_scalar(const ScalarAttr& s) {
    if constexpr (std::is_same_v<T, uint8_t>) {
        return s.is_bool ? s.b : s.as_double() != 0;
    } else if constexpr (std::is_floating_point_v<T>) {
        if (s.is_bool) return s.b ? T(1) : T(0);
        return s.is_int ? static_cast<T>(s.i) : static_cast<T>(s.f);
    } else {
        return static_cast<T>(s.as_int());  // validation checked it is integral and in range
    }
}

// const: the node's literal, copied into the output buffer each pass (the
// graph outlives the session, so that a model's weights are held once on the
// host, not twice: ResNet-18, 46.8 MB less). input: the run's feed, which the
// executor hands over with set_feed before the run (it never enters the graph).
class ConstKernel final : public KernelBase {
  public:
    ConstKernel(const Graph& g, const Node& n)
        : KernelBase(g, n), input_(n.op == OpKind::Input), name_(n.display()),
          data_(input_ ? nullptr : n.literal.data()), bytes_(input_ ? 0 : n.literal.size()) {}

    std::string set_feed(const void* data, uint64_t bytes) override {
        if (!input_) return KernelBase::set_feed(data, bytes);
        data_ = static_cast<const uint8_t*>(data);
        bytes_ = bytes;
        fed_ = true;
        return "";
    }

    std::string compute(const TensorRef*, TensorRef& out, const KernelContext& ctx) override {
        const size_t bytes = static_cast<size_t>(out.numel) * dtype_size(out.dtype);
        if (input_ && !fed_) return "input '" + name_ + "' has no value (no feed was given for it)";
        if (bytes_ != bytes)
            return std::string(input_ ? "internal error: input has " : "internal error: const literal has ") +
                   std::to_string(bytes_) + " bytes, expected " + std::to_string(bytes);
        // A feed is read once a pass, from memory no cache holds any more: in
        // pieces of 1 MiB over the workers (SqueezeNet's 9.6 MB batch of 16
        // images: 0.94 ms on one core).
        auto* o = static_cast<uint8_t*>(out.data);
        const uint8_t* d = data_;
        parallel_for(ctx, static_cast<int64_t>(bytes), kCopyGrain, [o, d](int64_t lo, int64_t hi) {
            std::memcpy(o + lo, d + lo, static_cast<size_t>(hi - lo));
        });
        return "";
    }
    static constexpr int64_t kCopyGrain = int64_t{1} << 20;

  private:
    bool input_;
    bool fed_ = false;
    std::string name_;
    const uint8_t* data_;
    uint64_t bytes_;
};

// zeros, ones, fill: one value repeated.
class FillKernel final : public KernelBase {
  public:
    FillKernel(const Graph& g, const Node& n, const ScalarAttr& value) : KernelBase(g, n) {
        dispatch_dtype(n.dtype, [&](auto tag) {
            using T = decltype(tag);
            const T v = convert_scalar<T>(value);
            std::memcpy(value_, &v, sizeof v);
        });
    }

    std::string compute(const TensorRef*, TensorRef& out, const KernelContext& ctx) override {
        dispatch_dtype(out.dtype, [&](auto tag) {
            using T = decltype(tag);
            T v;
            std::memcpy(&v, value_, sizeof v);
            T* o = static_cast<T*>(out.data);
            parallel_for(ctx, out.numel, kFillGrain, [o, v](int64_t lo, int64_t hi) {
                T* __restrict p = o + lo;
                blocked_loop(hi - lo, [p, v](int64_t i) { p[i] = v; });
            });
        });
        return "";
    }

  private:
    alignas(8) unsigned char value_[8] = {};
};

class RangeKernel final : public KernelBase {
  public:
    RangeKernel(const Graph& g, const Node& n) : KernelBase(g, n) {
        ScalarAttr zero, one;
        zero.is_int = one.is_int = true;
        one.i = 1;
        one.f = 1;
        const ScalarAttr start = scalar_attr(n, "start").value_or(zero);
        const ScalarAttr delta = scalar_attr(n, "delta").value_or(one);
        start_f_ = start.as_double();
        delta_f_ = delta.as_double();
        start_i_ = start.as_int();
        delta_i_ = delta.as_int();
    }

    std::string compute(const TensorRef*, TensorRef& out, const KernelContext&) override {
        dispatch_dtype(out.dtype, [&](auto tag) {
            using T = decltype(tag);
            T* o = static_cast<T*>(out.data);
            if constexpr (std::is_floating_point_v<T>) {
                for (int64_t i = 0; i < out.numel; ++i)
                    o[i] = static_cast<T>(start_f_ + static_cast<double>(i) * delta_f_);
            } else {
                // Exact: every element lies between start and limit, so it fits;
                // unsigned arithmetic keeps the intermediate free of overflow UB.
                const auto s = static_cast<uint64_t>(start_i_), d = static_cast<uint64_t>(delta_i_);
                for (int64_t i = 0; i < out.numel; ++i)
                    o[i] = static_cast<T>(static_cast<int64_t>(s + static_cast<uint64_t>(i) * d));
            }
        });
        return "";
    }

  private:
    double start_f_ = 0, delta_f_ = 1;
    int64_t start_i_ = 0, delta_i_ = 1;
};

// random_uniform and random_normal; the stream is defined in philox.h.
class RandomKernel final : public KernelBase {
  public:
    RandomKernel(const Graph& g, const Node& n)
        : KernelBase(g, n), normal_(n.op == OpKind::RandomNormal) {
        key_ = philox::seed_key(static_cast<uint64_t>(int_attr(n, "seed", 0)));
        a_ = scalar_attr(n, normal_ ? "mean" : "low").value_or(ScalarAttr{}).as_double();
        ScalarAttr one;
        one.f = 1;
        b_ = scalar_attr(n, normal_ ? "stddev" : "high").value_or(one).as_double();
    }

    std::string compute(const TensorRef*, TensorRef& out, const KernelContext& ctx) override {
        if (out.dtype == DType::F32)
            fill(static_cast<float*>(out.data), out.numel, ctx);
        else if (out.dtype == DType::F64)
            fill(static_cast<double*>(out.data), out.numel, ctx);
        else
            return std::string("internal error: ") + op_name(op_) + " on " + dtype_name(out.dtype);
        return "";
    }

  private:
    template <class T>
    void fill(T* o, int64_t n, const KernelContext& ctx) const {
        const philox::Key key = key_;
        if (normal_) {
            const double mean = a_, stddev = b_;
            parallel_for(ctx, n, kRandomGrain, [=](int64_t lo, int64_t hi) {
                for (int64_t i = lo; i < hi; ++i) {
                    double u1, u2;
                    philox::normal_uniforms(static_cast<uint64_t>(i), key, u1, u2);
                    const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(philox::kTwoPi * u2);
                    o[i] = static_cast<T>(mean + stddev * z);
                }
            });
            return;
        }
        const T lo_v = static_cast<T>(a_);
        const T d = static_cast<T>(static_cast<T>(b_) - lo_v);
        // philox::uniform_f32/f64 element by element, one block per 4 (2) elements.
        parallel_for(ctx, n, kRandomGrain, [=](int64_t lo, int64_t hi) {
            constexpr int64_t per_block = std::is_same_v<T, float> ? 4 : 2;
            for (int64_t i = lo; i < hi;) {
                const auto c = static_cast<uint64_t>(i / per_block);
                const philox::Counter x = philox::block(c, key);
                const int64_t end = std::min(hi, static_cast<int64_t>(c + 1) * per_block);
                for (; i < end; ++i) {
                    const int lane = static_cast<int>(i % per_block);
                    if constexpr (std::is_same_v<T, float>) {
                        o[i] = philox::add_rn(lo_v, philox::mul_rn(d, philox::unit_f32(x.v[lane])));
                    } else {
                        o[i] = philox::add_rn(
                            lo_v,
                            philox::mul_rn(d, philox::unit_f64(x.v[2 * lane], x.v[2 * lane + 1])));
                    }
                }
            }
        });
    }

    bool normal_;
    philox::Key key_{};
    double a_ = 0, b_ = 1;  // low/high or mean/stddev
};

}  // namespace

std::unique_ptr<Kernel> make_creation_kernel(const Graph& g, const Node& n) {
    switch (n.op) {
        case OpKind::Const:
        case OpKind::Input:  // the run's feed (set_feed)
            return std::make_unique<ConstKernel>(g, n);
        case OpKind::Zeros:
        case OpKind::Ones: {
            ScalarAttr v;
            v.is_int = true;
            v.i = n.op == OpKind::Ones ? 1 : 0;
            v.f = static_cast<double>(v.i);
            return std::make_unique<FillKernel>(g, n, v);
        }
        case OpKind::Fill:
            if (auto v = scalar_attr(n, "value")) return std::make_unique<FillKernel>(g, n, *v);
            return make_error_kernel("internal error: fill has no scalar value");
        case OpKind::Range:
            if (n.dtype == DType::Bool) break;
            return std::make_unique<RangeKernel>(g, n);
        case OpKind::RandomUniform:
        case OpKind::RandomNormal:
            if (!is_float(n.dtype)) break;
            return std::make_unique<RandomKernel>(g, n);
        default:
            break;
    }
    return make_error_kernel(std::string("internal error: no CPU kernel for ") + op_name(n.op) +
                             " on " + dtype_name(n.dtype));
}

}  // namespace graphrun::kernels
