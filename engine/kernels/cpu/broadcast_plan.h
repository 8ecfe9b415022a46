// The CPU's walk over a broadcast of two operands (elementwise.cpp's binary
// ops, logic.cpp's comparisons and logical ops): runs of output elements,
// each in one row of the innermost merged dimension.
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "engine/kernels/common/kernel_common.h"

namespace graphrun::kernels {

// The broadcast of two operands onto the output, with dimensions of size 1
// dropped and neighbours that stay contiguous in all three merged: equal
// shapes become one contiguous run, a scalar operand a run with stride 0.
struct BroadcastPlan {
    int64_t inner = 1;                   // length of the innermost merged dimension
    int64_t inner_sa = 0, inner_sb = 0;  // its strides in a and b: 0 or 1
    int outer_rank = 0;                  // the other merged dimensions, innermost first
    // Their sizes and strides in a and b, dimension d at [3d, 3d + 2]: held
    // on the heap only where there are any (operands of different shapes), so
    // that a kernel of equal shapes is small (a graph may have a million).
    std::vector<int64_t> outer;
    int64_t outer_size(int d) const { return outer[static_cast<size_t>(3 * d)]; }
    int64_t outer_sa(int d) const { return outer[static_cast<size_t>(3 * d + 1)]; }
    int64_t outer_sb(int d) const { return outer[static_cast<size_t>(3 * d + 2)]; }
    bool ok = true;
};

inline BroadcastPlan make_plan(const Shape& a, const Shape& b, const Shape& out) {
    const std::vector<BroadcastDim> dims = broadcast_dims(a, b, out);
    BroadcastPlan p;
    if (dims.size() > static_cast<size_t>(kMaxDims) + 1) {
        p.ok = false;
        return p;
    }
    if (!dims.empty()) {
        p.inner = dims[0].size;
        p.inner_sa = dims[0].sa;
        p.inner_sb = dims[0].sb;
        p.outer.reserve(3 * (dims.size() - 1));
        for (size_t k = 1; k < dims.size(); ++k) {
            p.outer.push_back(dims[k].size);
            p.outer.push_back(dims[k].sa);
            p.outer.push_back(dims[k].sb);
        }
        p.outer_rank = static_cast<int>(dims.size()) - 1;
    }
    return p;
}

// Calls f(out_offset, a_offset, b_offset, len) for the runs of output
// elements [begin, end): each run lies in one row of the innermost dimension.
template <class F>
inline void for_each_run(const BroadcastPlan& p, int64_t begin, int64_t end, F f) {
    if (begin >= end) return;
    if (p.outer_rank == 0) {  // one run: equal shapes, or a scalar operand
        f(begin, begin * p.inner_sa, begin * p.inner_sb, end - begin);
        return;
    }
    const int64_t inner = p.inner;
    int64_t col = begin % inner;
    int64_t rest = begin / inner;
    std::array<int64_t, kMaxDims> idx;  // [0, outer_rank) set below
    int64_t oa = 0, ob = 0;
    const int64_t* outer = p.outer.data();  // size, sa, sb per dimension
    for (int d = 0; d < p.outer_rank; ++d) {
        idx[d] = rest % outer[3 * d];
        rest /= outer[3 * d];
        oa += idx[d] * outer[3 * d + 1];
        ob += idx[d] * outer[3 * d + 2];
    }
    int64_t pos = begin;
    for (;;) {
        const int64_t len = std::min(inner - col, end - pos);
        f(pos, oa + col * p.inner_sa, ob + col * p.inner_sb, len);
        pos += len;
        if (pos >= end) return;
        col = 0;
        for (int d = 0; d < p.outer_rank; ++d) {
            oa += outer[3 * d + 1];
            ob += outer[3 * d + 2];
            if (++idx[d] < outer[3 * d]) break;
            oa -= outer[3 * d] * outer[3 * d + 1];
            ob -= outer[3 * d] * outer[3 * d + 2];
            idx[d] = 0;
        }
    }
}

// One run of a broadcast binary op: both operands contiguous (va, vb), or one
// of them (or both) a repeated element. The output type O is T for the
// arithmetic ops and uint8_t (bool) for the comparisons.
template <class Op, class T, class O = T>
void binary_run(O* __restrict o, const T* __restrict a, const T* __restrict b, int64_t n, bool va, bool vb) {
    if (va && vb) {
        blocked_loop(n, [=](int64_t i) { o[i] = Op::apply(a[i], b[i]); });
    } else if (vb) {
        const T x = a[0];
        blocked_loop(n, [=](int64_t i) { o[i] = Op::apply(x, b[i]); });
    } else if (va) {
        const T y = b[0];
        blocked_loop(n, [=](int64_t i) { o[i] = Op::apply(a[i], y); });
    } else {
        const O v = Op::apply(a[0], b[0]);
        blocked_loop(n, [=](int64_t i) { o[i] = v; });
    }
}

}  // namespace graphrun::kernels
