// The eager executor: statements run one at a time in a session that stays
// open; names hold values, and the reference rules of eager_session.h decide
// when a value becomes unreferenced.
#include "engine/runtime/eager_session.h"

#include <algorithm>
#include <chrono>
#include <thread>
#include <unordered_map>

#include "engine/ir/device_name.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/plan/plan.h"  // aliases_input

namespace graphrun {

namespace {

// Background's backlog bound: with no whole-program plan there is no static
// peak to bound it by, so it is the strategy's floor (4 MiB).
constexpr uint64_t kEagerBacklogBytes = uint64_t{4} << 20;

bool uses_blas(const Node& n) {
    return (n.op == OpKind::Matmul || n.op == OpKind::Gemm || n.op == OpKind::Conv ||
            n.op == OpKind::ConvTranspose) &&
           device_kind(n.placed) == DeviceKind::Cpu;
}

}  // namespace

// One run's per-node records, compiled once per run (a repeat body's nodes
// run many times from the same records), and the static reference analysis.
struct EagerSession::Compiled {
    struct Exec {
        Kernel* kernel = nullptr;  // null for an alias, a stored value, or a node that never runs
        Device* dev = nullptr;
        uint64_t bytes = 0;
        TensorRef out;
        uint32_t first_input = 0, n_inputs = 0;
        NodeId alias_of = kNoNode;
        int32_t store_slot = -1;  // a stored name's value
        NodeId prev = kNoNode;    // named node: the binding it replaces, unreferenced after it runs
        int32_t pin = -1;         // the frame slot holding it for fetch(), or -1
    };
    struct ExecInput {
        NodeId id;
        TensorRef ref;
    };
    std::vector<Exec> exec;
    std::vector<ExecInput> inputs;
    std::vector<std::unique_ptr<Kernel>> kernels;
    std::vector<std::vector<NodeId>> locals;  // per repeat: last bindings of the body's own names
    std::vector<TensorRef> scratch_inputs;
    size_t base = 0;  // frame slot of node 0
    size_t tmp = 0;   // a spare slot: a node's old value while its new one is computed
};

// The executor of one run: walks the blocks, keeps the frame's references.
struct EagerSession::Runner {
    Runner(EagerSession& session, const Graph& graph, Compiled& compiled, bool instr)
        : s(session), g(graph), c(compiled), instrumented(instr) {}
    EagerSession& s;
    const Graph& g;
    Compiled& c;
    const bool instrumented;
    int64_t iteration = 0, iterations = 1;
    std::vector<LoopPass> position;  // the enclosing repeats' passes, outermost first
    std::vector<PendingRelease> scratch;
    std::optional<Error> error;

    size_t v(NodeId id) const { return c.base + static_cast<size_t>(id); }

    // Where the run is: the iteration (when it has several) and each enclosing repeat's pass.
    std::string where() const {
        std::string out =
            iterations > 1 ? ", iteration " + std::to_string(iteration + 1) + " of " + std::to_string(iterations) : "";
        for (const LoopPass& p : position) {
            const Repeat& rep = g.repeats[static_cast<size_t>(p.repeat)];
            out += ", pass " + std::to_string(p.pass + 1) + " of " + std::to_string(p.passes) + " of the repeat";
            if (!rep.loc.pointer.empty()) out += " at " + std::string(rep.loc.pointer.view());
            else if (rep.loc.line) out += " at line " + std::to_string(rep.loc.line);
        }
        return out;
    }

    std::string oom(const Node& n, uint64_t bytes, const Allocator& a, const std::string& what) const {
        MemoryStats st = a.stats();
        return "out of memory on " + std::string(n.placed) + " at " + node_label(n) + where() + ": " + what +
               " needs " + std::to_string(bytes) + " bytes; in use " + std::to_string(st.in_use) + " bytes" +
               (st.workspace ? " (and " + std::to_string(st.workspace) + " bytes of workspace)" : "") + ", limit " +
               std::to_string(a.limit()) + " bytes" + s.cleanup_->oom_note(st);
    }

