// Unit tests for the CPU kernels: every op of SPEC section 3 on every dtype it
// takes, on random data, against references computed here in double or long
// double (exact integer arithmetic for the integer dtypes). Nodes are built by
// hand with their dtype, shape and attributes filled as validation would.
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

using namespace graphrun;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Attr I(int64_t v) {
    return Attr::integer(v);
}
Attr F(double v) {
    return Attr::number(v);
}
Attr B(bool v) {
    return Attr::boolean(v);
}
Attr W(const std::string& s) {
    return Attr::ident(s);
}
Attr Ints(const std::vector<int64_t>& v) {
    std::vector<Attr> items;
    for (int64_t x : v) items.push_back(I(x));
    return Attr::make_list(std::move(items));
}

int64_t numel(const Shape& s) {
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

bool same_bytes(const Tensor& a, const Tensor& b) {
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

Result run_node(const TestGraph& tg, NodeId id, std::vector<Tensor*> inputs, int threads = 1) {
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
Result run_op(OpKind k, std::vector<Tensor*> inputs, std::vector<NamedAttr> attrs, DType t, Shape s,
              int threads = 1) {
    TestGraph tg;
    std::vector<NodeId> ids;
    for (Tensor* x : inputs) ids.push_back(tg.input(x->dtype, x->shape));
    NodeId id = tg.op(k, ids, std::move(attrs), t, std::move(s));
    return run_node(tg, id, std::move(inputs), threads);
}

bool close(double got, double ref, double rel, double abs_tol = 0) {
    if (std::isnan(ref)) return std::isnan(got);
    if (std::isinf(ref)) return got == ref;
    return std::fabs(got - ref) <= rel * std::fabs(ref) + abs_tol;
}

// Smallest normal of the dtype: below it relative error bounds do not hold.
double tiny(DType t) {
    return t == DType::F32 ? 1.2e-38 : 2.3e-308;
}
double elementwise_rel(DType t) {
    return t == DType::F32 ? 1e-6 : 1e-13;
}

std::mt19937_64& rng() {
    static std::mt19937_64 r(12345);
    return r;
}

// Random values: floats in [lo, hi), integers in [lo, hi], bool 0/1.
Tensor random_tensor(DType t, Shape s, double lo = -10, double hi = 10) {
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
Tensor random_full_range(DType t, Shape s) {
    Tensor x(t, std::move(s));
    for (int64_t i = 0; i < x.n(); ++i)
        x.set_int(i, static_cast<int64_t>(rng()()));  // set_int truncates for i32
    return x;
}

std::vector<int64_t> unravel(int64_t flat, const Shape& s) {
    std::vector<int64_t> idx(s.size());
    for (size_t k = s.size(); k > 0; --k) {
        idx[k - 1] = flat % s[k - 1];
        flat /= s[k - 1];
    }
    return idx;
}

// The flat index into `in` of an output index, NumPy broadcasting (right-aligned).
int64_t broadcast_flat(const std::vector<int64_t>& out_idx, const Shape& in) {
    int64_t flat = 0;
    const size_t off = out_idx.size() - in.size();
    for (size_t k = 0; k < in.size(); ++k)
        flat = flat * in[k] + (in[k] == 1 ? 0 : out_idx[off + k]);
    return flat;
}

Shape broadcast_shape(const Shape& a, const Shape& b) {
    const size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t k = 0; k < r; ++k) {
        int64_t x = k < a.size() ? a[a.size() - 1 - k] : 1,
                y = k < b.size() ? b[b.size() - 1 - k] : 1;
        out[r - 1 - k] = x == 1 ? y : x;
    }
    return out;
}

int64_t wrap(uint64_t v, DType t) {
    return t == DType::I32 ? static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)))
                           : static_cast<int64_t>(v);
}

const DType kNum[] = {DType::F32, DType::F64, DType::I32, DType::I64};
const DType kFloat[] = {DType::F32, DType::F64};
const DType kAll[] = {DType::F32, DType::F64, DType::I32, DType::I64, DType::Bool};

// --- references ------------------------------------------------------------------

