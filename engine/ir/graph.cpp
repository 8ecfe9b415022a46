// The graph IR and the builder that owns SPEC section 1's rules of names and scopes.
#include "engine/ir/graph.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>


namespace graphrun {

Attr Attr::number(double v, Loc loc) {
    Attr a;
    a.kind = Kind::Number;
    a.f = v;
    a.loc = std::move(loc);
    return a;
}
Attr Attr::integer(int64_t v, Loc loc) {
    Attr a;
    a.kind = Kind::Number;
    a.is_int = true;
    a.i = v;
    a.f = static_cast<double>(v);
    a.loc = std::move(loc);
    return a;
}
Attr Attr::boolean(bool v, Loc loc) {
    Attr a;
    a.kind = Kind::Bool;
    a.b = v;
    a.loc = std::move(loc);
    return a;
}
Attr Attr::ident(std::string v, Loc loc) {
    Attr a;
    a.kind = Kind::Ident;
    a.s = std::move(v);
    a.loc = std::move(loc);
    return a;
}
Attr Attr::string(std::string v, Loc loc) {
    Attr a;
    a.kind = Kind::String;
    a.s = std::move(v);
    a.loc = std::move(loc);
    return a;
}
Attr Attr::make_list(std::vector<Attr> items, Loc loc) {
    Attr a;
    a.kind = Kind::List;
    a.list = std::move(items);
    a.loc = std::move(loc);
    return a;
}

bool attr_equal(const Attr& a, const Attr& b) {
    if (a.is_word() && b.is_word()) return a.s == b.s;
    if (a.kind != b.kind) return false;
    switch (a.kind) {
        case Attr::Kind::Number:
            if (a.is_int && b.is_int) return a.i == b.i;
            if (std::isnan(a.f) && std::isnan(b.f)) return true;
            return a.f == b.f;
        case Attr::Kind::Bool: return a.b == b.b;
        case Attr::Kind::List:
            if (a.list.size() != b.list.size()) return false;
            for (size_t i = 0; i < a.list.size(); ++i)
                if (!attr_equal(a.list[i], b.list[i])) return false;
            return true;
        default: return false;
    }
}

std::string node_label(const Node& n) { return "node '" + std::string(n.display()) + "' (" + op_name(n.op) + ")"; }

const NamedAttr* Node::find_attr(std::string_view attr_name) const {
    for (const NamedAttr& a : attrs)
        if (a.name == attr_name) return &a;
    return nullptr;
}

Attr host_literal_value(const Node& n) {
    DType t = DType::F32;
    if (const NamedAttr* d = n.find_attr("dtype"))
        if (auto parsed = parse_dtype(d->value.s)) t = *parsed;
    const size_t size = dtype_size(t);
    std::vector<Attr> items;
    items.reserve(n.literal.size() / size);
    for (size_t off = 0; off + size <= n.literal.size(); off += size) {
        const uint8_t* p = n.literal.data() + off;
        switch (t) {
            case DType::F32: { float x; std::memcpy(&x, p, 4); items.push_back(Attr::number(x)); break; }
            case DType::F64: { double x; std::memcpy(&x, p, 8); items.push_back(Attr::number(x)); break; }
            case DType::I32: { int32_t x; std::memcpy(&x, p, 4); items.push_back(Attr::integer(x)); break; }
            case DType::I64: { int64_t x; std::memcpy(&x, p, 8); items.push_back(Attr::integer(x)); break; }
            case DType::Bool: items.push_back(Attr::boolean(*p != 0)); break;
            case DType::F16:
            case DType::BF16: items.push_back(Attr::number(element_as_double(t, p, 0))); break;
            case DType::I8:
            case DType::U8: items.push_back(Attr::integer(element_as_int(t, p, 0))); break;
        }
    }
    return Attr::make_list(std::move(items));
}

std::optional<NodeId> Graph::find_fetchable(std::string_view name) const {
    auto it = bindings.find(name);
    if (it != bindings.end()) return it->second;
    for (size_t i = 0; i < nodes.size(); ++i) {
        const Node& n = nodes[i];
        if (n.repeat == -1 && n.op != OpKind::LoopParam && n.display() == name)
            return static_cast<NodeId>(i);
    }
    return std::nullopt;
}

std::vector<std::string> Graph::fetchable_names() const {
    std::vector<std::string> v;
    v.reserve(bindings.size());
    for (const auto& [name, id] : bindings) v.emplace_back(name);
    for (const Node& n : nodes)
        if (n.repeat == -1 && n.op != OpKind::LoopParam && n.display() != n.name) v.emplace_back(n.display());
    return v;
}

// ---------------------------------------------------------------------------

namespace {

// A 32-bit hash of a short name, 8 bytes at a time (the mixing constants are
// splitmix64's); the low bits are well mixed, which linear probing needs.
uint32_t hash_name(std::string_view s) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ s.size();
    const char* p = s.data();
    size_t n = s.size();
    while (n >= 8) {
        uint64_t w;
        std::memcpy(&w, p, 8);
        h = (h ^ w) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 29;
        p += 8;
        n -= 8;
    }
    if (n > 0) {
        uint64_t w = 0;
        std::memcpy(&w, p, n);
        h = (h ^ w) * 0x94D049BB133111EBull;
    }
    h ^= h >> 31;
    h *= 0xBF58476D1CE4E5B9ull;
    h ^= h >> 32;
    return static_cast<uint32_t>(h);
}

}  // namespace

