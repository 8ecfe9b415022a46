// The op set of SPEC section 3: one table that the front ends, validation,
// the writers and (later) the executors read. Adding an op starts here.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace graphrun {

enum class OpKind : uint8_t {
    // creation
    Const, Zeros, Ones, Fill, Range, RandomUniform, RandomNormal,
    // elementwise binary
    Add, Sub, Mul, Div, Maximum, Minimum, Pow,
    // elementwise unary
    Neg, Abs, Square, Relu, Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid, Sin, Cos,
    // the rest
    Matmul, Transpose, Reshape, Cast, Identity, Concat, ReduceSum, ReduceMax, ReduceMean, Softmax,
    // not ops a user writes: a loop-carried value inside a repeat body (its value
    // at the start of each pass, and after the loop the final one), and the
    // stand-in for an expression that failed to parse (never executed).
    LoopParam, Invalid,
};

// Which dtypes an op accepts (SPEC: "num" = f32 f64 i32 i64, "float" = f32 f64, "all" = num and bool).
enum class DTypeClass : uint8_t { All, Num, Float };

// How an attribute's value is spelt and checked.
enum class AttrType : uint8_t {
    Int,      // integer number
    IntList,  // list of integers (a single integer is accepted where noted by allow_scalar)
    Number,   // any number (nan/inf included) or bool
    Bool,     // true/false
    DType,    // dtype name (identifier or string)
    Value,    // nested list or scalar literal (const's value)
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
    bool gpu;       // has a GPU kernel (marked G in SPEC section 3)
    bool creation;  // takes its leading attributes positionally
    std::vector<AttrSpec> attrs;
    std::vector<const char*> positional;  // creation ops: names of the positional attributes, in order
};

// Every user-visible op, in SPEC order.
const std::vector<OpInfo>& all_ops();
const OpInfo& op_info(OpKind k);
const char* op_name(OpKind k);
std::optional<OpKind> find_op(std::string_view name);
// Names of all user-visible ops (for did-you-mean).
std::vector<std::string> op_names();

// The attribute names that `count` positional arguments of a creation op stand for;
// nullopt when the op takes no more than that many. range(limit) and range(start, limit[, delta]).
std::optional<std::vector<std::string>> positional_attr_names(OpKind k, size_t count);

inline bool is_binary_elementwise(OpKind k) { return k >= OpKind::Add && k <= OpKind::Pow; }
inline bool is_unary_elementwise(OpKind k) { return k >= OpKind::Neg && k <= OpKind::Cos; }
inline bool is_creation(OpKind k) { return k <= OpKind::RandomNormal; }
inline bool is_reduction(OpKind k) { return k >= OpKind::ReduceSum && k <= OpKind::ReduceMean; }
// Ops whose output may share its input's buffer (SPEC section 4: an alias counts 0 bytes).
inline bool is_alias_op(OpKind k) { return k == OpKind::Reshape || k == OpKind::Identity; }

}  // namespace graphrun
