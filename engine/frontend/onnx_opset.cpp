// Opsets 18 to 21 in their opset-17 form (onnx_opset.h).
#include "engine/frontend/onnx_opset.h"

#include <algorithm>
#include <set>

#include "engine/frontend/onnx_fold.h"

namespace graphrun::onnx_opset {

namespace {

bool onnx_domain(const onnx::NodeProto& n) { return n.domain().empty() || n.domain() == "ai.onnx"; }

std::string node_label(const onnx::NodeProto& n, int k) {
    return "node '" + (n.name().empty() ? "#" + std::to_string(k) : n.name()) + "' (" + n.op_type() + ")";
}

void drop_attribute(onnx::NodeProto& n, const std::string& name) {
    auto* attrs = n.mutable_attribute();
    for (int i = 0; i < attrs->size(); ++i)
        if (attrs->Get(i).name() == name) {
            attrs->DeleteSubrange(i, 1);
            return;
        }
}

const onnx::AttributeProto* attribute(const onnx::NodeProto& n, const std::string& name) {
    for (const auto& a : n.attribute())
        if (a.name() == name) return &a;
    return nullptr;
}

// Drops inputs from `keep` on (and the empty names an optional input leaves).
void keep_inputs(onnx::NodeProto& n, int keep) {
    while (n.input_size() > keep) n.mutable_input()->RemoveLast();
}

class Lowerer {
  public:
    Lowerer(const onnx::ModelProto& m, Lowering& out) : out_(out) {
        const auto& g = m.graph();
        for (const auto& t : g.initializer()) constants_[t.name()] = &t;
        for (const auto& n : g.node())
            if (n.op_type() == "Constant" && onnx_domain(n) && n.output_size() == 1)
                if (const auto* a = attribute(n, "value"); a && a->has_t()) constants_[n.output(0)] = &a->t();
    }

    void graph(onnx::GraphProto& g) {
        for (int k = 0; k < g.node_size(); ++k) {
            onnx::NodeProto& n = *g.mutable_node(k);
            if (onnx_domain(n)) node(n, k);
            for (auto& a : *n.mutable_attribute()) {
                if (a.has_g()) graph(*a.mutable_g());
                for (auto& sub : *a.mutable_graphs()) graph(sub);
            }
        }
    }

  private:
    Lowering& out_;
    std::map<std::string, const onnx::TensorProto*> constants_;

    void problem(const onnx::NodeProto& n, int k, const std::string& what) {
        out_.problems.push_back(node_label(n, k) + ": " + what);
    }

    void node(onnx::NodeProto& n, int k) {
        static const std::set<std::string> reductions{"ReduceMax",  "ReduceMin",    "ReduceMean",
                                                      "ReduceProd", "ReduceL1",     "ReduceL2",
                                                      "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"};
        const std::string& op = n.op_type();
        if (reductions.count(op)) return reduction(n, k);
        if (op == "Split") return drop_attribute(n, "num_outputs");  // the outputs' count splits equally
        if (op == "Cast" || op == "CastLike") return drop_attribute(n, "saturate");  // float8 only
        if (op == "Pad") {
            if (n.input_size() > 3 && !n.input(3).empty())
                return problem(n, k, "an axes input (opset 18) is not supported; give pads for every axis");
            return keep_inputs(n, std::min(n.input_size(), 3));
        }
        if (op == "AveragePool") {
            if (const auto* d = attribute(n, "dilations")) {
                for (int64_t v : d->ints())
                    if (v != 1) return problem(n, k, "dilations other than 1 are not supported");
                drop_attribute(n, "dilations");
            }
            return;
        }
        // Ops ONNX 1.12 does not know stand in as one it knows, of their inputs' count, dtypes and
        // output shape (input 0's), while ONNX checks the model: Tanh for Gelu and Mish, Clip (x,
        // min, max) for GroupNormalization (x, scale, bias).
        if (op == "Gelu" || op == "Mish" || op == "GroupNormalization") {
            StandIn s{&n, op, {n.attribute().begin(), n.attribute().end()}};
            n.set_op_type(op == "GroupNormalization" ? "Clip" : "Tanh");
            n.clear_attribute();
            out_.stand_ins.push_back(std::move(s));
        }
    }

    void reduction(onnx::NodeProto& n, int k) {
        const auto* noop_attr = attribute(n, "noop_with_empty_axes");
        const bool noop = noop_attr && noop_attr->i() != 0;
        std::vector<int64_t> axes;
        const bool given = n.input_size() > 1 && !n.input(1).empty();
        if (given) {
            auto c = constants_.find(n.input(1));
            if (c == constants_.end())
                return problem(n, k, "its axes input '" + n.input(1) +
                                         "' is not a constant; graphrun needs the axes when it reads the model");
            std::string why;
            auto hv = onnx_fold::tensor_value(*c->second, why);
            if (!hv) return problem(n, k, "its axes input '" + n.input(1) + "': " + why);
            if (hv->dtype != DType::I64 || hv->shape.size() > 1)
                return problem(n, k, "its axes input '" + n.input(1) + "' is not a list of int64");
            axes = onnx_fold::ints(*hv);
        }
        drop_attribute(n, "noop_with_empty_axes");
        keep_inputs(n, 1);
        if (axes.empty() && noop) {  // nothing to reduce: the input as it is
            n.set_op_type("Identity");
            n.clear_attribute();
            return;
        }
        if (axes.empty()) return;  // every axis, opset 17's default
        auto* a = n.add_attribute();
        a->set_name("axes");
        a->set_type(onnx::AttributeProto::INTS);
        for (int64_t v : axes) a->add_ints(v);
    }
};

}  // namespace

Lowering lower_to_17(onnx::ModelProto& model) {
    Lowering out;  // every rewrite applies from its op's opset on, and the model's is 18 or more
    Lowerer(model, out).graph(*model.mutable_graph());
    for (auto& o : *model.mutable_opset_import())
        if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(kLowered);
    // IR 9 and 10 add float8 and 4-bit types (refused by graphrun's dtype
    // checks); ONNX 1.12's checker stops at IR 8.
    if (model.ir_version() > 8) model.set_ir_version(8);
    return out;
}

void restore_stand_ins(Lowering& l) {
    for (StandIn& s : l.stand_ins) {
        s.node->set_op_type(s.op_type);
        s.node->clear_attribute();
        for (auto& a : s.attributes) *s.node->add_attribute() = std::move(a);
    }
    l.stand_ins.clear();
}

}  // namespace graphrun::onnx_opset
