// The JSON document the JSON front end reads a graph from: the text parsed
// once (a fast reader for ordinary graph files, nlohmann's SAX parser, the
// reference for errors, for the rest) into a compact Document, and the small
// text helpers (JSON pointers, quoting) its messages and the graph reader share.
#pragma once
#include <atomic>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"

namespace graphrun::jsondoc {

// Errors reported before a reader stops and says "too many errors".
constexpr size_t kMaxErrors = 50;
// Longest user string quoted in a message.
constexpr size_t kMaxQuoted = 64;

// `s` made safe to print: control characters and bytes that are not valid UTF-8
// escaped, long strings cut.
std::string printable(std::string_view s, size_t max_len = kMaxQuoted);
// `s` printable and in double quotes.
std::string quote(std::string_view s);
// One JSON pointer reference token (RFC 6901: '~' -> "~0", '/' -> "~1").
std::string pointer_token(std::string_view key);
// A member's pointer, built in one allocation (there is one per node, input
// and attribute of a graph).
std::string child(const std::string& pointer, std::string_view key);
std::string child(const std::string& pointer, size_t index);
// A place given by a JSON pointer.
Loc at(std::string_view pointer);
// Line and column (1-based, in bytes) of byte `index` of `source`.
Loc line_col(std::string_view source, size_t index);

// --- the document ------------------------------------------------------------------

// A parsed JSON document, held compactly: every value one 16-byte record in
// one array, in document order (a container's members follow it, each
// member's own members before the next one, as in simdjson's tape), and every
// string and key in the source itself (or, when a string needed unescaping,
// in `chars`). An object member's record holds its key. It is built from
// parse events (the fast reader's, or nlohmann's SAX parser's, so that the
// syntax checks and their messages are nlohmann's), without nlohmann's DOM,
// whose allocation per value and per key costs several times the parse
// itself on a big graph.
//
// A duplicate key's value replaces the first one's where the first one stood
// (the last value wins, at the place of the first): the first record becomes
// a Redirect to the later one, which is Hidden from iteration.
class Document {
  public:
    enum class Type : uint8_t { Null, Bool, Integer, Unsigned, Float, String, Array, Object, Redirect };
    static constexpr uint32_t kNone = UINT32_MAX;
    // Flags.
    static constexpr uint8_t kTrue = 1;    // Bool
    static constexpr uint8_t kHidden = 2;  // a duplicate key's value, reached through a Redirect
    static constexpr uint8_t kItem = 4;    // an array's item whose key_offset is where it starts in text
    // key_size of a key of kLongKey bytes or more: key_offset indexes long_keys.
    static constexpr uint16_t kLongKey = UINT16_MAX;

    struct Value {  // 16 bytes
        Type type = Type::Null;
        uint8_t flags = 0;
        uint16_t key_size = 0;    // object members: the key's size (or kLongKey)
        uint32_t key_offset = 0;  // ... and where it is in text; kItem: where the item starts
        union {
            int64_t i;
            uint64_t u;
            double f;
            struct {
                // String: offset in text, size. Array, Object: the index past
                // the last member's records, members (Hidden ones not counted).
                // Redirect: the index past the first value's records, the value.
                uint32_t a;
                uint32_t b;
            } span;
        };
        Value() : u(0) {}
    };
    static_assert(sizeof(Value) == 16);

    std::vector<Value> values;  // the root first
    std::vector<std::pair<uint32_t, uint32_t>> long_keys;  // offset, size
    // Where the strings and keys are: the source itself when no string needed
    // unescaping (the fast reader's documents), else `chars`.
    std::string_view text;
    std::string chars;
    // Whether `text` is the source: then every value but the root has a place
    // in it (JVal::place).
    bool places = false;

    uint32_t root() const { return values.empty() ? kNone : 0; }
    std::string_view key(const Value& v) const {
        if (v.key_size != kLongKey) return text.substr(v.key_offset, v.key_size);
        const auto& [offset, size] = long_keys[v.key_offset];
        return text.substr(offset, size);
    }
    // The index of the record after `index` and its members.
    uint32_t next(uint32_t index) const {
        const Value& v = values[index];
        return v.type == Type::Array || v.type == Type::Object || v.type == Type::Redirect ? v.span.a
                                                                                          : index + 1;
    }
    // `index`, or the first record from it on that is not Hidden, before `end`.
    uint32_t visible(uint32_t index, uint32_t end) const {
        while (index < end && (values[index].flags & kHidden)) index = next(index);
        return index;
    }
};

class JRange;

// One value of a Document, with the queries the reader asks (named as
// nlohmann's, whose DOM it replaces).
class JVal {
  public:
    using Type = Document::Type;

    JVal(const Document& doc, uint32_t index) : doc_(&doc), index_(index) {
        if (doc.values[index].type == Type::Redirect) index_ = doc.values[index].span.b;
        v_ = &doc.values[index_];
    }

    bool is_null() const { return v_->type == Type::Null; }
    bool is_boolean() const { return v_->type == Type::Bool; }
    bool is_number() const { return is_number_integer() || v_->type == Type::Float; }
    bool is_number_integer() const { return v_->type == Type::Integer || v_->type == Type::Unsigned; }
    bool is_number_unsigned() const { return v_->type == Type::Unsigned; }
    bool is_string() const { return v_->type == Type::String; }
    bool is_array() const { return v_->type == Type::Array; }
    bool is_object() const { return v_->type == Type::Object; }

