// Compiles one pass into steps with drop points, and simulates them for the
// static peak.
#include "engine/plan/plan.h"
#include "engine/plan/plan_walker.h"
#include "engine/base/interrupt.h"
#include "engine/ir/device_name.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

namespace graphrun {

bool aliases_input(const Graph& g, const Node& n) {
    return is_alias_op(n.op) && n.inputs.size() == 1 && g.node(n.inputs[0].id).placed == n.placed;
}

bool is_weight(const Node& n) { return n.op == OpKind::Const && n.valid; }

bool may_take_input_buffer(const Graph& g, const Node& n, size_t k) {
    // The CPU kernels of these ops read each element before they write it, at
    // the same index (elementwise.cpp); the GPU kernels are not written for it.
    if (!is_binary_elementwise(n.op) && !is_unary_elementwise(n.op)) return false;
    if (device_kind(n.placed) != DeviceKind::Cpu || k >= n.inputs.size()) return false;
    const Node& in = g.node(n.inputs[k].id);
    return in.dtype == n.dtype && in.placed == n.placed && in.shape == n.shape;
}

namespace {

constexpr int64_t kNever = -1;

uint64_t saturating_add(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}
uint64_t saturating_mul(uint64_t a, uint64_t b) {
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}


// Builds the steps. A block is the top level (repeat -1) or a repeat body.
// Positions inside a block: statement k's begin is 2k, its end 2k+1. A value's
// home is the block it is defined in (a loop parameter has two: its body, for
// the passes, and the loop's parent block, for the value after the loop).
class PlanBuilder {
public:
    PlanBuilder(const Graph& g, const std::vector<NodeId>& outputs) : g_(g) {
        held_.assign(g.nodes.size(), false);
        plan_.donor.assign(g.nodes.size(), -1);
        for (NodeId v : outputs) held_[static_cast<size_t>(v)] = true;
        for (size_t i = 0; i < held_.size(); ++i)
            if (held_[i]) plan_.held.push_back(static_cast<NodeId>(i));
        stamp_.assign(g.nodes.size(), 0);
        last_.assign(g.nodes.size(), kNever);
        defined_at_.assign(g.nodes.size(), kNever);
        plan_.loops.resize(g.repeats.size());
        update_of_.assign(g.repeats.size(), {});
        for (size_t r = 0; r < g.repeats.size(); ++r)
            for (const Carry& c : g.repeats[r].carries) update_of_[r].insert(c.update);
    }

    Plan build() {
        emit_block(g_.top, -1);
        plan_.node_bytes.resize(g_.nodes.size(), 0);
        plan_.weight_bytes.resize(g_.nodes.size(), 0);
        std::vector<bool> runs(g_.nodes.size(), false);
        for (const PlanStep& s : plan_.steps)
            if (s.kind == PlanStep::Kind::Run) runs[static_cast<size_t>(s.arg)] = true;
        for (size_t i = 0; i < g_.nodes.size(); ++i) {
            const Node& n = g_.nodes[i];
            if (n.op == OpKind::LoopParam || n.op == OpKind::Invalid || aliases_input(g_, n)) continue;
            const auto numel = checked_numel(n.shape);
            uint64_t size = 0;
            if (numel)
                if (const auto b = checked_buffer_bytes(*numel, n.dtype)) size = *b;
            if (is_weight(n)) {
                if (!runs[i]) continue;
                // A pre-packed weight is held in its kernel's layout (engine/plan/prepack.h), padded there.
                if (const PrepackedWeight* p = g_.prepacked_weight(static_cast<NodeId>(i)))
                    if (const auto b = checked_buffer_bytes(p->size, DType::U8)) size = *b;
                plan_.weight_bytes[i] = size;
                uint64_t& w = plan_.weights[std::string(n.placed)];
                w = saturating_add(w, plan_.weight_bytes[i]);
                continue;
            }
            plan_.node_bytes[i] = size;
        }
        return std::move(plan_);
    }

private:
    // Free values of repeat `r`: read inside it but homed outside. `late` is
    // true when something inside reads it during the passes (dropped after the
    // loop), false when it is only r's own carry init (dropped at LoopBegin).
    void free_values(int32_t r, std::unordered_map<NodeId, bool>& out) {
        auto it = free_cache_.find(r);
        if (it != free_cache_.end()) {
            out = it->second;
            return;
        }
        const Repeat& rep = g_.repeats[static_cast<size_t>(r)];
        std::unordered_set<NodeId> inside;
        for (const Carry& c : rep.carries) inside.insert(c.param);
        for (const Stmt& s : rep.body) {
            if (s.kind == Stmt::Kind::Node) inside.insert(s.index);
            else if (s.kind == Stmt::Kind::Repeat)
                for (const Carry& c : g_.repeats[static_cast<size_t>(s.index)].carries) inside.insert(c.param);
        }
        std::unordered_map<NodeId, bool> result;
        auto note = [&](NodeId v, bool late) {
            if (inside.count(v)) return;
            auto [pos, fresh] = result.emplace(v, late);
            if (!fresh) pos->second = pos->second || late;
        };
        for (const Carry& c : rep.carries) note(c.init, false);
        for (const Stmt& s : rep.body) {
            if (s.kind == Stmt::Kind::Node) {
                for (const Input& in : g_.node(s.index).inputs) note(in.id, true);
            } else if (s.kind == Stmt::Kind::Repeat) {
                std::unordered_map<NodeId, bool> inner;
                free_values(s.index, inner);
                for (const auto& [v, late] : inner) note(v, true);
            }
        }
        free_cache_[r] = result;
        out = std::move(result);
    }

