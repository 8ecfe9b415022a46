// Helpers of the CPU kernel tests: host tensors, one-op graphs, random data,
// broadcasting references.
#pragma once
#include <doctest/doctest.h>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <numeric>
#include <random>
#include <string>
#include <thread>
#include <vector>
#include "engine/ir/graph.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/kernels/common/philox.h"
#include "engine/kernels/cpu/simd.h"
#include "engine/base/thread_pool.h"

namespace kernel_test {

using namespace graphrun;

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

inline Attr I(int64_t v) {
    return Attr::integer(v);
}
inline Attr F(double v) {
    return Attr::number(v);
}
inline Attr B(bool v) {
    return Attr::boolean(v);
}
inline Attr W(const std::string& s) {
    return Attr::ident(s);
}
inline Attr Ints(const std::vector<int64_t>& v) {
    std::vector<Attr> items;
    for (int64_t x : v) items.push_back(I(x));
    return Attr::make_list(std::move(items));
}

inline int64_t numel(const Shape& s) {
    int64_t n = 1;
    for (int64_t d : s) n *= d;
    return n;
}

// A host tensor; storage in 8-byte words so every dtype is aligned.
struct Tensor {
    DType dtype = DType::F32;
    Shape shape;
    std::vector<uint64_t> words;

    Tensor() = default;
    Tensor(DType t, Shape s) : dtype(t), shape(std::move(s)) {
        words.assign((static_cast<size_t>(numel(shape)) * dtype_size(t) + 7) / 8, 0);
    }
    int64_t n() const { return numel(shape); }
    void* data() { return words.empty() ? nullptr : words.data(); }
    TensorRef ref() {
        TensorRef r;
        r.data = data();
        r.dtype = dtype;
        r.shape = &shape;
        r.numel = n();
        return r;
    }
    template <class T>
    T* as() {
        return reinterpret_cast<T*>(words.data());
    }
    template <class T>
    const T* as() const {
        return reinterpret_cast<const T*>(words.data());
    }
    // Element i as a double (bool 0/1).
    double get(int64_t i) const {
        switch (dtype) {
            case DType::F32:
                return as<float>()[i];
            case DType::F64:
                return as<double>()[i];
            case DType::I32:
                return as<int32_t>()[i];
            case DType::I64:
                return static_cast<double>(as<int64_t>()[i]);
            case DType::Bool:
                return as<uint8_t>()[i] ? 1 : 0;
            case DType::F16:
            case DType::BF16:
            case DType::I8:
            case DType::U8:
                return element_as_double(dtype, words.data(), i);
        }
        return 0;
    }
    int64_t get_int(int64_t i) const {
        switch (dtype) {
            case DType::I32:
                return as<int32_t>()[i];
            case DType::I64:
                return as<int64_t>()[i];
            case DType::Bool:
                return as<uint8_t>()[i];
            default:
                return static_cast<int64_t>(get(i));
        }
    }
    // Stores v converted to the dtype (the caller keeps v representable).
    void set(int64_t i, double v) {
        switch (dtype) {
            case DType::F32:
                as<float>()[i] = static_cast<float>(v);
                break;
            case DType::F64:
                as<double>()[i] = v;
                break;
            case DType::I32:
                as<int32_t>()[i] = static_cast<int32_t>(v);
                break;
            case DType::I64:
                as<int64_t>()[i] = static_cast<int64_t>(v);
                break;
            case DType::Bool:
                as<uint8_t>()[i] = v != 0;
                break;
            case DType::F16:
            case DType::BF16:
            case DType::I8:
            case DType::U8:
                store_double(dtype, words.data(), i, v);
                break;
        }
    }
    void set_int(int64_t i, int64_t v) {
        if (dtype == DType::I32)
            as<int32_t>()[i] = static_cast<int32_t>(v);
        else if (dtype == DType::I64)
            as<int64_t>()[i] = v;
        else
            set(i, static_cast<double>(v));
    }
};

inline bool same_bytes(const Tensor& a, const Tensor& b) {
    return a.dtype == b.dtype && a.n() == b.n() &&
           std::memcmp(a.words.data(), b.words.data(),
                       static_cast<size_t>(a.n()) * dtype_size(a.dtype)) == 0;
}

// A graph of input nodes (LoopParam: values given at run time) and op nodes.
struct TestGraph {
    Graph g;
    NodeId input(DType t, Shape s) {
        Node n;
        n.op = OpKind::LoopParam;
        n.dtype = t;
        n.shape = std::move(s);
        n.valid = true;
        g.nodes.push_back(std::move(n));
        return static_cast<NodeId>(g.nodes.size() - 1);
    }
    NodeId op(OpKind k, std::vector<NodeId> inputs, std::vector<NamedAttr> attrs, DType t,
              Shape s) {
        Node n;
        n.op = k;
        for (NodeId id : inputs) n.inputs.push_back(Input{id, {}});
        n.attrs = std::move(attrs);
        n.dtype = t;
        n.shape = std::move(s);
        n.valid = true;
        g.nodes.push_back(std::move(n));
        return static_cast<NodeId>(g.nodes.size() - 1);
    }
};

struct Result {
    std::string error;
    Tensor out;
};

inline Result run_node(const TestGraph& tg, NodeId id, std::vector<Tensor*> inputs, int threads = 1) {
    const Node& n = tg.g.node(id);
    auto kernel = make_cpu_kernel(tg.g, n);
    REQUIRE(kernel != nullptr);
    Result r{"", Tensor(n.dtype, n.shape)};
    std::vector<TensorRef> refs;
    for (Tensor* t : inputs) refs.push_back(t->ref());
    TensorRef out = r.out.ref();
    KernelContext ctx;
    ctx.threads = threads;
    std::unique_ptr<ThreadPool> pool;
    if (threads > 1) {  // as the session does
        pool = std::make_unique<ThreadPool>(threads);
        ctx.pool = pool.get();
    }
    r.error = kernel->run(refs.data(), refs.size(), out, ctx);
    return r;
}

// Runs a one-op graph on the given inputs.
inline Result run_op(OpKind k, std::vector<Tensor*> inputs, std::vector<NamedAttr> attrs, DType t, Shape s,
              int threads = 1) {
    TestGraph tg;
    std::vector<NodeId> ids;
    for (Tensor* x : inputs) ids.push_back(tg.input(x->dtype, x->shape));
    NodeId id = tg.op(k, ids, std::move(attrs), t, std::move(s));
    return run_node(tg, id, std::move(inputs), threads);
}

inline bool close(double got, double ref, double rel, double abs_tol = 0) {
    if (std::isnan(ref)) return std::isnan(got);
    if (std::isinf(ref)) return got == ref;
    return std::fabs(got - ref) <= rel * std::fabs(ref) + abs_tol;
}

// Smallest normal of the dtype: below it relative error bounds do not hold.
inline double tiny(DType t) {
    return t == DType::F32 ? 1.2e-38 : 2.3e-308;
}
inline double elementwise_rel(DType t) {
    return t == DType::F32 ? 1e-6 : 1e-13;
}

inline std::mt19937_64& rng() {
    static std::mt19937_64 r(12345);
    return r;
}

// Random values: floats in [lo, hi), integers in [lo, hi], bool 0/1.
inline Tensor random_tensor(DType t, Shape s, double lo = -10, double hi = 10) {
    Tensor x(t, std::move(s));
    for (int64_t i = 0; i < x.n(); ++i) {
        if (t == DType::Bool) {
            x.set(i, static_cast<double>(rng()() & 1));
        } else if (is_float(t)) {
            x.set(i, std::uniform_real_distribution<double>(lo, hi)(rng()));
        } else {
            x.set_int(i, std::uniform_int_distribution<int64_t>(static_cast<int64_t>(lo),
                                                                static_cast<int64_t>(hi))(rng()));
        }
    }
    return x;
}

// Integers anywhere in the dtype's range (for wrap-around).
inline Tensor random_full_range(DType t, Shape s) {
    Tensor x(t, std::move(s));
    for (int64_t i = 0; i < x.n(); ++i)
        x.set_int(i, static_cast<int64_t>(rng()()));  // set_int truncates for i32
    return x;
}

inline std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
    std::vector<int64_t> idx(s.size());
    for (size_t k = s.size(); k > 0; --k) {
        idx[k - 1] = flat % s[k - 1];
        flat /= s[k - 1];
    }
    return idx;
}

