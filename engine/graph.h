// The graph IR shared by both front ends, validation, the writers, the static
// plan and the executor: nodes in program order, `repeat` regions with their
// loop-carried values, and the outputs.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/diagnostics.h"
#include "engine/dtype.h"
#include "engine/ops.h"

namespace graphrun {

using NodeId = int32_t;
constexpr NodeId kNoNode = -1;

// An attribute value as written: a number, a bool, a quoted string, a bare
// word (dtype names), or a (nested) list of those.
struct Attr {
    enum class Kind : uint8_t { Number, Bool, String, Ident, List };
    Kind kind = Kind::Number;
    bool is_int = false;   // Number written as an integer (no fraction or exponent) that fits int64
    bool b = false;        // Bool
    double f = 0;          // Number (always set; for is_int it is the integer's nearest double)
    int64_t i = 0;         // Number with is_int
    std::string s;         // String, Ident
    std::vector<Attr> list;
    Loc loc;

    static Attr number(double v, Loc loc = {});
    static Attr integer(int64_t v, Loc loc = {});
    static Attr boolean(bool v, Loc loc = {});
    static Attr ident(std::string v, Loc loc = {});
    static Attr string(std::string v, Loc loc = {});
    static Attr make_list(std::vector<Attr> items, Loc loc = {});
    bool is_word() const { return kind == Kind::String || kind == Kind::Ident; }
};

// Same value, ignoring locations; String and Ident compare as words, NaN equals NaN,
// 2 equals 2.0.
bool attr_equal(const Attr& a, const Attr& b);

struct NamedAttr {
    std::string name;
    Attr value;
    Loc loc;  // of the name (text) or of the attribute (JSON pointer)
};

struct Input {
    NodeId id = kNoNode;
    Loc loc;  // where the operand is written
};

struct Node {
    // --- as written (front ends) ---
    std::string name;     // binding name; generated (`add_1`) for unnamed nodes
    std::string display;  // `x`, or `x#k` for the k-th binding of x (k >= 2)
    bool generated = false;  // name chosen by the builder, not the user
    OpKind op = OpKind::Invalid;
    std::vector<Input> inputs;
    std::vector<NamedAttr> attrs;
    std::string device;  // requested device as written ("" = none); includes an enclosing `with device`
    Loc device_loc;
    bool device_from_block = false;  // device came from an enclosing `with device`, not the call
    Loc loc;             // of the node: operator, call name or JSON node
    bool weak = false;   // a bare scalar literal that is an operand of a binary op: takes the other dtype
    int32_t repeat = -1;  // innermost repeat whose body holds it (-1: top level)

    // --- filled by validation ---
    bool valid = false;  // inferred without error (and all its inputs valid)
    DType dtype = DType::F32;
    Shape shape;
    std::vector<uint8_t> literal;  // const: the values, dense, in dtype (row-major)

    // --- filled by placement ---
    std::string placed;  // canonical device the node runs on: "cpu", "gpu:0"

    const NamedAttr* find_attr(std::string_view attr_name) const;
};

struct Stmt {
    enum class Kind : uint8_t { Node, Repeat };
    Kind kind = Kind::Node;
    int32_t index = 0;  // NodeId or index into Graph::repeats
};

// A value carried from one pass of a repeat body to the next: `param` (a LoopParam
// node) is the value the body sees at the start of a pass; it starts as `init`
// and after each pass takes the value of `update`. After the loop the name
// holds `param`, which then holds the last pass's value (`init` for repeat 0).
struct Carry {
    std::string name;
    NodeId param = kNoNode;
    NodeId init = kNoNode;
    NodeId update = kNoNode;
};

struct Repeat {
    int64_t count = 0;
    std::vector<Stmt> body;
    std::vector<Carry> carries;
    int32_t parent = -1;  // enclosing repeat, -1 at top level
    Loc loc;
};

struct Output {
    std::string name;  // as requested (a name or a display name)
    NodeId id = kNoNode;
    Loc loc;
};

struct Graph {
    std::string file;
    bool from_json = false;
    std::vector<Node> nodes;  // program order; LoopParam nodes too (they are in no Stmt list)
    std::vector<Stmt> top;
    std::vector<Repeat> repeats;
    std::vector<Output> outputs;
    bool explicit_outputs = false;  // an `output` statement / "outputs" key was given
    // The final top-level binding of every name visible after the program.
    std::unordered_map<std::string, NodeId> bindings;