    bool keep(NodeId v, int32_t r) const {
        if (r == -1) return held_[static_cast<size_t>(v)];
        return update_of_[static_cast<size_t>(r)].count(v) > 0;
    }

    void drop(NodeId v) { plan_.steps.push_back(PlanStep{PlanStep::Kind::Drop, v}); }

    // Emits block `stmts` (body of repeat `r`, or the top level for -1).
    // Per-value state lives in vectors indexed by node id, valid for the
    // values homed in this block (stamp_ says which): a million-node block
    // costs no hash map. It is all read before the recursion into a loop body
    // reuses it.
    void emit_block(const std::vector<Stmt>& stmts, int32_t r) {
        const uint32_t gen = ++generation_;
        std::vector<NodeId> homed;  // in order of definition
        auto home = [&](NodeId v, int64_t defined) {
            const auto i = static_cast<size_t>(v);
            stamp_[i] = gen;
            last_[i] = kNever;
            defined_at_[i] = defined;
            homed.push_back(v);
        };
        auto use = [&](NodeId v, int64_t pos) {
            const auto i = static_cast<size_t>(v);
            if (stamp_[i] == gen) last_[i] = std::max(last_[i], pos);
        };
        if (r >= 0)
            for (const Carry& c : g_.repeats[static_cast<size_t>(r)].carries) home(c.param, kNever);
        for (size_t k = 0; k < stmts.size(); ++k) {
            const Stmt& s = stmts[k];
            auto pos_begin = static_cast<int64_t>(2 * k), pos_end = pos_begin + 1;
            if (s.kind == Stmt::Kind::Node) {
                for (const Input& in : g_.node(s.index).inputs) use(in.id, pos_end);
                home(s.index, pos_end);
            } else if (s.kind == Stmt::Kind::Repeat) {  // a `del` changes no value's last use
                std::unordered_map<NodeId, bool> fv;
                free_values(s.index, fv);
                for (const auto& [v, late] : fv) use(v, late ? pos_end : pos_begin);
                for (const Carry& c : g_.repeats[static_cast<size_t>(s.index)].carries) home(c.param, pos_end);
            }
        }
        // Drop points: after the last use, else where the value is defined; in
        // position order, values of one position in the order they were homed.
        // A counting sort by position (stable): positions are 0 .. 2 * stmts.
        std::vector<NodeId> drops_at_start;
        std::vector<uint32_t> first_at(2 * stmts.size() + 2, 0);  // then: start of each position's run
        std::vector<int64_t>& at_of = last_;  // reused: each homed value's drop position
        for (NodeId v : homed) {
            const auto i = static_cast<size_t>(v);
            if (keep(v, r)) {
                at_of[i] = kNever - 1;
                continue;
            }
            const int64_t at = last_[i] != kNever ? last_[i] : defined_at_[i];
            at_of[i] = at;
            if (at == kNever) {  // a parameter of this body with no reader in it
                drops_at_start.push_back(v);
                continue;
            }
            ++first_at[static_cast<size_t>(at) + 1];
        }
        for (size_t p = 1; p < first_at.size(); ++p) first_at[p] += first_at[p - 1];
        std::vector<NodeId> drops(first_at.back());
        {
            std::vector<uint32_t> fill(first_at.begin(), first_at.end() - 1);
            for (NodeId v : homed) {
                const int64_t at = at_of[static_cast<size_t>(v)];
                if (at >= 0) drops[fill[static_cast<size_t>(at)]++] = v;
            }
        }
        auto take = [&](int64_t pos, std::vector<NodeId>* into) {
            const auto p = static_cast<size_t>(pos);
            for (uint32_t k = first_at[p]; k < first_at[p + 1]; ++k)
                if (into) into->push_back(drops[k]);
                else drop(drops[k]);
        };
        for (NodeId v : drops_at_start) drop(v);
        for (size_t k = 0; k < stmts.size(); ++k) {
            const Stmt& s = stmts[k];
            auto pos_begin = static_cast<int64_t>(2 * k), pos_end = pos_begin + 1;
            if (s.kind == Stmt::Kind::Node) {
                // No value is last used at a node's begin.
                plan_.steps.push_back(PlanStep{PlanStep::Kind::Run, s.index});
                const auto p = static_cast<size_t>(pos_end);
                if (first_at[p] != first_at[p + 1])
                    note_donor(s.index, drops.data() + first_at[p], drops.data() + first_at[p + 1]);
            } else if (s.kind == Stmt::Kind::Repeat) {
                LoopPlan& lp = plan_.loops[static_cast<size_t>(s.index)];
                lp.repeat = s.index;
                lp.begin = static_cast<int32_t>(plan_.steps.size());
                plan_.steps.push_back(PlanStep{PlanStep::Kind::LoopBegin, s.index});
                take(pos_begin, &lp.drop_at_begin);
                lp.body_start = static_cast<int32_t>(plan_.steps.size());
                emit_block(g_.repeats[static_cast<size_t>(s.index)].body, s.index);
                LoopPlan& after = plan_.loops[static_cast<size_t>(s.index)];
                after.end = static_cast<int32_t>(plan_.steps.size());
                plan_.steps.push_back(PlanStep{PlanStep::Kind::LoopEnd, s.index});
            }
            take(pos_end, nullptr);
        }
    }

