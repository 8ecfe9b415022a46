// The JSON front end (SPEC section 2): reads a JSON document with nlohmann's
// SAX parser into an ordered DOM, then walks it through the GraphBuilder.
#include "engine/json_reader.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "engine/text_lexer.h"
#include "engine/text_parser.h"

namespace graphrun {

namespace {

using Json = nlohmann::ordered_json;

constexpr size_t kMaxErrors = 50;
constexpr size_t kMaxQuoted = 64;  // longest user string quoted in a message

// --- small text helpers ----------------------------------------------------------

// `s` made safe to print: control characters and bytes that are not valid UTF-8
// escaped, long strings cut.
std::string printable(std::string_view s, size_t max_len = kMaxQuoted) {
    std::string out;
    size_t i = 0;
    auto hex = [&](unsigned char c) {
        static const char digits[] = "0123456789abcdef";
        out += "\\x";
        out += digits[c >> 4];
        out += digits[c & 15];
    };
    while (i < s.size()) {
        if (out.size() >= max_len) {
            out += "...";
            break;
        }
        auto c = static_cast<unsigned char>(s[i]);
        if (c == '\n')
            out += "\\n", ++i;
        else if (c == '\t')
            out += "\\t", ++i;
        else if (c < 0x20 || c == 0x7F)
            hex(c), ++i;
        else if (c < 0x80)
            out += static_cast<char>(c), ++i;
        else {
            // Keep a well-formed UTF-8 sequence; escape a stray byte.
            size_t len = (c & 0xE0) == 0xC0   ? 2
                         : (c & 0xF0) == 0xE0 ? 3
                         : (c & 0xF8) == 0xF0 ? 4
                                              : 0;
            bool ok = len != 0 && i + len <= s.size();
            for (size_t k = 1; ok && k < len; ++k)
                ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
            if (ok) {
                out.append(s.substr(i, len));
                i += len;
            } else {
                hex(c);
                ++i;
            }
        }
    }
    return out;
}

std::string quote(std::string_view s) {
    // Appended piecewise: GCC 12 warns (-Wrestrict, falsely) on "\"" + str + "\"".
    std::string out(1, '"');
    out += printable(s);
    out += '"';
    return out;
}

// A JSON value as a message shows it: short scalars as written, containers by kind.
std::string describe(const Json& j) {
    if (j.is_array()) return j.empty() ? "an empty array" : "an array";
    if (j.is_object()) return j.empty() ? "an empty object" : "an object";
    if (j.is_string()) return quote(j.get_ref<const std::string&>());
    return printable(j.dump(-1, ' ', false, Json::error_handler_t::replace));
}

// One JSON pointer reference token (RFC 6901: '~' -> "~0", '/' -> "~1").
std::string pointer_token(std::string_view key) {
    std::string out;
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
    return out;
}

std::string child(const std::string& pointer, std::string_view key) {
    return pointer + "/" + pointer_token(key);
}
std::string child(const std::string& pointer, size_t index) {
    return pointer + "/" + std::to_string(index);
}

Loc at(std::string pointer) {
    Loc loc;
    loc.pointer = std::move(pointer);
    return loc;
}

// Line and column (1-based, in bytes) of byte `index` of `source`.
Loc line_col(std::string_view source, size_t index) {
    index = std::min(index, source.size());
    Loc loc;
    loc.line = 1;
    size_t line_start = 0;
    for (size_t i = 0; i < index; ++i) {
        if (source[i] == '\n') {
            ++loc.line;
            line_start = i + 1;
        }
    }
    loc.col = static_cast<uint32_t>(index - line_start + 1);
    return loc;
}

// Byte offset of the n-th (1-based) '[' or '{' outside strings. Only used on a
// prefix the parser has accepted, so strings are well formed there.
size_t nth_open_bracket(std::string_view source, size_t n) {
    bool in_string = false;
    for (size_t i = 0; i < source.size(); ++i) {
        char c = source[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if ((c == '[' || c == '{') && --n == 0) {
            return i;
        }
    }
    return source.size();
}

// nlohmann's message without its "[json.exception...] parse error at line L, column C:
// syntax error while parsing X - " preamble (the place is given separately).
std::string clean_parse_message(const std::string& what, const std::string& last_token) {
    if (what.find("number overflow") != std::string::npos)
        return "number " + printable(last_token) + " is out of range";
    std::string msg = what;
    if (size_t p = msg.find("] "); p != std::string::npos && msg.rfind("[json.exception", 0) == 0)
        msg.erase(0, p + 2);
    if (msg.rfind("parse error", 0) == 0) {
        if (size_t p = msg.find(": "); p != std::string::npos) msg.erase(0, p + 2);
    }
    if (msg.rfind("syntax error", 0) == 0) {
        if (size_t p = msg.find(" - "); p != std::string::npos) msg.erase(0, p + 3);
    }
    // The "last read" excerpt may hold raw bytes (invalid UTF-8) and be long.
    const std::string marker = "last read: '";
    if (size_t p = msg.find(marker); p != std::string::npos) {
        size_t start = p + marker.size();
        size_t end = msg.find("'; expected", start);
        if (end == std::string::npos) end = msg.rfind('\'');
        if (end != std::string::npos && end >= start) {
            std::string token = msg.substr(start, end - start);
            std::string shown = token.size() > 32
                                    ? "..." + printable(token.substr(token.size() - 32))
                                    : printable(token);
            msg = msg.substr(0, start) + shown + msg.substr(end);
        }
    }
    return "malformed JSON: " + printable(msg, 300);
}

// --- the document ------------------------------------------------------------------

// Builds an ordered DOM from nlohmann's SAX events, and checks what the DOM
// parser does not: nesting depth (no deep recursion anywhere later), duplicate
// keys (reported, the last one wins as in every JSON reader), and the place of
// every error. Keys are indexed per open object so that big objects stay linear.
class DocumentBuilder : public nlohmann::json_sax<Json> {
  public:
    DocumentBuilder(std::string_view source, Json& root) : source_(source), root_(root) {}

    bool failed() const { return failed_; }
    const Diagnostic& failure() const { return failure_; }
    // Duplicate keys: reported once the document is known to be well formed.
    const std::vector<std::pair<std::string, std::string>>& duplicates() const {
        return duplicates_;
    }

    bool null() override { return add(Json(nullptr)) != nullptr; }
    bool boolean(bool v) override { return add(Json(v)) != nullptr; }
    bool number_integer(number_integer_t v) override { return add(Json(v)) != nullptr; }
    bool number_unsigned(number_unsigned_t v) override { return add(Json(v)) != nullptr; }
    bool number_float(number_float_t v, const string_t&) override {
        return add(Json(v)) != nullptr;
    }
    bool string(string_t& v) override { return add(Json(std::move(v))) != nullptr; }
    bool binary(binary_t&) override { return add(Json(nullptr)) != nullptr; }  // not in JSON text

    bool start_object(std::size_t) override { return open(Json::object()); }
    bool start_array(std::size_t) override { return open(Json::array()); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t& k) override {
        Frame& f = frames_.back();
        auto& members = static_cast<Members&>(f.value->get_ref<Json::object_t&>());
        auto [it, fresh] = f.keys.try_emplace(k, members.size());
        if (fresh) {
            members.emplace_back(k, nullptr);
        } else {
            if (duplicates_.size() < kMaxErrors) duplicates_.emplace_back(child(pointer(), k), k);
            members[it->second].second = nullptr;
        }
        f.pending = &members[it->second].second;
        f.pending_token = pointer_token(k);
        return true;
    }

    bool parse_error(std::size_t position, const std::string& last_token,
                     const nlohmann::detail::exception& ex) override {
        std::string what = ex.what();
        // nlohmann counts the bytes read: the bad byte is the last one; a number
        // that overflows is pointed at from its start.
        size_t index = position > 0 ? position - 1 : 0;
        if (what.find("number overflow") != std::string::npos && position >= last_token.size())
            index = position - last_token.size();
        fail(line_col(source_, index), clean_parse_message(what, last_token));
        return false;
    }

  private:
    using Members = std::vector<std::pair<const std::string, Json>>;
    struct Frame {
        Json* value = nullptr;
        std::string token;  // this container's reference token in its parent
        std::unordered_map<std::string, size_t> keys;  // objects: key -> member index
        Json* pending = nullptr;                       // objects: where the next value goes
        std::string pending_token;
        size_t next_index = 0;  // arrays
    };

    void fail(Loc loc, std::string message) {
        failed_ = true;
        failure_ = Diagnostic{Severity::Error, std::move(loc), std::move(message)};
    }

    std::string pointer() const {
        std::string p;
        for (size_t i = 1; i < frames_.size(); ++i) p += "/" + frames_[i].token;
        return p;
    }

    // Places `v` in the open container (or as the root); returns where it went,
    // or nullptr (and the parse stops) past kMaxJsonValues, so that the DOM of
    // even a 1 GiB file stays bounded.
    Json* add(Json v, std::string* token = nullptr) {
        if (++values_ > g_input_limits.json_values) {
            fail(Loc{}, json_value_limit_message());
            return nullptr;
        }
        if (frames_.empty()) {
            root_ = std::move(v);
            return &root_;
        }
        Frame& f = frames_.back();
        if (f.value->is_array()) {
            if (token) *token = std::to_string(f.next_index);
            ++f.next_index;
            auto& items = f.value->get_ref<Json::array_t&>();
            items.push_back(std::move(v));
            return &items.back();
        }
        Json* slot = f.pending;
        if (token) *token = f.pending_token;
        *slot = std::move(v);
        return slot;
    }

    bool open(Json empty) {
        ++opened_;
        if (frames_.size() >= static_cast<size_t>(kMaxNesting)) {
            fail(line_col(source_, nth_open_bracket(source_, opened_)),
                 "nesting too deep: more than " + std::to_string(kMaxNesting) +
                     " levels of [ and {");
            return false;
        }
        Frame f;
        f.value = add(std::move(empty), &f.token);
        if (!f.value) return false;
        frames_.push_back(std::move(f));
        return true;
    }

    bool close() {
        frames_.pop_back();
        return true;
    }

    std::string_view source_;
    Json& root_;
    std::vector<Frame> frames_;
    size_t opened_ = 0;
    size_t values_ = 0;
    bool failed_ = false;
    Diagnostic failure_;
    std::vector<std::pair<std::string, std::string>> duplicates_;  // pointer, key
};

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
    for (const char* k : {"with", "repeat", "output", "true", "false", "nan", "inf"})
        if (s == k) return true;
    return false;
}

std::optional<double> special_number(std::string_view s) {
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    return std::nullopt;
}

// A JSON number as an attribute value.
Attr number_attr(const Json& j, Loc loc) {
    if (j.is_number_unsigned()) {
        auto u = j.get<uint64_t>();
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
            return Attr::integer(static_cast<int64_t>(u), std::move(loc));
        return Attr::number(static_cast<double>(u), std::move(loc));
    }
    if (j.is_number_integer()) return Attr::integer(j.get<int64_t>(), std::move(loc));
    return Attr::number(j.get<double>(), std::move(loc));
}

const std::vector<std::string> kTopKeys = {"graphrun", "nodes", "outputs"};
const std::vector<std::string> kNodeKeys = {"name",   "op",    "inputs", "attrs",
                                            "device", "value", "shape",  "dtype"};
const std::vector<std::string> kRepeatKeys = {"repeat", "body"};

bool is_shorthand(std::string_view key) {
    return key == "value" || key == "shape" || key == "dtype";
}

class JsonReader {
  public:
    JsonReader(Graph& g, Diagnostics& diag) : g_(g), builder_(g, diag), diag_(diag) {}

