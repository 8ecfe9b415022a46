// The op set of SPEC section 3: one table that the front ends, validation,
// the writers and (later) the executors read. Adding an op starts here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/dtype.h"

namespace graphrun {

enum class OpKind : uint8_t {
    // creation
    Const, Zeros, Ones, Fill, Range, RandomUniform, RandomNormal,
    // a graph input: a creation op whose value comes from the run's feeds
    // (--input), copied into a counted buffer each pass like a const literal
    Input,
    // elementwise binary
    Add, Sub, Mul, Div, Maximum, Minimum, Pow,
    // elementwise unary
    Neg, Abs, Square, Relu, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Sin, Cos,
    // the rest
    Matmul, Transpose, Reshape, Cast, Identity, Concat, ReduceSum, ReduceMax, ReduceMean, Softmax,
    // beyond SPEC section 3 (README "Ops beyond SPEC section 3"), ONNX's semantics:
    // comparisons and logic (family Logic)
    Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual, LogicalAnd, LogicalOr, LogicalXor,
    LogicalNot, Where,
    // elementwise unary (family Unary)
    Floor, Ceil, Round, Erf, Reciprocal, Softplus, Sign, Clip, LeakyRelu, Elu, Selu, Gelu,
    // reductions (Reduce), arg reductions (ArgReduce), log_softmax (Softmax)
    ReduceMin, ReduceProd, Argmax, Argmin, LogSoftmax,
    // shape ops (issue 18 "shape" area): slice gather expand split pad tile (family Layout);
    // squeeze unsqueeze flatten (family Copy: views, they alias their input as reshape does)
    Slice, Gather, Expand, Split, Pad, Tile, Squeeze, Unsqueeze, Flatten,
    // norm: layer_norm and batch_norm (family Norm), gemm (family Matmul)
    LayerNorm, BatchNorm, Gemm,
    // conv area (family Conv): convolutions and pools over NCW / NCHW tensors
    Conv, ConvTranspose, MaxPool, AvgPool, GlobalAvgPool, GlobalMaxPool,
    // index ops (family Index, CPU only): top_k, the scatters that write
    // updates into a copy of their data at run-time indices, and the gather
    // that reads data at them element by element (ONNX TopK,
    // ScatterElements, ScatterND, GatherElements)
    TopK, ScatterElements, ScatterND, GatherElements,
    // not ops a user writes: a loop-carried value inside a repeat body (its value
    // at the start of each pass, and after the loop the final one), and the
    // stand-in for an expression that failed to parse (never executed).
    LoopParam, Invalid,
};

// The kernel family an op belongs to: each device has one kernel factory per
// family (engine/kernels/common/families.h), so adding an op to a family
// touches no device's dispatch.
enum class OpFamily : uint8_t {
    Creation,   // const zeros ones fill range random_uniform random_normal input
    Binary,     // elementwise with broadcasting
    Unary,      // elementwise
    Matmul,     // matmul gemm
    Transpose,
    Copy,       // reshape identity (the executor skips them when they alias)
    Cast,
    Concat,
    Reduce,     // reduce_sum reduce_max reduce_mean
    Softmax,    // softmax log_softmax
    Logic,      // comparisons (num -> bool), logical_and/or/xor/not (bool), where
    ArgReduce,  // argmax argmin (-> i64)
    Layout,     // slice gather expand split pad tile: elements moved, none computed
    Norm,       // layer_norm batch_norm
    Conv,       // conv conv_transpose max_pool avg_pool global_avg_pool global_max_pool
    Index,      // top_k scatter_elements scatter_nd gather_elements: elements chosen or placed by index
    None,       // loop_param, invalid: never a kernel
};

// Which dtypes an op accepts (SPEC: "num" = f32 f64 i32 i64, "float" = f32 f64, "all" = num and
// bool; "bool" only bool: the logical ops).
enum class DTypeClass : uint8_t { All, Num, Float, Bool };

// How an attribute's value is spelt and checked.
enum class AttrType : uint8_t {
    Int,      // integer number
    IntList,  // list of integers (a single integer is accepted where noted by allow_scalar)
    Number,   // any number (nan/inf included) or bool
    Bool,     // true/false
    DType,    // dtype name (identifier or string)
    Value,    // nested list or scalar literal (const's value)
    String,   // a word: identifier or string (gelu's approximate); the op checks the value
};

struct AttrSpec {
    const char* name;
    AttrType type;
    bool required;
    bool allow_scalar = false;  // IntList that also takes one integer (axes=1)
};

struct OpInfo {
    OpKind kind;
    const char* name;
    int min_inputs;
    int max_inputs;  // -1: any number (concat)
    DTypeClass dtypes;
    OpFamily family;
    // The GPU-support table: the GPU has a kernel for this op, for every dtype
    // of `dtypes` (gpu_runs). The CPU runs every op.
    bool gpu;
    bool creation;  // takes its leading attributes positionally
    std::vector<AttrSpec> attrs;
    std::vector<const char*> positional;  // creation ops: names of the positional attributes, in order
};

// Every user-visible op, in SPEC order.
const std::vector<OpInfo>& all_ops();
const OpInfo& op_info(OpKind k);
const char* op_name(OpKind k);
std::optional<OpKind> find_op(std::string_view name);
// The dtype of an op's result whatever its inputs' (comparisons and logical
// ops: bool; argmax/argmin: i64); nullopt when it follows the inputs.
std::optional<DType> fixed_result_dtype(OpKind k);
// Whether the GPU runs op on dtype (the node's, i.e. its result's dtype): the
// one answer placement, the GPU plugin and the docs give.
bool gpu_runs(OpKind op, DType dtype);
// Names of all user-visible ops (for did-you-mean).
std::vector<std::string> op_names();

// The attribute names that `count` positional arguments of a creation op stand for;
// nullopt when the op takes no more than that many. range(limit) and range(start, limit[, delta]).
std::optional<std::vector<std::string>> positional_attr_names(OpKind k, size_t count);

inline bool is_binary_elementwise(OpKind k) { return k >= OpKind::Add && k <= OpKind::Pow; }
inline bool is_unary_elementwise(OpKind k) {
    return (k >= OpKind::Neg && k <= OpKind::Cos) || (k >= OpKind::Floor && k <= OpKind::Gelu);
}
inline bool is_creation(OpKind k) { return k <= OpKind::Input; }
// Whether op runs on values of a storage type (f16, bf16, i8, u8) in that type:
// const, input, cast, loop_param and the ops that only move elements (families
// Copy, Transpose, Concat, Layout), whose kernels move bytes of any size. The
// rest compute in the compute type (engine/plan/storage_types.h).
bool runs_in_storage_type(OpKind op);
inline bool is_reduction(OpKind k) {
    return (k >= OpKind::ReduceSum && k <= OpKind::ReduceMean) || k == OpKind::ReduceMin ||
           k == OpKind::ReduceProd;
}
// equal not_equal less less_equal greater greater_equal: numbers in, bool out.
inline bool is_comparison(OpKind k) { return k >= OpKind::Equal && k <= OpKind::GreaterEqual; }
// Ops whose bare scalar literal operands are weak (take the other operand's
// dtype, SPEC section 3): the binary elementwise ops, the comparisons, and
// where's x and y.
inline bool takes_weak_literals(OpKind k) {
    return is_binary_elementwise(k) || is_comparison(k) || k == OpKind::Where;
}
// Ops whose output may share its input's buffer (SPEC section 4: an alias counts 0 bytes).
// squeeze, unsqueeze and flatten are reshapes to a shape their attributes give.
inline bool is_alias_op(OpKind k) {
    return k == OpKind::Reshape || k == OpKind::Identity || k == OpKind::Squeeze || k == OpKind::Unsqueeze ||
           k == OpKind::Flatten;
}

}  // namespace graphrun
