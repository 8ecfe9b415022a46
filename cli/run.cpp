// `graphrun run`: one fresh graph and session per file; results, then the
// statistics before and after teardown.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/data_options.h"
#include "cli/values.h"
#include "engine/api/run.h"
#include "engine/api/units.h"
#include "engine/ir/device_name.h"

namespace graphrun::cli {

namespace {

using ojson = nlohmann::ordered_json;

// SIGINT/SIGTERM: the first one stops the run at the next node boundary (the
// session still tears down and the statistics are printed); a second SIGINT
// exits at once.
std::atomic<int> g_interrupt{0};

extern "C" void on_signal(int sig) {
    if (g_interrupt.load() != 0 && sig == SIGINT) _exit(130);
    g_interrupt.store(sig);
}

void install_signal_handlers() {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, nullptr);
    sigaction(SIGTERM, &sa, nullptr);
}

int signal_exit_code(int sig) { return 128 + sig; }

ojson stats_json(const MemoryStats& s) {
    return ojson{{"in_use", s.in_use},       {"peak", s.peak},     {"pending", s.pending},
                 {"pending_peak", s.pending_peak}, {"reserved", s.reserved}, {"allocs", s.allocs},
                 {"frees", s.frees},         {"live", s.live},     {"copied_in", s.copied_in}};
}

void print_json(const RunResult& r, const RunFileOptions& opts, std::ostream& out) {
    ojson doc;
    doc["file"] = r.file;
    auto outs = ojson::array();
    for (const HostTensor& t : r.outputs)
        outs.push_back(ojson{{"name", t.name}, {"dtype", dtype_name(t.dtype)}, {"shape", t.shape},
                             {"device", t.device}, {"data", values_json(t)}});
    doc["outputs"] = std::move(outs);
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
    doc["session"] = ojson{{"cleanup", cleanup_name(opts.cleanup)}, {"iterations", opts.iterations},
                           {"run_ms", r.run_ms}, {"teardown_ms", r.teardown_ms}};
    if (opts.profile) {
        auto prof = ojson::array();
        for (const OpProfile& p : r.profile)
            prof.push_back(ojson{{"op", p.op}, {"count", p.count}, {"ms", p.ms}, {"bytes", p.bytes}});
        doc["profile"] = std::move(prof);
    }
    if (!r.expected.empty()) doc["expected_outputs"] = expected_outputs_json(r, opts);
    if (r.error) doc["error"] = ojson{{"code", exit_code(*r.error)}, {"message", r.error->message}};
    out << doc.dump() << "\n";
}

std::string figure_text(const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) + " bytes (" + human_bytes(*v) + ")" : std::string("unknown");
}

// The driver-level line for each GPU; after teardown, what stays above the
// figure before the session is the CUDA context and library code, not tensors.
void print_gpu_system(const RunResult& r, bool reset_device, int moment, std::ostream& out) {
    for (const auto& [dev, f] : r.gpu_system) {
        const std::optional<uint64_t>& v = moment == 0 ? f.before_session : moment == 1 ? f.before_teardown : f.after_teardown;
        const char* label = moment == 0 ? "before the session" : moment == 1 ? "before teardown" : "after teardown";
        out << (moment == 0 ? "" : "  ") << "system (" << dev << "): driver-reported used memory " << label << ": ";
        if (!v) {
            out << "unknown (" << f.why << ")\n";
            continue;
        }
        out << figure_text(v);
        if (moment == 2 && f.before_session) {
            uint64_t residue = *v > *f.before_session ? *v - *f.before_session : 0;
            out << "; " << residue << " bytes (" << human_bytes(residue) << ") above the figure before the session "
                << (reset_device ? "remain after the CUDA context was ended (--reset-device)"
                                   : "are the CUDA context and library code, not graph tensors (--reset-device ends the context)");
        }
        out << "\n";
    }
}

// A byte count's binary units for the row under a table's exact figures:
// blank below 1 KiB, where the exact figure says it all.
std::string units_cell(uint64_t bytes) { return bytes < 1024 ? std::string() : human_bytes(bytes); }

