// Inference for the conv area's ops (conv, conv_transpose, max_pool, avg_pool,
// global_avg_pool, global_max_pool): the dtypes (f32 or f64, every operand the
// same) here, the window and the output shape from engine/ir/conv_geometry.h,
// whose problems are reported at the attribute or operand they are about.
#include "engine/check/infer_context.h"
#include "engine/ir/conv_geometry.h"

namespace graphrun::infer {

bool infer_conv_area(NodeCheck& c) {
    bool ok = true;
    for (size_t i = 0; i < c.arity(); ++i) ok = c.check_input_class(i) && ok;
    if (!ok) return false;
    const Node& x = c.input(0);
    for (size_t i = 1; i < c.arity(); ++i) {
        if (c.input(i).dtype == x.dtype) continue;
        c.error(c.input_loc(i), c.operand_text(i) + ", but " + c.operand_text(0) + "; " +
                                    c.info.name + " takes operands of one dtype; use cast(" +
                                    c.role(i) + ", dtype=" + dtype_name(x.dtype) + ")");
        ok = false;
    }
    if (!ok) return false;
    const bool has_weight = c.node.op == OpKind::Conv || c.node.op == OpKind::ConvTranspose;
    WindowProblem problem;
    std::optional<WindowGeometry> g =
        window_geometry(c.node, x.shape, has_weight ? &c.input(1).shape : nullptr, &problem);
    if (!g) {
        const Loc& loc = problem.attr && c.attr(problem.attr)
                             ? c.attr_loc(problem.attr)
                             : c.input_loc(static_cast<size_t>(problem.input));
        c.error(loc, problem.message);
        return false;
    }
    if (has_weight && c.arity() == 3) {
        const Node& b = c.input(2);
        if (b.shape.size() != 1 || b.shape[0] != g->out_channels) {
            c.error(c.input_loc(2), c.operand_text(2) + ", but the bias must be f[" +
                                        std::to_string(g->out_channels) +
                                        "], one value per output channel");
            return false;
        }
    }
    c.node.dtype = x.dtype;
    c.node.shape = window_output_shape(*g);
    return true;
}

}  // namespace graphrun::infer