    const Node& node(NodeId id) const { return nodes[static_cast<size_t>(id)]; }
    Node& node(NodeId id) { return nodes[static_cast<size_t>(id)]; }
    // A top-level name (its final value) or the display name of a top-level node.
    std::optional<NodeId> find_fetchable(std::string_view name) const;
    // Every name the user can fetch (for did-you-mean).
    std::vector<std::string> fetchable_names() const;
};

// Builds a Graph while a front end reads a file: owns the rules of names,
// scopes, loop-carried values, `with device` blocks, display names and
// generated names (SPEC section 1), so that the text and JSON front ends
// produce the same graph for the same program.
class GraphBuilder {
public:
    GraphBuilder(Graph& g, Diagnostics& diag);

    // A new node. `device` is the node's own device request ("" = none: the
    // enclosing `with device`, if any, applies). The node is unnamed until assign().
    NodeId add_node(OpKind op, std::vector<Input> inputs, std::vector<NamedAttr> attrs, Loc loc,
                    std::string device = {}, Loc device_loc = {});
    // A bare scalar literal: a const node; `weak` when it is an operand of a binary op.
    NodeId add_scalar_literal(Attr value, Loc loc, bool weak);
    // Stand-in for an expression that failed: binds names without cascading errors.
    NodeId add_invalid(Loc loc);

    // The current value of `name` seen from here. Reports "unknown name" (with a
    // did-you-mean, or the repeat body a local name belongs to) and returns nullopt.
    std::optional<NodeId> lookup(const std::string& name, const Loc& loc);
    // `name = <expr>`: names the node, or, when it already has a name (a = b),
    // adds an identity node. Returns the node now bound to `name`.
    NodeId assign(const std::string& name, NodeId value, const Loc& name_loc);

    void push_device(std::string device, Loc loc);
    void pop_device();
    void begin_repeat(int64_t count, Loc loc);
    void end_repeat();
    size_t repeat_depth() const { return scopes_.size() - 1; }

    // `output a, b`: resolved by finish() against the final top-level values.
    void set_outputs(std::vector<std::pair<std::string, Loc>> names, Loc loc);

    // Ends the program: resolves outputs (or takes the last assigned name), names
    // unnamed nodes `<op>`, `<op>_1`, ... avoiding every user name, and reports an
    // empty program. `eof` is where an "empty program" error points.
    void finish(const Loc& eof);

private:
    struct Scope {
        int32_t repeat = -1;
        std::unordered_map<std::string, NodeId> names;  // bound or captured in this scope
        std::unordered_map<std::string, size_t> carry_index;  // name -> index in repeat's carries
        std::vector<Stmt>* stmts = nullptr;
    };
    NodeId resolve(size_t scope, const std::string& name);
    void bind(size_t scope, const std::string& name, NodeId id);
    NodeId capture(size_t scope, const std::string& name, NodeId outer);

    Graph& g_;
    Diagnostics& diag_;
    std::vector<Scope> scopes_;
    std::vector<std::pair<std::string, Loc>> device_stack_;
    std::unordered_map<std::string, int32_t> binding_count_;
    std::unordered_map<std::string, Loc> local_names_;  // names local to a finished repeat body
    std::vector<NodeId> repeat_start_;  // per repeat: the first node id made inside its body
    std::vector<std::pair<std::string, Loc>> output_names_;
    Loc output_loc_;
    std::string last_assigned_;
    Loc last_assigned_loc_;
};

}  // namespace graphrun
