// RNN, GRU and LSTM (issue 27 item 6), unrolled over the sequence into graphrun
// ops: the input projection of every step as one matmul per direction
// (X [seq·batch, input] @ Wᵀ + Wb + Rb), then per step the recurrent matmul
// H @ Rᵀ, the gates (split), their activations and the state update, as ONNX
// defines them. sequence_lens (constant or fed) masks the steps past each
// batch entry's length: the state is carried through them and Y is 0 there,
// in both directions. The sequence length must be static; a long sequence
// makes a long graph (about 15 nodes per step and direction).
#include <optional>
#include <string>
#include <vector>

#include "engine/frontend/onnx_importer.h"

namespace graphrun::onnx_import {

namespace {

constexpr int64_t kMaxSteps = 4096;  // steps × directions unrolled

class Recurrent {
  public:
    Recurrent(Importer& im, const onnx::NodeProto& n) : im_(im), n_(n) {}

    void build() {
        const std::string& op = n_.op_type();
        gates_ = op == "LSTM" ? 4 : op == "GRU" ? 3 : 1;
        if (!read_shapes()) return;
        if (!read_activations()) return;
        if (attr_int(n_, "input_forget", 0) != 0) return im_.fail(n_, "input_forget=1 is not supported");
        if (const auto* a = find_attr(n_, "clip")) clip_ = a->f();
        auto ins = inputs();
        if (!ins) return;
        std::vector<NodeId> ys, hs, cs;
        for (int64_t d = 0; d < dirs_; ++d) {
            if (!direction(d, *ins, ys, hs, cs)) return;
        }
        // Y [seq, dirs, batch, hidden] (layout 1: [batch, seq, dirs, hidden]);
        // Y_h and Y_c [dirs, batch, hidden] (layout 1: [batch, dirs, hidden]).
        auto stack = [&](const std::vector<NodeId>& v, int64_t axis) {
            std::vector<NodeId> u;
            for (NodeId x : v) u.push_back(unsqueeze(x, axis));
            return u.size() == 1 ? u[0] : im_.add(OpKind::Concat, u, {im_.named("axis", Attr::integer(axis))});
        };
        if (n_.output_size() > 0 && !n_.output(0).empty()) {
            NodeId y = stack(ys, 1);
            if (layout_) y = transpose(y, {2, 0, 1, 3});
            im_.bind(n_.output(0), y);
        }
        for (int k = 1; k <= 2 && k < n_.output_size(); ++k) {
            if (n_.output(k).empty()) continue;
            NodeId s = stack(k == 1 ? hs : cs, 0);
            if (layout_) s = transpose(s, {1, 0, 2});
            im_.bind(n_.output(k), s);
        }
    }

  private:
    struct Inputs {
        NodeId x = -1, w = -1, r = -1, b = -1, lens = -1, h0 = -1, c0 = -1, p = -1;
    };

    bool read_shapes() {
        auto xs = im_.static_shape(n_.input(0));
        auto rs = n_.input_size() > 2 ? im_.static_shape(n_.input(2)) : std::nullopt;
        if (!xs || xs->size() != 3) return fail("its input X must have a static shape of rank 3");
        if (!rs || rs->size() != 3) return fail("its input R must have a static shape [directions, gates·hidden, hidden]");
        layout_ = attr_int(n_, "layout", 0) != 0;
        seq_ = (*xs)[layout_ ? 1 : 0];
        batch_ = (*xs)[layout_ ? 0 : 1];
        input_ = (*xs)[2];
        hidden_ = attr_int(n_, "hidden_size", (*rs)[2]);
        std::string dir = "forward";
        if (const auto* a = find_attr(n_, "direction")) dir = a->s();
        if (dir != "forward" && dir != "reverse" && dir != "bidirectional")
            return fail("direction must be forward, reverse or bidirectional, not '" + dir + "'");
        reverse_ = dir == "reverse";
        dirs_ = dir == "bidirectional" ? 2 : 1;
        if ((*rs)[0] != dirs_ || (*rs)[1] != gates_ * hidden_ || (*rs)[2] != hidden_)
            return fail("its R is " + shape_string(*rs) + ", not [" + std::to_string(dirs_) + ", " +
                        std::to_string(gates_ * hidden_) + ", " + std::to_string(hidden_) + "]");
        if (seq_ < 1 || seq_ * dirs_ > kMaxSteps)
            return fail("its sequence length " + std::to_string(seq_) + " must be between 1 and " +
                        std::to_string(kMaxSteps / dirs_) + " (graphrun unrolls the steps)");
        dtype_ = dtype_of_value(im_, n_.input(0));
        return true;
    }