    void release_scratch() {
        if (s.cleanup_->holds_until_close())
            for (const PendingRelease& f : scratch) s.cleanup_->on_unreferenced(f);
        else
            for (const PendingRelease& f : scratch) f.alloc->release_scratch(f.data, f.bytes);
        scratch.clear();
    }

    bool fail(Error e) {
        release_scratch();
        error = std::move(e);
        return false;
    }

    bool run_node(NodeId id) {
        if (s.opts_.interrupt) {
            if (const int sig = s.opts_.interrupt->load(std::memory_order_relaxed)) {
                std::string name = sig == 2 ? "SIGINT" : sig == 15 ? "SIGTERM" : "signal " + std::to_string(sig);
                error = interrupted_by("interrupted by " + name + " before " + node_label(g.node(id)) + where(), sig);
                return false;
            }
        }
        s.cleanup_->at_safe_point();  // before dispatch, before the output is allocated
        const Compiled::Exec& e = c.exec[static_cast<size_t>(id)];
        ExecutionFrame& frame = s.frame_;
        if (e.store_slot >= 0) {
            frame.share(v(id), static_cast<NodeId>(e.store_slot));
        } else if (e.alias_of != kNoNode) {
            frame.share(v(id), static_cast<NodeId>(v(e.alias_of)));
        } else if (e.kernel) {
            const Node& n = g.node(id);
            Device& dev = *e.dev;
            for (uint32_t i = 0; i < e.n_inputs; ++i) {
                const Compiled::ExecInput& in = c.inputs[e.first_input + i];
                TensorRef& ref = c.scratch_inputs[i];
                ref = in.ref;
                const ExecutionFrame::Buffer* src = frame.buffer_of(static_cast<NodeId>(v(in.id)));
                if (!src) {
                    if (ref.numel == 0) continue;
                    return fail(runtime_error_at(node_label(n) + ": input '" + std::string(g.node(in.id).display()) +
                                             "' holds no value (an executor error)", n.loc));
                }
                ref.data = src->data;
                if (src->dev == &dev) continue;
                void* p = allocate_with_retry(dev, *s.cleanup_, src->bytes);
                const Node& from = g.node(in.id);
                if (!p)
                    return fail(runtime_error_at(oom(n, src->bytes, dev.allocator(),
                                             "the copy of input '" + std::string(from.display()) + "' " +
                                                 type_string(from.dtype, from.shape) + " from " + src->dev->name()), n.loc));
                scratch.push_back(PendingRelease{p, src->bytes, &dev.allocator()});
                const uint64_t bytes = static_cast<uint64_t>(ref.numel) * dtype_size(from.dtype);
                std::string err = copy_between_devices(dev, p, *src->dev, src->data, bytes);
                if (!err.empty())
                    return fail(runtime_error_at(node_label(n) + ": copying input '" + std::string(from.display()) +
                                             "' from " + src->dev->name() + " to " + dev.name() + " failed: " + err, n.loc));
                dev.allocator().add_copied_in(bytes);
                ref.data = p;
            }
            // A value computed again (a repeat body's next pass) keeps its old
            // buffer until the new one is computed: rebinding, not reuse.
            const bool had_old = frame.buffer_of(static_cast<NodeId>(v(id))) != nullptr;
            if (had_old) frame.share(static_cast<NodeId>(c.tmp), static_cast<NodeId>(v(id)));
            void* data = allocate_with_retry(dev, *s.cleanup_, e.bytes);
            if (!data) {
                if (had_old) frame.drop(static_cast<NodeId>(c.tmp));
                return fail(runtime_error_at(oom(n, e.bytes, dev.allocator(), type_string(n.dtype, n.shape)), n.loc));
            }
            frame.drop(static_cast<NodeId>(v(id)));
            frame.bind_new(static_cast<NodeId>(v(id)), data, e.bytes, &dev);
            TensorRef out = e.out;
            out.data = data;
            std::string err = e.kernel->run(c.scratch_inputs.data(), e.n_inputs, out, s.ctx_);
            if (!scratch.empty()) release_scratch();
            if (had_old) frame.drop(static_cast<NodeId>(c.tmp));
            if (!err.empty()) {
                error = runtime_error_at(node_label(n) + " on " + std::string(n.placed) + ": " + err, n.loc);
                return false;
            }
        }
        if (e.pin >= 0) frame.share(e.pin, static_cast<NodeId>(v(id)));
        return true;
    }

