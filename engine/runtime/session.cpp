// The executor and the cleanup strategies.
#include "engine/runtime/session.h"

#include "engine/runtime/cpu_device.h"
#include "engine/kernels/cpu/cpu_kernel.h"
#include "engine/ir/device_name.h"

#include <cblas.h>

#include <algorithm>
#include <cstring>

namespace graphrun {

const char* cleanup_name(CleanupStrategy s) {
    switch (s) {
        case CleanupStrategy::Background: return "background";
        case CleanupStrategy::Safepoint: return "safepoint";
        case CleanupStrategy::Close: return "close";
    }
    return "?";
}

namespace {
// The background strategy hands buffers to the reclaimer once a batch holds
// this many buffers or bytes, and at the end of every pass.
constexpr size_t kBatchBuffers = 256;
constexpr uint64_t kBatchBytes = uint64_t{1} << 20;
// A hand-over wakes a sleeping reclaimer only once this many buffers (or
// kBatchBytes) wait for it, or when the executing thread is about to wait for
// it. A wake-up is a system call and, on a virtual machine, an interrupt to
// the other core: 5 to 10 us of the executing thread's time, which a chain of
// tiny tensors must not pay every 256 nodes (measured: 0.10-0.11 us per node
// with a wake per 256 buffers, 0.07 with one per 4096).
constexpr size_t kWakeBuffers = 4096;
// The backlog may always reach this before the executing thread waits, even
// when one pass's static peak is smaller: otherwise a graph of tiny tensors
// would wait for the reclaimer (two thread switches) at every hand-over.
constexpr uint64_t kMinBacklogBytes = 4 * kBatchBytes;

double ms_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

Session::Session(const Graph& g, const Plan& plan, SessionOptions opts) : g_(g), plan_(plan), opts_(opts) {
    if (opts_.cpu_memory_limit == 0) opts_.cpu_memory_limit = default_cpu_memory_limit();
    ctx_.threads = std::max(1, opts_.threads);
    bool uses_blas = false;
    for (const Node& n : g.nodes) uses_blas |= n.op == OpKind::Matmul && n.placed == "cpu";
    set_blas_threads(ctx_.threads, uses_blas);
    if (ctx_.threads > 1) {
        pool_ = std::make_unique<ThreadPool>(ctx_.threads);
        ctx_.pool = pool_.get();
    }
    size_t max_inputs = 0;
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
        } else {
            if (const int8_t k = plan.donor[static_cast<size_t>(s.arg)]; k >= 0)
                e.donor = n.inputs[static_cast<size_t>(k)].id;
            kernels_[static_cast<size_t>(s.arg)] = dev->make_kernel(g, n);
            e.kernel = kernels_[static_cast<size_t>(s.arg)].get();
        }
        max_inputs = std::max(max_inputs, n.inputs.size());
    }
    scratch_inputs_.resize(max_inputs);
    scratch_.reserve(max_inputs);
    value_buf_.assign(g.nodes.size(), -1);
    passes_left_.assign(plan.loops.size(), 0);
    bufs_.reserve(64);
    // The backlog may grow to one pass's static peak (and at least
    // kMinBacklogBytes) before the executing thread waits.
    for (const auto& [dev, bytes] : plan.static_peak) static_peak_ = std::max(static_peak_, bytes);
    backlog_limit_ = std::max(static_peak_, kMinBacklogBytes);
    if (opts_.profile) {
        op_profile_.resize(static_cast<size_t>(OpKind::Invalid) + 1);
        for (size_t k = 0; k < op_profile_.size(); ++k) op_profile_[k].op = op_name(static_cast<OpKind>(k));
    }
    if (opts_.cleanup == CleanupStrategy::Background && !open_error_)
        reclaimer_ = std::thread([this] { reclaimer_loop(); });
}

Session::~Session() { close(); }

// The session's device for a placed name, opened on first use; nullptr (and
// open_error_ set) when a GPU cannot be opened.
Device* Session::device_for(std::string_view name) {
    auto it = devices_.find(name);
    if (it != devices_.end()) return it->second.get();
    if (open_error_) return nullptr;
    std::unique_ptr<Device> dev;
    auto dn = parse_device_name(name);
    if (!dn || dn->kind == DeviceName::Kind::Cpu) {
        dev = std::make_unique<CpuDevice>(opts_.cpu_memory_limit);
    } else {
        std::string error = "graphrun was built without CUDA support";
        if (opts_.gpu_runtime) dev = opts_.gpu_runtime->open(dn->index, opts_.gpu, &error);
        if (!dev) {
            open_error_ = RunError{"cannot open " + std::string(name) + ": " + error, {}};
            return nullptr;
        }
    }
    Device* raw = dev.get();
    devices_.emplace(std::string(name), std::move(dev));
    return raw;
}

