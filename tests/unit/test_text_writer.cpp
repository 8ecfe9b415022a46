// Tests of the text writer: what it writes, and that parsing what it writes
// gives the same graph back.
#include <doctest/doctest.h>

#include <memory>
#include <sstream>
#include <string>

#include "engine/frontend/text_parser.h"
#include "engine/frontend/json_reader.h"
#include "engine/frontend/json_writer.h"
#include "engine/frontend/text_writer.h"

using namespace graphrun;

namespace {

struct Parsed {
    std::string src;
    Graph g;
    Diagnostics d;
    bool ok = false;
    explicit Parsed(std::string s) : src(std::move(s)), d("t.graph", src) {}
};

std::unique_ptr<Parsed> parse(std::string src) {
    auto p = std::make_unique<Parsed>(std::move(src));
    p->ok = parse_text(p->src, p->g, p->d);
    return p;
}

std::string all_errors(const Parsed& p) {
    std::ostringstream os;
    p.d.print(os);
    return os.str();
}

// The first difference between two graphs, or "" when they are the same
// (ignoring source locations and the generated flag).
std::string graph_difference(const Graph& a, const Graph& b) {
    if (a.nodes.size() != b.nodes.size())
        return "node count " + std::to_string(a.nodes.size()) + " vs " +
               std::to_string(b.nodes.size());
    for (size_t i = 0; i < a.nodes.size(); ++i) {
        const Node& x = a.nodes[i];
        const Node& y = b.nodes[i];
        std::string at = "node " + std::to_string(i) + " (" + x.name + "): ";
        if (x.name != y.name) return at + "name " + y.name;
        if (x.display() != y.display())
            return at + "display " + std::string(x.display()) + " vs " + std::string(y.display());
        if (x.op != y.op) return at + "op " + op_name(y.op);
        if (x.device != y.device) return at + "device '" + x.device + "' vs '" + y.device + "'";
        if (x.device_from_block != y.device_from_block) return at + "device_from_block";
        if (x.weak != y.weak) return at + "weak";
        if (x.repeat != y.repeat) return at + "repeat";
        if (x.inputs.size() != y.inputs.size()) return at + "input count";
        for (size_t k = 0; k < x.inputs.size(); ++k)
            if (x.inputs[k].id != y.inputs[k].id) return at + "input " + std::to_string(k);
        if (x.attrs.size() != y.attrs.size()) return at + "attr count";
        for (size_t k = 0; k < x.attrs.size(); ++k) {
            if (x.attrs[k].name != y.attrs[k].name) return at + "attr name " + y.attrs[k].name;
            if (!attr_equal(x.attrs[k].value, y.attrs[k].value))
                return at + "attr " + x.attrs[k].name;
            if (x.attrs[k].value.kind != y.attrs[k].value.kind && !x.attrs[k].value.is_word())
                return at + "attr kind " + x.attrs[k].name;
            if (x.attrs[k].value.is_int != y.attrs[k].value.is_int)
                return at + "attr is_int " + x.attrs[k].name;
        }
    }
    auto stmts_equal = [](const std::vector<Stmt>& s, const std::vector<Stmt>& t) {
        if (s.size() != t.size()) return false;
        for (size_t i = 0; i < s.size(); ++i)
            if (s[i].kind != t[i].kind || s[i].index != t[i].index) return false;
        return true;
    };
    if (!stmts_equal(a.top, b.top)) return "top-level statements";
    if (a.repeats.size() != b.repeats.size()) return "repeat count";
    for (size_t i = 0; i < a.repeats.size(); ++i) {
        const Repeat& r = a.repeats[i];
        const Repeat& s = b.repeats[i];
        std::string at = "repeat " + std::to_string(i) + ": ";
        if (r.count != s.count || r.parent != s.parent) return at + "count or parent";
        if (!stmts_equal(r.body, s.body)) return at + "body";
        if (r.carries.size() != s.carries.size()) return at + "carry count";
        for (size_t k = 0; k < r.carries.size(); ++k) {
            const Carry& c = r.carries[k];
            const Carry& d = s.carries[k];
            if (c.name != d.name || c.param != d.param || c.init != d.init || c.update != d.update)
                return at + "carry " + c.name;
        }
    }
    if (a.outputs.size() != b.outputs.size()) return "output count";
    for (size_t i = 0; i < a.outputs.size(); ++i)
        if (a.outputs[i].name != b.outputs[i].name || a.outputs[i].id != b.outputs[i].id)
            return "output " + a.outputs[i].name;
    return "";
}

// Parses `src`, writes it, parses that, and checks that the graphs match and
// that writing again gives the same text.
void check_round_trip(const std::string& src) {
    auto first = parse(src);
    REQUIRE_MESSAGE(first->ok, all_errors(*first));
    std::string text = write_text(first->g);
    auto second = parse(text);
    REQUIRE_MESSAGE(second->ok, text << "\n" << all_errors(*second));
    std::string diff = graph_difference(first->g, second->g);
    CHECK_MESSAGE(diff.empty(), diff << "\n--- source\n" << src << "--- written\n" << text);
    CHECK(write_text(second->g) == text);
}

}  // namespace

