// Models written at ONNX opsets 18 to 21 (PyTorch 2.x's exporter, current
// converters), read through Debian's ONNX 1.12, whose checker and shape
// inference know opsets up to 17. Every op graphrun maps means the same at 17
// and at 21 for graphrun's dtypes except a few, which are rewritten here into
// their opset-17 form before ONNX's checker sees the model; graphrun's own
// checks (its op table, validation, shape checks) then apply as to any model.
// Internal to engine/frontend; built only with the ONNX library.
//
//   Reduce{Max,Min,Mean,Prod,L1,L2,LogSum,LogSumExp,SumSquare} (18): axes as
//       an input -> the `axes` attribute (a constant), noop_with_empty_axes
//       with no axes -> Identity
//   Split (18): num_outputs -> the equal split of opset 13
//   Pad (18): an axes input -> refused unless absent
//   Cast, CastLike (19): saturate (float8 only) dropped
//   AveragePool (19): dilations of 1 dropped (others refused)
//   Gelu (20), Mish (18): stand in as Tanh (same dtypes and shape), and
//       GroupNormalization (18, 21) as Clip (three inputs, input 0's type),
//       while ONNX checks the model; then mapped as themselves (restore_stand_ins)
#pragma once
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace graphrun::onnx_opset {

constexpr int64_t kLowered = 17;      // what ONNX 1.12 checks
constexpr int64_t kMaxModelOpset = 21;  // what graphrun reads

// A node that stands in as another op while ONNX checks the model.
struct StandIn {
    onnx::NodeProto* node = nullptr;
    std::string op_type;
    std::vector<onnx::AttributeProto> attributes;
};

struct Lowering {
    std::vector<std::string> problems;  // "node 'n' (Pad): ..." each, for the model's errors
    std::vector<StandIn> stand_ins;
};

// Rewrites the model, written at an opset from 18 to 21, into its opset-17
// form in place (its ai.onnx opset import and, from IR 9, its IR version too).
Lowering lower_to_17(onnx::ModelProto& model);

// Gives the stand-ins their own op back, once ONNX's checks have run.
void restore_stand_ins(Lowering& l);

}  // namespace graphrun::onnx_opset