int64_t int_binary_ref(OpKind op, int64_t a, int64_t b, DType t) {
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

double float_binary_ref(OpKind op, double a, double b) {
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

double float_unary_ref(OpKind op, double x) {
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

int64_t int_unary_ref(OpKind op, int64_t x, DType t) {
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
void check_binary(OpKind op, DType t, const Shape& sa, const Shape& sb, Tensor a, Tensor b,
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

}  // namespace

// --- Philox and the random streams -------------------------------------------------

TEST_CASE("kernel philox4x32-10 answer vectors (Random123 kat_vectors)") {
    using namespace graphrun::philox;
    struct Kat {
        Counter ctr;
        Key key;
        uint32_t want[4];
    };
    const Kat kats[] = {
        {{{0, 0, 0, 0}}, {{0, 0}}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}},
         {{0xffffffff, 0xffffffff}},
         {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}},
         {{0xa4093822, 0x299f31d0}},
         {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (const Kat& k : kats) {
        Counter c = philox4x32_10(k.ctr, k.key);
        for (int lane = 0; lane < 4; ++lane) CHECK(c.v[lane] == k.want[lane]);
    }
    // The key split and counter layout of the stream definition.
    Key key = seed_key(0x0000000500000007ull);
    CHECK(key.v[0] == 7);
    CHECK(key.v[1] == 5);
    Counter direct = philox4x32_10(Counter{{0x89abcdefu, 0x01234567u, 0, 0}}, key);
    Counter via_block = block(0x0123456789abcdefull, key);
    for (int lane = 0; lane < 4; ++lane) CHECK(direct.v[lane] == via_block.v[lane]);
}

TEST_CASE("kernel random_uniform follows the documented stream, bit for bit") {
    const int64_t n = 1003;
    const uint64_t seed = (uint64_t{3} << 32) | 99;
    {
        Result r = run_op(OpKind::RandomUniform, {},
                          {{"shape", Ints({n}), {}},
                           {"low", F(-2), {}},
                           {"high", F(3), {}},
                           {"seed", I(static_cast<int64_t>(seed)), {}}},
                          DType::F32, {n});
        REQUIRE(r.error == "");
        const philox::Key key = philox::seed_key(seed);
        for (int64_t i = 0; i < n; ++i) {
            const uint32_t x = philox::block(static_cast<uint64_t>(i) / 4, key).v[i % 4];
            const float u = static_cast<float>(x >> 8) / 16777216.0f;
            volatile float t = 5.0f * u;  // separately rounded, as the stream says
            const float want = -2.0f + t;
            REQUIRE(r.out.as<float>()[i] == want);
            REQUIRE(philox::uniform_f32(static_cast<uint64_t>(i), key, -2.0f, 5.0f) == want);
        }
    }
    {
        Result r = run_op(OpKind::RandomUniform, {},
                          {{"shape", Ints({n}), {}},
                           {"low", F(1), {}},
                           {"high", F(2), {}},
                           {"seed", I(static_cast<int64_t>(seed)), {}}},
                          DType::F64, {n});
        REQUIRE(r.error == "");
        const philox::Key key = philox::seed_key(seed);
        for (int64_t i = 0; i < n; ++i) {
            const philox::Counter c = philox::block(static_cast<uint64_t>(i) / 2, key);
            const uint64_t a = c.v[2 * (i % 2)] >> 5, b = c.v[2 * (i % 2) + 1] >> 6;
            const double u = static_cast<double>(a * 67108864 + b) / 9007199254740992.0;
            REQUIRE(r.out.as<double>()[i] == 1.0 + u);
            REQUIRE(philox::uniform_f64(static_cast<uint64_t>(i), key, 1.0, 1.0) == 1.0 + u);
        }
    }
}

TEST_CASE("kernel random_uniform statistics, range, determinism and threads") {
    const int64_t n = 100003;  // thread chunks that split counter blocks
    for (DType t : kFloat) {
        auto make = [&](int64_t seed, int threads) {
            return run_op(OpKind::RandomUniform, {},
                          {{"shape", Ints({n}), {}},
                           {"low", F(2), {}},
                           {"high", F(5), {}},
                           {"seed", I(seed), {}}},
                          t, {n}, threads);
        };
        Result r = make(42, 1);
        REQUIRE(r.error == "");
        double sum = 0, sq = 0;
        for (int64_t i = 0; i < n; ++i) {
            const double v = r.out.get(i);
            REQUIRE(v >= 2.0);
            REQUIRE(v < 5.0);
            sum += v;
            sq += v * v;
        }
        const double mean = sum / n, var = sq / n - mean * mean;
        CHECK(std::fabs(mean - 3.5) < 0.02);        // sd of the mean: 0.0027
        CHECK(std::fabs(var - 0.75) < 0.02);        // 9/12
        CHECK(same_bytes(r.out, make(42, 1).out));  // same seed, same values
        CHECK(same_bytes(r.out, make(42, 4).out));  // threads change nothing
        CHECK(!same_bytes(r.out, make(43, 1).out));
        // Defaults: low 0, high 1, seed 0.
        Result d = run_op(OpKind::RandomUniform, {}, {{"shape", Ints({2, 3}), {}}}, t, {2, 3});
        REQUIRE(d.error == "");
        Result d0 = run_op(OpKind::RandomUniform, {},
                           {{"shape", Ints({2, 3}), {}},
                            {"low", I(0), {}},
                            {"high", I(1), {}},
                            {"seed", I(0), {}}},
                           t, {2, 3});
        CHECK(same_bytes(d.out, d0.out));
    }
}

TEST_CASE("kernel random_normal statistics, determinism, f32 is f64 rounded") {
    const int64_t n = 100000;
    auto make = [&](DType t, int64_t seed, int threads) {
        return run_op(OpKind::RandomNormal, {},
                      {{"shape", Ints({n}), {}},
                       {"mean", F(1), {}},
                       {"stddev", F(2), {}},
                       {"seed", I(seed), {}}},
                      t, {n}, threads);
    };
    Result r64 = make(DType::F64, 7, 1);
    Result r32 = make(DType::F32, 7, 1);
    REQUIRE(r64.error == "");
    REQUIRE(r32.error == "");
    double sum = 0, sq = 0, m3 = 0, m4 = 0;
    for (int64_t i = 0; i < n; ++i) {
        const double v = r64.out.get(i);
        REQUIRE(std::isfinite(v));
        sum += v;
        sq += v * v;
        REQUIRE(r32.out.as<float>()[i] == static_cast<float>(v));
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    for (int64_t i = 0; i < n; ++i) {
        const double z = (r64.out.get(i) - mean) / std::sqrt(var);
        m3 += z * z * z;
        m4 += z * z * z * z;
    }
    CHECK(std::fabs(mean - 1) < 0.03);  // sd of the mean: 0.0063
    CHECK(std::fabs(var - 4) < 0.1);
    CHECK(std::fabs(m3 / n) < 0.05);     // skewness 0
    CHECK(std::fabs(m4 / n - 3) < 0.1);  // kurtosis 3
    CHECK(same_bytes(r64.out, make(DType::F64, 7, 3).out));
    CHECK(!same_bytes(r64.out, make(DType::F64, 8, 1).out));
    // Element 0 from the stream definition.
    double u1, u2;
    philox::normal_uniforms(0, philox::seed_key(7), u1, u2);
    CHECK(r64.out.get(0) == 1 + 2 * (std::sqrt(-2 * std::log(u1)) * std::cos(philox::kTwoPi * u2)));
}

// --- creation ----------------------------------------------------------------------

TEST_CASE("kernel const copies the literal; zeros, ones, fill for every dtype") {
    for (DType t : kAll) {
        INFO(std::string(dtype_name(t)));
        TestGraph tg;
        Tensor lit = random_tensor(t, {2, 3}, -100, 100);
        NodeId c = tg.op(OpKind::Const, {}, {}, t, {2, 3});
        auto* words = reinterpret_cast<const uint8_t*>(lit.words.data());
        tg.g.node(c).literal.assign(words, words + 6 * dtype_size(t));
        Result r = run_node(tg, c, {});
        REQUIRE(r.error == "");
        CHECK(same_bytes(r.out, lit));

        // A literal of the wrong size is an internal error, not an overrun.
        tg.g.node(c).literal.resize(3);
        CHECK(run_node(tg, c, {}).error.find("internal error") == 0);

        Result z =
            run_op(OpKind::Zeros, {},
                   {{"shape", Ints({3, 5}), {}}, {"dtype", W(dtype_name(t)), {}}}, t, {3, 5});
        Result o = run_op(OpKind::Ones, {}, {{"shape", Ints({37}), {}}}, t, {37});
        REQUIRE(z.error == "");
        REQUIRE(o.error == "");
        for (int64_t i = 0; i < z.out.n(); ++i) CHECK(z.out.get(i) == 0);
        for (int64_t i = 0; i < o.out.n(); ++i) CHECK(o.out.get(i) == 1);
        // Empty tensors: data may be null.
        CHECK(run_op(OpKind::Zeros, {}, {{"shape", Ints({0, 4}), {}}}, t, {0, 4}).error == "");

        const Attr value = t == DType::Bool ? B(true) : is_int(t) ? I(-7) : F(2.5);
        Result f = run_op(OpKind::Fill, {}, {{"shape", Ints({4, 9}), {}}, {"value", value, {}}}, t,
                          {4, 9}, 4);
        REQUIRE(f.error == "");
        const double want = t == DType::Bool ? 1 : is_int(t) ? -7 : 2.5;
        for (int64_t i = 0; i < f.out.n(); ++i) CHECK(f.out.get(i) == want);
    }
    // Exact conversions of the value: big int64, float from integer, nan, inf.
    Result big =
        run_op(OpKind::Fill, {}, {{"shape", Ints({2}), {}}, {"value", I(9007199254740993), {}}},
               DType::I64, {2});
    CHECK(big.out.get_int(1) == 9007199254740993);
    Result fi = run_op(OpKind::Fill, {}, {{"shape", Ints({1}), {}}, {"value", I(16777217), {}}},
                       DType::F32, {1});
    CHECK(fi.out.as<float>()[0] == 16777216.0f);
    // int64 -> f32 directly (as validation encodes literals), not through double.
    const int64_t odd = (int64_t{1} << 60) + (int64_t{1} << 36) + 1;
    Result fo = run_op(OpKind::Fill, {}, {{"shape", Ints({1}), {}}, {"value", I(odd), {}}},
                       DType::F32, {1});
    CHECK(fo.out.as<float>()[0] == static_cast<float>(odd));
    CHECK(static_cast<float>(odd) != static_cast<float>(static_cast<double>(odd)));
    Result fn = run_op(OpKind::Fill, {}, {{"shape", Ints({1}), {}}, {"value", W("nan"), {}}},
                       DType::F64, {1});
    CHECK(std::isnan(fn.out.get(0)));
    Result ff = run_op(OpKind::Fill, {}, {{"shape", Ints({1}), {}}, {"value", W("-inf"), {}}},
                       DType::F32, {1});
    CHECK(ff.out.get(0) == -kInf);
    Result fb = run_op(OpKind::Fill, {}, {{"shape", Ints({1}), {}}, {"value", B(true), {}}},
                       DType::F32, {1});
    CHECK(fb.out.get(0) == 1);
    Result fh =
        run_op(OpKind::Fill, {}, {{"shape", Ints({}), {}}, {"value", F(0.1), {}}}, DType::F32, {});
    CHECK(fh.out.as<float>()[0] == 0.1f);
}

TEST_CASE("kernel range is numpy.arange") {
    // Floats: start + i * delta in double, then rounded.
    Result r = run_op(OpKind::Range, {},
                      {{"start", F(0.5), {}}, {"limit", F(3), {}}, {"delta", F(0.1), {}}},
                      DType::F32, {25});
    REQUIRE(r.error == "");
    for (int64_t i = 0; i < 25; ++i)
        CHECK(r.out.as<float>()[i] == static_cast<float>(0.5 + i * 0.1));
    Result d = run_op(OpKind::Range, {},
                      {{"start", I(10), {}}, {"limit", I(0), {}}, {"delta", F(-2.5), {}}},
                      DType::F64, {4});
    REQUIRE(d.error == "");
    CHECK(d.out.get(0) == 10);
    CHECK(d.out.get(3) == 2.5);
    Result lim = run_op(OpKind::Range, {}, {{"limit", I(5), {}}}, DType::F32, {5});
    for (int64_t i = 0; i < 5; ++i) CHECK(lim.out.get(i) == static_cast<double>(i));
    // Integers: exact, even where double would round.
    const int64_t start = (int64_t{1} << 60) + 1;
    Result i64 =
        run_op(OpKind::Range, {},
               {{"start", I(start), {}}, {"limit", I(start + 30), {}}, {"delta", I(7), {}}},
               DType::I64, {5});
    REQUIRE(i64.error == "");
    for (int64_t i = 0; i < 5; ++i) CHECK(i64.out.get_int(i) == start + 7 * i);
    Result i32 =
        run_op(OpKind::Range, {}, {{"start", I(5), {}}, {"limit", I(-6), {}}, {"delta", I(-3), {}}},
               DType::I32, {4});
    CHECK(i32.out.get_int(0) == 5);
    CHECK(i32.out.get_int(3) == -4);
    Result near_max =
        run_op(OpKind::Range, {}, {{"start", I(2147483645), {}}, {"limit", I(2147483647), {}}},
               DType::I32, {2});
    CHECK(near_max.out.get_int(1) == 2147483646);
    CHECK(run_op(OpKind::Range, {}, {{"limit", I(0), {}}}, DType::I64, {0}).error == "");
}

// --- elementwise binary ------------------------------------------------------------

TEST_CASE("kernel binary ops broadcast like NumPy on every dtype") {
    const std::vector<std::pair<Shape, Shape>> shapes = {
        {{2, 3}, {2, 3}},
        {{2, 3}, {3}},
        {{3}, {2, 3}},
        {{2, 1, 4}, {3, 1}},
        {{}, {2, 3}},
        {{2, 3}, {}},
        {{}, {}},
        {{0, 3}, {3}},
        {{2, 0}, {1}},
        {{1}, {5}},
        {{4, 1, 3, 1}, {1, 5, 1, 2}},
        {{3, 1}, {1, 3}},
        {{1037}, {1037}},
        {{33}, {1}},
        {{2, 17}, {2, 1}},
        {{5, 1, 1}, {1, 1, 7}},
        {{1, 1}, {1}},
        {{3, 4, 5}, {3, 1, 5}},
        {{2, 3, 0}, {1, 3, 1}},
    };
    const OpKind ops[] = {OpKind::Add,     OpKind::Sub,     OpKind::Mul, OpKind::Div,
                          OpKind::Maximum, OpKind::Minimum, OpKind::Pow};
    for (OpKind op : ops)
        for (DType t : kNum)
            for (const auto& [sa, sb] : shapes) {
                Tensor a, b;
                if (op == OpKind::Pow && is_int(t)) {
                    a = random_tensor(t, sa, -5, 5);
                    b = random_tensor(t, sb, 0, t == DType::I32 ? 20 : 40);
                } else if (op == OpKind::Pow) {
                    a = random_tensor(t, sa, 0.1, 4);
                    b = random_tensor(t, sb, -3, 3);
                } else if (is_int(t) && op == OpKind::Div) {
                    a = random_full_range(t, sa);
                    b = random_tensor(t, sb, -50, 50);
                    for (int64_t i = 0; i < b.n(); ++i)
                        if (b.get_int(i) == 0) b.set_int(i, -1);
                } else if (is_int(t)) {
                    a = random_full_range(t, sa);
                    b = random_full_range(t, sb);
                } else {
                    a = random_tensor(t, sa, -100, 100);
                    b = random_tensor(t, sb, -100, 100);
                }
                check_binary(op, t, sa, sb, a, b);
            }
}

TEST_CASE("kernel binary ops on large tensors with threads match one thread") {
    for (DType t : kNum) {
        const Shape sa{300, 257}, sb{257};
        Tensor a = random_tensor(t, sa, 1, 100), b = random_tensor(t, sb, 1, 100);
        Result one = run_op(OpKind::Mul, {&a, &b}, {}, t, sa, 1);
        Result four = run_op(OpKind::Mul, {&a, &b}, {}, t, sa, 4);
        REQUIRE(one.error == "");
        REQUIRE(four.error == "");
        CHECK(same_bytes(one.out, four.out));
        check_binary(OpKind::Div, t, sa, sa, a, random_tensor(t, sa, 1, 9), 4);
        check_binary(OpKind::Sub, t, {300, 1, 3}, {1, 200, 3}, random_tensor(t, {300, 1, 3}),
                     random_tensor(t, {1, 200, 3}), 3);
    }
}

TEST_CASE("kernel integer division: truncation, INT_MIN / -1, division by zero") {
    for (DType t : {DType::I32, DType::I64}) {
        INFO(std::string(dtype_name(t)));
        const int64_t mn = t == DType::I32 ? INT32_MIN : INT64_MIN;
        const int64_t mx = t == DType::I32 ? INT32_MAX : INT64_MAX;
        const std::vector<std::pair<int64_t, int64_t>> cases = {
            {7, 2},   {-7, 2}, {7, -2},  {-7, -2}, {mn, -1}, {mn, 1},
            {mx, -1}, {mn, 2}, {mn, mn}, {0, -5},  {1, mx}};
        Tensor a(t, {static_cast<int64_t>(cases.size())}),
            b(t, {static_cast<int64_t>(cases.size())});
        for (size_t i = 0; i < cases.size(); ++i) {
            a.set_int(static_cast<int64_t>(i), cases[i].first);
            b.set_int(static_cast<int64_t>(i), cases[i].second);
        }
        Result r = run_op(OpKind::Div, {&a, &b}, {}, t, a.shape);
        REQUIRE(r.error == "");
        CHECK(r.out.get_int(0) == 3);
        CHECK(r.out.get_int(1) == -3);
        CHECK(r.out.get_int(2) == -3);
        CHECK(r.out.get_int(3) == 3);
        CHECK(r.out.get_int(4) == mn);
        CHECK(r.out.get_int(5) == mn);
        CHECK(r.out.get_int(6) == -mx);
        CHECK(r.out.get_int(7) == mn / 2);
        CHECK(r.out.get_int(8) == 1);

        b.set_int(3, 0);
        CHECK(run_op(OpKind::Div, {&a, &b}, {}, t, a.shape).error == "integer division by zero");
        Tensor zero(t, {}), one(t, {}), empty(t, {0});
        one.set_int(0, 1);
        CHECK(run_op(OpKind::Div, {&one, &zero}, {}, t, {}).error == "integer division by zero");
        CHECK(run_op(OpKind::Div, {&a, &zero}, {}, t, a.shape, 4).error ==
              "integer division by zero");
        // An empty result divides nothing: no error (as NumPy).
        CHECK(run_op(OpKind::Div, {&empty, &zero}, {}, t, {0}).error == "");
        // Wrap-around of + - *.
        Tensor x(t, {1}), y(t, {1});
        x.set_int(0, mx);
        y.set_int(0, 1);
        CHECK(run_op(OpKind::Add, {&x, &y}, {}, t, {1}).out.get_int(0) == mn);
        x.set_int(0, mn);
        CHECK(run_op(OpKind::Sub, {&x, &y}, {}, t, {1}).out.get_int(0) == mx);
        y.set_int(0, -1);
        CHECK(run_op(OpKind::Mul, {&x, &y}, {}, t, {1}).out.get_int(0) == mn);
    }
}

TEST_CASE("kernel float division by zero and NaN through maximum/minimum") {
    for (DType t : kFloat) {
        Tensor a(t, {6}), b(t, {6});
        const double av[] = {1, -1, 0, kNaN, 3, kNaN};
        const double bv[] = {0, 0, 0, 1, kNaN, kNaN};
        for (int i = 0; i < 6; ++i) a.set(i, av[i]), b.set(i, bv[i]);
        Result d = run_op(OpKind::Div, {&a, &b}, {}, t, {6});
        REQUIRE(d.error == "");
        CHECK(d.out.get(0) == kInf);
        CHECK(d.out.get(1) == -kInf);
        CHECK(std::isnan(d.out.get(2)));
        Result mx = run_op(OpKind::Maximum, {&a, &b}, {}, t, {6});
        Result mn = run_op(OpKind::Minimum, {&a, &b}, {}, t, {6});
        CHECK(mx.out.get(0) == 1);
        CHECK(mn.out.get(1) == -1);
        for (int i = 3; i < 6; ++i) {
            CHECK(std::isnan(mx.out.get(i)));
            CHECK(std::isnan(mn.out.get(i)));
        }
        // NaN as the broadcast scalar on either side.
        Tensor s(t, {});
        s.set(0, kNaN);
        Tensor v = random_tensor(t, {40});
        Result l = run_op(OpKind::Maximum, {&s, &v}, {}, t, {40});
        Result r = run_op(OpKind::Minimum, {&v, &s}, {}, t, {40});
        for (int64_t i = 0; i < 40; ++i) {
            CHECK(std::isnan(l.out.get(i)));
            CHECK(std::isnan(r.out.get(i)));
        }
    }
}

TEST_CASE("kernel integer pow: squaring with wrap, negative exponents") {
    for (DType t : {DType::I32, DType::I64}) {
        INFO(std::string(dtype_name(t)));
        Tensor a(t, {5}), b(t, {5});
        const int64_t av[] = {3, -2, 7, 0, 5}, bv[] = {4, 5, 0, 0, t == DType::I32 ? 30 : 60};
        for (int i = 0; i < 5; ++i) a.set_int(i, av[i]), b.set_int(i, bv[i]);
        Result r = run_op(OpKind::Pow, {&a, &b}, {}, t, {5});
        REQUIRE(r.error == "");
        CHECK(r.out.get_int(0) == 81);
        CHECK(r.out.get_int(1) == -32);
        CHECK(r.out.get_int(2) == 1);
        CHECK(r.out.get_int(3) == 1);  // 0 ** 0
        CHECK(r.out.get_int(4) == int_binary_ref(OpKind::Pow, 5, bv[4], t));
        // A negative exponent: NumPy's error, except for bases 1 and -1.
        b.set_int(0, -1);
        CHECK(run_op(OpKind::Pow, {&a, &b}, {}, t, {5}).error ==
              "integers to negative integer powers are not allowed");
        Tensor ones(t, {4}), neg(t, {4});
        const int64_t ov[] = {1, -1, 1, -1}, nv[] = {-3, -3, -4, -4};
        for (int i = 0; i < 4; ++i) ones.set_int(i, ov[i]), neg.set_int(i, nv[i]);
        Result u = run_op(OpKind::Pow, {&ones, &neg}, {}, t, {4});
        REQUIRE(u.error == "");
        CHECK(u.out.get_int(0) == 1);
        CHECK(u.out.get_int(1) == -1);
        CHECK(u.out.get_int(2) == 1);
        CHECK(u.out.get_int(3) == 1);
        Tensor zero(t, {}), m1(t, {});
        m1.set_int(0, -1);
        CHECK(run_op(OpKind::Pow, {&zero, &m1}, {}, t, {}).error ==
              "integers to negative integer powers are not allowed");
        // Through broadcasting: base 2 against an exponent column with a -1.
        Tensor base(t, {1, 3}), ex(t, {2, 1});
        base.set_int(0, 1), base.set_int(1, 2), base.set_int(2, -1);
        ex.set_int(0, 2), ex.set_int(1, -1);
        CHECK(run_op(OpKind::Pow, {&base, &ex}, {}, t, {2, 3}).error != "");
    }
    // Floats: negative base with an integral exponent, 0 ** -1.
    for (DType t : kFloat) {
        Tensor a(t, {3}), b(t, {3});
        a.set(0, -2), b.set(0, 3);
        a.set(1, 0), b.set(1, -1);
        a.set(2, -2), b.set(2, 0.5);
        Result r = run_op(OpKind::Pow, {&a, &b}, {}, t, {3});
        CHECK(r.out.get(0) == -8);
        CHECK(r.out.get(1) == kInf);
        CHECK(std::isnan(r.out.get(2)));
    }
}

// --- elementwise unary -------------------------------------------------------------

TEST_CASE("kernel unary ops on every dtype they take") {
    const OpKind num_ops[] = {OpKind::Neg, OpKind::Abs, OpKind::Square, OpKind::Relu};
    const OpKind float_ops[] = {OpKind::Exp,  OpKind::Log,     OpKind::Sqrt, OpKind::Rsqrt,
                                OpKind::Tanh, OpKind::Sigmoid, OpKind::Sin,  OpKind::Cos};
    for (DType t : kNum)
        for (OpKind op : num_ops) {
            INFO(std::string(op_name(op)), " ", std::string(dtype_name(t)));
            Tensor x =
                is_int(t) ? random_full_range(t, {1001}) : random_tensor(t, {1001}, -1e3, 1e3);
            const int64_t mn = t == DType::I32 ? INT32_MIN : INT64_MIN;
            if (is_int(t))
                x.set_int(0, mn), x.set_int(1, 0), x.set_int(2, -1);
            else
                x.set(0, kNaN), x.set(1, -0.0), x.set(2, -kInf);
            Result r = run_op(op, {&x}, {}, t, x.shape, 2);
            REQUIRE(r.error == "");
            for (int64_t i = 0; i < x.n(); ++i) {
                if (is_int(t)) {
                    REQUIRE(r.out.get_int(i) == int_unary_ref(op, x.get_int(i), t));
                } else {
                    REQUIRE(close(r.out.get(i), float_unary_ref(op, x.get(i)), elementwise_rel(t),
                                  tiny(t)));
                }
            }
            if (is_int(t) && op != OpKind::Relu && op != OpKind::Square)
                CHECK(r.out.get_int(0) == mn);  // wraps
        }
    for (DType t : kFloat)
        for (OpKind op : float_ops) {
            INFO(std::string(op_name(op)), " ", std::string(dtype_name(t)));
            const bool positive = op == OpKind::Log || op == OpKind::Sqrt || op == OpKind::Rsqrt;
            const double lo = positive ? 1e-3 : op == OpKind::Exp ? -80 : -30;
            const double hi = positive ? 1e4 : op == OpKind::Exp ? 80 : 30;
            Tensor x = random_tensor(t, {517}, lo, hi);
            const double special[] = {0.0,   -0.0,  kInf,   -kInf, kNaN, -1.0,
                                      1e-30, 100.0, -100.0, 1e3,   -1e3};
            for (int i = 0; i < 11; ++i) x.set(i, special[i]);
            Result r = run_op(op, {&x}, {}, t, x.shape);
            REQUIRE(r.error == "");
            for (int64_t i = 0; i < x.n(); ++i) {
                const double want = float_unary_ref(op, x.get(i));
                // Outside the dtype's range the reference overflows or underflows with it.
                const double rounded =
                    t == DType::F32 ? static_cast<double>(static_cast<float>(want)) : want;
                INFO("x = ", x.get(i), " got ", r.out.get(i), " want ", rounded);
                REQUIRE(close(r.out.get(i), rounded, elementwise_rel(t), tiny(t)));
            }
        }
}

TEST_CASE("kernel sigmoid is stable for large |x|") {
    for (DType t : kFloat) {
        Tensor x(t, {6});
        const double v[] = {1e4, -1e4, 88.8, -88.8, 745, -745};
        for (int i = 0; i < 6; ++i) x.set(i, v[i]);
        Result r = run_op(OpKind::Sigmoid, {&x}, {}, t, {6});
        CHECK(r.out.get(0) == 1);
        CHECK(r.out.get(1) == 0);
        for (int i = 0; i < 6; ++i) CHECK(std::isfinite(r.out.get(i)));
        CHECK(close(r.out.get(3), 1 / (1 + std::exp(88.8)), 1e-5, tiny(t)));
    }
}

// --- matmul ------------------------------------------------------------------------

namespace {

// numpy.matmul in long double; bound[i] = sum |a||b| for the error bound.
void matmul_ref(const Tensor& a, const Tensor& b, bool ta, bool tb, std::vector<long double>& out,
                std::vector<long double>& bound, Shape& out_shape) {
    Shape sa = a.shape, sb = b.shape;
    if (sa.size() == 1) sa.insert(sa.begin(), 1);
    if (sb.size() == 1) sb.push_back(1);
    const int64_t ra = sa[sa.size() - 2], ca = sa.back(), rb = sb[sb.size() - 2], cb = sb.back();
    const int64_t m = ta ? ca : ra, k = ta ? ra : ca, n = tb ? rb : cb;
    const Shape ba(sa.begin(), sa.end() - 2), bb(sb.begin(), sb.end() - 2);
    const Shape batch = broadcast_shape(ba, bb);
    out_shape = batch;
    if (a.shape.size() >= 2) out_shape.push_back(m);
    if (b.shape.size() >= 2) out_shape.push_back(n);
    out.assign(static_cast<size_t>(numel(batch) * m * n), 0);
    bound.assign(out.size(), 0);
    for (int64_t t = 0; t < numel(batch); ++t) {
        const auto idx = unravel(t, batch);
        const int64_t oa = broadcast_flat(idx, ba) * ra * ca,
                      ob = broadcast_flat(idx, bb) * rb * cb;
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < n; ++j) {
                long double s = 0, s_abs = 0;
                for (int64_t p = 0; p < k; ++p) {
                    const long double x = a.get(oa + (ta ? p * ca + i : i * ca + p));
                    const long double y = b.get(ob + (tb ? j * cb + p : p * cb + j));
                    s += x * y;
                    s_abs += std::fabs(x * y);
                }
                out[static_cast<size_t>((t * m + i) * n + j)] = s;
                bound[static_cast<size_t>((t * m + i) * n + j)] = s_abs;
            }
    }
}

void check_matmul(DType t, const Shape& sa, const Shape& sb, bool ta, bool tb) {
    Tensor a = random_tensor(t, sa, -1, 1), b = random_tensor(t, sb, -1, 1);
    std::vector<long double> want, bound;
    Shape so;
    matmul_ref(a, b, ta, tb, want, bound, so);
    Result r = run_op(OpKind::Matmul, {&a, &b},
                      {{"transpose_a", B(ta), {}}, {"transpose_b", B(tb), {}}}, t, so);
    INFO(std::string(dtype_name(t)), " ", shape_string(sa), " @ ", shape_string(sb), " ta=", ta,
         " tb=", tb);
    REQUIRE(r.error == "");
    REQUIRE(r.out.n() == static_cast<int64_t>(want.size()));
    const double rel = t == DType::F32 ? 1e-5 : 1e-12;
    for (int64_t i = 0; i < r.out.n(); ++i) {
        const auto w = static_cast<double>(want[static_cast<size_t>(i)]);
        const auto e = static_cast<double>(bound[static_cast<size_t>(i)]);
        if (std::fabs(r.out.get(i) - w) > rel * e + 1e-300) {
            INFO("element ", i, " got ", r.out.get(i), " want ", w);
            CHECK(false);
            return;
        }
    }
}

}  // namespace

TEST_CASE("kernel matmul: numpy.matmul shapes, batch broadcasting, transposes") {
    struct Case {
        Shape a, b;
        bool ta, tb;
    };
    const std::vector<Case> cases = {
        {{3, 4}, {4, 5}, false, false},
        {{4, 3}, {4, 5}, true, false},
        {{3, 4}, {5, 4}, false, true},
        {{4, 3}, {5, 4}, true, true},
        {{4}, {4, 5}, false, false},
        {{3, 4}, {4}, false, false},
        {{4}, {4}, false, false},
        {{4}, {5, 4}, false, true},
        {{4, 3}, {4}, true, false},
        {{2, 3, 4}, {4, 5}, false, false},
        {{2, 3, 4}, {5, 4}, false, true},
        {{2, 4, 3}, {4, 5}, true, false},
        {{3, 4}, {2, 4, 5}, false, false},
        {{2, 1, 3, 4}, {1, 5, 4, 2}, false, false},
        {{2, 1, 4, 3}, {1, 5, 2, 4}, true, true},
        {{6, 7}, {3, 1, 7, 2}, false, false},
        {{1, 3, 4}, {2, 4, 5}, false, false},
        {{2, 3, 4}, {4}, false, false},
        {{4}, {2, 4, 5}, false, false},
        {{1, 1, 3, 4}, {4, 2}, false, false},
        {{65, 130}, {130, 67}, false, false},
        {{130, 65}, {67, 130}, true, true},
        {{3, 4}, {1, 4, 5}, false, false},
    };
    for (DType t : kFloat)
        for (const Case& c : cases) check_matmul(t, c.a, c.b, c.ta, c.tb);
}

TEST_CASE("kernel matmul with empty dimensions") {
    for (DType t : kFloat) {
        // K = 0: a sum of nothing is 0.
        Tensor a(t, {3, 0}), b(t, {0, 4});
        Result r = run_op(OpKind::Matmul, {&a, &b}, {}, t, {3, 4});
        REQUIRE(r.error == "");
        for (int64_t i = 0; i < 12; ++i) CHECK(r.out.get(i) == 0);
        Tensor a1(t, {2, 0, 3}), b1(t, {2, 0, 4});
        Result rt =
            run_op(OpKind::Matmul, {&a1, &b1}, {{"transpose_a", B(true), {}}}, t, {2, 3, 4});
        REQUIRE(rt.error == "");
        for (int64_t i = 0; i < rt.out.n(); ++i) CHECK(rt.out.get(i) == 0);
        // M = 0, N = 0, empty batch.
        Tensor m0(t, {0, 5}), k5(t, {5, 3}), n0(t, {5, 0}), batch0(t, {0, 2, 5});
        CHECK(run_op(OpKind::Matmul, {&m0, &k5}, {}, t, {0, 3}).error == "");
        CHECK(run_op(OpKind::Matmul, {&m0, &n0}, {}, t, {0, 0}).error == "");
        Tensor k5b(t, {2, 5});
        Result n_empty = run_op(OpKind::Matmul, {&k5b, &n0}, {}, t, {2, 0});
        CHECK(n_empty.error == "");
        CHECK(run_op(OpKind::Matmul, {&batch0, &k5}, {}, t, {0, 2, 3}).error == "");
        Tensor v0(t, {0});
        Result dot0 = run_op(OpKind::Matmul, {&v0, &v0}, {}, t, {});
        REQUIRE(dot0.error == "");
        CHECK(dot0.out.get(0) == 0);
    }
}

// --- transpose, reshape, identity, concat ------------------------------------------

TEST_CASE("kernel transpose: any rank, negative and absent perm, every dtype") {
    struct Case {
        Shape s;
        std::vector<int64_t> perm;  // empty with absent = true: reversed
        bool absent;
    };
    const std::vector<Case> cases = {
        {{}, {}, false},
        {{}, {}, true},
        {{5}, {0}, false},
        {{5}, {}, true},
        {{3, 4}, {1, 0}, false},
        {{3, 4}, {}, true},
        {{67, 45}, {-1, -2}, false},
        {{2, 3, 4}, {}, true},
        {{2, 3, 4}, {0, 2, 1}, false},
        {{2, 3, 4}, {1, 0, 2}, false},
        {{2, 3, 4}, {2, 0, -2}, false},
        {{3, 1, 4, 1}, {3, 2, 1, 0}, false},
        {{2, 3, 4, 5}, {1, 3, 0, 2}, false},
        {{1, 1}, {1, 0}, false},
        {{0, 3}, {1, 0}, false},
        {{2, 0, 3}, {2, 1, 0}, false},
        {{4, 33, 40}, {0, 2, 1}, false},
        {{2, 3, 4, 5, 6}, {4, 0, 3, 1, 2}, false},
    };
    for (DType t : kAll)
        for (const Case& c : cases) {
            const size_t r = c.s.size();
            std::vector<int64_t> perm = c.perm;
            if (c.absent)
                for (size_t k = r; k > 0; --k) perm.push_back(static_cast<int64_t>(k - 1));
            std::vector<int64_t> p(r);
            Shape so(r);
            for (size_t k = 0; k < r; ++k) {
                p[k] = perm[k] < 0 ? perm[k] + static_cast<int64_t>(r) : perm[k];
                so[k] = c.s[static_cast<size_t>(p[k])];
            }
            Tensor x = random_tensor(t, c.s, -1000, 1000);
            std::vector<NamedAttr> attrs;
            if (!c.absent) attrs.push_back({"perm", Ints(c.perm), {}});
            Result res = run_op(OpKind::Transpose, {&x}, attrs, t, so);
            INFO(std::string(dtype_name(t)), " ", shape_string(c.s));
            REQUIRE(res.error == "");
            for (int64_t i = 0; i < res.out.n(); ++i) {
                const auto oi = unravel(i, so);
                std::vector<int64_t> ii(r);
                for (size_t k = 0; k < r; ++k) ii[static_cast<size_t>(p[k])] = oi[k];
                int64_t flat = 0;
                for (size_t k = 0; k < r; ++k) flat = flat * c.s[k] + ii[k];
                REQUIRE(res.out.get(i) == x.get(flat));
            }
        }
}

TEST_CASE("kernel reshape and identity copy the bytes") {
    for (DType t : kAll) {
        Tensor x = random_tensor(t, {3, 4}, -50, 50);
        Result r = run_op(OpKind::Reshape, {&x}, {{"shape", Ints({2, -1}), {}}}, t, {2, 6});
        Result i = run_op(OpKind::Identity, {&x}, {}, t, {3, 4});
        REQUIRE(r.error == "");
        REQUIRE(i.error == "");
        CHECK(std::memcmp(r.out.words.data(), x.words.data(), 12 * dtype_size(t)) == 0);
        CHECK(same_bytes(i.out, x));
        Tensor e(t, {0, 3});
        CHECK(run_op(OpKind::Reshape, {&e}, {{"shape", Ints({3, 0}), {}}}, t, {3, 0}).error == "");
    }
}

TEST_CASE("kernel concat along any axis, any number of inputs") {
    struct Case {
        std::vector<Shape> in;
        int64_t axis;
        bool absent;
    };
    const std::vector<Case> cases = {
        {{{2, 3}, {4, 3}}, 0, true},
        {{{2, 3}, {2, 5}, {2, 1}}, 1, false},
        {{{2, 3}, {2, 5}}, -1, false},
        {{{3}, {0}, {4}}, 0, false},
        {{{2, 0, 3}, {2, 2, 3}}, 1, false},
        {{{1, 2, 3, 4}, {1, 2, 5, 4}, {1, 2, 1, 4}}, -2, false},
        {{{7}}, 0, false},
        {{{0, 3}, {0, 3}}, 1, false},
    };
    for (DType t : kAll)
        for (const Case& c : cases) {
            const size_t r = c.in[0].size();
            const auto ax =
                static_cast<size_t>(c.axis < 0 ? c.axis + static_cast<int64_t>(r) : c.axis);
            std::vector<Tensor> xs;
            std::vector<Tensor*> ptrs;
            Shape so = c.in[0];
            so[ax] = 0;
            for (const Shape& s : c.in) {
                xs.push_back(random_tensor(t, s, -9, 9));
                so[ax] += s[ax];
            }
            for (Tensor& x : xs) ptrs.push_back(&x);
            std::vector<NamedAttr> attrs;
            if (!c.absent) attrs.push_back({"axis", I(c.axis), {}});
            Result res = run_op(OpKind::Concat, ptrs, attrs, t, so);
            REQUIRE(res.error == "");
            for (int64_t i = 0; i < res.out.n(); ++i) {
                auto idx = unravel(i, so);
                size_t which = 0;
                while (idx[ax] >= xs[which].shape[ax]) idx[ax] -= xs[which++].shape[ax];
                int64_t flat = 0;
                for (size_t k = 0; k < r; ++k) flat = flat * xs[which].shape[k] + idx[k];
                REQUIRE(res.out.get(i) == xs[which].get(flat));
            }
        }
}

// --- cast --------------------------------------------------------------------------

TEST_CASE("kernel cast between every pair of dtypes") {
    const double specials[] = {0.0,
                               -0.0,
                               1.5,
                               -1.5,
                               2.9,
                               -2.9,
                               1e10,
                               -1e10,
                               2147483647.0,
                               2147483648.0,
                               -2147483648.0,
                               -2147483649.0,
                               -2147483648.9,
                               2147483647.9,
                               9.3e18,
                               -9.3e18,
                               9223372036854775807.0,
                               -9223372036854775808.0,
                               kNaN,
                               kInf,
                               -kInf,
                               0.25,
                               16777217.0,
                               1e-40};
    const int64_t n_spec = sizeof(specials) / sizeof(specials[0]);
    const int64_t int_specials[] = {0,         1,         -1,
                                    INT32_MAX, INT32_MIN, int64_t{INT32_MAX} + 1,
                                    INT64_MAX, INT64_MIN, (int64_t{1} << 53) + 1,
                                    16777217,  -300,      255,
                                    256};
    for (DType from : kAll)
        for (DType to : kAll) {
            INFO(std::string(dtype_name(from)), " -> ", std::string(dtype_name(to)));
            Tensor x(from, {n_spec});
            if (is_float(from)) {
                for (int64_t i = 0; i < n_spec; ++i) x.set(i, specials[i]);
            } else if (is_int(from)) {
                for (int64_t i = 0; i < n_spec; ++i) x.set_int(i, int_specials[i % 13]);
            } else {
                for (int64_t i = 0; i < n_spec; ++i) x.set(i, static_cast<double>(i % 2));
                x.as<uint8_t>()[2] = 7;  // any non-zero byte is true
            }
            Result r = run_op(OpKind::Cast, {&x}, {{"dtype", W(dtype_name(to)), {}}}, to, x.shape);
            REQUIRE(r.error == "");
            for (int64_t i = 0; i < n_spec; ++i) {
                const double v = x.get(i);
                const int64_t vi = is_float(from) ? 0 : x.get_int(i);
                INFO("element ", i, " = ", v);
                if (to == DType::Bool) {
                    CHECK(r.out.as<uint8_t>()[i] == (v != 0 ? 1 : 0));
                } else if (from == DType::Bool) {
                    CHECK(r.out.get(i) == (v != 0 ? 1 : 0));
                } else if (to == DType::F32) {
                    if (std::isnan(v))
                        CHECK(std::isnan(r.out.get(i)));
                    else
                        CHECK(r.out.as<float>()[i] ==
                              (is_int(from) ? static_cast<float>(vi) : static_cast<float>(v)));
                } else if (to == DType::F64) {
                    if (std::isnan(v))
                        CHECK(std::isnan(r.out.get(i)));
                    else
                        CHECK(r.out.get(i) == (is_int(from) ? static_cast<double>(vi) : v));
                } else if (is_int(from)) {
                    CHECK(r.out.get_int(i) ==
                          wrap(static_cast<uint64_t>(vi), to));  // narrowing wraps
                } else {
                    const long double lo = to == DType::I32 ? INT32_MIN : INT64_MIN;
                    const long double hi = to == DType::I32 ? INT32_MAX : INT64_MAX;
                    long double want = std::isnan(v) ? 0 : std::trunc(static_cast<long double>(v));
                    want = std::min(std::max(want, lo), hi);
                    CHECK(r.out.get_int(i) == static_cast<int64_t>(want));
                }
            }
        }
    // Spot checks of the saturation rule.
    Tensor f(DType::F32, {4});
    f.set(0, kNaN), f.set(1, 3e9), f.set(2, -3e9), f.set(3, -7.9);
    Result c = run_op(OpKind::Cast, {&f}, {{"dtype", W("i32"), {}}}, DType::I32, {4});
    CHECK(c.out.get_int(0) == 0);
    CHECK(c.out.get_int(1) == INT32_MAX);
    CHECK(c.out.get_int(2) == INT32_MIN);
    CHECK(c.out.get_int(3) == -7);
}

// --- reductions and softmax --------------------------------------------------------

namespace {

struct ReduceCase {
    Shape s;
    std::vector<int64_t> axes;
    bool absent;  // axes not given: every axis
    bool scalar;  // axes given as one integer
};

void check_reduce(OpKind op, DType t, const ReduceCase& c, bool keepdims, int threads = 1) {
    const size_t r = c.s.size();
    std::vector<bool> red(r, c.absent);
    for (int64_t a : c.axes)
        red[static_cast<size_t>(a < 0 ? a + static_cast<int64_t>(r) : a)] = true;
    Shape so, so_keep;
    for (size_t k = 0; k < r; ++k) {
        if (!red[k]) so.push_back(c.s[k]);
        so_keep.push_back(red[k] ? 1 : c.s[k]);
    }
    Tensor x = is_int(t) ? random_full_range(t, c.s) : random_tensor(t, c.s, -3, 10);
    std::vector<NamedAttr> attrs;
    if (!c.absent) attrs.push_back({"axes", c.scalar ? I(c.axes[0]) : Ints(c.axes), {}});
    if (keepdims) attrs.push_back({"keepdims", B(true), {}});
    Result res = run_op(op, {&x}, attrs, t, keepdims ? so_keep : so, threads);
    INFO(std::string(op_name(op)), " ", std::string(dtype_name(t)), " ", shape_string(c.s),
         " keepdims=", keepdims);
    REQUIRE(res.error == "");
    const int64_t n_out = numel(so);
    std::vector<long double> sum(static_cast<size_t>(n_out), 0), abs_sum(sum.size(), 0);
    std::vector<uint64_t> isum(sum.size(), 0);
    std::vector<double> mx(sum.size(), -kInf);
    std::vector<int64_t> imx(sum.size(), INT64_MIN);
    std::vector<int64_t> cnt(sum.size(), 0);
    for (int64_t i = 0; i < x.n(); ++i) {
        const auto idx = unravel(i, c.s);
        int64_t o = 0;
        for (size_t k = 0; k < r; ++k)
            if (!red[k]) o = o * c.s[k] + idx[k];
        const auto oo = static_cast<size_t>(o);
        sum[oo] += x.get(i);
        abs_sum[oo] += std::fabs(x.get(i));
        isum[oo] += static_cast<uint64_t>(x.get_int(i));
        mx[oo] = std::isnan(mx[oo]) || std::isnan(x.get(i)) ? kNaN : std::max(mx[oo], x.get(i));
        imx[oo] = std::max(imx[oo], x.get_int(i));
        ++cnt[oo];
    }
    for (int64_t i = 0; i < n_out; ++i) {
        const auto ii = static_cast<size_t>(i);
        if (op == OpKind::ReduceMax) {
            if (is_int(t))
                REQUIRE(res.out.get_int(i) == imx[ii]);
            else if (std::isnan(mx[ii]))
                REQUIRE(std::isnan(res.out.get(i)));
            else
                REQUIRE(res.out.get(i) == mx[ii]);  // a max is one of the values: exact
        } else if (is_int(t)) {
            REQUIRE(res.out.get_int(i) == wrap(isum[ii], t));
        } else {
            const double div = op == OpKind::ReduceMean ? static_cast<double>(cnt[ii]) : 1.0;
            const auto want = static_cast<double>(sum[ii] / div);
            const auto bound = static_cast<double>(abs_sum[ii] / div);
            if (cnt[ii] == 0 && op == OpKind::ReduceMean) {
                REQUIRE(std::isnan(res.out.get(i)));
                continue;
            }
            INFO("output ", i, " got ", res.out.get(i), " want ", want);
            REQUIRE(std::fabs(res.out.get(i) - want) <=
                    1e-6 * std::fabs(want) + 1e-12 * bound + 1e-300);
        }
    }
}

}  // namespace

TEST_CASE("kernel reduce_sum, reduce_max, reduce_mean over any axes") {
    const std::vector<ReduceCase> cases = {
        {{2, 3, 4}, {}, true, false},
        {{2, 3, 4}, {}, false, false},
        {{2, 3, 4}, {1}, false, true},
        {{2, 3, 4}, {-1}, false, false},
        {{2, 3, 4}, {0}, false, false},
        {{2, 3, 4}, {0, 2}, false, false},
        {{2, 3, 4}, {-3, 1}, false, false},
        {{5, 1, 7}, {1}, false, false},
        {{}, {}, true, false},
        {{}, {}, false, false},
        {{7}, {0}, false, true},
        {{300, 129}, {0}, false, false},
        {{129, 300}, {1}, false, false},
        {{3, 4, 5, 6}, {1, 3}, false, false},
        {{3, 4, 5, 6}, {0, 2}, false, false},
        {{2, 1, 3}, {0, 1, 2}, false, false},
        {{1, 1}, {0}, false, false},
        {{4, 70, 3}, {1}, false, false},
        {{0, 3}, {1}, false, false},
        {{3, 0}, {0}, false, false},
    };
    for (OpKind op : {OpKind::ReduceSum, OpKind::ReduceMax, OpKind::ReduceMean})
        for (DType t : kNum) {
            if (op == OpKind::ReduceMean && is_int(t)) continue;
            for (const ReduceCase& c : cases) {
                if (op == OpKind::ReduceMax && numel(c.s) == 0) continue;  // refused by validation
                check_reduce(op, t, c, false);
                check_reduce(op, t, c, true);
            }
        }
}

TEST_CASE("kernel reductions of an empty axis: sum 0, mean NaN") {
    for (DType t : kFloat) {
        Tensor x(t, {3, 0});
        Result s = run_op(OpKind::ReduceSum, {&x}, {{"axes", I(1), {}}}, t, {3});
        Result m = run_op(OpKind::ReduceMean, {&x}, {{"axes", I(-1), {}}}, t, {3});
        REQUIRE(s.error == "");
        for (int i = 0; i < 3; ++i) {
            CHECK(s.out.get(i) == 0);
            CHECK(std::isnan(m.out.get(i)));
        }
    }
    Tensor xi(DType::I64, {0});
    CHECK(run_op(OpKind::ReduceSum, {&xi}, {}, DType::I64, {}).out.get_int(0) == 0);
}

TEST_CASE("kernel reductions: accuracy of big float sums, NaN, threads") {
    // 10^6 float32 values: double accumulation keeps the sum within 1e-5 (here ~1e-7).
    for (DType t : kFloat) {
        for (const ReduceCase& c :
             {ReduceCase{{1000000}, {}, true, false}, ReduceCase{{1000, 1000}, {0}, false, false},
              ReduceCase{{1000, 1000}, {1}, false, false}}) {
            Tensor x = random_tensor(t, c.s, 0, 1);
            long double total = 0;
            for (int64_t i = 0; i < x.n(); ++i) total += x.get(i);
            Result one = run_op(OpKind::ReduceSum, {&x},
                                c.absent ? std::vector<NamedAttr>{}
                                         : std::vector<NamedAttr>{{"axes", Ints(c.axes), {}}},
                                t, c.absent ? Shape{} : Shape{1000}, 1);
            Result four = run_op(OpKind::ReduceSum, {&x},
                                 c.absent ? std::vector<NamedAttr>{}
                                          : std::vector<NamedAttr>{{"axes", Ints(c.axes), {}}},
                                 t, c.absent ? Shape{} : Shape{1000}, 4);
            REQUIRE(one.error == "");
            CHECK(same_bytes(one.out, four.out));
            long double got = 0;
            for (int64_t i = 0; i < one.out.n(); ++i) got += one.out.get(i);
            CHECK(std::fabs(static_cast<double>(got - total)) <= 1e-6 * static_cast<double>(total));
            check_reduce(OpKind::ReduceMean, t, c, false, 3);
            check_reduce(OpKind::ReduceMax, t, c, true, 2);
        }
        // Kahan/pairwise: 1 followed by many tiny values does not lose them in f64.
        Tensor k(t, {1 << 20});
        for (int64_t i = 0; i < k.n(); ++i) k.set(i, i == 0 ? 1.0 : 1e-17);
        Result ks = run_op(OpKind::ReduceSum, {&k}, {}, t, {});
        if (t == DType::F64) CHECK(std::fabs(ks.out.get(0) - (1 + (k.n() - 1) * 1e-17)) < 1e-15);
        // The same down the columns (accumulated lane by lane, compensated).
        Tensor kc(t, {1 << 16, 3});
        for (int64_t i = 0; i < kc.n(); ++i) kc.set(i, i < 3 ? 1.0 : 1e-17);
        Result kcs = run_op(OpKind::ReduceSum, {&kc}, {{"axes", I(0), {}}}, t, {3});
        if (t == DType::F64)
            for (int j = 0; j < 3; ++j)
                CHECK(std::fabs(kcs.out.get(j) - (1 + 65535 * 1e-17)) < 1e-15);
        // And across the runs of a reduction split by a kept axis (compensated).
        Tensor kr(t, {1 << 16, 2, 2});
        for (int64_t i = 0; i < kr.n(); ++i) kr.set(i, i < 4 ? 1.0 : 1e-17);
        Result krs = run_op(OpKind::ReduceSum, {&kr}, {{"axes", Ints({0, 2}), {}}}, t, {2});
        if (t == DType::F64)
            for (int j = 0; j < 2; ++j)
                CHECK(std::fabs(krs.out.get(j) - (2 + 131070 * 1e-17)) < 1e-15);
        // NaN propagates through reduce_max wherever it sits.
        Tensor m = random_tensor(t, {4, 50});
        m.set(3 * 50 + 17, kNaN);
        m.set(0, kNaN);
        Result rows = run_op(OpKind::ReduceMax, {&m}, {{"axes", I(1), {}}}, t, {4});
        CHECK(std::isnan(rows.out.get(0)));
        CHECK(!std::isnan(rows.out.get(1)));
        CHECK(std::isnan(rows.out.get(3)));
        Result cols = run_op(OpKind::ReduceMax, {&m}, {{"axes", I(0), {}}}, t, {50});
        CHECK(std::isnan(cols.out.get(0)));
        CHECK(std::isnan(cols.out.get(17)));
        CHECK(!std::isnan(cols.out.get(1)));
    }
    // Integer sums wrap.
    Tensor w(DType::I32, {3});
    w.set_int(0, INT32_MAX), w.set_int(1, 1), w.set_int(2, 1);
    CHECK(run_op(OpKind::ReduceSum, {&w}, {}, DType::I32, {}).out.get_int(0) ==
          int64_t{INT32_MIN} + 1);
}

namespace {

void check_softmax(DType t, const Tensor& x, int64_t axis_attr, bool absent, int threads = 1) {
    const size_t r = x.shape.size();
    const auto axis =
        static_cast<size_t>(axis_attr < 0 ? axis_attr + static_cast<int64_t>(r) : axis_attr);
    Tensor in = x;
    std::vector<NamedAttr> attrs;
    if (!absent) attrs.push_back({"axis", I(axis_attr), {}});
    Result res = run_op(OpKind::Softmax, {&in}, attrs, t, x.shape, threads);
    INFO(std::string(dtype_name(t)), " ", shape_string(x.shape), " axis ", axis_attr);
    REQUIRE(res.error == "");
    int64_t inner = 1;
    for (size_t k = axis + 1; k < r; ++k) inner *= x.shape[k];
    const int64_t len = x.shape[axis];
    for (int64_t i = 0; i < x.n(); ++i) {
        const int64_t k = i / inner % len, start = i - k * inner;
        long double m = -INFINITY;
        bool nan = false;
        for (int64_t q = 0; q < len; ++q) {
            const double v = x.get(start + q * inner);
            nan |= std::isnan(v);
            m = std::max<long double>(m, v);
        }
        long double s = 0;
        for (int64_t q = 0; q < len; ++q)
            s += std::exp(static_cast<long double>(x.get(start + q * inner)) - m);
        const double want =
            nan ? kNaN : static_cast<double>(std::exp(static_cast<long double>(x.get(i)) - m) / s);
        INFO("element ", i, " got ", res.out.get(i), " want ", want);
        REQUIRE(close(res.out.get(i), want, t == DType::F32 ? 1e-6 : 1e-13, tiny(t)));
    }
}

}  // namespace

TEST_CASE("kernel softmax along any axis, stable for large values, NaN in -> NaN out") {
    for (DType t : kFloat) {
        check_softmax(t, random_tensor(t, {4, 7}, -5, 5), -1, true);
        check_softmax(t, random_tensor(t, {4, 7}, -5, 5), 0, false);
        check_softmax(t, random_tensor(t, {3, 5, 70}, -5, 5), 1, false);
        check_softmax(t, random_tensor(t, {3, 5, 2}, -5, 5), -3, false);
        check_softmax(t, random_tensor(t, {1}, -5, 5), 0, false);
        check_softmax(t, random_tensor(t, {200, 300}, -20, 20), 1, false, 4);
        check_softmax(t, random_tensor(t, {200, 300}, -20, 20), 0, false, 4);
        // Large logits: no overflow.
        Tensor big(t, {2, 3});
        const double bv[] = {1000, 1001, 1002, -1000, -2000, 30};
        for (int i = 0; i < 6; ++i) big.set(i, bv[i]);
        check_softmax(t, big, -1, false);
        Result rb = run_op(OpKind::Softmax, {&big}, {}, t, {2, 3});
        for (int i = 0; i < 6; ++i) CHECK(std::isfinite(rb.out.get(i)));
        // NaN: its slice is NaN, the others are not.
        Tensor nan = random_tensor(t, {3, 4});
        nan.set(5, kNaN);
        Result rn = run_op(OpKind::Softmax, {&nan}, {{"axis", I(1), {}}}, t, {3, 4});
        for (int i = 0; i < 12; ++i) CHECK(std::isnan(rn.out.get(i)) == (i / 4 == 1));
        Result rc = run_op(OpKind::Softmax, {&nan}, {{"axis", I(0), {}}}, t, {3, 4});
        for (int i = 0; i < 12; ++i) CHECK(std::isnan(rc.out.get(i)) == (i % 4 == 1));
        Tensor empty(t, {0, 3});
        CHECK(run_op(OpKind::Softmax, {&empty}, {}, t, {0, 3}).error == "");
    }
}

// --- robustness --------------------------------------------------------------------

TEST_CASE("kernel run checks its buffers instead of overrunning them") {
    Tensor a = random_tensor(DType::F32, {4}), b = random_tensor(DType::F32, {4});
    TestGraph tg;
    NodeId ia = tg.input(DType::F32, {4}), ib = tg.input(DType::F32, {4});
    NodeId add = tg.op(OpKind::Add, {ia, ib}, {}, DType::F32, {4});
    auto kernel = make_cpu_kernel(tg.g, tg.g.node(add));
    Tensor small(DType::F32, {2}), wrong(DType::F64, {4}), out(DType::F32, {4});
    KernelContext ctx;
    TensorRef ok_in[2] = {a.ref(), b.ref()};
    TensorRef bad_in[2] = {a.ref(), small.ref()};
    TensorRef bad_type[2] = {a.ref(), wrong.ref()};
    TensorRef o = out.ref();
    CHECK(kernel->run(ok_in, 2, o, ctx) == "");
    // The executor hands a kernel the same dtypes and sizes on every run, so
    // the buffers are checked on a kernel's first run: each bad case gets a
    // fresh kernel.
    auto fresh = [&] { return make_cpu_kernel(tg.g, tg.g.node(add)); };
    CHECK(fresh()->run(bad_in, 2, o, ctx).find("internal error") == 0);
    CHECK(fresh()->run(bad_type, 2, o, ctx).find("internal error") == 0);
    CHECK(fresh()->run(ok_in, 1, o, ctx).find("internal error") == 0);
    TensorRef small_out = small.ref();
    CHECK(fresh()->run(ok_in, 2, small_out, ctx).find("internal error") == 0);
    // A kernel whose first run was refused checks again on the next.
    auto refused = fresh();
    CHECK(refused->run(bad_in, 2, o, ctx).find("internal error") == 0);
    CHECK(refused->run(bad_in, 2, o, ctx).find("internal error") == 0);
    CHECK(refused->run(ok_in, 2, o, ctx) == "");
    // Nodes that never run get a kernel that says so.
    NodeId param = tg.input(DType::F32, {4});
    auto none = make_cpu_kernel(tg.g, tg.g.node(param));
    REQUIRE(none != nullptr);
    CHECK(none->run(nullptr, 0, o, ctx).find("internal error") == 0);
}

// --- thread pool -------------------------------------------------------------------

namespace {

// Runs parallel_for and checks that the chunks cover [0, n) exactly once,
// each at least `grain` long unless there is only one.
void check_cover(ThreadPool& pool, int64_t n, int64_t grain) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(std::max<int64_t>(n, 0)));
    std::atomic<int64_t> calls{0}, short_chunks{0}, bad{0};
    pool.parallel_for(n, grain, [&](int64_t lo, int64_t hi) {
        calls.fetch_add(1);
        if (lo < 0 || hi > n || lo >= hi) bad.fetch_add(1);
        if (hi - lo < grain) short_chunks.fetch_add(1);
        for (int64_t i = std::max<int64_t>(lo, 0); i < std::min(hi, n); ++i)
            hits[static_cast<size_t>(i)].fetch_add(1, std::memory_order_relaxed);
    });
    INFO("n=", n, " grain=", grain, " pool=", pool.size());
    CHECK(bad.load() == 0);
    if (n <= 0) CHECK(calls.load() == 0);
    if (calls.load() > 1) CHECK(short_chunks.load() == 0);
    int64_t wrong = 0;
    for (auto& h : hits) wrong += h.load() != 1;
    CHECK(wrong == 0);
}

}  // namespace

TEST_CASE("thread pool: chunks cover the range exactly once") {
    for (int threads : {1, 2, 3, 8}) {
        ThreadPool pool(threads);
        CHECK(pool.size() >= 1);
        CHECK(pool.size() <= threads);
        if (threads == 1) CHECK(pool.size() == 1);  // no thread started
        for (int64_t n : {0, 1, 2, 3, 7, 8, 100, 1000, 4097, 100000})
            for (int64_t grain : {1, 2, 16, 1000, 1 << 20}) check_cover(pool, n, grain);
        check_cover(pool, -5, 1);
    }
}

TEST_CASE("thread pool: chunk bounds are contiguous and balanced") {
    for (int64_t n : {1, 5, 64, 1001})
        for (int64_t chunks : {1, 2, 3, 7})
            if (chunks <= n) {
                CHECK(ThreadPool::chunk_begin(n, chunks, 0) == 0);
                CHECK(ThreadPool::chunk_begin(n, chunks, chunks) == n);
                for (int64_t c = 0; c < chunks; ++c) {
                    const int64_t len =
                        ThreadPool::chunk_begin(n, chunks, c + 1) - ThreadPool::chunk_begin(n, chunks, c);
                    CHECK(len >= n / chunks);
                    CHECK(len <= n / chunks + 1);
                }
            }
}

TEST_CASE("thread pool: many jobs in a row, workers really take part, nested calls run inline") {
    ThreadPool pool(4);
    // Back-to-back jobs: hand-over with spinning and sleeping workers.
    std::vector<int64_t> out(4096);
    for (int job = 0; job < 2000; ++job) {
        pool.parallel_for(static_cast<int64_t>(out.size()), 64, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i) out[static_cast<size_t>(i)] += i;
        });
        if (job % 500 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));  // workers asleep
    }
    int64_t wrong = 0;
    for (size_t i = 0; i < out.size(); ++i) wrong += out[i] != static_cast<int64_t>(i) * 2000;
    CHECK(wrong == 0);
    if (pool.size() > 1) {
        // Chunks that wait (up to 10 s) until a second thread has entered one
        // prove that the workers run chunks.
        std::mutex mu;
        std::vector<std::thread::id> ids;
        std::atomic<int> entered{0};
        pool.parallel_for(pool.size() * 4, 1, [&](int64_t, int64_t) {
            entered.fetch_add(1);
            {
                std::lock_guard<std::mutex> lock(mu);
                if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
                    ids.push_back(std::this_thread::get_id());
            }
            const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
            while (std::chrono::steady_clock::now() < deadline) {
                {
                    std::lock_guard<std::mutex> lock(mu);
                    if (ids.size() >= 2) break;
                }
                std::this_thread::yield();
            }
        });
        CHECK(entered.load() == pool.size() * 4);
        CHECK(ids.size() >= 2);
        // Nested use from inside a body: runs on the calling thread, whole.
        std::atomic<int64_t> inner_calls{0}, inner_total{0};
        pool.parallel_for(8, 1, [&](int64_t lo, int64_t hi) {
            for (int64_t i = lo; i < hi; ++i)
                pool.parallel_for(100, 1, [&](int64_t a, int64_t b) {
                    inner_calls.fetch_add(1);
                    inner_total.fetch_add(b - a);
                });
        });
        CHECK(inner_total.load() == 800);
        CHECK(inner_calls.load() >= 8);
        // Two threads using one pool at once: both complete.
        std::atomic<int64_t> sum_a{0}, sum_b{0};
        std::thread other([&] {
            for (int k = 0; k < 200; ++k)
                pool.parallel_for(1000, 10, [&](int64_t lo, int64_t hi) { sum_a.fetch_add(hi - lo); });
        });
        for (int k = 0; k < 200; ++k)
            pool.parallel_for(1000, 10, [&](int64_t lo, int64_t hi) { sum_b.fetch_add(hi - lo); });
        other.join();
        CHECK(sum_a.load() == 200 * 1000);
        CHECK(sum_b.load() == 200 * 1000);
    }
}

