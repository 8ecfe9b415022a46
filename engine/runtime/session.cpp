// The executor: compiles the per-node records once, then walks the plan
// pass after pass; buffers live in the execution frame, unreferenced ones go
// to the cleanup strategy.
#include "engine/runtime/session.h"

#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/ir/device_name.h"

#include <algorithm>
#include <chrono>
#include <cstring>

namespace graphrun {

namespace {
// The largest static peak of one pass over the devices: background's backlog
// may grow to it before the executing thread waits.
uint64_t largest_static_peak(const Plan& plan) {
    uint64_t peak = 0;
    for (const auto& [dev, bytes] : plan.static_peak) peak = std::max(peak, bytes);
    return peak;
}
}  // namespace

SessionOptions with_defaults(SessionOptions opts) {
    if (opts.cpu_memory_limit == 0) opts.cpu_memory_limit = default_cpu_memory_limit();
    return opts;
}

Session::Session(SessionOptions opts)
    : opts_(with_defaults(opts)),
      factory_(opts_.cpu_memory_limit, opts_.gpu_runtime, opts_.gpu),
      cleanup_(make_cleanup(opts_.cleanup, 0)),
      holds_all_(cleanup_->holds_until_close()),
      frame_(0, *cleanup_),
      observer_(opts_.observer),
      instrumented_(opts_.profile || (observer_ && observer_->wants_nodes())) {
    cleanup_->set_observer(observer_);
    ctx_.threads = std::max(1, opts_.threads);
    if (ctx_.threads > 1) {
        pool_ = std::make_unique<ThreadPool>(ctx_.threads);
        ctx_.pool = pool_.get();
    }
    if (opts_.profile) {
        op_profile_.resize(static_cast<size_t>(OpKind::Invalid) + 1);
        for (size_t k = 0; k < op_profile_.size(); ++k) op_profile_[k].op = op_name(static_cast<OpKind>(k));
    }
}

Session::Session(const Graph& g, const Plan& plan, SessionOptions opts) : Session(std::move(opts)) {
    // A device that cannot be opened, or weights that do not fit: run() reports it.
    load_error_ = load(g, plan);
}

std::optional<Error> Session::load(const Graph& g, const Plan& plan) {
    if (closed_) return runtime_error_at("the session is closed");
    if (g_ == &g && plan_ == &plan) return open_error_;
    // The last executable's values go by the strategy, its weights and its
    // kernels now (a GPU kernel's session workspace is given back stream-ordered).
    frame_.drop_all();
    release_weights();
    holding_ = failed_ = false;
    exec_.clear();
    exec_inputs_.clear();
    kernels_.clear();
    walker_.reset();
    g_ = nullptr;
    plan_ = nullptr;
    planned_ = nullptr;
    cleanup_->set_static_peak(largest_static_peak(plan));
    bool uses_blas = false;
    for (const Node& n : g.nodes)
        uses_blas |= (n.op == OpKind::Matmul || n.op == OpKind::Gemm || n.op == OpKind::Conv ||
                      n.op == OpKind::ConvTranspose) &&
                     device_kind(n.placed) == DeviceKind::Cpu;
    set_blas_threads(ctx_.threads, uses_blas);
    frame_.ensure(g.nodes.size());
    size_t max_inputs = 0;
    std::optional<Error> weight_error;  // a weight that did not fit: this load's error only
    exec_.resize(g.nodes.size());
    kernels_.resize(g.nodes.size());
    auto numel = [&](NodeId id) { return checked_numel(g.node(id).shape).value_or(0); };
    for (const PlanStep& s : plan.steps) {
        if (s.kind != PlanStep::Kind::Run) continue;
        const Node& n = g.node(s.arg);
        ExecNode& e = exec_[static_cast<size_t>(s.arg)];
        if (e.dev) continue;  // compiled already
        Device* dev = device_for(n.placed);
        if (!dev) break;  // open_error_ says why; run() reports it
        e.dev = dev;
        e.bytes = plan.node_bytes[static_cast<size_t>(s.arg)];
        e.out = TensorRef{nullptr, n.dtype, &n.shape, numel(s.arg)};
        e.first_input = static_cast<uint32_t>(exec_inputs_.size());
        e.n_inputs = static_cast<uint32_t>(n.inputs.size());
        for (const Input& in : n.inputs)
            exec_inputs_.push_back(ExecInput{in.id, TensorRef{nullptr, g.node(in.id).dtype, &g.node(in.id).shape,
                                                              numel(in.id)}});
        if (aliases_input(g, n)) {
            e.alias_of = n.inputs[0].id;
        } else if (is_weight(n)) {
            if ((weight_error = place_weight(n, g.prepacked_weight(s.arg), plan.weight_bytes[static_cast<size_t>(s.arg)], *dev,
                                             e.weight)))
                break;
        } else {
            // In place only where the strategy reuses buffers (not under close).
            if (const int8_t k = plan.donor[static_cast<size_t>(s.arg)]; k >= 0 && !holds_all_)
                e.donor = n.inputs[static_cast<size_t>(k)].id;
            kernels_[static_cast<size_t>(s.arg)] = dev->make_kernel(g, n);
            e.kernel = kernels_[static_cast<size_t>(s.arg)].get();
            e.input = n.op == OpKind::Input;
        }
        max_inputs = std::max(max_inputs, n.inputs.size());
    }
    scratch_inputs_.resize(max_inputs);
    scratch_.reserve(max_inputs);
    if (open_error_ || weight_error) {
        release_weights();
        exec_.clear();
        exec_inputs_.clear();
        kernels_.clear();
            return open_error_ ? open_error_ : weight_error;
    }
    // The offset plan: not under close, which reuses nothing.
    if (auto cpu = devices_.find(kCpuDeviceName); cpu != devices_.end()) {
        const bool use = !holds_all_ && plan.cpu_arena_bytes > 0 && plan.cpu_offset.size() == g.nodes.size();
        cpu->second->allocator().set_offset_plan(use ? plan.cpu_arena_bytes : 0);
        if (use) planned_ = plan.cpu_offset.data();
    }
    g_ = &g;
    plan_ = &plan;
    walker_.emplace(g, plan);
    cleanup_->start();
    return std::nullopt;
}

Session::~Session() { close(); }

// A weight: placed once on its device, counted in `weights`, and pinned in
// the frame. On the CPU it is the graph's own bytes of the constant, used in
// place (held once, not copied: the Executable outlives the session's use of
// it, and no kernel writes an input); on a GPU a buffer of the device's,
// filled from them once. A pre-packed weight (`packed`, engine/plan/prepack.h)
// is its packed bytes, on the CPU.
std::optional<Error> Session::place_weight(const Node& n, const PrepackedWeight* packed, uint64_t bytes, Device& dev,
                                          int32_t& buf) {
    uint64_t exact = static_cast<uint64_t>(checked_numel(n.shape).value_or(0)) * dtype_size(n.dtype);
    const uint8_t* values = n.literal.data();
    if (packed) {
        exact = packed->size;
        values = packed->bytes.get();
        if (dev.kind() != DeviceKind::Cpu)
            return runtime_error_at("internal error: " + node_label(n) + " is packed for the CPU, placed on " +
                                    dev.name(), n.loc);
    } else if (n.literal.size() != exact) {
        return runtime_error_at("internal error: " + node_label(n) + " holds " + std::to_string(n.literal.size()) +
                            " bytes, expected " + std::to_string(exact), n.loc);
    }
    Allocator& a = dev.allocator();
    const bool adopt = dev.kind() == DeviceKind::Cpu;
    void* p = nullptr;
    bool placed = false;
    if (adopt) {
        // Never written: the frame's pin keeps every node from taking it in place.
        static unsigned char empty[64];
        p = exact ? static_cast<void*>(const_cast<uint8_t*>(values)) : empty;
        placed = a.adopt_weights(bytes);
    } else {
        p = a.allocate_weights(bytes);
        placed = p != nullptr;
    }
    if (!placed) {
        const MemoryStats st = a.stats();
        return runtime_error_at("out of memory on " + std::string(n.placed) + " placing the weight " + node_label(n) + " " +
                            type_string(n.dtype, n.shape) + ": needs " + std::to_string(bytes) +
                            " bytes; weights placed " + std::to_string(st.weights) + " bytes, in use " +
                            std::to_string(st.in_use) + " bytes" +
                            (st.workspace ? " (and " + std::to_string(st.workspace) + " bytes of workspace)" : "") +
                            ", limit " + std::to_string(a.limit()) + " bytes", n.loc);
    }
    buf = frame_.pin_weight(p, bytes, &dev);
    weights_.push_back(Weight{buf, p, bytes, &a, adopt});
    if (!adopt)
        if (std::string e = dev.copy_from_host(p, values, exact); !e.empty())
            return runtime_error_at("placing the weight " + node_label(n) + " on " + dev.name() + " failed: " + e, n.loc);
    return std::nullopt;
}

void Session::release_weights() {
    for (const Weight& w : weights_) {
        frame_.unpin(w.buf);
        if (w.adopted) w.alloc->release_adopted_weights(w.bytes);
        else w.alloc->release_weights(w.data, w.bytes);
    }
    weights_.clear();
}

// The session's device for a placed name, opened on first use; nullptr (and
// open_error_ set) when a GPU cannot be opened.
Device* Session::device_for(std::string_view name) {
    if (open_error_ && !devices_.count(name)) return nullptr;
    std::string error;
    Device* dev = open_device(devices_, factory_, name, cleanup_, ctx_, opts_.fail_allocation_countdown, &error);
    if (!dev) open_error_ = runtime_error_at("cannot open " + std::string(name) + ": " + error);
    return dev;
}

std::map<std::string, MemoryStats> Session::stats() const { return device_stats(devices_); }

std::map<std::string, uint64_t> Session::limits() const { return device_limits(devices_); }

std::vector<OpProfile> Session::profile() const { return slowest_first(op_profile_); }

std::vector<OpProfile> slowest_first(const std::vector<OpProfile>& per_op) {
    std::vector<OpProfile> out;
    for (const OpProfile& p : per_op)
        if (p.count) out.push_back(p);
    std::sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) { return a.ms > b.ms; });
    return out;
}

