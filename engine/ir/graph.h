// The graph IR shared by both front ends, validation, the writers, the static
// plan and the executor: nodes in program order, `repeat` regions with their
// loop-carried values, and the outputs.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/ir/dtype.h"
#include "engine/ir/epilogue.h"
#include "engine/ir/free_dims.h"
#include "engine/ir/ops.h"
#include "engine/base/prefault.h"
#include "engine/base/small_vector.h"

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

// A node's operands: held in the node for up to two (nearly every op).
using Inputs = SmallVector<Input, 2>;

struct Node {
    // The fields every pass over the nodes reads (validation, placement, the
    // plan, the executor's compile) come first, so that a pass over a million
    // nodes reads two cache lines of each, not five.
    OpKind op = OpKind::Invalid;
    bool generated = false;  // name chosen by the builder, not the user
    bool device_from_block = false;  // device came from an enclosing `with device`, not the call
    bool weak = false;   // a bare scalar literal that is an operand of a binary op: takes the other dtype
    bool valid = false;  // (validation) inferred without error (and all its inputs valid)
    // A const whose values came in binary (an ONNX initializer): `literal` is
    // set by the front end, its attrs are shape and dtype, it has no value.
    bool host_literal = false;
    // (layout pass, engine/plan/channels_last.h) the output is held channels-last
    // between the oneDNN convs, max_pools and concats that write and read it:
    // NHWC (channel_block 0), or oneDNN's blocked nChw8c or nChw16c
    // (channel_block 8 or 16, the channels a multiple of it). Each
    // has the bytes of NCHW, in another order. (One byte for the three: Node may not grow.)
    bool channels_last : 1 = false;
    uint8_t channel_block : 6 = 0;
    // (prepare, after the layout pass) a conv that runs as Winograd's F(4x4,
    // 3x3) (engine/kernels/cpu/winograd.h); for check's listing.
    bool winograd : 1 = false;
    DType dtype = DType::F32;  // (validation)
    int32_t repeat = -1;  // innermost repeat whose body holds it (-1: top level)
    int32_t epilogue = -1;  // (fusion) index into Graph::epilogues, -1: none (Graph::epilogue_of)
    Inputs inputs;
    Shape shape;         // (validation)
    std::string_view placed;  // (placement) canonical device the node runs on: "cpu", "gpu:0" (interned_device_name)

    // --- as written (front ends) ---
    std::string name;     // binding name; generated (`add_1`) for unnamed nodes
    // `x`, or `x#k` for the k-th binding of x (k >= 2): the name the user sees.
    std::string_view display() const { return display_.empty() ? std::string_view(name) : display_.view(); }
    void set_display(std::string_view d) { display_ = d == name ? CompactString() : CompactString(d); }
    std::vector<NamedAttr> attrs;
    CompactString device;  // requested device as written ("" = none); includes an enclosing `with device`
    Loc device_loc;
    Loc loc;             // of the node: operator, call name or JSON node

    // --- filled by validation ---
    std::vector<uint8_t> literal;  // const: the values, dense, in dtype (row-major)

private:
    CompactString display_;  // empty when the display name is `name` (nearly always)

public:
    const NamedAttr* find_attr(std::string_view attr_name) const;
};

// The values of a host_literal const as a flat list attribute (for the writers).
Attr host_literal_value(const Node& n);

// "node 'x' (add)": how error messages name a node.
std::string node_label(const Node& n);

struct Stmt {
    enum class Kind : uint8_t { Node, Repeat, Del };
    Kind kind = Kind::Node;
    int32_t index = 0;  // NodeId, or index into Graph::repeats or Graph::dels
};

// `del x` (top level only): from here on the name is unbound and its value
// unreferenced by it (SPEC section 8). Graph mode's plan frees values after
// their last use anyway; eager mode releases the value at this point.
struct Del {
    NodeId value = kNoNode;  // the value the name held (kNoNode once that node left the graph)
    Loc loc;                 // of the name in the statement
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

// Names interned once: each distinct name gets a dense id (0, 1, 2, ...) in
// the order first seen, so that per-name state can live in vectors indexed by
// id instead of string-keyed node-based hash maps. Open addressing over one
// flat slot array; the names themselves are stored back to back in one buffer.
class NameTable {
public:
    // The id of `name`, adding it if new.
    int32_t intern(std::string_view name);
    // The id of `name`, or -1 if it was never interned.
    int32_t find(std::string_view name) const;
    std::string_view name(int32_t id) const {
        const auto i = static_cast<size_t>(id);
        return std::string_view(chars_).substr(starts_[i], starts_[i + 1] - starts_[i]);
    }
    size_t size() const { return hashes_.size(); }
    void reserve(size_t names);
    // Brings the slot where `name` is (or would go) into the cache ahead of use.
    void prefetch(std::string_view name) const;

private:
    size_t probe(std::string_view name, uint32_t hash) const;  // slot holding `name`, or the empty one
    void rehash(size_t slots);  // `slots`: a power of two