    // activations: f (gates), g (cell), h (LSTM's output) per direction;
    // ONNX's defaults Sigmoid, Tanh, Tanh (RNN: Tanh).
    bool read_activations() {
        std::vector<std::string> defaults = gates_ == 4   ? std::vector<std::string>{"Sigmoid", "Tanh", "Tanh"}
                                            : gates_ == 3 ? std::vector<std::string>{"Sigmoid", "Tanh"}
                                                          : std::vector<std::string>{"Tanh"};
        const size_t per = defaults.size();
        if (const auto* a = find_attr(n_, "activations"); a && a->strings_size() > 0) {
            if (static_cast<size_t>(a->strings_size()) != per * static_cast<size_t>(dirs_))
                return fail("it has " + std::to_string(a->strings_size()) + " activations, not " +
                            std::to_string(per * static_cast<size_t>(dirs_)));
            for (const auto& s : a->strings()) acts_.push_back(s);
        } else {
            for (int64_t d = 0; d < dirs_; ++d) acts_.insert(acts_.end(), defaults.begin(), defaults.end());
        }
        const auto* al = find_attr(n_, "activation_alpha");
        const auto* be = find_attr(n_, "activation_beta");
        for (size_t i = 0; i < acts_.size(); ++i) {
            const std::string& s = acts_[i];
            if (s != "Sigmoid" && s != "Tanh" && s != "Relu" && s != "LeakyRelu" && s != "HardSigmoid" &&
                s != "Softplus")
                return fail("its activation " + s +
                            " is not supported (Sigmoid, Tanh, Relu, LeakyRelu, HardSigmoid, Softplus are)");
            const float da = s == "LeakyRelu" ? 0.01f : 0.2f, db = 0.5f;
            alpha_.push_back(al && static_cast<int>(i) < al->floats_size() ? al->floats(static_cast<int>(i)) : da);
            beta_.push_back(be && static_cast<int>(i) < be->floats_size() ? be->floats(static_cast<int>(i)) : db);
        }
        return true;
    }

    std::optional<Inputs> inputs() {
        Inputs in;
        auto get = [&](int i, NodeId& out) {
            if (i >= n_.input_size() || n_.input(i).empty()) return true;
            auto id = im_.node_of(n_.input(i));
            if (!id) return false;
            out = *id;
            return true;
        };
        if (!get(0, in.x) || !get(1, in.w) || !get(2, in.r) || !get(3, in.b) || !get(4, in.lens) || !get(5, in.h0) ||
            !get(6, in.c0) || !get(7, in.p))
            return std::nullopt;
        if (in.w < 0 || in.r < 0) {
            fail("it needs its inputs X, W and R");
            return std::nullopt;
        }
        if (gates_ != 4) in.c0 = in.p = -1;
        if (layout_) {  // to [seq, batch, ...]
            in.x = transpose(in.x, {1, 0, 2});
            if (in.h0 >= 0) in.h0 = transpose(in.h0, {1, 0, 2});
            if (in.c0 >= 0) in.c0 = transpose(in.c0, {1, 0, 2});
        }
        return in;
    }