    // Node `id` is the last reader of the values [dropped, end): the first of
    // its inputs among them that may give it its buffer is its donor.
    void note_donor(NodeId id, const NodeId* dropped, const NodeId* end) {
        const Node& n = g_.node(id);
        for (size_t k = 0; k < n.inputs.size(); ++k)
            if (may_take_input_buffer(g_, n, k) && std::find(dropped, end, n.inputs[k].id) != end) {
                plan_.donor[static_cast<size_t>(id)] = static_cast<int8_t>(k);
                return;
            }
    }

    const Graph& g_;
    Plan plan_;
    std::vector<bool> held_;  // per node: an output of the pass
    std::vector<std::unordered_set<NodeId>> update_of_;
    // emit_block's per-node scratch (see there).
    uint32_t generation_ = 0;
    std::vector<uint32_t> stamp_;
    std::vector<int64_t> last_, defined_at_;
    std::unordered_map<int32_t, std::unordered_map<NodeId, bool>> free_cache_;
};

// A buffer of the offset plan: node `node`'s output, of `bytes`, allocated at
// Run step `start` and released before Run step `end` allocates (UINT64_MAX:
// held past the pass's end, as its outputs are).
struct Lifetime {
    NodeId node;
    uint64_t bytes;
    uint64_t start, end;
};

// Greedy by size (TFLite's arena planner, ONNX Runtime's memory pattern):
// the largest buffer first, each at the lowest offset where it overlaps no
// buffer placed before it whose lifetime meets its own. The block it needs is
// at least the static peak of these buffers, and close to it in practice.
void plan_offsets(const std::vector<Lifetime>& bufs, size_t nodes, Plan& plan) {
    plan.cpu_offset.clear();
    plan.cpu_arena_bytes = 0;
    if (bufs.empty() || bufs.size() > kMaxPlannedBuffers) return;
    std::vector<size_t> order(bufs.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bufs[a].bytes > bufs[b].bytes; });
    std::vector<uint64_t> offset(bufs.size(), 0);
    std::vector<size_t> placed, meets;
    placed.reserve(bufs.size());
    uint64_t arena = 0;
    for (size_t i : order) {
        const Lifetime& b = bufs[i];
        meets.clear();
        for (size_t j : placed)
            if (bufs[j].start < b.end && b.start < bufs[j].end) meets.push_back(j);
        std::sort(meets.begin(), meets.end(), [&](size_t x, size_t y) { return offset[x] < offset[y]; });
        uint64_t at = 0;
        for (size_t j : meets) {
            if (offset[j] >= at && offset[j] - at >= b.bytes) break;  // the gap below j takes it
            at = std::max(at, offset[j] + bufs[j].bytes);  // placed ones end below 2^64 (checked below)
        }
        if (at > UINT64_MAX - b.bytes) return;  // past 2^64 bytes (sizes a file declared): no plan
        offset[i] = at;
        arena = std::max(arena, at + b.bytes);
        placed.push_back(i);
    }
    plan.cpu_offset.assign(nodes, kNotPlanned);
    for (size_t i = 0; i < bufs.size(); ++i) plan.cpu_offset[static_cast<size_t>(bufs[i].node)] = offset[i];
    plan.cpu_arena_bytes = arena;
}

// Runs the steps with sizes instead of data: the same moves the executor makes
// under safepoint (the static peak). In the same walk it adds up what every
// Run step allocates when nothing is reused or released (the close growth):
// a buffer's device is the same either way (a donor's buffer is taken only on
// the node's own device), so each step's copies are too. A loop runs at most
// twice per pass of its parent and every later pass repeats the second, so
// the second pass's allocations count (count - 1) times.
class PeakSimulator {
public:
    PeakSimulator(const Graph& g, const Plan& p)
        : g_(g), p_(p), value_buf_(g.nodes.size(), -1), weight_buf_(g.nodes.size(), -1) {
        // Devices by number, so that a step costs no string compare.
        device_of_.assign(g.nodes.size(), 0);
        for (size_t i = 0; i < g.nodes.size(); ++i) {
            const Node& n = g.nodes[i];
            const std::string_view d = n.placed;
            size_t k = 0;
            while (k < devices_.size() && devices_[k] != d) ++k;
            if (k == devices_.size()) {
                devices_.push_back(d);
                used_.push_back(false);
            }
            device_of_[i] = static_cast<uint32_t>(k);
            if (n.op != OpKind::Invalid && n.op != OpKind::LoopParam && !d.empty()) used_[k] = true;
        }
        live_.assign(devices_.size(), 0);
        peak_.assign(devices_.size(), 0);
        close_.assign(devices_.size(), 0);
        touched_.assign(devices_.size(), false);
    }