std::map<std::string, MemoryStats> Session::stats() const {
    std::map<std::string, MemoryStats> out;
    for (const auto& [name, dev] : devices_) out[name] = dev->allocator().stats();
    if (out.empty()) out["cpu"] = MemoryStats{};
    return out;
}

std::map<std::string, uint64_t> Session::limits() const {
    std::map<std::string, uint64_t> out;
    for (const auto& [name, dev] : devices_) out[name] = dev->allocator().limit();
    return out;
}

std::vector<OpProfile> Session::profile() const {
    std::vector<OpProfile> out;
    for (const OpProfile& p : op_profile_)
        if (p.count) out.push_back(p);
    std::sort(out.begin(), out.end(), [](const OpProfile& a, const OpProfile& b) { return a.ms > b.ms; });
    return out;
}

// --- buffers and values -----------------------------------------------------

void Session::share(NodeId to, NodeId from) {
    drop(to);
    int32_t b = value_buf_[static_cast<size_t>(from)];
    value_buf_[static_cast<size_t>(to)] = b;
    if (b >= 0) ++bufs_[static_cast<size_t>(b)].refs;
}

void Session::drop(NodeId v) {
    int32_t& b = value_buf_[static_cast<size_t>(v)];
    if (b < 0) return;
    if (--bufs_[static_cast<size_t>(b)].refs == 0) unreferenced(b);
    b = -1;
}

// A buffer nothing refers to any more: the strategy decides when it goes back.
void Session::unreferenced(int32_t b) {
    Buffer& buf = bufs_[static_cast<size_t>(b)];
    Allocator& a = buf.dev->allocator();
    // safepoint and background count pending_ as pending together when it
    // goes (mark_pending): one allocator call per batch instead of one per
    // buffer. close counts each buffer at once: its out-of-memory message
    // says how much of what is in use is unreferenced.
    pending_.push_back(Freed{buf.data, buf.bytes, &a});
    if (opts_.cleanup == CleanupStrategy::Close) {
        a.add_pending(buf.bytes);
        pending_marked_ = pending_.size();
    }
    batch_bytes_ += buf.bytes;
    buf = Buffer{};
    free_bufs_.push_back(b);
}

// Releases a list of pending buffers, one release_batch per run of the same allocator.
void Session::release_all(const Freed* items, size_t n, bool marked) {
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && items[j].alloc == items[i].alloc) ++j;
        if (marked)
            items[i].alloc->release_batch(items + i, j - i);
        else
            items[i].alloc->release_unreferenced(items + i, j - i);
        i = j;
    }
}

// Counts what pending_ holds beyond pending_marked_ as pending: one
// add_pending per run of the same allocator.
void Session::mark_pending() {
    for (size_t i = pending_marked_; i < pending_.size();) {
        uint64_t bytes = 0;
        size_t j = i;
        for (; j < pending_.size() && pending_[j].alloc == pending_[i].alloc; ++j) bytes += pending_[j].bytes;
        pending_[i].alloc->add_pending(bytes);
        i = j;
    }
    pending_marked_ = pending_.size();
}

void Session::release_pending_now() {
    // Under safepoint a buffer is released at the safe point after it became
    // unreferenced, and is counted as pending only then, with the others of
    // that safe point: one allocator call per safe point instead of two per
    // buffer. A run that stops between two safe points (an error, a signal)
    // counts what is left with mark_pending(), before anyone reads the figures.
    release_all(pending_.data(), pending_marked_, true);
    release_all(pending_.data() + pending_marked_, pending_.size() - pending_marked_, false);
    pending_marked_ = 0;
    pending_.clear();
    batch_bytes_ = 0;
}

// Hands the batch to the reclaimer (one lock per batch, not per buffer), then
// waits when the backlog is over `wait_above` (0: always).
void Session::flush_to_reclaimer(uint64_t wait_above) {
    mark_pending();  // the batch counts as pending from its hand-over on
    std::unique_lock<std::mutex> lock(mu_);
    if (!pending_.empty()) {
        if (queue_.empty()) queue_.swap(pending_);
        else {
            queue_.insert(queue_.end(), pending_.begin(), pending_.end());
            pending_.clear();
        }
        pending_marked_ = 0;
        queued_bytes_ += batch_bytes_;
        batch_bytes_ = 0;
    }
    const bool wait = queued_bytes_ > wait_above || wait_above == 0;
    // A reclaimer that is not waiting needs no wake-up; a waiting one gets it
    // here (without a waiter, notify_one costs no system call).
    if (wait || queue_.size() >= kWakeBuffers || queued_bytes_ >= kBatchBytes) cv_work_.notify_one();
    if (wait) cv_drained_.wait(lock, [this] { return queue_.empty() && !busy_; });
}

