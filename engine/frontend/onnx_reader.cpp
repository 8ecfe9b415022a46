// The ONNX front end (onnx_reader.h).
#include "engine/frontend/onnx_reader.h"

#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "engine/frontend/onnx_fold.h"

namespace graphrun {

bool onnx_supported() { return true; }

namespace {

using onnx_fold::HostValue;
using onnx_fold::dtype_of;
using onnx_fold::onnx_type_name;
using onnx_fold::tensor_value;
using onnx_fold::attr_float;
using onnx_fold::attr_int;
using onnx_fold::attr_ints;
using onnx_fold::find_attr;

constexpr int kMinOpset = 6, kMaxOpset = 17;

// A graphrun name for an ONNX value name ("input.1", "/conv1/Conv_output_0").
std::string identifier(const std::string& s) {
    std::string out;
    for (char c : s) out += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
    if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "v_" + out;
    return out;
}

Attr int_list(const std::vector<int64_t>& v) {
    std::vector<Attr> items;
    items.reserve(v.size());
    for (int64_t x : v) items.push_back(Attr::integer(x));
    return Attr::make_list(std::move(items));
}

// One ONNX value as the importer knows it.
struct Value {
    NodeId id = kNoNode;                        // its node, once it has one
    std::shared_ptr<const HostValue> folded;    // known here, before anything runs
    std::optional<DType> dtype;
    std::optional<Shape> shape;                 // when static
};

class Importer {
  public:
    Importer(Graph& g, Diagnostics& diag) : g_(g), diag_(diag), b_(g, diag) {}