size_t NameTable::probe(std::string_view name, uint32_t hash) const {
    const size_t mask = slots_.size() - 1;
    for (size_t i = hash & mask;; i = (i + 1) & mask) {
        const int32_t id = slots_[i];
        if (id < 0) return i;
        if (hashes_[static_cast<size_t>(id)] == hash && this->name(id) == name) return i;
    }
}

int32_t NameTable::find(std::string_view name) const {
    if (slots_.empty()) return -1;
    return slots_[probe(name, hash_name(name))];
}

int32_t NameTable::intern(std::string_view name) {
    // At most half full, so that probes stay short.
    if ((hashes_.size() + 1) * 2 > slots_.size()) rehash(std::max<size_t>(16, slots_.size() * 2));
    const uint32_t hash = hash_name(name);
    const size_t slot = probe(name, hash);
    if (slots_[slot] >= 0) return slots_[slot];
    const auto id = static_cast<int32_t>(hashes_.size());
    chars_.append(name);
    starts_.push_back(chars_.size());
    hashes_.push_back(hash);
    slots_[slot] = id;
    return id;
}

void NameTable::reserve(size_t names) {
    hashes_.reserve(names);
    starts_.reserve(names + 1);
    size_t want = 16;
    while (want < names * 2) want *= 2;
    if (want > slots_.size()) rehash(want);
}

void NameTable::rehash(size_t size) {
    slots_.assign(size, -1);
    const size_t mask = size - 1;
    for (size_t id = 0; id < hashes_.size(); ++id) {
        size_t i = hashes_[id] & mask;
        while (slots_[i] >= 0) i = (i + 1) & mask;
        slots_[i] = static_cast<int32_t>(id);
    }
}

void NameTable::prefetch(std::string_view name) const {
    // Not when the next intern() grows the table: the slot moves.
    if ((hashes_.size() + 1) * 2 > slots_.size()) return;
    __builtin_prefetch(&slots_[hash_name(name) & (slots_.size() - 1)], 1);
}

void NameBindings::assign(const std::vector<std::pair<std::string, NodeId>>& entries) {
    NameTable names;
    names.reserve(entries.size());
    std::vector<int32_t> ids;
    std::vector<NodeId> nodes;
    ids.reserve(entries.size());
    nodes.reserve(entries.size());
    for (const auto& [name, node] : entries) {
        ids.push_back(names.intern(name));
        nodes.push_back(node);
    }
    assign(std::move(names), std::move(ids), std::move(nodes));
}