    bool simulate(std::map<std::string, uint64_t>& peak, std::map<std::string, uint64_t>& close_growth) {
        budget_ = kMaxSimulatedSteps;
        // The offset plan's lifetimes: a plan without loops walks each Run
        // step once, so a step's index is a time.
        for (size_t k = 0; k < devices_.size(); ++k)
            if (p_.loops.empty() && devices_[k] == kCpuDeviceName) cpu_ = static_cast<uint32_t>(k);
        if (!PlanWalker(g_, p_).walk(*this)) return false;
        // Every device a node is placed on has a figure, 0 if nothing was allocated there.
        for (size_t k = 0; k < devices_.size(); ++k)
            if (touched_[k] || used_[k]) {
                peak[std::string(devices_[k])] = peak_[k];
                close_growth[std::string(devices_[k])] = close_[k];
            }
        return true;
    }

    // PlanWalker's visitor.
    // False past the budget, or once a signal asked graphrun to stop (polled
    // every 4096 steps: the simulation may take seconds).
    bool step() { return budget_-- != 0 && ((budget_ & 4095) != 0 || !interrupted()); }
    bool run(NodeId id) {
        run_node(id);
        ++runs_;
        return true;
    }
    // Every pass after the second repeats the second exactly.
    int64_t passes(const Repeat& rep) {
        const int64_t n = std::min<int64_t>(rep.count, 2);
        if (n > 0) loops_.push_back(LoopPass{weight_, rep.count, 0});
        return n;
    }
    void loop_pass_end(int32_t) {
        LoopPass& l = loops_.back();
        if (++l.done == std::min<int64_t>(l.count, 2)) {
            weight_ = l.outer_weight;
            loops_.pop_back();
        } else {  // the second pass stands for all the others
            weight_ = saturating_mul(l.outer_weight, static_cast<uint64_t>(l.count - 1));
        }
    }

