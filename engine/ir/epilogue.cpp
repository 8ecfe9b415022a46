// Names for a fused node's epilogue (engine/ir/epilogue.h), as listings show it.
#include "engine/ir/epilogue.h"

namespace graphrun {

const char* activation_name(Activation a) {
    switch (a) {
        case Activation::None: return "none";
        case Activation::Relu: return "relu";
        case Activation::Clip: return "clip";
        case Activation::Gelu: return "gelu";
        case Activation::GeluTanh: return "gelu_tanh";
        case Activation::Tanh: return "tanh";
        case Activation::Sigmoid: return "sigmoid";
    }
    return "none";
}

std::string Epilogue::describe() const {
    std::string s;
    for (const FusedOp& f : fused) {
        if (!s.empty()) s += " + ";
        s += op_name(f.op);
    }
    return s;
}

}  // namespace graphrun