// --- execution --------------------------------------------------------------

std::string Session::run_position(const Node& n) const {
    std::string out = ", iteration " + std::to_string(pass_ + 1) + " of " + std::to_string(iterations_);
    std::vector<int32_t> loops;  // innermost first
    for (int32_t r = n.repeat; r >= 0; r = g_->repeats[static_cast<size_t>(r)].parent) loops.push_back(r);
    for (auto it = loops.rbegin(); it != loops.rend(); ++it) {
        const Repeat& rep = g_->repeats[static_cast<size_t>(*it)];
        out += ", pass " + std::to_string(rep.count - walker_->passes_left(*it) + 1) + " of " +
               std::to_string(rep.count) + " of the repeat";
        if (!rep.loc.pointer.empty()) out += " at " + std::string(rep.loc.pointer.view());
        else if (rep.loc.line) out += " at line " + std::to_string(rep.loc.line);
    }
    return out;
}

std::string Session::oom_message(const Node& n, uint64_t bytes, const Allocator& a, const std::string& what) const {
    MemoryStats s = a.stats();
    std::string msg = "out of memory on " + std::string(n.placed) + " at " + node_label(n) + run_position(n) + ": " +
                      what + " needs " + std::to_string(bytes) + " bytes; in use " + std::to_string(s.in_use) + " bytes" +
                      (s.workspace ? " (and " + std::to_string(s.workspace) + " bytes of workspace)" : "") +
                      ", limit " + std::to_string(a.limit()) + " bytes";
    return msg + cleanup_->oom_note(s);
}


