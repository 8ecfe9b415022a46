// The JSON front end and writer: SPEC section 2, errors with their pointers, and
// write_json -> parse_json round trips.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/base/json_pointer.h"
#include "engine/frontend/json_document.h"
#include "engine/frontend/json_reader.h"
#include "engine/frontend/json_writer.h"
#include "engine/frontend/text_parser.h"

using namespace graphrun;

namespace {

struct Parsed {
    std::shared_ptr<const std::string> source;  // where the places are (Loc::in_json)
    Graph g;
    Diagnostics diag;
    bool ok = false;
    // A place's JSON pointer, as a message shows it.
    std::string pointer(const Loc& loc) const { return diag.pointer(loc); }
};

// Parsed as the loader parses a file: the diagnostics know the source, and
// the places are offsets in it. `with_source` false: they are pointers.
Parsed parse(const std::string& src, bool with_source = true) {
    Parsed p;
    p.source = std::make_shared<const std::string>(src);
    p.diag = Diagnostics("t.json", with_source ? std::string_view(*p.source) : std::string_view());
    p.ok = parse_json(*p.source, p.g, p.diag);
    return p;
}

std::string messages(const Diagnostics& d) {
    std::string s;
    for (const Diagnostic& x : d.all()) s += d.pointer(x.loc) + " " + x.message + "\n";
    return s;
}

// The single error a bad document gives: its pointer and a piece of its message.
void expect_error(const std::string& src, const std::string& pointer, const std::string& part) {
    Parsed p = parse(src);
    INFO(src);
    INFO(messages(p.diag));
    CHECK_FALSE(p.ok);
    REQUIRE(p.diag.error_count() >= 1);
    CHECK(p.pointer(p.diag.all()[0].loc) == pointer);
    CHECK(p.diag.all()[0].message.find(part) != std::string::npos);
}

// A graph with `nodes` (a JSON array body) and the usual header.
std::string doc(const std::string& nodes, const std::string& rest = "") {
    return "{\"graphrun\": 1, \"nodes\": [" + nodes + "]" + rest + "}";
}

NodeId id_of(const Graph& g, const std::string& display) {
    for (size_t i = 0; i < g.nodes.size(); ++i)
        if (g.nodes[i].display() == display && g.nodes[i].op != OpKind::LoopParam)
            return static_cast<NodeId>(i);
    return kNoNode;
}

bool stmts_equal(const std::vector<Stmt>& a, const std::vector<Stmt>& b) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i)
        if (a[i].kind != b[i].kind || a[i].index != b[i].index) return false;
    return true;
}

// Same graph as the IR sees it: nodes in order with their names, ops, inputs,
// attributes, devices and weak flags; the same statements, repeats, carries and outputs.
bool graphs_equal(const Graph& a, const Graph& b, std::string& why) {
    if (a.nodes.size() != b.nodes.size()) {
        why = "node count " + std::to_string(a.nodes.size()) + " vs " +
              std::to_string(b.nodes.size());
        return false;
    }
    for (size_t i = 0; i < a.nodes.size(); ++i) {
        const Node& x = a.nodes[i];
        const Node& y = b.nodes[i];
        why = "node " + std::to_string(i) + " (" + std::string(x.display()) + " / " + std::string(y.display()) + "): ";
        if (x.name != y.name || x.display() != y.display()) return why += "name", false;
        if (x.op != y.op) return why += "op", false;
        if (x.weak != y.weak) return why += "weak", false;
        if (x.device != y.device) return why += "device", false;
        if (x.repeat != y.repeat) return why += "repeat", false;
        if (x.inputs.size() != y.inputs.size()) return why += "input count", false;
        for (size_t k = 0; k < x.inputs.size(); ++k)
            if (x.inputs[k].id != y.inputs[k].id) return why += "input " + std::to_string(k), false;
        if (x.attrs.size() != y.attrs.size()) return why += "attr count", false;
        for (size_t k = 0; k < x.attrs.size(); ++k)
            if (x.attrs[k].name != y.attrs[k].name ||
                !attr_equal(x.attrs[k].value, y.attrs[k].value))
                return why += "attr " + x.attrs[k].name, false;
    }
    why = "statements";
    if (!stmts_equal(a.top, b.top)) return false;
    if (a.repeats.size() != b.repeats.size()) return why = "repeat count", false;
    for (size_t r = 0; r < a.repeats.size(); ++r) {
        const Repeat& x = a.repeats[r];
        const Repeat& y = b.repeats[r];
        why = "repeat " + std::to_string(r);
        if (x.count != y.count || x.parent != y.parent || !stmts_equal(x.body, y.body))
            return false;
        if (x.carries.size() != y.carries.size()) return why += " carries", false;
        for (size_t c = 0; c < x.carries.size(); ++c) {
            const Carry& p = x.carries[c];
            const Carry& q = y.carries[c];
            if (p.name != q.name || p.param != q.param || p.init != q.init || p.update != q.update)
                return why += " carry " + p.name, false;
        }
    }
    why = "outputs";
    if (a.outputs.size() != b.outputs.size()) return false;
    for (size_t i = 0; i < a.outputs.size(); ++i)
        if (a.outputs[i].name != b.outputs[i].name || a.outputs[i].id != b.outputs[i].id)
            return false;
    why.clear();
    return true;
}

// write -> read gives the same graph, and writing that again gives the same text.
void check_round_trip(const Graph& g) {
    std::string text = write_json(g);
    INFO(text);
    Parsed back = parse(text);
    INFO(messages(back.diag));
    REQUIRE(back.ok);
    std::string why;
    CHECK_MESSAGE(graphs_equal(g, back.g, why), why);
    CHECK(write_json(back.g) == text);
}

const char* kSpecExample = R"({
  "graphrun": 1,
  "nodes": [
    {"name": "a", "op": "const", "value": [[1, 2, 3], [4, 5, 6]]},
    {"name": "b", "op": "const", "value": [1, 2, 3, 4, 5, 6], "shape": [3, 2], "dtype": "f32"},
    {"name": "c", "op": "matmul", "inputs": ["a", "b"], "device": "gpu:0"},
    {"name": "s", "op": "reduce_sum", "inputs": ["c"], "attrs": {"axes": [1], "keepdims": true}},
    {"name": "x", "op": "ones", "attrs": {"shape": [2]}},
    {"repeat": 3, "body": [
      {"name": "x", "op": "matmul", "inputs": ["c", "x"]}
    ]}
  ],
  "outputs": ["c", "s", "x"]
})";

}  // namespace

