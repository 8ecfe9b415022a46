// What validate.cpp and the per-op inference files (infer_*.cpp) share: the
// checks of one node, its typed attribute accessors and literal encoding.
// Internal to validation; nothing outside engine/validate.cpp and
// engine/check/infer_*.cpp includes it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/ir/dtype.h"
#include "engine/ir/graph.h"
#include "engine/ir/ops.h"

namespace graphrun::infer {

// One scalar of a literal as written: a number or a bool.
struct Scalar {
    bool is_bool = false;
    bool b = false;
    bool is_int = false;  // number written as an integer
    int64_t i = 0;
    double f = 0;               // always set for numbers
    const Attr* src = nullptr;  // where it is written
};

// A number as a message shows it: 3, 2.5, 1e+300, nan, -inf.
std::string number_text(double v);
std::string scalar_text(const Scalar& s);
// An attribute value as a message shows it (long lists abbreviated).
std::string attr_text(const Attr& a);
// "[1,2,3]"
std::string ints_text(const std::vector<int64_t>& v);

bool in_class(DType t, DTypeClass c);
// "f32 or f64", "f32, f64, i32 or i64", ...
const char* class_text(DTypeClass c);
// The dtype a cast(x, dtype=...) hint proposes for a value of type `t` that must be in `c`.
DType cast_target(DType t, DTypeClass c);

// A Number/Bool attribute (or "nan"/"inf"/"-inf" strings) as a Scalar.
std::optional<Scalar> to_scalar(const Attr& a);
// Why `s` cannot be stored as `t` ("it is not an integer"), or "" when it can.
std::string conversion_problem(const Scalar& s, DType t);
// Appends the bytes of `s` as `t` (conversion_problem must be "").
void encode_scalar(const Scalar& s, DType t, std::vector<uint8_t>& out);

// The checks of one node: its inputs, its attributes (after check_attrs), and
// error reporting with the node named.
class NodeCheck {
  public:
    NodeCheck(Graph& g, Diagnostics& diag, NodeId id);

    Graph& graph;
    Diagnostics& diag;
    Node& node;
    const OpInfo& info;

    // "c: matmul: " — names the node (unless its name was generated) and the op.
    std::string prefix() const;
    // Reports `msg` with the prefix at the first known of `loc`, the node's loc.
    void error(const Loc& loc, const std::string& msg);

    size_t arity() const { return node.inputs.size(); }
    Node& input(size_t i) { return graph.node(node.inputs[i].id); }
    const Loc& input_loc(size_t i) const;
    // The operand as the user wrote it, for code in hints (`use cast(p, ...)`):
    // its display name (`p`, `x#2`, or the generated `add_1` that `check`
    // lists), or the text of a literal written in place (`[1, 2]`, `2.5`).
    std::string role(size_t i);
    // The operand in a sentence: its display name, or "the literal [1, 2]".
    std::string operand_name(size_t i);
    // "p is f32[2,3]", "the literal 2.5 is f32[]"
    std::string operand_text(size_t i);
    // "the literal 2.5" for a literal node (its value's text, shortened).
    static std::string literal_text(const Node& lit);
    // Checks input i's dtype against the op's class; reports with a cast hint.
    bool check_input_class(size_t i);
    // Checks that a result shape has at most kMaxElements elements.
    bool check_result_size(const Shape& s);

    // Names, duplicates, required attributes and value types. Reports every problem.
    bool check_attrs();

    // Typed access to attributes already checked by check_attrs().
    const NamedAttr* attr(std::string_view name) const { return node.find_attr(name); }
    // Where an attribute's value is written (falls back to its name, then the node).
    const Loc& attr_loc(std::string_view name) const;
    int64_t int_attr(std::string_view name, int64_t def) const;
    bool bool_attr(std::string_view name, bool def) const;
    std::optional<Scalar> scalar_attr(std::string_view name) const;
    std::optional<std::vector<int64_t>> ints_attr(std::string_view name) const;
    std::optional<DType> dtype_attr() const;

    // A creation op's `shape` attribute as a tensor shape: non-negative, rank
    // <= kMaxRank, at most kMaxElements elements. Reports and returns nullopt otherwise.
    std::optional<Shape> creation_shape(std::string_view name);
    // `dtype` (or `def`), which must be in the op's class.
    std::optional<DType> creation_dtype(DType def);

  private:
    bool check_attr_value(const AttrSpec& spec, const NamedAttr& a);
};

// Per-op inference: each sets node.dtype and node.shape (and for const, the
// literal) and returns whether the node is valid, reporting every problem.
bool infer_const(NodeCheck& c);
bool infer_zeros_ones(NodeCheck& c);
bool infer_fill(NodeCheck& c);
bool infer_range(NodeCheck& c);
bool infer_random(NodeCheck& c);

bool infer_binary(NodeCheck& c);
bool infer_unary(NodeCheck& c);
bool infer_matmul(NodeCheck& c);
bool infer_transpose(NodeCheck& c);
bool infer_reshape(NodeCheck& c);
bool infer_cast_identity(NodeCheck& c);
bool infer_concat(NodeCheck& c);
bool infer_reduce(NodeCheck& c);
bool infer_softmax(NodeCheck& c);  // softmax, log_softmax
// infer_ops_ext.cpp: the ops beyond SPEC section 3 (README "Ops beyond SPEC section 3").
bool infer_logic(NodeCheck& c);       // comparisons, logical_and/or/xor/not
bool infer_where(NodeCheck& c);
bool infer_activation(NodeCheck& c);  // the unary ops from floor to gelu (attributes)
bool infer_arg_reduce(NodeCheck& c);  // argmax, argmin
// infer_shape.cpp: the shape ops (slice gather expand split pad tile squeeze unsqueeze flatten).
bool infer_slice(NodeCheck& c);
bool infer_gather(NodeCheck& c);
bool infer_expand(NodeCheck& c);
bool infer_split(NodeCheck& c);
bool infer_pad(NodeCheck& c);
bool infer_tile(NodeCheck& c);
bool infer_squeeze(NodeCheck& c);
bool infer_unsqueeze(NodeCheck& c);
bool infer_flatten(NodeCheck& c);
// infer_norm.cpp: layer_norm, batch_norm (inference), gemm.
bool infer_layer_norm(NodeCheck& c);
bool infer_batch_norm(NodeCheck& c);
bool infer_gemm(NodeCheck& c);
// infer_conv.cpp: conv, conv_transpose, max_pool, avg_pool, global_avg_pool, global_max_pool
bool infer_conv_area(NodeCheck& c);
// infer_index.cpp
bool infer_top_k(NodeCheck& c);
bool infer_scatter(NodeCheck& c);  // scatter_elements, scatter_nd
bool infer_gather_elements(NodeCheck& c);
// Input k of an op that takes indices: i32 or i64 (a float literal written
// in place becomes i64, as gather's does); reports with a cast hint.
bool check_index_operand(NodeCheck& c, size_t k);

// infer_ops.cpp, for infer_ops_ext.cpp: NumPy broadcasting of two shapes (on
// failure, the clashing dimensions), and two operands made one dtype as a
// binary op's are (weak literals retyped, the op's class checked).
std::optional<Shape> broadcast_shapes(const Shape& a, const Shape& b, int64_t& da, int64_t& db);
bool unify_operands(NodeCheck& c, size_t ia, size_t ib);

// Re-encodes a weak scalar const as `t`; returns the conversion problem, or "".
std::string retype_weak_literal(Node& weak, DType t);

}  // namespace graphrun::infer