// Copies an input that lives on another device onto `dev` for node n: a
// scratch buffer, counted in dev's statistics (and copied_in), released as
// soon as the node has run (the static plan does the same).
std::optional<Error> Session::copy_input(const Node& n, const Node& in, const ExecutionFrame::Buffer& src,
                                            Device& dev, TensorRef& ref) {
    void* p = allocate_with_retry(dev, *cleanup_, src.bytes);
    if (!p)
        return runtime_error_at(oom_message(n, src.bytes, dev.allocator(),
                                    "the copy of input '" + std::string(in.display()) + "' " +
                                        type_string(in.dtype, in.shape) + " from " + src.dev->name()), n.loc);
    scratch_.push_back(PendingRelease{p, src.bytes, &dev.allocator()});
    const uint64_t bytes = static_cast<uint64_t>(ref.numel) * dtype_size(in.dtype);
    std::string err = copy_between_devices(dev, p, *src.dev, src.data, bytes);
    if (!err.empty())
        return runtime_error_at(node_label(n) + ": copying input '" + std::string(in.display()) + "' from " + src.dev->name() +
                            " to " + dev.name() + " failed: " + err, n.loc);
    dev.allocator().add_copied_in(bytes);
    ref.data = p;
    return std::nullopt;
}

// Scratch copies go back as soon as their node has run; on a GPU the release
// is stream-ordered after the kernel that reads them. Under close they are
// held with everything else until the session closes.
void Session::release_scratch() {
    if (holds_all_)
        for (const PendingRelease& f : scratch_) cleanup_->on_unreferenced(f);
    else
        for (const PendingRelease& f : scratch_) f.alloc->release_scratch(f.data, f.bytes);
    scratch_.clear();
}