    bool run_node_instrumented(NodeId id) {
        auto t0 = RunClock::now();
        bool ok = run_node(id);
        const Node& n = g.node(id);
        const Compiled::Exec& x = c.exec[static_cast<size_t>(id)];
        if (Device* d = x.dev; ok && d && d->kind() != DeviceKind::Cpu) {
            if (std::string se = d->synchronize(); !se.empty()) {
                error = runtime_error_at(node_label(n) + " on " + std::string(n.placed) + ": " + se, n.loc);
                ok = false;
            }
        }
        const auto t1 = RunClock::now();
        if (s.opts_.profile) {
            OpProfile& p = s.op_profile_[static_cast<size_t>(n.op)];
            p.ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
            ++p.count;
            if (x.kernel) p.bytes += x.bytes;
        }
        if (s.opts_.observer && ok) {
            const std::string_view dev = x.dev ? std::string_view(x.dev->name()) : n.placed;
            s.opts_.observer->on_node(NodeRun{n, dev, x.kernel ? x.bytes : 0, t0, t1});
        }
        return ok;
    }

    // A statement ended with its named node `id`: its temporaries and the
    // binding it replaced are unreferenced. A named constant has no
    // temporaries of its own: the ones pending belong to the expression it
    // sits in (an ONNX node's mapping reads a named weight in its middle),
    // and stay until that expression's named node (`drop_temps` false).
    void statement_end(NodeId id, std::vector<NodeId>& temps, bool drop_temps = true) {
        if (drop_temps) {
            for (NodeId t : temps) s.frame_.drop(static_cast<NodeId>(v(t)));
            temps.clear();
        }
        const NodeId prev = c.exec[static_cast<size_t>(id)].prev;
        if (prev != kNoNode && prev != id) s.frame_.drop(static_cast<NodeId>(v(prev)));
        ++s.statements_;
    }

    bool block(const std::vector<Stmt>& body) {
        std::vector<NodeId> temps;
        for (const Stmt& st : body) {
            if (st.kind == Stmt::Kind::Repeat) {
                if (!loop(st.index)) return false;
                continue;
            }
            if (st.kind == Stmt::Kind::Del) {  // `del x`: x's value is unreferenced by it
                if (const NodeId id = g.dels[static_cast<size_t>(st.index)].value; id != kNoNode)
                    s.frame_.drop(static_cast<NodeId>(v(id)));
                ++s.statements_;
                continue;
            }
            const NodeId id = st.index;
            if (!(instrumented ? run_node_instrumented(id) : run_node(id))) return false;
            if (g.node(id).generated) temps.push_back(id);
            else if (c.exec[static_cast<size_t>(id)].store_slot < 0)  // not a stored name's input
                statement_end(id, temps, g.node(id).op != OpKind::Const);
        }
        for (NodeId t : temps) s.frame_.drop(static_cast<NodeId>(v(t)));  // a last statement with no name
        return true;
    }