TEST_CASE("json: the SPEC example builds the expected graph") {
    Parsed p = parse(kSpecExample);
    INFO(messages(p.diag));
    REQUIRE(p.ok);
    const Graph& g = p.g;
    CHECK(g.from_json);

    NodeId a = id_of(g, "a"), b = id_of(g, "b"), c = id_of(g, "c"), s = id_of(g, "s"),
           x = id_of(g, "x"), x2 = id_of(g, "x#2");
    REQUIRE(a != kNoNode);
    REQUIRE(x2 != kNoNode);

    const Node& na = g.node(a);
    CHECK(na.op == OpKind::Const);
    CHECK(p.pointer(na.loc) == "/nodes/0");
    REQUIRE(na.attrs.size() == 1);
    CHECK(na.attrs[0].name == "value");
    CHECK(p.pointer(na.attrs[0].loc) == "/nodes/0/value");
    const Attr& v = na.attrs[0].value;
    REQUIRE(v.kind == Attr::Kind::List);
    REQUIRE(v.list.size() == 2);
    CHECK(v.list[1].list[2].is_int);
    CHECK(v.list[1].list[2].i == 6);
    CHECK(p.pointer(v.list[1].list[2].loc) == "/nodes/0/value/1/2");

    const Node& nb = g.node(b);
    REQUIRE(nb.attrs.size() == 3);
    CHECK(nb.attrs[0].name == "value");
    CHECK(nb.attrs[1].name == "shape");
    CHECK(nb.attrs[2].name == "dtype");
    CHECK(nb.attrs[2].value.kind == Attr::Kind::Ident);
    CHECK(nb.attrs[2].value.s == "f32");

    const Node& nc = g.node(c);
    CHECK(nc.op == OpKind::Matmul);
    REQUIRE(nc.inputs.size() == 2);
    CHECK(nc.inputs[0].id == a);
    CHECK(nc.inputs[1].id == b);
    CHECK(p.pointer(nc.inputs[1].loc) == "/nodes/2/inputs/1");
    CHECK(nc.device == "gpu:0");
    CHECK(p.pointer(nc.device_loc) == "/nodes/2/device");

    const Node& ns = g.node(s);
    CHECK(ns.op == OpKind::ReduceSum);
    REQUIRE(ns.attrs.size() == 2);
    CHECK(ns.attrs[0].name == "axes");
    CHECK(p.pointer(ns.attrs[0].loc) == "/nodes/3/attrs/axes");
    CHECK(p.pointer(ns.attrs[0].value.list[0].loc) == "/nodes/3/attrs/axes/0");
    CHECK(ns.attrs[1].value.kind == Attr::Kind::Bool);
    CHECK(ns.attrs[1].value.b);

    CHECK(g.node(x).op == OpKind::Ones);

    REQUIRE(g.repeats.size() == 1);
    const Repeat& r = g.repeats[0];
    CHECK(r.count == 3);
    CHECK(p.pointer(r.loc) == "/nodes/5");
    REQUIRE(r.carries.size() == 1);
    const Carry& carry = r.carries[0];
    CHECK(carry.name == "x");
    CHECK(carry.init == x);
    CHECK(carry.update == x2);
    CHECK(g.node(carry.param).op == OpKind::LoopParam);
    const Node& nx2 = g.node(x2);
    CHECK(nx2.repeat == 0);
    CHECK(p.pointer(nx2.loc) == "/nodes/5/body/0");
    REQUIRE(nx2.inputs.size() == 2);
    CHECK(nx2.inputs[0].id == c);  // read only: not carried
    CHECK(nx2.inputs[1].id == carry.param);

    REQUIRE(g.outputs.size() == 3);
    CHECK(g.outputs[0].id == c);
    CHECK(g.outputs[1].id == s);
    CHECK(g.outputs[2].id == carry.param);  // after the loop, x is the loop's final value
    CHECK(p.pointer(g.outputs[2].loc) == "/outputs/2");
    CHECK(g.explicit_outputs);
}

TEST_CASE(
    "json: shorthand value, shape and dtype are attributes; without outputs the last node is "
    "fetched") {
    Parsed p = parse(
        doc(R"({"name": "t", "op": "const", "value": 1.5, "shape": [2, 2], "dtype": "float64"},
                            {"name": "f", "op": "fill", "attrs": {"shape": [3]}, "value": "-inf"})"));
    INFO(messages(p.diag));
    REQUIRE(p.ok);
    const Node& t = p.g.node(id_of(p.g, "t"));
    REQUIRE(t.attrs.size() == 3);
    CHECK(t.attrs[0].value.f == 1.5);
    CHECK_FALSE(t.attrs[0].value.is_int);
    CHECK(p.pointer(t.attrs[1].loc) == "/nodes/0/shape");
    CHECK(t.attrs[2].value.s == "float64");
    const Node& f = p.g.node(id_of(p.g, "f"));
    REQUIRE(f.attrs.size() == 2);  // in the order written
    CHECK(f.attrs[0].name == "shape");
    CHECK(f.attrs[1].name == "value");
    CHECK(std::isinf(f.attrs[1].value.f));
    CHECK(f.attrs[1].value.f < 0);
    REQUIRE(p.g.outputs.size() == 1);
    CHECK(p.g.outputs[0].name == "f");
    CHECK_FALSE(p.g.explicit_outputs);
}

TEST_CASE("json: numbers in value: integers, floats, big integers, nan and inf strings") {
    Parsed p =
        parse(doc(R"({"name": "v", "op": "const", "value": [1, -2, 2.0, 1e-3, 18446744073709551615,
                            -9223372036854775808, "nan", "inf", "-inf", true]})"));
    INFO(messages(p.diag));
    REQUIRE(p.ok);
    const Attr& v = p.g.node(id_of(p.g, "v")).attrs[0].value;
    REQUIRE(v.list.size() == 10);
    CHECK((v.list[0].is_int && v.list[0].i == 1));
    CHECK((v.list[1].is_int && v.list[1].i == -2));
    CHECK((!v.list[2].is_int && v.list[2].f == 2.0));
    CHECK(v.list[3].f == 1e-3);
    CHECK_FALSE(v.list[4].is_int);  // beyond int64
    CHECK(v.list[4].f == 18446744073709551615.0);
    CHECK((v.list[5].is_int && v.list[5].i == INT64_MIN));
    CHECK(std::isnan(v.list[6].f));
    CHECK(v.list[7].f == INFINITY);
    CHECK(v.list[8].f == -INFINITY);
    CHECK(v.list[9].kind == Attr::Kind::Bool);
    CHECK(p.pointer(v.list[8].loc) == "/nodes/0/value/8");
}

