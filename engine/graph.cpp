// The graph IR and the builder that owns SPEC section 1's rules of names and scopes.
#include "engine/graph.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

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

const NamedAttr* Node::find_attr(std::string_view attr_name) const {
    for (const NamedAttr& a : attrs)
        if (a.name == attr_name) return &a;
    return nullptr;
}

std::optional<NodeId> Graph::find_fetchable(std::string_view name) const {
    auto it = bindings.find(std::string(name));
    if (it != bindings.end()) return it->second;
    for (size_t i = 0; i < nodes.size(); ++i) {
        const Node& n = nodes[i];
        if (n.repeat == -1 && n.op != OpKind::LoopParam && n.display == name)
            return static_cast<NodeId>(i);
    }
    return std::nullopt;
}

std::vector<std::string> Graph::fetchable_names() const {
    std::vector<std::string> v;
    for (const auto& [name, id] : bindings) v.push_back(name);
    for (const Node& n : nodes)
        if (n.repeat == -1 && n.op != OpKind::LoopParam && n.display != n.name) v.push_back(n.display);
    return v;
}

// ---------------------------------------------------------------------------

GraphBuilder::GraphBuilder(Graph& g, Diagnostics& diag) : g_(g), diag_(diag) {
    Scope top;
    top.stmts = &g_.top;
    scopes_.push_back(std::move(top));
}

NodeId GraphBuilder::add_node(OpKind op, std::vector<Input> inputs, std::vector<NamedAttr> attrs,
                              Loc loc, std::string device, Loc device_loc) {
    Node n;
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
    n.repeat = scopes_.back().repeat;
    auto id = static_cast<NodeId>(g_.nodes.size());
    g_.nodes.push_back(std::move(n));
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
    Node n;
    n.op = OpKind::Invalid;
    n.loc = std::move(loc);
    n.repeat = scopes_.back().repeat;
    auto id = static_cast<NodeId>(g_.nodes.size());
    g_.nodes.push_back(std::move(n));
    return id;
}

NodeId GraphBuilder::capture(size_t scope, const std::string& name, NodeId outer) {
    // A tentative loop parameter: it becomes a loop-carried value if the body
    // assigns `name`; otherwise end_repeat() points its uses back at `outer`.
    Node n;
    n.op = OpKind::LoopParam;
    n.name = name;
    n.display = name;
    n.repeat = scopes_[scope].repeat;
    n.loc = g_.node(outer).loc;
    auto id = static_cast<NodeId>(g_.nodes.size());
    g_.nodes.push_back(std::move(n));
    Repeat& r = g_.repeats[static_cast<size_t>(scopes_[scope].repeat)];
    scopes_[scope].carry_index[name] = r.carries.size();
    r.carries.push_back(Carry{name, id, outer, kNoNode});
    scopes_[scope].names[name] = id;
    return id;
}

NodeId GraphBuilder::resolve(size_t scope, const std::string& name) {
    auto it = scopes_[scope].names.find(name);
    if (it != scopes_[scope].names.end()) return it->second;
    if (scope == 0) return kNoNode;
    NodeId outer = resolve(scope - 1, name);
    if (outer == kNoNode) return kNoNode;
    return capture(scope, name, outer);
}

std::optional<NodeId> GraphBuilder::lookup(const std::string& name, const Loc& loc) {
    NodeId id = resolve(scopes_.size() - 1, name);
    if (id != kNoNode) return id;
    auto local = local_names_.find(name);
    if (local != local_names_.end()) {
        const Loc& at = local->second;
        std::string where = at.line ? "line " + std::to_string(at.line) : at.pointer;
        diag_.error(loc, "'" + name + "' is local to the repeat body where it is bound (" + where +
                             "); bind it before the loop to carry its value out of the body");
        return std::nullopt;
    }
    std::vector<std::string> candidates;
    for (const Scope& s : scopes_)
        for (const auto& [n, unused] : s.names) candidates.push_back(n);
    std::string near = nearest_name(name, candidates);
    std::string msg = "unknown name '" + name + "'";
    if (!near.empty()) msg += "; did you mean '" + near + "'?";
    else if (find_op(name)) msg += "; '" + name + "' is an op: call it as " + name + "(...)";
    diag_.error(loc, std::move(msg));
    return std::nullopt;
}

void GraphBuilder::bind(size_t scope, const std::string& name, NodeId id) {
    Scope& s = scopes_[scope];
    if (scope > 0) {
        auto ci = s.carry_index.find(name);
        bool local = s.names.count(name) && ci == s.carry_index.end();
        if (ci == s.carry_index.end() && !local) {
            // Assigning a name bound outside the body makes it loop-carried.
            NodeId outer = resolve(scope - 1, name);
            if (outer != kNoNode) {
                capture(scope, name, outer);
                ci = s.carry_index.find(name);
            }
        }
        if (ci != s.carry_index.end()) {
            g_.repeats[static_cast<size_t>(s.repeat)].carries[ci->second].update = id;
        }
    } else {
        last_assigned_ = name;
        last_assigned_loc_ = g_.node(id).loc;
    }
    s.names[name] = id;
}