void NameBindings::assign(NameTable names, std::vector<int32_t> ids, std::vector<NodeId> nodes) {
    names_ = std::move(names);
    ids_ = std::move(ids);
    nodes_ = std::move(nodes);
    index_.assign(names_.size(), -1);
    for (size_t i = 0; i < ids_.size(); ++i) index_[static_cast<size_t>(ids_[i])] = static_cast<int32_t>(i);
}

NameBindings::const_iterator NameBindings::find(std::string_view name) const {
    const int32_t id = names_.find(name);
    if (id < 0 || index_[static_cast<size_t>(id)] < 0) return end();
    return const_iterator(*this, static_cast<size_t>(index_[static_cast<size_t>(id)]));
}

void NameBindings::remap(const std::vector<NodeId>& remap) {
    std::vector<bool> unbind;  // per entry, once one is: its node left the graph (the fusion pass)
    for (size_t i = 0; i < nodes_.size(); ++i) {
        NodeId& id = nodes_[i];
        if (id < 0) continue;
        id = remap[static_cast<size_t>(id)];
        if (id != kNoNode) continue;
        unbind.resize(nodes_.size(), false);
        unbind[i] = true;
    }
    if (unbind.empty()) return;
    size_t kept = 0;
    for (size_t i = 0; i < ids_.size(); ++i) {
        index_[static_cast<size_t>(ids_[i])] = -1;
        if (unbind[i]) continue;
        ids_[kept] = ids_[i];
        nodes_[kept] = nodes_[i];
        index_[static_cast<size_t>(ids_[kept])] = static_cast<int32_t>(kept);
        ++kept;
    }
    ids_.resize(kept);
    nodes_.resize(kept);
}

namespace {

// The op and suffix of a name of the form a generated name takes, `<op>` (0)
// or `<op>_<k>` (k >= 1, written without leading zeros); nullopt for any
// other name.
std::optional<std::pair<OpKind, int64_t>> generated_name_form(std::string_view name) {
    int64_t k = 0;
    std::string_view base = name;
    const size_t us = name.rfind('_');
    if (us != std::string_view::npos && us + 1 < name.size() && name[us + 1] >= '1' && name[us + 1] <= '9') {
        const std::string_view digits = name.substr(us + 1);
        auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), k);
        if (ec == std::errc() && end == digits.data() + digits.size()) base = name.substr(0, us);
        else k = 0;
    }
    const std::optional<OpKind> op = find_op(base);
    if (!op) return std::nullopt;
    return std::make_pair(*op, k);
}

}  // namespace

// ---------------------------------------------------------------------------

namespace {

// A million-node program holds a million of these, and every pass over the
// graph streams them through the cache: keep new fields out, or cold ones
// out of line (as the display name and the requested device are).
static_assert(sizeof(void*) != 8 || sizeof(Node) <= 240, "Node grew");

// A node list this large is faulted in on a second thread while it fills.
constexpr size_t kPrefaultBytes = size_t{64} << 20;

}  // namespace

GraphBuilder::GraphBuilder(Graph& g, Diagnostics& diag) : g_(g), diag_(diag) {
    Scope top;
    top.stmts = &g_.top;
    scopes_.push_back(std::move(top));
}

void GraphBuilder::reserve(size_t nodes, size_t statements) {
    statements = std::min(statements, nodes);
    g_.nodes.reserve(nodes);
    prefault_.reset();
    if (g_.nodes.capacity() * sizeof(Node) >= kPrefaultBytes)
        prefault_ = std::make_unique<Prefaulter>(g_.nodes.data(), g_.nodes.capacity() * sizeof(Node));
    g_.top.reserve(nodes);
    names_.reserve(statements);
    head_.reserve(statements);
    binding_count_.reserve(statements);
    bindings_.reserve(statements);
    scopes_[0].names.reserve(statements);
}

Node& GraphBuilder::new_node() {
    if (prefault_ && g_.nodes.size() % 4096 == 0) {
        if (g_.nodes.size() == g_.nodes.capacity()) prefault_.reset();  // the list moves: its old place is no use
        else prefault_->progress(g_.nodes.size() * sizeof(Node));
    }
    Node& n = g_.nodes.emplace_back();
    n.repeat = scopes_.back().repeat;
    return n;
}

