// The execution frame's one path out of line: a buffer nothing refers to.
#include "engine/runtime/execution_frame.h"

namespace graphrun {

void ExecutionFrame::unreferenced(int32_t b) {
    Buffer& buf = bufs_[static_cast<size_t>(b)];
    cleanup_->on_unreferenced(PendingRelease{buf.data, buf.bytes, &buf.dev->allocator()});
    buf = Buffer{};
    free_bufs_.push_back(b);
}

}  // namespace graphrun