TEST_CASE("json: inline numbers in inputs are scalar literals, weak for binary ops") {
    Parsed p = parse(doc(R"({"name": "a", "op": "ones", "shape": [2], "dtype": "i32"},
                            {"name": "b", "op": "mul", "inputs": ["a", 2]},
                            {"name": "c", "op": "add", "inputs": ["nan", "b"]},
                            {"name": "d", "op": "concat", "inputs": ["c", 1.5]})"));
    INFO(messages(p.diag));
    REQUIRE(p.ok);
    const Graph& g = p.g;
    const Node& b = g.node(id_of(g, "b"));
    const Node& lit = g.node(b.inputs[1].id);
    CHECK(lit.op == OpKind::Const);
    CHECK(lit.weak);
    CHECK(lit.generated);
    CHECK(p.pointer(lit.loc) == "/nodes/1/inputs/1");
    CHECK(lit.attrs[0].value.is_int);
    CHECK(lit.attrs[0].value.i == 2);
    CHECK(b.inputs[1].id + 1 == id_of(g, "b"));  // made just before its consumer
    const Node& c = g.node(id_of(g, "c"));
    CHECK(g.node(c.inputs[0].id).weak);
    CHECK(std::isnan(g.node(c.inputs[0].id).attrs[0].value.f));
    const Node& d = g.node(id_of(g, "d"));
    CHECK_FALSE(g.node(d.inputs[1].id).weak);  // concat is not a binary elementwise op
    CHECK(p.pointer(d.inputs[1].loc) == "/nodes/3/inputs/1");
    // Generated names never take a user's.
    CHECK(lit.name == "const");
    CHECK(g.node(c.inputs[0].id).name == "const_1");
}

TEST_CASE("json: errors carry the pointer of the bad value") {
    expect_error("[1, 2]", "", "a JSON graph is an object");
    expect_error("\"graph\"", "", "got \"graph\"");
    expect_error(R"({"nodes": []})", "", "missing \"graphrun\"");
    expect_error(R"({"graphrun": 2, "nodes": []})", "/graphrun", "unsupported format version 2");
    expect_error(R"({"graphrun": "1", "nodes": []})", "/graphrun", "got \"1\"");
    expect_error(R"({"graphrun": 1})", "", "missing \"nodes\"");
    expect_error(R"({"graphrun": 1, "nodes": {}})", "/nodes", "must be an array");
    expect_error(doc(""), "/nodes", "empty program");
    expect_error(doc("3"), "/nodes/0", "a node must be an object");
    expect_error(doc(R"({"op": "ones", "shape": [2]})"), "/nodes/0", "no \"name\"");
    expect_error(doc(R"({"name": 3, "op": "ones", "shape": [2]})"), "/nodes/0/name",
                 "must be a string");
    expect_error(doc(R"({"name": "1x", "op": "ones", "shape": [2]})"), "/nodes/0/name",
                 "not an identifier");
    expect_error(doc(R"({"name": "a-b", "op": "ones", "shape": [2]})"), "/nodes/0/name",
                 "not an identifier");
    expect_error(doc(R"({"name": "", "op": "ones", "shape": [2]})"), "/nodes/0/name",
                 "not an identifier");
    for (const char* kw : {"with", "repeat", "output", "true", "false", "nan", "inf"})
        expect_error(doc(std::string(R"({"name": ")") + kw + R"(", "op": "ones", "shape": [2]})"),
                     "/nodes/0/name", "keyword");
    expect_error(doc(R"({"name": "a"})"), "/nodes/0", "has no \"op\"");
    expect_error(doc(R"({"name": "a", "op": 1})"), "/nodes/0/op", "must be a string");
    expect_error(
        doc(R"({"name": "a", "op": "ones", "shape": [2]}, {"name": "b", "op": "reluu", "inputs": ["a"]})"),
        "/nodes/1/op", "unknown op \"reluu\"; did you mean \"relu\"?");
    expect_error(doc(R"({"name": "a", "op": "frobnicate"})"), "/nodes/0/op",
                 "unknown op \"frobnicate\"");
    expect_error(doc(R"({"name": "a", "op": "relu", "inputs": "b"})"), "/nodes/0/inputs",
                 "must be an array");
    expect_error(
        doc(R"({"name": "a", "op": "ones", "shape": [2]}, {"name": "b", "op": "add", "inputs": ["a", null]})"),
        "/nodes/1/inputs/1", "an input must be");
    expect_error(
        doc(R"({"name": "a", "op": "ones", "shape": [2]}, {"name": "b", "op": "add", "inputs": ["a", [1]]})"),
        "/nodes/1/inputs/1", "got an array");
    expect_error(
        doc(R"({"name": "abc", "op": "ones", "shape": [2]}, {"name": "b", "op": "relu", "inputs": ["abd"]})"),
        "/nodes/1/inputs/0", "unknown name 'abd'; did you mean 'abc'?");
    expect_error(doc(R"({"name": "a", "op": "ones", "attrs": [1]})"), "/nodes/0/attrs",
                 "must be an object");
    expect_error(doc(R"({"name": "a", "op": "const", "attrs": {"value": {"x": 1}}})"),
                 "/nodes/0/attrs/value", "cannot be an object");
    expect_error(doc(R"({"name": "a", "op": "const", "value": [1, [2, null]]})"),
                 "/nodes/0/value/1/1", "cannot be null");
    expect_error(doc(R"({"name": "a", "op": "const", "value": 1, "attrs": {"value": 2}})"),
                 "/nodes/0/value", "given both here and in \"attrs\"");
    expect_error(doc(R"({"name": "a", "op": "ones", "attrs": {"shape": [2], "device": "gpu"}})"),
                 "/nodes/0/attrs/device", "not an attribute");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2], "device": 0})"),
                 "/nodes/0/device", "must be a string");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2], "inptus": []})"),
                 "/nodes/0/inptus", "unknown key \"inptus\"; did you mean \"inputs\"?");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2], "colour": "red"})"),
                 "/nodes/0/colour", "a node has \"name\"");
    expect_error(
        doc(R"({"name": "a", "op": "ones", "shape": [2]}, {"name": "s", "op": "reduce_sum", "inputs": ["a"], "keepdims": true})"),
        "/nodes/1/keepdims", "attributes go in \"attrs\"");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2]})", R"(, "output": ["a"])"),
                 "/output", "did you mean \"outputs\"?");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2]})", R"(, "outputs": "a")"),
                 "/outputs", "must be an array");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2]})", R"(, "outputs": [])"),
                 "/outputs", "empty");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2]})", R"(, "outputs": ["a", 1])"),
                 "/outputs/1", "an output must be a name");
    expect_error(doc(R"({"name": "abc", "op": "ones", "shape": [2]})", R"(, "outputs": ["abd"])"),
                 "/outputs/0", "unknown output 'abd'");
    expect_error(doc(R"({"name": "a", "op": "ones", "shape": [2], "name": "b"})"), "/nodes/0/name",
                 "duplicate key \"name\"");
    expect_error(R"({"graphrun": 1, "a/b~": 1, "nodes": []})", "/a~1b~0", "unknown key");
}

