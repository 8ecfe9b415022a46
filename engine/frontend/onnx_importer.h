// The ONNX importer's builder, shared by the reader (onnx_reader.cpp) and
// the op mappers (onnx_ops*.cpp): an ONNX op maps onto graphrun nodes through
// an entry in the op table (onnx_ops.h). Internal to engine/frontend; built
// only with the ONNX library.
#pragma once
#include <onnx/checker.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>
#include <google/protobuf/io/zero_copy_stream.h>

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

#include "engine/base/interrupt.h"
#include "engine/base/limits.h"
#include "engine/frontend/identifiers.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/onnx_external.h"
#include "engine/frontend/onnx_fold.h"
#include "engine/frontend/onnx_opset.h"
#include "engine/frontend/onnx_ops.h"
#include "engine/frontend/onnx_reader.h"  // OnnxReadOptions
#include "engine/ir/graph.h"

namespace graphrun::onnx_import {

using onnx_fold::HostValue;
using onnx_fold::dtype_of;
using onnx_fold::onnx_type_name;
using onnx_fold::tensor_value;
using onnx_fold::attr_float;
using onnx_fold::attr_int;
using onnx_fold::attr_ints;
using onnx_fold::find_attr;

constexpr int kMinOpset = 1;  // up to onnx_opset::kMaxModelOpset

// Whether an ONNX value name is already a graphrun identifier (identifiers.h;
// at most 256 bytes here): such a name is its own identifier, so that --fetch
// and the outputs find it under itself.
inline bool is_onnx_identifier(std::string_view s) { return s.size() <= 256 && is_identifier(s); }

// The identifier an ONNX value name that is not one starts from ("input.1"
// -> input_1, "4" -> v_4, "output" -> v_output); fresh_name() makes it unique.
inline std::string identifier(std::string_view s) {
    std::string out;
    for (char c : s.substr(0, 64)) {
        const bool word = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
        out += word ? c : '_';
    }
    if (out.empty() || (out[0] >= '0' && out[0] <= '9') || !is_identifier(out)) out = "v_" + out;
    return out;
}

inline Attr int_list(const std::vector<int64_t>& v) {
    std::vector<Attr> items;
    items.reserve(v.size());
    for (int64_t x : v) items.push_back(Attr::integer(x));
    return Attr::make_list(std::move(items));
}

// One ONNX value as the importer knows it.
struct Value {
    NodeId id = kNoNode;                  // its node, once it has one
    std::shared_ptr<HostValue> folded;    // known here, before anything runs (small, or not yet a node)
    std::optional<DType> dtype;
    std::optional<Shape> shape;                 // when static
};

class Importer {
  public:
    // `memory_limit`: the CPU's (0: none); the model's weights and folded
    // values, held in host memory from here to the end of the run, must fit it.
    // `opts`: the free input dimensions' bindings, the model's folder, the
    // inference of what is built (onnx_reader.h; null: none of them).
    Importer(Graph& g, Diagnostics& diag, uint64_t memory_limit = 0, const OnnxReadOptions* opts = nullptr)
        : main_b_(g, diag),
          g_(&g),
          diag_(&diag),
          b_(&main_b_),
          memory_limit_(memory_limit),
          opts_(opts ? *opts : no_opts_),
          shapes_(opts_.shapes),
          model_dir_(opts_.model_dir),
          external_files_(opts_.external_files) {}

    // `parsed` runs once the bytes are parsed (and no longer needed).
    bool run(std::string_view bytes, const std::function<void()>& parsed = {}) {
        if (bytes.size() > static_cast<size_t>(INT32_MAX)) {
            diag_->error({}, "the model is larger than 2 GiB; graphrun reads models up to 2 GiB");
            return false;
        }
        if (!model_.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
            diag_->error({}, "not an ONNX model: the file does not parse as an ONNX ModelProto");
            return false;
        }
        if (parsed) parsed();
        return import_parsed();
    }

    // The model read from `in` (a stream over the file, `size` bytes): the
    // file's bytes are never all in memory, only the parsed model.
    // `read_error`: why reading failed, "" where it did not.
    bool run(google::protobuf::io::ZeroCopyInputStream& in, uint64_t size,
             const std::function<std::string()>& read_error) {
        if (size > static_cast<uint64_t>(INT32_MAX)) {
            diag_->error({}, "the model is larger than 2 GiB; graphrun reads models up to 2 GiB");
            return false;
        }
        const bool ok = model_.ParseFromZeroCopyStream(&in);
        if (stopped()) return false;
        if (std::string why = read_error(); !why.empty()) {
            diag_->error({}, "cannot read the file: " + why);
            return false;
        }
        if (!ok) {
            diag_->error({}, "not an ONNX model: the file does not parse as an ONNX ModelProto");
            return false;
        }
        return import_parsed();
    }

  private:
    bool import_parsed() {
        if (!model_.has_graph() || model_.graph().node_size() + model_.graph().output_size() == 0) {
            diag_->error({}, "not an ONNX model: the file holds no graph (empty, or not a model file)");
            return false;
        }
        if (!read_opset()) return false;
        if (!screen_tensors()) return false;
        if (!screen_weights()) return false;
        if (!load_external_data()) return false;
        if (!lower_opset()) return false;
        try {
            onnx::checker::check_model(model_);
        } catch (const std::exception& e) {
            diag_->error({}, std::string("the ONNX checker rejects the model: ") + first_line(e.what()));
            return false;
        }
        if (!bind_free_dimensions()) return false;
        if (!screen_slice_steps()) return false;
        try {
            // Strict (errors on): a model ONNX's inference calls invalid is
            // refused with ONNX's message. Its type-constraint check stays off:
            // it refuses models exporters write and ONNX's own backend tests
            // run (an int64 Constant at opset 6, whose schema lists floats only:
            // pytorch-operator/test_operator_repeat), and graphrun checks every
            // dtype itself. Data propagation carries shapes through Shape ->
            // Gather -> Concat -> Reshape chains, written for every flatten.
            const onnx::ShapeInferenceOptions options(false, 1, true);
            onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(), options);
        } catch (const std::exception& e) {
            diag_->error({}, std::string("ONNX shape inference fails on the model: ") + first_line(e.what()) +
                                bound_dims_text());
            return false;
        }
        restore_apart_weights();
        onnx_opset::restore_stand_ins(lowering_);
        if (stopped()) return false;
        collect_types();
        if (!check_supported()) return false;
        reserve_identifiers();
        read_initializers();
        read_inputs();
        const auto& nodes = model_.graph().node();
        for (int k = 0; k < nodes.size(); ++k) {
            if (stopped()) return false;
            node_index_ = k;
            import_node(nodes.Get(k));
            if (diag_->over_limit()) return false;  // the rest would only report its missing inputs
        }
        if (diag_->has_errors()) return false;
        finish_outputs();
        return !diag_->has_errors();
    }

    // ---- the model as a whole ----
    static std::string first_line(const std::string& s) {
        auto nl = s.find('\n');
        return nl == std::string::npos ? s : s.substr(0, nl);
    }

    // A signal asked graphrun to stop: reading ends here with an error.
    bool stopped() {
        const int sig = interrupted();
        if (!sig) return false;
        diag_->error({}, "interrupted by " + signal_name(sig) + " while reading the model; nothing ran");
        return true;
    }