    std::string chars_;
    std::vector<size_t> starts_{0};  // name i is chars_[starts_[i], starts_[i + 1])
    std::vector<uint32_t> hashes_;   // per id
    std::vector<int32_t> slots_;     // id, or -1 when empty; size a power of two
};

// The final top-level binding of every name visible after a program, with
// the lookups of a map. A program may bind a million names: the names stay
// in the table they were interned in while the program was read, and a
// binding costs a few integers.
class NameBindings {
public:
    // A binding as find() and iteration show it (map-like: first, second).
    struct Entry {
        std::string_view first;  // the name
        NodeId second = kNoNode;
    };
    class const_iterator {
    public:
        const_iterator(const NameBindings& b, size_t i) : b_(&b), i_(i) {}
        Entry operator*() const { return b_->entry(i_); }
        const Entry* operator->() const {
            current_ = b_->entry(i_);
            return &current_;
        }
        const_iterator& operator++() {
            ++i_;
            return *this;
        }
        bool operator==(const const_iterator& o) const { return i_ == o.i_; }
        bool operator!=(const const_iterator& o) const { return i_ != o.i_; }

    private:
        const NameBindings* b_;
        size_t i_;
        mutable Entry current_;
    };

    // Replaces the contents; each name at most once.
    void assign(const std::vector<std::pair<std::string, NodeId>>& entries);
    // The same for names interned in `names` (taken over, not rebuilt): name
    // ids[i] is bound to nodes[i].
    void assign(NameTable names, std::vector<int32_t> ids, std::vector<NodeId> nodes);
    const_iterator find(std::string_view name) const;
    size_t count(std::string_view name) const { return find(name) != end() ? 1 : 0; }
    size_t size() const { return ids_.size(); }
    bool empty() const { return ids_.empty(); }
    const_iterator begin() const { return const_iterator(*this, 0); }
    const_iterator end() const { return const_iterator(*this, ids_.size()); }
    // Renumbers the nodes: each bound id becomes remap[id]; a name whose
    // remap[id] is kNoNode (its node left the graph) is unbound.
    void remap(const std::vector<NodeId>& remap);
    // Every name interned, bound at the end or not.
    const NameTable& names() const { return names_; }

private:
    Entry entry(size_t i) const { return Entry{names_.name(ids_[i]), nodes_[i]}; }

    NameTable names_;
    std::vector<int32_t> ids_;     // the bound names, in the order first bound
    std::vector<NodeId> nodes_;    // parallel to ids_
    std::vector<int32_t> index_;   // per name id: index into ids_, or -1
};

// A constant weight held in the layout the CPU kernel that reads it wants
// (the pre-pack pass, engine/plan/prepack.h): oneDNN's blocked conv filters
// and packed GEMM panels. It replaces the constant's Node::literal, which the
// pass empties, so that the weight is held once, in one layout; the session
// places these bytes as the weight. 64-byte aligned, shared (never written).
struct PrepackedWeight {
    std::vector<uint8_t> layout;     // the kernel's description of the layout (opaque to the IR)
    std::shared_ptr<uint8_t> bytes;  // the values in that layout
    uint64_t size = 0;               // bytes
};

struct Graph {
    std::string file;
    bool from_json = false;
    bool from_onnx = false;
    // An ONNX model's free input dimensions and the values they were read with.
    std::vector<FreeDim> free_dims;
    std::vector<Node> nodes;  // program order; LoopParam nodes too (they are in no Stmt list)
    std::vector<Stmt> top;
    std::vector<Repeat> repeats;
    std::vector<Del> dels;  // top-level `del` statements, in order
    std::vector<Output> outputs;
    bool explicit_outputs = false;  // an `output` statement / "outputs" key was given
    // The final top-level binding of every name visible after the program.
    NameBindings bindings;

    // The fusion pass's epilogues (engine/plan/fuse.h), one per fused node.
    std::vector<Epilogue> epilogues;
    // The pre-pack pass's weights, by constant node (engine/plan/prepack.h).
    std::unordered_map<NodeId, PrepackedWeight> prepacked;
    // Constant `id`'s packed bytes, or nullptr where it holds its literal.
    const PrepackedWeight* prepacked_weight(NodeId id) const {
        if (prepacked.empty()) return nullptr;
        auto it = prepacked.find(id);
        return it == prepacked.end() ? nullptr : &it->second;
    }

    const Node& node(NodeId id) const { return nodes[static_cast<size_t>(id)]; }
    // The epilogue a fused node applies to its output; nullptr for every other node.
    const Epilogue* epilogue_of(const Node& n) const {
        return n.epilogue < 0 ? nullptr : &epilogues[static_cast<size_t>(n.epilogue)];
    }
    Node& node(NodeId id) { return nodes[static_cast<size_t>(id)]; }
    // A top-level name (its final value) or the display name of a top-level node.
    std::optional<NodeId> find_fetchable(std::string_view name) const;
    // Every name the user can fetch (for did-you-mean).
    std::vector<std::string> fetchable_names() const;
    // After the nodes were renumbered (old id -> remap[id], kNoNode for one
    // that left): every reference but the statement lists (nodes' inputs,
    // loops' carries, bindings, outputs, dels). The caller rebuilds the statements.
    void remap_references(const std::vector<NodeId>& remap);
};

// Builds a Graph while a front end reads a file: owns the rules of names,
// scopes, loop-carried values, `with device` blocks, display names and
// generated names (SPEC section 1), so that the text and JSON front ends
// produce the same graph for the same program.
class GraphBuilder {
public:
    GraphBuilder(Graph& g, Diagnostics& diag);