TEST_CASE("json: repeat items: count, body, scope") {
    expect_error(doc(R"({"repeat": -1, "body": []})"), "/nodes/0/repeat", "non-negative integer");
    expect_error(doc(R"({"repeat": 2.5, "body": []})"), "/nodes/0/repeat", "non-negative integer");
    expect_error(doc(R"({"repeat": "3", "body": []})"), "/nodes/0/repeat", "got \"3\"");
    expect_error(doc(R"({"repeat": 18446744073709551615, "body": []})"), "/nodes/0/repeat",
                 "too large");
    expect_error(doc(R"({"body": []})"), "/nodes/0", "no \"repeat\"");
    expect_error(doc(R"({"repeat": 2})"), "/nodes/0", "no \"body\"");
    expect_error(doc(R"({"repeat": 2, "body": {}})"), "/nodes/0/body", "must be an array");
    expect_error(doc(R"({"repeat": 2, "bdy": []})"), "/nodes/0/bdy", "did you mean \"body\"?");
    expect_error(doc(R"({"repeat": 2, "body": [], "name": "x"})"), "/nodes/0/name",
                 "a loop has only");
    expect_error(doc(R"({"name": "x", "op": "ones", "shape": [2]},
                        {"repeat": 2, "body": [{"name": "x", "op": "relu", "inputs": ["y"]}]})"),
                 "/nodes/1/body/0/inputs/0", "unknown name 'y'");
    // A name first bound in a body is local to it.
    expect_error(doc(R"({"repeat": 2, "body": [{"name": "t", "op": "ones", "shape": [2]}]},
                        {"name": "u", "op": "relu", "inputs": ["t"]})"),
                 "/nodes/1/inputs/0", "local to the repeat body");

    Parsed p = parse(doc(R"({"name": "x", "op": "ones", "shape": [2]},
        {"repeat": 0, "body": [{"repeat": 2, "body": [{"name": "x", "op": "add", "inputs": ["x", 1]}]}]})"));
    INFO(messages(p.diag));
    REQUIRE(p.ok);
    REQUIRE(p.g.repeats.size() == 2);
    CHECK(p.g.repeats[0].count == 0);
    CHECK(p.g.repeats[1].parent == 0);
    CHECK(p.g.repeats[0].carries.size() == 1);
    CHECK(p.g.repeats[1].carries.size() == 1);
    CHECK(p.g.node(p.g.outputs[0].id).op == OpKind::LoopParam);
}

TEST_CASE("json: a name bound again; a node after a failed one sees its name") {
    Parsed p = parse(doc(R"({"name": "x", "op": "ones", "shape": [2]},
                            {"name": "x", "op": "relu", "inputs": ["x"]},
                            {"name": "y", "op": "relu", "inputs": ["x"]})"));
    REQUIRE(p.ok);
    NodeId x2 = id_of(p.g, "x#2");
    REQUIRE(x2 != kNoNode);
    CHECK(p.g.node(x2).inputs[0].id == id_of(p.g, "x"));
    CHECK(p.g.node(id_of(p.g, "y")).inputs[0].id == x2);

    // The failed node still binds "b": no cascade on its uses.
    Parsed q = parse(doc(R"({"name": "b", "op": "relu", "inputs": ["nope"]},
                            {"name": "c", "op": "relu", "inputs": ["b"]},
                            {"name": "d", "op": "reluu", "inputs": ["c"]},
                            {"name": "e", "op": "add", "inputs": ["d", "c"]})"));
    CHECK_FALSE(q.ok);
    INFO(messages(q.diag));
    REQUIRE(q.diag.error_count() == 2);
    CHECK(q.pointer(q.diag.all()[0].loc) == "/nodes/0/inputs/0");
    CHECK(q.pointer(q.diag.all()[1].loc) == "/nodes/2/op");
}

TEST_CASE("json: every independent error in one run, capped") {
    Parsed p = parse(R"({"graphrun": 1, "extra": 1, "nodes": [
        {"name": "a", "op": "onez", "shape": [2]},
        {"name": "b", "op": "relu", "inputs": ["q"]},
        {"name": "repeat", "op": "ones", "shape": [2]},
        {"name": "c", "op": "const", "value": [null]}
    ], "outputs": ["zz"]})");
    INFO(messages(p.diag));
    REQUIRE(p.diag.error_count() == 6);
    CHECK(p.pointer(p.diag.all()[0].loc) == "/extra");
    CHECK(p.pointer(p.diag.all()[1].loc) == "/nodes/0/op");
    CHECK(p.pointer(p.diag.all()[2].loc) == "/nodes/1/inputs/0");
    CHECK(p.pointer(p.diag.all()[3].loc) == "/nodes/2/name");
    CHECK(p.pointer(p.diag.all()[4].loc) == "/nodes/3/value/0");
    CHECK(p.pointer(p.diag.all()[5].loc) == "/outputs/0");

    std::string many;
    for (int i = 0; i < 500; ++i)
        many += std::string(i ? "," : "") + "{\"name\": \"n" + std::to_string(i) +
                "\", \"op\": \"nop\"}";
    Parsed q = parse(doc(many));
    CHECK(q.diag.error_count() == 51);
    CHECK(q.diag.all().back().message.find("too many errors") != std::string::npos);

    std::string nulls = "{\"name\": \"v\", \"op\": \"const\", \"value\": [null";
    for (int i = 0; i < 100000; ++i) nulls += ", null";
    Parsed r = parse(doc(nulls + "]}"));
    CHECK(r.diag.error_count() == 51);
}

TEST_CASE("json: malformed JSON gives line and column") {
    auto check = [](const std::string& src, uint32_t line, uint32_t col, const std::string& part) {
        Parsed p = parse(src);
        INFO(src);
        INFO(messages(p.diag));
        CHECK_FALSE(p.ok);
        REQUIRE(p.diag.error_count() == 1);
        const Diagnostic& d = p.diag.all()[0];
        CHECK(d.loc.pointer.empty());
        CHECK(d.loc.line == line);
        CHECK(d.loc.col == col);
        CHECK(d.message.find(part) != std::string::npos);
        CHECK(d.message.find("json.exception") == std::string::npos);
    };
    check("{\"graphrun\": 1,\n \"nodes\": [,]}", 2, 12, "malformed JSON: unexpected ','");
    check("{\"graphrun\" 1}", 1, 13, "expected ':'");
    check("{\"graphrun\": 1, \"nodes\": [\n", 2, 1, "unexpected end of input");
    check("{\"graphrun\": tru}", 1, 17, "invalid literal");
    check("{\"a\": 1}\n{}", 2, 1, "expected end of input");
    check("[1e400]", 1, 2, "number 1e400 is out of range");
    check("", 1, 1, "empty input");
    check("  \n  ", 2, 3, "empty input");
    check("{\"graphrun\": 1,\n\"nodes\": [\"ab\xff\"]}", 2, 14, "ill-formed UTF-8");
    check("{\"graphrun\": 1,\n\"nodes\": [\"a\nb\"]}", 2, 13, "control character");
    // Control characters and stray bytes never reach the message raw.
    Parsed p = parse("[\"\xc3\x28\x01\"]");
    REQUIRE(p.diag.error_count() == 1);
    for (char c : p.diag.all()[0].message) CHECK(static_cast<unsigned char>(c) >= 0x20);
    CHECK(p.diag.all()[0].message.find("\\xc3") != std::string::npos);
}

TEST_CASE("json: deep nesting is an error, not a crash") {
    Parsed p = parse(std::string(100000, '['));
    REQUIRE(p.diag.error_count() == 1);
    CHECK(p.diag.all()[0].message.find("nesting too deep") != std::string::npos);
    CHECK(p.diag.all()[0].loc.line == 1);
    CHECK(p.diag.all()[0].loc.col == kMaxNesting + 1);

    std::string deep =
        "{\"graphrun\": 1, \"nodes\": [{\"name\": \"v\", \"op\": \"const\", \"value\": ";
    deep += std::string(300, '[') + "1" + std::string(300, ']') + "}]}";
    Parsed q = parse(deep);
    REQUIRE(q.diag.error_count() == 1);
    CHECK(q.diag.all()[0].message.find("nesting too deep") != std::string::npos);
    // The 257th open bracket: 3 before the value, then the 254th '[' of the value.
    size_t prefix = deep.find('[', deep.find("value"));
    CHECK(q.diag.all()[0].loc.col == prefix + kMaxNesting - 3 + 1);

    // Exactly the limit is fine (the document and node objects and the nodes
    // array take 3 levels).
    std::string ok =
        "{\"graphrun\": 1, \"nodes\": [{\"name\": \"v\", \"op\": \"const\", \"value\": ";
    ok += std::string(kMaxNesting - 3, '[') + "1" + std::string(kMaxNesting - 3, ']') + "}]}";
    Parsed r = parse(ok);
    INFO(messages(r.diag));
    CHECK(r.ok);

    // A string full of brackets is not nesting.
    Parsed s = parse(doc("{\"name\": \"v\", \"op\": \"const\", \"value\": 1, \"dtype\": \"" +
                         std::string(1000, '[') + "\"}"));
    CHECK(s.ok);
}

TEST_CASE("json: big objects and arrays stay linear") {
    std::string keys =
        "{\"graphrun\": 1, \"nodes\": [{\"name\": \"v\", \"op\": \"ones\", \"shape\": [2], "
        "\"attrs\": {";
    for (int i = 0; i < 200000; ++i)
        keys += std::string(i ? "," : "") + "\"k" + std::to_string(i) + "\": 1";
    keys += "}}]}";
    Parsed p = parse(keys);  // attribute names are validation's business
    CHECK(p.ok);
    CHECK(p.g.node(id_of(p.g, "v")).attrs.size() == 200001);
}

TEST_CASE("json: write_json format") {
    Parsed p = parse(kSpecExample);
    REQUIRE(p.ok);
    std::string text = write_json(p.g);
    CHECK(text == R"({
  "graphrun": 1,
  "nodes": [
    {"name": "a", "op": "const", "attrs": {"value": [[1, 2, 3], [4, 5, 6]]}},
    {"name": "b", "op": "const", "attrs": {"value": [1, 2, 3, 4, 5, 6], "shape": [3, 2], "dtype": "f32"}},
    {"name": "c", "op": "matmul", "inputs": ["a", "b"], "device": "gpu:0"},
    {"name": "s", "op": "reduce_sum", "inputs": ["c"], "attrs": {"axes": [1], "keepdims": true}},
    {"name": "x", "op": "ones", "attrs": {"shape": [2]}},
    {"repeat": 3, "body": [
      {"name": "x", "op": "matmul", "inputs": ["c", "x"]}
    ]}
  ],
  "outputs": ["c", "s", "x"]
}
)");
}

