// Folding with the engine's kernels (engine/api/const_eval.h): the values are
// the kernels', what the evaluator refuses it refuses before running, and a
// kernel's error is told apart from a refusal.
#include <doctest/doctest.h>

#include <cstring>

#include "engine/api/const_eval.h"
#include "engine/check/validate.h"
#include "text_parser_helpers.h"

using namespace graphrun;

namespace {

NodeId named(const Graph& g, const std::string& name) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
        if (g.nodes[i].name == name) return static_cast<NodeId>(i);
    FAIL("no node " << name);
    return kNoNode;
}

}  // namespace

TEST_CASE("const_eval: a small graph runs on the CPU kernels, the wanted values come back") {
    auto p = text_test::parse(
        "a = const([[1, 2], [3, 4]])\n"
        "b = const([10, 20])\n"
        "s = a + b\n"
        "m = a @ a\n"
        "i = const([7, -7], dtype=i64) / const([2, 2], dtype=i64)\n"
        "output s, m, i\n");
    REQUIRE(p->ok);
    std::vector<std::vector<uint8_t>> v;
    bool kernel_error = true;
    const std::string why = evaluate_constant_graph(p->g, {named(p->g, "s"), named(p->g, "m"), named(p->g, "i")},
                                                    1 << 20, UINT64_MAX, v, kernel_error);
    REQUIRE(why == "");
    CHECK_FALSE(kernel_error);
    REQUIRE(v.size() == 3);
    float s[4], m[4];
    int64_t i[2];
    REQUIRE(v[0].size() == sizeof s);
    REQUIRE(v[1].size() == sizeof m);
    REQUIRE(v[2].size() == sizeof i);
    std::memcpy(s, v[0].data(), sizeof s);
    std::memcpy(m, v[1].data(), sizeof m);
    std::memcpy(i, v[2].data(), sizeof i);
    CHECK(s[0] == 11);
    CHECK(s[3] == 24);
    CHECK(m[0] == 7);   // 1*1 + 2*3
    CHECK(m[3] == 22);  // 3*2 + 4*4
    CHECK(i[0] == 3);   // integer division truncates, as the run's kernel does
    CHECK(i[1] == -3);
}

TEST_CASE("const_eval: refusals run nothing; a kernel's error is flagged") {
    std::vector<std::vector<uint8_t>> v;
    bool kernel_error = false;
    SUBCASE("a value past max_elements") {
        auto p = text_test::parse("z = zeros([64])\ny = z + 1\n");
        REQUIRE(p->ok);
        CHECK(evaluate_constant_graph(p->g, {named(p->g, "y")}, 32, UINT64_MAX, v, kernel_error) != "");
        CHECK_FALSE(kernel_error);
    }
    SUBCASE("values past max_bytes") {
        auto p = text_test::parse("z = zeros([64])\ny = z + 1\n");
        REQUIRE(p->ok);
        CHECK(evaluate_constant_graph(p->g, {named(p->g, "y")}, 1 << 20, 300, v, kernel_error) != "");
        CHECK_FALSE(kernel_error);
        CHECK(evaluate_constant_graph(p->g, {named(p->g, "y")}, 1 << 20, 1024, v, kernel_error) == "");
    }
    SUBCASE("random numbers") {
        auto p = text_test::parse("r = random_uniform([4], seed=1)\ny = r + 1\n");
        REQUIRE(p->ok);
        CHECK(evaluate_constant_graph(p->g, {named(p->g, "y")}, 1 << 20, UINT64_MAX, v, kernel_error) != "");
        CHECK_FALSE(kernel_error);
    }
    SUBCASE("arithmetic on a storage type") {
        auto p = text_test::parse("h = const([1, 2], dtype=f16)\ny = h + h\n");
        REQUIRE(p->ok);
        CHECK(evaluate_constant_graph(p->g, {named(p->g, "y")}, 1 << 20, UINT64_MAX, v, kernel_error) != "");
        CHECK_FALSE(kernel_error);
    }
    SUBCASE("a cast of a storage type runs") {
        auto p = text_test::parse("h = const([1.5, 2], dtype=f16)\ny = cast(h, dtype=f32)\n");
        REQUIRE(p->ok);
        REQUIRE(evaluate_constant_graph(p->g, {named(p->g, "y")}, 1 << 20, UINT64_MAX, v, kernel_error) == "");
        float y[2];
        std::memcpy(y, v[0].data(), sizeof y);
        CHECK(y[0] == 1.5f);
    }
    SUBCASE("an integer division by zero is the kernel's error") {
        auto p = text_test::parse("y = const([1, 2], dtype=i64) / const([1, 0], dtype=i64)\n");
        REQUIRE(p->ok);
        const std::string why =
            evaluate_constant_graph(p->g, {named(p->g, "y")}, 1 << 20, UINT64_MAX, v, kernel_error);
        CHECK(why.find("division by zero") != std::string::npos);
        CHECK(kernel_error);
    }
}

TEST_CASE("const_eval: fold_constant_nodes folds what reads constants only, and drops what only folds read") {
    auto p = text_test::parse(
        "x = input([2])\n"
        "a = const([1, 2])\n"
        "b = a * 2\n"
        "c = b + 1\n"
        "y = x + c\n"
        "h = const([1.5, 2], dtype=f16)\n"
        "hf = cast(h, dtype=f32)\n"
        "big = fill([4096], 1.0) + 1\n"
        "output y, hf, big\n");
    REQUIRE(p->ok);
    Diagnostics d;
    REQUIRE(validate(p->g, d));
    CHECK(fold_constant_nodes(p->g, 1024) == 2);  // b, then c; not hf (a storage type), not big (16 KiB)
    REQUIRE(validate(p->g, d));                    // still a valid graph
    const Node& c = p->g.node(named(p->g, "c"));
    CHECK(c.op == OpKind::Const);
    CHECK(c.inputs.empty());
    float cv[2];
    REQUIRE(c.literal.size() == sizeof cv);
    std::memcpy(cv, c.literal.data(), sizeof cv);
    CHECK(cv[0] == 3);
    CHECK(cv[1] == 5);
    // a and b were read by folds only: gone. y still reads x and c.
    for (const Node& n : p->g.nodes) {
        CHECK(n.name != "a");
        CHECK(n.name != "b");
    }
    const Node& y = p->g.node(named(p->g, "y"));
    REQUIRE(y.inputs.size() == 2);
    CHECK(p->g.node(y.inputs[1].id).name == "c");
    CHECK(p->g.node(named(p->g, "hf")).op == OpKind::Cast);
    CHECK(p->g.node(named(p->g, "big")).op == OpKind::Add);
}