    bool boolean() const { return (v_->flags & Document::kTrue) != 0; }
    std::string_view string() const { return doc_->text.substr(v_->span.a, v_->span.b); }
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
    // Where the value is in the source, for its Loc (Loc::json_at): an array
    // item's first byte, or an object member's key's opening quote. kNone for
    // the root, and where the document does not refer to the source
    // (nlohmann's reader, whose strings it copied).
    uint32_t place() const {
        if (!doc_->places || index_ == 0) return Document::kNone;
        if (v_->flags & Document::kItem) return v_->key_offset;
        return (v_->key_size == Document::kLongKey ? doc_->long_keys[v_->key_offset].first : v_->key_offset) - 1;
    }

    // Members of an array or object.
    size_t size() const { return is_array() || is_object() ? v_->span.b : 0; }
    bool empty() const { return size() == 0; }

    // A scalar as nlohmann's DOM would hold it (for messages that show the value).
    nlohmann::json scalar() const {
        switch (v_->type) {
            case Type::Bool: return boolean();
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
    // Its record in doc().values (a Redirect's target).
    uint32_t index() const { return index_; }

  private:
    const Document* doc_;
    uint32_t index_;
    const Document::Value* v_;
};

struct JEntry {
    std::string_view key;
    JVal value;
};

class JIterator {
  public:
    JIterator(const Document& doc, uint32_t index, uint32_t end) : doc_(&doc), i_(index), end_(end) {}
    JEntry operator*() const { return JEntry{doc_->key(doc_->values[i_]), JVal(*doc_, i_)}; }
    JIterator& operator++() {
        i_ = doc_->visible(doc_->next(i_), end_);
        return *this;
    }
    bool operator!=(const JIterator& o) const { return i_ != o.i_; }

  private:
    const Document* doc_;
    uint32_t i_;
    uint32_t end_;
};

class JRange {
  public:
    JRange(JIterator b, JIterator e) : b_(b), e_(e) {}
    JIterator begin() const { return b_; }
    JIterator end() const { return e_; }

  private:
    JIterator b_, e_;
};

inline JRange JVal::items() const {
    // A scalar has no members: an empty range.
    const bool container = is_array() || is_object();
    const uint32_t end = container ? v_->span.a : index_ + 1;
    const uint32_t first = container ? doc_->visible(index_ + 1, end) : end;
    return JRange(JIterator(*doc_, first, end), JIterator(*doc_, end, end));
}

// A big graph's document read on a second core while the graph is built from
// it (json_reader.cpp): the fast reader runs on a thread of its own and
// publishes the items of the root's "nodes" array as each one is complete,
// when the document begins as `graphrun convert` writes it,
// {"graphrun": 1, "nodes": [. Reading the document first and the graph after
// cost a JSON graph about a sixth more than the same graph as text.
//
// The reader only adds records (doc.values is reserved for all of them
// beforehand, and it stops rather than outgrow it) and, past a published
// item, changes none but the root's and the array's own records, which the
// graph's reader does not look at until finish(). Anything out of the
// ordinary (what the fast reader gives up on, a duplicate key, a key of
// Document::kLongKey bytes) makes finish() false: the caller then drops what
// it built and reads the source again the ordinary way (read_document).
class StreamedDocument {
  public:
    StreamedDocument() = default;
    StreamedDocument(const StreamedDocument&) = delete;
    StreamedDocument& operator=(const StreamedDocument&) = delete;
    ~StreamedDocument() { stop(); }

    // Starts reading `source` into `doc` (empty; both must outlive this).
    // False when no thread can be had: nothing was started.
    bool start(std::string_view source, Document& doc, const InputLimits& limits);
    // The record of the "nodes" array, once the reader knows it: kNone when
    // the document does not begin {"graphrun": 1, "nodes": [ (or the reading
    // stopped before that).
    uint32_t array();
    // Whether record `i` is an item of the array, waiting for the reader
    // until it is complete or the array (or the reading) has ended. A
    // caller asks for the first item, array() + 1, then for Document::next
    // of each item in turn.
    bool item(uint32_t i);
    // Waits for the reader to finish; true when the document was read whole,
    // well formed, with no duplicate key and no long key.
    bool finish();

    // Where the reader is (the reader's side: DocumentBuilder).
    struct Progress {
        std::atomic<uint32_t> published{0};      // records [0, published) are there
        std::atomic<uint32_t> array{kUndecided};  // the "nodes" array's record, or kNone
        std::atomic<uint32_t> array_end{Document::kNone};  // past its last item, once closed
        std::atomic<bool> done{false};
        std::atomic<bool> stop{false};  // the caller gave up: stop reading
        bool ok = false;                 // set before done
        static constexpr uint32_t kUndecided = Document::kNone - 1;
    };

  private:
    void stop();

    Progress progress_;
    std::thread thread_;
};

// Reads `source` into `doc` (empty): the fast reader first, nlohmann's parser
// when it gives up. Reports into `diag` a malformed document (then returns
// false), nesting deeper than kMaxNesting or more than limits.json_values
// values (false too), and each duplicate key (an error, but the document is
// read, the last value winning, and true is returned).
bool read_document(std::string_view source, Document& doc, const InputLimits& limits, Diagnostics& diag);

}  // namespace graphrun::jsondoc