NodeId GraphBuilder::add_node(OpKind op, Inputs inputs, std::vector<NamedAttr> attrs,
                              Loc loc, std::string device, Loc device_loc) {
    auto id = static_cast<NodeId>(g_.nodes.size());
    Node& n = new_node();
    n.op = op;
    n.inputs = std::move(inputs);
    n.attrs = std::move(attrs);
    n.loc = std::move(loc);
    if (device.empty() && !device_stack_.empty()) {
        n.device = device_stack_.back().first;
        n.device_loc = device_stack_.back().second;
        n.device_from_block = true;
    } else {
        n.device = std::move(device);
        n.device_loc = std::move(device_loc);
    }
    scopes_.back().stmts->push_back(Stmt{Stmt::Kind::Node, id});
    return id;
}

NodeId GraphBuilder::add_scalar_literal(Attr value, Loc loc, bool weak) {
    std::vector<NamedAttr> attrs;
    Loc vloc = value.loc;
    attrs.push_back(NamedAttr{"value", std::move(value), std::move(vloc)});
    NodeId id = add_node(OpKind::Const, {}, std::move(attrs), std::move(loc));
    Node& n = g_.node(id);
    n.weak = weak;
    if (weak) {
        // A weak literal goes wherever its one consumer runs (see placement).
        n.device.clear();
        n.device_loc = {};
        n.device_from_block = false;
    }
    return id;
}

NodeId GraphBuilder::add_invalid(Loc loc) {
    // Not a statement: nothing runs it. It only gives a failed expression a value.
    auto id = static_cast<NodeId>(g_.nodes.size());
    Node& n = new_node();
    n.op = OpKind::Invalid;
    n.loc = std::move(loc);
    return id;
}

namespace {

// "line 3" (text) or "/nodes/3" (JSON): where a statement of the program is.
// A place named in a message: a text line, or a JSON pointer found when shown.
std::string place_of(const Diagnostics& diag, const Loc& at) {
    return at.line ? "line " + std::to_string(at.line) : diag.pointer(at);
}

}  // namespace

GraphBuilder::Binding* GraphBuilder::binding_in(size_t scope, int32_t name) {
    for (int32_t b = head_[static_cast<size_t>(name)]; b >= 0; b = bindings_[static_cast<size_t>(b)].outer) {
        Binding& binding = bindings_[static_cast<size_t>(b)];
        if (binding.scope == scope) return &binding;
        if (binding.scope < scope) break;
    }
    return nullptr;
}

NodeId GraphBuilder::capture(size_t scope, int32_t name, NodeId outer) {
    // A tentative loop parameter: it becomes a loop-carried value if the body
    // assigns `name`; otherwise end_repeat() points its uses back at `outer`.
    const std::string text(names_.name(name));
    Loc loc = g_.node(outer).loc;
    auto id = static_cast<NodeId>(g_.nodes.size());
    Node& n = g_.nodes.emplace_back();
    n.op = OpKind::LoopParam;
    n.name = text;
    n.repeat = scopes_[scope].repeat;
    n.loc = std::move(loc);
    Repeat& r = g_.repeats[static_cast<size_t>(scopes_[scope].repeat)];
    const auto carry = static_cast<int32_t>(r.carries.size());
    r.carries.push_back(Carry{text, id, outer, kNoNode});
    // Linked in at its place in the chain, which is innermost first.
    int32_t* link = &head_[static_cast<size_t>(name)];
    while (*link >= 0 && bindings_[static_cast<size_t>(*link)].scope > scope)
        link = &bindings_[static_cast<size_t>(*link)].outer;
    const auto index = static_cast<int32_t>(bindings_.size());
    const int32_t next = *link;
    *link = index;  // before bindings_ grows: `link` may point into it
    bindings_.push_back(Binding{static_cast<uint32_t>(scope), id, carry, next});
    scopes_[scope].names.push_back(name);
    return id;
}