std::optional<Error> Session::run_node(NodeId id) {
    const ExecNode& e = exec_[static_cast<size_t>(id)];
    cleanup_->at_safe_point();  // just before dispatch, before the output is allocated
    ExecutionFrame& frame = frame_;
    if (e.alias_of != kNoNode) {
        frame.share(id, e.alias_of);
        return std::nullopt;
    }
    if (e.weight >= 0) {  // placed at load: the value refers to it
        frame.refer(id, e.weight);
        return std::nullopt;
    }
    Device& dev = *e.dev;
    for (uint32_t i = 0; i < e.n_inputs; ++i) {
        const ExecInput& in = exec_inputs_[e.first_input + i];
        TensorRef& ref = scratch_inputs_[i];
        ref = in.ref;
        const ExecutionFrame::Buffer* src = frame.buffer_of(in.id);
        if (!src) continue;
        ref.data = src->data;
        if (src->dev != &dev) {
            if (auto err = copy_input(g_->node(id), g_->node(in.id), *src, dev, ref)) {
                release_scratch();
                return err;
            }
        }
    }
    // In place: the donor dies at this node; the output may take its buffer.
    void* data = e.donor != kNoNode ? frame.take_donor(id, e.donor, &dev) : nullptr;
    if (!data) {
        const uint64_t bytes = e.bytes;
        data = bytes >= kPlannedBytes && planned_ ? allocate_planned(id, dev, bytes)
                                                  : allocate_with_retry(dev, *cleanup_, bytes);
        if (!data) {
            release_scratch();
            const Node& n = g_->node(id);
            return runtime_error_at(oom_message(n, bytes, dev.allocator(), type_string(n.dtype, n.shape)), n.loc);
        }
        frame.bind_new(id, data, bytes, &dev);
    }

    TensorRef out = e.out;
    out.data = data;
    std::string err = e.kernel->run(scratch_inputs_.data(), e.n_inputs, out, ctx_);
    if (!scratch_.empty()) release_scratch();
    if (!err.empty()) {
        const Node& n = g_->node(id);
        return runtime_error_at(node_label(n) + " on " + std::string(n.placed) + ": " + err, n.loc);
    }
    return std::nullopt;
}

