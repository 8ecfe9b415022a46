// The JSON document: a fast reader and nlohmann's SAX parser both feed one
// DocumentBuilder, which checks depth, size and duplicate keys as it builds.
#include "engine/frontend/json_document.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <system_error>
#include <unordered_map>

#include "engine/base/interrupt.h"
#include "engine/base/json_pointer.h"
#include "engine/frontend/text_lexer.h"

namespace graphrun::jsondoc {

// `s` made safe to print: control characters and bytes that are not valid UTF-8
// escaped, long strings cut.
std::string printable(std::string_view s, size_t max_len) {
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
void append_pointer_token(std::string& out, std::string_view key) { append_json_pointer_token(out, key); }

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

Loc at(std::string_view pointer) {
    Loc loc;
    loc.pointer = CompactString(pointer);
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


namespace {

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

// Builds a Document from nlohmann's SAX events, and checks what the parser
// does not: nesting depth (no deep recursion anywhere later), duplicate keys
// (reported, the last one wins as in every JSON reader, at the place of the
// first), the number of values, and the place of every error. Keys are
// indexed per open object once it is big, so that big objects stay linear.
class DocumentBuilder : public nlohmann::json_sax<nlohmann::json> {
  public:
    using Type = Document::Type;
    using Value = Document::Value;
    static constexpr uint32_t kNone = Document::kNone;

    // `in_source`: every string and key it is given is a view into `source`
    // (the fast reader's), so the document refers to them there.
    DocumentBuilder(std::string_view source, Document& doc, bool in_source, const InputLimits& limits)
        : source_(source), doc_(doc), in_source_(in_source), limits_(limits) {
        doc_.text = in_source ? source : std::string_view(doc_.chars);
        doc_.places = in_source;
    }

    // Where the next value starts in the source (the fast reader's documents).
    void value_at(uint32_t offset) { next_place_ = offset; }

    bool failed() const { return failed_; }
    const Diagnostic& failure() const { return failure_; }
    // Duplicate keys: reported once the document is known to be well formed.
    const std::vector<std::pair<std::string, std::string>>& duplicates() const {
        return duplicates_;
    }

    // Streams the document (StreamedDocument): publishes its progress there.
    void stream_to(StreamedDocument::Progress* progress) { progress_ = progress; }
    bool null() override { return add(Type::Null) != kNone && scalar_done(); }
    bool boolean(bool v) override {
        const uint32_t i = add(Type::Bool);
        if (i == kNone) return false;
        if (v) doc_.values[i].flags |= Document::kTrue;
        return scalar_done();
    }
    bool number_integer(number_integer_t v) override {
        const uint32_t i = add(Type::Integer);
        if (i == kNone) return false;
        doc_.values[i].i = v;
        return scalar_done();
    }
    bool number_unsigned(number_unsigned_t v) override {
        const uint32_t i = add(Type::Unsigned);
        if (i == kNone) return false;
        doc_.values[i].u = v;
        return scalar_done();
    }
    bool number_float(number_float_t v, const string_t&) override {
        const uint32_t i = add(Type::Float);
        if (i == kNone) return false;
        doc_.values[i].f = v;
        return scalar_done();
    }
    bool string(string_t& v) override { return add_string(v); }
    bool add_string(std::string_view v) {
        const uint32_t i = add(Type::String);
        if (i == kNone) return false;
        doc_.values[i].span.a = place(v);
        doc_.values[i].span.b = static_cast<uint32_t>(v.size());
        return scalar_done();
    }
    bool binary(binary_t&) override { return add(Type::Null) != kNone && scalar_done(); }  // not in JSON text

    bool start_object(std::size_t) override { return open(Type::Object); }
    bool start_array(std::size_t) override { return open(Type::Array); }
    bool end_object() override { return close(); }
    bool end_array() override { return close(); }

    bool key(string_t& k) override { return add_key(k); }
    // The key of the member whose value comes next.
    bool add_key(std::string_view k) {
        if (progress_ && k.size() >= Document::kLongKey) return false;  // long_keys would move under the reader
        Frame& f = frames_.back();
        f.duplicate = find_key(f, k);
        if (f.duplicate != kNone) {
            if (duplicates_.size() < kMaxErrors) duplicates_.emplace_back(child(pointer(), k), k);
            return true;  // the first one's key stays
        }
        const uint32_t offset = place(k);
        if (k.size() < Document::kLongKey) {
            f.key_offset = offset;
            f.key_size = static_cast<uint16_t>(k.size());
        } else {
            f.key_offset = static_cast<uint32_t>(doc_.long_keys.size());
            f.key_size = Document::kLongKey;
            doc_.long_keys.emplace_back(offset, static_cast<uint32_t>(k.size()));
        }
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

    // Keys are copied: `chars` moves while it grows. Looked up by view.
    struct KeyHash {
        using is_transparent = void;
        size_t operator()(std::string_view k) const { return std::hash<std::string_view>{}(k); }
    };
    using KeyIndex = std::unordered_map<std::string, uint32_t, KeyHash, std::equal_to<>>;

    struct Frame {
        uint32_t value = kNone;    // the open array or object
        uint32_t ordinal = 0;      // its index in the enclosing container, when that is an array
        // Objects: the key of the member whose value comes next, or the
        // member whose key it repeats (then the value replaces that member's).
        uint32_t key_offset = 0;
        uint16_t key_size = 0;
        uint32_t duplicate = kNone;
        std::unique_ptr<KeyIndex> keys;  // big objects: key -> member
    };

    // Where `v` is in the document's text, copying it there if need be.
    uint32_t place(std::string_view v) {
        if (in_source_) return static_cast<uint32_t>(v.data() - source_.data());
        const size_t offset = doc_.chars.size();
        doc_.chars += v;
        doc_.text = doc_.chars;
        return static_cast<uint32_t>(offset);
    }

    void fail(Loc loc, std::string message) {
        failed_ = true;
        failure_ = Diagnostic{Severity::Error, std::move(loc), std::move(message)};
    }

    // The member of the open object of `f` whose key is `k`, or kNone.
    uint32_t find_key(const Frame& f, std::string_view k) const {
        if (f.keys) {
            auto it = f.keys->find(k);
            return it == f.keys->end() ? kNone : it->second;
        }
        const auto end = static_cast<uint32_t>(doc_.values.size());  // it is the innermost open one
        for (uint32_t i = doc_.visible(f.value + 1, end); i < end; i = doc_.visible(doc_.next(i), end))
            if (doc_.key(doc_.values[i]) == k) return i;
        return kNone;
    }

    // The JSON pointer of the innermost open container.
    std::string pointer() const {
        std::string p;
        for (size_t i = 1; i < frames_.size(); ++i) {
            p += '/';
            if (doc_.values[frames_[i - 1].value].type == Type::Array)
                p += std::to_string(frames_[i].ordinal);
            else
                p += pointer_token(doc_.key(doc_.values[frames_[i].value]));
        }
        return p;
    }

    // A new value in the open container (or the root); its index, or kNone
    // (and the parse stops) past kMaxJsonValues, so that the document of even
    // a 1 GiB file stays bounded.
    uint32_t add(Type type) {
        if (interrupted()) {  // a signal: stop reading (the loader reports it)
            failed_ = true;
            return kNone;
        }
        // Streamed: the records must never move (the caller reserved room for
        // every value a source of its size can hold), and the caller may give up.
        if (progress_ && (doc_.values.size() == doc_.values.capacity() ||
                          progress_->stop.load(std::memory_order_relaxed))) {
            failed_ = true;
            return kNone;
        }
        if (++values_ > limits_.json_values) {
            fail(Loc{}, json_value_limit_message(limits_));
            return kNone;
        }
        const auto index = static_cast<uint32_t>(doc_.values.size());
        Value& v = doc_.values.emplace_back();
        v.type = type;
        if (frames_.empty()) return index;  // the root
        Frame& f = frames_.back();
        Value& container = doc_.values[f.value];
        if (container.type == Type::Array) {
            ++container.span.b;
            if (in_source_) {  // an item has no key: its place is its own
                v.key_offset = next_place_;
                v.flags |= Document::kItem;
            }
            return index;
        }
        if (f.duplicate != kNone) {
            // The last value wins, at the place of the first.
            Value& first = doc_.values[f.duplicate];
            v.flags |= Document::kHidden;
            v.key_offset = first.key_offset;  // the same key, for pointer()
            v.key_size = first.key_size;
            if (first.type != Type::Redirect) {
                first.span.a = doc_.next(f.duplicate);
                first.type = Type::Redirect;
                first.flags = 0;
            }
            first.span.b = index;
            f.duplicate = kNone;
            return index;
        }
        v.key_offset = f.key_offset;
        v.key_size = f.key_size;
        ++container.span.b;
        if (progress_ && index == 2) decide_stream(type);
        if (f.keys) {
            f.keys->emplace(doc_.key(v), index);
        } else if (container.span.b > kLinearKeys) {
            f.keys = std::make_unique<KeyIndex>();
            for (uint32_t i = doc_.visible(f.value + 1, index); i < index; i = doc_.visible(doc_.next(i), index))
                f.keys->emplace(doc_.key(doc_.values[i]), i);
            f.keys->emplace(doc_.key(v), index);
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
        if (!frames_.empty()) f.ordinal = doc_.values[frames_.back().value].span.b;  // before add() counts this one
        f.value = add(type);
        if (f.value == kNone) return false;
        frames_.push_back(std::move(f));
        if (progress_ && frames_.size() <= 2) publish();  // the root, or one of its members
        return true;
    }

    bool close() {
        const uint32_t index = frames_.back().value;
        const auto end = static_cast<uint32_t>(doc_.values.size());
        doc_.values[index].span.a = end;
        const size_t depth = frames_.size();
        frames_.pop_back();
        // An item of a member of the root is complete: the streamed array's
        // items are published one by one.
        if (progress_ && depth <= 3) {
            if (index == progress_->array.load(std::memory_order_relaxed))
                progress_->array_end.store(end, std::memory_order_release);
            publish();
        }
        return true;
    }

    // Streaming: every record so far is there, but for the open containers'
    // spans. Published where no item of a member of the root is open.
    void publish() {
        progress_->published.store(static_cast<uint32_t>(doc_.values.size()), std::memory_order_release);
    }
    bool scalar_done() {
        if (progress_ && frames_.size() <= 2) publish();
        return true;
    }
    // Record 2 was added: the array to stream when it is the root's second
    // member "nodes", after "graphrun": 1 (the layout `graphrun convert`
    // writes; the graph's reader reads any other one after the whole document).
    void decide_stream(Type type) {
        const std::vector<Value>& v = doc_.values;
        const Value& version = v[1];
        const bool one = (version.type == Type::Unsigned && version.u == 1) ||
                         (version.type == Type::Integer && version.i == 1) ||
                         (version.type == Type::Float && version.f == 1.0);
        const bool stream = type == Type::Array && frames_.size() == 1 && v[0].type == Type::Object && one &&
                            doc_.key(version) == "graphrun" && doc_.key(v[2]) == "nodes" &&
                            !(v[2].flags & Document::kHidden);
        progress_->array.store(stream ? 2 : kNone, std::memory_order_release);
    }

    std::string_view source_;
    Document& doc_;
    bool in_source_;
    const InputLimits& limits_;
    std::vector<Frame> frames_;
    size_t opened_ = 0;
    size_t values_ = 0;
    uint32_t next_place_ = 0;
    bool failed_ = false;
    StreamedDocument::Progress* progress_ = nullptr;
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
        : begin_(source.data()), p_(source.data()), end_(source.data() + source.size()), b_(builder) {}

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
        b_.value_at(static_cast<uint32_t>(p_ - begin_));  // the source is at most UINT32_MAX bytes
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

    const char* begin_;
    const char* p_;
    const char* end_;
    DocumentBuilder& b_;
};

}  // namespace

bool StreamedDocument::start(std::string_view source, Document& doc, const InputLimits& limits) {
    if (source.size() > UINT32_MAX) return false;
    // Room for every value the source can hold (read_document): the records never move.
    doc.values.reserve(std::min(source.size() / 2, limits.json_values) + 1);
    try {
        thread_ = std::thread([this, source, &doc, &limits] {
            bool ok = false;
            try {
                DocumentBuilder builder(source, doc, true, limits);
                builder.stream_to(&progress_);
                ok = FastJsonReader(source, builder).read() && !builder.failed() && builder.duplicates().empty();
            } catch (...) {
                ok = false;  // no memory: the caller reads it again, and reports that
            }
            progress_.ok = ok;
            uint32_t undecided = Progress::kUndecided;  // fewer than three records
            progress_.array.compare_exchange_strong(undecided, Document::kNone, std::memory_order_release);
            progress_.done.store(true, std::memory_order_release);
        });
    } catch (const std::system_error&) {
        return false;
    }
    return true;
}

uint32_t StreamedDocument::array() {
    for (;;) {
        const uint32_t a = progress_.array.load(std::memory_order_acquire);
        if (a != Progress::kUndecided) return a;
        std::this_thread::yield();
    }
}

bool StreamedDocument::item(uint32_t i) {
    for (;;) {
        // What was published before done is seen once done is.
        const bool done = progress_.done.load(std::memory_order_acquire);
        const uint32_t end = progress_.array_end.load(std::memory_order_acquire);
        if (end != Document::kNone) return i < end;
        if (i < progress_.published.load(std::memory_order_acquire)) return true;
        if (done) return false;
        std::this_thread::yield();
    }
}

bool StreamedDocument::finish() {
    if (thread_.joinable()) thread_.join();
    return progress_.ok;
}

void StreamedDocument::stop() {
    progress_.stop.store(true, std::memory_order_relaxed);
    if (thread_.joinable()) thread_.join();
}

bool read_document(std::string_view source, Document& doc, const InputLimits& limits, Diagnostics& diag) {
    // Strings and keys are placed by 32-bit offsets (graph files are read up to kMaxFileBytes).
    if (source.size() > UINT32_MAX) {
        diag.error(Loc{}, "JSON document too large: more than 4 GiB");
        return false;
    }
    // Every value takes at least a byte and most a separator too: room for
    // them all up front (capped by the limit), so that the records never move.
    // Room reserved but never used costs no memory.
    doc.values.reserve(std::min(source.size() / 2, limits.json_values) + 1);
    auto builder = std::make_unique<DocumentBuilder>(source, doc, true, limits);
    if (!FastJsonReader(source, *builder).read() || builder->failed()) {
        if (interrupted()) return false;  // stopped by a signal, which the loader reports
        // Read it again with nlohmann's parser, the reference for errors.
        doc.values.clear();
        doc.long_keys.clear();
        doc.chars.clear();
        builder = std::make_unique<DocumentBuilder>(source, doc, false, limits);
        bool parsed = nlohmann::json::sax_parse(source.data(), source.data() + source.size(), builder.get());
        if (!parsed || builder->failed()) {
            if (interrupted()) return false;
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
    return true;
}

}  // namespace graphrun::jsondoc
