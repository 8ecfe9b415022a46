// The JSON document the JSON front end reads a graph from: the text parsed
// once (a fast reader for ordinary graph files, nlohmann's SAX parser, the
// reference for errors, for the rest) into a compact Document, and the small
// text helpers (JSON pointers, quoting) its messages and the graph reader share.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
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

inline JRange JVal::items() const {
    return JRange(JIterator(*doc_, first()), JIterator(*doc_, Document::kNone));
}

// Reads `source` into `doc` (empty): the fast reader first, nlohmann's parser
// when it gives up. Reports into `diag` a malformed document (then returns
// false), nesting deeper than kMaxNesting or more than limits.json_values
// values (false too), and each duplicate key (an error, but the document is
// read, the last value winning, and true is returned).
bool read_document(std::string_view source, Document& doc, const InputLimits& limits, Diagnostics& diag);

}  // namespace graphrun::jsondoc