// The flat index into `in` of an output index, NumPy broadcasting (right-aligned).
inline int64_t broadcast_flat(const std::vector<int64_t>& out_idx, const Shape& in) {
    int64_t flat = 0;
    const size_t off = out_idx.size() - in.size();
    for (size_t k = 0; k < in.size(); ++k)
        flat = flat * in[k] + (in[k] == 1 ? 0 : out_idx[off + k]);
    return flat;
}

inline Shape broadcast_shape(const Shape& a, const Shape& b) {
    const size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t k = 0; k < r; ++k) {
        int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1,
                y = k < b.size() ? b[b.size() - 1 - k] : 1;
        out[r - 1 - k] = x == 1 ? y : x;
    }
    return out;
}

inline int64_t wrap(uint64_t v, DType t) {
    return t == DType::I32 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)))
                           : static_cast<int64_t>(v);
}

const DType kNum[] = {DType::F32, DType::F64, DType::I32, DType::I64};
const DType kFloat[] = {DType::F32, DType::F64};
const DType kAll[] = {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool};

// --- references ------------------------------------------------------------------

inline int64_t int_binary_ref(OpKind op, int64_t a, int64_t b, DType t) {
    const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
    switch (op) {
        case OpKind::Add:
            return wrap(ua + ub, t);
        case OpKind::Sub:
            return wrap(ua - ub, t);
        case OpKind::Mul:
            return wrap(ua * ub, t);
        case OpKind::Div:
            return b == -1 ? wrap(0 - ua, t) : a / b;
        case OpKind::Maximum:
            return std::max(a, b);
        case OpKind::Minimum:
            return std::min(a, b);
        case OpKind::Pow: {
            if (b < 0) return a == 1 ? 1 : (b % 2 ? -1 : 1);  // only bases 1 and -1 reach here
            uint64_t r = 1;
            for (int64_t k = 0; k < b; ++k) r *= ua;
            return wrap(r, t);
        }
        default:
            return 0;
    }
}