    void read(const Json& root);

  private:
    // program -> {"graphrun": 1, "nodes": [item...], "outputs": [name...]}
    void read_top(const Json& root);
    // items -> [ node | loop ... ]
    void read_items(const Json& items, const std::string& pointer);
    // loop -> {"repeat": N, "body": [item...]}
    void read_repeat(const Json& item, const std::string& pointer);
    // node -> {"name": s, "op": s, "inputs": [...], "attrs": {...}, "device": s, value/shape/dtype}
    void read_node(const Json& item, const std::string& pointer);
    void read_inputs(const Json& inputs, const std::string& pointer, OpKind op,
                     std::vector<Input>& out);
    std::optional<Attr> read_attr(const Json& j, const std::string& pointer);
    bool read_node_name(const Json& j, const std::string& pointer, std::string& name);
    void read_outputs(const Json& outputs, const std::string& pointer);

    void unknown_key(const std::string& key, const std::string& pointer,
                     const std::vector<std::string>& known, const std::string& hint);
    void error(const Loc& loc, std::string message);
    bool stopped();
    // Past an input limit: reports it and reads no further.
    void stop_at_limit(const Loc& loc, std::string message);
    bool too_many_nodes(const std::string& pointer);

    Graph& g_;
    GraphBuilder builder_;
    Diagnostics& diag_;
    bool stopped_ = false;
    size_t literal_elements_ = 0;  // list elements read so far (kMaxLiteralElements)
};

void JsonReader::error(const Loc& loc, std::string message) {
    if (stopped()) return;
    diag_.error(loc, std::move(message));
}

// True once there are too many errors to be useful; says so once.
bool JsonReader::stopped() {
    if (!stopped_ && diag_.error_count() >= kMaxErrors) {
        diag_.error(Loc{}, "too many errors; stopping here");
        stopped_ = true;
    }
    return stopped_;
}

void JsonReader::stop_at_limit(const Loc& loc, std::string message) {
    if (stopped_) return;
    diag_.error(loc, std::move(message));
    stopped_ = true;
}

bool JsonReader::too_many_nodes(const std::string& pointer) {
    if (g_.nodes.size() + g_.repeats.size() < g_input_limits.nodes) return false;
    stop_at_limit(at(pointer), node_limit_message());
    return true;
}

void JsonReader::unknown_key(const std::string& key, const std::string& pointer,
                             const std::vector<std::string>& known, const std::string& hint) {
    std::string msg = "unknown key " + quote(key);
    if (std::string near = nearest_name(key, known); !near.empty())
        msg += "; did you mean \"" + near + "\"?";
    else
        msg += hint;
    error(at(child(pointer, key)), std::move(msg));
}

void JsonReader::read(const Json& root) {
    if (!root.is_object()) {
        error(at(""), "a JSON graph is an object like {\"graphrun\": 1, \"nodes\": [...]}; got " +
                          describe(root));
        return;
    }
    read_top(root);
}

void JsonReader::read_top(const Json& root) {
    const Json* version = nullptr;
    const Json* nodes = nullptr;
    const Json* outputs = nullptr;
    for (const auto& [key, value] : root.items()) {
        if (key == "graphrun")
            version = &value;
        else if (key == "nodes")
            nodes = &value;
        else if (key == "outputs")
            outputs = &value;
        else
            unknown_key(key, "", kTopKeys,
                        ": a JSON graph has \"graphrun\", \"nodes\" and \"outputs\"");
    }
    if (!version) {
        error(at(""), "missing \"graphrun\": 1 (the format version)");
    } else if (!version->is_number() || version->get<double>() != 1.0) {
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
        read_items(*nodes, "/nodes");
    }
    if (outputs && !stopped()) read_outputs(*outputs, "/outputs");
    builder_.finish(at("/nodes"));
}

void JsonReader::read_outputs(const Json& outputs, const std::string& pointer) {
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
    for (size_t i = 0; i < outputs.size(); ++i) {
        const Json& o = outputs[i];
        if (!o.is_string()) {
            error(at(child(pointer, i)), "an output must be a name (a string); got " + describe(o));
            ok = false;
            continue;
        }
        names.emplace_back(o.get<std::string>(), at(child(pointer, i)));
    }
    if (ok) builder_.set_outputs(std::move(names), at(pointer));
}

void JsonReader::read_items(const Json& items, const std::string& pointer) {
    for (size_t i = 0; i < items.size(); ++i) {
        if (stopped()) return;
        const Json& item = items[i];
        std::string p = child(pointer, i);
        if (too_many_nodes(p)) return;
        if (!item.is_object()) {
            error(at(p),
                  "a node must be an object like "
                  "{\"name\": \"y\", \"op\": \"relu\", \"inputs\": [\"x\"]}, "
                  "or a loop {\"repeat\": N, \"body\": [...]}; got " +
                      describe(item));
            continue;
        }
        bool loop = false;
        for (const auto& [key, value] : item.items())
            if (key == "repeat" || key == "body") loop = true;
        if (loop)
            read_repeat(item, p);
        else
            read_node(item, p);
    }
}

void JsonReader::read_repeat(const Json& item, const std::string& pointer) {
    const Json* count = nullptr;
    const Json* body = nullptr;
    for (const auto& [key, value] : item.items()) {
        if (key == "repeat")
            count = &value;
        else if (key == "body")
            body = &value;
        else
            unknown_key(key, pointer, kRepeatKeys,
                        ": a loop has only \"repeat\" (its count) and \"body\"");
    }
    int64_t n = 0;
    if (!count) {
        error(at(pointer), "loop has no \"repeat\" count: {\"repeat\": N, \"body\": [...]}");
    } else if (count->is_number_unsigned() &&
               count->get<uint64_t>() <=
                   static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        n = static_cast<int64_t>(count->get<uint64_t>());
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

bool JsonReader::read_node_name(const Json& j, const std::string& pointer, std::string& name) {
    if (!j.is_string()) {
        error(at(pointer), "\"name\" must be a string; got " + describe(j));
        return false;
    }
    name = j.get<std::string>();
    if (!is_identifier(name)) {
        error(at(pointer),
              "node name " + quote(name) +
                  " is not an identifier (letters, digits and _, not starting with a digit)");
    } else if (is_keyword(name)) {
        error(at(pointer),
              "node name " + quote(name) + " is a keyword of graph scripts; choose another name");
    }
    return !name.empty();  // bound either way, so that later uses do not cascade
}

void JsonReader::read_node(const Json& item, const std::string& pointer) {
    size_t errors_before = diag_.error_count();
    const Json* name_json = nullptr;
    const Json* op_json = nullptr;
    const Json* inputs_json = nullptr;
    const Json* device_json = nullptr;
    for (const auto& [key, value] : item.items()) {
        if (key == "name")
            name_json = &value;
        else if (key == "op")
            op_json = &value;
        else if (key == "inputs")
            inputs_json = &value;
        else if (key == "device")
            device_json = &value;
    }

    std::string name;
    bool named = false;
    if (!name_json)
        error(at(pointer), "node has no \"name\"");
    else
        named = read_node_name(*name_json, child(pointer, "name"), name);

    std::optional<OpKind> op;
    std::string who = named ? "node " + quote(name) : std::string("node");
    if (!op_json) {
        error(at(pointer), who + " has no \"op\"");
    } else if (!op_json->is_string()) {
        error(at(child(pointer, "op")), "\"op\" must be a string; got " + describe(*op_json));
    } else {
        const auto& op_text = op_json->get_ref<const std::string&>();
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
    for (const auto& [key, value] : item.items()) {
        if (stopped()) return;
        std::string p = child(pointer, key);
        if (key == "name" || key == "op" || key == "inputs" || key == "device") continue;
        if (is_shorthand(key)) {
            if (auto a = read_attr(value, p)) {
                shorthand.push_back(attrs.size());
                attrs.push_back(NamedAttr{key, std::move(*a), at(p)});
            }
        } else if (key == "attrs") {
            if (!value.is_object()) {
                error(at(p),
                      "\"attrs\" must be an object like {\"axes\": [1]}; got " + describe(value));
                continue;
            }
            for (const auto& [attr_name, attr_value] : value.items()) {
                if (stopped()) return;
                std::string ap = child(p, attr_name);
                if (attr_name == "device") {
                    error(at(ap),
                          "\"device\" is not an attribute: give it at the node's top level, "
                          "like \"device\": \"gpu:0\"");
                    continue;
                }
                if (auto a = read_attr(attr_value, ap))
                    attrs.push_back(NamedAttr{attr_name, std::move(*a), at(ap)});
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
        device_loc = at(child(pointer, "device"));
        if (device_json->is_string())
            device = device_json->get<std::string>();
        else
            error(device_loc,
                  "\"device\" must be a string like \"gpu:0\"; got " + describe(*device_json));
    }

    // Inputs are resolved in order, inline literals becoming nodes as they come,
    // as the operands of a call in a script.
    std::vector<Input> inputs;
    if (inputs_json) {
        if (!inputs_json->is_array())
            error(at(child(pointer, "inputs")),
                  "\"inputs\" must be an array of names and numbers, like [\"a\", 2]; got " +
                      describe(*inputs_json));
        else
            read_inputs(*inputs_json, child(pointer, "inputs"), op.value_or(OpKind::Invalid),
                        inputs);
    }

    NodeId id;
    if (op && diag_.error_count() == errors_before) {
        id = builder_.add_node(*op, std::move(inputs), std::move(attrs), at(pointer),
                               std::move(device), std::move(device_loc));
    } else {
        id = builder_.add_invalid(at(pointer));
    }
    if (named) builder_.assign(name, id, at(child(pointer, "name")));
}

void JsonReader::read_inputs(const Json& inputs, const std::string& pointer, OpKind op,
                             std::vector<Input>& out) {
    for (size_t i = 0; i < inputs.size(); ++i) {
        if (stopped()) return;
        const Json& in = inputs[i];
        Loc loc = at(child(pointer, i));
        std::optional<Attr> literal;
        if (in.is_string()) {
            const auto& text = in.get_ref<const std::string&>();
            if (auto v = special_number(text)) {
                literal = Attr::number(*v, loc);
            } else if (auto id = builder_.lookup(text, loc)) {
                out.push_back(Input{*id, loc});
                continue;
            } else {
                continue;  // lookup() reported it
            }
        } else if (in.is_number()) {
            literal = number_attr(in, loc);
        } else if (in.is_boolean()) {
            literal = Attr::boolean(in.get<bool>(), loc);
        } else {
            error(loc,
                  "an input must be the name of an earlier node or a number; got " + describe(in));
            continue;
        }
        if (too_many_nodes(child(pointer, i))) return;
        NodeId id =
            builder_.add_scalar_literal(std::move(*literal), loc, is_binary_elementwise(op));
        out.push_back(Input{id, loc});
    }
}

std::optional<Attr> JsonReader::read_attr(const Json& j, const std::string& pointer) {
    Loc loc = at(pointer);
    if (j.is_boolean()) return Attr::boolean(j.get<bool>(), std::move(loc));
    if (j.is_number()) return number_attr(j, std::move(loc));
    if (j.is_string()) {
        const auto& s = j.get_ref<const std::string&>();
        // "nan"/"inf"/"-inf" are numbers wherever they stand: no attribute takes
        // them as words, and numeric attributes written by write_json need them.
        if (auto v = special_number(s)) return Attr::number(*v, std::move(loc));
        return Attr::ident(s, std::move(loc));
    }
    if (j.is_array()) {
        std::vector<Attr> items;
        items.reserve(j.size());
        bool ok = true;
        for (size_t i = 0; i < j.size(); ++i) {
            if (stopped()) return std::nullopt;
            if (++literal_elements_ > g_input_limits.literal_elements) {
                stop_at_limit(at(child(pointer, i)), literal_limit_message());
                return std::nullopt;
            }
            if (auto a = read_attr(j[i], child(pointer, i)))
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

bool only_whitespace(std::string_view s) {
    for (char c : s)
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return false;
    return true;
}

}  // namespace

bool parse_json(std::string_view source, Graph& g, Diagnostics& diag) {
    g.from_json = true;
    if (only_whitespace(source)) {
        diag.error(
            line_col(source, source.size()),
            "empty input: a JSON graph is an object like {\"graphrun\": 1, \"nodes\": [...]}");
        return false;
    }
    Json root;
    DocumentBuilder builder(source, root);
    bool parsed = Json::sax_parse(source.begin(), source.end(), &builder);
    if (!parsed || builder.failed()) {
        if (builder.failed())
            diag.error(builder.failure().loc, builder.failure().message);
        else
            diag.error(line_col(source, source.size()), "malformed JSON");
        return false;
    }
    for (const auto& [pointer, key] : builder.duplicates())
        diag.error(at(pointer),
                   "duplicate key " + quote(key) + ": each key may appear once in an object");
    JsonReader reader(g, diag);
    reader.read(root);
    return !diag.has_errors();
}

}  // namespace graphrun