    // One direction: appends its Y [seq, batch, hidden], last H and last C.
    bool direction(int64_t d, const Inputs& in, std::vector<NodeId>& ys, std::vector<NodeId>& hs,
                   std::vector<NodeId>& cs) {
        const int64_t gh = gates_ * hidden_;
        const NodeId w = reshape(slice(in.w, 0, d, d + 1), {gh, input_});
        const NodeId r = reshape(slice(in.r, 0, d, d + 1), {gh, hidden_});
        NodeId wb = -1, rb = -1;
        if (in.b >= 0) {
            const NodeId b = reshape(slice(in.b, 0, d, d + 1), {2 * gh});
            wb = slice(b, 0, 0, gh);
            rb = slice(b, 0, gh, 2 * gh);
        }
        const bool lbr = gates_ == 3 && attr_int(n_, "linear_before_reset", 0) != 0;
        // X @ Wᵀ + Wb (+ Rb, but for GRU's h gate, whose Rb goes with R) for every step at once.
        NodeId xw = matmul(reshape(in.x, {seq_ * batch_, input_}), w);
        if (wb >= 0) xw = add(xw, wb);
        NodeId rb_zr = -1, rb_h = -1, r_zr = -1, r_h = -1;
        if (gates_ == 3) {
            r_zr = slice(r, 0, 0, 2 * hidden_);
            r_h = slice(r, 0, 2 * hidden_, gh);
            if (rb >= 0) {
                rb_zr = slice(rb, 0, 0, 2 * hidden_);
                rb_h = slice(rb, 0, 2 * hidden_, gh);
            }
        } else if (rb >= 0) {
            xw = add(xw, rb);
        }
        xw = reshape(xw, {seq_, batch_, gh});
        const Shape state{batch_, hidden_};
        NodeId h = in.h0 >= 0 ? reshape(slice(in.h0, 0, d, d + 1), state) : zeros(state);
        NodeId c = -1;
        if (gates_ == 4) c = in.c0 >= 0 ? reshape(slice(in.c0, 0, d, d + 1), state) : zeros(state);
        NodeId pi = -1, po = -1, pf = -1;
        if (in.p >= 0) {
            const NodeId p = reshape(slice(in.p, 0, d, d + 1), {3 * hidden_});
            pi = slice(p, 0, 0, hidden_);
            po = slice(p, 0, hidden_, 2 * hidden_);
            pf = slice(p, 0, 2 * hidden_, 3 * hidden_);
        }
        const size_t a0 = static_cast<size_t>(d) * (acts_.size() / static_cast<size_t>(dirs_));
        auto f = [&](size_t k, NodeId x) { return activate(a0 + k, x); };
        const bool back = reverse_ || d == 1;
        NodeId zero_y = in.lens >= 0 ? zeros(state) : -1;
        std::vector<NodeId> y(static_cast<size_t>(seq_));
        for (int64_t s = 0; s < seq_; ++s) {
            const int64_t t = back ? seq_ - 1 - s : s;
            const NodeId xt = reshape(slice(xw, 0, t, t + 1), {batch_, gh});
            NodeId h_new = -1, c_new = -1;
            if (gates_ == 1) {
                h_new = f(0, clipped(add(xt, matmul(h, r))));
            } else if (gates_ == 4) {
                const NodeId g = add(xt, matmul(h, r));  // i, o, f, c
                NodeId gi = part(g, 0), go = part(g, 1), gf = part(g, 2), gc = part(g, 3);
                if (pi >= 0) {
                    gi = add(gi, mul(pi, c));
                    gf = add(gf, mul(pf, c));
                }
                const NodeId i = f(0, clipped(gi)), fg = f(0, clipped(gf)), cc = f(1, clipped(gc));
                c_new = add(mul(fg, c), mul(i, cc));
                if (po >= 0) go = add(go, mul(po, c_new));
                h_new = mul(f(0, clipped(go)), f(2, c_new));
            } else {
                NodeId hzr = matmul(h, r_zr);
                if (rb_zr >= 0) hzr = add(hzr, rb_zr);
                const NodeId xz = part(xt, 0), xr = part(xt, 1), xh = part(xt, 2);
                const NodeId z = f(0, clipped(add(xz, split2(hzr, 0))));
                const NodeId rr = f(0, clipped(add(xr, split2(hzr, 1))));
                NodeId hh;
                if (lbr) {
                    NodeId hr = matmul(h, r_h);
                    if (rb_h >= 0) hr = add(hr, rb_h);
                    hh = add(xh, mul(rr, hr));
                } else {
                    hh = add(xh, matmul(mul(rr, h), r_h));
                    if (rb_h >= 0) hh = add(hh, rb_h);
                }
                hh = f(1, clipped(hh));
                h_new = add(hh, mul(z, im_.add(OpKind::Sub, {h, hh})));  // (1 - z)·hh + z·h
            }
            if (in.lens >= 0) {  // steps past an entry's length: state kept, Y zero
                const NodeId valid = unsqueeze(im_.add("less", {im_.scalar(static_cast<double>(t), DType::I32), lens_i32(in.lens)}), 1);
                y[static_cast<size_t>(t)] = im_.add("where", {valid, h_new, zero_y});
                h = im_.add("where", {valid, h_new, h});
                if (c_new >= 0) c = im_.add("where", {valid, c_new, c});
            } else {
                y[static_cast<size_t>(t)] = h = h_new;
                if (c_new >= 0) c = c_new;
            }
        }
        std::vector<NodeId> rows;
        for (NodeId v : y) rows.push_back(unsqueeze(v, 0));
        ys.push_back(rows.size() == 1 ? rows[0] : im_.add(OpKind::Concat, rows, {im_.named("axis", Attr::integer(0))}));
        hs.push_back(h);
        cs.push_back(c);
        return true;
    }

