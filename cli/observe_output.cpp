// The timeline's table and JSON, and the trace file.
#include "cli/observe_output.h"

#include <algorithm>
#include <iomanip>
#include <ostream>
#include <streambuf>
#include <vector>

#include "cli/table.h"
#include "engine/api/output_paths.h"

namespace graphrun::cli {

namespace {

std::string repeats_text(const TimelineRow& row) {
    if (row.repeats.empty()) return "-";
    std::string s;
    for (const TimelinePass& p : row.repeats)
        s += (s.empty() ? "" : ", ") + p.at + ": " + std::to_string(p.pass) + "/" + std::to_string(p.passes);
    return s;
}

// An ostream's bytes straight into an AtomicFile's temporary (which buffers
// them): the trace is written as it is formatted, with no copy of its text
// in memory. A failed write fails the stream; commit() then says why.
class AtomicFileBuf final : public std::streambuf {
public:
    explicit AtomicFileBuf(AtomicFile& file) : file_(file) {}

protected:
    std::streamsize xsputn(const char* s, std::streamsize n) override {
        return file_.write(s, static_cast<size_t>(n)) ? n : 0;
    }
    int_type overflow(int_type c) override {
        if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
        const char ch = traits_type::to_char_type(c);
        return file_.write(&ch, 1) ? c : traits_type::eof();
    }

private:
    AtomicFile& file_;
};

}  // namespace

void print_memory_table(const std::string& title, const std::map<std::string, MemoryStats>& stats,
                        std::ostream& out) {
    out << title << ":\n";
    TextTable table({"device", "in_use", "peak", "pending", "pending_peak", "reserved", "allocs", "frees", "live",
                     "copied_in", "weights", "workspace"},
                    1);
    for (const auto& [dev, s] : stats)
        table.add({dev, std::to_string(s.in_use), std::to_string(s.peak), std::to_string(s.pending),
                   std::to_string(s.pending_peak), std::to_string(s.reserved), std::to_string(s.allocs),
                   std::to_string(s.frees), std::to_string(s.live), std::to_string(s.copied_in),
                   std::to_string(s.weights), std::to_string(s.workspace)},
                  {{1, s.in_use}, {2, s.peak}, {3, s.pending}, {4, s.pending_peak}, {5, s.reserved},
                   {9, s.copied_in}, {10, s.weights}, {11, s.workspace}});
    table.print(out);
}

void print_timeline(const Timeline& t, int64_t iterations, std::ostream& out) {
    out << "timeline (" << t.rows.size() << " rows for " << t.pass_ends << " pass ends";
    if (t.every > 1) out << ", one every " << t.every;
    out << "; in_use, peak and pending in bytes at the end of each):\n";
    TextTable table({"iteration", "repeat passes", "end", "device", "in_use", "peak", "pending"}, 4);
    for (const TimelineRow& r : t.rows) {
        bool first = true;
        for (const auto& [dev, s] : r.memory) {
            table.add({first ? std::to_string(r.iteration) + "/" + std::to_string(iterations) : "",
                       first ? repeats_text(r) : "", first ? r.end : "", dev, std::to_string(s.in_use),
                       std::to_string(s.peak), std::to_string(s.pending)},
                      {{4, s.in_use}, {5, s.peak}, {6, s.pending}});
            first = false;
        }
    }
    table.print(out);
}

nlohmann::ordered_json timeline_json(const Timeline& t) {
    auto rows = nlohmann::ordered_json::array();
    for (const TimelineRow& r : t.rows) {
        auto reps = nlohmann::ordered_json::array();
        for (const TimelinePass& p : r.repeats)
            reps.push_back(nlohmann::ordered_json{{"at", p.at}, {"pass", p.pass}, {"passes", p.passes}});
        nlohmann::ordered_json mem = nlohmann::ordered_json::object();
        for (const auto& [dev, s] : r.memory)
            mem[dev] = nlohmann::ordered_json{{"in_use", s.in_use}, {"peak", s.peak}, {"pending", s.pending}};
        rows.push_back(nlohmann::ordered_json{
            {"end", r.end}, {"iteration", r.iteration}, {"repeats", std::move(reps)}, {"memory", std::move(mem)}});
    }
    return rows;
}

bool write_trace(const TraceRecorder& trace, const std::string& path, std::ostream& err) {
    std::string why;
    AtomicFile file;  // whole or not at all
    bool ok = file.open(path, why);
    if (ok) {
        AtomicFileBuf buf(file);
        std::ostream out(&buf);
        trace.write(out);
        ok = file.commit(why);
    }
    if (!ok) {
        err << "graphrun: error: --trace=" << path << ": the trace: " << why << "\n";
        return false;
    }
    if (size_t dropped = trace.dropped_events())
        err << "graphrun: warning: the trace " << path << " stopped at its cap of " << trace.max_events()
            << " events; " << dropped
            << " later events are not in it (its otherData says so; each run's last counters are kept)\n";
    return true;
}

}  // namespace graphrun::cli