NodeId GraphBuilder::resolve(size_t scope, int32_t name) {
    if (const Binding* b = binding_in(scope, name)) return b->id;
    if (scope == 0) return kNoNode;
    NodeId outer = resolve(scope - 1, name);
    if (outer == kNoNode) return kNoNode;
    return capture(scope, name, outer);
}

std::optional<NodeId> GraphBuilder::lookup(std::string_view name, const Loc& loc) {
    const int32_t sym = names_.find(name);
    if (sym >= 0) {
        NodeId id = resolve(scopes_.size() - 1, sym);
        if (id != kNoNode) return id;
        auto local = local_names_.find(sym);
        if (local != local_names_.end()) {
            const Loc& at = local->second;
            std::string where = place_of(diag_, at);
            diag_.error(loc, "'" + std::string(name) + "' is local to the repeat body where it is bound (" +
                                 where + "); bind it before the loop to carry its value out of the body");
            return std::nullopt;
        }
        if (auto del = deleted_.find(sym); del != deleted_.end()) {
            diag_.error(loc, "'" + std::string(name) + "' was deleted by 'del' at " + place_of(diag_, del->second) +
                                 "; bind it again before using it");
            return std::nullopt;
        }
    }
    // Every name bound in an open scope.
    std::vector<std::string> candidates;
    for (size_t s = 0; s < head_.size(); ++s)
        if (head_[s] >= 0) candidates.emplace_back(names_.name(static_cast<int32_t>(s)));
    std::string near = nearest_name(name, candidates);
    std::string msg = "unknown name '" + std::string(name) + "'";
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
    else if (find_op(name)) msg += "; '" + std::string(name) + "' is an op: call it as " + std::string(name) + "(...)";
    diag_.error(loc, std::move(msg));
    return std::nullopt;
}

void GraphBuilder::bind(size_t scope, int32_t name, NodeId id) {
    Binding* b = binding_in(scope, name);
    if (scope > 0) {
        if (!b) {
            // Assigning a name bound outside the body makes it loop-carried.
            NodeId outer = resolve(scope - 1, name);
            if (outer != kNoNode) {
                capture(scope, name, outer);
                b = binding_in(scope, name);
            }
        }
        if (b && b->carry >= 0)
            g_.repeats[static_cast<size_t>(scopes_[scope].repeat)].carries[static_cast<size_t>(b->carry)].update = id;
    } else {
        last_assigned_ = name;
        last_assigned_loc_ = g_.node(id).loc;
        if (!deleted_.empty()) deleted_.erase(name);
    }
    if (b) {
        b->id = id;
        return;
    }
    // New in this scope, which is the innermost one that binds it.
    const auto index = static_cast<int32_t>(bindings_.size());
    bindings_.push_back(Binding{static_cast<uint32_t>(scope), id, -1, head_[static_cast<size_t>(name)]});
    head_[static_cast<size_t>(name)] = index;
    scopes_[scope].names.push_back(name);
}

NodeId GraphBuilder::assign(std::string_view name, NodeId value, const Loc& name_loc) {
    Node* n = &g_.node(value);
    if (!n->name.empty() || n->op == OpKind::LoopParam || n->weak) {
        // `a = b`: a new node, so that every binding is a node of its own.
        value = add_node(OpKind::Identity, {Input{value, name_loc}}, {}, name_loc);
        n = &g_.node(value);
    }
    const int32_t sym = names_.intern(name);
    if (static_cast<size_t>(sym) == head_.size()) {
        head_.push_back(-1);
        binding_count_.push_back(0);
    }
    int32_t k = ++binding_count_[static_cast<size_t>(sym)];
    n->name = name;
    if (k >= 2) {
        std::string display;
        display.reserve(name.size() + 11);
        display = name;
        display += '#';
        display += std::to_string(k);
        n->set_display(display);
    }  // else the display name is the name: n is unnamed, so holds no other
    n->generated = false;
    bind(scopes_.size() - 1, sym, value);
    return value;
}