TEST_CASE("text writer: format") {
    auto p = parse("x = [1, 2]\ny = relu(x * 2 - 1.5) + x\nz = zeros([2], dtype=f64)\n");
    REQUIRE(p->ok);
    CHECK(write_text(p->g) ==
          "# graphrun graph\n"
          "x = const(value=[1, 2])\n"
          "y = add(relu(sub(mul(x, 2), 1.5)), x)\n"
          "z = zeros(shape=[2], dtype=f64)\n"
          "output z\n");
}

TEST_CASE("text writer: numbers, strings, devices, blocks") {
    auto p = parse(
        "a = [1.0, -2, 1e300, nan, -inf, 0.1, 100000.0, true]\n"
        "b = relu(a, device=\"gpu:0\")\n"
        "with device(\"gpu\") { c = b * -3 }\n"
        "repeat 2 {\n  a = a + 1\n}\n"
        "output a, c\n");
    REQUIRE(p->ok);
    CHECK(write_text(p->g) ==
          "# graphrun graph\n"
          "a = const(value=[1.0, -2, 1e+300, nan, -inf, 0.1, 1e+05, true])\n"
          "b = relu(a, device=\"gpu:0\")\n"
          "with device(\"gpu\") {\n"
          "    c = mul(b, -3)\n"
          "}\n"
          "repeat 2 {\n"
          "    a = add(a, 1)\n"
          "}\n"
          "output a, c\n");
}

TEST_CASE("text writer: round trips") {
    SUBCASE("the SPEC example") {
        check_round_trip(
            "a = [[1, 2, 3], [4, 5, 6]]\n"
            "b = const([1, 2, 3, 4, 5, 6], shape=[3, 2], dtype=f64)\n"
            "c = relu(a @ cast(b, dtype=f32) - 1.5)\n"
            "s = reduce_sum(c, axes=[-1], keepdims=true)\n"
            "g = matmul(c, c, transpose_b=true, device=\"gpu:0\")\n"
            "with device(\"gpu\") {\n"
            "    w = random_normal([512, 512], seed=7)\n"
            "}\n"
            "x = ones([512])\n"
            "repeat 100 { x = w @ x; x = x / sqrt(reduce_sum(x * x)) }\n"
            "output c, s, x\n");
    }
    SUBCASE("weak literals, folded minus, powers") {
        check_round_trip(
            "x = [1, 2]\ny = 2 * relu(x) - -1 + x ** -0.5\nz = -2 ** 2 + 2 ** 3 ** 2\nw = - x\n");
    }
    SUBCASE("display names and rebinding") {
        check_round_trip("x = [1]\nx = x + 1\ny = x\nx = relu(y) * x\noutput x, y\n");
    }
    SUBCASE("generated names around user names") {
        check_round_trip(
            "add = [1]\ny = (add + add) * 2 + add\nconst = 5\nadd_1 = 2 + y\nmul = y * y * 3\n");
    }
    SUBCASE("loop-carried values captured in program order") {
        check_round_trip(
            "x = [1.0]\nw = [2.0]\n"
            "repeat 2 {\n"
            "    x = add(x, relu(w))\n"
            "    w = x\n"
            "}\n"
            "output x, w\n");
        check_round_trip(
            "x = [1.0]\nw = [2.0]\nv = [3.0]\n"
            "repeat 3 {\n"
            "    t = relu(v) * x + w\n"
            "    repeat 2 { t = t * 2; w = w + t; x = t }\n"
            "    v = neg(v)\n"
            "}\n"
            "repeat 0 { x = x + 1 }\n"
            "output x, w, v\n");
    }
    SUBCASE("devices: blocks, own devices, literals inside blocks") {
        check_round_trip(
            "a = [1, 2]\n"
            "with device(\"gpu:1\") {\n"
            "    b = a * 2 + 1\n"
            "    c = relu(b, device=\"cpu\") + 3\n"
            "    repeat 2 { a = a + b }\n"
            "    d = a\n"
            "}\n"
            "e = matmul(a, b, device=\"gpu\\\"\\\\x\")\n"
            "with device(\"gpu:0\") { f = e - 1 }\n"
            "with device(\"gpu:1\") { g = f / 2 }\n"
            "output g\n");
    }
    SUBCASE("creation ops, attributes, strings and words") {
        check_round_trip(
            "a = range(1, 10, 2, dtype=\"i32\")\n"
            "b = range(4)\n"
            "c = fill([2, 2], -1.5)\n"
            "d = random_uniform([3], low=-1, high=1, seed=9, dtype=f64)\n"
            "e = const(7)\n"
            "f = [true, false]\n"
            "g = reshape(a, shape=[-1, 1])\n"
            "h = transpose(g, perm=[1, 0])\n"
            "i = concat(b, b, b, axis=0)\n"
            "j = softmax(cast(h, dtype=f32), axis=-1)\n"
            "k = true\n"
            "l = 2.5\n"
            "m = maximum(j, 0) + minimum(0.0, j) + pow(j, 2)\n"
            "n = [[nan, inf], [-inf, 1e-300]]\n"
            "o = zeros([0, 3])\n");
    }
    SUBCASE("long chains are split to stay within the parser's nesting limit") {
        std::string sum = "x = [1]\ny = x";
        for (int i = 0; i < 300; ++i) sum += " + x * " + std::to_string(i);
        check_round_trip(sum + "\n");
    }
    SUBCASE("integers at the edges") {
        check_round_trip(
            "a = [9223372036854775807, -9223372036854775808, 9223372036854775808]\nb = a * 0.0\n");
    }
}

