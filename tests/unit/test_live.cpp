// The live session (engine/api/live.h, SPEC section 8): statements run one at
// a time in one session; names hold values; the strategies release what no
// name holds. Memory figures are derived here by hand from the buffer sizes
// (each buffer rounded up to 64 bytes), not from the engine.
#include <doctest/doctest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/api/live.h"
#include "engine/base/interrupt.h"

using namespace graphrun;

namespace {

LiveOptions cpu_options(CleanupStrategy s) {
    LiveOptions o;
    o.cleanup = s;
    o.placement.device = "cpu";
    o.threads = 1;
    return o;
}

MemoryStats cpu(const LiveSession& live) { return live.stats().at("cpu"); }

std::vector<float> floats(const HostTensor& t) {
    std::vector<float> v(t.data.size() / sizeof(float));
    std::memcpy(v.data(), t.data.data(), t.data.size());
    return v;
}

void ok(const StatementResult& r) {
    if (r.error) FAIL(r.error->message);
}

}  // namespace

TEST_CASE("live: names persist between statements and a bare expression shows its value") {
    LiveSession live(cpu_options(CleanupStrategy::Safepoint));
    ok(live.execute("x = [1, 2, 3]"));
    ok(live.execute("y = x * 2 + 1"));
    StatementResult r = live.execute("y");
    ok(r);
    REQUIRE(r.shown);
    CHECK(floats(*r.shown) == std::vector<float>{3, 5, 7});
    r = live.execute("x @ y");
    ok(r);
    REQUIRE(r.shown);
    CHECK(floats(*r.shown) == std::vector<float>{1 * 3 + 2 * 5 + 3 * 7});
    CHECK(live.names() == std::vector<std::string>{"_", "x", "y"});
    r = live.execute("z = y - x");
    ok(r);
    CHECK_FALSE(r.shown);
    CHECK(r.bound == std::vector<std::string>{"z"});
}

TEST_CASE("live: an error leaves the session and every name as they were") {
    LiveSession live(cpu_options(CleanupStrategy::Safepoint));
    ok(live.execute("a = [[1, 2], [3, 4]]"));
    ok(live.execute("b = [1, 2, 3]"));
    const MemoryStats before = cpu(live);
    StatementResult r = live.execute("a = a @ b", "<repl>", 3);
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::InvalidGraph);
    REQUIRE_FALSE(r.error->diagnostics.empty());
    CHECK(r.error->diagnostics[0].find("<repl>:3:") != std::string::npos);
    CHECK(r.error->diagnostics[0].find("inner dimensions") != std::string::npos);
    auto a = live.value("a");
    REQUIRE(a);
    CHECK(floats(*a) == std::vector<float>{1, 2, 3, 4});
    CHECK(cpu(live).in_use == before.in_use);
    r = live.execute("c = nosuchop(a)");
    REQUIRE(r.error);
    r = live.execute("del q");
    REQUIRE(r.error);
    CHECK(r.error->message.find("no name 'q'") != std::string::npos);
    CHECK(live.names() == std::vector<std::string>{"a", "b"});
}