// The plan placed the buffer where every buffer that was live there has been
// released by now under safepoint. Under background one may still wait for
// the reclaimer: the backlog goes back first, on this thread. A range held
// all the same (the run went otherwise than the plan: a donor not taken)
// sends the buffer to the allocator's best fit.
void* Session::allocate_planned(NodeId id, Device& dev, uint64_t bytes) {
    static_assert(kPlannedBytes >= CpuAllocator::kArenaBytes, "planned buffers are the allocator's segment buffers");
    const uint64_t offset = planned_[static_cast<size_t>(id)];
    if (offset == kNotPlanned) return allocate_with_retry(dev, *cleanup_, bytes);
    Allocator& a = dev.allocator();
    if (!a.planned_range_free(offset, bytes)) cleanup_->release_backlog_now();
    void* p = a.allocate_at(bytes, offset);
    if (!p && cleanup_->release_for_retry(a, bytes)) p = a.allocate_at(bytes, offset);
    return p;
}

// run_node, timed: the profile's totals (the bytes it allocated for its
// output) and the observer's node.
std::optional<Error> Session::run_node_instrumented(NodeId id) {
    auto t0 = RunClock::now();
    auto e = run_node(id);
    const Node& n = g_->node(id);
    const ExecNode& x = exec_[static_cast<size_t>(id)];
    // A GPU kernel returns before it has run: wait, so the time is its own.
    if (Device* d = x.dev; !e && d && d->kind() != DeviceKind::Cpu) {
        if (std::string se = d->synchronize(); !se.empty())
            e = runtime_error_at(node_label(n) + " on " + std::string(n.placed) + ": " + se, n.loc);
    }
    const auto t1 = RunClock::now();
    if (opts_.profile) {
        OpProfile& p = op_profile_[static_cast<size_t>(n.op)];
        p.ms += std::chrono::duration<double, std::milli>(t1 - t0).count();
        ++p.count;
        // In place, the output still shares the donor's buffer (the donor's drop comes next).
        const bool in_place = x.donor != kNoNode && frame_.same_buffer(id, x.donor);
        if (!aliases_input(*g_, n) && !in_place) p.bytes += plan_->node_bytes[static_cast<size_t>(id)];
    }
    if (observer_ && !e) {
        const std::string_view dev = x.dev ? std::string_view(x.dev->name()) : n.placed;
        observer_->on_node(NodeRun{n, dev, plan_->node_bytes[static_cast<size_t>(id)], t0, t1});
    }
    return e;
}

// The observer's pass end: where it is (each enclosing repeat's pass), after the safe point.
void Session::observe_pass_end(int32_t loop) {
    position_.clear();
    for (int32_t r = loop; r >= 0; r = g_->repeats[static_cast<size_t>(r)].parent) {
        const int64_t count = g_->repeats[static_cast<size_t>(r)].count;
        position_.push_back(LoopPass{r, count - walker_->passes_left(r), count});
    }
    std::reverse(position_.begin(), position_.end());  // outermost first
    observer_->on_pass_end(PassEnd{pass_, position_});
}

Error Session::interrupted(NodeId before, int sig) const {
    std::string name = sig == 2 ? "SIGINT" : sig == 15 ? "SIGTERM" : "signal " + std::to_string(sig);
    return interrupted_by("interrupted by " + name + " before " + node_label(g_->node(before)), sig);
}

// The executor as PlanWalker's visitor: the frame makes the moves, the
// strategy sees the safe points; `Observed`: the observer sees the pass ends
// (a walk of its own, so that a run without one tests nothing more).
template <bool Observed>
struct Session::PassVisitor {
    Session& s;
    std::optional<Error> error;