TEST_CASE("text and json writers: outputs whose names are not identifiers are written by their identifiers") {
    // As the ONNX importer builds a graph: values bound under identifiers with
    // their ONNX names as display names, outputs requested by those names
    // (torch.onnx.export's `4` and `output.1`), and one that is an identifier.
    Graph g;
    Diagnostics diag;
    GraphBuilder b(g, diag);
    Loc loc;
    loc.line = 1;
    NodeId x = b.add_node(OpKind::Ones, {}, {NamedAttr{"shape", Attr::make_list({Attr::integer(3)}), loc}}, loc);
    x = b.assign("x", x, loc);
    NodeId relu = b.assign("v_4", b.add_node(OpKind::Relu, {Input{x, loc}}, {}, loc), loc);
    g.node(relu).set_display("4");
    NodeId neg = b.assign("output_1", b.add_node(OpKind::Neg, {Input{relu, loc}}, {}, loc), loc);
    g.node(neg).set_display("output.1");
    b.assign("y_1", b.add_node(OpKind::Abs, {Input{x, loc}}, {}, loc), loc);
    b.set_outputs({{"4", loc}, {"output.1", loc}, {"y_1", loc}}, loc);
    b.finish(loc);
    REQUIRE_FALSE(diag.has_errors());

    const std::string text = write_text(g);
    CHECK(text.find("output v_4, output_1, y_1\n") != std::string::npos);
    auto back = parse(text);
    INFO(text);
    INFO(all_errors(*back));
    REQUIRE(back->ok);
    REQUIRE(back->g.outputs.size() == 3);
    CHECK(back->g.node(back->g.outputs[0].id).op == OpKind::Relu);
    CHECK(back->g.node(back->g.outputs[1].id).op == OpKind::Neg);
    CHECK(back->g.node(back->g.outputs[2].id).op == OpKind::Abs);

    const std::string json = write_json(g);
    CHECK(json.find(R"("outputs": ["v_4", "output_1", "y_1"])") != std::string::npos);
    Graph jg;
    Diagnostics jd("t.json", json);
    INFO(json);
    REQUIRE(parse_json(json, jg, jd));
    REQUIRE(jg.outputs.size() == 3);
    CHECK(jg.node(jg.outputs[0].id).op == OpKind::Relu);
    CHECK(jg.node(jg.outputs[1].id).op == OpKind::Neg);
}