    bool loop(int32_t r) {
        const Repeat& rep = g.repeats[static_cast<size_t>(r)];
        ExecutionFrame& frame = s.frame_;
        // The loop's parameters take over their names' values.
        for (const Carry& cr : rep.carries) {
            frame.share(static_cast<NodeId>(v(cr.param)), static_cast<NodeId>(v(cr.init)));
            frame.drop(static_cast<NodeId>(v(cr.init)));
        }
        position.push_back(LoopPass{r, 0, rep.count});
        for (int64_t p = 0; p < rep.count; ++p) {
            position.back().pass = p;
            if (!block(rep.body)) return false;
            for (const Carry& cr : rep.carries) {
                frame.share(static_cast<NodeId>(v(cr.param)), static_cast<NodeId>(v(cr.update)));
                frame.drop(static_cast<NodeId>(v(cr.update)));
            }
            s.cleanup_->at_safe_point();
            if (s.opts_.observer) s.opts_.observer->on_pass_end(PassEnd{iteration, position});
        }
        position.pop_back();
        // A fetched loop-carried value is the parameter's after the loop.
        for (const Carry& cr : rep.carries)
            if (const int32_t pin = c.exec[static_cast<size_t>(cr.param)].pin; pin >= 0)
                frame.share(pin, static_cast<NodeId>(v(cr.param)));
        for (NodeId id : c.locals[static_cast<size_t>(r)]) frame.drop(static_cast<NodeId>(v(id)));
        return true;
    }
};

EagerSession::EagerSession(SessionOptions opts)
    : opts_(with_defaults(opts)),
      factory_(opts_.cpu_memory_limit, opts_.gpu_runtime, opts_.gpu),
      cleanup_(make_cleanup(opts_.cleanup, kEagerBacklogBytes)),
      frame_(0, *cleanup_) {
    cleanup_->set_observer(opts_.observer);
    ctx_.threads = std::max(1, opts_.threads);
    if (ctx_.threads > 1) {
        pool_ = std::make_unique<ThreadPool>(ctx_.threads);
        ctx_.pool = pool_.get();
    }
    op_profile_.resize(static_cast<size_t>(OpKind::Invalid) + 1);
    for (size_t k = 0; k < op_profile_.size(); ++k) op_profile_[k].op = op_name(static_cast<OpKind>(k));
    cleanup_->start();
}

EagerSession::~EagerSession() { close(); }

Device* EagerSession::device_for(std::string_view name, std::optional<Error>& error) {
    std::string why;
    Device* dev = open_device(devices_, factory_, name, cleanup_, ctx_, opts_.fail_allocation_countdown, &why);
    if (!dev) error = runtime_error_at("cannot open " + std::string(name) + ": " + why);
    return dev;
}

int32_t EagerSession::store_slot(std::string_view name) const {
    auto it = slot_of_.find(name);
    return it == slot_of_.end() ? -1 : it->second;
}

std::optional<Error> EagerSession::run(const Graph& g, const EagerRun& spec) {
    if (closed_) return runtime_error_at("the session is closed");
    release_fetched();
    auto t0 = std::chrono::steady_clock::now();
    // The frame: the store's slots (and room for the new names), then one
    // slot per node, the spare, and one per fetched value.
    Compiled c;
    const size_t n = g.nodes.size();
    c.base = names_.size() + spec.bind.size();
    c.tmp = c.base + n;
    frame_.ensure(c.tmp + 1 + spec.fetch.size());
    c.exec.resize(n);
    c.kernels.resize(n);
    c.locals.resize(g.repeats.size());
    for (NodeId id : spec.from_store) {
        const int32_t slot = store_slot(g.node(id).name);
        if (slot < 0) return runtime_error_at("no value is bound to '" + g.node(id).name + "'", g.node(id).loc);
        c.exec[static_cast<size_t>(id)].store_slot = slot;
    }
    for (size_t k = 0; k < spec.fetch.size(); ++k) {
        Compiled::Exec& e = c.exec[static_cast<size_t>(spec.fetch[k])];
        if (e.pin < 0) e.pin = static_cast<int32_t>(c.tmp + 1 + k);
        fetched_.emplace_back(spec.fetch[k], e.pin);
    }

    // Per-node records: device, kernel, buffer size, inputs.
    std::optional<Error> err;
    size_t max_inputs = 0;
    bool blas = false;
    for (size_t i = 0; i < n && !err; ++i) {
        const Node& node = g.nodes[i];
        Compiled::Exec& e = c.exec[i];
        if (node.op == OpKind::LoopParam || node.op == OpKind::Invalid || e.store_slot >= 0) continue;
        if (aliases_input(g, node)) {
            e.alias_of = node.inputs[0].id;
            continue;
        }
        Device* dev = device_for(node.placed, err);
        if (!dev) break;
        const int64_t numel = checked_numel(node.shape).value_or(0);
        e.dev = dev;
        e.bytes = checked_buffer_bytes(numel, node.dtype).value_or(0);
        e.out = TensorRef{nullptr, node.dtype, &node.shape, numel};
        e.first_input = static_cast<uint32_t>(c.inputs.size());
        e.n_inputs = static_cast<uint32_t>(node.inputs.size());
        for (const Input& in : node.inputs) {
            const Node& src = g.node(in.id);
            c.inputs.push_back(Compiled::ExecInput{
                in.id, TensorRef{nullptr, src.dtype, &src.shape, checked_numel(src.shape).value_or(0)}});
        }
        max_inputs = std::max(max_inputs, node.inputs.size());
        blas |= uses_blas(node);
        c.kernels[i] = dev->make_kernel(g, node);
        e.kernel = c.kernels[i].get();
    }
    // Each input's kernel takes its feed (the graph holds none).
    std::vector<uint8_t> fed(n, 0);
    for (const FeedView& f : spec.feeds) {
        if (err) break;
        const size_t i = static_cast<size_t>(f.id);
        if (f.id < 0 || i >= n || g.nodes[i].op != OpKind::Input || !c.kernels[i] || fed[i]) {
            err = runtime_error_at("internal error: a feed for node " + std::to_string(f.id) + ", which is not an unfed input");
            break;
        }
        fed[i] = 1;
        const Node& node = g.nodes[i];
        if (std::string e = c.kernels[i]->set_feed(f.data, f.bytes); !e.empty())
            err = runtime_error_at(node_label(node) + " on " + std::string(node.placed) + ": " + e, node.loc);
    }
    for (size_t i = 0; i < n && !err; ++i)
        if (g.nodes[i].op == OpKind::Input && c.kernels[i] && !fed[i])
            err = runtime_error_at("input '" + std::string(g.nodes[i].display()) + "' (" +
                               type_string(g.nodes[i].dtype, g.nodes[i].shape) + ") has no value", g.nodes[i].loc);
    if (err) {
        release_fetched();
        return err;
    }
    if (blas && !blas_set_) {
        set_blas_threads(ctx_.threads, true);
        blas_set_ = true;
    }
    c.scratch_inputs.resize(max_inputs);

    // The reference analysis: for each named node the binding it replaces,
    // for each repeat the last bindings of the names its body bound first.
    struct Analyze {
        const Graph& g;
        Compiled& c;
        void block(const std::vector<Stmt>& body, const Repeat* rep, int32_t r) {
            std::unordered_map<std::string_view, NodeId> cur;
            std::vector<NodeId> first;  // named nodes with no earlier binding in the block
            if (rep)
                for (const Carry& cr : rep->carries) cur[cr.name] = cr.param;
            for (const Stmt& st : body) {
                if (st.kind == Stmt::Kind::Repeat) {
                    const Repeat& inner = g.repeats[static_cast<size_t>(st.index)];
                    block(inner.body, &inner, st.index);
                    for (const Carry& cr : inner.carries) cur[cr.name] = cr.param;
                    continue;
                }
                if (st.kind == Stmt::Kind::Del) {  // the name's next binding replaces nothing
                    if (const NodeId id = g.dels[static_cast<size_t>(st.index)].value; id != kNoNode)
                        cur.erase(g.node(id).name);
                    continue;
                }
                const Node& node = g.node(st.index);
                if (node.generated) continue;
                auto it = cur.find(node.name);
                if (it != cur.end()) c.exec[static_cast<size_t>(st.index)].prev = it->second;
                else first.push_back(st.index);
                cur[node.name] = st.index;
            }
            // On the block's next pass, a name's first binding replaces the
            // last one of the pass before (a no-op on the first pass).
            for (NodeId id : first)
                if (auto last = cur.find(g.node(id).name); last != cur.end())  // not when deleted since
                    c.exec[static_cast<size_t>(id)].prev = last->second;
            if (!rep) return;
            auto& locals = c.locals[static_cast<size_t>(r)];
            for (const auto& [name, id] : cur) {
                bool carried = false;
                for (const Carry& cr : rep->carries) carried |= cr.name == name;
                if (!carried) locals.push_back(id);
            }
        }
    };
    Analyze{g, c}.block(g.top, nullptr, -1);

    const bool instrumented = opts_.profile || (opts_.observer && opts_.observer->wants_nodes());
    if (opts_.observer) {
        std::vector<ObservedDevice> devs;
        for (const auto& [name, dev] : devices_) devs.push_back(ObservedDevice{name, &dev->allocator()});
        opts_.observer->on_start(devs);
    }
    Runner runner(*this, g, c, instrumented);
    runner.iterations = spec.iterations;
    for (int64_t pass = 0; pass < spec.iterations; ++pass) {
        runner.iteration = pass;
        // The previous pass's fetched values are held until this pass's first safe point.
        if (pass > 0)
            for (const auto& [id, slot] : fetched_) frame_.drop(slot);
        if (!runner.block(g.top)) break;
        cleanup_->at_pass_end();
        if (opts_.observer) {
            if (opts_.observer->wants_pass_sync())
                for (auto& [name, dev] : devices_)
                    if (dev->kind() != DeviceKind::Cpu) (void)dev->synchronize();
            std::vector<LoopPass> none;
            opts_.observer->on_pass_end(PassEnd{pass, none});
        }
    }
    err = std::move(runner.error);
    if (!err) {
        // The names the run binds take their values (the old ones unreferenced).
        for (const auto& [name, id] : spec.bind) {
            const ExecutionFrame::Buffer* buf = frame_.buffer_of(static_cast<NodeId>(runner.v(id)));
            if (!buf) continue;  // nothing ran (iterations 0)
            int32_t slot = store_slot(name);
            if (slot < 0) {
                if (!free_slots_.empty()) {
                    slot = free_slots_.back();
                    free_slots_.pop_back();
                } else {
                    slot = static_cast<int32_t>(names_.size());
                    names_.emplace_back();
                    info_.emplace_back();
                }
                names_[static_cast<size_t>(slot)] = name;
                slot_of_.emplace(name, slot);
            }
            const Node& node = g.node(id);
            info_[static_cast<size_t>(slot)] = StoredValue{name, node.dtype, node.shape, buf->dev->name(), buf->bytes};
            frame_.share(slot, static_cast<NodeId>(runner.v(id)));
        }
    } else {
        release_fetched();
    }
    // Everything else the run computed is unreferenced now.
    for (size_t i = 0; i < n; ++i) frame_.drop(static_cast<NodeId>(c.base + i));
    cleanup_->at_pass_end();  // a statement boundary: the next statement starts here
    cleanup_->at_run_end();
    for (auto& [name, dev] : devices_) {
        std::string e = dev->synchronize();
        if (!e.empty() && !err) err = runtime_error_at("device " + name + " failed: " + e);
    }
    run_ms_ += ms_since(t0);
    cleanup_->after_run();
    return err;
}

std::optional<Error> EagerSession::fetch(const Graph& g, const std::vector<Output>& outputs,
                                            std::vector<HostTensor>& out) {
    for (const Output& o : outputs) {
        const Node& n = g.node(o.id);
        int32_t slot = -1;
        for (const auto& [id, s] : fetched_)
            if (id == o.id) slot = s;
        HostTensor h{o.name, n.dtype, n.shape, std::string(n.placed), {}};
        const size_t bytes = static_cast<size_t>(checked_numel(n.shape).value_or(0)) * dtype_size(n.dtype);
        h.data.resize(bytes);
        if (const ExecutionFrame::Buffer* buf = slot >= 0 ? frame_.buffer_of(slot) : nullptr) {
            h.device = buf->dev->name();
            if (bytes) {
                std::string e = buf->dev->copy_to_host(h.data.data(), buf->data, bytes);
                if (!e.empty()) return runtime_error_at("fetching output '" + o.name + "' from " + h.device + " failed: " + e);
            }
        }
        out.push_back(std::move(h));
    }
    return std::nullopt;
}

void EagerSession::release_fetched() {
    for (const auto& [id, slot] : fetched_) frame_.drop(slot);
    fetched_.clear();
}

std::vector<StoredValue> EagerSession::values() const {
    std::vector<StoredValue> out;
    for (const auto& [name, slot] : slot_of_) {
        out.push_back(info_[static_cast<size_t>(slot)]);
        if (const ExecutionFrame::Buffer* b = frame_.buffer_of(slot))
            out.back().buffer = static_cast<uint64_t>(reinterpret_cast<uintptr_t>(b->data));
    }
    return out;
}

std::optional<StoredValue> EagerSession::find(std::string_view name) const {
    const int32_t slot = store_slot(name);
    if (slot < 0) return std::nullopt;
    return info_[static_cast<size_t>(slot)];
}

std::optional<HostTensor> EagerSession::value(std::string_view name, Error* error) const {
    const int32_t slot = store_slot(name);
    if (slot < 0) {
        if (error) *error = Error{ErrorKind::Usage, "no value is bound to '" + std::string(name) + "'"};
        return std::nullopt;
    }
    const StoredValue& info = info_[static_cast<size_t>(slot)];
    HostTensor h{info.name, info.dtype, info.shape, info.device, {}};
    const size_t bytes = static_cast<size_t>(checked_numel(info.shape).value_or(0)) * dtype_size(info.dtype);
    h.data.resize(bytes);
    const ExecutionFrame::Buffer* buf = frame_.buffer_of(slot);
    if (buf && bytes) {
        std::string e = buf->dev->copy_to_host(h.data.data(), buf->data, bytes);
        if (!e.empty()) {
            if (error) *error = runtime_error_at("copying '" + info.name + "' from " + info.device + " failed: " + e);
            return std::nullopt;
        }
    }
    return h;
}

bool EagerSession::unbind(std::string_view name, uint64_t* bytes, uint64_t* buffers) {
    auto it = slot_of_.find(name);
    if (it == slot_of_.end()) return false;
    const int32_t slot = it->second;
    const ExecutionFrame::Buffer* buf = frame_.buffer_of(slot);
    const bool last = buf && buf->refs == 1;
    if (bytes) *bytes += last ? buf->bytes : 0;
    if (buffers) *buffers += last ? 1 : 0;
    frame_.drop(slot);
    names_[static_cast<size_t>(slot)].clear();
    info_[static_cast<size_t>(slot)] = StoredValue{};
    free_slots_.push_back(slot);
    slot_of_.erase(it);
    cleanup_->at_safe_point();  // `del` is a statement: its end is a safe point
    return true;
}

std::map<std::string, MemoryStats> EagerSession::stats() const { return device_stats(devices_); }

std::map<std::string, uint64_t> EagerSession::limits() const { return device_limits(devices_); }

void EagerSession::set_cleanup(CleanupStrategy kind) {
    if (closed_ || kind == opts_.cleanup) return;
    std::unique_ptr<Cleanup> next = make_cleanup(kind, kEagerBacklogBytes);
    next->set_observer(opts_.observer);
    cleanup_->close();  // what the old strategy held goes back; its thread is joined
    frame_.set_cleanup(*next);
    cleanup_ = std::move(next);
    opts_.cleanup = kind;
    cleanup_->start();
}

std::vector<OpProfile> EagerSession::profile() const { return slowest_first(op_profile_); }

void EagerSession::close() {
    if (closed_) return;
    closed_ = true;
    auto t0 = std::chrono::steady_clock::now();
    for (auto& [name, dev] : devices_) dev->allocator().freeze_peaks();
    fetched_.clear();
    frame_.drop_all();
    cleanup_->close();
    ctx_.pool = nullptr;
    pool_.reset();
    for (auto& [name, dev] : devices_) (void)dev->synchronize();
    for (auto& [name, dev] : devices_) dev->close();
    teardown_ms_ = ms_since(t0);
}

}  // namespace graphrun