    // Room for about `nodes` nodes and `statements` top-level statements (the
    // names bound), so that a big program does not regrow its lists.
    void reserve(size_t nodes, size_t statements);

    // A new node. `device` is the node's own device request ("" = none: the
    // enclosing `with device`, if any, applies). The node is unnamed until assign().
    NodeId add_node(OpKind op, Inputs inputs, std::vector<NamedAttr> attrs, Loc loc,
                    std::string device = {}, Loc device_loc = {});
    // A bare scalar literal: a const node; `weak` when it is an operand of a binary op.
    NodeId add_scalar_literal(Attr value, Loc loc, bool weak);
    // Stand-in for an expression that failed: binds names without cascading errors.
    NodeId add_invalid(Loc loc);

    // The current value of `name` seen from here. Reports "unknown name" (with a
    // did-you-mean, or the repeat body a local name belongs to) and returns nullopt.
    std::optional<NodeId> lookup(std::string_view name, const Loc& loc);
    // `name = <expr>`: names the node, or, when it already has a name (a = b),
    // adds an identity node. Returns the node now bound to `name`.
    NodeId assign(std::string_view name, NodeId value, const Loc& name_loc);
    // A name bound before the program starts (a live session's stored value,
    // SPEC section 8): bound as `name = value` is, but not counted for display
    // names, so that the program's own first binding of it shows as `name`.
    NodeId predeclare(std::string_view name, NodeId value);
    // `del name` (SPEC section 8): unbinds a top-level name. Reports an
    // unknown name, or a `del` inside a repeat body, and returns false.
    bool unbind(std::string_view name, const Loc& loc);
    // A hint that `name` will be assigned soon (at the start of `name = <expr>`):
    // a new name's table slot is a cache miss, which can then overlap the expression.
    void will_assign(std::string_view name) const { names_.prefetch(name); }

    void push_device(std::string device, Loc loc);
    void pop_device();
    void begin_repeat(int64_t count, Loc loc);
    void end_repeat();
    size_t repeat_depth() const { return scopes_.size() - 1; }

    // `output a, b`: resolved by finish() against the final top-level values.
    void set_outputs(std::vector<std::pair<std::string, Loc>> names, Loc loc);
    // A live session's statements need no output: without an output
    // statement, a deleted last name then leaves the outputs empty.
    void outputs_optional() { outputs_optional_ = true; }

    // Ends the program: resolves outputs (or takes the last assigned name), names
    // unnamed nodes `<op>`, `<op>_1`, ... avoiding every user name, and reports an
    // empty program. `eof` is where an "empty program" error points.
    void finish(const Loc& eof);

private:
    // Names are interned (NameTable) and each name's bindings in the open
    // scopes form a chain, innermost first: head_[name] is the binding in the
    // innermost scope that has one, and Binding::outer the next one out. A
    // scope lists the names it binds, so that closing it unlinks them.
    struct Binding {
        uint32_t scope = 0;     // index into scopes_
        NodeId id = kNoNode;    // bound or captured value
        int32_t carry = -1;     // index in the repeat's carries (a captured name), else -1
        int32_t outer = -1;     // the next binding out, index into bindings_
    };
    struct Scope {
        int32_t repeat = -1;
        std::vector<int32_t> names;  // bound or captured in this scope, in first-bound order
        std::vector<Stmt>* stmts = nullptr;
    };
    // The binding of `name` in `scope`, if it has one there.
    Binding* binding_in(size_t scope, int32_t name);
    NodeId resolve(size_t scope, int32_t name);
    void bind(size_t scope, int32_t name, NodeId id);
    NodeId capture(size_t scope, int32_t name, NodeId outer);
    Node& new_node();

    Graph& g_;
    Diagnostics& diag_;
    // Faults the reserved node list in ahead of new_node() for big programs.
    std::unique_ptr<Prefaulter> prefault_;
    NameTable names_;
    std::vector<int32_t> head_;           // per name: innermost binding (index into bindings_), or -1
    std::vector<int32_t> binding_count_;  // per name: times assigned (for x#k)
    std::vector<Binding> bindings_;       // of the open scopes (and garbage of closed ones)
    std::vector<Scope> scopes_;
    std::vector<std::pair<std::string, Loc>> device_stack_;
    std::unordered_map<int32_t, Loc> local_names_;  // names local to a finished repeat body
    std::unordered_map<int32_t, Loc> deleted_;      // top-level names unbound by `del` (and not bound since)
    std::vector<NodeId> repeat_start_;  // per repeat: the first node id made inside its body
    std::vector<std::pair<std::string, Loc>> output_names_;
    Loc output_loc_;
    int32_t last_assigned_ = -1;
    bool outputs_optional_ = false;
    Loc last_assigned_loc_;
};

}  // namespace graphrun