    // The executor's moves (ExecutionFrame::share and drop), with sizes. The
    // plan has dropped `to` before it shares (ExecutionFrame::share drops it
    // again to be safe).
    void share(NodeId to, NodeId from) {
        int64_t b = value_buf_[static_cast<size_t>(from)];
        value_buf_[static_cast<size_t>(to)] = b;
        if (b >= 0) ++bufs_[static_cast<size_t>(b)].refs;
    }

    void drop(NodeId v) {
        int64_t& b = value_buf_[static_cast<size_t>(v)];
        if (b < 0) return;
        Buffer& buf = bufs_[static_cast<size_t>(b)];
        if (--buf.refs == 0) {
            live_[buf.device] -= buf.bytes;
            free_.push_back(b);
            // Released at the safe point before the next Run step, before it allocates.
            if (static_cast<size_t>(b) < planned_of_buf_.size() && planned_of_buf_[static_cast<size_t>(b)] >= 0) {
                lifetimes_[static_cast<size_t>(planned_of_buf_[static_cast<size_t>(b)])].end = runs_;
                planned_of_buf_[static_cast<size_t>(b)] = -1;
            }
        }
        b = -1;
    }

    // The offset plan of the CPU buffers the walk recorded (Plan::cpu_offset).
    void place_offsets(Plan& plan) const { plan_offsets(lifetimes_, g_.nodes.size(), plan); }

private:
    struct Buffer {
        uint64_t bytes;
        uint32_t device;
        int64_t refs;
    };
    // A loop being walked: the weight of the pass around it, its count, its passes walked.
    struct LoopPass {
        uint64_t outer_weight;
        int64_t count;
        int64_t done;
    };

    // What a Run step allocates under close, `weight_` times over.
    void close_alloc(uint32_t dev, uint64_t bytes) {
        uint64_t& c = close_[dev];
        c = saturating_add(c, weight_ == 1 ? bytes : saturating_mul(bytes, weight_));
    }

    void alloc(uint32_t dev, uint64_t bytes) {
        touched_[dev] = true;
        uint64_t& live = live_[dev];
        live += bytes;
        uint64_t& pk = peak_[dev];
        pk = std::max(pk, live);
    }

    void run_node(NodeId id) {
        const Node& n = g_.node(id);
        const uint32_t dev = device_of_[static_cast<size_t>(id)];
        // Inputs from another device are copied in for the node and dropped after it.
        uint64_t copies = 0;
        for (const Input& in : n.inputs) {
            int64_t b = value_buf_[static_cast<size_t>(in.id)];
            if (b >= 0 && bufs_[static_cast<size_t>(b)].device != dev) copies += bufs_[static_cast<size_t>(b)].bytes;
        }
        if (copies) alloc(dev, copies);
        if (aliases_input(g_, n)) {
            // Under close too an alias allocates nothing (Session::run_node
            // copies nothing for it either).
            share(id, n.inputs[0].id);
            if (copies) live_[dev] -= copies;
            return;
        }
        if (is_weight(n)) {
            // The session's own buffer, placed at load: a reference to it, no
            // allocation, and never anyone's donor (the session's reference).
            int64_t& w = weight_buf_[static_cast<size_t>(id)];
            if (w < 0) {
                w = static_cast<int64_t>(bufs_.size());
                bufs_.push_back(Buffer{0, dev, 1});
            }
            drop(id);
            value_buf_[static_cast<size_t>(id)] = w;
            ++bufs_[static_cast<size_t>(w)].refs;
            return;
        }
        // Under close: the output's buffer and the copies, all held.
        close_alloc(dev, copies + p_.node_bytes[static_cast<size_t>(id)]);
        if (const int8_t k = p_.donor[static_cast<size_t>(id)];
            k >= 0 && takes_buffer(n.inputs[static_cast<size_t>(k)].id, dev)) {
            share(id, n.inputs[static_cast<size_t>(k)].id);  // in place: no allocation
        } else {
            uint64_t bytes = p_.node_bytes[static_cast<size_t>(id)];
            int64_t b;
            if (!free_.empty()) {
                b = free_.back();
                free_.pop_back();
                bufs_[static_cast<size_t>(b)] = Buffer{bytes, dev, 1};
            } else {
                b = static_cast<int64_t>(bufs_.size());
                bufs_.push_back(Buffer{bytes, dev, 1});
            }
            value_buf_[static_cast<size_t>(id)] = b;
            alloc(dev, bytes);
            if (dev == cpu_ && bytes >= kPlannedBytes) {
                if (planned_of_buf_.size() <= static_cast<size_t>(b)) planned_of_buf_.resize(static_cast<size_t>(b) + 1, -1);
                planned_of_buf_[static_cast<size_t>(b)] = static_cast<int64_t>(lifetimes_.size());
                lifetimes_.push_back(Lifetime{id, bytes, runs_, UINT64_MAX});
            }
        }
        if (copies) live_[dev] -= copies;
    }