void print_table(const std::string& title, const std::map<std::string, MemoryStats>& stats, uint64_t rss,
                 const std::string& rss_label, std::ostream& out) {
    out << title << ":\n";
    const char* heads[] = {"device", "in_use", "peak", "pending", "pending_peak", "reserved",
                           "allocs", "frees", "live", "copied_in"};
    std::vector<std::vector<std::string>> rows;
    rows.push_back(std::vector<std::string>(std::begin(heads), std::end(heads)));
    for (const auto& [dev, s] : stats) {
        rows.push_back({dev, std::to_string(s.in_use), std::to_string(s.peak), std::to_string(s.pending),
                        std::to_string(s.pending_peak), std::to_string(s.reserved), std::to_string(s.allocs),
                        std::to_string(s.frees), std::to_string(s.live), std::to_string(s.copied_in)});
        // The same byte figures in binary units on a row of their own, so
        // that the table stays as narrow as its exact figures.
        std::vector<std::string> units{"", units_cell(s.in_use), units_cell(s.peak), units_cell(s.pending),
                                       units_cell(s.pending_peak), units_cell(s.reserved), "", "", "",
                                       units_cell(s.copied_in)};
        if (std::any_of(units.begin(), units.end(), [](const std::string& u) { return !u.empty(); }))
            rows.push_back(std::move(units));
    }
    std::vector<size_t> w(rows[0].size(), 0);
    for (const auto& row : rows)
        for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
    for (const auto& row : rows) {
        std::ostringstream line;
        line << "  ";
        for (size_t i = 0; i < row.size(); ++i) {
            if (i == 0) line << std::left << std::setw(static_cast<int>(w[i])) << row[i];
            else line << "  " << std::right << std::setw(static_cast<int>(w[i])) << row[i];
        }
        std::string text = line.str();
        text.erase(text.find_last_not_of(' ') + 1);  // a units row ends in blanks
        out << text << "\n";
    }
    out << "  system (cpu): process resident memory " << rss_label << ": " << rss << " bytes ("
        << human_bytes(rss) << ")\n";
}

void print_text(const RunResult& r, const RunFileOptions& opts, bool several, std::ostream& out) {
    if (several) out << "== " << r.file << "\n";
    for (const HostTensor& t : r.outputs)
        out << t.name << ": " << type_string(t.dtype, t.shape) << " (" << t.device << ")\n"
            << format_values(t) << "\n\n";
    if (!r.ran) return;
    out << "system (cpu): process resident memory before the session: " << r.rss_session << " bytes ("
        << human_bytes(r.rss_session) << ")\n";
    print_gpu_system(r, opts.reset_device, 0, out);
    print_table("memory before teardown", r.before, r.rss_before, "before teardown", out);
    print_gpu_system(r, opts.reset_device, 1, out);
    print_table("memory after teardown", r.after, r.rss_after, "after teardown", out);
    print_gpu_system(r, opts.reset_device, 2, out);
    std::ostringstream line;
    line << std::fixed << std::setprecision(3) << "session: cleanup=" << cleanup_name(opts.cleanup)
         << " iterations=" << opts.iterations << " run " << r.run_ms << " ms, teardown " << r.teardown_ms << " ms";
    out << line.str() << "\n";
    if (opts.profile) {
        out << "profile (per op, slowest first):\n";
        out << "  " << std::left << std::setw(16) << "op" << std::right << std::setw(10) << "count" << std::setw(14)
            << "time ms" << std::setw(16) << "bytes" << "\n";
        for (const OpProfile& p : r.profile) {
            std::ostringstream ms;
            ms << std::fixed << std::setprecision(3) << p.ms;
            out << "  " << std::left << std::setw(16) << p.op << std::right << std::setw(10) << p.count
                << std::setw(14) << ms.str() << std::setw(16) << p.bytes << "\n";
        }
    }
}

}  // namespace

int run_command(const RunOptions& opts, std::ostream& out, std::ostream& err) {
    int code = kExitOk;
    install_signal_handlers();
    RunFileOptions engine = opts.engine;
    engine.interrupt = &g_interrupt;
    for (const std::string& file : opts.files) {
        if (int sig = g_interrupt.load()) {  // interrupted between files: the rest do not run
            err << "graphrun: interrupted by " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << "; " << file << " and the files after it did not run\n";
            return code == kExitOk ? signal_exit_code(sig) : code;
        }
        RunResult r = run_file(file, engine, err);
        if (opts.format == Format::Json) print_json(r, engine, out);
        else print_text(r, engine, opts.files.size() > 1, out);
        out.flush();
        if (!r.error) continue;
        if (code == kExitOk) code = exit_code(*r.error);
        if (r.error->kind == ErrorKind::Interrupted) break;
    }
    return code;
}

}  // namespace graphrun::cli