    static bool step() { return true; }
    bool run(NodeId id) {
        if (s.opts_.interrupt) {
            if (const int sig = s.opts_.interrupt->load(std::memory_order_relaxed)) {
                error = s.interrupted(id, sig);
                return false;
            }
        }
        if (auto e = s.instrumented_ ? s.run_node_instrumented(id) : s.run_node(id)) {
            error = std::move(e);
            return false;
        }
        return true;
    }
    void drop(NodeId v) { s.frame_.drop(v); }
    void share(NodeId to, NodeId from) { s.frame_.share(to, from); }
    int64_t passes(const Repeat& rep) {
        if (s.opts_.progress && rep.parent < 0) track(rep);
        return rep.count;
    }
    void loop_pass_end(int32_t loop) {  // the end of each repeat pass
        s.cleanup_->at_safe_point();
        if constexpr (Observed) s.observe_pass_end(loop);
        if (loop == tracked) s.opts_.progress->repeat_passes_done.store(++tracked_done, std::memory_order_relaxed);
    }

    // SessionOptions::progress: the top-level repeat starting now is the one
    // whose passes are counted (one compare per repeat pass otherwise).
    int32_t tracked = -1;
    int64_t tracked_done = 0;
    void track(const Repeat& rep) {
        RunProgress& p = *s.opts_.progress;
        tracked = static_cast<int32_t>(&rep - s.g_->repeats.data());
        tracked_done = 0;
        p.repeat_line.store(rep.loc.line, std::memory_order_relaxed);
        p.repeat_count.store(rep.count, std::memory_order_relaxed);
        p.repeat_passes_done.store(0, std::memory_order_relaxed);
        p.repeat.store(tracked, std::memory_order_relaxed);
    }
};

std::optional<Error> Session::run_pass() {
    if (observer_) {
        PassVisitor<true> v{*this, std::nullopt};
        if (!walker_->walk(v)) return std::move(v.error);
    } else {
        PassVisitor<false> v{*this, std::nullopt};
        if (!walker_->walk(v)) return std::move(v.error);
    }
    cleanup_->at_pass_end();
    if (pool_) pool_->uncrowd();
    if (observer_) {
        // A device's failure here is the run's to report, at its end (run()).
        if (observer_->wants_pass_sync())
            for (auto& [name, dev] : devices_)
                if (dev->kind() != DeviceKind::Cpu) (void)dev->synchronize();
        observe_pass_end(-1);
    }
    return std::nullopt;
}