TEST_CASE("live: close holds n*m values, safepoint the live set, close() gives everything back") {
    // x: 1024 f32 = 4096 bytes; each statement's scalar literal is one 64-byte buffer.
    const uint64_t value = 4096, literal = 64;
    SUBCASE("close") {
        LiveSession live(cpu_options(CleanupStrategy::Close));
        ok(live.execute("x = zeros([1024])"));
        ok(live.execute("repeat 10 { x = x + 1; y = x * 2 }"));
        // zeros, then per pass two statements of a literal and a value each.
        CHECK(cpu(live).in_use == value + 10 * 2 * (value + literal));
        CHECK(cpu(live).peak == value + 10 * 2 * (value + literal));
        TeardownReport t = live.close();
        CHECK(t.after.at("cpu").in_use == 0);
        CHECK(t.after.at("cpu").live == 0);
        CHECK(t.after.at("cpu").allocs == t.after.at("cpu").frees);
        CHECK(live.names().empty());
        CHECK(cpu(live).allocs == 0);  // a fresh session
    }
    SUBCASE("safepoint") {
        LiveSession live(cpu_options(CleanupStrategy::Safepoint));
        ok(live.execute("x = zeros([1024])"));
        ok(live.execute("repeat 10 { x = x + 1; y = x * 2 }"));
        // Held at the end: x alone (y was the body's own name, released
        // with the loop; the first x when the text's x replaced it).
        CHECK(cpu(live).in_use == value);
        // The peak, from the second pass on: the store's first x (held until
        // the text ends), the last pass's x and y, the literal and the new x.
        CHECK(cpu(live).peak == 4 * value + literal);
        ok(live.execute("repeat 1000 { x = x + 1 }"));
        CHECK(cpu(live).in_use == value);  // it does not grow with the passes
        ok(live.execute("y = x * 2"));
        CHECK(cpu(live).in_use == 2 * value);  // the literal went at the text's end, a safe point
        std::optional<ReleaseReport> d = live.del("y");
        REQUIRE(d);
        CHECK(d->bytes == value);
        CHECK(cpu(live).in_use == value);
        ok(live.execute("w = 1"));
        CHECK(cpu(live).in_use == value + literal);
        ReleaseReport all = live.reset();
        CHECK(all.names == 2);
        CHECK(all.bytes == value + literal);
        CHECK(cpu(live).in_use == 0);
        auto x = live.value("x");
        CHECK_FALSE(x);
    }
}

TEST_CASE("live: values equal graph mode's, loop-carried and rebound names included") {
    LiveSession live(cpu_options(CleanupStrategy::Background));
    ok(live.execute("x = ones([4])\nrepeat 5 { x = x * 2; t = x + 1 }\ns = reduce_sum(x)"));
    auto s = live.value("s");
    REQUIRE(s);
    CHECK(floats(*s) == std::vector<float>{4 * 32});
    CHECK_FALSE(live.value("t"));  // local to the body
    ok(live.execute("x = x - 1; x = x / 31"));
    auto x = live.value("x");
    REQUIRE(x);
    CHECK(floats(*x) == std::vector<float>{1, 1, 1, 1});
}

TEST_CASE("live: needs_more says when a block or bracket is still open") {
    CHECK(LiveSession::needs_more("repeat 3 {"));
    CHECK(LiveSession::needs_more("x = [1, 2,"));
    CHECK(LiveSession::needs_more("x = a +"));
    CHECK(LiveSession::needs_more("with device(\"cpu\") {\n x = 1"));
    CHECK_FALSE(LiveSession::needs_more("repeat 3 { x = x + 1 }"));
    CHECK_FALSE(LiveSession::needs_more("x = \"{\"  # {"));
    CHECK_FALSE(LiveSession::needs_more(""));
}

TEST_CASE("live: an interrupt stops the statement, not the session") {
    LiveSession live(cpu_options(CleanupStrategy::Safepoint));
    ok(live.execute("x = zeros([4])"));
    g_interrupt_signal.store(2);
    StatementResult r = live.execute("repeat 1000 { x = x + 1 }");
    clear_interrupt();
    REQUIRE(r.error);
    CHECK(r.error->kind == ErrorKind::Interrupted);
    auto x = live.value("x");
    REQUIRE(x);
    CHECK(floats(*x) == std::vector<float>{0, 0, 0, 0});
    ok(live.execute("x = x + 1"));
    CHECK(floats(*live.value("x")) == std::vector<float>{1, 1, 1, 1});
}

TEST_CASE("live: switching the strategy releases what the old one held") {
    LiveSession live(cpu_options(CleanupStrategy::Close));
    ok(live.execute("x = zeros([1024])"));
    ok(live.execute("repeat 3 { x = x + 1 }"));
    CHECK(cpu(live).in_use == 4096 + 3 * (4096 + 64));
    live.set_cleanup(CleanupStrategy::Safepoint);
    CHECK(live.cleanup() == CleanupStrategy::Safepoint);
    CHECK(cpu(live).in_use == 4096);
    CHECK(cpu(live).pending == 0);
}
