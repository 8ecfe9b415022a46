// The one interpreter of a plan's steps (PlanStep): the executor (Session)
// walks it with buffers and kernels, the static peak (compile_plan) with
// sizes. Both see the same moves in the same order: a node runs, a value is
// dropped, loop parameters take their init's and then their update's buffer,
// a loop's body repeats, repeat 0 skips it. (ONNX Runtime's
// SequentialExecutionPlan is walked the same way by its executor and its
// memory-pattern planner.)
//
// A template over the visitor, so that a step costs no virtual call. The
// visitor provides:
//   bool step();                         // before every step; false stops the walk
//   bool run(NodeId id);                 // a Run step; false stops the walk
//   void drop(NodeId v);                 // the value gives up its buffer reference
//   void share(NodeId to, NodeId from);  // `to` refers to `from`'s buffer (after dropping its own)
//   int64_t passes(const Repeat& r);     // how many passes of loop r to walk (0 only when r.count is 0)
//   void loop_pass_end(int32_t loop);    // after each pass of a loop, its carries moved
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/plan/plan.h"

namespace graphrun {

class PlanWalker {
public:
    PlanWalker(const Graph& g, const Plan& plan) : g_(g), plan_(plan), passes_left_(plan.loops.size(), 0) {}

    // Walks one pass of the plan; false when the visitor stopped it. Inlined
    // into its caller, so that the visitor's fields stay in registers.
    template <class Visitor>
    [[gnu::always_inline]] inline bool walk(Visitor& v) {
        const std::vector<PlanStep>& steps = plan_.steps;
        for (size_t i = 0; i < steps.size(); ++i) {
            if (!v.step()) return false;
            const PlanStep& s = steps[i];
            switch (s.kind) {
                case PlanStep::Kind::Run:
                    if (!v.run(s.arg)) return false;
                    break;
                case PlanStep::Kind::Drop: v.drop(s.arg); break;
                case PlanStep::Kind::LoopBegin: {
                    const LoopPlan& lp = plan_.loops[static_cast<size_t>(s.arg)];
                    const Repeat& rep = g_.repeats[static_cast<size_t>(s.arg)];
                    for (const Carry& c : rep.carries) v.share(c.param, c.init);
                    for (NodeId d : lp.drop_at_begin) v.drop(d);
                    const int64_t passes = v.passes(rep);
                    passes_left_[static_cast<size_t>(s.arg)] = passes;
                    if (passes == 0) i = static_cast<size_t>(lp.end);  // past the LoopEnd
                    break;
                }
                case PlanStep::Kind::LoopEnd: {
                    const LoopPlan& lp = plan_.loops[static_cast<size_t>(s.arg)];
                    for (const Carry& c : g_.repeats[static_cast<size_t>(s.arg)].carries) {
                        v.share(c.param, c.update);
                        v.drop(c.update);
                    }
                    v.loop_pass_end(s.arg);
                    if (--passes_left_[static_cast<size_t>(s.arg)] > 0) i = static_cast<size_t>(lp.body_start) - 1;
                    break;
                }
            }
        }
        return true;
    }

    // How many passes of loop `loop` are left to walk, the current one
    // included, while the walk is inside its body: its current pass is
    // passes(r) - passes_left(loop), counted from 0 (an error's place in a run).
    int64_t passes_left(int32_t loop) const { return passes_left_[static_cast<size_t>(loop)]; }

private:
    const Graph& g_;
    const Plan& plan_;
    std::vector<int64_t> passes_left_;  // per loop, reused by every walk
};

}  // namespace graphrun
