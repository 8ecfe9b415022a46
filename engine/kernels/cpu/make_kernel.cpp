// The CPU's kernel factory per op family (dispatched by kernels/common/families.h).
#include "engine/ir/ops.h"
#include "engine/kernels/common/families.h"
#include "engine/kernels/common/kernel_common.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/kernels/cpu/kernel_families.h"

namespace graphrun {

std::unique_ptr<Kernel> make_cpu_kernel(const Graph& g, const Node& n) {
    using namespace kernels;
    static constexpr FamilyFactories<> kCpu = [] {
        FamilyFactories<> f GR_FAMILY_FACTORIES;
        f.index = make_index_kernel;
        return f;
    }();
    if (std::unique_ptr<Kernel> k = make_family_kernel(kCpu, g, n)) return k;
    return make_error_kernel(std::string("internal error: ") + op_name(n.op) + " has no kernel");
}

}  // namespace graphrun
