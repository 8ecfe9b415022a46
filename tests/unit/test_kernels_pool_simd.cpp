// Unit tests for the thread pool that runs the CPU kernels, the SIMD loops
// chosen at run time, and softmax rows (helpers in kernel_test_helpers.h).
#include <bit>
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

#include "engine/ir/elements.h"
#include "tests/unit/kernel_test_helpers.h"

using namespace graphrun;
using namespace kernel_test;

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

TEST_CASE("thread pool: uncrowd between jobs leaves every job whole") {
    // On OpenMP's team (a build with oneDNN) uncrowd() runs a region of its
    // own right after a job and may move the team's threads apart; either way
    // the jobs around it cover their ranges exactly once.
    for (int threads : {1, 2, 3}) {
        ThreadPool pool(threads);
        for (int k = 0; k < 50; ++k) {
            check_cover(pool, 4096, 64);
            pool.note_team_used();
            pool.uncrowd();
            if (k % 10 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }
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

// How many elements of `out` differ from `ref` (a NaN matches any NaN).
int64_t mismatches(const Tensor& out, const std::vector<double>& ref) {
    int64_t bad = 0;
    for (int64_t o = 0; o < out.n(); ++o) {
        const double got = out.get(o), want = ref[static_cast<size_t>(o)];
        if (std::isnan(want) ? !std::isnan(got) : got != want) ++bad;
    }
    return bad;
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
            INFO("n=", n, " isa ", std::string(kernels::isa_name(isa)));
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
                     std::string(kernels::isa_name(isa)), " threads ", threads);
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

TEST_CASE("matmul: a batch of products over the workers, batch dims broadcast, operands transposed") {
    // MatmulKernel runs whole products of a batch on each worker (one-thread
    // gemms) when the batch has at least as many products as workers and 2M
    // multiply-adds in all, else one after another: every
    // product is checked against a float64 reference, at each thread count,
    // including chunks that start inside a broadcast batch dimension.
    struct M {
        Shape a, b;
        bool ta, tb;
    };
    const M cases[] = {
        {{16, 8, 12, 5}, {16, 8, 5, 12}, false, false},  // attention's q·kᵀ shape, small: one after another
        {{8, 4, 64, 32}, {8, 4, 32, 64}, false, false},  // 4M multiply-adds: over the workers
        {{3, 1, 64, 64}, {1, 5, 64, 64}, false, false},  // both broadcast: 15 products over the workers
        {{3, 1, 4, 6}, {1, 5, 6, 7}, false, false},      // both broadcast, small
        {{2, 3, 6, 4}, {3, 6, 5}, true, false},           // b broadcast over the first dim, a transposed
        {{7, 9, 6}, {7, 5, 6}, false, true},              // b transposed, an odd batch
        {{6, 4}, {3, 4, 5}, false, false},                // a one matrix against b's batch
    };
    for (const M& mc : cases) {
        const Shape& as = mc.a;
        const Shape& bs = mc.b;
        const int64_t m = mc.ta ? as[as.size() - 1] : as[as.size() - 2];
        const int64_t k = mc.ta ? as[as.size() - 2] : as[as.size() - 1];
        const int64_t n = mc.tb ? bs[bs.size() - 2] : bs[bs.size() - 1];
        // The batch: a's and b's leading dims, right-aligned and broadcast.
        const size_t ra = as.size() - 2, rb = bs.size() - 2, rank = std::max(ra, rb);
        Shape batch(rank, 1);
        for (size_t d = 0; d < rank; ++d) {
            const int64_t da = d + ra >= rank ? as[d + ra - rank] : 1;
            const int64_t db = d + rb >= rank ? bs[d + rb - rank] : 1;
            batch[d] = std::max(da, db);
        }
        Shape ys = batch;
        ys.push_back(m);
        ys.push_back(n);
        Tensor a = random_tensor(DType::F32, as, -1, 1);
        Tensor b = random_tensor(DType::F32, bs, -1, 1);
        std::vector<NamedAttr> attrs;
        if (mc.ta) attrs.push_back({"transpose_a", B(true), {}});
        if (mc.tb) attrs.push_back({"transpose_b", B(true), {}});
        for (int threads : {1, 2, 3}) {
            INFO("a ", shape_string(as), " b ", shape_string(bs), " threads ", threads);
            Result res = run_op(OpKind::Matmul, {&a, &b}, attrs, DType::F32, ys, threads);
            REQUIRE(res.error == "");
            int64_t products = 1;
            for (int64_t d : batch) products *= d;
            int64_t bad = 0;
            for (int64_t t = 0; t < products; ++t) {
                // t's index in every batch dim (row-major), then a's and b's matrix.
                int64_t rest = t, ma = 0, mb = 0, sa = 1, sb = 1;
                for (size_t d = rank; d-- > 0;) {
                    const int64_t i = rest % batch[d];
                    rest /= batch[d];
                    const bool has_a = d + ra >= rank, has_b = d + rb >= rank;
                    const int64_t da = has_a ? as[d + ra - rank] : 1, db = has_b ? bs[d + rb - rank] : 1;
                    ma += (da == 1 ? 0 : i) * sa;
                    mb += (db == 1 ? 0 : i) * sb;
                    sa *= da;
                    sb *= db;
                }
                for (int64_t i = 0; i < m; ++i)
                    for (int64_t j = 0; j < n; ++j) {
                        double s = 0, mag = 0;
                        for (int64_t q = 0; q < k; ++q) {
                            const double x = a.get(ma * m * k + (mc.ta ? q * m + i : i * k + q));
                            const double y = b.get(mb * k * n + (mc.tb ? j * k + q : q * n + j));
                            s += x * y;
                            mag += std::fabs(x * y);
                        }
                        const double got = res.out.get((t * m + i) * n + j);
                        if (std::fabs(got - s) > 1e-6 * mag + 1e-30) ++bad;
                    }
            }
            CHECK(bad == 0);
        }
    }
}

// max_pool's row and column passes (and the channels-last pixel pass) have
// AVX2 and AVX-512 versions for f32: on every instruction set the result is
// the scalar reference's, bit for bit, with NaN (propagated), infinities,
// windows in the padding (-inf), stride 1, 2 and 3, dilation, and rows wide
// enough for the vector loops and their tails.
TEST_CASE("simd: max_pool gives the reference's bits on every instruction set, NaN included") {
    struct Case {
        int64_t h, w, k, s, d, p;
    };
    const Case cases[] = {{23, 41, 3, 2, 1, 1}, {19, 70, 3, 1, 1, 1}, {9, 33, 2, 2, 1, 0},
                          {12, 50, 3, 3, 1, 2}, {15, 37, 3, 1, 2, 2}, {4, 8, 5, 2, 1, 4}};
    // Layouts: -1 NCHW, 0 NHWC, 8 nChw8c, 16 nChw16c ([N][C / block][H][W][block]).
    for (const Case& c : cases) {
        for (int64_t block : {int64_t{-1}, int64_t{0}, int64_t{8}, int64_t{16}})
        // 37: two AVX-512 channel blocks and a tail; 85: the four-block
        // loop (64 channels with AVX-512, 2 x 32 with AVX2), then a block and a
        // tail; 16 and 48 for the blocked layouts (four pixels at a time
        // where their windows are inside the input, one at a time elsewhere).
        for (int64_t ch : {int64_t{11}, int64_t{37}, int64_t{85}, int64_t{16}, int64_t{48}}) {
            if ((block > 0) != (ch % 16 == 0)) continue;
            const bool nhwc = block == 0;
            // The element (b, cc, i, j) of an h x w array in the layout.
            auto index = [&](int64_t b, int64_t cc, int64_t i, int64_t j, int64_t h, int64_t w) {
                if (block > 0) return (((b * (ch / block) + cc / block) * h + i) * w + j) * block + cc % block;
                return nhwc ? ((b * h + i) * w + j) * ch + cc : ((b * ch + cc) * h + i) * w + j;
            };
            const int64_t oh = (c.h + 2 * c.p - (c.k - 1) * c.d - 1) / c.s + 1;
            const int64_t ow = (c.w + 2 * c.p - (c.k - 1) * c.d - 1) / c.s + 1;
            Tensor x = random_tensor(DType::F32, nhwc ? Shape{2, c.h, c.w, ch} : Shape{2, ch, c.h, c.w}, -5, 5);
            for (int64_t i = 0; i < x.n(); i += 97) x.set(i, kNaN);
            for (int64_t i = 13; i < x.n(); i += 89) x.set(i, kInf);
            for (int64_t i = 29; i < x.n(); i += 83) x.set(i, -kInf);
            // NaNs with other payloads and signs (a window's first NaN is the
            // one kept), and zeros of both signs (max keeps its first operand's on a tie).
            for (int64_t i = 41; i < x.n(); i += 101) x.set(i, -kNaN);
            for (int64_t i = 53; i < x.n(); i += 107) x.set(i, std::bit_cast<float>(0x7fc01234u));
            for (int64_t i = 7; i < x.n(); i += 11) x.set(i, (i / 11) % 2 ? 0.0f : -0.0f);
            // The reference: each output the max of its window's elements, NaN once one is, -inf for none.
            auto at = [&](int64_t b, int64_t cc, int64_t i, int64_t j) { return x.get(index(b, cc, i, j, c.h, c.w)); };
            std::vector<double> ref;
            const Shape out_shape = nhwc ? Shape{2, oh, ow, ch} : Shape{2, ch, oh, ow};
            ref.resize(static_cast<size_t>(numel(out_shape)));
            for (int64_t b = 0; b < 2; ++b)
                for (int64_t cc = 0; cc < ch; ++cc)
                    for (int64_t i = 0; i < oh; ++i)
                        for (int64_t j = 0; j < ow; ++j) {
                            double m = -kInf;
                            for (int64_t ki = 0; ki < c.k; ++ki)
                                for (int64_t kj = 0; kj < c.k; ++kj) {
                                    const int64_t ii = i * c.s + ki * c.d - c.p, jj = j * c.s + kj * c.d - c.p;
                                    if (ii < 0 || ii >= c.h || jj < 0 || jj >= c.w) continue;
                                    const double v = at(b, cc, ii, jj);
                                    if (std::isnan(v) || std::isnan(m)) m = kNaN;
                                    else m = std::max(m, v);
                                }
                            const int64_t o = index(b, cc, i, j, oh, ow);
                            ref[static_cast<size_t>(o)] = m;
                        }
            const std::vector<NamedAttr> attrs = {{"kernel_shape", Ints({c.k, c.k}), {}},
                                                  {"strides", Ints({c.s, c.s}), {}},
                                                  {"dilations", Ints({c.d, c.d}), {}},
                                                  {"pads", Ints({c.p, c.p, c.p, c.p}), {}}};
            std::vector<uint32_t> baseline_bits;  // the scalar path's output, the first ISA's
            for (kernels::Isa isa : isas()) {
                IsaScope scope(isa);
                INFO("h ", c.h, " w ", c.w, " k ", c.k, " s ", c.s, " d ", c.d, " p ", c.p, " block ", block,
                     " ch ", ch, " isa ", std::string(kernels::isa_name(isa)));
                TestGraph tg;
                // The kernel reads the NCHW shapes from the node; channels-last data flows as NHWC.
                const NodeId in = tg.input(DType::F32, Shape{2, ch, c.h, c.w});
                const NodeId id = tg.op(OpKind::MaxPool, {in}, attrs, DType::F32, Shape{2, ch, oh, ow});
                tg.g.nodes[static_cast<size_t>(id)].channels_last = block >= 0;
                tg.g.nodes[static_cast<size_t>(id)].channel_block = static_cast<uint8_t>(std::max<int64_t>(block, 0));
                Result r = run_node(tg, id, {&x}, 2);
                REQUIRE(r.error == "");
                REQUIRE(r.out.n() == static_cast<int64_t>(ref.size()));
                CHECK(mismatches(r.out, ref) == 0);
                // Bit for bit the scalar path's (NaN payloads and signed zeros included).
                std::vector<uint32_t> bits(static_cast<size_t>(r.out.n()));
                for (int64_t o = 0; o < r.out.n(); ++o)
                    bits[static_cast<size_t>(o)] = std::bit_cast<uint32_t>(static_cast<float>(r.out.get(o)));
                if (baseline_bits.empty()) baseline_bits = bits;
                CHECK(bits == baseline_bits);
            }
        }
    }
}

// A global pool whose input the layout pass holds channels-last reads it as
// NHWC or as oneDNN's nChw8c / nChw16c ([N][C / block][H * W][block]): on
// every instruction set each channel's mean is the sum of its pixels in order,
// in double, over their count, and its max NaN once a pixel is; the output,
// [N, C, 1, 1], is the same bytes in every layout. Blocks of 8 and 16 and
// NHWC channel counts with vector tails, at batch 1 (lanes split among the
// workers) and 3.
TEST_CASE("kernel global pools: channels-last inputs (NHWC, nChw8c, nChw16c) on every instruction set") {
    struct Case {
        int64_t batch, ch, block;  // block 0: NHWC
    };
    const Case cases[] = {{3, 32, 16}, {1, 48, 16}, {3, 24, 8}, {1, 8, 8}, {1, 1000, 0}, {3, 37, 0}, {2, 5, 0}};
    const int64_t h = 5, w = 7, pixels = h * w;
    for (const Case& c : cases)
        for (OpKind op : {OpKind::GlobalAvgPool, OpKind::GlobalMaxPool}) {
            const int64_t b = c.block ? c.block : c.ch;
            Tensor x = random_tensor(DType::F32, Shape{c.batch, c.ch, h, w}, -5, 5);
            for (int64_t i = 3; i < x.n(); i += 211) x.set(i, kNaN);
            // Channel cc of image n at pixel p, where the layout puts it.
            auto at = [&](int64_t n, int64_t cc, int64_t p) {
                return x.get(((n * (c.ch / b) + cc / b) * pixels + p) * b + cc % b);
            };
            std::vector<double> ref(static_cast<size_t>(c.batch * c.ch));
            for (int64_t n = 0; n < c.batch; ++n)
                for (int64_t cc = 0; cc < c.ch; ++cc) {
                    double r = op == OpKind::GlobalMaxPool ? -kInf : 0.0;
                    for (int64_t p = 0; p < pixels; ++p) {
                        const double v = at(n, cc, p);
                        if (op == OpKind::GlobalAvgPool) r += v;
                        else r = std::isnan(r) || std::isnan(v) ? kNaN : std::max(r, v);
                    }
                    ref[static_cast<size_t>(n * c.ch + cc)] =
                        op == OpKind::GlobalAvgPool ? static_cast<float>(r / static_cast<double>(pixels)) : r;
                }
            for (kernels::Isa isa : isas()) {
                IsaScope scope(isa);
                for (int threads : {1, 2}) {
                    INFO("op ", op_name(op), " batch ", c.batch, " ch ", c.ch, " block ", c.block, " threads ",
                         threads, " isa ", std::string(kernels::isa_name(isa)));
                    TestGraph tg;
                    const NodeId in = tg.input(DType::F32, Shape{c.batch, c.ch, h, w});
                    tg.g.nodes[static_cast<size_t>(in)].channels_last = true;
                    tg.g.nodes[static_cast<size_t>(in)].channel_block = static_cast<uint8_t>(c.block);
                    const NodeId id = tg.op(op, {in}, {}, DType::F32, Shape{c.batch, c.ch, 1, 1});
                    Result r = run_node(tg, id, {&x}, threads);
                    REQUIRE(r.error == "");
                    REQUIRE(r.out.n() == static_cast<int64_t>(ref.size()));
                    CHECK(mismatches(r.out, ref) == 0);
                }
            }
        }
}

// The casts of quantized models (8-bit integers to and from f32, f64 and i32)
// take a typed path (f32 to 8 bits with AVX-512 and AVX2 code of its own): on
// every instruction set the same bytes as the element-by-element conversion
// (elements::cast_element: toward zero, saturated, NaN -> 0 into 8 bits;
// i32 wraps), on values at and past every edge, and over a length with a tail.
TEST_CASE("kernel cast: the 8-bit casts' typed path gives cast_element's bytes") {
    const double specials[] = {0.0, -0.0, 0.5, -0.5, 0.999, -0.999, 1.0, -1.0, 126.9, 127.0, 127.5, 128.0,
                               -127.5, -128.0, -128.9, -129.0, 254.9, 255.0, 255.5, 256.0, 300.7, -300.7,
                               1e10, -1e10, kNaN, -kNaN, kInf, -kInf, 1e-40, 3.0e9, -3.0e9};
    const int64_t int_specials[] = {0, 1, -1, 127, 128, -128, -129, 255, 256, 1000, -1000, INT32_MAX, INT32_MIN};
    const DType eight[] = {DType::U8, DType::I8};
    const DType wide[] = {DType::F32, DType::F64, DType::I32};
    for (kernels::Isa isa : isas())
    for (DType e : eight)
        for (DType w : wide)
            for (bool to_eight : {true, false}) {
                IsaScope scope(isa);
                const DType from = to_eight ? w : e, to = to_eight ? e : w;
                INFO(std::string(dtype_name(from)), " -> ", std::string(dtype_name(to)), " isa ",
                     std::string(kernels::isa_name(isa)));
                const int64_t n = 103;  // every special, then more, with a tail past the vector blocks
                Tensor x(from, {n});
                for (int64_t i = 0; i < n; ++i) {
                    if (from == DType::I32) {
                        const int64_t v = int_specials[i % 13];
                        x.as<int32_t>()[i] = static_cast<int32_t>(v);
                    } else if (from == DType::F32 || from == DType::F64) {
                        const double v = i < 31 ? specials[i] : (i - 60) * 7.37;
                        if (from == DType::F32) x.as<float>()[i] = static_cast<float>(v);
                        else x.as<double>()[i] = v;
                    } else {
                        x.as<uint8_t>()[i] = static_cast<uint8_t>(i * 37 + 11);  // every byte pattern's kind
                    }
                }
                Result r = run_op(OpKind::Cast, {&x}, {{"dtype", W(dtype_name(to)), {}}}, to, x.shape);
                REQUIRE(r.error == "");
                Tensor want(to, {n});
                for (int64_t i = 0; i < n; ++i) elements::cast_element(to, want.data(), from, x.data(), i);
                const size_t bytes = static_cast<size_t>(n) * dtype_size(to);
                CHECK(std::memcmp(r.out.data(), want.data(), bytes) == 0);
            }
}
