// The JSON front end (SPEC section 2): reads a JSON document with nlohmann's
// SAX parser into a compact document (json_document.h), then walks it through
// the GraphBuilder.
#include "engine/frontend/json_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>
#include <unordered_map>

#include "engine/base/interrupt.h"
#include "engine/base/json_pointer.h"
#include "engine/frontend/json_document.h"
#include "engine/frontend/text_lexer.h"
#include "engine/frontend/text_parser.h"

namespace graphrun {

namespace {

using namespace jsondoc;

// --- the graph -----------------------------------------------------------------------

bool is_identifier(std::string_view s) {
    if (s.empty()) return false;
    auto alpha = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
    };
    if (!alpha(s[0])) return false;
    for (char c : s)
        if (!alpha(c) && !(c >= '0' && c <= '9')) return false;
    return true;
}

bool is_keyword(std::string_view s) {
    static constexpr std::string_view kKeywords[] = {"with", "repeat", "output", "true", "false", "nan", "inf"};
    for (std::string_view k : kKeywords)
        if (s == k) return true;  // a size compare first: no strlen, rarely a memcmp
    return false;
}

std::optional<double> special_number(std::string_view s) {
    if (s.size() != 3 && s.size() != 4) return std::nullopt;  // most strings here are names: no compare
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    return std::nullopt;
}

// The nodes the array at record `index` of `doc` will make, loop bodies
// included: one per item and one per literal input (an upper bound: a bad
// node makes fewer). Read from the records as they lie, the members a
// reader's iteration shows (a duplicate key's value through its Redirect):
// the walk through JVal's iterators cost 23M instructions for 100,000
// nodes, before the first node was read.
size_t count_nodes(const Document& doc, uint32_t index) {
    using Type = Document::Type;
    const std::vector<Document::Value>& v = doc.values;
    size_t n = 0;
    for (uint32_t i = index + 1, end = v[index].span.a; i < end; i = doc.next(i)) {
        ++n;
        if (v[i].type != Type::Object) continue;
        for (uint32_t j = i + 1, members_end = v[i].span.a; j < members_end; j = doc.next(j)) {
            if (v[j].flags & Document::kHidden) continue;
            const uint32_t at = v[j].type == Type::Redirect ? v[j].span.b : j;
            if (v[at].type != Type::Array) continue;
            const std::string_view key = doc.key(v[j]);
            if (key == "inputs") {
                for (uint32_t k = at + 1, inputs_end = v[at].span.a; k < inputs_end; k = doc.next(k))
                    n += v[k].type != Type::String ||
                         special_number(doc.text.substr(v[k].span.a, v[k].span.b)).has_value();
            } else if (key == "body") {
                n += count_nodes(doc, at);  // nesting is bounded by kMaxNesting
            }
        }
    }
    return n;
}

// A JSON value as a message shows it: short scalars as written, containers by kind.
std::string describe(JVal j) {
    if (j.is_array()) return j.empty() ? "an empty array" : "an array";
    if (j.is_object()) return j.empty() ? "an empty object" : "an object";
    if (j.is_string()) return quote(j.string());
    return printable(j.scalar().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

// A JSON number as an attribute value.
Attr number_attr(JVal j, Loc loc) {
    if (j.is_number_unsigned()) {
        uint64_t u = j.as_unsigned();
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            return Attr::integer(static_cast<int64_t>(u), std::move(loc));
        return Attr::number(static_cast<double>(u), std::move(loc));
    }
    if (j.is_number_integer()) return Attr::integer(j.as_integer(), std::move(loc));
    return Attr::number(j.as_double(), std::move(loc));
}

const std::vector<std::string> kTopKeys = {"graphrun", "nodes", "outputs"};
const std::vector<std::string> kNodeKeys = {"name",   "op",    "inputs", "attrs",
                                            "device", "value", "shape",  "dtype"};
const std::vector<std::string> kRepeatKeys = {"repeat", "body"};
const std::vector<std::string> kDelKeys = {"del"};

// The keys a node or loop may have, told apart once per member.
enum class Key : uint8_t { Name, Op, Inputs, Device, Attrs, Shorthand, Repeat, Body, Del, Other };

Key classify(std::string_view key) {
    switch (key.size()) {
        case 2: return key == "op" ? Key::Op : Key::Other;
        case 3: return key == "del" ? Key::Del : Key::Other;
        case 4:
            if (key == "name") return Key::Name;
            if (key == "body") return Key::Body;
            return Key::Other;
        case 5:
            if (key == "attrs") return Key::Attrs;
            return key == "value" || key == "shape" || key == "dtype" ? Key::Shorthand : Key::Other;
        case 6:
            if (key == "inputs") return Key::Inputs;
            if (key == "device") return Key::Device;
            return key == "repeat" ? Key::Repeat : Key::Other;
        default: return Key::Other;
    }
}

class JsonReader {
  public:
    JsonReader(Graph& g, Diagnostics& diag, const InputLimits& limits)
        : g_(g), builder_(g, diag), diag_(diag), limits_(limits) {}

    void read(JVal root);
    // Reads the graph from a document still being read (StreamedDocument):
    // the items of its "nodes" array, record `array`, as they come, then
    // the rest as read_top would. False when the document turns out not to
    // be one this can read so (what it built is then to be dropped).
    bool read_streamed(StreamedDocument& stream, const Document& doc, uint32_t array, std::string_view source);

  private:
    // program -> {"graphrun": 1, "nodes": [item...], "outputs": [name...]}
    void read_top(JVal root);
    // items -> [ node | loop ... ]
    void read_items(JVal items, const std::string& pointer);
    // One of them, the `index`th: `p` holds the items' pointer and a '/'
    // (`base` bytes), and ends with the item's index on return. False when
    // the reading stops there.
    bool read_item(JVal item, std::string& p, size_t base, size_t index);
    // loop -> {"repeat": N, "body": [item...]}
    void read_repeat(JVal item, const std::string& pointer);
    // del -> {"del": [name...]} or {"del": name}
    void read_del(JVal item, const std::string& pointer);
    // node -> {"name": s, "op": s, "inputs": [...], "attrs": {...}, "device": s, value/shape/dtype}
    // A node's members, told apart by read_items: the ones every node has,
    // and whether there are others (attributes, shorthands, unknown keys).
    struct NodeMembers {
        std::optional<JVal> name, op, inputs, device;
        bool others = false;
    };
    void read_node(JVal item, const NodeMembers& m, const std::string& pointer);
    void read_inputs(JVal inputs, const std::string& pointer, OpKind op, Inputs& out);
    // `pointer`: j's pointer, in a buffer that its items' pointers extend (and
    // that is as it was on return).
    std::optional<Attr> read_attr(JVal j, std::string& pointer);
    bool read_node_name(JVal j, const Loc& loc, std::string& name);
    void read_outputs(JVal outputs, const std::string& pointer);
    // The program's end, after its nodes: its outputs, then the builder's finish.
    void read_end(const std::optional<JVal>& outputs);

    void unknown_key(std::string_view key, const std::string& pointer,
                     const std::vector<std::string>& known, const std::string& hint);
    void error(const Loc& loc, std::string message);
    // True once there are too many errors to be useful; says so once.
    // Also true once a signal asked graphrun to stop (the loader reports it).
    bool stopped() {
        if (!stopped_ && interrupted()) stopped_ = true;
        if (!stopped_ && diag_.error_count() >= kMaxErrors) stop_for_errors();
        return stopped_;
    }
    void stop_for_errors();
    // Past an input limit: reports it and reads no further.
    void stop_at_limit(const Loc& loc, std::string message);
    // True (and reported at `pointer`, built only then) once the graph has
    // limits.nodes nodes.
    bool too_many_nodes(const std::string& pointer);
    bool too_many_nodes(const std::string& pointer, size_t index);
    // The place of `pointer`'s member `index` or `key`, built without a
    // temporary string: there is one per node and input of a graph.
    Loc at_child(const std::string& pointer, size_t index);
    Loc at_child(const std::string& pointer, std::string_view key);
    // The place of `v`, whose pointer is `pointer` (or member `index` or `key`
    // of `pointer`): its offset in the source where the document knows it,
    // which costs nothing until a message shows it (the pointer is found from
    // the source then), else the pointer. A graph has one per node, input and
    // attribute.
    Loc place(JVal v, const std::string& pointer);
    Loc child_place(JVal v, const std::string& pointer, size_t index);
    Loc child_place(JVal v, const std::string& pointer, std::string_view key);

    Graph& g_;
    GraphBuilder builder_;
    Diagnostics& diag_;
    const InputLimits& limits_;
    bool stopped_ = false;
    size_t literal_elements_ = 0;  // list elements read so far (kMaxLiteralElements)
    std::string inputs_pointer_;   // read_node(): "/nodes/N/inputs"
    std::string scratch_;          // at_child()
    std::string attr_pointer_;     // read_node(): "/nodes/N/attrs/NAME" and its items'
};

void JsonReader::error(const Loc& loc, std::string message) {
    if (stopped()) return;
    diag_.error(loc, std::move(message));
}

void JsonReader::stop_for_errors() {
    diag_.error(Loc{}, "too many errors; stopping here");
    stopped_ = true;
}

void JsonReader::stop_at_limit(const Loc& loc, std::string message) {
    if (stopped_) return;
    diag_.error(loc, std::move(message));
    stopped_ = true;
}

bool JsonReader::too_many_nodes(const std::string& pointer) {
    if (g_.nodes.size() + g_.repeats.size() < limits_.nodes) return false;
    stop_at_limit(at(pointer), node_limit_message(limits_));
    return true;
}

bool JsonReader::too_many_nodes(const std::string& pointer, size_t index) {
    if (g_.nodes.size() + g_.repeats.size() < limits_.nodes) return false;
    stop_at_limit(at_child(pointer, index), node_limit_message(limits_));
    return true;
}

Loc JsonReader::at_child(const std::string& pointer, size_t index) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, index).ptr;
    scratch_.assign(pointer).append(1, '/').append(digits, end);
    return at(scratch_);
}

Loc JsonReader::at_child(const std::string& pointer, std::string_view key) {
    scratch_.assign(pointer).append(1, '/').append(pointer_token(key));
    return at(scratch_);
}

Loc JsonReader::place(JVal v, const std::string& pointer) {
    const uint32_t offset = v.place();
    return offset != Document::kNone ? Loc::json_at(offset) : at(pointer);
}

Loc JsonReader::child_place(JVal v, const std::string& pointer, size_t index) {
    const uint32_t offset = v.place();
    return offset != Document::kNone ? Loc::json_at(offset) : at_child(pointer, index);
}

Loc JsonReader::child_place(JVal v, const std::string& pointer, std::string_view key) {
    const uint32_t offset = v.place();
    return offset != Document::kNone ? Loc::json_at(offset) : at_child(pointer, key);
}

void JsonReader::unknown_key(std::string_view key, const std::string& pointer,
                             const std::vector<std::string>& known, const std::string& hint) {
    std::string msg = "unknown key " + quote(key);
    if (std::string near = nearest_name(key, known); !near.empty())
        msg += "; did you mean \"" + near + "\"?";
    else
        msg += hint;
    error(at(child(pointer, key)), std::move(msg));
}

void JsonReader::read(JVal root) {
    if (!root.is_object()) {
        error(at(""), "a JSON graph is an object like {\"graphrun\": 1, \"nodes\": [...]}; got " +
                          describe(root));
        return;
    }
    read_top(root);
}

void JsonReader::read_top(JVal root) {
    std::optional<JVal> version, nodes, outputs;
    for (auto [key, value] : root.items()) {
        if (key == "graphrun")
            version = value;
        else if (key == "nodes")
            nodes = value;
        else if (key == "outputs")
            outputs = value;
        else
            unknown_key(key, "", kTopKeys,
                        ": a JSON graph has \"graphrun\", \"nodes\" and \"outputs\"");
    }
    if (!version) {
        error(at(""), "missing \"graphrun\": 1 (the format version)");
    } else if (!version->is_number() || version->as_double() != 1.0) {
        // Another version may mean another format: what follows would only add noise.
        if (version->is_number())
            error(at("/graphrun"), "unsupported format version " + describe(*version) +
                                       "; this graphrun reads \"graphrun\": 1");
        else
            error(at("/graphrun"),
                  "\"graphrun\" must be the format version 1; got " + describe(*version));
        return;
    }
    if (!nodes) {
        error(at(""),
              "missing \"nodes\": the list of nodes, like "
              "\"nodes\": [{\"name\": \"x\", \"op\": \"ones\", \"shape\": [2]}]");
    } else if (!nodes->is_array()) {
        error(at("/nodes"), "\"nodes\" must be an array of nodes; got " + describe(*nodes));
    } else {
        // Room for every node up front: a big graph would otherwise move its
        // node list while it grows (a literal input is a node of its own).
        builder_.reserve(std::min(count_nodes(nodes->doc(), nodes->index()), limits_.nodes + 1), nodes->size());
        read_items(*nodes, "/nodes");
    }
    read_end(outputs);
}

void JsonReader::read_end(const std::optional<JVal>& outputs) {
    if (outputs && !stopped()) read_outputs(*outputs, "/outputs");
    if (interrupted()) return;  // a signal stopped the reading: nothing to finish (the loader says why)
    builder_.finish(at("/nodes"));
}

void JsonReader::read_outputs(JVal outputs, const std::string& pointer) {
    if (!outputs.is_array()) {
        error(at(pointer), "\"outputs\" must be an array of names; got " + describe(outputs));
        return;
    }
    if (outputs.empty()) {
        error(at(pointer),
              "\"outputs\" is empty: list the names to fetch, "
              "or leave it out to fetch the last node");
        return;
    }
    std::vector<std::pair<std::string, Loc>> names;
    bool ok = true;
    size_t i = 0;
    for (auto [unused, o] : outputs.items()) {
        const size_t index = i++;
        if (!o.is_string()) {
            error(at(child(pointer, index)), "an output must be a name (a string); got " + describe(o));
            ok = false;
            continue;
        }
        names.emplace_back(std::string(o.string()), child_place(o, pointer, index));
    }
    if (ok) builder_.set_outputs(std::move(names), at(pointer));
}

void JsonReader::read_items(JVal items, const std::string& pointer) {
    size_t i = 0;
    // "POINTER/N" for each item, in one buffer (child() would allocate a
    // string per node).
    std::string p = pointer + '/';
    const size_t base = p.size();
    for (auto [unused, item] : items.items())
        if (!read_item(item, p, base, i++)) return;
}

bool JsonReader::read_item(JVal item, std::string& p, size_t base, size_t index) {
    if (stopped()) return false;
    char digits[24];
    p.resize(base);
    p.append(digits, std::to_chars(digits, digits + sizeof digits, index).ptr);
    if (too_many_nodes(p)) return false;
    if (!item.is_object()) {
        error(at(p),
              "a node must be an object like "
              "{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"x\"]}, "
              "or a loop {\"repeat\": N, \"body\": [...]}; got " +
                  describe(item));
        return true;
    }
    // Each member is told apart once (a node's are then read from `m`).
    NodeMembers m;
    bool loop = false, del = false;
    for (auto [key, value] : item.items()) {
        switch (classify(key)) {
            case Key::Name: m.name = value; break;
            case Key::Op: m.op = value; break;
            case Key::Inputs: m.inputs = value; break;
            case Key::Device: m.device = value; break;
            case Key::Repeat:
            case Key::Body: loop = true; break;
            case Key::Del: del = true; break;
            default: m.others = true; break;
        }
    }
    if (del && !loop)
        read_del(item, p);
    else if (loop)
        read_repeat(item, p);
    else
        read_node(item, m, p);
    return true;
}

// Room to reserve for the nodes and statements of a JSON graph before its
// document is read. A statement is an object ('{'), and so is a node; the
// other nodes are literal inputs, items of arrays. The items of all arrays
// number the commas, less the members of objects (':'), plus one for each
// container; a ':' or ',' in a string makes this a little off, which costs
// room reserved and never used, or a list that grows.
std::pair<size_t, size_t> bound_nodes(std::string_view source) {
    // Sixteen bytes at a time (a byte at a time cost as much as reading the
    // graph's document): per-lane counts of up to 255 blocks, then summed.
    using Bytes = signed char __attribute__((vector_size(16)));
    size_t objects = 0, arrays = 0, commas = 0, colons = 0, i = 0;
    const size_t blocks_end = source.size() - source.size() % 16;
    while (i < blocks_end) {
        Bytes o = {}, a = {}, c = {}, k = {};
        for (const size_t stop = std::min(blocks_end, i + 16 * 255); i < stop; i += 16) {
            Bytes b;
            std::memcpy(&b, source.data() + i, sizeof b);
            o -= b == '{';  // a lane that matches is -1
            a -= b == '[';
            c -= b == ',';
            k -= b == ':';
        }
        for (int l = 0; l < 16; ++l) {
            objects += static_cast<unsigned char>(o[l]);
            arrays += static_cast<unsigned char>(a[l]);
            commas += static_cast<unsigned char>(c[l]);
            colons += static_cast<unsigned char>(k[l]);
        }
    }
    for (; i < source.size(); ++i) {
        objects += source[i] == '{';
        arrays += source[i] == '[';
        commas += source[i] == ',';
        colons += source[i] == ':';
    }
    const size_t items = commas + objects + arrays > colons ? commas + objects + arrays - colons : 0;
    return {objects + items + 1, objects + 1};
}

bool JsonReader::read_streamed(StreamedDocument& stream, const Document& doc, uint32_t array,
                               std::string_view source) {
    // As read_top, which has found "graphrun": 1 and "nodes", an array.
    const auto [nodes, statements] = bound_nodes(source);
    builder_.reserve(std::min(nodes, limits_.nodes + 1), statements);
    std::string p = "/nodes/";
    const size_t base = p.size();
    size_t index = 0;
    for (uint32_t i = array + 1; stream.item(i); i = doc.next(i))
        if (!read_item(JVal(doc, i), p, base, index++)) break;
    if (!stream.finish()) return false;
    // The rest of the root, now read: "outputs" or nothing, else read_top's
    // messages for it (unknown keys) are the ordinary reading's.
    std::optional<JVal> outputs;
    for (uint32_t i = doc.next(array), end = doc.values[0].span.a; i < end; i = doc.next(i)) {
        if (outputs || doc.key(doc.values[i]) != "outputs") return false;
        outputs = JVal(doc, i);
    }
    read_end(outputs);
    return true;
}

void JsonReader::read_del(JVal item, const std::string& pointer) {
    std::optional<JVal> names;
    for (auto [key, value] : item.items()) {
        if (key == "del")
            names = value;
        else
            unknown_key(key, pointer, kDelKeys, ": a del statement has only \"del\" (the names to unbind)");
    }
    const std::string p = child(pointer, "del");
    if (names->is_string()) {
        builder_.unbind(names->string(), place(*names, p));
        return;
    }
    if (!names->is_array() || names->empty()) {
        error(place(*names, p), "\"del\" must be a name or a non-empty array of names; got " + describe(*names));
        return;
    }
    size_t i = 0;
    for (auto [unused, name] : names->items()) {
        const size_t index = i++;
        if (!name.is_string())
            error(child_place(name, p, index), "\"del\" lists names (strings); got " + describe(name));
        else
            builder_.unbind(name.string(), child_place(name, p, index));
    }
}

void JsonReader::read_repeat(JVal item, const std::string& pointer) {
    std::optional<JVal> count, body;
    for (auto [key, value] : item.items()) {
        if (key == "repeat")
            count = value;
        else if (key == "body")
            body = value;
        else
            unknown_key(key, pointer, kRepeatKeys,
                        ": a loop has only \"repeat\" (its count) and \"body\"");
    }
    int64_t n = 0;
    if (!count) {
        error(at(pointer), "loop has no \"repeat\" count: {\"repeat\": N, \"body\": [...]}");
    } else if (count->is_number_unsigned() &&
               count->as_unsigned() <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        n = static_cast<int64_t>(count->as_unsigned());
    } else if (count->is_number_unsigned()) {
        error(at(child(pointer, "repeat")), "repeat count " + describe(*count) + " is too large");
    } else {
        error(
            at(child(pointer, "repeat")),
            "\"repeat\" must be a non-negative integer (the pass count); got " + describe(*count));
    }
    // The body is read even after a bad count, so that its own errors show and
    // its names keep their scope.
    builder_.begin_repeat(n, at(pointer));
    if (!body)
        error(at(pointer), "loop has no \"body\": {\"repeat\": N, \"body\": [...]}");
    else if (!body->is_array())
        error(at(child(pointer, "body")),
              "\"body\" must be an array of nodes; got " + describe(*body));
    else
        read_items(*body, child(pointer, "body"));
    builder_.end_repeat();
}

bool JsonReader::read_node_name(JVal j, const Loc& loc, std::string& name) {
    if (!j.is_string()) {
        error(loc, "\"name\" must be a string; got " + describe(j));
        return false;
    }
    name = j.string();
    if (!is_identifier(name)) {
        error(loc,
              "node name " + quote(name) +
                  " is not an identifier (letters, digits and _, not starting with a digit)");
    } else if (is_keyword(name)) {
        error(loc,
              "node name " + quote(name) + " is a keyword of graph scripts; choose another name");
    }
    return !name.empty();  // bound either way, so that later uses do not cascade
}

void JsonReader::read_node(JVal item, const NodeMembers& m, const std::string& pointer) {
    size_t errors_before = diag_.error_count();
    const std::optional<JVal>&name_json = m.name, &op_json = m.op, &inputs_json = m.inputs, &device_json = m.device;
    if (name_json && name_json->is_string()) builder_.will_assign(name_json->string());

    std::string name;
    Loc name_loc;
    bool named = false;
    if (!name_json) {
        error(at(pointer), "node has no \"name\"");
    } else {
        name_loc = child_place(*name_json, pointer, "name");
        named = read_node_name(*name_json, name_loc, name);
    }

    std::optional<OpKind> op;
    if (!op_json) {
        error(at(pointer), (named ? "node " + quote(name) : std::string("node")) + " has no \"op\"");
    } else if (!op_json->is_string()) {
        error(at(child(pointer, "op")), "\"op\" must be a string; got " + describe(*op_json));
    } else {
        const std::string_view op_text = op_json->string();
        op = find_op(op_text);
        if (!op) {
            std::string msg = "unknown op " + quote(op_text);
            if (std::string near = nearest_name(op_text, op_names()); !near.empty())
                msg += "; did you mean \"" + near + "\"?";
            error(at(child(pointer, "op")), std::move(msg));
        }
    }

    // Attributes in the order written: the shorthands and the entries of "attrs".
    std::vector<NamedAttr> attrs;
    std::vector<size_t> shorthand;  // indices into attrs
    if (!item.empty() && stopped()) return;  // where a node has only those, as the loop's first turn would
    for (auto [key, value] : item.items()) {
        if (!m.others) break;  // only name, op, inputs and device, read above
        if (stopped()) return;
        const Key k = classify(key);
        if (k == Key::Name || k == Key::Op || k == Key::Inputs || k == Key::Device) continue;
        std::string& p = attr_pointer_;  // "/nodes/N/KEY", in a buffer kept from node to node
        p.assign(pointer).append(1, '/');
        append_json_pointer_token(p, key);
        if (k == Key::Shorthand) {
            if (auto a = read_attr(value, p)) {
                shorthand.push_back(attrs.size());
                attrs.push_back(NamedAttr{std::string(key), std::move(*a), place(value, p)});
            }
        } else if (k == Key::Attrs) {
            if (!value.is_object()) {
                error(at(p),
                      "\"attrs\" must be an object like {\"axes\": [1]}; got " + describe(value));
                continue;
            }
            for (auto [attr_name, attr_value] : value.items()) {
                if (stopped()) return;
                const size_t attrs_size = p.size();  // p becomes "/nodes/N/attrs/NAME"
                p.append(1, '/');
                append_json_pointer_token(p, attr_name);
                if (attr_name == "device") {
                    error(at(p),
                          "\"device\" is not an attribute: give it at the node's top level, "
                          "like \"device\": \"gpu:0\"");
                    p.resize(attrs_size);
                    continue;
                }
                if (auto a = read_attr(attr_value, p))
                    attrs.push_back(NamedAttr{std::string(attr_name), std::move(*a), place(attr_value, p)});
                p.resize(attrs_size);
            }
        } else {
            bool is_attr = false;
            if (op)
                for (const AttrSpec& s : op_info(*op).attrs) is_attr = is_attr || key == s.name;
            unknown_key(
                key, pointer, kNodeKeys,
                is_attr
                    ? ": attributes go in \"attrs\", like \"attrs\": {\"" + printable(key) +
                          "\": ...}"
                    : ": a node has \"name\", \"op\", \"inputs\", \"attrs\", \"device\" and the "
                      "shorthands \"value\", \"shape\", \"dtype\"");
        }
    }
    for (size_t s : shorthand) {
        for (size_t k = 0; k < attrs.size(); ++k) {
            if (k == s || attrs[k].name != attrs[s].name) continue;
            if (std::find(shorthand.begin(), shorthand.end(), k) != shorthand.end()) continue;
            error(attrs[s].loc, quote(attrs[s].name) + " is given both here and in \"attrs\"");
            break;
        }
    }

    std::string device;
    Loc device_loc;
    if (device_json) {
        device_loc = child_place(*device_json, pointer, "device");
        if (device_json->is_string())
            device = device_json->string();
        else
            error(device_loc,
                  "\"device\" must be a string like \"gpu:0\"; got " + describe(*device_json));
    }

    // Inputs are resolved in order, inline literals becoming nodes as they come,
    // as the operands of a call in a script.
    Inputs inputs;
    if (inputs_json) {
        // Reused from node to node: it only prefixes the inputs' own pointers.
        inputs_pointer_.assign(pointer).append("/inputs");
        if (!inputs_json->is_array())
            error(at(inputs_pointer_),
                  "\"inputs\" must be an array of names and numbers, like [\"a\", 2]; got " +
                      describe(*inputs_json));
        else
            read_inputs(*inputs_json, inputs_pointer_, op.value_or(OpKind::Invalid), inputs);
    }

    NodeId id;
    if (op && diag_.error_count() == errors_before) {
        id = builder_.add_node(*op, std::move(inputs), std::move(attrs), place(item, pointer),
                               std::move(device), std::move(device_loc));
    } else {
        id = builder_.add_invalid(place(item, pointer));
    }
    if (named) builder_.assign(name, id, name_loc);
}

void JsonReader::read_inputs(JVal inputs, const std::string& pointer, OpKind op,
                             Inputs& out) {
    out.reserve(inputs.size());
    size_t i = 0;
    for (auto [unused, in] : inputs.items()) {
        const size_t index = i++;
        if (stopped()) return;
        Loc loc = child_place(in, pointer, index);
        std::optional<Attr> literal;
        if (in.is_string()) {
            const std::string_view text = in.string();
            if (auto v = special_number(text)) {
                literal = Attr::number(*v, loc);
            } else if (auto id = builder_.lookup(text, loc)) {
                out.push_back(Input{*id, std::move(loc)});
                continue;
            } else {
                continue;  // lookup() reported it
            }
        } else if (in.is_number()) {
            literal = number_attr(in, loc);
        } else if (in.is_boolean()) {
            literal = Attr::boolean(in.boolean(), loc);
        } else {
            error(loc,
                  "an input must be the name of an earlier node or a number; got " + describe(in));
            continue;
        }
        if (too_many_nodes(pointer, index)) return;
        NodeId id =
            builder_.add_scalar_literal(std::move(*literal), loc, takes_weak_literals(op));
        out.push_back(Input{id, std::move(loc)});
    }
}

std::optional<Attr> JsonReader::read_attr(JVal j, std::string& pointer) {
    Loc loc = place(j, pointer);
    if (j.is_boolean()) return Attr::boolean(j.boolean(), std::move(loc));
    if (j.is_number()) return number_attr(j, std::move(loc));
    if (j.is_string()) {
        const std::string_view s = j.string();
        // "nan"/"inf"/"-inf" are numbers wherever they stand: no attribute takes
        // them as words, and numeric attributes written by write_json need them.
        if (auto v = special_number(s)) return Attr::number(*v, std::move(loc));
        return Attr::ident(std::string(s), std::move(loc));
    }
    if (j.is_array()) {
        std::vector<Attr> items;
        items.reserve(j.size());
        bool ok = true;
        size_t i = 0;
        for (auto [unused, e] : j.items()) {
            const size_t index = i++;
            if (stopped()) return std::nullopt;
            const size_t size = pointer.size();
            char digits[24];
            pointer.append(1, '/').append(digits, std::to_chars(digits, digits + sizeof digits, index).ptr);
            if (++literal_elements_ > limits_.literal_elements) {
                stop_at_limit(at(pointer), literal_limit_message(limits_));
                pointer.resize(size);
                return std::nullopt;
            }
            std::optional<Attr> a = read_attr(e, pointer);
            pointer.resize(size);
            if (a)
                items.push_back(std::move(*a));
            else
                ok = false;
        }
        if (!ok) return std::nullopt;
        return Attr::make_list(std::move(items), std::move(loc));
    }
    if (j.is_object())
        error(loc, "an attribute value cannot be an object; got " + describe(j));
    else if (j.is_null())
        error(loc, "an attribute value cannot be null");
    else
        error(loc, "unsupported attribute value " + describe(j));
    return std::nullopt;
}

// The graph read from a document as it is read (StreamedDocument), or
// nullopt, with `g` and `diag` as they were, where that cannot be done: no
// thread, or a document that the fast reader does not take whole.
std::optional<bool> parse_streamed(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits) {
    const Graph graph_before = g;
    const Diagnostics diag_before = diag;
    Document doc;  // outlives the stream that fills it
    StreamedDocument stream;
    if (!stream.start(source, doc, limits)) return std::nullopt;
    bool read = false;
    {
        JsonReader reader(g, diag, limits);
        if (const uint32_t array = stream.array(); array != Document::kNone) {
            read = reader.read_streamed(stream, doc, array, source);
        } else if (stream.finish()) {
            reader.read(JVal(doc, doc.root()));  // another layout: read whole, then as ever
            read = true;
        }
    }
    if (!read) {  // the reader has finished either way
        g = graph_before;
        diag = diag_before;
        return std::nullopt;
    }
    return !diag.has_errors() && !interrupted();
}

bool only_whitespace(std::string_view s) {
    for (char c : s)
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
    return true;
}

}  // namespace

