// JSON pointers (RFC 6901) of places in a JSON text. A JSON graph keeps the
// place of a value as its byte offset in the text (Loc::json_at), not as a
// pointer string, which would cost an allocation per node, input and
// attribute; the pointer is found only when something shows it, by scanning
// the text up to that offset.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/diagnostics.h"

namespace graphrun {

// Appends one reference token of a pointer: `key` with '~' as "~0" and '/' as "~1".
void append_json_pointer_token(std::string& out, std::string_view key);

// Finds the pointers of places in one JSON text (well formed: one that its
// reader accepted). Places asked in document order, or each near the one
// before (a node, then its inputs, then the node's literal), cost one scan of
// the text in all; any other costs a scan of at most kCheckpointBytes or so.
// Not thread-safe: one finder per thread.
class JsonPointerFinder {
  public:
    explicit JsonPointerFinder(std::string_view text = {}) : text_(text) {}

    // The pointer of the value that starts at byte `offset` of the text: an
    // array's item starts there, or an object member's key (its opening
    // quote). Valid until the next call.
    const std::string& pointer_at(uint32_t offset);
    // `loc`'s pointer: its own, or the one found from its offset
    // (Loc::in_json); empty for a place in a text graph or an unknown one.
    // Valid until the next call.
    std::string_view pointer(const Loc& loc);

    // Scanned bytes between saved scanner states.
    static constexpr uint32_t kCheckpointBytes = 64 * 1024;

  private:
    static constexpr uint32_t kNoMember = UINT32_MAX;
    struct Frame {
        uint32_t member_start = kNoMember;  // the current item, or the current member's key quote
        uint32_t index = 0;                 // arrays: the current item's index
        uint32_t key_start = 0;             // objects: the current member's key, as written
        uint32_t key_size = 0;
        bool array = false;
        bool expect = true;  // arrays: the next value is an item; objects: the next string is a key
    };
    struct Checkpoint {
        uint32_t pos;
        std::vector<Frame> stack;
    };

    void scan_to(uint32_t target);
    // Reads the token at `at` (updating the stack); returns the position past it.
    [[gnu::always_inline]] inline uint32_t step(uint32_t at);
    void value_starts(uint32_t at);
    uint32_t skip_string(uint32_t at) const;
    // out_ = the pointer of the place of the stack's first `depth` frames.
    void build_pointer(size_t depth);
    uint32_t text_size() const { return static_cast<uint32_t>(std::min<size_t>(text_.size(), UINT32_MAX)); }
    // Back to a state at or before `target`: the latest of an open member's
    // start, a checkpoint and the start of the text.
    void rewind(uint32_t target);

    std::string_view text_;
    uint32_t pos_ = 0;
    std::vector<Frame> stack_;
    std::vector<Checkpoint> checkpoints_;  // by position
    uint32_t scanned_ = 0;                 // the furthest position reached
    uint32_t ahead_pos_ = 0;               // a state past pos_ kept by the last rewind
    std::vector<Frame> ahead_stack_;
    uint64_t checkpoint_due_ = kCheckpointBytes;  // no checkpoint before this position
    std::string out_;
    // The frames out_ was built from, with where each one's token ends in it.
    struct Built {
        bool array;
        uint32_t index;
        uint32_t key_start;
        uint32_t key_size;
        size_t end;
    };
    std::vector<Built> built_;
    std::string key_;
};

}  // namespace graphrun