    // ONNX's checker and shape inference (1.12) trust a tensor's declared
    // size when they read its data (a Reshape's shape, a Slice's ends): every
    // tensor in the model, subgraphs included, is checked against what it
    // holds before they see it. Sparse initializers are refused here.
    bool screen_tensors() {
        bool ok = true;
        auto check = [&](const onnx::TensorProto& t, const std::string& where, const std::string& what) {
            const std::string problem = onnx_fold::tensor_size_problem(t);
            if (problem.empty()) return;
            diag_->error(pointer_loc(where), what + ": " + problem);
            ok = false;
        };
        std::function<void(const onnx::GraphProto&, const std::string&, int)> graph =
            [&](const onnx::GraphProto& gr, const std::string& at, int depth) {
                if (depth > 8) {
                    diag_->error(pointer_loc(at), "subgraphs nest more than 8 deep");
                    ok = false;
                    return;
                }
                for (int i = 0; i < gr.initializer_size(); ++i)
                    check(gr.initializer(i), at + "/initializer/" + std::to_string(i),
                          "initializer '" + gr.initializer(i).name() + "'");
                if (gr.sparse_initializer_size() > 0) {
                    diag_->error(pointer_loc(at + "/sparse_initializer"), "sparse initializers are not supported");
                    ok = false;
                }
                for (int k = 0; k < gr.node_size(); ++k) {
                    const auto& n = gr.node(k);
                    const std::string node_at = at + "/node/" + std::to_string(k);
                    for (const auto& a : n.attribute()) {
                        const std::string what = n.op_type() + " node '" + n.name() + "', attribute '" + a.name() + "'";
                        if (a.has_t()) check(a.t(), node_at, what);
                        for (const auto& t : a.tensors()) check(t, node_at, what);
                        if (a.has_sparse_tensor() || a.sparse_tensors_size() > 0) {
                            diag_->error(pointer_loc(node_at), what + ": sparse tensors are not supported");
                            ok = false;
                        }
                        if (a.has_g()) graph(a.g(), node_at + "/" + a.name(), depth + 1);
                        for (const auto& g : a.graphs()) graph(g, node_at + "/" + a.name(), depth + 1);
                    }
                }
            };
        graph(model_.graph(), "/graph", 0);
        return ok;
    }

    // Tensors whose bytes are in files beside the model (external data) are
    // read into the model here, once their entries and sizes have been
    // checked and counted against the memory limit, so that ONNX's checker and
    // shape inference see them as any other tensor; each is then copied out
    // and freed with the rest (read_initializers).
    bool load_external_data() {
        bool ok = true;
        std::set<std::string> apart;  // initializers read straight into their values
        std::function<void(onnx::GraphProto&, const std::string&)> graph = [&](onnx::GraphProto& gr,
                                                                               const std::string& at) {
            const bool top = &gr == model_.mutable_graph();
            auto read = [&](onnx::TensorProto& t, const std::string& where, const std::string& what,
                            bool initializer) {
                if (!ok || t.data_location() != onnx::TensorProto::EXTERNAL) return;
                std::string file, problem;
                // A large weight of the top graph goes straight to its value (read_initializers
                // takes it): held once. A small one, which shape inference may read (a
                // Reshape's target), goes into the model.
                const auto dt = dtype_of(t.data_type());
                if (initializer && top && dt && onnx_fold::tensor_bytes(t) > kApartBytes) {
                    HostValue hv;
                    hv.dtype = *dt;
                    hv.shape.assign(t.dims().begin(), t.dims().end());
                    problem = onnx_external::read_apart(t, model_dir_, file, hv.bytes);
                    if (problem.empty()) {
                        external_values_[t.name()] = std::move(hv);
                        apart.insert(t.name());
                    }
                } else {
                    problem = onnx_external::read_into(t, model_dir_, file);
                }
                if (!file.empty() && external_files_ &&
                    std::find(external_files_->begin(), external_files_->end(), file) == external_files_->end())
                    external_files_->push_back(file);
                if (problem.empty()) return;
                diag_->error(pointer_loc(where), what + ": " + problem);
                ok = false;
            };
            for (int i = 0; i < gr.initializer_size(); ++i)
                read(*gr.mutable_initializer(i), at + "/initializer/" + std::to_string(i),
                     "initializer '" + gr.initializer(i).name() + "'", true);
            for (int k = 0; k < gr.node_size(); ++k) {
                auto& n = *gr.mutable_node(k);
                const std::string node_at = at + "/node/" + std::to_string(k);
                for (auto& a : *n.mutable_attribute()) {
                    const std::string what = n.op_type() + " node '" + n.name() + "', attribute '" + a.name() + "'";
                    if (a.has_t()) read(*a.mutable_t(), node_at, what, false);
                    for (auto& t : *a.mutable_tensors()) read(t, node_at, what, false);
                    if (a.has_g()) graph(*a.mutable_g(), node_at + "/" + a.name());
                    for (auto& g : *a.mutable_graphs()) graph(g, node_at + "/" + a.name());
                }
            }
        };
        graph(*model_.mutable_graph(), "/graph");
        if (!ok || apart.empty()) return ok;
        // While ONNX's checker and shape inference run, a weight read apart
        // stands in the model as a graph input of its type and shape: the
        // checker wants one value field in an initializer, and inference has
        // its shape (no op infers a shape from a weight's values over 1 MiB; one
        // that would gets none, and is refused with the name of the op). They
        // are taken out again before the graph is built (restore_apart_weights).
        auto* gr = model_.mutable_graph();
        std::set<std::string> listed;
        for (const auto& in : gr->input()) listed.insert(in.name());
        google::protobuf::RepeatedPtrField<onnx::TensorProto> kept;
        for (auto& t : *gr->mutable_initializer()) {
            if (!apart.count(t.name())) {
                kept.Add()->Swap(&t);
                continue;
            }
            if (listed.count(t.name())) continue;  // already an input (IR < 4 lists weights as inputs)
            auto* vi = gr->add_input();
            vi->set_name(t.name());
            auto* tt = vi->mutable_type()->mutable_tensor_type();
            tt->set_elem_type(t.data_type());
            auto* shape = tt->mutable_shape();
            for (int64_t d : t.dims()) shape->add_dim()->set_dim_value(d);
            stand_ins_.insert(t.name());
        }
        gr->mutable_initializer()->Swap(&kept);
        return ok;
    }

    // A model at opset 18 to 21 in its opset-17 form (onnx_opset.h), which
    // ONNX 1.12's checker and shape inference know; graphrun's op table is
    // asked first, so that ops newer than 17 are listed as unsupported
    // rather than refused by ONNX's checker.
    bool lower_opset() {
        if (opset_ <= onnx_opset::kLowered) return true;
        model_opset_ = opset_;
        lowering_ = onnx_opset::lower_to_17(model_);
        for (const std::string& p : lowering_.problems)
            diag_->error({}, p + " (the model is at opset " + std::to_string(model_opset_) + ")");
        if (!lowering_.problems.empty()) return false;
        opset_ = onnx_opset::kLowered;
        // Gelu and Mish stand in as Tanh: asked as themselves.
        std::vector<std::pair<onnx::NodeProto*, std::string>> named;
        for (auto& st : lowering_.stand_ins) named.emplace_back(st.node, st.node->op_type()), st.node->set_op_type(st.op_type);
        const bool ok = check_supported();
        for (auto& [node, op] : named) node->set_op_type(op);
        return ok;
    }

    // Takes the stand-ins of load_external_data out of the graph's inputs.
    void restore_apart_weights() {
        if (stand_ins_.empty()) return;
        auto* gr = model_.mutable_graph();
        google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> kept;
        for (auto& in : *gr->mutable_input())
            if (!stand_ins_.count(in.name())) kept.Add()->Swap(&in);
        gr->mutable_input()->Swap(&kept);
    }

