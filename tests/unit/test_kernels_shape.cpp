// Unit tests for the CPU kernels, continued: matmul, transpose, cast, concat,
// reductions, against references in higher precision (helpers in
// kernel_test_helpers.h).
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

#include "tests/unit/kernel_test_helpers.h"

using namespace graphrun;
using namespace kernel_test;

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

// A concat along the channels the layout pass holds channels-last
// (engine/plan/channels_last.h) reads and writes NHWC ([N, H, W, C], each
// pixel's channels of each input in turn) or oneDNN's blocked nChw8c /
// nChw16c ([N][C / block][H][W][block], each image's blocks of each input in
// turn); a blocked input whose channels are no multiple of the block is an
// internal error, never a wrong copy.
TEST_CASE("kernel concat: channels-last inputs (NHWC, nChw8c, nChw16c)") {
    const std::vector<int64_t> chans = {16, 32, 48};
    const int64_t n = 2, h = 3, w = 5;
    for (int64_t block : {int64_t{0}, int64_t{8}, int64_t{16}}) {
        INFO("block ", block);
        auto index = [&](int64_t ch, int64_t b, int64_t c, int64_t i, int64_t j) {
            if (block > 0) return (((b * (ch / block) + c / block) * h + i) * w + j) * block + c % block;
            return ((b * h + i) * w + j) * ch + c;
        };
        TestGraph tg;
        std::vector<NodeId> ins;
        std::vector<Tensor> xs;
        int64_t total = 0;
        for (int64_t ch : chans) {
            ins.push_back(tg.input(DType::F32, Shape{n, ch, h, w}));
            xs.push_back(random_tensor(DType::F32, Shape{n, ch, h, w}, -9, 9));
            total += ch;
        }
        const NodeId id = tg.op(OpKind::Concat, ins, {{"axis", I(1), {}}}, DType::F32, Shape{n, total, h, w});
        tg.g.nodes[static_cast<size_t>(id)].channels_last = true;
        tg.g.nodes[static_cast<size_t>(id)].channel_block = static_cast<uint8_t>(block);
        std::vector<Tensor*> ptrs;
        for (Tensor& x : xs) ptrs.push_back(&x);
        Result r = run_node(tg, id, ptrs, 2);
        REQUIRE(r.error == "");
        int64_t wrong = 0;
        for (int64_t b = 0; b < n; ++b)
            for (int64_t c = 0, from = 0, k = 0; c < total; ++c) {
                if (c - from == chans[static_cast<size_t>(k)]) from += chans[static_cast<size_t>(k++)];
                const int64_t ch = chans[static_cast<size_t>(k)];
                for (int64_t i = 0; i < h; ++i)
                    for (int64_t j = 0; j < w; ++j)
                        wrong += r.out.get(index(total, b, c, i, j)) !=
                                 xs[static_cast<size_t>(k)].get(index(ch, b, c - from, i, j));
            }
        CHECK(wrong == 0);
    }
    // 12 channels held in blocks of 8: refused.
    TestGraph tg;
    const NodeId a = tg.input(DType::F32, Shape{1, 12, 2, 2}), b = tg.input(DType::F32, Shape{1, 4, 2, 2});
    const NodeId id = tg.op(OpKind::Concat, {a, b}, {{"axis", I(1), {}}}, DType::F32, Shape{1, 16, 2, 2});
    tg.g.nodes[static_cast<size_t>(id)].channels_last = true;
    tg.g.nodes[static_cast<size_t>(id)].channel_block = 8;
    Tensor xa = random_tensor(DType::F32, Shape{1, 12, 2, 2}, -1, 1), xb = random_tensor(DType::F32, Shape{1, 4, 2, 2}, -1, 1);
    CHECK(run_node(tg, id, {&xa, &xb}).error.find("internal error") != std::string::npos);
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