void Session::reclaimer_loop() {
    std::vector<Freed> work;
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
        cv_work_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty() && stop_) break;
        work.swap(queue_);
        busy_ = true;
        lock.unlock();
        uint64_t done = 0;
        for (const Freed& f : work) done += f.bytes;
        release_all(work.data(), work.size(), true);
        work.clear();
        lock.lock();
        queued_bytes_ -= done;
        busy_ = false;
        if (queue_.empty()) cv_drained_.notify_all();
    }
    cv_drained_.notify_all();
}

void Session::safe_point() {
    switch (opts_.cleanup) {
        case CleanupStrategy::Safepoint: release_pending_now(); break;
        case CleanupStrategy::Background:
            // Hand over in batches: one lock per batch, not per buffer.
            if (pending_.size() >= kBatchBuffers || batch_bytes_ >= kBatchBytes) flush_to_reclaimer(backlog_limit_);
            break;
        case CleanupStrategy::Close: break;
    }
}

// --- execution --------------------------------------------------------------

std::string Session::oom_message(const Node& n, uint64_t bytes, const Allocator& a, const std::string& what) const {
    MemoryStats s = a.stats();
    std::string msg = "out of memory on " + std::string(n.placed) + " at " + node_label(n) + ": " + what + " needs " +
                      std::to_string(bytes) + " bytes; in use " + std::to_string(s.in_use) +
                      " bytes, limit " + std::to_string(a.limit()) + " bytes";
    if (opts_.cleanup == CleanupStrategy::Close && s.pending > 0)
        msg += " (" + std::to_string(s.pending) +
               " of the bytes in use are unreferenced tensors that --cleanup=close keeps until the session "
               "closes; --cleanup=safepoint or background would release them)";
    return msg;
}

// One counted allocation; over the limit under background, the backlog goes first.
void* Session::allocate_on(Device& dev, uint64_t bytes) {
    Allocator& a = dev.allocator();
    void* data = a.allocate(bytes);
    if (!data && opts_.cleanup == CleanupStrategy::Background && a.stats().in_use + bytes > a.limit()) {
        flush_to_reclaimer(0);
        data = a.allocate(bytes);
    }
    return data;
}

// Copies an input that lives on another device onto `dev` for node n: a
// scratch buffer, counted in dev's statistics (and copied_in), released as
// soon as the node has run (the static plan does the same).
std::optional<RunError> Session::copy_input(const Node& n, const Node& in, const Buffer& src, Device& dev,
                                            TensorRef& ref) {
    void* p = allocate_on(dev, src.bytes);
    if (!p)
        return RunError{oom_message(n, src.bytes, dev.allocator(),
                                    "the copy of input '" + std::string(in.display()) + "' " +
                                        type_string(in.dtype, in.shape) + " from " + src.dev->name()),
                        n.loc};
    scratch_.push_back(Freed{p, src.bytes, &dev.allocator()});
    const uint64_t bytes = static_cast<uint64_t>(ref.numel) * dtype_size(in.dtype);
    std::string err;
    if (bytes == 0) {
    } else if (src.dev->name() == "cpu") {
        err = dev.copy_from_host(p, src.data, bytes);
    } else if (dev.name() == "cpu") {
        err = src.dev->copy_to_host(p, src.data, bytes);
    } else {  // GPU to GPU: through the host
        std::vector<uint8_t> host(bytes);
        err = src.dev->copy_to_host(host.data(), src.data, bytes);
        if (err.empty()) err = dev.copy_from_host(p, host.data(), bytes);
    }
    if (!err.empty())
        return RunError{node_label(n) + ": copying input '" + std::string(in.display()) + "' from " + src.dev->name() +
                            " to " + dev.name() + " failed: " + err,
                        n.loc};
    dev.allocator().add_copied_in(bytes);
    ref.data = p;
    return std::nullopt;
}

// Scratch copies go back as soon as their node has run; on a GPU the release
// is stream-ordered after the kernel that reads them.
void Session::release_scratch() {
    for (const Freed& f : scratch_) f.alloc->release_scratch(f.data, f.bytes);
    scratch_.clear();
}