NodeId GraphBuilder::assign(const std::string& name, NodeId value, const Loc& name_loc) {
    Node* n = &g_.node(value);
    if (!n->name.empty() || n->op == OpKind::LoopParam || n->weak) {
        // `a = b`: a new node, so that every binding is a node of its own.
        value = add_node(OpKind::Identity, {Input{value, name_loc}}, {}, name_loc);
        n = &g_.node(value);
    }
    int32_t k = ++binding_count_[name];
    n->name = name;
    n->display = k >= 2 ? name + "#" + std::to_string(k) : name;
    n->generated = false;
    bind(scopes_.size() - 1, name, value);
    return value;
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
    Repeat& r = g_.repeats[static_cast<size_t>(s.repeat)];
    NodeId first = static_cast<NodeId>(g_.nodes.size());
    for (const Carry& c : r.carries) first = std::min(first, c.param);
    // Names only read in the body are not carried: their uses see the outer value.
    std::unordered_map<NodeId, NodeId> replace;
    std::vector<Carry> kept;
    for (const Carry& c : r.carries) {
        if (c.update == kNoNode) {
            replace[c.param] = c.init;
            // Not carried: finish() drops the parameter node.
        } else {
            kept.push_back(c);
        }
    }
    if (!replace.empty()) {
        for (size_t i = static_cast<size_t>(first); i < g_.nodes.size(); ++i)
            for (Input& in : g_.nodes[i].inputs) {
                auto it = replace.find(in.id);
                if (it != replace.end()) in.id = it->second;
            }
        for (Repeat& inner : g_.repeats)
            for (Carry& c : inner.carries) {
                auto it = replace.find(c.init);
                if (it != replace.end()) c.init = it->second;
                it = replace.find(c.update);
                if (it != replace.end()) c.update = it->second;
            }
    }
    std::sort(kept.begin(), kept.end(), [](const Carry& a, const Carry& b) { return a.name < b.name; });
    r.carries = std::move(kept);
    for (const auto& [name, id] : s.names) {
        if (s.carry_index.count(name)) continue;
        local_names_[name] = g_.node(id).loc;
    }
    // After the loop the carried names hold the loop's final values.
    for (const Carry& c : r.carries) bind(scopes_.size() - 1, c.name, c.param);
    if (scopes_.size() == 1)
        for (const Carry& c : r.carries) local_names_.erase(c.name);
}

void GraphBuilder::set_outputs(std::vector<std::pair<std::string, Loc>> names, Loc loc) {
    output_names_ = std::move(names);
    output_loc_ = std::move(loc);
    g_.explicit_outputs = true;
}

void GraphBuilder::finish(const Loc& eof) {
    while (scopes_.size() > 1) end_repeat();
    g_.bindings = scopes_[0].names;

    bool any = false;
    for (const Node& n : g_.nodes)
        if (n.op != OpKind::LoopParam && n.op != OpKind::Invalid) any = true;
    if (!any && !diag_.has_errors()) {
        diag_.error(eof, "empty program: a graph needs at least one node (for example: x = [1, 2, 3])");
    }

    // Outputs.
    if (g_.explicit_outputs) {
        for (auto& [name, loc] : output_names_) {
            auto id = g_.find_fetchable(name);
            if (!id) {
                std::string msg = "unknown output '" + name + "'";
                if (local_names_.count(name))
                    msg += ": it is local to a repeat body; bind it before the loop to carry it out";
                else if (auto near = nearest_name(name, g_.fetchable_names()); !near.empty())
                    msg += "; did you mean '" + near + "'?";
                diag_.error(loc, msg);
                continue;
            }
            g_.outputs.push_back(Output{name, *id, loc});
        }
    } else if (!last_assigned_.empty()) {
        g_.outputs.push_back(Output{last_assigned_, g_.bindings[last_assigned_], last_assigned_loc_});
    }

    // Generated names, chosen after parsing so that they never collide with a user's.
    std::unordered_set<std::string> taken;
    for (const Node& n : g_.nodes)
        if (!n.name.empty()) taken.insert(n.name);
    std::unordered_map<std::string, int64_t> next_suffix;
    for (Node& n : g_.nodes) {
        if (!n.name.empty() || n.op == OpKind::Invalid || n.op == OpKind::LoopParam) continue;
        std::string base = op_name(n.op);
        int64_t& k = next_suffix[base];
        std::string candidate;
        do {
            candidate = k == 0 ? base : base + "_" + std::to_string(k);
            ++k;
        } while (taken.count(candidate));
        taken.insert(candidate);
        n.name = candidate;
        n.display = candidate;
        n.generated = true;
    }

    // Drop the tentative loop parameters that were not carried, and put each
    // loop's parameters (in name order) just before its body: the order a
    // program's text and its JSON form agree on, whatever order the names
    // were first read in.
    std::vector<std::vector<int32_t>> starts_at(g_.nodes.size() + 1);
    for (size_t r = 0; r < g_.repeats.size(); ++r)
        starts_at[static_cast<size_t>(repeat_start_[r])].push_back(static_cast<int32_t>(r));
    std::vector<NodeId> order;
    order.reserve(g_.nodes.size());
    for (size_t i = 0; i <= g_.nodes.size(); ++i) {
        for (int32_t r : starts_at[i])
            for (const Carry& c : g_.repeats[static_cast<size_t>(r)].carries) order.push_back(c.param);
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
    auto fix = [&](NodeId& id) {
        if (id >= 0) id = remap[static_cast<size_t>(id)];
    };
    for (Node& n : g_.nodes)
        for (Input& in : n.inputs) fix(in.id);
    auto fix_stmts = [&](std::vector<Stmt>& stmts) {
        for (Stmt& st : stmts)
            if (st.kind == Stmt::Kind::Node) fix(st.index);
    };
    fix_stmts(g_.top);
    for (Repeat& r : g_.repeats) {
        fix_stmts(r.body);
        for (Carry& c : r.carries) {
            fix(c.param);
            fix(c.init);
            fix(c.update);
        }
    }
    for (auto& [name, id] : g_.bindings) fix(id);
    for (Output& o : g_.outputs) fix(o.id);
}

}  // namespace graphrun