TEST_CASE("thread pool: a short job finds the workers asleep and runs on the caller; a long one wakes them") {
    ThreadPool pool(2);
    if (pool.size() < 2) return;
    const int64_t grain = 100, cold_below = 16 * grain, n = cold_below - 1;
    // Once the worker has slept (it spins for tens of microseconds), a job of
    // fewer than cold_below elements is one call on the caller.
    bool inline_seen = false;
    for (int attempt = 0; attempt < 100 && !inline_seen; ++attempt) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::atomic<int> calls{0};
        std::atomic<int64_t> covered{0};
        pool.parallel_for(
            n, grain,
            [&](int64_t lo, int64_t hi) {
                calls.fetch_add(1);
                covered.fetch_add(hi - lo);
            },
            cold_below);
        CHECK(covered.load() == n);
        inline_seen = calls.load() == 1;
    }
    CHECK(inline_seen);
    // A job of cold_below elements or more wakes the worker, which takes
    // part once it runs (a virtual machine may take milliseconds to run it).
    std::mutex mu;
    std::vector<std::thread::id> ids;
    const int64_t big = cold_below;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (ids.size() < 2 && std::chrono::steady_clock::now() < deadline)
        pool.parallel_for(
            big, grain,
            [&](int64_t, int64_t) {
                std::lock_guard<std::mutex> lock(mu);
                if (std::find(ids.begin(), ids.end(), std::this_thread::get_id()) == ids.end())
                    ids.push_back(std::this_thread::get_id());
            },
            cold_below);
    CHECK(ids.size() == 2);
    check_cover(pool, n, grain);
    check_cover(pool, big, grain);
}