namespace {

// Sources from this size are read while their graph is built (parse_streamed).
constexpr size_t kStreamFrom = size_t{1} << 20;

// How a source is read: streamed when big (parse_json), whole, or streamed whatever its size.
enum class Reading { Auto, Whole, Streamed };

bool parse(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits, Reading how) {
    g.from_json = true;
    if (only_whitespace(source)) {
        diag.error(
            line_col(source, source.size()),
            "empty input: a JSON graph is an object like {\"graphrun\": 1, \"nodes\": [...]}");
        return false;
    }
    // Places are offsets only in a source whose diagnostics can name them.
    const bool in_source = diag.source().data() == source.data() && diag.source().size() == source.size();
    // A big graph is built while its document is read, on a second core.
    const bool stream = how == Reading::Streamed ||
                        (how == Reading::Auto && source.size() >= kStreamFrom && std::thread::hardware_concurrency() > 1);
    if (stream && in_source) {
        if (std::optional<bool> parsed = parse_streamed(source, g, diag, limits)) return *parsed;
        if (interrupted()) return false;  // the loader says why
    }
    Document doc;
    if (!read_document(source, doc, limits, diag)) return false;
    if (!in_source) doc.places = false;
    JsonReader reader(g, diag, limits);
    reader.read(JVal(doc, doc.root()));
    return !diag.has_errors() && !interrupted();
}

}  // namespace

bool parse_json(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits) {
    return parse(source, g, diag, limits, Reading::Auto);
}

bool parse_json_whole(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits) {
    return parse(source, g, diag, limits, Reading::Whole);
}

bool parse_json_streamed(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits) {
    return parse(source, g, diag, limits, Reading::Streamed);
}

}  // namespace graphrun