bool GraphBuilder::unbind(std::string_view name, const Loc& loc) {
    if (scopes_.size() > 1) {
        diag_.error(loc, "'del' is only allowed at top level, not inside a repeat body");
        return false;
    }
    const std::optional<NodeId> id = lookup(name, loc);
    if (!id) return false;
    const int32_t sym = names_.find(name);
    int32_t& head = head_[static_cast<size_t>(sym)];
    head = bindings_[static_cast<size_t>(head)].outer;  // the top scope's binding: nothing is outside it
    deleted_[sym] = loc;
    const auto index = static_cast<int32_t>(g_.dels.size());
    g_.dels.push_back(Del{*id, loc});
    scopes_.back().stmts->push_back(Stmt{Stmt::Kind::Del, index});
    return true;
}

NodeId GraphBuilder::predeclare(std::string_view name, NodeId value) {
    const NodeId id = assign(name, value, {});
    --binding_count_[static_cast<size_t>(names_.find(name))];
    return id;
}

void GraphBuilder::push_device(std::string device, Loc loc) {
    device_stack_.emplace_back(std::move(device), std::move(loc));
}

void GraphBuilder::pop_device() {
    if (!device_stack_.empty()) device_stack_.pop_back();
}

void GraphBuilder::begin_repeat(int64_t count, Loc loc) {
    Repeat r;
    r.count = count;
    r.loc = loc;
    r.parent = scopes_.back().repeat;
    auto index = static_cast<int32_t>(g_.repeats.size());
    // Before g_.repeats grows: the enclosing scope's list may be a body in it.
    scopes_.back().stmts->push_back(Stmt{Stmt::Kind::Repeat, index});
    g_.repeats.push_back(std::move(r));
    repeat_start_.push_back(static_cast<NodeId>(g_.nodes.size()));
    Scope s;
    s.repeat = index;
    s.stmts = &g_.repeats.back().body;
    scopes_.push_back(std::move(s));
    // g_.repeats may have grown: re-point every open scope at its body.
    for (size_t i = 1; i < scopes_.size(); ++i)
        scopes_[i].stmts = &g_.repeats[static_cast<size_t>(scopes_[i].repeat)].body;
}

void GraphBuilder::end_repeat() {
    if (scopes_.size() <= 1) return;
    Scope s = std::move(scopes_.back());
    scopes_.pop_back();
    // Unlink the body's bindings; the names it bound without carrying are local to it.
    for (int32_t name : s.names) {
        int32_t& head = head_[static_cast<size_t>(name)];
        const Binding& b = bindings_[static_cast<size_t>(head)];
        if (b.carry < 0) local_names_[name] = g_.node(b.id).loc;
        head = b.outer;
    }
    Repeat& r = g_.repeats[static_cast<size_t>(s.repeat)];
    NodeId first = static_cast<NodeId>(g_.nodes.size());
    for (const Carry& c : r.carries) first = std::min(first, c.param);
    // Names only read in the body are not carried: their uses see the outer value.
    // Only this loop's body (from `first` on) and the loops in it can use them.
    std::vector<NodeId> replace(g_.nodes.size() - static_cast<size_t>(first), kNoNode);
    bool any = false;
    std::vector<Carry> kept;
    for (const Carry& c : r.carries) {
        if (c.update == kNoNode) {
            replace[static_cast<size_t>(c.param - first)] = c.init;
            any = true;
            // Not carried: finish() drops the parameter node.
        } else {
            kept.push_back(c);
        }
    }
    if (any) {
        auto fix = [&](NodeId& id) {
            if (id >= first && static_cast<size_t>(id - first) < replace.size()) {
                NodeId to = replace[static_cast<size_t>(id - first)];
                if (to != kNoNode) id = to;
            }
        };
        for (size_t i = static_cast<size_t>(first); i < g_.nodes.size(); ++i)
            for (Input& in : g_.nodes[i].inputs) fix(in.id);
        for (size_t i = static_cast<size_t>(s.repeat); i < g_.repeats.size(); ++i)
            for (Carry& c : g_.repeats[i].carries) {
                fix(c.init);
                fix(c.update);
            }
    }
    std::sort(kept.begin(), kept.end(), [](const Carry& a, const Carry& b) { return a.name < b.name; });
    r.carries = std::move(kept);
    // After the loop the carried names hold the loop's final values.
    for (const Carry& c : r.carries) bind(scopes_.size() - 1, names_.find(c.name), c.param);
    if (scopes_.size() == 1)
        for (const Carry& c : r.carries) local_names_.erase(names_.find(c.name));
}

