// A fused node's epilogue (engine/plan/fuse.h): the elementwise work that the
// fusion pass folded into a conv, matmul or gemm node, which its kernel applies
// to each output tile while the tile is still in cache, instead of a pass of
// its own over memory per op. Any kernel can read it; a kernel that cannot
// run an epilogue must decline the node (the GPU never sees one: only CPU
// nodes are fused).
//
// The fused node computes, per output element o at row-major index i:
//
//     y[i] = act( main[i] + bias[i mod n_last] + residual[i] )
//
// where `main` is the op's own result (a conv's result includes its own bias
// input, as before: a batch_norm folded into the conv changed its weights and
// that bias, not the epilogue), `bias` and `residual` are optional inputs of
// the node named by their input index, and `act` one activation with its
// parameters. Each term is rounded to the node's dtype as the unfused ops
// rounded it: main + bias, then + residual, then act.
//
// For oneDNN this is a post-op chain: bias is the primitive's bias (or a
// binary_add of a [1, n] tensor), residual a `sum` (or binary_add of the
// full tensor), act an `eltwise` (relu, clip, gelu_erf / gelu_tanh, tanh,
// logistic).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "engine/ir/ops.h"

namespace graphrun {

enum class Activation : uint8_t {
    None,
    Relu,      // max(x, 0)
    Clip,      // min(max(x, lo), hi) (ONNX Clip; mobilenet's relu6 is clip(0, 6))
    Gelu,      // x/2 · (1 + erf(x/√2))
    GeluTanh,  // gelu approximate="tanh"
    Tanh,
    Sigmoid,
};
const char* activation_name(Activation a);

// One node the fusion pass folded into another, as the user wrote it.
struct FusedOp {
    OpKind op = OpKind::Invalid;
    std::string name;  // its display name
};

// Attention as one node (fusion): the last matmul of
//
//     softmax(q @ k [· or / scale] [+ mask]) @ v
//
// with q, k, v (and a mask) as its inputs 0, 1, 2 (and 3), computed a slice
// of the batch at a time (engine/kernels/cpu/attention.cpp), so that the
// scores and probabilities, [..., Lq, Lk] each, are never whole tensors. The
// products are the matmul kernel's and the softmax is the softmax kernel's
// row, so the values are the unfused ops' bits.
struct Attention {
    enum class Scale : uint8_t { None, Multiply, Divide };
    bool on = false;
    bool qk_ta = false, qk_tb = false;  // the first matmul's transpose flags (the node's own attrs: the second's)
    Scale scale_op = Scale::None;
    double scale = 1;  // the scalar constant, exact in the node's dtype
    int8_t mask = -1;  // input index of the added mask, or -1
    // q, k, v (inputs 0, 1, 2) given as [..., L, H, D] where the matmuls read
    // [..., H, L, D]: the head split's transpose (axes r-3 and r-2 swapped)
    // taken in, each head's rows read H·D apart.
    bool heads[3] = {false, false, false};
    // The output written as [..., Lq, H, Dv], the head merge's transpose of
    // the [..., H, Lq, Dv] product taken in (the node has the merged shape).
    bool heads_out = false;
};

struct Epilogue {
    Attention attention;   // (a matmul) the attention it computes; when on, nothing below applies
    int8_t bias = -1;      // input index of a bias along the output's last axis (numel = its size), or -1
    int8_t residual = -1;  // input index of a tensor of the output's dtype and shape, or -1
    Activation act = Activation::None;
    double lo = -std::numeric_limits<double>::infinity();  // Clip's bounds, already in the node's dtype
    double hi = std::numeric_limits<double>::infinity();
    // Every node this one stands for, in program order: the op that became
    // this node first (a conv, matmul or gemm), the last one whose name and
    // output this node kept last.
    std::vector<FusedOp> fused;

    // How many of a node's `inputs` are its op's own: the epilogue's bias and
    // residual come after them (a conv without a bias has 2, then a residual).
    size_t own_inputs(size_t inputs) const {
        if (bias >= 0 && static_cast<size_t>(bias) < inputs) inputs = static_cast<size_t>(bias);
        if (residual >= 0 && static_cast<size_t>(residual) < inputs) inputs = static_cast<size_t>(residual);
        return inputs;
    }

    // The fused ops in order, "conv + batch_norm + add + relu", for listings.
    std::string describe() const;
};

}  // namespace graphrun