    bool run(std::string_view bytes) {
        if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
            diag_.error({}, "the model is larger than 2 GiB; graphrun reads models up to 2 GiB");
            return false;
        }
        if (!model_.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
            diag_.error({}, "not an ONNX model: the file does not parse as an ONNX ModelProto");
            return false;
        }
        if (!model_.has_graph() || model_.graph().node_size() + model_.graph().output_size() == 0) {
            diag_.error({}, "not an ONNX model: the file holds no graph (empty, or not a model file)");
            return false;
        }
        if (!read_opset()) return false;
        try {
            onnx::checker::check_model(model_);
        } catch (const std::exception& e) {
            diag_.error({}, std::string("the ONNX checker rejects the model: ") + first_line(e.what()));
            return false;
        }
        fix_free_dimensions();
        try {
            // Data propagation carries shapes through Shape -> Gather -> Concat
            // -> Reshape chains, which exporters write for every flatten.
            const onnx::ShapeInferenceOptions options(false, 0, true);
            onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), options);
        } catch (const std::exception& e) {
            diag_.error({}, std::string("ONNX shape inference fails on the model: ") + first_line(e.what()));
            return false;
        }
        collect_types();
        if (!check_supported()) return false;
        read_initializers();
        read_inputs();
        const auto& nodes = model_.graph().node();
        for (int k = 0; k < nodes.size(); ++k) {
            node_index_ = k;
            import_node(nodes.Get(k));
        }
        if (diag_.has_errors()) return false;
        finish_outputs();
        return !diag_.has_errors();
    }

  private:
    // ---- the model as a whole ----
    static std::string first_line(const std::string& s) {
        auto nl = s.find('\n');
        return nl == std::string::npos ? s : s.substr(0, nl);
    }

    bool read_opset() {
        for (const auto& o : model_.opset_import())
            if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
        if (opset_ == 0 && model_.opset_import_size() == 0) opset_ = 1;
        if (opset_ < kMinOpset || opset_ > kMaxOpset) {
            diag_.error({}, "the model uses ONNX opset " + std::to_string(opset_) + "; graphrun reads opsets " +
                                std::to_string(kMinOpset) + " to " + std::to_string(kMaxOpset));
            return false;
        }
        return true;
    }

    // A graph input's dimension without a value (a batch "N") is taken as 1,
    // with a warning, as onnxruntime_perf_test does; shapes then propagate.
    void fix_free_dimensions() {
        std::set<std::string> init;
        for (const auto& t : model_.graph().initializer()) init.insert(t.name());
        auto* graph = model_.mutable_graph();
        for (int i = 0; i < graph->input_size(); ++i) {
            auto* in = graph->mutable_input(i);
            if (init.count(in->name()) || !in->type().has_tensor_type()) continue;
            auto* tt = in->mutable_type()->mutable_tensor_type();
            if (!tt->has_shape()) continue;
            for (int d = 0; d < tt->shape().dim_size(); ++d) {
                auto* dim = tt->mutable_shape()->mutable_dim(d);
                if (dim->has_dim_value()) continue;
                std::string label = dim->has_dim_param() ? "'" + dim->dim_param() + "'" : "without a size";
                diag_.warning(input_loc(i), "input '" + in->name() + "': dimension " + std::to_string(d) + " " + label +
                                                " is taken as 1");
                dim->set_dim_value(1);
            }
        }
    }

    void note_type(const onnx::ValueInfoProto& vi) {
        if (!vi.type().has_tensor_type()) return;
        const auto& tt = vi.type().tensor_type();
        Value& v = values_[vi.name()];
        if (auto dt = dtype_of(tt.elem_type())) v.dtype = dt;
        if (!tt.has_shape()) return;
        Shape s;
        for (const auto& d : tt.shape().dim()) {
            if (!d.has_dim_value()) return;
            s.push_back(d.dim_value());
        }
        v.shape = std::move(s);
    }

    void collect_types() {
        const auto& gr = model_.graph();
        for (const auto& vi : gr.input()) note_type(vi);
        for (const auto& vi : gr.value_info()) note_type(vi);
        for (const auto& vi : gr.output()) note_type(vi);
    }

    // ---- support: every unsupported op at once, before anything is built ----
    bool check_supported() {
        std::map<std::string, std::vector<std::string>> unsupported;  // op -> node names
        const auto& nodes = model_.graph().node();
        for (int k = 0; k < nodes.size(); ++k) {
            const auto& n = nodes.Get(k);
            const bool ok = (n.domain().empty() || n.domain() == "ai.onnx") && supported_op(n.op_type());
            if (!ok) {
                std::string op = n.domain().empty() ? n.op_type() : n.domain() + "." + n.op_type();
                unsupported[op].push_back(n.name().empty() ? "#" + std::to_string(k) : n.name());
            }
        }
        if (unsupported.empty()) return true;
        std::string msg = "the model uses " + std::to_string(unsupported.size()) +
                          (unsupported.size() == 1 ? " op" : " ops") + " graphrun does not support:";
        for (const auto& [op, names] : unsupported) {
            msg += "\n  " + op + " (" + std::to_string(names.size()) + (names.size() == 1 ? " node: " : " nodes: ");
            for (size_t i = 0; i < names.size() && i < 8; ++i) msg += (i ? ", " : "") + names[i];
            if (names.size() > 8) msg += ", ...";
            msg += ")";
        }
        diag_.error({}, msg);
        return false;
    }

    static const std::map<std::string, std::string>& elementwise_ops() {
        // ONNX op -> graphrun op of the same meaning (broadcasting like NumPy).
        static const std::map<std::string, std::string> m{
            {"Add", "add"}, {"Sub", "sub"}, {"Mul", "mul"}, {"Div", "div"}, {"Pow", "pow"},
            {"Neg", "neg"}, {"Abs", "abs"}, {"Relu", "relu"}, {"Exp", "exp"}, {"Log", "log"},
            {"Sqrt", "sqrt"}, {"Tanh", "tanh"}, {"Sigmoid", "sigmoid"}, {"Sin", "sin"}, {"Cos", "cos"},
            {"Equal", "equal"}, {"Less", "less"}, {"LessOrEqual", "less_equal"}, {"Greater", "greater"},
            {"GreaterOrEqual", "greater_equal"}, {"And", "logical_and"}, {"Or", "logical_or"},
            {"Xor", "logical_xor"}, {"Not", "logical_not"}, {"Where", "where"}, {"Floor", "floor"},
            {"Ceil", "ceil"}, {"Round", "round"}, {"Erf", "erf"}, {"Reciprocal", "reciprocal"},
            {"Sign", "sign"}, {"Softplus", "softplus"}};
        return m;
    }

    static bool have_op(const std::string& graphrun_name) { return find_op(graphrun_name).has_value(); }

    bool supported_op(const std::string& op) const {
        if (auto it = elementwise_ops().find(op); it != elementwise_ops().end()) return have_op(it->second);
        static const std::set<std::string> always{
            "Constant", "Identity", "Dropout", "MatMul", "Gemm", "Transpose", "Reshape", "Flatten", "Squeeze",
            "Unsqueeze", "Cast", "Concat", "ReduceSum", "ReduceMax", "ReduceMean", "Softmax", "Shape", "Max", "Min",
            "Sum", "Mean", "Gather", "Slice", "ConstantOfShape", "Range", "Expand"};
        if (always.count(op)) return true;
        static const std::map<std::string, std::string> needs{
            {"LeakyRelu", "leaky_relu"}, {"Elu", "elu"}, {"Selu", "selu"}, {"Clip", "clip"},
            {"LogSoftmax", "log_softmax"}, {"ReduceMin", "reduce_min"}, {"ReduceProd", "reduce_prod"},
            {"ArgMax", "argmax"}, {"ArgMin", "argmin"}};
        if (auto it = needs.find(op); it != needs.end()) return have_op(it->second);
        return false;
    }

    // ---- values ----
    Loc node_loc() const { return pointer_loc("/graph/node/" + std::to_string(node_index_)); }
    static Loc pointer_loc(const std::string& p) {
        Loc l;
        l.pointer = p;
        return l;
    }
    Loc input_loc(int i) const { return pointer_loc("/graph/input/" + std::to_string(i)); }

    // A fresh graphrun name for an ONNX value name.
    std::string fresh_name(const std::string& onnx_name) {
        std::string base = identifier(onnx_name), name = base;
        for (int k = 2; used_names_.count(name); ++k) name = base + "_" + std::to_string(k);
        used_names_.insert(name);
        return name;
    }

    // Binds the node `id` to the ONNX value `onnx_name`.
    void bind(const std::string& onnx_name, NodeId id) {
        std::string name = fresh_name(onnx_name);
        id = b_.assign(name, id, g_.node(id).loc);
        if (name != onnx_name) g_.node(id).set_display(onnx_name);
        Value& v = values_[onnx_name];
        v.id = id;
    }

    NodeId const_node(const HostValue& hv, const Loc& loc) {
        std::vector<NamedAttr> attrs;
        attrs.push_back(NamedAttr{"shape", int_list(hv.shape), {}});
        attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(hv.dtype)), {}});
        NodeId id = b_.add_node(OpKind::Const, {}, std::move(attrs), loc);
        Node& n = g_.node(id);
        n.host_literal = true;
        n.literal = hv.bytes;
        return id;
    }

    // The node holding ONNX value `name`; a folded value gets a const node on first use.
    std::optional<NodeId> node_of(const std::string& name) {
        auto it = values_.find(name);
        if (it == values_.end() || (it->second.id == kNoNode && !it->second.folded)) {
            diag_.error(node_loc(), "the value '" + name + "' is used before it is made");
            return std::nullopt;
        }
        Value& v = it->second;
        if (v.id == kNoNode) {
            NodeId id = const_node(*v.folded, node_loc());
            std::string gname = fresh_name(name);
            id = b_.assign(gname, id, node_loc());
            if (gname != name) g_.node(id).set_display(name);
            v.id = id;
        }
        return v.id;
    }

    const Value* value(const std::string& name) const {
        auto it = values_.find(name);
        return it == values_.end() ? nullptr : &it->second;
    }
    const HostValue* folded(const std::string& name) const {
        const Value* v = value(name);
        return v && v->folded ? v->folded.get() : nullptr;
    }
    std::optional<Shape> static_shape(const std::string& name) const {
        const Value* v = value(name);
        if (!v) return std::nullopt;
        if (v->folded) return v->folded->shape;
        return v->shape;
    }

    void read_initializers() {
        const auto& inits = model_.graph().initializer();
        for (int i = 0; i < inits.size(); ++i) {
            const auto& t = inits.Get(i);
            std::string why;
            auto hv = tensor_value(t, why);
            if (!hv) {
                diag_.error(pointer_loc("/graph/initializer/" + std::to_string(i)),
                            "initializer '" + t.name() + "': " + why);
                continue;
            }
            Value& v = values_[t.name()];
            v.dtype = hv->dtype;
            v.shape = hv->shape;
            v.folded = std::make_shared<HostValue>(std::move(*hv));
        }
    }

    void read_inputs() {
        const auto& ins = model_.graph().input();
        for (int i = 0; i < ins.size(); ++i) {
            const auto& in = ins.Get(i);
            if (folded(in.name())) continue;  // an initializer listed as an input (IR < 4): a constant
            const size_t errors = diag_.error_count();
            read_input(i, in);
            // A failed input still gets a (failed) node, so that its uses add no errors.
            if (diag_.error_count() != errors) bind(in.name(), b_.add_invalid(input_loc(i)));
        }
    }

    void read_input(int i, const onnx::ValueInfoProto& in) {
        {
            const Value* v = value(in.name());
            const auto* tt = in.type().has_tensor_type() ? &in.type().tensor_type() : nullptr;
            if (!tt || !v || !v->dtype) {
                diag_.error(input_loc(i), "input '" + in.name() + "': its type " +
                                              (tt ? onnx_type_name(tt->elem_type()) : std::string("(not a tensor)")) +
                                              " is not one graphrun has (f32, f64, i32, i64, bool)");
                return;
            }
            if (!v->shape) {
                diag_.error(input_loc(i), "input '" + in.name() + "' has no static shape");
                return;
            }
            std::optional<OpKind> input_op = find_op("input");
            if (!input_op) {
                diag_.error(input_loc(i), "input '" + in.name() + "': this build has no input op");
                return;
            }
            std::vector<NamedAttr> attrs;
            attrs.push_back(NamedAttr{"shape", int_list(*v->shape), {}});
            attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(*v->dtype)), {}});
            bind(in.name(), b_.add_node(*input_op, {}, std::move(attrs), input_loc(i)));
        }
    }

    void finish_outputs() {
        std::vector<std::pair<std::string, Loc>> names;
        const auto& outs = model_.graph().output();
        for (int i = 0; i < outs.size(); ++i) {
            const std::string& name = outs.Get(i).name();
            auto id = node_of(name);
            if (!id) continue;
            // Outputs keep their ONNX names (the nodes' display names): --fetch,
            // the printed results and --save's files use them.
            names.emplace_back(name, pointer_loc("/graph/output/" + std::to_string(i)));
        }
        b_.set_outputs(std::move(names), pointer_loc("/graph/output"));
        b_.finish(pointer_loc("/graph"));
    }

    // ---- nodes ----
    void fail(const onnx::NodeProto& n, const std::string& what) {
        diag_.error(node_loc(), n.op_type() + " node '" + n.name() + "': " + what);
    }

    NodeId add(OpKind op, std::vector<NodeId> ins, std::vector<NamedAttr> attrs = {}) {
        Inputs inputs;
        for (NodeId id : ins) inputs.push_back(Input{id, node_loc()});
        return b_.add_node(op, std::move(inputs), std::move(attrs), node_loc());
    }
    NodeId add(const char* op, std::vector<NodeId> ins, std::vector<NamedAttr> attrs = {}) {
        return add(*find_op(op), std::move(ins), std::move(attrs));
    }
    NodeId scalar(double x, DType t) {
        HostValue hv = onnx_fold::scalar(x, t);
        return const_node(hv, node_loc());
    }
    static NamedAttr named(const char* name, Attr a) { return NamedAttr{name, std::move(a), {}}; }

    // The inputs of n as nodes (empty names are absent optional inputs: nullopt).
    std::optional<std::vector<NodeId>> nodes_of(const onnx::NodeProto& n, int count) {
        std::vector<NodeId> v;
        for (int i = 0; i < count && i < n.input_size(); ++i) {
            auto id = node_of(n.input(i));
            if (!id) return std::nullopt;
            v.push_back(*id);
        }
        return v;
    }

    // A constant input (shape, axes, pads): must be known before running.
    const HostValue* const_input(const onnx::NodeProto& n, int i, const char* what) {
        if (i >= n.input_size() || n.input(i).empty()) return nullptr;
        const HostValue* hv = folded(n.input(i));
        if (!hv) fail(n, std::string("its ") + what + " input '" + n.input(i) +
                             "' must be a constant (an initializer or computed from constants and shapes)");
        return hv;
    }

    void import_node(const onnx::NodeProto& n) {
        // Folded: every input known here and the op one the folder evaluates.
        if (try_fold(n)) return;
        const std::string& op = n.op_type();
        if (auto it = elementwise_ops().find(op); it != elementwise_ops().end()) return elementwise(n, it->second);
        if (op == "Identity" || op == "Dropout") return identity(n);
        if (op == "Max" || op == "Min" || op == "Sum" || op == "Mean") return variadic(n);
        if (op == "MatMul") return matmul(n);
        if (op == "Gemm") return gemm(n);
        if (op == "Transpose") return transpose(n);
        if (op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" || op == "Expand")
            return reshape_like(n);
        if (op == "Cast") return cast(n);
        if (op == "Concat") return concat(n);
        if (op.rfind("Reduce", 0) == 0) return reduce(n);
        if (op == "ArgMax" || op == "ArgMin") return arg_reduce(n);
        if (op == "Softmax" || op == "LogSoftmax") return softmax(n);
        if (op == "LeakyRelu" || op == "Elu" || op == "Selu") return activation(n);
        if (op == "Clip") return clip(n);
        fail(n, "its inputs must be constants here (graphrun folds " + op + " only on constants)");
    }

    bool try_fold(const onnx::NodeProto& n) {
        std::vector<const HostValue*> ins;
        for (const auto& name : n.input()) {
            if (name.empty()) {
                ins.push_back(nullptr);
                continue;
            }
            const HostValue* hv = folded(name);
            // Shape needs only its input's static shape, not its values.
            if (!hv && n.op_type() != "Shape") return false;
            ins.push_back(hv);
        }
        std::optional<Shape> in_shape;
        if (n.op_type() == "Shape" && n.input_size() > 0) {
            in_shape = static_shape(n.input(0));
            if (!in_shape) {
                fail(n, "the shape of '" + n.input(0) + "' is not static");
                return true;
            }
        }
        std::string why;
        std::optional<std::vector<HostValue>> out = onnx_fold::evaluate(n, ins, in_shape, opset_, why);
        if (!out) {
            if (!why.empty()) {
                fail(n, why);
                return true;
            }
            return false;  // not an op the folder evaluates: built as nodes
        }
        for (int i = 0; i < n.output_size() && i < static_cast<int>(out->size()); ++i) {
            Value& v = values_[n.output(i)];
            v.dtype = (*out)[static_cast<size_t>(i)].dtype;
            v.shape = (*out)[static_cast<size_t>(i)].shape;
            v.folded = std::make_shared<HostValue>(std::move((*out)[static_cast<size_t>(i)]));
        }
        return true;
    }

    void elementwise(const onnx::NodeProto& n, const std::string& op) {
        auto ins = nodes_of(n, n.input_size());
        if (!ins) return;
        // Opset < 7: broadcast=1 with axis aligns B's dims at A's axis.
        if (opset_ < 7 && ins->size() == 2 && attr_int(n, "broadcast", 0) == 1 && find_attr(n, "axis")) {
            auto sa = static_shape(n.input(0)), sb = static_shape(n.input(1));
            if (!sa || !sb) return fail(n, "legacy broadcasting needs static shapes");
            int64_t axis = attr_int(n, "axis", 0);
            if (axis < 0) axis += static_cast<int64_t>(sa->size());
            Shape target = *sb;
            while (static_cast<int64_t>(target.size()) + axis < static_cast<int64_t>(sa->size())) target.push_back(1);
            (*ins)[1] = add(OpKind::Reshape, {(*ins)[1]}, {named("shape", int_list(target))});
        }
        if (op == "pow" && ins->size() == 2) {
            const Value* a = value(n.input(0));
            const Value* b = value(n.input(1));
            if (a && b && a->dtype && b->dtype && *a->dtype != *b->dtype)
                (*ins)[1] = add(OpKind::Cast, {(*ins)[1]}, {named("dtype", Attr::ident(dtype_name(*a->dtype)))});
        }
        bind(n.output(0), add(op.c_str(), *ins));
    }

    void identity(const onnx::NodeProto& n) {
        if (n.op_type() == "Dropout" && n.input_size() >= 3 && !n.input(2).empty()) {
            const HostValue* training = const_input(n, 2, "training_mode");
            if (!training) return;
            if (onnx_fold::ints(*training).at(0) != 0) return fail(n, "training mode is not supported");
        }
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        bind(n.output(0), add(OpKind::Identity, *ins));
        if (n.op_type() == "Dropout" && n.output_size() > 1 && !n.output(1).empty())
            fail(n, "its mask output is not supported");
    }

    void variadic(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, n.input_size());
        if (!ins || ins->empty()) return;
        const std::string& op = n.op_type();
        const char* bin = op == "Max" ? "maximum" : op == "Min" ? "minimum" : "add";
        NodeId acc = (*ins)[0];
        for (size_t i = 1; i < ins->size(); ++i) acc = add(bin, {acc, (*ins)[i]});
        if (op == "Mean") {
            const Value* v = value(n.input(0));
            acc = add("div", {acc, scalar(static_cast<double>(ins->size()), v && v->dtype ? *v->dtype : DType::F32)});
        }
        if (ins->size() == 1) acc = add(OpKind::Identity, {acc});
        bind(n.output(0), acc);
    }

    void matmul(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 2);
        if (!ins) return;
        bind(n.output(0), add(OpKind::Matmul, *ins));
    }

    // Y = alpha * op(A) @ op(B) + beta * C
    void gemm(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, n.input_size());
        if (!ins || ins->size() < 2) return;
        const Value* a = value(n.input(0));
        const DType t = a && a->dtype ? *a->dtype : DType::F32;
        std::vector<NamedAttr> attrs;
        if (attr_int(n, "transA", 0)) attrs.push_back(named("transpose_a", Attr::boolean(true)));
        if (attr_int(n, "transB", 0)) attrs.push_back(named("transpose_b", Attr::boolean(true)));
        NodeId y = add(OpKind::Matmul, {(*ins)[0], (*ins)[1]}, std::move(attrs));
        const float alpha = attr_float(n, "alpha", 1.0f), beta = attr_float(n, "beta", 1.0f);
        if (alpha != 1.0f) y = add("mul", {y, scalar(alpha, t)});
        if (ins->size() >= 3 && beta != 0.0f) {
            NodeId c = (*ins)[2];
            if (beta != 1.0f) c = add("mul", {c, scalar(beta, t)});
            y = add("add", {y, c});
        }
        bind(n.output(0), y);
    }

    void transpose(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        std::vector<NamedAttr> attrs;
        if (auto perm = attr_ints(n, "perm")) attrs.push_back(named("perm", int_list(*perm)));
        bind(n.output(0), add(OpKind::Transpose, *ins, std::move(attrs)));
    }

    // Reshape, Flatten, Squeeze, Unsqueeze and Expand (to a shape of the same
    // element count): a reshape to the output's static shape, as ONNX's shape
    // inference or the folded shape input gives it.
    void reshape_like(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        std::optional<Shape> out = static_shape(n.output(0));
        if (!out) out = onnx_fold::reshape_target(n, static_shape(n.input(0)), n.input_size() > 1 ? folded(n.input(1)) : nullptr, opset_);
        if (!out) return fail(n, "the shape of its output '" + n.output(0) + "' is not static");
        values_[n.output(0)].shape = out;  // for what reads it, where ONNX's inference had none
        auto in = static_shape(n.input(0));
        if (n.op_type() == "Expand") {
            if (!in) return fail(n, "the shape of its input is not static");
            // Expand broadcasts: multiply by ones of the target shape.
            const Value* v = value(n.input(0));
            const DType t = v && v->dtype ? *v->dtype : DType::F32;
            if (onnx_fold::numel(*in) == onnx_fold::numel(*out)) {
                bind(n.output(0), add(OpKind::Reshape, *ins, {named("shape", int_list(*out))}));
                return;
            }
            if (t == DType::Bool) return fail(n, "expanding a bool tensor is not supported");
            std::vector<NamedAttr> attrs{named("shape", int_list(*out)), named("dtype", Attr::ident(dtype_name(t)))};
            NodeId ones = add(OpKind::Ones, {}, std::move(attrs));
            bind(n.output(0), add("mul", {(*ins)[0], ones}));
            return;
        }
        bind(n.output(0), add(OpKind::Reshape, *ins, {named("shape", int_list(*out))}));
    }

    void cast(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        auto to = dtype_of(static_cast<int32_t>(attr_int(n, "to", 0)));
        if (!to) return fail(n, "cast to " + onnx_type_name(static_cast<int32_t>(attr_int(n, "to", 0))) +
                                    " is not supported (f32, f64, i32, i64, bool are)");
        bind(n.output(0), add(OpKind::Cast, *ins, {named("dtype", Attr::ident(dtype_name(*to)))}));
    }

    void concat(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, n.input_size());
        if (!ins) return;
        bind(n.output(0), add(OpKind::Concat, *ins, {named("axis", Attr::integer(attr_int(n, "axis", 0)))}));
    }

    void reduce(const onnx::NodeProto& n) {
        static const std::map<std::string, std::string> ops{{"ReduceSum", "reduce_sum"},   {"ReduceMax", "reduce_max"},
                                                            {"ReduceMean", "reduce_mean"}, {"ReduceMin", "reduce_min"},
                                                            {"ReduceProd", "reduce_prod"}};
        auto it = ops.find(n.op_type());
        if (it == ops.end() || !have_op(it->second)) return fail(n, "this reduction is not supported");
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        std::optional<std::vector<int64_t>> axes = attr_ints(n, "axes");
        const bool axes_input = n.op_type() == "ReduceSum" && opset_ >= 13;
        if (axes_input && n.input_size() > 1 && !n.input(1).empty()) {
            const HostValue* hv = const_input(n, 1, "axes");
            if (!hv) return;
            axes = onnx_fold::ints(*hv);
        }
        std::vector<NamedAttr> attrs;
        if (axes && !axes->empty()) attrs.push_back(named("axes", int_list(*axes)));
        else if (axes_input && attr_int(n, "noop_with_empty_axes", 0)) {
            bind(n.output(0), add(OpKind::Identity, *ins));
            return;
        }
        attrs.push_back(named("keepdims", Attr::boolean(attr_int(n, "keepdims", 1) != 0)));
        bind(n.output(0), add(it->second.c_str(), *ins, std::move(attrs)));
    }

    void arg_reduce(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        if (attr_int(n, "select_last_index", 0)) return fail(n, "select_last_index=1 is not supported");
        std::vector<NamedAttr> attrs{named("axis", Attr::integer(attr_int(n, "axis", 0))),
                                     named("keepdims", Attr::boolean(attr_int(n, "keepdims", 1) != 0))};
        bind(n.output(0), add(n.op_type() == "ArgMax" ? "argmax" : "argmin", *ins, std::move(attrs)));
    }

    // Softmax/LogSoftmax: from opset 13 along one axis (default -1); before,
    // over the input coerced to 2-D at `axis` (default 1).
    void softmax(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        const char* op = n.op_type() == "Softmax" ? "softmax" : "log_softmax";
        if (!have_op(op)) return fail(n, "not supported by this build");
        if (opset_ >= 13) {
            bind(n.output(0), add(op, *ins, {named("axis", Attr::integer(attr_int(n, "axis", -1)))}));
            return;
        }
        auto shape = static_shape(n.input(0));
        if (!shape) return fail(n, "the shape of its input is not static");
        const auto rank = static_cast<int64_t>(shape->size());
        int64_t axis = attr_int(n, "axis", 1);
        if (axis < 0) axis += rank;
        if (axis == rank - 1 || rank == 0) {
            bind(n.output(0), add(op, *ins, {named("axis", Attr::integer(-1))}));
            return;
        }
        int64_t outer = 1, inner = 1;
        for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= (*shape)[static_cast<size_t>(d)];
        NodeId flat = add(OpKind::Reshape, *ins, {named("shape", int_list({outer, inner}))});
        NodeId s = add(op, {flat}, {named("axis", Attr::integer(-1))});
        bind(n.output(0), add(OpKind::Reshape, {s}, {named("shape", int_list(*shape))}));
    }

    void activation(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        const std::string& op = n.op_type();
        std::vector<NamedAttr> attrs;
        if (op == "LeakyRelu") {
            attrs.push_back(named("alpha", Attr::number(attr_float(n, "alpha", 0.01f))));
            bind(n.output(0), add("leaky_relu", *ins, std::move(attrs)));
        } else if (op == "Elu") {
            attrs.push_back(named("alpha", Attr::number(attr_float(n, "alpha", 1.0f))));
            bind(n.output(0), add("elu", *ins, std::move(attrs)));
        } else {
            attrs.push_back(named("alpha", Attr::number(attr_float(n, "alpha", 1.67326319217681884765625f))));
            attrs.push_back(named("gamma", Attr::number(attr_float(n, "gamma", 1.05070102214813232421875f))));
            bind(n.output(0), add("selu", *ins, std::move(attrs)));
        }
    }

    void clip(const onnx::NodeProto& n) {
        auto ins = nodes_of(n, 1);
        if (!ins) return;
        std::vector<NamedAttr> attrs;
        if (opset_ < 11) {
            if (const auto* a = find_attr(n, "min")) attrs.push_back(named("min", Attr::number(a->f())));
            if (const auto* a = find_attr(n, "max")) attrs.push_back(named("max", Attr::number(a->f())));
        } else {
            const char* names[] = {"min", "max"};
            for (int i = 1; i <= 2; ++i) {
                if (i >= n.input_size() || n.input(i).empty()) continue;
                const HostValue* hv = const_input(n, i, names[i - 1]);
                if (!hv) return;
                attrs.push_back(named(names[i - 1], Attr::number(onnx_fold::doubles(*hv).at(0))));
            }
        }
        bind(n.output(0), add("clip", *ins, std::move(attrs)));
    }

    Graph& g_;
    Diagnostics& diag_;
    GraphBuilder b_;
    onnx::ModelProto model_;
    int64_t opset_ = 0;
    int node_index_ = 0;
    std::unordered_map<std::string, Value> values_;
    std::set<std::string> used_names_;
};

}  // namespace

bool parse_onnx(std::string_view bytes, Graph& g, Diagnostics& diag, const InputLimits& limits) {
    (void)limits;
    Importer importer(g, diag);
    importer.run(bytes);
    return !diag.has_errors();
}

}  // namespace graphrun