    NodeId lens_i32(NodeId lens) {
        if (lens_ < 0) lens_ = im_.add(OpKind::Cast, {lens}, {im_.named("dtype", Attr::ident("i32"))});
        return lens_;
    }

    NodeId activate(size_t k, NodeId x) {
        const std::string& s = acts_[k];
        if (s == "Sigmoid") return im_.add("sigmoid", {x});
        if (s == "Tanh") return im_.add("tanh", {x});
        if (s == "Relu") return im_.add("relu", {x});
        if (s == "Softplus") return im_.add("softplus", {x});
        if (s == "LeakyRelu") return im_.add("leaky_relu", {x}, {im_.named("alpha", Attr::number(alpha_[k]))});
        // HardSigmoid: max(0, min(1, alpha·x + beta))
        const NodeId lin = add(mul(x, im_.scalar(alpha_[k], dtype_)), im_.scalar(beta_[k], dtype_));
        return im_.add("clip", {lin}, {im_.named("min", Attr::number(0)), im_.named("max", Attr::number(1))});
    }

    NodeId clipped(NodeId x) {
        if (!clip_) return x;
        return im_.add("clip", {x}, {im_.named("min", Attr::number(-*clip_)), im_.named("max", Attr::number(*clip_))});
    }

    NodeId slice(NodeId x, int64_t axis, int64_t b, int64_t e) {
        return im_.add(OpKind::Slice, {x}, {im_.named("starts", int_list({b})), im_.named("ends", int_list({e})),
                                            im_.named("axes", int_list({axis}))});
    }
    NodeId reshape(NodeId x, const Shape& s) { return im_.add(OpKind::Reshape, {x}, {im_.named("shape", int_list(s))}); }
    NodeId unsqueeze(NodeId x, int64_t axis) {
        return im_.add(OpKind::Unsqueeze, {x}, {im_.named("axes", int_list({axis}))});
    }
    NodeId transpose(NodeId x, const std::vector<int64_t>& perm) {
        return im_.add(OpKind::Transpose, {x}, {im_.named("perm", int_list(perm))});
    }
    NodeId matmul(NodeId a, NodeId b) {  // a @ bᵀ
        return im_.add(OpKind::Matmul, {a, b}, {im_.named("transpose_b", Attr::boolean(true))});
    }
    NodeId add(NodeId a, NodeId b) { return im_.add(OpKind::Add, {a, b}); }
    NodeId mul(NodeId a, NodeId b) { return im_.add(OpKind::Mul, {a, b}); }
    NodeId zeros(const Shape& s) {
        return im_.add(OpKind::Zeros, {}, {im_.named("shape", int_list(s)), im_.named("dtype", Attr::ident(dtype_name(dtype_)))});
    }
    // Gate k of a [batch, gates·hidden] value.
    NodeId part(NodeId x, int64_t k) { return parts(x, k, gates_); }
    NodeId split2(NodeId x, int64_t k) { return parts(x, k, 2); }
    NodeId parts(NodeId x, int64_t k, int64_t n) {
        return im_.add(OpKind::Split, {x}, {im_.named("index", Attr::integer(k)), im_.named("axis", Attr::integer(1)),
                                            im_.named("parts", Attr::integer(n))});
    }

    bool fail(const std::string& what) {
        im_.fail(n_, what);
        return false;
    }

    Importer& im_;
    const onnx::NodeProto& n_;
    int64_t gates_ = 1, seq_ = 0, batch_ = 0, input_ = 0, hidden_ = 0, dirs_ = 1;
    bool layout_ = false, reverse_ = false;
    DType dtype_ = DType::F32;
    std::vector<std::string> acts_;
    std::vector<float> alpha_, beta_;
    std::optional<float> clip_;
    NodeId lens_ = -1;
};

void recurrent(Importer& im, const onnx::NodeProto& n) { Recurrent(im, n).build(); }

}  // namespace

void add_rnn_onnx_ops(OnnxOpTable& t) {
    for (const char* op : {"RNN", "GRU", "LSTM"}) t[op] = {"matmul", recurrent};
}

}  // namespace graphrun::onnx_import
