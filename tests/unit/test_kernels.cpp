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

#include "tests/unit/kernel_test_helpers.h"

using namespace graphrun;
using namespace kernel_test;


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