TEST_CASE("thread pool: created and destroyed repeatedly, idle or not") {
    for (int k = 0; k < 20; ++k) {
        ThreadPool pool(1 + k % 4);
        if (k % 2) check_cover(pool, 1000, 10);
    }
}

// --- SIMD paths ----------------------------------------------------------------------

namespace {

// Restores the instruction set on scope exit.
struct IsaScope {
    kernels::Isa saved;
    explicit IsaScope(kernels::Isa cap) : saved(kernels::limit_isa(cap)) {}
    ~IsaScope() { kernels::limit_isa(saved); }
};

std::vector<kernels::Isa> isas() {
    std::vector<kernels::Isa> v;
    for (int i = 0; i <= static_cast<int>(kernels::detected_isa()); ++i)
        v.push_back(static_cast<kernels::Isa>(i));
    return v;
}

template <class T>
bool same_bits(T a, T b) {
    return std::memcmp(&a, &b, sizeof a) == 0;
}

}  // namespace

TEST_CASE("simd: the f32 row primitives give the same bits on every instruction set") {
    INFO("detected ", kernels::isa_name(kernels::detected_isa()));
    std::mt19937_64 g(7);
    std::uniform_real_distribution<float> u(-30.0f, 30.0f);
    for (int64_t n : {1, 2, 7, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1000, 4096, 100003}) {
        std::vector<float> x(static_cast<size_t>(n));
        for (float& v : x) v = u(g);
        x[static_cast<size_t>(n / 2)] = 1e30f;  // a large value somewhere
        double sum0 = 0;
        float max0 = 0;
        std::vector<float> e0(x.size()), s0(x.size());
        double esum0 = 0;
        for (kernels::Isa isa : isas()) {
            IsaScope scope(isa);
            INFO("n=", n, " isa ", kernels::isa_name(isa));
            REQUIRE(kernels::active_isa() == isa);
            const double sum = kernels::sum_f32(x.data(), n);
            const float mx = kernels::max_f32(x.data(), n);
            std::vector<float> e(x.size());
            std::vector<float> y = x;
            for (float& v : y) v = std::fmod(v, 20.0f);  // exponents that do not all round to 0
            const float m = kernels::max_f32(y.data(), n);
            const double esum = kernels::exp_shifted_f32(y.data(), e.data(), n, m);
            std::vector<float> sc = e;
            kernels::scale_f32(sc.data(), n, 1.0 / esum);
            if (isa == kernels::Isa::Baseline) {
                sum0 = sum, max0 = mx, e0 = e, s0 = sc, esum0 = esum;
                // The baseline against plain references.
                long double ref = 0;
                for (float v : x) ref += v;
                CHECK(std::fabs(sum - static_cast<double>(ref)) <= 1e-15 * std::fabs(static_cast<double>(ref)) + 1e-9);
                CHECK(mx == *std::max_element(x.begin(), x.end()));
                long double eref = 0;
                for (int64_t i = 0; i < n; ++i) {
                    const long double want = std::exp(static_cast<long double>(y[i]) - m);
                    eref += want;
                    REQUIRE(close(e[i], static_cast<double>(want), 1e-7, 1e-45));
                }
                CHECK(std::fabs(esum - static_cast<double>(eref)) <= 1e-9 * static_cast<double>(eref));
            } else {
                CHECK(same_bits(sum, sum0));
                CHECK(same_bits(mx, max0));
                CHECK(same_bits(esum, esum0));
                CHECK(std::memcmp(e.data(), e0.data(), e.size() * sizeof(float)) == 0);
                CHECK(std::memcmp(sc.data(), s0.data(), sc.size() * sizeof(float)) == 0);
            }
        }
    }
}