void GraphBuilder::set_outputs(std::vector<std::pair<std::string, Loc>> names, Loc loc) {
    output_names_ = std::move(names);
    output_loc_ = std::move(loc);
    g_.explicit_outputs = true;
}

void GraphBuilder::finish(const Loc& eof) {
    prefault_.reset();
    while (scopes_.size() > 1) end_repeat();
    {
        // The table of names goes to the graph: finish() is the builder's last step.
        std::vector<int32_t>& bound = scopes_[0].names;
        if (!g_.dels.empty()) {
            // A deleted name is not bound; one bound again after its `del` is listed twice.
            std::vector<uint8_t> seen(head_.size(), 0);
            size_t kept = 0;
            for (int32_t name : bound) {
                const auto k = static_cast<size_t>(name);
                if (head_[k] < 0 || seen[k]) continue;
                seen[k] = 1;
                bound[kept++] = name;
            }
            bound.resize(kept);
        }
        std::vector<NodeId> nodes;
        nodes.reserve(bound.size());
        for (int32_t name : bound)
            nodes.push_back(bindings_[static_cast<size_t>(head_[static_cast<size_t>(name)])].id);
        g_.bindings.assign(std::move(names_), std::move(scopes_[0].names), std::move(nodes));
        names_ = NameTable();
    }
    const NameTable& names = g_.bindings.names();

    bool any = false;
    for (const Node& n : g_.nodes)
        if (n.op != OpKind::LoopParam && n.op != OpKind::Invalid) {
            any = true;
            break;
        }
    if (!any && !diag_.has_errors()) {
        diag_.error(eof, "empty program: a graph needs at least one node (for example: x = [1, 2, 3])");
    }

    // Outputs.
    if (g_.explicit_outputs) {
        for (auto& [name, loc] : output_names_) {
            const int32_t deleted = deleted_.empty() ? -1 : names.find(name);
            if (auto del = deleted_.find(deleted); del != deleted_.end()) {
                diag_.error(loc, "unknown output '" + name + "': it was deleted by 'del' at " + place_of(diag_, del->second));
                continue;
            }
            auto id = g_.find_fetchable(name);
            if (!id) {
                std::string msg = "unknown output '" + name + "'";
                const int32_t sym = names.find(name);
                if (sym >= 0 && local_names_.count(sym))
                    msg += ": it is local to a repeat body; bind it before the loop to carry it out";
                else if (auto near = nearest_name(name, g_.fetchable_names()); !near.empty())
                    msg += "; did you mean '" + near + "'?";
                diag_.error(loc, msg);
                continue;
            }
            g_.outputs.push_back(Output{name, *id, loc});
        }
    } else if (last_assigned_ >= 0 && head_[static_cast<size_t>(last_assigned_)] < 0) {
        if (!outputs_optional_)
            diag_.error(deleted_[last_assigned_], "nothing to output: the last name assigned, '" +
                                                      std::string(names.name(last_assigned_)) +
                                                      "', is deleted here; name the outputs with an output statement");
    } else if (last_assigned_ >= 0) {
        g_.outputs.push_back(Output{std::string(names.name(last_assigned_)),
                                    bindings_[static_cast<size_t>(head_[static_cast<size_t>(last_assigned_)])].id,
                                    last_assigned_loc_});
    }

    // Generated names, chosen after parsing so that they never collide with a
    // user's: every name bound by the program (loop parameters included) is
    // assigned, so has a binding count. Two op names never give the same
    // candidate, since no op name ends in '_' and digits, so the candidates of
    // one op only need to avoid each other, which the rising suffix does, and
    // the user's names of the same form: those are found in one pass over the
    // names (not one table probe per candidate, a cache miss each in a big
    // program) and skipped with a walk along their sorted suffixes.
    const size_t op_count = static_cast<size_t>(OpKind::Invalid) + 1;
    std::vector<std::vector<int64_t>> taken(op_count);  // per op: suffixes bound by the user (0: the bare name)
    for (size_t id = 0; id < names.size(); ++id) {
        if (binding_count_[id] == 0) continue;
        const std::optional<std::pair<OpKind, int64_t>> form = generated_name_form(names.name(static_cast<int32_t>(id)));
        if (form) taken[static_cast<size_t>(form->first)].push_back(form->second);
    }
    for (auto& t : taken) std::sort(t.begin(), t.end());
    std::vector<int64_t> next_suffix(op_count, 0);
    std::vector<size_t> next_taken(op_count, 0);
    std::string candidate;
    for (Node& n : g_.nodes) {
        if (!n.name.empty() || n.op == OpKind::Invalid || n.op == OpKind::LoopParam) continue;
        const auto op = static_cast<size_t>(n.op);
        int64_t& k = next_suffix[op];
        const std::vector<int64_t>& skip = taken[op];
        size_t& t = next_taken[op];
        for (; t < skip.size() && skip[t] <= k; ++t)
            if (skip[t] == k) ++k;
        candidate = op_name(n.op);
        if (k > 0) {
            char digits[24];
            auto [end, ec] = std::to_chars(digits, digits + sizeof digits, k);
            candidate += '_';
            candidate.append(digits, end);
        }
        ++k;
        n.name = candidate;
        n.set_display(candidate);
        n.generated = true;
    }

    // Only loops make loop parameters: without them the nodes are in their final order.
    if (g_.repeats.empty()) return;

    // Drop the tentative loop parameters that were not carried, and put each
    // loop's parameters (in name order) just before its body: the order a
    // program's text and its JSON form agree on, whatever order the names
    // were first read in. repeat_start_ rises with the loop index.
    std::vector<NodeId> order;
    order.reserve(g_.nodes.size());
    size_t next_loop = 0;
    for (size_t i = 0; i <= g_.nodes.size(); ++i) {
        for (; next_loop < g_.repeats.size() && static_cast<size_t>(repeat_start_[next_loop]) == i; ++next_loop)
            for (const Carry& c : g_.repeats[next_loop].carries) order.push_back(c.param);
        if (i < g_.nodes.size() && g_.nodes[i].op != OpKind::LoopParam) order.push_back(static_cast<NodeId>(i));
    }
    std::vector<NodeId> remap(g_.nodes.size(), kNoNode);
    std::vector<Node> kept;
    kept.reserve(order.size());
    for (NodeId old : order) {
        remap[static_cast<size_t>(old)] = static_cast<NodeId>(kept.size());
        kept.push_back(std::move(g_.nodes[static_cast<size_t>(old)]));
    }
    g_.nodes = std::move(kept);
    auto fix_stmts = [&](std::vector<Stmt>& stmts) {
        for (Stmt& st : stmts)
            if (st.kind == Stmt::Kind::Node && st.index >= 0) st.index = remap[static_cast<size_t>(st.index)];
    };
    fix_stmts(g_.top);
    for (Repeat& r : g_.repeats) fix_stmts(r.body);
    g_.remap_references(remap);
}

void Graph::remap_references(const std::vector<NodeId>& remap) {
    auto fix = [&](NodeId& id) {
        if (id >= 0) id = remap[static_cast<size_t>(id)];
    };
    for (Node& n : nodes)
        for (Input& in : n.inputs) fix(in.id);
    for (Repeat& r : repeats)
        for (Carry& c : r.carries) {
            fix(c.param);
            fix(c.init);
            fix(c.update);
        }
    bindings.remap(remap);
    for (Output& o : outputs) fix(o.id);
    for (Del& d : dels) fix(d.value);
    if (!prepacked.empty()) {
        std::unordered_map<NodeId, PrepackedWeight> moved;
        for (auto& [id, w] : prepacked)
            if (const NodeId to = remap[static_cast<size_t>(id)]; to >= 0) moved.emplace(to, std::move(w));
        prepacked = std::move(moved);
    }
}

}  // namespace graphrun
