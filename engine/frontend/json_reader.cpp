// The JSON front end (SPEC section 2): reads a JSON document with nlohmann's
// SAX parser into a compact document, then walks it through the GraphBuilder.
#include "engine/frontend/json_reader.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "engine/frontend/text_lexer.h"
#include "engine/frontend/text_parser.h"

namespace graphrun {

namespace {

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

// One JSON pointer reference token (RFC 6901: '~' -> "~0", '/' -> "~1").
void append_pointer_token(std::string& out, std::string_view key) {
    bool plain = true;
    for (char c : key) plain = plain && c != '~' && c != '/';
    if (plain) {
        out += key;
        return;
    }
    for (char c : key) {
        if (c == '~')
            out += "~0";
        else if (c == '/')
            out += "~1";
        else
            out += c;
    }
}

std::string pointer_token(std::string_view key) {
    std::string out;
    append_pointer_token(out, key);
    return out;
}

// A member's pointer, built in one allocation (there is one per node, input
// and attribute of a graph).
std::string child(const std::string& pointer, std::string_view key) {
    std::string out;
    out.reserve(pointer.size() + 1 + key.size());
    out += pointer;
    out += '/';
    append_pointer_token(out, key);
    return out;
}
std::string child(const std::string& pointer, size_t index) {
    char digits[24];
    auto end = std::to_chars(digits, digits + sizeof digits, index).ptr;
    std::string out;
    out.reserve(pointer.size() + 1 + static_cast<size_t>(end - digits));
    out += pointer;
    out += '/';
    out.append(digits, end);
    return out;
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

// A parsed JSON document, held compactly: every value in one array, every
// string and key in one buffer, and the members of each array and object as a
// linked list in document order. It is built from nlohmann's SAX events, so
// that the syntax checks and their messages are nlohmann's, without
// nlohmann's DOM, whose allocation per value and per key costs several times
// the parse itself on a big graph.
class Document {
  public:
    enum class Type : uint8_t { Null, Bool, Integer, Unsigned, Float, String, Array, Object };
    static constexpr uint32_t kNone = UINT32_MAX;

    struct Value {  // 16 bytes
        Type type = Type::Null;
        bool b = false;
        uint32_t count = 0;  // Array, Object: members; String: bytes
        union {
            int64_t i;
            uint64_t u;
            double f;
            size_t offset;   // String: into text
            uint32_t first;  // Array, Object: first member
        };
        Value() : u(0) {}
    };
    struct Member {
        uint32_t value = kNone;
        uint32_t next = kNone;
        uint32_t key_offset = 0;  // Object members: the key, in text
        uint32_t key_size = 0;
    };

    std::vector<Value> values;
    std::vector<Member> members;
    // Where the strings and keys are: the source itself when no string needed
    // unescaping (the fast reader's documents), else `chars`.
    std::string_view text;
    std::string chars;
    uint32_t root = kNone;

    std::string_view key(const Member& m) const { return text.substr(m.key_offset, m.key_size); }
};

class JRange;

// One value of a Document, with the queries the reader asks (named as
// nlohmann's, whose DOM it replaces).
class JVal {
  public:
    using Type = Document::Type;

    JVal(const Document& doc, uint32_t index) : doc_(&doc), v_(&doc.values[index]) {}

    bool is_null() const { return v_->type == Type::Null; }
    bool is_boolean() const { return v_->type == Type::Bool; }
    bool is_number() const { return is_number_integer() || v_->type == Type::Float; }
    bool is_number_integer() const { return v_->type == Type::Integer || v_->type == Type::Unsigned; }
    bool is_number_unsigned() const { return v_->type == Type::Unsigned; }
    bool is_string() const { return v_->type == Type::String; }
    bool is_array() const { return v_->type == Type::Array; }
    bool is_object() const { return v_->type == Type::Object; }

    bool boolean() const { return v_->b; }
    std::string_view string() const { return doc_->text.substr(v_->offset, v_->count); }
    uint64_t as_unsigned() const { return v_->u; }
    int64_t as_integer() const { return v_->type == Type::Unsigned ? static_cast<int64_t>(v_->u) : v_->i; }
    double as_double() const {
        switch (v_->type) {
            case Type::Integer: return static_cast<double>(v_->i);
            case Type::Unsigned: return static_cast<double>(v_->u);
            case Type::Float: return v_->f;
            default: return 0;
        }
    }
    // Members of an array or object.
    size_t size() const { return is_array() || is_object() ? v_->count : 0; }
    bool empty() const { return size() == 0; }

    // A scalar as nlohmann's DOM would hold it (for messages that show the value).
    nlohmann::json scalar() const {
        switch (v_->type) {
            case Type::Bool: return v_->b;
            case Type::Integer: return v_->i;
            case Type::Unsigned: return v_->u;
            case Type::Float: return v_->f;
            case Type::String: return std::string(string());
            default: return nullptr;
        }
    }

    // The members in order (JEntry: `key` is empty for an array's items).
    JRange items() const;

    const Document& doc() const { return *doc_; }
    uint32_t first() const { return (is_array() || is_object()) && v_->count > 0 ? v_->first : Document::kNone; }

  private:
    const Document* doc_;
    const Document::Value* v_;
};

struct JEntry {
    std::string_view key;
    JVal value;
};

class JIterator {
  public:
    JIterator(const Document& doc, uint32_t member) : doc_(&doc), m_(member) {}
    JEntry operator*() const {
        const Document::Member& m = doc_->members[m_];
        return JEntry{doc_->key(m), JVal(*doc_, m.value)};
    }
    JIterator& operator++() {
        m_ = doc_->members[m_].next;
        return *this;
    }
    bool operator!=(const JIterator& o) const { return m_ != o.m_; }

  private:
    const Document* doc_;
    uint32_t m_;
};

class JRange {
  public:
    JRange(JIterator b, JIterator e) : b_(b), e_(e) {}
    JIterator begin() const { return b_; }
    JIterator end() const { return e_; }

  private:
    JIterator b_, e_;
};

JRange JVal::items() const {
    return JRange(JIterator(*doc_, first()), JIterator(*doc_, Document::kNone));
}

// Builds a Document from nlohmann's SAX events, and checks what the parser
// does not: nesting depth (no deep recursion anywhere later), duplicate keys
// (reported, the last one wins as in every JSON reader, at the place of the
// first), the number of values, and the place of every error. Keys are
// indexed per open object once it is big, so that big objects stay linear.
class DocumentBuilder : public nlohmann::json_sax<nlohmann::json> {
  public:
    using Type = Document::Type;
    static constexpr uint32_t kNone = Document::kNone;

    // `in_source`: every string and key it is given is a view into `source`
    // (the fast reader's), so the document refers to them there.
    DocumentBuilder(std::string_view source, Document& doc, bool in_source)
        : source_(source), doc_(doc), in_source_(in_source) {
        doc_.text = in_source ? source : std::string_view(doc_.chars);
    }

    bool failed() const { return failed_; }
    const Diagnostic& failure() const { return failure_; }
    // Duplicate keys: reported once the document is known to be well formed.
    const std::vector<std::pair<std::string, std::string>>& duplicates() const {
        return duplicates_;
    }

    bool null() override { return add(Type::Null) != kNone; }
    bool boolean(bool v) override {
        const uint32_t i = add(Type::Bool);
        if (i == kNone) return false;
        doc_.values[i].b = v;
        return true;
    }
    bool number_integer(number_integer_t v) override {
        const uint32_t i = add(Type::Integer);
        if (i == kNone) return false;
        doc_.values[i].i = v;
        return true;
    }
    bool number_unsigned(number_unsigned_t v) override {
        const uint32_t i = add(Type::Unsigned);
        if (i == kNone) return false;
        doc_.values[i].u = v;
        return true;
    }
    bool number_float(number_float_t v, const string_t&) override {
        const uint32_t i = add(Type::Float);
        if (i == kNone) return false;
        doc_.values[i].f = v;
        return true;
    }
    bool string(string_t& v) override { return add_string(v); }
    bool add_string(std::string_view v) {
        const uint32_t i = add(Type::String);
        if (i == kNone) return false;
        doc_.values[i].offset = place(v);
        doc_.values[i].count = static_cast<uint32_t>(v.size());
        return true;
    }
    bool binary(binary_t&) override { return add(Type::Null) != kNone; }  // not in JSON text

    bool start_object(std::size_t) override { return open(Type::Object); }
    bool start_array(std::size_t) override { return open(Type::Array); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t& k) override { return add_key(k); }
    bool add_key(std::string_view k) {
        Frame& f = frames_.back();
        uint32_t member = find_key(f, k);
        if (member == kNone) {
            member = static_cast<uint32_t>(doc_.members.size());
            Document::Member m;
            m.key_offset = static_cast<uint32_t>(place(k));
            m.key_size = static_cast<uint32_t>(k.size());
            doc_.members.push_back(m);
            link(f, member);
            if (f.keys) {
                f.keys->emplace(k, member);
            } else if (doc_.values[f.value].count > kLinearKeys) {
                f.keys = std::make_unique<std::unordered_map<std::string, uint32_t>>();
                for (uint32_t i = doc_.values[f.value].first; i != kNone; i = doc_.members[i].next)
                    f.keys->emplace(doc_.key(doc_.members[i]), i);  // count > 0 here
            }
        } else {
            if (duplicates_.size() < kMaxErrors) duplicates_.emplace_back(child(pointer(), k), k);
            doc_.members[member].value = kNone;
        }
        f.pending = member;
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
    // Up to this many keys an object's keys are compared one by one.
    static constexpr uint32_t kLinearKeys = 16;

    struct Frame {
        uint32_t value = kNone;    // the open array or object
        uint32_t member = kNone;   // its member in the enclosing container
        uint32_t ordinal = 0;      // its index there, when that is an array
        uint32_t pending = kNone;  // objects: the member whose value comes next
        uint32_t last = kNone;     // its last member
        std::unique_ptr<std::unordered_map<std::string, uint32_t>> keys;  // big objects: key -> member
    };

    // Where `v` is in the document's text, copying it there if need be.
    size_t place(std::string_view v) {
        if (in_source_) return static_cast<size_t>(v.data() - source_.data());
        const size_t offset = doc_.chars.size();
        doc_.chars += v;
        doc_.text = doc_.chars;
        return offset;
    }

    void fail(Loc loc, std::string message) {
        failed_ = true;
        failure_ = Diagnostic{Severity::Error, std::move(loc), std::move(message)};
    }

    uint32_t find_key(const Frame& f, std::string_view k) const {
        if (f.keys) {
            auto it = f.keys->find(std::string(k));
            return it == f.keys->end() ? kNone : it->second;
        }
        if (doc_.values[f.value].count == 0) return kNone;
        for (uint32_t i = doc_.values[f.value].first; i != kNone; i = doc_.members[i].next)
            if (doc_.key(doc_.members[i]) == k) return i;
        return kNone;
    }

    // Appends `member` to the open container of `f`.
    void link(Frame& f, uint32_t member) {
        Document::Value& container = doc_.values[f.value];
        if (container.count == 0)
            container.first = member;
        else
            doc_.members[f.last].next = member;
        f.last = member;
        ++container.count;
    }

    // The JSON pointer of the innermost open container.
    std::string pointer() const {
        std::string p;
        for (size_t i = 1; i < frames_.size(); ++i) {
            p += '/';
            if (doc_.values[frames_[i - 1].value].type == Type::Array)
                p += std::to_string(frames_[i].ordinal);
            else
                p += pointer_token(doc_.key(doc_.members[frames_[i].member]));
        }
        return p;
    }

    // A new value in the open container (or the root); its index, or kNone
    // (and the parse stops) past kMaxJsonValues, so that the document of even
    // a 1 GiB file stays bounded.
    uint32_t add(Type type) {
        if (++values_ > g_input_limits.json_values) {
            fail(Loc{}, json_value_limit_message());
            return kNone;
        }
        const auto index = static_cast<uint32_t>(doc_.values.size());
        doc_.values.emplace_back().type = type;
        if (frames_.empty()) {
            doc_.root = index;
            return index;
        }
        Frame& f = frames_.back();
        if (doc_.values[f.value].type == Type::Array) {
            const auto member = static_cast<uint32_t>(doc_.members.size());
            doc_.members.emplace_back().value = index;
            link(f, member);
        } else {
            doc_.members[f.pending].value = index;
        }
        return index;
    }

    bool open(Type type) {
        ++opened_;
        if (frames_.size() >= static_cast<size_t>(kMaxNesting)) {
            fail(line_col(source_, nth_open_bracket(source_, opened_)),
                 "nesting too deep: more than " + std::to_string(kMaxNesting) +
                     " levels of [ and {");
            return false;
        }
        Frame f;
        if (!frames_.empty()) {
            const Frame& parent = frames_.back();
            const Document::Value& pv = doc_.values[parent.value];
            f.ordinal = pv.count;  // before add() counts this one
            f.member = pv.type == Type::Array ? kNone : parent.pending;
        }
        f.value = add(type);
        if (f.value == kNone) return false;
        if (f.member == kNone && !frames_.empty()) f.member = frames_.back().last;
        frames_.push_back(std::move(f));
        return true;
    }

    bool close() {
        frames_.pop_back();
        return true;
    }

    std::string_view source_;
    Document& doc_;
    bool in_source_;
    std::vector<Frame> frames_;
    size_t opened_ = 0;
    size_t values_ = 0;
    bool failed_ = false;
    Diagnostic failure_;
    std::vector<std::pair<std::string, std::string>> duplicates_;  // pointer, key
};

// A fast reader for the JSON of graph files that sends a DocumentBuilder the
// same events, in the same order, as nlohmann's parser does. It gives up
// (read() returns false) on anything out of the ordinary: a syntax error, an
// escape in a string, a byte that is not ASCII, a byte order mark, a number
// out of range, or the builder refusing a value. The caller then reads the file
// again with nlohmann's parser, whose checks and messages are the reference;
// so this reader only has to be right on the files it accepts.
class FastJsonReader {
  public:
    FastJsonReader(std::string_view source, DocumentBuilder& builder)
        : p_(source.data()), end_(source.data() + source.size()), b_(builder) {}

    bool read() {
        skip_blanks();
        if (!value()) return false;
        skip_blanks();
        return p_ == end_;
    }

  private:
    static bool is_digit(char c) { return c >= '0' && c <= '9'; }

    void skip_blanks() {
        while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
    }

    // value -> object | array | string | number | true | false | null
    bool value() {
        if (p_ == end_) return false;
        switch (*p_) {
            case '{':
                return object();
            case '[':
                return array();
            case '"': {
                std::string_view s;
                return string(s) && b_.add_string(s);
            }
            case 't':
                return word("true") && b_.boolean(true);
            case 'f':
                return word("false") && b_.boolean(false);
            case 'n':
                return word("null") && b_.null();
            default:
                return number();
        }
    }

    bool word(std::string_view w) {
        if (static_cast<size_t>(end_ - p_) < w.size() || std::string_view(p_, w.size()) != w) return false;
        p_ += w.size();
        return true;
    }

    // object -> '{' [ string ':' value { ',' string ':' value } ] '}'
    bool object() {
        ++p_;
        if (!b_.start_object(static_cast<std::size_t>(-1))) return false;
        skip_blanks();
        if (p_ < end_ && *p_ == '}') {
            ++p_;
            return b_.end_object();
        }
        for (;;) {
            std::string_view key;
            if (p_ == end_ || *p_ != '"' || !string(key) || !b_.add_key(key)) return false;
            skip_blanks();
            if (p_ == end_ || *p_ != ':') return false;
            ++p_;
            skip_blanks();
            if (!value()) return false;
            skip_blanks();
            if (p_ == end_) return false;
            if (*p_ == '}') {
                ++p_;
                return b_.end_object();
            }
            if (*p_ != ',') return false;
            ++p_;
            skip_blanks();
        }
    }

    // array -> '[' [ value { ',' value } ] ']'
    bool array() {
        ++p_;
        if (!b_.start_array(static_cast<std::size_t>(-1))) return false;
        skip_blanks();
        if (p_ < end_ && *p_ == ']') {
            ++p_;
            return b_.end_array();
        }
        for (;;) {
            if (!value()) return false;
            skip_blanks();
            if (p_ == end_) return false;
            if (*p_ == ']') {
                ++p_;
                return b_.end_array();
            }
            if (*p_ != ',') return false;
            ++p_;
            skip_blanks();
        }
    }

    // A string of ASCII characters without escapes: `out` views the source.
    bool string(std::string_view& out) {
        ++p_;
        const char* start = p_;
        while (p_ < end_) {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                out = std::string_view(start, static_cast<size_t>(p_ - start));
                ++p_;
                return true;
            }
            if (c == '\\' || c < 0x20 || c >= 0x80) return false;
            ++p_;
        }
        return false;
    }

    // number -> [ '-' ] int [ frac ] [ exp ], typed as nlohmann types it: an
    // integer is unsigned when it has no '-', a float when it has a fraction
    // or an exponent.
    bool number() {
        const char* start = p_;
        const bool negative = *p_ == '-';
        if (negative) ++p_;
        if (p_ == end_ || !is_digit(*p_)) return false;
        if (*p_ == '0') {
            ++p_;
        } else {
            while (p_ < end_ && is_digit(*p_)) ++p_;
        }
        bool is_float = false;
        if (p_ < end_ && *p_ == '.') {
            is_float = true;
            ++p_;
            if (p_ == end_ || !is_digit(*p_)) return false;
            while (p_ < end_ && is_digit(*p_)) ++p_;
        }
        if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
            is_float = true;
            ++p_;
            if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (p_ == end_ || !is_digit(*p_)) return false;
            while (p_ < end_ && is_digit(*p_)) ++p_;
        }
        if (is_float) {
            double d = 0;
            auto r = std::from_chars(start, p_, d);
            if (r.ec != std::errc() || r.ptr != p_ || !std::isfinite(d)) return false;
            std::string unused;
            return b_.number_float(d, unused);
        }
        uint64_t magnitude = 0;
        for (const char* q = negative ? start + 1 : start; q < p_; ++q) {
            // Out of range: nlohmann reads it as a float; leave that to it.
            if (__builtin_mul_overflow(magnitude, uint64_t{10}, &magnitude) ||
                __builtin_add_overflow(magnitude, static_cast<uint64_t>(*q - '0'), &magnitude))
                return false;
        }
        if (!negative) return b_.number_unsigned(magnitude);
        constexpr uint64_t kMinMagnitude = uint64_t{1} << 63;  // of INT64_MIN
        if (magnitude > kMinMagnitude) return false;
        return b_.number_integer(magnitude == kMinMagnitude ? std::numeric_limits<int64_t>::min()
                                                           : -static_cast<int64_t>(magnitude));
    }

    const char* p_;
    const char* end_;
    DocumentBuilder& b_;
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

// The keys a node or loop may have, told apart once per member.
enum class Key : uint8_t { Name, Op, Inputs, Device, Attrs, Shorthand, Repeat, Body, Other };

Key classify(std::string_view key) {
    switch (key.size()) {
        case 2: return key == "op" ? Key::Op : Key::Other;
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
    JsonReader(Graph& g, Diagnostics& diag) : g_(g), builder_(g, diag), diag_(diag) {}

    void read(JVal root);

  private:
    // program -> {"graphrun": 1, "nodes": [item...], "outputs": [name...]}
    void read_top(JVal root);
    // items -> [ node | loop ... ]
    void read_items(JVal items, const std::string& pointer);
    // loop -> {"repeat": N, "body": [item...]}
    void read_repeat(JVal item, const std::string& pointer);
    // node -> {"name": s, "op": s, "inputs": [...], "attrs": {...}, "device": s, value/shape/dtype}
    void read_node(JVal item, const std::string& pointer);
    void read_inputs(JVal inputs, const std::string& pointer, OpKind op, Inputs& out);
    std::optional<Attr> read_attr(JVal j, const std::string& pointer);
    bool read_node_name(JVal j, const std::string& pointer, std::string& name);
    void read_outputs(JVal outputs, const std::string& pointer);

    void unknown_key(std::string_view key, const std::string& pointer,
                     const std::vector<std::string>& known, const std::string& hint);
    void error(const Loc& loc, std::string message);
    // True once there are too many errors to be useful; says so once.
    bool stopped() {
        if (!stopped_ && diag_.error_count() >= kMaxErrors) stop_for_errors();
        return stopped_;
    }
    void stop_for_errors();
    // Past an input limit: reports it and reads no further.
    void stop_at_limit(const Loc& loc, std::string message);
    bool too_many_nodes(const std::string& pointer);

    Graph& g_;
    GraphBuilder builder_;
    Diagnostics& diag_;
    bool stopped_ = false;
    size_t literal_elements_ = 0;  // list elements read so far (kMaxLiteralElements)
    std::string inputs_pointer_;   // read_node(): "/nodes/N/inputs"
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
    if (g_.nodes.size() + g_.repeats.size() < g_input_limits.nodes) return false;
    stop_at_limit(at(pointer), node_limit_message());
    return true;
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
        // About one node per item: room for them up front.
        builder_.reserve(nodes->size(), nodes->size());
        read_items(*nodes, "/nodes");
    }
    if (outputs && !stopped()) read_outputs(*outputs, "/outputs");
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
        names.emplace_back(std::string(o.string()), at(child(pointer, index)));
    }
    if (ok) builder_.set_outputs(std::move(names), at(pointer));
}

void JsonReader::read_items(JVal items, const std::string& pointer) {
    size_t i = 0;
    for (auto [unused, item] : items.items()) {
        const size_t index = i++;
        if (stopped()) return;
        std::string p = child(pointer, index);
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
        for (auto [key, value] : item.items()) {
            const Key k = classify(key);
            loop = loop || k == Key::Repeat || k == Key::Body;
        }
        if (loop)
            read_repeat(item, p);
        else
            read_node(item, p);
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

bool JsonReader::read_node_name(JVal j, const std::string& pointer, std::string& name) {
    if (!j.is_string()) {
        error(at(pointer), "\"name\" must be a string; got " + describe(j));
        return false;
    }
    name = j.string();
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

void JsonReader::read_node(JVal item, const std::string& pointer) {
    size_t errors_before = diag_.error_count();
    std::optional<JVal> name_json, op_json, inputs_json, device_json;
    for (auto [key, value] : item.items()) {
        switch (classify(key)) {
            case Key::Name: name_json = value; break;
            case Key::Op: op_json = value; break;
            case Key::Inputs: inputs_json = value; break;
            case Key::Device: device_json = value; break;
            default: break;
        }
    }
    if (name_json && name_json->is_string()) builder_.will_assign(name_json->string());

    std::string name;
    std::string name_pointer;
    bool named = false;
    if (!name_json) {
        error(at(pointer), "node has no \"name\"");
    } else {
        name_pointer = child(pointer, "name");
        named = read_node_name(*name_json, name_pointer, name);
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
    for (auto [key, value] : item.items()) {
        if (stopped()) return;
        const Key k = classify(key);
        if (k == Key::Name || k == Key::Op || k == Key::Inputs || k == Key::Device) continue;
        std::string p = child(pointer, key);
        if (k == Key::Shorthand) {
            if (auto a = read_attr(value, p)) {
                shorthand.push_back(attrs.size());
                attrs.push_back(NamedAttr{std::string(key), std::move(*a), at(p)});
            }
        } else if (k == Key::Attrs) {
            if (!value.is_object()) {
                error(at(p),
                      "\"attrs\" must be an object like {\"axes\": [1]}; got " + describe(value));
                continue;
            }
            for (auto [attr_name, attr_value] : value.items()) {
                if (stopped()) return;
                std::string ap = child(p, attr_name);
                if (attr_name == "device") {
                    error(at(ap),
                          "\"device\" is not an attribute: give it at the node's top level, "
                          "like \"device\": \"gpu:0\"");
                    continue;
                }
                if (auto a = read_attr(attr_value, ap))
                    attrs.push_back(NamedAttr{std::string(attr_name), std::move(*a), at(std::move(ap))});
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
        id = builder_.add_node(*op, std::move(inputs), std::move(attrs), at(pointer),
                               std::move(device), std::move(device_loc));
    } else {
        id = builder_.add_invalid(at(pointer));
    }
    if (named) builder_.assign(name, id, at(std::move(name_pointer)));
}

void JsonReader::read_inputs(JVal inputs, const std::string& pointer, OpKind op,
                             Inputs& out) {
    out.reserve(inputs.size());
    size_t i = 0;
    for (auto [unused, in] : inputs.items()) {
        const size_t index = i++;
        if (stopped()) return;
        Loc loc = at(child(pointer, index));
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
        if (too_many_nodes(child(pointer, index))) return;
        NodeId id =
            builder_.add_scalar_literal(std::move(*literal), loc, is_binary_elementwise(op));
        out.push_back(Input{id, std::move(loc)});
    }
}

std::optional<Attr> JsonReader::read_attr(JVal j, const std::string& pointer) {
    Loc loc = at(pointer);
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
            if (++literal_elements_ > g_input_limits.literal_elements) {
                stop_at_limit(at(child(pointer, index)), literal_limit_message());
                return std::nullopt;
            }
            if (auto a = read_attr(e, child(pointer, index)))
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
    Document doc;
    {
        // Roughly one value per 12 bytes of a graph file; the strings are about a third of it.
        const size_t guess = std::min(source.size() / 12, g_input_limits.json_values);
        doc.values.reserve(guess);
        doc.members.reserve(guess);
    }
    auto builder = std::make_unique<DocumentBuilder>(source, doc, true);
    if (!FastJsonReader(source, *builder).read() || builder->failed()) {
        // Read it again with nlohmann's parser, the reference for errors.
        doc.values.clear();
        doc.members.clear();
        doc.chars.clear();
        doc.root = Document::kNone;
        builder = std::make_unique<DocumentBuilder>(source, doc, false);
        bool parsed = nlohmann::json::sax_parse(source.data(), source.data() + source.size(), builder.get());
        if (!parsed || builder->failed()) {
            if (builder->failed())
                diag.error(builder->failure().loc, builder->failure().message);
            else
                diag.error(line_col(source, source.size()), "malformed JSON");
            return false;
        }
    }
    for (const auto& [pointer, key] : builder->duplicates())
        diag.error(at(pointer),
                   "duplicate key " + quote(key) + ": each key may appear once in an object");
    JsonReader reader(g, diag);
    reader.read(JVal(doc, doc.root));
    return !diag.has_errors();
}

}  // namespace graphrun
