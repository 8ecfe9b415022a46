#include "engine/base/heap_trim.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace graphrun {

void return_free_heap() {
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

}  // namespace graphrun