std::optional<Error> Session::run(const std::vector<FeedView>& feeds, int64_t iterations,
                                     const std::vector<Output>& outputs, std::vector<HostTensor>& fetched) {
    if (closed_) return runtime_error_at("the session is closed");
    if (open_error_) return open_error_;
    if (!g_) return load_error_ ? load_error_ : runtime_error_at("internal error: the session has no executable loaded");
    // Each input's kernel takes its feed; every input must have one, every run
    // (a kernel must not read the last run's bytes, which the caller may have freed).
    std::vector<bool> fed(feeds.empty() ? 0 : exec_.size(), false);
    for (const FeedView& f : feeds) {
        const size_t i = static_cast<size_t>(f.id);
        if (f.id < 0 || i >= exec_.size() || !exec_[i].input || fed[i])
            return runtime_error_at("internal error: a feed for node " + std::to_string(f.id) + ", which is not an unfed input");
        fed[i] = true;
        const Node& n = g_->node(f.id);
        const uint64_t want = static_cast<uint64_t>(exec_[i].out.numel) * dtype_size(n.dtype);
        if (f.bytes != want)
            return runtime_error_at("the value of input '" + std::string(n.display()) + "' has " + std::to_string(f.bytes) +
                                " bytes, but " + type_string(n.dtype, n.shape) + " takes " + std::to_string(want), n.loc);
        if (std::string e = exec_[i].kernel->set_feed(f.data, f.bytes); !e.empty())
            return runtime_error_at(node_label(n) + " on " + std::string(n.placed) + ": " + e, n.loc);
    }
    for (size_t i = 0; i < exec_.size(); ++i)
        if (exec_[i].input && (fed.empty() || !fed[i])) {
            const Node& n = g_->node(static_cast<NodeId>(i));
            return runtime_error_at("input '" + std::string(n.display()) + "' (" + type_string(n.dtype, n.shape) +
                                ") has no value", n.loc);
        }
    // What a failed run left bound is unreferenced before this one starts.
    if (failed_) {
        frame_.drop_all();
        failed_ = holding_ = false;
    }
    auto t0 = std::chrono::steady_clock::now();
    std::optional<Error> err;
    iterations_ = iterations;
    if (observer_) {
        std::vector<ObservedDevice> devs;
        for (const auto& [name, dev] : devices_) devs.push_back(ObservedDevice{name, &dev->allocator()});
        observer_->on_start(devs);
    }
    for (int64_t pass = 0; pass < iterations && !err; ++pass) {
        pass_ = pass;
        // The previous pass's outputs (or the last run's) stay referenced until this pass's first safe point.
        if (holding_) {
            for (NodeId v : plan_->held) frame_.drop(v);
            holding_ = false;
        }
        err = run_pass();
        holding_ = !err;
        failed_ = err.has_value();
        if (opts_.progress) {
            opts_.progress->repeat.store(-1, std::memory_order_relaxed);
            opts_.progress->passes_done.store(pass + 1, std::memory_order_relaxed);
        }
    }
    cleanup_->at_run_end();  // what a stopped run left unreferenced shows as pending
    // The run ends when the devices have finished its work (and said whether it failed).
    for (auto& [name, dev] : devices_) {
        std::string e = dev->synchronize();
        if (!e.empty() && !err) err = runtime_error_at("device " + name + " failed: " + e);
    }
    run_ms_ = ms_since(t0);
    cleanup_->after_run();
    if (err) failed_ = true;
    if (err || iterations == 0) return err;  // nothing ran: nothing to fetch
    for (const Output& o : outputs) {
        const Node& n = g_->node(o.id);
        HostTensor h{o.name, n.dtype, n.shape, std::string(n.placed), {}};
        const ExecutionFrame::Buffer* buf = frame_.buffer_of(o.id);
        int64_t numel = checked_numel(n.shape).value_or(0);
        size_t bytes = static_cast<size_t>(numel) * dtype_size(n.dtype);
        h.data.resize(bytes);
        if (buf) {
            h.device = buf->dev->name();  // a loop-carried value lives where its last update ran
            if (bytes) {
                std::string e = buf->dev->copy_to_host(h.data.data(), buf->data, bytes);
                if (!e.empty()) return runtime_error_at("fetching output '" + o.name + "' from " + h.device + " failed: " + e);
            }
        }
        fetched.push_back(std::move(h));
    }
    return std::nullopt;
}

void Session::release_outputs() {
    if (!holding_ || !plan_) return;
    for (NodeId v : plan_->held) frame_.drop(v);
    holding_ = false;
    cleanup_->drain();
}

void Session::close() {
    if (closed_) return;
    closed_ = true;
    auto t0 = std::chrono::steady_clock::now();
    // The peaks are the run's: teardown's releases pass through pending too.
    for (auto& [name, dev] : devices_) dev->allocator().freeze_peaks();
    frame_.drop_all();
    release_weights();
    cleanup_->close();  // releases everything; joins the reclaimer
    kernels_.clear();  // before the devices whose handles they use
    ctx_.pool = nullptr;
    pool_.reset();  // joins the CPU workers
    // Copies between GPUs order one device's stream after another's events:
    // every device finishes before any closes (and, with --reset-device, ends
    // its context). A failure here is the device's own to report at close.
    for (auto& [name, dev] : devices_) (void)dev->synchronize();
    for (auto& [name, dev] : devices_) dev->close();
    teardown_ms_ = ms_since(t0);
}

}  // namespace graphrun