TEST_CASE("json: write then read gives the same graph") {
    SUBCASE("the SPEC example") {
        Parsed p = parse(kSpecExample);
        REQUIRE(p.ok);
        check_round_trip(p.g);
    }
    SUBCASE("weak literals, NaN and infinities, floats that stay floats") {
        Parsed p = parse(doc(R"({"name": "a", "op": "ones", "shape": [2], "dtype": "i64"},
            {"name": "b", "op": "mul", "inputs": ["a", 2]},
            {"name": "c", "op": "add", "inputs": [0.1, "b"]},
            {"name": "const", "op": "const", "value": ["nan", "inf", "-inf", 2.0, -0.0, 1e300, 5e-324, 0.30000000000000004]},
            {"name": "d", "op": "maximum", "inputs": ["c", "-inf"]},
            {"name": "e", "op": "concat", "inputs": ["d", 3], "attrs": {"axis": 0}},
            {"name": "f", "op": "fill", "attrs": {"shape": [2], "value": "nan"}},
            {"name": "g", "op": "range", "attrs": {"start": -1.5, "limit": 9223372036854775807, "delta": 0.5}},
            {"name": "h", "op": "pow", "inputs": [true, "g"]})",
                             R"(, "outputs": ["e", "b", "const"])"));
        INFO(messages(p.diag));
        REQUIRE(p.ok);
        check_round_trip(p.g);
        std::string text = write_json(p.g);
        CHECK(text.find(R"("inputs": ["a", 2])") != std::string::npos);
        CHECK(text.find(R"("inputs": [0.1, "b"])") != std::string::npos);
        CHECK(text.find(R"("inputs": ["c", "-inf"])") != std::string::npos);
        CHECK(text.find(
                  R"(["nan", "inf", "-inf", 2.0, -0.0, 1e+300, 5e-324, 0.30000000000000004])") !=
              std::string::npos);
        CHECK(text.find(R"({"name": "const_4", "op": "const", "attrs": {"value": 3}})") !=
              std::string::npos);
    }
    SUBCASE("repeats: nested, carried, local names, repeat 0, devices") {
        Parsed p = parse(doc(
            R"({"name": "w", "op": "random_normal", "shape": [4, 4], "attrs": {"seed": 7}, "device": "gpu"},
            {"name": "x", "op": "ones", "shape": [4]},
            {"name": "y", "op": "zeros", "shape": [4], "device": "cpu"},
            {"repeat": 3, "body": [
                {"name": "t", "op": "matmul", "inputs": ["w", "x"]},
                {"name": "x", "op": "div", "inputs": ["t", 2.5], "device": "/GPU:0"},
                {"repeat": 0, "body": [
                    {"name": "y", "op": "add", "inputs": ["y", "x"]},
                    {"name": "y", "op": "identity", "inputs": ["y"]}
                ]},
                {"repeat": 2, "body": []}
            ]},
            {"name": "t", "op": "relu", "inputs": ["x"]},
            {"name": "x", "op": "sub", "inputs": ["x", "t"]})",
            R"(, "outputs": ["x", "y", "t", "t#2", "x#3"])"));
        INFO(messages(p.diag));
        REQUIRE(p.ok);
        check_round_trip(p.g);
    }
    SUBCASE("a graph built the way the text front end builds it") {
        // y = relu(x) * 2 with relu in a with-device block; z = y; repeat 4 { z = z ** 0.5 }
        Graph g;
        Diagnostics diag;
        GraphBuilder b(g, diag);
        Loc loc;
        loc.line = 1;
        loc.col = 1;
        NodeId shape_const = b.add_node(
            OpKind::Ones, {}, {NamedAttr{"shape", Attr::make_list({Attr::integer(3)}), loc}}, loc);
        b.assign("x", shape_const, loc);
        b.push_device("gpu", loc);
        NodeId x = *b.lookup("x", loc);
        NodeId relu = b.add_node(OpKind::Relu, {Input{x, loc}}, {}, loc);
        b.pop_device();
        NodeId two = b.add_scalar_literal(Attr::integer(2), loc, true);
        NodeId mul = b.add_node(OpKind::Mul, {Input{relu, loc}, Input{two, loc}}, {}, loc);
        b.assign("y", mul, loc);
        b.assign("z", *b.lookup("y", loc), loc);
        b.begin_repeat(4, loc);
        NodeId zin = *b.lookup("z", loc);
        NodeId half = b.add_scalar_literal(Attr::number(0.5), loc, true);
        b.assign("z", b.add_node(OpKind::Pow, {Input{zin, loc}, Input{half, loc}}, {}, loc), loc);
        b.end_repeat();
        b.finish(loc);
        REQUIRE_FALSE(diag.has_errors());
        CHECK(g.node(relu).name == "relu");
        CHECK(g.node(relu).device == "gpu");
        check_round_trip(g);
    }
}