std::optional<RunError> Session::run_node(NodeId id) {
    const ExecNode& e = exec_[static_cast<size_t>(id)];
    safe_point();  // just before dispatch, before the output is allocated
    if (e.alias_of != kNoNode) {
        share(id, e.alias_of);
        return std::nullopt;
    }
    Device& dev = *e.dev;
    for (uint32_t i = 0; i < e.n_inputs; ++i) {
        const ExecInput& in = exec_inputs_[e.first_input + i];
        TensorRef& ref = scratch_inputs_[i];
        ref = in.ref;
        int32_t ib = value_buf_[static_cast<size_t>(in.id)];
        if (ib < 0) continue;
        const Buffer& src = bufs_[static_cast<size_t>(ib)];
        ref.data = src.data;
        if (src.dev != &dev) {
            if (auto err = copy_input(g_.node(id), g_.node(in.id), src, dev, ref)) {
                release_scratch();
                return err;
            }
        }
    }
    void* data;
    // In place (the rule of may_take_input_buffer, the same test as the static
    // plan's): the donor dies at this node, so when nothing else refers to its
    // buffer the output takes it; the donor's drop, right after, leaves the
    // output its only owner.
    int32_t db = e.donor != kNoNode ? value_buf_[static_cast<size_t>(e.donor)] : -1;
    if (db >= 0 && bufs_[static_cast<size_t>(db)].refs == 1 && bufs_[static_cast<size_t>(db)].dev == &dev) {
        Buffer& buf = bufs_[static_cast<size_t>(db)];
        ++buf.refs;
        value_buf_[static_cast<size_t>(id)] = db;
        data = buf.data;
    } else {
        const uint64_t bytes = e.bytes;
        data = allocate_on(dev, bytes);
        if (!data) {
            release_scratch();
            const Node& n = g_.node(id);
            return RunError{oom_message(n, bytes, dev.allocator(), type_string(n.dtype, n.shape)), n.loc};
        }
        int32_t b;
        if (!free_bufs_.empty()) {
            b = free_bufs_.back();
            free_bufs_.pop_back();
        } else {
            b = static_cast<int32_t>(bufs_.size());
            bufs_.emplace_back();
        }
        bufs_[static_cast<size_t>(b)] = Buffer{data, bytes, 1, &dev};
        value_buf_[static_cast<size_t>(id)] = b;
    }

    TensorRef out = e.out;
    out.data = data;
    std::string err = e.kernel->run(scratch_inputs_.data(), e.n_inputs, out, ctx_);
    if (!scratch_.empty()) release_scratch();
    if (!err.empty()) {
        const Node& n = g_.node(id);
        return RunError{node_label(n) + " on " + std::string(n.placed) + ": " + err, n.loc};
    }
    return std::nullopt;
}

std::optional<RunError> Session::run_pass() {
    const std::vector<PlanStep>& steps = plan_.steps;
    for (size_t i = 0; i < steps.size(); ++i) {
        const PlanStep& s = steps[i];
        switch (s.kind) {
            case PlanStep::Kind::Run:
                if (opts_.interrupt) {
                    if (int sig = opts_.interrupt->load(std::memory_order_relaxed)) {
                        const Node& n = g_.node(s.arg);
                        std::string name = sig == 2 ? "SIGINT" : sig == 15 ? "SIGTERM" : "signal " + std::to_string(sig);
                        return RunError{"interrupted by " + name + " before " + node_label(n), {}, sig};
                    }
                }
                if (opts_.profile) {
                    auto t0 = std::chrono::steady_clock::now();
                    auto e = run_node(s.arg);
                    const Node& n = g_.node(s.arg);
                    // A GPU kernel returns before it has run: wait, so the time is its own.
                    if (Device* d = exec_[static_cast<size_t>(s.arg)].dev; !e && d && d->name() != "cpu") {
                        if (std::string se = d->synchronize(); !se.empty())
                            e = RunError{node_label(n) + " on " + std::string(n.placed) + ": " + se, n.loc};
                    }
                    OpProfile& p = op_profile_[static_cast<size_t>(n.op)];
                    p.ms += ms_since(t0);
                    ++p.count;
                    // In place, the output still shares the donor's buffer (the donor's drop comes next).
                    const NodeId donor = exec_[static_cast<size_t>(s.arg)].donor;
                    const bool in_place = donor != kNoNode && value_buf_[static_cast<size_t>(s.arg)] >= 0 &&
                                          value_buf_[static_cast<size_t>(s.arg)] == value_buf_[static_cast<size_t>(donor)];
                    if (!aliases_input(g_, n) && !in_place) p.bytes += plan_.node_bytes[static_cast<size_t>(s.arg)];
                    if (e) return e;
                } else if (auto e = run_node(s.arg)) {
                    return e;
                }
                break;
            case PlanStep::Kind::Drop: drop(s.arg); break;
            case PlanStep::Kind::LoopBegin: {
                const LoopPlan& lp = plan_.loops[static_cast<size_t>(s.arg)];
                const Repeat& rep = g_.repeats[static_cast<size_t>(s.arg)];
                for (const Carry& c : rep.carries) share(c.param, c.init);
                for (NodeId v : lp.drop_at_begin) drop(v);
                passes_left_[static_cast<size_t>(s.arg)] = rep.count;
                if (rep.count == 0) i = static_cast<size_t>(lp.end);
                break;
            }
            case PlanStep::Kind::LoopEnd: {
                const LoopPlan& lp = plan_.loops[static_cast<size_t>(s.arg)];
                for (const Carry& c : g_.repeats[static_cast<size_t>(s.arg)].carries) {
                    share(c.param, c.update);
                    drop(c.update);
                }
                safe_point();  // the end of each repeat pass
                if (--passes_left_[static_cast<size_t>(s.arg)] > 0) i = static_cast<size_t>(lp.body_start) - 1;
                break;
            }
        }
    }
    safe_point();  // the end of the pass
    if (opts_.cleanup == CleanupStrategy::Background) flush_to_reclaimer(static_peak_);
    return std::nullopt;
}