    // The executor's test (Session::run_node): the donor's buffer is referred
    // to by the donor alone and lives on the node's device.
    bool takes_buffer(NodeId donor, uint32_t dev) const {
        const int64_t b = value_buf_[static_cast<size_t>(donor)];
        return b >= 0 && bufs_[static_cast<size_t>(b)].refs == 1 && bufs_[static_cast<size_t>(b)].device == dev;
    }

    const Graph& g_;
    const Plan& p_;
    std::vector<int64_t> value_buf_;
    std::vector<int64_t> weight_buf_;  // per weight node: its buffer, created at its first run
    std::vector<Buffer> bufs_;
    std::vector<int64_t> free_;  // slots of released buffers, reused
    std::vector<std::string_view> devices_;  // placed names seen
    std::vector<uint32_t> device_of_;   // per node: index into devices_
    std::vector<uint64_t> live_, peak_;  // per device
    std::vector<uint64_t> close_;        // per device: the close growth so far
    std::vector<LoopPass> loops_;        // the loops being walked, innermost last
    uint64_t weight_ = 1;                // how many passes of the whole the current step stands for
    std::vector<bool> touched_;          // per device: allocated on at least once
    std::vector<bool> used_;             // per device: a node (not a loop parameter) is placed there
    uint64_t budget_ = 0;                // steps left to simulate
    // The offset plan's record: the CPU's index in devices_ (none: a plan
    // with loops, or no CPU node), Run steps walked, and each planned
    // buffer's lifetime; per buffer slot, its lifetime while it is live.
    uint32_t cpu_ = UINT32_MAX;
    uint64_t runs_ = 0;
    std::vector<Lifetime> lifetimes_;
    std::vector<int64_t> planned_of_buf_;
};

}  // namespace

std::optional<Plan> compile_plan(const Graph& g, const std::vector<NodeId>& outputs, std::string* error) {
    Plan plan = PlanBuilder(g, outputs).build();
    if (const int sig = interrupted()) {  // the caller reports it
        if (error) *error = "interrupted by " + signal_name(sig) + " while planning";
        return std::nullopt;
    }
    // Refuse at once what the simulation could not finish: each step runs once
    // per simulated pass (at most 2) of every loop around it.
    double simulated = 0, mult = 1;
    std::vector<double> mults;
    for (const PlanStep& s : plan.steps) {
        if (s.kind == PlanStep::Kind::LoopBegin) {
            mults.push_back(mult);
            mult *= static_cast<double>(std::min<int64_t>(g.repeats[static_cast<size_t>(s.arg)].count, 2));
        } else if (s.kind == PlanStep::Kind::LoopEnd && !mults.empty()) {
            mult = mults.back();
            mults.pop_back();
        }
        simulated += mult;
    }
    PeakSimulator sim(g, plan);
    if (simulated > static_cast<double>(kMaxSimulatedSteps) || !sim.simulate(plan.static_peak, plan.close_growth)) {
        if (const int sig = interrupted(); sig && error)
            *error = "interrupted by " + signal_name(sig) + " while planning";
        else if (error)
            *error = "the static plan needs more than " + std::to_string(kMaxSimulatedSteps) +
                     " simulated steps (repeat loops nested too deeply)";
        return std::nullopt;
    }
    sim.place_offsets(plan);
    return plan;
}

}  // namespace graphrun