TEST_CASE("json: a text graph whose literal is not next to its consumer still converts") {
    // y = 2 * relu(x) in a script makes the literal before relu; JSON can only say
    // it inline, so it comes back just before mul, still weak, with the same names.
    Graph g;
    Diagnostics diag;
    GraphBuilder b(g, diag);
    Loc loc;
    loc.line = 1;
    NodeId x = b.add_node(OpKind::Ones, {},
                          {NamedAttr{"shape", Attr::make_list({Attr::integer(3)}), loc}}, loc);
    b.assign("x", x, loc);
    NodeId two = b.add_scalar_literal(Attr::integer(2), loc, true);
    NodeId relu = b.add_node(OpKind::Relu, {Input{x, loc}}, {}, loc);
    b.assign("y", b.add_node(OpKind::Mul, {Input{two, loc}, Input{relu, loc}}, {}, loc), loc);
    b.finish(loc);
    REQUIRE_FALSE(diag.has_errors());
    Parsed back = parse(write_json(g));
    INFO(messages(back.diag));
    REQUIRE(back.ok);
    REQUIRE(back.g.nodes.size() == 4);
    CHECK(back.g.nodes[1].op == OpKind::Relu);
    CHECK(back.g.nodes[2].op == OpKind::Const);
    CHECK(back.g.nodes[2].weak);
    CHECK(back.g.nodes[2].name == "const");
    CHECK(back.g.nodes[3].inputs[0].id == 2);
}

namespace {
// Every node as a line: its names, op, inputs with their places (as `p`'s
// diagnostics name them), attributes.
std::string describe_graph(const Parsed& p) {
    const Graph& g = p.g;
    std::string s;
    std::function<void(const Attr&)> attr = [&](const Attr& a) {
        switch (a.kind) {
            case Attr::Kind::Number:
                s += a.is_int ? "i" + std::to_string(a.i) : "f" + std::to_string(a.f);
                if (std::signbit(a.f)) s += "(-)";
                break;
            case Attr::Kind::Bool: s += a.b ? "true" : "false"; break;
            case Attr::Kind::String: s += "\"" + a.s + "\""; break;
            case Attr::Kind::Ident: s += a.s; break;
            case Attr::Kind::List:
                s += "[";
                for (const Attr& e : a.list) attr(e), s += ",";
                s += "]";
                break;
        }
        s += "@" + p.pointer(a.loc);
    };
    for (const Node& n : g.nodes) {
        s += n.name + "|" + std::string(n.display()) + "|" + op_name(n.op) + "|" + n.device.str() + "@" +
             p.pointer(n.device_loc) + "|" + p.pointer(n.loc) + "|";
        for (const Input& in : n.inputs) s += std::to_string(in.id) + "@" + p.pointer(in.loc) + ",";
        for (const NamedAttr& a : n.attrs) {
            s += a.name + "=";
            attr(a.value);
            s += " ";
        }
        s += "\n";
    }
    for (const Output& o : g.outputs) s += "out " + o.name + " " + std::to_string(o.id) + "\n";
    return s;
}
}  // namespace

TEST_CASE("json: the fast reader and nlohmann's parser read the same graph") {
    // The fast reader leaves a document with a byte order mark or a \u escape
    // to nlohmann's parser: both readers must make the same graph and errors.
    const std::string nodes =
        R"({"name": "a", "op": "const", "value": [0, -0, 1, -1, 2.5, -0.0, 1e3, 1E-3, -2.5e+2, 0.1,)"
        R"( 18446744073709551615, 9223372036854775807, -9223372036854775808, true, false, "nan", "-inf"]},)"
        R"({"name": "b", "op": "add", "inputs": ["a", 2, -3.5, true], "device": "DEV"},)"
        R"({"name": "c\t\"\\\/", "op": "relu", "inputs": ["b"], "attrs": {"k": "x\n\b\f\r"}},)"
        R"({"repeat": 2, "body": [{"name": "a", "op": "neg", "inputs": ["a"]}]})";
    const std::string ascii = doc(nodes, R"(, "outputs": ["b", "a"], "z": [{}, [], null])");
    Parsed fast = parse(ascii);
    INFO(messages(fast.diag));
    CHECK(fast.g.nodes.size() == 8);
    std::string escaped = ascii;
    escaped.replace(escaped.find("\"DEV\""), 5, "\"\\u0044EV\"");
    for (const std::string& other : {"\xEF\xBB\xBF" + ascii, escaped}) {
        Parsed slow = parse(other);
        INFO(other);
        CHECK(fast.ok == slow.ok);
        CHECK(messages(slow.diag) == messages(fast.diag));
        CHECK(describe_graph(slow) == describe_graph(fast));
    }
    // Numbers only nlohmann reads: integers out of range become floats, a
    // float too small becomes 0.
    Parsed big = parse(doc(R"({"name": "a", "op": "const", "value": [18446744073709551616, -9223372036854775809, 1e-400]})"));
    REQUIRE(big.ok);
    const Attr& v = big.g.nodes[0].attrs[0].value;
    REQUIRE(v.list.size() == 3);
    CHECK_FALSE(v.list[0].is_int);
    CHECK(v.list[0].f == 18446744073709551616.0);
    CHECK(v.list[1].f == -9223372036854775808.0);
    CHECK(v.list[2].f == 0.0);
}