    // The weights (the initializers and the Constant nodes' values) are
    // copied out of the model as it is read and held until the run ends: their
    // sizes, as declared and checked above, are summed before anything is
    // copied, and a model whose weights pass the memory limit is refused here
    // (a runtime error, as a static plan over the limit is).
    bool screen_weights() {
        const auto& gr = model_.graph();
        auto add = [&](const onnx::TensorProto& t, const std::string& at, const std::string& what) {
            const uint64_t bytes = onnx_fold::tensor_bytes(t);
            weight_bytes_ += bytes;
            if (!memory_limit_ || weight_bytes_ <= memory_limit_) return true;
            const Shape shape(t.dims().begin(), t.dims().end());
            const auto dt = dtype_of(t.data_type());
            const std::string type = dt ? dtype_name(*dt) + shape_string(shape)
                                        : onnx_type_name(t.data_type()) + " " + shape_string(shape);
            std::string msg = what + " (" + type + ") needs " + size_text(bytes);
            if (weight_bytes_ != bytes) msg += ", which brings the model's weights to " + size_text(weight_bytes_);
            diag_->over_limit_error(pointer_loc(at), msg + ", more than the memory limit of " + size_text(memory_limit_) +
                                                        "; refused before the weights are copied");
            return false;
        };
        for (int i = 0; i < gr.initializer_size(); ++i)
            if (!add(gr.initializer(i), "/graph/initializer/" + std::to_string(i),
                     "initializer '" + gr.initializer(i).name() + "'"))
                return false;
        for (int k = 0; k < gr.node_size(); ++k) {
            const auto& n = gr.node(k);
            if (n.op_type() != "Constant") continue;
            const auto* a = find_attr(n, "value");
            if (a && a->has_t() && !add(a->t(), "/graph/node/" + std::to_string(k), "Constant node '" + n.name() + "'"))
                return false;
        }
        return true;
    }

    // ONNX's own data propagation (1.12) steps a Slice's indices by its
    // step without checking for overflow, and never ends on a step near
    // -2^63: a constant step past +-kMaxElements (which no dimension
    // graphrun holds needs) is refused before ONNX sees it.
    bool screen_slice_steps() {
        std::map<std::string, const onnx::TensorProto*> consts;
        const auto& gr = model_.graph();
        for (const auto& t : gr.initializer()) consts[t.name()] = &t;
        for (const auto& n : gr.node())
            if (n.op_type() == "Constant" && n.output_size() == 1)
                if (const auto* a = find_attr(n, "value")) consts[n.output(0)] = &a->t();
        bool ok = true;
        for (int k = 0; k < gr.node_size(); ++k) {
            const auto& n = gr.node(k);
            if (n.op_type() != "Slice" || n.input_size() < 5) continue;
            auto it = consts.find(n.input(4));
            if (it == consts.end()) continue;
            std::string why;
            auto steps = tensor_value(*it->second, why);
            if (!steps) continue;  // reported where the value is read
            for (int64_t step : onnx_fold::ints(*steps))
                if (step > kMaxElements || step < -kMaxElements) {
                    diag_->error(pointer_loc("/graph/node/" + std::to_string(k)),
                                "Slice node '" + n.name() + "': a step of " + std::to_string(step) +
                                    " is out of range (at most " + std::to_string(kMaxElements) + " either way)");
                    ok = false;
                    break;
                }
        }
        return ok;
    }

    // ONNX names that are identifiers are their own graphrun names: no other
    // value's identifier may take one (`y.1` -> y_1 would shadow a value
    // named `y_1`, and both outputs would print one value).
    void reserve_identifiers() {
        const auto& gr = model_.graph();
        auto note = [&](const std::string& name) {
            if (is_onnx_identifier(name)) reserved_.insert(name);
        };
        for (const auto& t : gr.initializer()) note(t.name());
        for (const auto& vi : gr.input()) note(vi.name());
        for (const auto& vi : gr.output()) note(vi.name());
        for (const auto& n : gr.node())
            for (const auto& o : n.output()) note(o);
    }

    bool read_opset() {
        for (const auto& o : model_.opset_import())
            if (o.domain().empty() || o.domain() == "ai.onnx") opset_ = o.version();
        if (opset_ == 0 && model_.opset_import_size() == 0) opset_ = 1;
        if (opset_ < kMinOpset || opset_ > onnx_opset::kMaxModelOpset) {
            diag_->error({}, "the model uses ONNX opset " + std::to_string(opset_) + "; graphrun reads opsets " +
                                std::to_string(kMinOpset) + " to " + std::to_string(onnx_opset::kMaxModelOpset));
            return false;
        }
        return true;
    }

    static std::string shape_text(const Shape& s) {
        std::string t = "[";
        for (size_t i = 0; i < s.size(); ++i) t += (i ? ", " : "") + std::to_string(s[i]);
        return t + "]";
    }
    static std::string shape_text(const onnx::TensorShapeProto& s) {
        std::string t = "[";
        for (int i = 0; i < s.dim_size(); ++i) {
            const auto& d = s.dim(i);
            t += i ? ", " : "";
            t += d.has_dim_value() ? std::to_string(d.dim_value()) : d.has_dim_param() ? d.dim_param() : "?";
        }
        return t + "]";
    }

    // "; with its free dimensions bound as N=16 (--input=x=@a.npy), ..." for a
    // message about shapes: sizes from two arrays may be what disagrees.
    std::string bound_dims_text() const {
        std::string t;
        std::set<std::string> named;
        for (const FreeDim& d : g_->free_dims) {
            if (d.bound_by.empty() || (!d.name.empty() && !named.insert(d.name).second)) continue;
            t += t.empty() ? "; with the free dimensions bound as " : ", ";
            t += (d.name.empty() ? "dimension " + std::to_string(d.axis) + " of '" + d.input + "'" : d.name) + "=" +
                 std::to_string(d.value) + " (" + d.bound_by + ")";
        }
        return t;
    }