inline double float_binary_ref(OpKind op, double a, double b) {
    switch (op) {
        case OpKind::Add:
            return a + b;
        case OpKind::Sub:
            return a - b;
        case OpKind::Mul:
            return a * b;
        case OpKind::Div:
            return a / b;
        case OpKind::Maximum:
            return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
        case OpKind::Minimum:
            return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
        case OpKind::Pow:
            return std::pow(a, b);
        default:
            return 0;
    }
}

inline double float_unary_ref(OpKind op, double x) {
    switch (op) {
        case OpKind::Neg:
            return -x;
        case OpKind::Abs:
            return std::fabs(x);
        case OpKind::Square:
            return x * x;
        case OpKind::Relu:
            return std::isnan(x) ? x : std::max(x, 0.0);
        case OpKind::Exp:
            return std::exp(x);
        case OpKind::Log:
            return std::log(x);
        case OpKind::Sqrt:
            return std::sqrt(x);
        case OpKind::Rsqrt:
            return 1 / std::sqrt(x);
        case OpKind::Tanh:
            return std::tanh(x);
        case OpKind::Sigmoid:
            return static_cast<double>(1 / (1 + std::exp(-static_cast<long double>(x))));
        case OpKind::Sin:
            return std::sin(x);
        case OpKind::Cos:
            return std::cos(x);
        default:
            return 0;
    }
}

inline int64_t int_unary_ref(OpKind op, int64_t x, DType t) {
    const auto u = static_cast<uint64_t>(x);
    switch (op) {
        case OpKind::Neg:
            return wrap(0 - u, t);
        case OpKind::Abs:
            return x < 0 ? wrap(0 - u, t) : x;
        case OpKind::Square:
            return wrap(u * u, t);
        case OpKind::Relu:
            return x > 0 ? x : 0;
        default:
            return 0;
    }
}

// Checks a binary op on operands of the given shapes against the reference.
inline void check_binary(OpKind op, DType t, const Shape& sa, const Shape& sb, Tensor a, Tensor b,
                  int threads = 1) {
    const Shape so = broadcast_shape(sa, sb);
    Result r = run_op(op, {&a, &b}, {}, t, so, threads);
    INFO(std::string(op_name(op)), " ", std::string(dtype_name(t)), " ", shape_string(sa), " ",
         shape_string(sb));
    REQUIRE(r.error == "");
    for (int64_t i = 0; i < r.out.n(); ++i) {
        const auto idx = unravel(i, so);
        const int64_t ia = broadcast_flat(idx, sa), ib = broadcast_flat(idx, sb);
        if (is_int(t)) {
            const int64_t want = int_binary_ref(op, a.get_int(ia), b.get_int(ib), t);
            if (r.out.get_int(i) != want) {
                INFO("element ", i, ": ", a.get_int(ia), " ", b.get_int(ib));
                CHECK(r.out.get_int(i) == want);
                return;
            }
        } else {
            const double want = float_binary_ref(op, a.get(ia), b.get(ib));
            if (!close(r.out.get(i), want, elementwise_rel(t), tiny(t))) {
                INFO("element ", i, ": ", a.get(ia), " ", b.get(ib), " got ", r.out.get(i),
                     " want ", want);
                CHECK(false);
                return;
            }
        }
    }
}


}  // namespace kernel_test
