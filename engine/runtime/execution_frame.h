// The execution frame (ONNX Runtime's ExecutionFrame): the buffers of a
// running session, their reference counts, and which buffer each value
// refers to. A value refers to at most one buffer; an alias or a loop
// parameter shares its source's buffer; a node running in place takes its
// donor's buffer (the session asks only where its strategy reuses buffers,
// never under close). When a buffer's last reference goes, the frame hands it to
// the cleanup strategy, which decides when it goes back to its allocator.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/runtime/allocator.h"
#include "engine/runtime/cleanup_strategy.h"
#include "engine/runtime/device.h"

namespace graphrun {

class ExecutionFrame {
public:
    struct Buffer {
        void* data = nullptr;
        uint64_t bytes = 0;
        int32_t refs = 0;
        Device* dev = nullptr;
    };

    // A frame for `values` values (node ids), all referring to no buffer;
    // unreferenced buffers go to `cleanup`.
    ExecutionFrame(size_t values, Cleanup& cleanup) : cleanup_(&cleanup), value_buf_(values, -1) { bufs_.reserve(64); }
    ExecutionFrame(const ExecutionFrame&) = delete;
    ExecutionFrame& operator=(const ExecutionFrame&) = delete;

    // Room for `values` values (the new ones refer to no buffer): a live
    // session's frame grows with the statements it is given.
    void ensure(size_t values) {
        if (value_buf_.size() < values) value_buf_.resize(values, -1);
    }
    size_t size() const { return value_buf_.size(); }
    // Unreferenced buffers go to `cleanup` from now on (a live session's
    // strategy changed; the old one has released what it held).
    void set_cleanup(Cleanup& cleanup) { cleanup_ = &cleanup; }

    // The buffer value v refers to, or nullptr.
    const Buffer* buffer_of(NodeId v) const {
        const int32_t b = value_buf_[static_cast<size_t>(v)];
        return b >= 0 ? &bufs_[static_cast<size_t>(b)] : nullptr;
    }
    // Whether a and b refer to one buffer.
    bool same_buffer(NodeId a, NodeId b) const {
        const int32_t ba = value_buf_[static_cast<size_t>(a)];
        return ba >= 0 && ba == value_buf_[static_cast<size_t>(b)];
    }

    // `to` drops its buffer and refers to `from`'s.
    void share(NodeId to, NodeId from) {
        drop(to);
        const int32_t b = value_buf_[static_cast<size_t>(from)];
        value_buf_[static_cast<size_t>(to)] = b;
        if (b >= 0) ++bufs_[static_cast<size_t>(b)].refs;
    }

    // v gives up its buffer reference; the last one hands the buffer to the strategy.
    void drop(NodeId v) {
        int32_t& b = value_buf_[static_cast<size_t>(v)];
        if (b < 0) return;
        if (--bufs_[static_cast<size_t>(b)].refs == 0) unreferenced(b);
        b = -1;
    }

    // Drops every value (teardown).
    void drop_all() {
        for (size_t v = 0; v < value_buf_.size(); ++v) drop(static_cast<NodeId>(v));
    }

    // In place (the rule of may_take_input_buffer, the same test as the
    // static plan's): when nothing but `donor` refers to its buffer and the
    // buffer lives on `dev`, `to` takes it too (the donor's drop, right after
    // the node, leaves `to` its only owner). The buffer's data, or nullptr.
    void* take_donor(NodeId to, NodeId donor, const Device* dev) {
        const int32_t db = value_buf_[static_cast<size_t>(donor)];
        if (db < 0) return nullptr;
        Buffer& buf = bufs_[static_cast<size_t>(db)];
        if (buf.refs != 1 || buf.dev != dev) return nullptr;
        ++buf.refs;
        value_buf_[static_cast<size_t>(to)] = db;
        return buf.data;
    }

    // v refers to a new buffer, freshly allocated: its only reference.
    void bind_new(NodeId v, void* data, uint64_t bytes, Device* dev) {
        int32_t b;
        if (!free_bufs_.empty()) {
            b = free_bufs_.back();
            free_bufs_.pop_back();
        } else {
            b = static_cast<int32_t>(bufs_.size());
            bufs_.emplace_back();
        }
        bufs_[static_cast<size_t>(b)] = Buffer{data, bytes, 1, dev};
        value_buf_[static_cast<size_t>(v)] = b;
    }

    // A weight (plan.h, is_weight): a buffer the session holds a reference
    // to itself, so that no drop hands it to the strategy and no node takes
    // it in place. The buffer's index, for refer() and unpin().
    int32_t pin_weight(void* data, uint64_t bytes, Device* dev) {
        const int32_t b = static_cast<int32_t>(bufs_.size());
        bufs_.push_back(Buffer{data, bytes, 1, dev});
        return b;
    }
    // v drops its buffer and refers to buffer b (a weight's).
    void refer(NodeId v, int32_t b) {
        drop(v);
        value_buf_[static_cast<size_t>(v)] = b;
        ++bufs_[static_cast<size_t>(b)].refs;
    }
    // The session lets go of weight b, after every value has dropped it: its
    // slot is free, its memory the caller's to give back (not the strategy's).
    void unpin(int32_t b) {
        bufs_[static_cast<size_t>(b)] = Buffer{};
        free_bufs_.push_back(b);
    }

private:
    void unreferenced(int32_t b);

    Cleanup* cleanup_;
    std::vector<Buffer> bufs_;
    std::vector<int32_t> free_bufs_;  // slots of bufs_ to reuse
    std::vector<int32_t> value_buf_;  // per value: index into bufs_, -1 when it refers to none
};

}  // namespace graphrun