    // A graph input's dimension without a value (a dim_param "N", or none) is
    // bound before shape inference (SPEC section 2): a named one by --dim or by
    // the shape given for an input that has it, an unnamed one by its own
    // input's shape (the array fed to it, or --input-shape); else it is 1, with
    // a warning, as onnxruntime_perf_test takes it. A name has one value in the
    // model: bindings that disagree, or that name what the model lacks, are
    // usage errors naming both. g_->free_dims records what the model was read with.
    bool bind_free_dimensions() {
        std::set<std::string> init;
        for (const auto& t : model_.graph().initializer()) init.insert(t.name());
        auto* graph = model_.mutable_graph();
        std::map<std::string, int> inputs;  // the inputs a run feeds, by name
        std::vector<std::string> input_names, params;
        for (int i = 0; i < graph->input_size(); ++i) {
            const auto& in = graph->input(i);
            if (init.count(in.name()) || stand_ins_.count(in.name()) || !in.type().has_tensor_type()) continue;
            inputs.emplace(in.name(), i);
            input_names.push_back(in.name());
            if (!in.type().tensor_type().has_shape()) continue;
            for (const auto& d : in.type().tensor_type().shape().dim())
                if (!d.has_dim_value() && d.has_dim_param() &&
                    std::find(params.begin(), params.end(), d.dim_param()) == params.end())
                    params.push_back(d.dim_param());
        }
        const size_t errors = diag_->error_count();
        auto quoted_list = [](const std::vector<std::string>& v) {
            std::string t;
            for (const std::string& x : v) t += (t.empty() ? "'" : ", '") + x + "'";
            return t;
        };
        // Each name's value, and the option that gave it.
        std::map<std::string, std::pair<int64_t, std::string>> bound;
        auto bind = [&](const std::string& name, int64_t value, const std::string& from, const std::string& where) {
            auto [it, fresh] = bound.emplace(name, std::make_pair(value, from));
            if (fresh || it->second.first == value) return;
            diag_->usage_error({}, from + " gives dimension '" + name + "'" + where + " the size " +
                                      std::to_string(value) + ", but " + it->second.second + " gives it " +
                                      std::to_string(it->second.first) + "; a named dimension has one size in the model");
        };
        for (const DimBinding& d : shapes_.dims) {
            if (std::find(params.begin(), params.end(), d.name) == params.end()) {
                std::string msg = d.from + ": the model has no free dimension '" + d.name + "'";
                if (params.empty())
                    msg += "; its inputs have no named free dimensions";
                else {
                    msg += "; its inputs' named free dimensions are " + quoted_list(params);
                    if (auto near = nearest_name(d.name, params); !near.empty()) msg += "; did you mean '" + near + "'?";
                }
                diag_->usage_error({}, msg);
                continue;
            }
            bind(d.name, d.value, d.from, "");
        }
        std::map<std::string, const GivenShape*> given;  // per input: its shape, where one is given
        for (const GivenShape& gs : shapes_.shapes) {
            auto it = inputs.find(gs.input);
            if (it == inputs.end()) {  // an --input array: reported with the feeds
                if (!gs.must_exist) continue;
                std::string msg = gs.from + ": the model has no input '" + gs.input + "'; its inputs are " +
                                  quoted_list(input_names);
                if (auto near = nearest_name(gs.input, input_names); !near.empty())
                    msg += "; did you mean '" + near + "'?";
                diag_->usage_error({}, msg);
                continue;
            }
            if (auto prev = given.find(gs.input); prev != given.end()) {
                if (gs.must_exist || prev->second->must_exist)
                    diag_->usage_error({}, gs.from + ": input '" + gs.input + "' is already given a shape by " +
                                              prev->second->from);
                continue;  // two arrays for one input: reported with the feeds
            }
            given.emplace(gs.input, &gs);
            const auto& tt = graph->input(it->second).type().tensor_type();
            if (!tt.has_shape()) continue;  // the model leaves the whole shape open
            const auto& shape = tt.shape();
            if (static_cast<size_t>(shape.dim_size()) != gs.shape.size()) {
                if (!gs.must_exist) continue;  // an array of another rank: reported with the feeds
                diag_->usage_error({}, gs.from + ": the shape " + shape_text(gs.shape) + " has " +
                                          std::to_string(gs.shape.size()) +
                                          (gs.shape.size() == 1 ? " dimension" : " dimensions") + ", but the model's input '" +
                                          gs.input + "' has " + std::to_string(shape.dim_size()) + ": " +
                                          shape_text(shape));
                continue;
            }
            for (int d = 0; d < shape.dim_size(); ++d) {
                const auto& dim = shape.dim(d);
                const int64_t v = gs.shape[static_cast<size_t>(d)];
                if (dim.has_dim_value()) {
                    // An array's fixed dimension that differs is reported with the feeds.
                    if (gs.must_exist && dim.dim_value() != v)
                        diag_->usage_error({}, gs.from + ": dimension " + std::to_string(d) + " of input '" +
                                                  gs.input + "' is " + std::to_string(dim.dim_value()) +
                                                  " in the model, not " + std::to_string(v) +
                                                  " (the model's shape is " + shape_text(shape) + ")");
                    continue;
                }
                if (dim.has_dim_param())
                    bind(dim.dim_param(), v, gs.from, " (dimension " + std::to_string(d) + " of input '" + gs.input + "')");
            }
        }
        if (diag_->error_count() != errors) return false;
        for (int i = 0; i < graph->input_size(); ++i) {  // in the model's order
            if (!inputs.count(graph->input(i).name())) continue;
            auto* in = graph->mutable_input(i);
            auto* tt = in->mutable_type()->mutable_tensor_type();
            auto g = given.find(in->name());
            const GivenShape* gs = g == given.end() ? nullptr : g->second;
            if (!tt->has_shape()) {
                if (!gs) continue;  // refused when read (read_inputs): no static shape
                for (size_t d = 0; d < gs->shape.size(); ++d) {
                    tt->mutable_shape()->add_dim()->set_dim_value(gs->shape[d]);
                    g_->free_dims.push_back(FreeDim{in->name(), static_cast<int>(d), "", gs->shape[d], gs->from});
                }
                continue;
            }
            for (int d = 0; d < tt->shape().dim_size(); ++d) {
                auto* dim = tt->mutable_shape()->mutable_dim(d);
                if (dim->has_dim_value()) continue;
                FreeDim fd{in->name(), d, dim->has_dim_param() ? dim->dim_param() : std::string(), 1, ""};
                if (auto b = bound.find(fd.name); !fd.name.empty() && b != bound.end()) {
                    fd.value = b->second.first;
                    fd.bound_by = b->second.second;
                } else if (gs) {
                    fd.value = gs->shape[static_cast<size_t>(d)];
                    fd.bound_by = gs->from;
                } else {
                    const std::string how = fd.name.empty() ? "give --input-shape=" + in->name() + "=..." : "give --dim=" + fd.name + "=SIZE";
                    diag_->warning(input_loc(i), "input '" + in->name() + "': dimension " + std::to_string(d) + " " +
                                                    (fd.name.empty() ? std::string("without a size") : "'" + fd.name + "'") +
                                                    " is taken as 1 (" + how + ", or feed an array with --input)");
                }
                dim->set_dim_value(fd.value);
                g_->free_dims.push_back(std::move(fd));
            }
        }
        return true;
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
        diag_->error({}, msg);
        return false;
    }

    bool supported_op(const std::string& op) const {
        const auto& t = onnx_op_table();
        auto it = t.find(op);
        return it != t.end() && (!it->second.needs || have_op(it->second.needs));
    }

  public:
    // ---- for the op mappers (onnx_ops*.cpp) ----
    static bool have_op(const std::string& graphrun_name) { return find_op(graphrun_name).has_value(); }
    int64_t opset() const { return opset_; }
    // Whether a node of the model or its outputs read ONNX value `name`
    // (an optional output that nothing reads may be left unmade).
    bool read_anywhere(const std::string& name) {
        if (!read_names_) {
            read_names_.emplace();
            const auto& gr = model_.graph();
            // Subgraphs (an If's branches) read outer values by name too.
            std::function<void(const onnx::GraphProto&)> reads = [&](const onnx::GraphProto& g) {
                for (const auto& node : g.node()) {
                    for (const auto& in : node.input()) read_names_->insert(in);
                    for (const auto& a : node.attribute()) {
                        if (a.has_g()) reads(a.g());
                        for (const auto& sub : a.graphs()) reads(sub);
                    }
                }
                for (const auto& o : g.output()) read_names_->insert(o.name());
            };
            reads(gr);
        }
        return read_names_->count(name) != 0;
    }
    // The model's own opset (opset() is 17 for a model read in its opset-17 form).
    int64_t model_opset() const { return model_opset_ ? model_opset_ : opset_; }
    // The importer's record of an ONNX value (created on first use).
    Value& value_slot(const std::string& name) { return values_[name]; }

