// The JSON document of one run, streamed: the small parts through
// nlohmann::json, the tensors' data by write_values_json.
#include "cli/run_json.h"

#include <nlohmann/json.hpp>

#include "cli/bench_output.h"
#include "cli/commands.h"
#include "cli/data_options.h"
#include "cli/observe_output.h"
#include "cli/values.h"
#include "engine/api/output_text.h"
#include "engine/ir/device_name.h"

namespace graphrun::cli {

namespace {

using ojson = nlohmann::ordered_json;

ojson stats_json(const MemoryStats& s) {
    return ojson{{"in_use", s.in_use},       {"peak", s.peak},     {"pending", s.pending},
                 {"pending_peak", s.pending_peak}, {"reserved", s.reserved}, {"allocs", s.allocs},
                 {"frees", s.frees},         {"live", s.live},     {"copied_in", s.copied_in},
                 {"weights", s.weights},     {"workspace", s.workspace}};
}

// Everything after `outputs`: memory, system, session, profile, error.
ojson rest_json(const RunResult& r, const RunFileOptions& opts) {
    ojson doc = ojson::object();
    if (r.ran) {
        ojson before = ojson::object(), after = ojson::object();
        for (const auto& [dev, s] : r.before) before[dev] = stats_json(s);
        for (const auto& [dev, s] : r.after) after[dev] = stats_json(s);
        doc["memory"] = ojson{{"before_teardown", before}, {"after_teardown", after}};
        doc["system"] = ojson{{std::string(kCpuDeviceName), ojson{{"kind", "rss"},
                                            {"before_session", r.rss_session},
                                            {"before_teardown", r.rss_before},
                                            {"after_teardown", r.rss_after}}}};
        auto figure = [](const std::optional<uint64_t>& v) { return v ? ojson(*v) : ojson(nullptr); };
        for (const auto& [dev, f] : r.gpu_system) {
            ojson g{{"kind", "driver_used"},
                    {"before_session", figure(f.before_session)},
                    {"before_teardown", figure(f.before_teardown)},
                    {"after_teardown", figure(f.after_teardown)}};
            if (f.before_session && f.after_teardown)
                g["context_residue"] = *f.after_teardown > *f.before_session ? *f.after_teardown - *f.before_session : 0;
            if (!f.why.empty()) g["unavailable"] = f.why;
            doc["system"][dev] = std::move(g);
        }
    } else {  // no session was opened: there are no figures
        doc["memory"] = nullptr;
        doc["system"] = nullptr;
    }
    const ojson none(nullptr);
    doc["session"] = ojson{{"cleanup", cleanup_name(opts.cleanup)}, {"iterations", opts.iterations},
                           {"run_ms", r.ran ? ojson(r.run_ms) : none},
                           {"teardown_ms", r.ran ? ojson(r.teardown_ms) : none}};
    if (opts.mode == ExecMode::Eager) doc["session"]["mode"] = "eager";  // graph mode's document is unchanged
    if (opts.bench.passes) doc["bench"] = r.bench.recorded ? bench_json(r.bench) : none;
    if (opts.profile) {
        auto prof = ojson::array();
        for (const OpProfile& p : r.profile)
            prof.push_back(ojson{{"op", p.op}, {"count", p.count}, {"ms", p.ms}, {"bytes", p.bytes}});
        doc["profile"] = r.ran ? std::move(prof) : none;
    }
    if (opts.bench.nodes) doc["node_profile"] = r.bench.recorded ? node_profile_json(r.bench) : none;
    if (opts.timeline_rows) doc["timeline"] = timeline_json(r.timeline);
    if (!r.expected.empty()) doc["expected_outputs"] = expected_outputs_json(r, opts);
    if (r.error) {
        auto diags = ojson::array();
        for (const std::string& d : r.error->diagnostics) diags.push_back(d);
        if (diags.empty()) diags.push_back(r.error->message);
        doc["error"] = ojson{{"code", exit_code(*r.error)}, {"message", r.error->message}, {"diagnostics", diags}};
    }
    return doc;
}

}  // namespace

void print_run_json(const RunResult& r, const RunFileOptions& opts, bool no_data, std::ostream& out) {
    // Names, the file's and messages may hold any bytes: dump_json keeps them as \xHH.
    out << "{\"file\":" << json_quoted(r.file) << ",\"outputs\":[";
    for (size_t i = 0; i < r.outputs.size(); ++i) {
        const HostTensor& t = r.outputs[i];
        ojson head{{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape}, {"device", t.device}};
        std::string h = dump_json(head);
        h.pop_back();  // the closing brace: the data or summary follow
        out << (i ? "," : "") << h;
        if (no_data) {
            const ValueSummary s = summarize(t);
            out << ",\"summary\":{\"min\":" << s.min << ",\"max\":" << s.max << ",\"mean\":" << s.mean
                << ",\"nan_count\":" << s.nan_count << "}}";
        } else {
            out << ",\"data\":";
            write_values_json(out, t);
            out << '}';
        }
    }
    std::string rest = dump_json(rest_json(r, opts));
    out << "]," << std::string_view(rest).substr(1) << "\n";
}

}  // namespace graphrun::cli
