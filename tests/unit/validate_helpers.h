// Helpers of the validate() tests: graphs built by hand, node by node, with places.
#pragma once
#include <doctest/doctest.h>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>
#include "engine/ir/graph.h"
#include "engine/check/validate.h"

namespace validate_test {

using namespace graphrun;

inline Loc at(uint32_t line, uint32_t col) {
    return Loc{line, col, {}};
}

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
inline Attr S(const std::string& s) {
    return Attr::string(s);
}
inline Attr L(std::vector<Attr> items, Loc loc = {}) {
    return Attr::make_list(std::move(items), std::move(loc));
}
inline Attr Ints(std::vector<int64_t> v) {
    std::vector<Attr> items;
    for (int64_t x : v) items.push_back(I(x));
    return L(std::move(items));
}

// Builds a Graph node by node. Node k (0-based) is on line k+1: the node at
// column 1, input j at column 10+j, attribute j's name at 20+j and its value
// (where the test gave it no place) at 40+j, the device at column 60.
struct TestGraph {
    Graph g;
    Diagnostics diag;

    NodeId add(OpKind op, std::vector<NodeId> inputs,
               std::vector<std::pair<std::string, Attr>> attrs = {}, const std::string& name = "") {
        Node n;
        n.op = op;
        const auto id = static_cast<NodeId>(g.nodes.size());
        const auto line = static_cast<uint32_t>(id + 1);
        n.loc = at(line, 1);
        for (size_t j = 0; j < inputs.size(); ++j)
            n.inputs.push_back(Input{inputs[j], at(line, static_cast<uint32_t>(10 + j))});
        for (size_t j = 0; j < attrs.size(); ++j) {
            Attr v = std::move(attrs[j].second);
            if (!v.loc.known()) v.loc = at(line, static_cast<uint32_t>(40 + j));
            n.attrs.push_back(
                NamedAttr{attrs[j].first, std::move(v), at(line, static_cast<uint32_t>(20 + j))});
        }
        n.name = name.empty() ? std::string(op_name(op)) + "_" + std::to_string(id) : name;
        n.generated = name.empty();
        g.nodes.push_back(std::move(n));
        g.top.push_back(Stmt{Stmt::Kind::Node, id});
        return id;
    }
    NodeId lit(Attr value, bool weak = false) {
        NodeId id = add(OpKind::Const, {}, {{"value", std::move(value)}});
        g.node(id).weak = weak;
        return id;
    }
    NodeId tensor(OpKind op, std::vector<int64_t> shape, const char* dtype = "f32", const std::string& name = "") {
        return add(op, {}, {{"shape", Ints(std::move(shape))}, {"dtype", W(dtype)}}, name);
    }
    // zeros, named `name` (or a generated name when it is "")
    NodeId zeros(std::vector<int64_t> shape, const char* dtype = "f32", const std::string& name = "") {
        return tensor(OpKind::Zeros, std::move(shape), dtype, name);
    }

    bool run() { return validate(g, diag); }
    const Node& node(NodeId id) const { return g.node(id); }
    std::string type(NodeId id) const { return type_string(g.node(id).dtype, g.node(id).shape); }
    size_t errors() const { return diag.error_count(); }
    std::string messages() const {
        std::string all;
        for (const Diagnostic& d : diag.all()) all += d.message + "\n";
        return all;
    }
    const Diagnostic& first() const { return diag.all().front(); }
    bool has(const std::string& fragment) const {
        return messages().find(fragment) != std::string::npos;
    }
};

template <typename T>
inline std::vector<T> values(const Node& n) {
    std::vector<T> out(n.literal.size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), n.literal.data(), n.literal.size());
    return out;
}

// The names of the operands of infer() and error_of(): messages name operands as the user did.
inline std::string operand_name(size_t i) {
    return std::string(1, static_cast<char>('p' + i));
}

// Validates a graph of one op applied to zeros (p, q, r, ...) of the given shapes; returns the result type or "".
inline std::string infer(OpKind op, std::vector<Shape> shapes,
                  std::vector<std::pair<std::string, Attr>> attrs = {}, const char* dtype = "f32") {
    TestGraph t;
    std::vector<NodeId> ins;
    for (Shape& s : shapes) ins.push_back(t.zeros(s, dtype, operand_name(ins.size())));
    NodeId id = t.add(op, ins, std::move(attrs));
    if (!t.run()) return "error: " + t.messages();
    return t.type(id);
}

// The single error message of a one-op graph (or what went wrong instead).
inline std::string error_of(OpKind op, std::vector<Shape> shapes,
                     std::vector<std::pair<std::string, Attr>> attrs = {},
                     const char* dtype = "f32") {
    TestGraph t;
    std::vector<NodeId> ins;
    for (Shape& s : shapes) ins.push_back(t.zeros(s, dtype, operand_name(ins.size())));
    t.add(op, ins, std::move(attrs));
    if (t.run()) return "no error";
    if (t.errors() != 1) return "several errors: " + t.messages();
    return t.first().message;
}

}  // namespace validate_test