TEST_CASE("json: malformed documents get nlohmann's message whatever the reader") {
    // Each is rejected by the fast reader and then by nlohmann's parser.
    const std::vector<std::pair<std::string, std::string>> cases = {
        {R"({"graphrun": 1, "nodes": [01]})", "malformed JSON"},
        {R"({"graphrun": 1, "nodes": [1.]})", "malformed JSON"},
        {R"({"graphrun": 1, "nodes": [-]})", "malformed JSON"},
        {R"({"graphrun": 1, "nodes": [1e400]})", "out of range"},
        {R"({"graphrun": 1, "nodes": ["\x"]})", "malformed JSON"},
        {"{\"graphrun\": 1, \"nodes\": [\"\x01\"]}", "malformed JSON"},
        {R"({"graphrun": 1, "nodes": [tru]})", "malformed JSON"},
        {R"({"graphrun": 1, "nodes": [],})", "malformed JSON"},
        {R"({"graphrun": 1, "nodes": []} x)", "malformed JSON"},
        {R"({"graphrun": 1 "nodes": []})", "malformed JSON"},
    };
    for (const auto& entry : cases) {
        const auto& src = entry.first;  // a variable, not a binding: INFO captures it
        const auto& part = entry.second;
        Parsed p = parse(src);
        INFO(src);
        INFO(messages(p.diag));
        CHECK_FALSE(p.ok);
        REQUIRE(p.diag.error_count() == 1);
        CHECK(p.diag.all()[0].loc.line == 1);
        CHECK(p.diag.all()[0].message.find(part) != std::string::npos);
    }
}

TEST_CASE("json: duplicate keys in big objects") {
    // Past 16 keys an object's keys are indexed: the same reports as below.
    std::string attrs;
    for (int i = 0; i < 40; ++i) attrs += "\"k" + std::to_string(i) + "\": " + std::to_string(i) + ", ";
    Parsed p = parse(doc(R"({"name": "x", "op": "ones", "shape": [2], "attrs": {)" + attrs +
                         R"("k3": 5, "k39": 1, "a/b": 1, "a/b": 2}})"));
    INFO(messages(p.diag));
    REQUIRE(p.diag.error_count() >= 3);
    CHECK(p.pointer(p.diag.all()[0].loc) == "/nodes/0/attrs/k3");
    CHECK(p.diag.all()[0].message.find("duplicate key \"k3\"") == 0);
    CHECK(p.pointer(p.diag.all()[1].loc) == "/nodes/0/attrs/k39");
    CHECK(p.pointer(p.diag.all()[2].loc) == "/nodes/0/attrs/a~1b");
    // The last value wins, at the place of the first.
    const Node& n = p.g.nodes.at(0);
    REQUIRE(n.attrs.size() >= 5);
    CHECK(n.attrs[4].name == "k3");
    CHECK(n.attrs[4].value.i == 5);
}

TEST_CASE("json: a duplicate key's last value wins at the first's place, whatever the values") {
    // Arrays, objects and scalars replacing one another, a key given three
    // times, and a repeated container holding a duplicate of its own: the
    // same through the fast reader and nlohmann's parser (a byte order mark).
    const std::string nodes =
        R"({"name": "v", "op": "ones", "shape": [2], "attrs": {"k": [1, {"z": 2}], "j": true, "k": 3, "k": [4, 5]}},)"
        R"({"name": "w", "op": "relu", "inputs": ["v"], "name": "u"})";
    for (const std::string& src : {doc(nodes), "\xEF\xBB\xBF" + doc(nodes)}) {
        Parsed p = parse(src);
        INFO(messages(p.diag));
        REQUIRE(p.diag.error_count() == 3);
        CHECK(p.pointer(p.diag.all()[0].loc) == "/nodes/0/attrs/k");
        CHECK(p.pointer(p.diag.all()[1].loc) == "/nodes/0/attrs/k");
        CHECK(p.pointer(p.diag.all()[2].loc) == "/nodes/1/name");
        const Node& v = p.g.nodes.at(0);
        REQUIRE(v.attrs.size() == 3);
        CHECK(v.attrs[1].name == "k");
        REQUIRE(v.attrs[1].value.list.size() == 2);
        CHECK(v.attrs[1].value.list[1].i == 5);
        CHECK(p.pointer(v.attrs[1].value.list[1].loc) == "/nodes/0/attrs/k/1");
        CHECK(v.attrs[2].name == "j");
        CHECK(id_of(p.g, "u") != kNoNode);
        CHECK(id_of(p.g, "w") == kNoNode);
    }
    const std::string twice =
        R"({"graphrun": 1, "nodes": [{"name": "x", "op": "nope"}], "outputs": ["a"], )"
        R"("nodes": [{"name": "a", "op": "ones", "shape": [2], "shape": [3]}]})";
    for (const std::string& src : {twice, "\xEF\xBB\xBF" + twice}) {
        Parsed p = parse(src);
        INFO(messages(p.diag));
        REQUIRE(p.diag.error_count() == 2);
        CHECK(p.pointer(p.diag.all()[0].loc) == "/nodes");
        CHECK(p.pointer(p.diag.all()[1].loc) == "/nodes/0/shape");
        REQUIRE(p.g.nodes.size() == 1);
        CHECK(p.g.nodes[0].attrs.at(0).value.list.at(0).i == 3);
    }
}

TEST_CASE("json: keys of 64 KiB and more") {
    // A key too long for a record's 16-bit size is held aside: the same places and messages.
    const std::string key(70000, 'k');
    const std::string src = doc(R"({"name": "v", "op": "ones", "shape": [2], ")" + key + R"(": 1, ")" + key +
                                R"(": 2, ")" + std::string(65535, 'm') + R"(": 3})");
    Parsed p = parse(src);
    INFO(messages(p.diag).substr(0, 300));
    REQUIRE(p.diag.error_count() == 3);
    CHECK(p.pointer(p.diag.all()[0].loc) == "/nodes/0/" + key);
    CHECK(p.diag.all()[0].message.find("duplicate key") == 0);
    CHECK(p.pointer(p.diag.all()[1].loc) == "/nodes/0/" + key);
    CHECK(p.diag.all()[1].message.find("unknown key") == 0);
    CHECK(p.pointer(p.diag.all()[2].loc) == "/nodes/0/" + std::string(65535, 'm'));
}

TEST_CASE("json: places are offsets in the source, named as pointers only when shown") {
    // Keys with '/' and '~' (escaped in a pointer as ~1 and ~0), an empty
    // key, nested lists, a repeat, and attributes given two ways.
    const std::string src = doc(
        R"({"name": "a", "op": "const", "value": [[1, 2], [3, [4, 5]]], "shape": [2, 2]},)"
        R"({"name": "b", "op": "add", "inputs": ["a", 2, true], "device": "cpu"},)"
        R"({"repeat": 2, "body": [{"name": "a", "op": "neg", "inputs": ["a"]}]},)"
        R"({"name": "s", "op": "reduce_sum", "inputs": ["b"], "attrs": {"axes": [1], "keepdims": true}})",
        R"(, "outputs": ["b", "s"], "z": {"a/b": 1, "c~d": [2], "": 3})");
    Parsed with = parse(src);
    Parsed without = parse(src, false);
    INFO(messages(with.diag));
    INFO(messages(without.diag));
    REQUIRE(with.diag.error_count() == 1);  // the unknown key "z"
    CHECK(with.pointer(with.diag.all()[0].loc) == "/z");
    CHECK(with.g.nodes.at(0).loc.in_json());
    CHECK(with.g.nodes.at(0).loc.pointer.empty());  // no string kept
    CHECK_FALSE(without.g.nodes.at(0).loc.in_json());
    CHECK(without.g.nodes.at(0).loc.pointer == "/nodes/0");
    CHECK(describe_graph(with) == describe_graph(without));
    CHECK(messages(with.diag) == messages(without.diag));
    // A byte order mark sends the document to nlohmann's parser, whose places are pointers.
    Parsed bom = parse("\xEF\xBB\xBF" + src);
    CHECK_FALSE(bom.g.nodes.at(0).loc.in_json());
    CHECK(describe_graph(bom) == describe_graph(with));
    // Printed as before: FILE: /pointer: error: MESSAGE.
    CHECK(with.diag.format(with.diag.all()[0]) == without.diag.format(without.diag.all()[0]));
    CHECK(with.diag.format(with.diag.all()[0]).rfind("t.json: /z: error: unknown key \"z\"", 0) == 0);
}