    // ---- values ----
    Loc node_loc() const { return pointer_loc("/graph/node/" + std::to_string(node_index_)); }
    static Loc pointer_loc(const std::string& p) {
        Loc l;
        l.pointer = p;
        return l;
    }
    Loc input_loc(int i) const { return pointer_loc("/graph/input/" + std::to_string(i)); }

    // The graphrun identifier of an ONNX value name: the name itself when it
    // is an identifier, else one made from it that is no other value's (an
    // ONNX name or an identifier given before). One-to-one: distinct values
    // keep distinct names, and each is found again under its ONNX name.
    std::string fresh_name(const std::string& onnx_name) {
        // A scratch graph's names are its own (the model's stay as they were).
        if (folding_) return "fold_" + std::to_string(fold_names_++);
        if (is_onnx_identifier(onnx_name) && used_names_.insert(onnx_name).second) return onnx_name;
        const std::string base = identifier(onnx_name);
        std::string name = base;
        // Each base's next suffix is kept: an unrolled loop names one base
        // thousands of times, and counting up from _2 each time was quadratic.
        int& next = next_suffix_[base];
        for (int k = std::max(next, 2); used_names_.count(name) || (reserved_.count(name) && name != onnx_name); ++k) {
            name = base + "_" + std::to_string(k);
            next = k + 1;
        }
        used_names_.insert(name);
        return name;
    }

    // Binds the node `id` to the ONNX value `onnx_name`.
    void bind(const std::string& onnx_name, NodeId id) {
        std::string name = fresh_name(onnx_name);
        id = b_->assign(name, id, g_->node(id).loc);
        if (name != onnx_name) g_->node(id).set_display(onnx_name);
        Value& v = values_[onnx_name];
        v.id = id;
    }

