// Handing the C library's free heap memory back to the system.
#pragma once

namespace graphrun {

// glibc raises its mmap threshold to the largest block freed (up to 32 MiB),
// so once a few big blocks are freed, blocks under that come from its heap
// and stay resident after free. This returns the heap's free pages (madvise)
// and its top (malloc_trim); elsewhere it does nothing. Called where much was
// freed at once: after loading (the model's bytes, the parsed model, the plain
// copies of pre-packed weights) and at a CPU device's close.
void return_free_heap();

}  // namespace graphrun