TEST_CASE("simd: max_f32 propagates NaN and handles infinities on every path") {
    for (kernels::Isa isa : isas()) {
        IsaScope scope(isa);
        for (int64_t n : {1, 5, 16, 40}) {
            for (int64_t at : {int64_t{0}, n / 2, n - 1}) {
                std::vector<float> x(static_cast<size_t>(n), 1.0f);
                x[static_cast<size_t>(at)] = std::numeric_limits<float>::quiet_NaN();
                CHECK(std::isnan(kernels::max_f32(x.data(), n)));
                x[static_cast<size_t>(at)] = std::numeric_limits<float>::infinity();
                CHECK(kernels::max_f32(x.data(), n) == std::numeric_limits<float>::infinity());
            }
            std::vector<float> neg(static_cast<size_t>(n), -std::numeric_limits<float>::infinity());
            CHECK(kernels::max_f32(neg.data(), n) == -std::numeric_limits<float>::infinity());
        }
    }
}

TEST_CASE("simd: the exponential behind softmax is within 3e-10 of exp") {
    double worst = 0;
    for (double t = -150; t <= 0; t += 0.000731) {
        const double want = static_cast<double>(std::exp(static_cast<long double>(t)));
        worst = std::max(worst, std::fabs(kernels::exp_nonpositive(t) - want) / want);
    }
    CHECK(worst < 3e-10);
    CHECK(kernels::exp_nonpositive(0.0) == 1.0);
    CHECK(static_cast<float>(kernels::exp_nonpositive(-std::numeric_limits<double>::infinity())) == 0.0f);
    CHECK(static_cast<float>(kernels::exp_nonpositive(-1000.0)) == 0.0f);
}