    NodeId const_node(const HostValue& hv, const Loc& loc) {
        HostValue copy = hv;
        return const_node(std::move(copy), loc);
    }
    // The same, taking the bytes (a weight is not copied again).
    NodeId const_node(HostValue&& hv, const Loc& loc) {
        std::vector<NamedAttr> attrs;
        attrs.push_back(NamedAttr{"shape", int_list(hv.shape), {}});
        attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(hv.dtype)), {}});
        NodeId id = b_->add_node(OpKind::Const, {}, std::move(attrs), loc);
        Node& n = g_->node(id);
        n.host_literal = true;
        n.literal = std::move(hv.bytes);
        return id;
    }

    // The node holding ONNX value `name`; a folded value gets a const node on first use.
    std::optional<NodeId> node_of(const std::string& name) {
        auto it = values_.find(name);
        if (it == values_.end() || (it->second.id == kNoNode && !it->second.folded)) {
            diag_->error(node_loc(), "the value '" + name + "' is used before it is made");
            return std::nullopt;
        }
        Value& v = it->second;
        if (v.id == kNoNode) {
            // A value too big for any fold to read (a weight) moves into its
            // node: the model's weights are held once, not twice.
            const bool big = !folding_ && v.folded->bytes.size() / dtype_size(v.folded->dtype) >
                                              static_cast<size_t>(onnx_fold::kMaxFoldElements);
            NodeId id = big && v.folded.use_count() == 1 ? const_node(std::move(*v.folded), node_loc())
                                                         : const_node(*v.folded, node_loc());
            if (big) v.folded.reset();
            std::string gname = fresh_name(name);
            id = b_->assign(gname, id, node_loc());
            if (gname != name) g_->node(id).set_display(name);
            v.id = id;
        }
        return v.id;
    }

    const Value* value(const std::string& name) const {
        auto it = values_.find(name);
        return it == values_.end() ? nullptr : &it->second;
    }
    Value* value(const std::string& name) {
        auto it = values_.find(name);
        return it == values_.end() ? nullptr : &it->second;
    }
    const HostValue* folded(const std::string& name) const {
        const Value* v = value(name);
        return v && v->folded ? v->folded.get() : nullptr;
    }
    // A value's shape: folded, as ONNX's inference gives it, or else as
    // graphrun's own inference of the graph built so far gives it (ONNX's data
    // propagation stops at some Reshape targets computed from shapes, and
    // every value after them would have none).
    std::optional<Shape> static_shape(const std::string& name) {
        Value* v = value(name);
        if (!v) return std::nullopt;
        if (v->folded) return v->folded->shape;
        if (v->shape || v->id == kNoNode || !opts_.infer_built) return v->shape;
        const auto built = static_cast<NodeId>(g_->nodes.size());
        if (inferred_upto_ < built) {
            opts_.infer_built(*g_, inferred_upto_);
            inferred_upto_ = built;
        }
        const Node& n = g_->node(v->id);
        if (!n.valid) return std::nullopt;
        v->shape = n.shape;
        if (!v->dtype) v->dtype = n.dtype;
        return v->shape;
    }

    void read_initializers() {
        auto* graph = model_.mutable_graph();
        for (int i = 0; i < graph->initializer_size(); ++i) {
            if (stopped()) return;
            auto& t = *graph->mutable_initializer(i);
            std::string why;
            std::optional<HostValue> hv = tensor_value(t, why);
            if (!hv) {
                diag_->error(pointer_loc("/graph/initializer/" + std::to_string(i)),
                            "initializer '" + t.name() + "': " + why);
                continue;
            }
            // The proto's copy of the values is no longer needed (its
            // checks and shape inference have run): freed now, so that a
            // weight is not held twice while the model is read.
            onnx::TensorProto emptied;
            emptied.set_name(t.name());
            t.Swap(&emptied);
            Value& v = values_[t.name()];
            v.dtype = hv->dtype;
            v.shape = hv->shape;
            v.folded = std::make_shared<HostValue>(std::move(*hv));
        }
        // The weights read apart from their external files, no longer in the model's initializers.
        for (auto& [name, hv] : external_values_) {
            Value& v = values_[name];
            v.dtype = hv.dtype;
            v.shape = hv.shape;
            v.folded = std::make_shared<HostValue>(std::move(hv));
        }
        external_values_.clear();
    }

    void read_inputs() {
        const auto& ins = model_.graph().input();
        for (int i = 0; i < ins.size(); ++i) {
            const auto& in = ins.Get(i);
            if (folded(in.name())) continue;  // an initializer listed as an input (IR < 4): a constant
            const size_t errors = diag_->error_count();
            read_input(i, in);
            // A failed input still gets a (failed) node, so that its uses add no errors.
            if (diag_->error_count() != errors) bind(in.name(), b_->add_invalid(input_loc(i)));
        }
    }

    void read_input(int i, const onnx::ValueInfoProto& in) {
        {
            const Value* v = value(in.name());
            const auto* tt = in.type().has_tensor_type() ? &in.type().tensor_type() : nullptr;
            if (!tt || !v || !v->dtype) {
                diag_->error(input_loc(i), "input '" + in.name() + "': its type " +
                                              (tt ? onnx_type_name(tt->elem_type()) : std::string("(not a tensor)")) +
                                              " is not one graphrun has (f32, f64, i32, i64, bool)");
                return;
            }
            if (!v->shape) {
                diag_->error(input_loc(i), "input '" + in.name() + "' has no static shape");
                return;
            }
            std::optional<OpKind> input_op = find_op("input");
            if (!input_op) {
                diag_->error(input_loc(i), "input '" + in.name() + "': this build has no input op");
                return;
            }
            std::vector<NamedAttr> attrs;
            attrs.push_back(NamedAttr{"shape", int_list(*v->shape), {}});
            attrs.push_back(NamedAttr{"dtype", Attr::ident(dtype_name(*v->dtype)), {}});
            bind(in.name(), b_->add_node(*input_op, {}, std::move(attrs), input_loc(i)));
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
        b_->set_outputs(std::move(names), pointer_loc("/graph/output"));
        b_->finish(pointer_loc("/graph"));
    }

    // ---- nodes ----
    void fail(const onnx::NodeProto& n, const std::string& what) {
        diag_->error(node_loc(), n.op_type() + " node '" + n.name() + "': " + what);
    }

    NodeId add(OpKind op, std::vector<NodeId> ins, std::vector<NamedAttr> attrs = {}) {
        Inputs inputs;
        for (NodeId id : ins) inputs.push_back(Input{id, node_loc()});
        return b_->add_node(op, std::move(inputs), std::move(attrs), node_loc());
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

    // If, where its condition folds to a constant (a model's shapes and
    // constants decide it: an exporter's `if x.dim() == 4` traced into the
    // graph): the chosen branch's initializers and nodes are imported in the
    // If's place, reading outer values by name as ONNX's scoping allows, and
    // its outputs become the If's. A condition that only the run would know
    // is refused: graphrun has no run-time branch.
    void import_if(const onnx::NodeProto& n) {
        if (n.input_size() < 1 || n.input(0).empty()) return fail(n, "it has no condition input");
        if (!folded(n.input(0)))
            return fail(n, "its condition '" + n.input(0) +
                               "' must be known when the model is read (a constant, or computed from constants "
                               "and static shapes): graphrun takes an If's branch at load and has no run-time "
                               "branch");
        const HostValue& cond = *folded(n.input(0));
        const std::vector<double> c = onnx_fold::doubles(cond);
        if (c.size() != 1)
            return fail(n, "its condition '" + n.input(0) + "' holds " + std::to_string(c.size()) +
                               " elements; it must hold one");
        const char* which = c[0] != 0 ? "then_branch" : "else_branch";
        const onnx::AttributeProto* a = onnx_fold::find_attr(n, which);
        if (!a || !a->has_g()) return fail(n, std::string("it has no ") + which + " graph");
        const onnx::GraphProto& branch = a->g();
        if (branch.output_size() != n.output_size())
            return fail(n, std::string("its ") + which + " has " + std::to_string(branch.output_size()) +
                               " outputs and the node " + std::to_string(n.output_size()));
        if (!take_subgraph_nodes(n, branch.node_size()) ||
            !prepare_subgraph(n, branch, std::string("its ") + which + " (the branch its condition takes)"))
            return;
        for (const auto& bn : branch.node()) {
            if (stopped()) return;
            import_node(bn);
            if (diag_->over_limit()) return;
        }
        for (int i = 0; i < n.output_size(); ++i) {
            const std::string& from = branch.output(i).name();
            const std::string& to = n.output(i);
            if (to.empty()) continue;
            auto it = values_.find(from);
            if (it == values_.end() || (it->second.id == kNoNode && !it->second.folded))
                return fail(n, std::string("its ") + which + "'s output '" + from + "' is not made in it");
            if (it->second.id == kNoNode) {  // a constant: the If's output is folded too
                const Value src = it->second;
                values_[to] = src;
                continue;
            }
            bind(to, it->second.id);
        }
    }

    // A Loop's iterations, each its body's nodes once, at most this many
    // body nodes in all (a model's loops are unrolled, as RNNs are).
    static constexpr int64_t kMaxUnrolledNodes = int64_t{1} << 16;

    // Before a subgraph `g` of node n (called `what` in messages) is imported:
    // every op it uses must be one graphrun maps (all listed if not); its
    // declared types are noted, its initializers become folded values.
    bool prepare_subgraph(const onnx::NodeProto& n, const onnx::GraphProto& g, const std::string& what) {
        std::set<std::string> unsupported;
        for (const auto& sn : g.node())
            if (!((sn.domain().empty() || sn.domain() == "ai.onnx") && supported_op(sn.op_type())))
                unsupported.insert(sn.domain().empty() ? sn.op_type() : sn.domain() + "." + sn.op_type());
        if (!unsupported.empty()) {
            std::string ops;
            for (const std::string& op : unsupported) ops += (ops.empty() ? "" : ", ") + op;
            fail(n, what + " uses ops graphrun does not support: " + ops);
            return false;
        }
        for (const auto& vi : g.value_info()) note_type(vi);
        for (const auto& vi : g.output()) note_type(vi);
        for (const auto& t : g.initializer()) {
            std::string why;
            std::optional<HostValue> hv = tensor_value(t, why);
            if (!hv) {
                fail(n, what + "'s initializer '" + t.name() + "': " + why);
                return false;
            }
            Value& v = values_[t.name()];
            v.dtype = hv->dtype;
            v.shape = hv->shape;
            v.folded = std::make_shared<HostValue>(std::move(*hv));
        }
        return true;
    }

    // Counts `count` more nodes imported from subgraphs (If branches, Loop
    // iterations), nested ones included: a loop in a loop multiplies, so the
    // bound is on the model's total, not one loop's. False (and the node
    // failed) past kMaxUnrolledNodes.
    bool take_subgraph_nodes(const onnx::NodeProto& n, int64_t count) {
        if (subgraph_nodes_ + count > kMaxUnrolledNodes) {
            fail(n, "its subgraph would bring the nodes imported from the model's If branches and Loop "
                    "iterations (nested ones included) past " + std::to_string(kMaxUnrolledNodes));
            return false;
        }
        subgraph_nodes_ += count;
        return true;
    }

    // Loop with a trip count that folds when the model is read: unrolled,
    // the body imported once per iteration with its iteration number and
    // condition as constants and the loop-carried values as the last
    // iteration left them; scan outputs stacked along a new first axis. The
    // body's condition output must fold too (an early exit it decides is
    // taken when the model is read); a loop whose length only the run would
    // know is refused.
    void import_loop(const onnx::NodeProto& n) {
        const onnx::AttributeProto* a = onnx_fold::find_attr(n, "body");
        if (!a || !a->has_g()) return fail(n, "it has no body graph");
        const onnx::GraphProto& body = a->g();
        const int carried = n.input_size() - 2;
        if (carried < 0 || body.input_size() != carried + 2 || body.output_size() < carried + 1 ||
            n.output_size() != body.output_size() - 1)
            return fail(n, "its body's inputs and outputs do not match the node's");
        const int scans = body.output_size() - 1 - carried;
        if (n.input(0).empty())
            return fail(n, "it has no trip count: graphrun unrolls a Loop whose trip count is known when the "
                           "model is read");
        if (!folded(n.input(0)))
            return fail(n, "its trip count '" + n.input(0) +
                               "' must be known when the model is read (a constant, or computed from constants "
                               "and static shapes): graphrun unrolls a Loop and has no run-time loop");
        const std::vector<int64_t> m = onnx_fold::ints(*folded(n.input(0)));
        if (m.size() != 1 || m[0] < 0)
            return fail(n, "its trip count '" + n.input(0) + "' must be one non-negative integer");
        bool go = true;
        if (!n.input(1).empty()) {
            if (!folded(n.input(1)))
                return fail(n, "its condition '" + n.input(1) + "' must be known when the model is read");
            const std::vector<double> c = onnx_fold::doubles(*folded(n.input(1)));
            if (c.size() != 1) return fail(n, "its condition '" + n.input(1) + "' must hold one element");
            go = c[0] != 0;
        }
        const int64_t per = std::max(body.node_size(), 1);
        if (m[0] > kMaxUnrolledNodes / per)
            return fail(n, "its trip count " + std::to_string(m[0]) + " times its body's " +
                               std::to_string(body.node_size()) + " nodes is more than the " +
                               std::to_string(kMaxUnrolledNodes) + " nodes graphrun unrolls a Loop into");
        if (!prepare_subgraph(n, body, "its body")) return;
        std::vector<Value> cur;
        for (int k = 0; k < carried; ++k) {
            const Value* v = value(n.input(2 + k));
            if (!v || (v->id == kNoNode && !v->folded))
                return fail(n, "its loop-carried input '" + n.input(2 + k) + "' is used before it is made");
            cur.push_back(*v);
        }
        auto scalar_value = [](DType t, int64_t x) {
            Value v;
            HostValue hv;
            hv.dtype = t;
            hv.bytes.resize(dtype_size(t));
            if (t == DType::Bool) hv.bytes[0] = x != 0;
            else std::memcpy(hv.bytes.data(), &x, sizeof x);
            v.dtype = t;
            v.shape = Shape{};
            v.folded = std::make_shared<HostValue>(std::move(hv));
            return v;
        };
        std::vector<std::vector<Value>> scanned(static_cast<size_t>(scans));
        for (int64_t i = 0; i < m[0] && go; ++i) {
            if (stopped()) return;
            if (!take_subgraph_nodes(n, body.node_size())) return;
            // The body's values are made afresh each iteration (a name folded in
            // one and built in the next must not keep the other's record).
            for (const auto& bn : body.node())
                for (const auto& out : bn.output()) values_.erase(out);
            if (!body.input(0).name().empty()) values_[body.input(0).name()] = scalar_value(DType::I64, i);
            if (!body.input(1).name().empty()) values_[body.input(1).name()] = scalar_value(DType::Bool, 1);
            for (int k = 0; k < carried; ++k) values_[body.input(2 + k).name()] = cur[static_cast<size_t>(k)];
            for (const auto& bn : body.node()) {
                import_node(bn);
                if (diag_->over_limit()) return;
            }
            if (diag_->has_errors()) return;
            auto made = [&](const std::string& name) -> const Value* {
                const Value* v = value(name);
                if (!v || (v->id == kNoNode && !v->folded)) {
                    fail(n, "its body's output '" + name + "' is not made in it");
                    return nullptr;
                }
                return v;
            };
            const Value* c = made(body.output(0).name());
            if (!c) return;
            if (!c->folded)
                return fail(n, "its body's condition output '" + body.output(0).name() +
                                   "' must be known when the model is read (graphrun unrolls a Loop; an exit "
                                   "decided by the data would need a run-time loop)");
            const std::vector<double> cv = onnx_fold::doubles(*c->folded);
            if (cv.size() != 1) return fail(n, "its body's condition output must hold one element");
            go = cv[0] != 0;
            for (int k = 0; k < carried; ++k) {
                const Value* v = made(body.output(1 + k).name());
                if (!v) return;
                cur[static_cast<size_t>(k)] = *v;
            }
            for (int s = 0; s < scans; ++s) {
                const Value* v = made(body.output(1 + carried + s).name());
                if (!v) return;
                scanned[static_cast<size_t>(s)].push_back(*v);
            }
        }
        auto node_for = [&](Value& v) {
            if (v.id == kNoNode) v.id = const_node(*v.folded, node_loc());
            return v.id;
        };
        for (int k = 0; k < carried; ++k) {
            const std::string& to = n.output(k);
            if (to.empty()) continue;
            Value& v = cur[static_cast<size_t>(k)];
            if (v.id == kNoNode) values_[to] = v;  // a constant: the output folds too
            else bind(to, v.id);
        }
        for (int s = 0; s < scans; ++s) {
            const std::string& to = n.output(carried + s);
            if (to.empty() || !read_anywhere(to)) continue;
            std::vector<Value>& parts = scanned[static_cast<size_t>(s)];
            if (parts.empty())
                return fail(n, "its scan output '" + to + "' would be empty (no iteration ran): not supported");
            std::vector<NodeId> rows;
            for (Value& v : parts)
                rows.push_back(add(OpKind::Unsqueeze, {node_for(v)}, {named("axes", int_list({0}))}));
            bind(to, rows.size() == 1 ? rows[0] : add(OpKind::Concat, rows, {named("axis", Attr::integer(0))}));
        }
    }

  private:
    void import_node(const onnx::NodeProto& n) {
        // Folded: every input known here and the op one the folder evaluates.
        fold_over_limit_ = 0;
        if (try_fold(n)) return;
        const auto& t = onnx_op_table();
        auto it = t.find(n.op_type());
        if (it != t.end() && it->second.build) {
            if (try_fold_built(n, it->second.build)) return;
            return it->second.build(*this, n);
        }
        if (fold_over_limit_) {
            diag_->over_limit_error(node_loc(), n.op_type() + " node '" + n.name() + "': its folded value needs " +
                                                   size_text(fold_over_limit_) + ", which brings the model's weights "
                                                   "and folded values to " + size_text(weight_bytes_ + folded_bytes_ +
                                                                                        fold_over_limit_) +
                                                   ", more than the memory limit of " + size_text(memory_limit_) +
                                                   "; graphrun folds " + n.op_type() + " only on constants");
            return;
        }
        if (fold_budget_spent_)
            return fail(n, "the model's folded constants would take more than " +
                               std::to_string(onnx_fold::kMaxFoldTotalBytes) + " bytes; graphrun folds " +
                               n.op_type() + " only on constants");
        fail(n, "its inputs must be constants here (graphrun folds " + n.op_type() + " only on constants)");
    }

    // Folds a node whose inputs are all constants by running its graphrun
    // nodes (the op table's mapping, built into a scratch graph) on the CPU
    // with the engine's kernels: a folded value is the value the run would
    // compute, by the same kernel. False (nothing changed) where the node is
    // not folded: an input not known here or too big, a value past the fold's
    // bounds, the memory limit or the fold budget, a mapping that reports an
    // error or builds what the evaluator refuses (const_eval.h); the node is
    // then built into the model's graph, and what went wrong reported there.
    // A kernel's error on the constants is the node's error (true).
    bool try_fold_built(const onnx::NodeProto& n, const std::function<void(Importer&, const onnx::NodeProto&)>& build) {
        if (!opts_.evaluate_built || folding_ || n.input_size() == 0) return false;
        const std::string& op = n.op_type();
        if (op == "If" || op == "Loop") return false;  // their subgraphs' nodes fold one by one
        // A quantized weight's dequantization folds whole (within the budget):
        // the model then holds it once, as f32.
        const int64_t max_elements = op == "DequantizeLinear"
                                         ? static_cast<int64_t>(onnx_fold::kMaxFoldTotalBytes / 4)
                                         : onnx_fold::kMaxFoldElements;
        std::vector<std::string> names;
        for (const auto& name : n.input()) {
            if (name.empty()) continue;
            const HostValue* hv = folded(name);
            if (!hv || static_cast<int64_t>(hv->bytes.size() / dtype_size(hv->dtype)) > max_elements) return false;
            names.push_back(name);
        }
        for (const auto& name : n.output())
            if (!name.empty()) names.push_back(name);
        // What the mapping changes of the importer's values, restored after.
        std::vector<std::pair<std::string, std::optional<Value>>> saved;
        for (const auto& name : names) {
            auto it = values_.find(name);
            saved.emplace_back(name, it == values_.end() ? std::nullopt : std::optional<Value>(it->second));
        }
        auto restore = [&] {
            for (auto& [name, v] : saved) {
                if (v) values_[name] = std::move(*v);
                else values_.erase(name);
            }
        };
        Graph scratch;
        Diagnostics scratch_diag;
        GraphBuilder scratch_b(scratch, scratch_diag);
        Graph* g = g_;
        Diagnostics* d = diag_;
        GraphBuilder* b = b_;
        const NodeId inferred = inferred_upto_;
        g_ = &scratch;
        diag_ = &scratch_diag;
        b_ = &scratch_b;
        inferred_upto_ = 0;
        folding_ = true;
        build(*this, n);
        folding_ = false;
        g_ = g;
        diag_ = d;
        b_ = b;
        inferred_upto_ = inferred;
        // The values the node's outputs came to: nodes of the scratch graph.
        std::vector<std::string> outs;
        std::vector<NodeId> wanted;
        bool ok = !scratch_diag.has_errors();
        for (const auto& name : n.output()) {
            if (!ok || name.empty()) continue;
            const Value* v = value(name);
            if (!v || v->id == kNoNode) {
                ok = ok && (!v || !v->folded) && !read_anywhere(name);  // an optional output left unmade
                continue;
            }
            outs.push_back(name);
            wanted.push_back(v->id);
        }
        std::vector<std::vector<uint8_t>> bytes;
        bool kernel_error = false;
        std::string why;
        if (ok && !wanted.empty()) {
            // The scratch values are host memory too: within what the limit leaves.
            const uint64_t held = weight_bytes_ + folded_bytes_;
            const uint64_t room = !memory_limit_ ? UINT64_MAX : memory_limit_ > held ? memory_limit_ - held : 0;
            why = opts_.evaluate_built(scratch, wanted, max_elements, room, bytes, kernel_error);
        }
        restore();
        if (kernel_error) {
            // Every pass would stop here: said now, with the node.
            fail(n, "computing it from its constant inputs fails: " + why);
            return true;
        }
        if (!ok || wanted.empty() || !why.empty()) return false;
        uint64_t total = 0;
        for (const auto& v : bytes) total += v.size();
        // Folded values are held on the host like the weights: the memory
        // limit bounded them above (`room`); past the bound on folds, the
        // node is built instead.
        if (folded_bytes_ + total > onnx_fold::kMaxFoldTotalBytes) return false;
        folded_bytes_ += total;
        for (size_t i = 0; i < outs.size(); ++i) {
            const Node& made = scratch.node(wanted[i]);
            auto hv = std::make_shared<HostValue>();
            hv->dtype = made.dtype;
            hv->shape = made.shape;
            hv->bytes = std::move(bytes[i]);
            Value& v = values_[outs[i]];
            v.id = kNoNode;
            v.dtype = hv->dtype;
            v.shape = hv->shape;
            v.folded = std::move(hv);
        }
        return true;
    }

    // Constant, Shape and Size: values from an attribute or a static shape
    // (onnx_fold::evaluate); every other op folds by try_fold_built.
    bool try_fold(const onnx::NodeProto& n) {
        const std::string& op = n.op_type();
        if (op != "Constant" && op != "Shape" && op != "Size") return false;
        std::optional<Shape> in_shape;
        if (op != "Constant") {
            // Shape and Size need only their input's static shape, not its values.
            in_shape = n.input_size() > 0 ? static_shape(n.input(0)) : std::nullopt;
            if (!in_shape) {
                fail(n, "the shape of '" + (n.input_size() > 0 ? n.input(0) : std::string()) + "' is not static");
                return true;
            }
        }
        std::string why;
        std::optional<std::vector<HostValue>> out = onnx_fold::evaluate(n, in_shape, why);
        if (!out) {
            if (!why.empty()) {
                fail(n, why);
                return true;
            }
            return false;  // not an op the folder evaluates: built as nodes
        }
        uint64_t bytes = 0;
        for (const HostValue& v : *out) bytes += v.bytes.size();
        // Folded values are held on the host like the weights (a Constant's
        // value is one of them, counted already): past the memory limit, or
        // the bound on folds, the node is built instead, where the op has a
        // mapping (the run then counts its value); else refused (import_node).
        if (n.op_type() != "Constant" && memory_limit_ && weight_bytes_ + folded_bytes_ + bytes > memory_limit_) {
            fold_over_limit_ = bytes;
            return false;
        }
        if (n.op_type() != "Constant" && folded_bytes_ + bytes > onnx_fold::kMaxFoldTotalBytes) {
            fold_budget_spent_ = true;
            return false;  // built as nodes where the op has a mapping; else refused (import_node)
        }
        if (n.op_type() != "Constant") folded_bytes_ += bytes;
        for (int i = 0; i < n.output_size() && i < static_cast<int>(out->size()); ++i) {
            Value& v = values_[n.output(i)];
            v.dtype = (*out)[static_cast<size_t>(i)].dtype;
            v.shape = (*out)[static_cast<size_t>(i)].shape;
            v.folded = std::make_shared<HostValue>(std::move((*out)[static_cast<size_t>(i)]));
        }
        return true;
    }

    // The graph being built and its builder and diagnostics: the model's, or,
    // while a node is folded (try_fold_built), a scratch graph's.
    GraphBuilder main_b_;
    Graph* g_;
    Diagnostics* diag_;
    GraphBuilder* b_;
    onnx::ModelProto model_;
    int64_t opset_ = 0;
    int64_t model_opset_ = 0;          // the model's own, where it was lowered to 17 (0: not)
    onnx_opset::Lowering lowering_;
    int node_index_ = 0;
    std::unordered_map<std::string, Value> values_;
    std::set<std::string> used_names_;  // graphrun identifiers given
    std::unordered_map<std::string, int> next_suffix_;  // fresh_name: per base, the suffix to try first
    std::set<std::string> reserved_;    // ONNX names that are identifiers (each its own)
    uint64_t memory_limit_ = 0;         // the CPU's (0: none)
    static inline const OnnxReadOptions no_opts_{};
    const OnnxReadOptions& opts_;
    const ShapeBindings& shapes_;
    const std::string& model_dir_;  // where external data is found ("" for none)
    std::vector<std::string>* external_files_ = nullptr;
    NodeId inferred_upto_ = 0;  // the nodes opts_.infer_built has filled in
    std::optional<std::set<std::string>> read_names_;  // read_anywhere's, made when first asked
    // External initializers over kApartBytes, read straight into their values.
    static constexpr uint64_t kApartBytes = uint64_t{1} << 20;
    std::map<std::string, HostValue> external_values_;
    std::set<std::string> stand_ins_;  // of those, the ones standing in as graph inputs meanwhile
    uint64_t weight_bytes_ = 0;         // the initializers' and Constants' values, as declared
    uint64_t folded_bytes_ = 0;         // made by folds so far (kMaxFoldTotalBytes)
    uint64_t fold_over_limit_ = 0;      // the node being imported: its folded value's bytes, past the memory limit
    bool fold_budget_spent_ = false;
    bool folding_ = false;              // try_fold_built is building into its scratch graph
    uint64_t fold_names_ = 0;           // the scratch graphs' names (fresh_name)
    int64_t subgraph_nodes_ = 0;        // imported from If branches and Loop iterations (kMaxUnrolledNodes)
};

// The dtype of ONNX value `name` as the importer knows it (f32 when it does not).
inline DType dtype_of_value(Importer& im, const std::string& name) {
    const Value* v = im.value(name);
    return v && v->dtype ? *v->dtype : DType::F32;
}

}  // namespace graphrun::onnx_import
