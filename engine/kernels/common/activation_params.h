// The attributes of a unary op beyond SPEC section 3 (clip's bounds,
// leaky_relu/elu/selu's alpha and gamma, gelu's approximate) as both
// devices' kernels take them (activation_ops.h's UnaryParams), with ONNX's
// defaults. Host code.
#pragma once
#include <limits>
#include <string_view>
#include <type_traits>

#include "engine/kernels/common/activation_ops.h"
#include "engine/kernels/common/kernel_common.h"

namespace graphrun::kernels {

// A number attribute as T (validation checked that it is one of T), or def.
template <class T>
T number_attr_or(const Node& n, std::string_view name, T def) {
    auto s = scalar_attr(n, name);
    if (!s) return def;
    if constexpr (std::is_floating_point_v<T>)
        return s->is_int ? static_cast<T>(s->i) : static_cast<T>(s->f);
    else
        return static_cast<T>(s->as_int());
}

template <class T, class W>
UnaryParams<T, W> unary_params(const Node& n) {
    using L = std::numeric_limits<T>;
    UnaryParams<T, W> p;
    p.lo = number_attr_or<T>(n, "min", L::has_infinity ? -L::infinity() : L::lowest());
    p.hi = number_attr_or<T>(n, "max", L::has_infinity ? L::infinity() : L::max());
    const double alpha = n.op == OpKind::LeakyRelu ? 0.01
                         : n.op == OpKind::Selu    ? 1.6732632423543772848170429916717
                                                   : 1.0;
    // An attribute is a value of the op's dtype (ONNX's are float attributes
    // applied in the tensor's type): alpha of an f32 op is f32(alpha).
    p.alpha = static_cast<W>(number_attr_or<T>(n, "alpha", static_cast<T>(alpha)));
    p.gamma = static_cast<W>(number_attr_or<T>(n, "gamma", static_cast<T>(1.0507009873554804934193349852946)));
    if (const NamedAttr* a = n.find_attr("approximate")) p.tanh = a->value.s == "tanh";
    return p;
}

}  // namespace graphrun::kernels
