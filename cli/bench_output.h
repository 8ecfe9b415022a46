// `graphrun run --bench` and `--profile=nodes`: the pass latencies and the
// per-node table, as text sections after the session line and as JSON.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "engine/api/run.h"

namespace graphrun::cli {

// --bench's defaults: passes run first and not counted (the first pass fills
// the allocator's caches and faults in pages, starts BLAS's threads; the
// second still finds colder caches than later ones), and measured passes
// where --iterations is not given.
inline constexpr int64_t kDefaultWarmup = 2;
inline constexpr int64_t kDefaultBenchPasses = 10;

// --bench with --warmup=N and --iterations (given or not): sets engine.bench
// and makes engine.iterations the passes in all (warm-up ones included); or
// says what is wrong (a usage error).
std::string apply_bench_options(int64_t warmup, bool iterations_given, RunFileOptions& engine);

// How many nodes the text table lists (JSON lists every one).
inline constexpr size_t kNodeProfileRows = 20;

// "bench (...):" and a row of latency figures per pass, with throughput.
void print_bench(const BenchResult& b, std::ostream& out);
// "profile (per node, ...):": the slowest kNodeProfileRows nodes and what all
// nodes took of the passes' time.
void print_node_profile(const BenchResult& b, bool bench, std::ostream& out);
// The `bench` object (null figures where no pass was measured).
nlohmann::ordered_json bench_json(const BenchResult& b);
// The `node_profile` object: the passes' time and every node, slowest first.
nlohmann::ordered_json node_profile_json(const BenchResult& b);

}  // namespace graphrun::cli
