// The execution plan of one pass (SPEC section 4): the order nodes run in and
// the points where each value is dropped, compiled once. The executor runs
// these steps; the static figures are the same steps simulated with buffer
// sizes, so that the two follow one rule. Both walk them with PlanWalker
// (plan_walker.h).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace graphrun {

struct PlanStep {
    enum class Kind : uint8_t {
        Run,        // arg: node. Allocate its output (an alias op shares its input's buffer) and compute it.
        Drop,       // arg: value (node id). The value gives up its buffer reference.
        LoopBegin,  // arg: loop index. Params take init's buffer, then the loop's begin drops;
                    // repeat 0 jumps past the LoopEnd.
        LoopEnd,    // arg: loop index. Params take the updates' buffers, updates are dropped;
                    // with passes left, back to the body's first step.
    };
    Kind kind = Kind::Run;
    int32_t arg = 0;
};

struct LoopPlan {
    int32_t repeat = 0;      // index into Graph::repeats
    int32_t begin = 0;       // step index of LoopBegin
    int32_t body_start = 0;  // first step of the body (where LoopEnd jumps back to)
    int32_t end = 0;         // step index of LoopEnd
    std::vector<NodeId> drop_at_begin;  // values whose last use was as a loop's init
};

struct Plan {
    std::vector<PlanStep> steps;
    std::vector<LoopPlan> loops;        // by Graph::repeats index
    std::vector<NodeId> held;           // the pass's outputs: held to the next pass's first safe point
    std::vector<uint64_t> node_bytes;   // buffer bytes per node (64-byte rounded; 0 for an alias or a weight)
    // Per node: the input whose buffer it may write its output into (-1: none);
    // see may_take_input_buffer. Whether it does is decided when it runs.
    // Only a strategy that releases before close reuses a buffer: under
    // --cleanup=close no node runs in place (Session, per Cleanup::holds_until_close).
    std::vector<int8_t> donor;
    // Per device ("cpu", "gpu:0"), for one pass: the most bytes live at any
    // allocation with the donors used and every dropped buffer released at
    // once (--cleanup=safepoint's peak for one pass).
    std::map<std::string, uint64_t> static_peak;
    // Per device, the same devices as static_peak: the bytes one pass
    // allocates when nothing is reused or released, as under --cleanup=close:
    // every Run step's output (an alias 0, no donor taken) and every copy of
    // an input from another device, in every repeat pass. close holds them all
    // until the session closes, so its in_use grows by this much per pass and
    // m passes peak at m times it. Saturates at UINT64_MAX.
    std::map<std::string, uint64_t> close_growth;
    // Per device, the bytes of its weights (is_weight, 64-byte rounded): held
    // by the session from load to close, apart from the tensors above.
    std::map<std::string, uint64_t> weights;
    // Per node: the bytes of its weight buffer (0 for a node that is not one).
    std::vector<uint64_t> weight_bytes;
    // The CPU's offset plan (ONNX Runtime's memory pattern, TFLite's arena
    // planner): for a plan without loops, every CPU tensor buffer of
    // kPlannedBytes or more that the safepoint walk allocates has an offset in
    // one block of cpu_arena_bytes, placed greedily by size over the buffers'
    // lifetimes, so that two buffers live at once never overlap. The CPU
    // allocator carves each buffer at its offset when that range is free and
    // allocates as it would otherwise when not. cpu_offset: per node, its
    // output's offset or kNotPlanned; empty (and cpu_arena_bytes 0) when no
    // buffer is planned.
    std::vector<uint64_t> cpu_offset;
    uint64_t cpu_arena_bytes = 0;
};

// The smallest buffer the offset plan places: smaller ones are reused by size
// from the CPU allocator's free lists, at a few nanoseconds a node.
constexpr uint64_t kPlannedBytes = uint64_t{256} << 10;
constexpr uint64_t kNotPlanned = UINT64_MAX;
// The most buffers the offset plan places (its greedy placement is quadratic
// in the worst case); a plan with more has none.
constexpr size_t kMaxPlannedBuffers = 4096;

// Largest number of steps simulated for the static peak. The simulation runs
// each loop at most twice per pass of its parent, so only deeply nested loops
// come near it; the run itself would take longer still.
constexpr uint64_t kMaxSimulatedSteps = uint64_t{200} * 1000 * 1000;

// True when node `n` shares its input's buffer instead of allocating one (the
// one rule shared by the executor and the static plan).
bool aliases_input(const Graph& g, const Node& n);

// True when node `n` is a weight (SPEC section 4): a `const` (a literal, a
// file's array, an ONNX initializer), placed once when the session loads the
// executable and held until close, never copied per pass. Its Run step only
// makes its value refer to that buffer, which no node may write over (the
// session holds a reference of its own), and which no drop releases.
bool is_weight(const Node& n);

// In-place execution, the one rule shared by the executor and the static plan:
// node n may write its output over input `k`'s buffer when n is an elementwise
// op on the CPU, input k has n's dtype, shape and device, and n is input k's
// last reader in the pass (the plan drops it right after n). The plan records
// the first such input as n's donor; when n runs, it takes the donor's buffer
// only if no other value refers to that buffer (no alias, no loop carry still
// holding it) and the buffer lives on n's device, and then allocates nothing.
bool may_take_input_buffer(const Graph& g, const Node& n, size_t k);

// Compiles the plan of a validated, placed graph for `outputs` (the fetched
// values), with its static peak and close growth. Fails only when the
// simulation exceeds kMaxSimulatedSteps.
std::optional<Plan> compile_plan(const Graph& g, const std::vector<NodeId>& outputs, std::string* error);

}  // namespace graphrun