TEST_CASE("simd: kernels give the same bytes on every instruction set") {
    struct Case {
        OpKind op;
        DType t;
        Shape a, b, out;
        std::vector<NamedAttr> attrs;
    };
    const std::vector<Case> cases = {
        {OpKind::Add, DType::F32, {1000, 37}, {37}, {1000, 37}, {}},
        {OpKind::Maximum, DType::F32, {70001}, {70001}, {70001}, {}},
        {OpKind::Minimum, DType::F64, {5, 3001}, {5, 1}, {5, 3001}, {}},
        {OpKind::Mul, DType::I32, {70001}, {}, {70001}, {}},
        {OpKind::Sub, DType::I64, {33, 129}, {33, 129}, {33, 129}, {}},
        {OpKind::Relu, DType::F32, {70001}, {}, {70001}, {}},
        {OpKind::Abs, DType::F64, {999}, {}, {999}, {}},
        {OpKind::ReduceSum, DType::F32, {300001}, {}, {}, {}},
        {OpKind::ReduceSum, DType::F32, {257, 1031}, {}, {1031}, {{"axes", I(0), {}}}},
        {OpKind::ReduceSum, DType::F32, {257, 1031}, {}, {257}, {{"axes", I(1), {}}}},
        {OpKind::ReduceMean, DType::F64, {257, 1031}, {}, {1031}, {{"axes", I(0), {}}}},
        {OpKind::ReduceSum, DType::I32, {100003}, {}, {}, {}},
        {OpKind::ReduceMax, DType::F32, {257, 1031}, {}, {1031}, {{"axes", I(0), {}}}},
        {OpKind::ReduceMax, DType::F32, {300001}, {}, {}, {}},
        {OpKind::Softmax, DType::F32, {77, 1001}, {}, {77, 1001}, {}},
        {OpKind::Softmax, DType::F32, {77, 31}, {}, {77, 31}, {{"axis", I(0), {}}}},
    };
    for (const Case& c : cases) {
        Tensor a = random_tensor(c.t, c.a, -50, 50);
        const bool binary = c.op == OpKind::Add || c.op == OpKind::Sub || c.op == OpKind::Mul ||
                            c.op == OpKind::Maximum || c.op == OpKind::Minimum;
        Tensor b = binary ? random_tensor(c.t, c.b, -50, 50) : Tensor();  // {}: a scalar operand
        Tensor first;
        for (kernels::Isa isa : isas()) {
            IsaScope scope(isa);
            for (int threads : {1, 3}) {
                INFO(op_name(c.op), " ", dtype_name(c.t), " ", shape_string(c.a), " isa ",
                     kernels::isa_name(isa), " threads ", threads);
                Result r = binary ? run_op(c.op, {&a, &b}, c.attrs, c.t, c.out, threads)
                                  : run_op(c.op, {&a}, c.attrs, c.t, c.out, threads);
                REQUIRE(r.error == "");
                if (first.words.empty())
                    first = r.out;
                else
                    CHECK(same_bytes(r.out, first));
            }
        }
    }
}

TEST_CASE("kernel softmax f32 rows: NaN, infinities and a -inf max") {
    const float inf = std::numeric_limits<float>::infinity();
    Tensor x(DType::F32, {4, 40});
    for (int64_t i = 0; i < x.n(); ++i) x.set(i, static_cast<double>(i % 7) - 3);
    x.set(3, -inf);                                      // row 0: one -inf element -> 0
    x.set(40 + 5, inf);                                  // row 1: an infinite max -> NaN
    for (int64_t i = 80; i < 120; ++i) x.set(i, -inf);   // row 2: all -inf -> NaN
    x.set(120 + 39, std::numeric_limits<float>::quiet_NaN());  // row 3: NaN -> NaN
    for (int threads : {1, 2}) {
        Result r = run_op(OpKind::Softmax, {&x}, {}, DType::F32, {4, 40}, threads);
        REQUIRE(r.error == "");
        CHECK(r.out.get(3) == 0);
        double s = 0;
        for (int64_t i = 0; i < 40; ++i) s += r.out.get(i);
        CHECK(std::fabs(s - 1) < 1e-6);
        for (int64_t i = 40; i < 160; ++i) CHECK(std::isnan(r.out.get(i)));
    }
}
