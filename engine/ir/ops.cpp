// The op table.
#include "engine/ir/ops.h"

namespace graphrun {

namespace {

std::vector<OpInfo> build_table() {
    using A = AttrType;
    using C = DTypeClass;
    using F = OpFamily;
    const AttrSpec dtype{"dtype", A::DType, false};
    const AttrSpec shape_req{"shape", A::IntList, true};
    std::vector<OpInfo> t;
    // G: the GPU has a kernel for the op (gpu/kernels), for every dtype of its
    // class. Every op has one: the G ops of SPEC section 3, and also the
    // creation ops and reshape/identity (copies), which gpu/ has always run.
    const bool G = true;
    auto add = [&](OpKind k, const char* name, int mn, int mx, C c, F family, bool gpu, bool creation,
                   std::vector<AttrSpec> attrs, std::vector<const char*> positional = {}) {
        t.push_back(OpInfo{k, name, mn, mx, c, family, gpu, creation, std::move(attrs), std::move(positional)});
    };
    add(OpKind::Const, "const", 0, 0, C::All, F::Creation, G, true,
        {{"value", A::Value, true}, {"shape", A::IntList, false}, dtype,
         // the values in a side file instead (engine/frontend/const_files.h)
         {"file", A::String, false}, {"key", A::String, false}},
        {"value"});
    add(OpKind::Zeros, "zeros", 0, 0, C::All, F::Creation, G, true, {shape_req, dtype}, {"shape"});
    add(OpKind::Ones, "ones", 0, 0, C::All, F::Creation, G, true, {shape_req, dtype}, {"shape"});
    add(OpKind::Fill, "fill", 0, 0, C::All, F::Creation, G, true, {shape_req, {"value", A::Number, true}, dtype},
        {"shape", "value"});
    add(OpKind::Range, "range", 0, 0, C::Num, F::Creation, G, true,
        {{"start", A::Number, false}, {"limit", A::Number, true}, {"delta", A::Number, false}, dtype},
        {"start", "limit", "delta"});
    add(OpKind::RandomUniform, "random_uniform", 0, 0, C::Float, F::Creation, G, true,
        {shape_req, {"low", A::Number, false}, {"high", A::Number, false}, {"seed", A::Int, false}, dtype},
        {"shape"});
    add(OpKind::RandomNormal, "random_normal", 0, 0, C::Float, F::Creation, G, true,
        {shape_req, {"mean", A::Number, false}, {"stddev", A::Number, false}, {"seed", A::Int, false}, dtype},
        {"shape"});
    add(OpKind::Input, "input", 0, 0, C::All, F::Creation, G, true, {shape_req, dtype}, {"shape"});
    add(OpKind::Add, "add", 2, 2, C::Num, F::Binary, G, false, {});
    add(OpKind::Sub, "sub", 2, 2, C::Num, F::Binary, G, false, {});
    add(OpKind::Mul, "mul", 2, 2, C::Num, F::Binary, G, false, {});
    add(OpKind::Div, "div", 2, 2, C::Num, F::Binary, G, false, {});
    add(OpKind::Maximum, "maximum", 2, 2, C::Num, F::Binary, G, false, {});
    add(OpKind::Minimum, "minimum", 2, 2, C::Num, F::Binary, G, false, {});
    add(OpKind::Pow, "pow", 2, 2, C::Num, F::Binary, G, false, {});
    add(OpKind::Neg, "neg", 1, 1, C::Num, F::Unary, G, false, {});
    add(OpKind::Abs, "abs", 1, 1, C::Num, F::Unary, G, false, {});
    add(OpKind::Square, "square", 1, 1, C::Num, F::Unary, G, false, {});
    add(OpKind::Relu, "relu", 1, 1, C::Num, F::Unary, G, false, {});
    add(OpKind::Exp, "exp", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Log, "log", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Sqrt, "sqrt", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Rsqrt, "rsqrt", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Tanh, "tanh", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Sigmoid, "sigmoid", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Sin, "sin", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Cos, "cos", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Matmul, "matmul", 2, 2, C::Float, F::Matmul, G, false,
        {{"transpose_a", A::Bool, false}, {"transpose_b", A::Bool, false}});
    add(OpKind::Transpose, "transpose", 1, 1, C::All, F::Transpose, G, false, {{"perm", A::IntList, false}});
    add(OpKind::Reshape, "reshape", 1, 1, C::All, F::Copy, G, false, {shape_req});
    add(OpKind::Cast, "cast", 1, 1, C::All, F::Cast, G, false, {{"dtype", A::DType, true}});
    add(OpKind::Identity, "identity", 1, 1, C::All, F::Copy, G, false, {});
    add(OpKind::Concat, "concat", 1, -1, C::All, F::Concat, G, false, {{"axis", A::Int, false}});
    const std::vector<AttrSpec> red{{"axes", A::IntList, false, true}, {"keepdims", A::Bool, false}};
    add(OpKind::ReduceSum, "reduce_sum", 1, 1, C::Num, F::Reduce, G, false, red);
    add(OpKind::ReduceMax, "reduce_max", 1, 1, C::Num, F::Reduce, G, false, red);
    add(OpKind::ReduceMean, "reduce_mean", 1, 1, C::Float, F::Reduce, G, false, red);
    add(OpKind::Softmax, "softmax", 1, 1, C::Float, F::Softmax, G, false, {{"axis", A::Int, false}});
    // Beyond SPEC section 3 (README "Ops beyond SPEC section 3"): ONNX's semantics.
    // equal and not_equal also compare bools (ONNX Equal takes them); the order comparisons do not.
    add(OpKind::Equal, "equal", 2, 2, C::All, F::Logic, G, false, {});
    add(OpKind::NotEqual, "not_equal", 2, 2, C::All, F::Logic, G, false, {});
    add(OpKind::Less, "less", 2, 2, C::Num, F::Logic, G, false, {});
    add(OpKind::LessEqual, "less_equal", 2, 2, C::Num, F::Logic, G, false, {});
    add(OpKind::Greater, "greater", 2, 2, C::Num, F::Logic, G, false, {});
    add(OpKind::GreaterEqual, "greater_equal", 2, 2, C::Num, F::Logic, G, false, {});
    add(OpKind::LogicalAnd, "logical_and", 2, 2, C::Bool, F::Logic, G, false, {});
    add(OpKind::LogicalOr, "logical_or", 2, 2, C::Bool, F::Logic, G, false, {});
    add(OpKind::LogicalXor, "logical_xor", 2, 2, C::Bool, F::Logic, G, false, {});
    add(OpKind::LogicalNot, "logical_not", 1, 1, C::Bool, F::Logic, G, false, {});
    add(OpKind::Where, "where", 3, 3, C::All, F::Logic, G, false, {});
    add(OpKind::Floor, "floor", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Ceil, "ceil", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Round, "round", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Erf, "erf", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Reciprocal, "reciprocal", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Softplus, "softplus", 1, 1, C::Float, F::Unary, G, false, {});
    add(OpKind::Sign, "sign", 1, 1, C::Num, F::Unary, G, false, {});
    add(OpKind::Clip, "clip", 1, 1, C::Num, F::Unary, G, false,
        {{"min", A::Number, false}, {"max", A::Number, false}});
    add(OpKind::LeakyRelu, "leaky_relu", 1, 1, C::Float, F::Unary, G, false, {{"alpha", A::Number, false}});
    add(OpKind::Elu, "elu", 1, 1, C::Float, F::Unary, G, false, {{"alpha", A::Number, false}});
    add(OpKind::Selu, "selu", 1, 1, C::Float, F::Unary, G, false,
        {{"alpha", A::Number, false}, {"gamma", A::Number, false}});
    add(OpKind::Gelu, "gelu", 1, 1, C::Float, F::Unary, G, false, {{"approximate", A::String, false}});
    add(OpKind::ReduceMin, "reduce_min", 1, 1, C::Num, F::Reduce, G, false, red);
    add(OpKind::ReduceProd, "reduce_prod", 1, 1, C::Num, F::Reduce, G, false, red);
    const std::vector<AttrSpec> arg{{"axis", A::Int, false}, {"keepdims", A::Bool, false},
                                    {"select_last_index", A::Bool, false}};
    add(OpKind::Argmax, "argmax", 1, 1, C::Num, F::ArgReduce, G, false, arg);
    add(OpKind::Argmin, "argmin", 1, 1, C::Num, F::ArgReduce, G, false, arg);
    add(OpKind::LogSoftmax, "log_softmax", 1, 1, C::Float, F::Softmax, G, false, {{"axis", A::Int, false}});
    // shape ops (README "Ops beyond SPEC section 3"): ONNX's semantics, the
    // index vectors ONNX passes as inputs written as attributes.
    const AttrSpec axes_opt{"axes", A::IntList, false, true};
    // slice(x, starts, ends[, axes[, steps]]) and pad(x, pads[, value[, axes]]):
    // the vectors as run-time i32/i64 inputs instead, the output's shape the
    // attribute `shape`, checked against them at run time (layout_plan.h).
    const AttrSpec out_shape{"shape", A::IntList, false};
    add(OpKind::Slice, "slice", 1, 5, C::All, F::Layout, G, false,
        {{"starts", A::IntList, false, true}, {"ends", A::IntList, false, true}, axes_opt,
         {"steps", A::IntList, false, true}, out_shape});
    add(OpKind::Gather, "gather", 2, 2, C::All, F::Layout, G, false, {{"axis", A::Int, false}});
    add(OpKind::Expand, "expand", 1, 1, C::All, F::Layout, G, false, {shape_req});
    add(OpKind::Split, "split", 1, 1, C::All, F::Layout, G, false,
        {{"index", A::Int, true}, {"axis", A::Int, false}, {"sizes", A::IntList, false, true},
         {"parts", A::Int, false}});
    add(OpKind::Pad, "pad", 1, 4, C::All, F::Layout, G, false,
        {{"pads", A::IntList, false}, {"mode", A::String, false}, {"constant_value", A::Number, false},
         axes_opt, out_shape});
    add(OpKind::Tile, "tile", 1, 1, C::All, F::Layout, G, false, {{"repeats", A::IntList, true, true}});
    add(OpKind::Squeeze, "squeeze", 1, 1, C::All, F::Copy, G, false, {axes_opt});
    add(OpKind::Unsqueeze, "unsqueeze", 1, 1, C::All, F::Copy, G, false, {{"axes", A::IntList, true, true}});
    add(OpKind::Flatten, "flatten", 1, 1, C::All, F::Copy, G, false, {{"axis", A::Int, false}});
    // norm (ONNX LayerNormalization, BatchNormalization in inference mode, Gemm)
    add(OpKind::LayerNorm, "layer_norm", 2, 3, C::Float, F::Norm, G, false,
        {{"axis", A::Int, false}, {"epsilon", A::Number, false}});
    add(OpKind::BatchNorm, "batch_norm", 5, 5, C::Float, F::Norm, G, false, {{"epsilon", A::Number, false}});
    add(OpKind::Gemm, "gemm", 2, 3, C::Float, F::Matmul, G, false,
        {{"alpha", A::Number, false}, {"beta", A::Number, false}, {"transpose_a", A::Bool, false},
         {"transpose_b", A::Bool, false}});
    // conv area: ONNX's Conv, ConvTranspose, MaxPool, AveragePool, GlobalAveragePool and
    // GlobalMaxPool over NCW / NCHW (engine/ir/conv_geometry.h resolves their windows).
    const AttrSpec strides{"strides", A::IntList, false, true}, pads{"pads", A::IntList, false, true},
        dilations{"dilations", A::IntList, false, true}, auto_pad{"auto_pad", A::String, false};
    add(OpKind::Conv, "conv", 2, 3, C::Float, F::Conv, G, false,
        {strides, pads, dilations, {"group", A::Int, false}, auto_pad});
    add(OpKind::ConvTranspose, "conv_transpose", 2, 3, C::Float, F::Conv, G, false,
        {strides, pads, dilations, {"group", A::Int, false}, auto_pad,
         {"output_padding", A::IntList, false, true}, {"output_shape", A::IntList, false, true}});
    const AttrSpec kernel_shape{"kernel_shape", A::IntList, true, true}, ceil_mode{"ceil_mode", A::Bool, false};
    add(OpKind::MaxPool, "max_pool", 1, 1, C::Float, F::Conv, G, false,
        {kernel_shape, strides, pads, dilations, auto_pad, ceil_mode});
    add(OpKind::AvgPool, "avg_pool", 1, 1, C::Float, F::Conv, G, false,
        {kernel_shape, strides, pads, auto_pad, ceil_mode, {"count_include_pad", A::Bool, false}});
    add(OpKind::GlobalAvgPool, "global_avg_pool", 1, 1, C::Float, F::Conv, G, false, {});
    add(OpKind::GlobalMaxPool, "global_max_pool", 1, 1, C::Float, F::Conv, G, false, {});
    // index ops (README "Ops beyond SPEC section 3"), ONNX's semantics; CPU
    // kernels only (gpu = false: placed on the CPU by soft placement).
    add(OpKind::TopK, "top_k", 1, 2, C::Num, F::Index, false, false,
        {{"k", A::Int, true}, {"axis", A::Int, false}, {"largest", A::Bool, false}, {"sorted", A::Bool, false},
         {"indices", A::Bool, false}});
    const AttrSpec reduction{"reduction", A::String, false};
    add(OpKind::ScatterElements, "scatter_elements", 3, 3, C::All, F::Index, false, false,
        {{"axis", A::Int, false}, reduction});
    add(OpKind::ScatterND, "scatter_nd", 3, 3, C::All, F::Index, false, false, {reduction});
    add(OpKind::GatherElements, "gather_elements", 2, 2, C::All, F::Index, false, false, {{"axis", A::Int, false}});
    return t;
}

// Values the executor moves and stand-ins: no kernel on any device.
const OpInfo kLoopParam{OpKind::LoopParam, "loop_param", 0, 0, DTypeClass::All, OpFamily::None, false, false, {}, {}};
const OpInfo kInvalid{OpKind::Invalid, "invalid", 0, -1, DTypeClass::All, OpFamily::None, false, false, {}, {}};

}  // namespace

const std::vector<OpInfo>& all_ops() {
    static const std::vector<OpInfo> table = build_table();
    return table;
}

const OpInfo& op_info(OpKind k) {
    if (k == OpKind::LoopParam) return kLoopParam;
    if (k == OpKind::Invalid) return kInvalid;
    return all_ops()[static_cast<size_t>(k)];
}

const char* op_name(OpKind k) { return op_info(k).name; }

std::optional<OpKind> find_op(std::string_view name) {
    // Called for every call in a script: compare only the ops of the same length.
    static const std::vector<std::vector<const OpInfo*>> by_length = [] {
        std::vector<std::vector<const OpInfo*>> t;
        for (const OpInfo& o : all_ops()) {
            const size_t n = std::string_view(o.name).size();
            if (t.size() <= n) t.resize(n + 1);
            t[n].push_back(&o);
        }
        return t;
    }();
    if (name.size() >= by_length.size()) return std::nullopt;
    for (const OpInfo* o : by_length[name.size()])
        if (name == o->name) return o->kind;
    return std::nullopt;
}

std::optional<DType> fixed_result_dtype(OpKind k) {
    if (is_comparison(k) || (k >= OpKind::LogicalAnd && k <= OpKind::LogicalNot)) return DType::Bool;
    if (k == OpKind::Argmax || k == OpKind::Argmin) return DType::I64;
    return std::nullopt;
}

bool gpu_runs(OpKind op, DType dtype) {
    const OpInfo& info = op_info(op);
    if (!info.gpu) return false;
    // Every input dtype the op takes; its result's dtype is always the same.
    if (auto fixed = fixed_result_dtype(op)) return dtype == *fixed;
    switch (info.dtypes) {
        case DTypeClass::All: return true;
        case DTypeClass::Num: return dtype != DType::Bool;
        case DTypeClass::Float: return is_float(dtype);
        case DTypeClass::Bool: return dtype == DType::Bool;
    }
    return false;
}

std::vector<std::string> op_names() {
    std::vector<std::string> v;
    for (const OpInfo& o : all_ops()) v.emplace_back(o.name);
    return v;
}

std::optional<std::vector<std::string>> positional_attr_names(OpKind k, size_t count) {
    const OpInfo& info = op_info(k);
    if (k == OpKind::Range) {
        if (count == 0) return std::vector<std::string>{};
        if (count == 1) return std::vector<std::string>{"limit"};
        if (count == 2) return std::vector<std::string>{"start", "limit"};
        if (count == 3) return std::vector<std::string>{"start", "limit", "delta"};
        return std::nullopt;
    }
    if (count > info.positional.size()) return std::nullopt;
    return std::vector<std::string>(info.positional.begin(), info.positional.begin() + count);
}

bool runs_in_storage_type(OpKind op) {
    switch (op_info(op).family) {
        case OpFamily::Copy:
        case OpFamily::Transpose:
        case OpFamily::Concat:
        case OpFamily::Layout:
        case OpFamily::Cast:
            return true;
        case OpFamily::None:  // loop_param: a buffer handed from pass to pass
            return op == OpKind::LoopParam;
        default:
            return op == OpKind::Const || op == OpKind::Input;
    }
}

}  // namespace graphrun