std::optional<RunError> Session::run(int64_t iterations, const std::vector<Output>& outputs,
                                     std::vector<HostTensor>& fetched) {
    if (open_error_) return open_error_;
    auto t0 = std::chrono::steady_clock::now();
    std::optional<RunError> err;
    for (int64_t pass = 0; pass < iterations && !err; ++pass) {
        // The previous pass's outputs stay referenced until this pass's first safe point.
        if (pass > 0)
            for (NodeId v : plan_.held) drop(v);
        err = run_pass();
    }
    mark_pending();  // what a stopped run left unreferenced shows as pending
    // The run ends when the devices have finished its work (and said whether it failed).
    for (auto& [name, dev] : devices_) {
        std::string e = dev->synchronize();
        if (!e.empty() && !err) err = RunError{"device " + name + " failed: " + e, {}};
    }
    run_ms_ = ms_since(t0);
    // The reclaimer may sleep on less than a wake-up's worth of buffers: it
    // gets them now, rather than while the session stays open or at close.
    if (reclaimer_.joinable()) cv_work_.notify_one();
    if (err || iterations == 0) return err;  // nothing ran: nothing to fetch
    for (const Output& o : outputs) {
        const Node& n = g_.node(o.id);
        HostTensor h{o.name, n.dtype, n.shape, std::string(n.placed), {}};
        int32_t b = value_buf_[static_cast<size_t>(o.id)];
        int64_t numel = checked_numel(n.shape).value_or(0);
        size_t bytes = static_cast<size_t>(numel) * dtype_size(n.dtype);
        h.data.resize(bytes);
        if (b >= 0) {
            const Buffer& buf = bufs_[static_cast<size_t>(b)];
            h.device = buf.dev->name();  // a loop-carried value lives where its last update ran
            if (bytes) {
                std::string e = buf.dev->copy_to_host(h.data.data(), buf.data, bytes);
                if (!e.empty()) return RunError{"fetching output '" + o.name + "' from " + h.device + " failed: " + e, {}};
            }
        }
        fetched.push_back(std::move(h));
    }
    return std::nullopt;
}

void Session::close() {
    if (closed_) return;
    closed_ = true;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t v = 0; v < value_buf_.size(); ++v) drop(static_cast<NodeId>(v));
    if (reclaimer_.joinable()) {
        mark_pending();
        {
            std::lock_guard<std::mutex> lock(mu_);
            queue_.insert(queue_.end(), pending_.begin(), pending_.end());
            pending_.clear();
            pending_marked_ = 0;
            stop_ = true;
        }
        cv_work_.notify_one();
        reclaimer_.join();
    }
    release_pending_now();
    kernels_.clear();  // before the devices whose handles they use
    ctx_.pool = nullptr;
    pool_.reset();  // joins the CPU workers
    for (auto& [name, dev] : devices_) dev->close();
    teardown_ms_ = ms_since(t0);
}

}  // namespace graphrun