namespace {

// Every value of `v` (pointer `pointer`) but the root: its place and pointer.
void all_places(jsondoc::JVal v, const std::string& pointer, std::vector<std::pair<uint32_t, std::string>>& out) {
    size_t i = 0;
    for (auto [key, item] : v.items()) {
        const std::string p = v.is_array() ? jsondoc::child(pointer, i++) : jsondoc::child(pointer, key);
        out.emplace_back(item.place(), p);
        all_places(item, p, out);
    }
}

}  // namespace

TEST_CASE("json: the pointer finder names every place, in any order") {
    // Keys needing escapes in a pointer, keys with JSON escapes (read by the
    // finder as the reader reads them), empty containers, a duplicate key
    // (its value at the first one's place), deep nesting, and strings that
    // look like structure.
    std::string deep;
    for (int i = 0; i < 40; ++i) deep += "[0, ";
    deep += "{\"k\": [1]}";
    for (int i = 0; i < 40; ++i) deep += "]";
    const std::string src = R"({"a/b": {"~x": [1, "]", {"}": ",", "": [[], {}]}], "y": null}, )"
                            R"("n": [true, false, -1.5e3, "q:u[o{te,"], "d": 1, "d": [2, {"e": 3}], "deep": )" +
                            deep + "}";
    // The fast reader gives up on escapes: its document, whose places are
    // offsets, is read from the source without them; the finder is also
    // checked on keys with escapes below.
    jsondoc::Document d;
    Diagnostics diag("t.json", src);
    REQUIRE(jsondoc::read_document(src, d, InputLimits{}, diag));
    std::vector<std::pair<uint32_t, std::string>> places;
    all_places(jsondoc::JVal(d, d.root()), "", places);
    REQUIRE(places.size() > 100);
    JsonPointerFinder forward(src), backward(src), shuffled(src);
    for (const auto& [offset, pointer] : places) {
        REQUIRE(offset != jsondoc::Document::kNone);
        CHECK(forward.pointer_at(offset) == pointer);
    }
    for (size_t i = places.size(); i-- > 0;) CHECK(backward.pointer_at(places[i].first) == places[i].second);
    for (size_t k = 0; k < places.size(); ++k) {
        const auto& [offset, pointer] = places[(k * 37) % places.size()];
        CHECK(shuffled.pointer_at(offset) == pointer);
        CHECK(shuffled.pointer(Loc::json_at(offset)) == pointer);
    }
    CHECK(forward.pointer_at(static_cast<uint32_t>(src.find("\"~x\""))) == "/a~1b/~0x");
    CHECK(forward.pointer_at(static_cast<uint32_t>(src.find("\"d\": ["))) == "/d");

    // Escaped keys are named as their reader reads them: \u0041 is A, a
    // surrogate pair one character, \/ a slash.
    const std::string esc = R"({"\u0041\"\/": [0, {"\ud83d\ude00\n": 1}]})";
    JsonPointerFinder f(esc);
    CHECK(f.pointer_at(static_cast<uint32_t>(esc.find("{\"\\ud83d"))) == "/A\"~1/1");
    CHECK(f.pointer_at(static_cast<uint32_t>(esc.find("\"\\ud83d"))) == "/A\"~1/1/\xF0\x9F\x98\x80\n");
    CHECK(f.pointer_at(1) == "/A\"~1");

    // Past the checkpoint interval, and back.
    std::string big = "{\"items\": [";
    const size_t n = 3 * JsonPointerFinder::kCheckpointBytes / 10;
    for (size_t i = 0; i < n; ++i) big += i ? ", [7]" : "[7]";
    big += "]}";
    JsonPointerFinder b(big);
    const auto item = [&](size_t i) { return static_cast<uint32_t>(11 + i * 5); };  // each "[7], " is 5 bytes
    CHECK(b.pointer_at(item(n - 1)) == "/items/" + std::to_string(n - 1));
    CHECK(b.pointer_at(item(3)) == "/items/3");
    CHECK(b.pointer_at(item(n / 2)) == "/items/" + std::to_string(n / 2));
    CHECK(b.pointer_at(item(n / 2) + 1) == "/items/" + std::to_string(n / 2) + "/0");
    CHECK(b.pointer_at(item(10)) == "/items/10");
    // check's listing order: a node's literal input, then the node (the start
    // of a member still open: named without a rewind), then the next node's.
    const std::string nodes =
        R"({"nodes": [{"name": "a", "inputs": ["x", 1]}, {"name": "b", "inputs": [2, "a"]}, [[3], 4]]})";
    JsonPointerFinder listing(nodes);
    const auto at_ = [&](const char* needle, size_t from = 0) { return static_cast<uint32_t>(nodes.find(needle, from)); };
    const uint32_t node0 = at_("{\"name\": \"a\""), node1 = at_("{\"name\": \"b\""), node2 = at_("[[3]");
    CHECK(listing.pointer_at(at_("1]")) == "/nodes/0/inputs/1");
    CHECK(listing.pointer_at(node0) == "/nodes/0");
    CHECK(listing.pointer_at(at_("2,")) == "/nodes/1/inputs/0");
    CHECK(listing.pointer_at(node1) == "/nodes/1");
    CHECK(listing.pointer_at(at_("\"inputs\"", node1)) == "/nodes/1/inputs");
    CHECK(listing.pointer_at(at_("3]")) == "/nodes/2/0/0");
    CHECK(listing.pointer_at(node2 + 1) == "/nodes/2/0");
    CHECK(listing.pointer_at(node2) == "/nodes/2");
    CHECK(listing.pointer_at(at_("4]")) == "/nodes/2/1");
    CHECK(listing.pointer_at(node2 + 1) == "/nodes/2/0");  // past its comma: not the open item
    CHECK(listing.pointer_at(node0) == "/nodes/0");
    CHECK(listing.pointer_at(at_("\"x\"")) == "/nodes/0/inputs/0");
    // Places of no JSON text: a text graph's, an unknown one.
    Loc text;
    text.line = 3;
    text.col = 4;
    CHECK(b.pointer(text).empty());
    CHECK(b.pointer(Loc{}).empty());
    CHECK(JsonPointerFinder().pointer(Loc::json_at(5)).empty());
}
