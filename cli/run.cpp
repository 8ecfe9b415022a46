// `graphrun run`: one fresh graph and session per file; results, then the
// statistics before and after teardown.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/values.h"
#include "engine/runtime/device.h"
#include "engine/ir/device_name.h"
#include "engine/api/load.h"
#include "engine/plan/plan.h"
#include "engine/runtime/session.h"

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

uint64_t resident_bytes() {
    FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long size = 0, rss = 0;
    int n = std::fscanf(f, "%lu %lu", &size, &rss);
    std::fclose(f);
    return n == 2 ? static_cast<uint64_t>(rss) * static_cast<uint64_t>(sysconf(_SC_PAGESIZE)) : 0;
}

// A GPU's used memory as the driver reports it (NVML), at the three moments.
struct DriverFigures {
    std::optional<uint64_t> before_session, before_teardown, after_teardown;
    std::string why;  // when NVML cannot say
};

struct FileReport {
    std::string file;
    std::vector<HostTensor> outputs;
    std::map<std::string, MemoryStats> before, after;
    uint64_t rss_session = 0, rss_before = 0, rss_after = 0;
    std::map<std::string, DriverFigures> gpu_system;  // per GPU the session used
    bool reset_device = false;
    bool ran = false;  // a session was opened
    std::vector<OpProfile> profile;
    double run_ms = 0, teardown_ms = 0;
    int code = kExitOk;
    std::string error;
};

ojson stats_json(const MemoryStats& s) {
    return ojson{{"in_use", s.in_use},       {"peak", s.peak},     {"pending", s.pending},
                 {"pending_peak", s.pending_peak}, {"reserved", s.reserved}, {"allocs", s.allocs},
                 {"frees", s.frees},         {"live", s.live},     {"copied_in", s.copied_in}};
}

void print_json(const FileReport& r, const RunOptions& opts, std::ostream& out) {
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
    doc["system"] = ojson{{"cpu", ojson{{"kind", "rss"},
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
    if (r.code != kExitOk) doc["error"] = ojson{{"code", r.code}, {"message", r.error}};
    out << doc.dump() << "\n";
}

std::string figure_text(const std::optional<uint64_t>& v) {
    return v ? std::to_string(*v) + " bytes (" + human_bytes(*v) + ")" : std::string("unknown");
}

// The driver-level line for each GPU; after teardown, what stays above the
// figure before the session is the CUDA context and library code, not tensors.
void print_gpu_system(const FileReport& r, int moment, std::ostream& out) {
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
                << (r.reset_device ? "remain after the CUDA context was ended (--reset-device)"
                                   : "are the CUDA context and library code, not graph tensors (--reset-device ends the context)");
        }
        out << "\n";
    }
}

void print_table(const std::string& title, const std::map<std::string, MemoryStats>& stats, uint64_t rss,
                 const std::string& rss_label, std::ostream& out) {
    out << title << ":\n";
    const char* heads[] = {"device", "in_use", "peak", "pending", "pending_peak", "reserved",
                           "allocs", "frees", "live", "copied_in"};
    std::vector<std::vector<std::string>> rows;
    rows.push_back(std::vector<std::string>(std::begin(heads), std::end(heads)));
    for (const auto& [dev, s] : stats)
        rows.push_back({dev, std::to_string(s.in_use), std::to_string(s.peak), std::to_string(s.pending),
                        std::to_string(s.pending_peak), std::to_string(s.reserved), std::to_string(s.allocs),
                        std::to_string(s.frees), std::to_string(s.live), std::to_string(s.copied_in)});
    std::vector<size_t> w(rows[0].size(), 0);
    for (const auto& row : rows)
        for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
    for (const auto& row : rows) {
        out << "  ";
        for (size_t i = 0; i < row.size(); ++i) {
            if (i == 0) out << std::left << std::setw(static_cast<int>(w[i])) << row[i];
            else out << "  " << std::right << std::setw(static_cast<int>(w[i])) << row[i];
        }
        out << "\n";
    }
    out << "  system (cpu): process resident memory " << rss_label << ": " << rss << " bytes ("
        << human_bytes(rss) << ")\n";
}

void print_text(const FileReport& r, const RunOptions& opts, bool several, std::ostream& out) {
    if (several) out << "== " << r.file << "\n";
    for (const HostTensor& t : r.outputs)
        out << t.name << ": " << type_string(t.dtype, t.shape) << " (" << t.device << ")\n"
            << format_values(t) << "\n\n";
    if (!r.ran) return;
    out << "system (cpu): process resident memory before the session: " << r.rss_session << " bytes ("
        << human_bytes(r.rss_session) << ")\n";
    print_gpu_system(r, 0, out);
    print_table("memory before teardown", r.before, r.rss_before, "before teardown", out);
    print_gpu_system(r, 1, out);
    print_table("memory after teardown", r.after, r.rss_after, "after teardown", out);
    print_gpu_system(r, 2, out);
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

// Runs one file; every path ends with the session torn down.
FileReport run_file(const std::string& path, const RunOptions& opts, std::ostream& err) {
    FileReport r;
    auto lg = load_graph(path);
    r.file = lg->display;
    lg->diag.print(err);
    auto fail = [&](int code, std::string msg) {
        r.code = code;
        r.error = std::move(msg);
        return r;
    };
    if (!lg->ok()) {
        std::string first = lg->diag.all().empty() ? "" : lg->diag.format(lg->diag.all().front());
        if (first.find('\n') != std::string::npos) first.resize(first.find('\n'));
        return fail(lg->read_failed ? kExitRuntime : kExitInvalidGraph, first);
    }
    Graph& g = lg->graph;
    std::string fetch_error;
    if (!apply_fetch(g, opts.fetch, fetch_error)) {
        err << "graphrun: error: " << fetch_error << "\n";
        return fail(kExitUsage, fetch_error);
    }
    if (auto perr = place(g, opts.placement, device_availability(), err)) {
        Diagnostics d(lg->display, lg->source);
        d.error(perr->loc, perr->message);
        d.print(err);
        return fail(kExitRuntime, perr->message);
    }
    std::vector<NodeId> outputs;
    for (const Output& o : g.outputs) outputs.push_back(o.id);
    std::string plan_error;
    auto plan = compile_plan(g, outputs, &plan_error);
    if (!plan) {
        err << lg->display << ": error: " << plan_error << "\n";
        return fail(kExitInvalidGraph, plan_error);
    }
    uint64_t limit = opts.memory_limit ? opts.memory_limit : default_cpu_memory_limit();
    auto refuse_peak = [&](const std::string& dev, uint64_t bytes, uint64_t lim) {
        std::string msg = "the static plan needs " + std::to_string(bytes) + " bytes (" + human_bytes(bytes) + ") on " +
                          dev + " at its peak, more than the memory limit of " + std::to_string(lim) + " bytes (" +
                          human_bytes(lim) + "); refused before running";
        err << lg->display << ": error: " << msg << "\n";
        return msg;
    };
    for (const auto& [dev, bytes] : plan->static_peak) {
        bool gpu = dev != "cpu";
        if (bytes > limit && (!gpu || opts.memory_limit)) return fail(kExitRuntime, refuse_peak(dev, bytes, limit));
    }

    SessionOptions so;
    so.cleanup = opts.cleanup;
    so.threads = opts.threads;
    so.cpu_memory_limit = limit;
    so.profile = opts.profile;
    so.interrupt = &g_interrupt;
    so.gpu.memory_limit = opts.memory_limit;
    so.gpu.allow_tf32 = opts.allow_tf32;
    so.gpu.reset_device = opts.reset_device;
    r.reset_device = opts.reset_device;
    // The driver's figures for each GPU the plan uses, taken before the session opens.
    GpuRuntime* rt = nullptr;
    for (const auto& [dev, bytes] : plan->static_peak) {
        auto dn = parse_device_name(dev);
        if (!dn || dn->kind != DeviceName::Kind::Gpu) continue;
        if (!rt) rt = gpu_runtime(nullptr);
        DriverFigures& f = r.gpu_system[dev];
        if (rt) f.before_session = rt->driver_used_bytes(dn->index, &f.why);
    }
    so.gpu_runtime = rt;
    auto driver_figures = [&](int moment) {
        for (auto& [dev, f] : r.gpu_system) {
            if (!rt) continue;
            auto v = rt->driver_used_bytes(parse_device_name(dev)->index, &f.why);
            (moment == 1 ? f.before_teardown : f.after_teardown) = v;
        }
    };
    r.rss_session = resident_bytes();
    r.ran = true;
    Session session(g, *plan, so);
    std::optional<RunError> run_error;
    std::string refused;
    // A GPU's limit (its free memory by default) is known once its device is open.
    for (const auto& [dev, lim] : session.limits()) {
        auto it = plan->static_peak.find(dev);
        if (dev != "cpu" && it != plan->static_peak.end() && it->second > lim && refused.empty())
            refused = refuse_peak(dev, it->second, lim);
    }
    if (refused.empty()) run_error = session.run(opts.iterations, g.outputs, r.outputs);
    r.run_ms = session.run_ms();
    r.profile = session.profile();
    r.before = session.stats();
    r.rss_before = resident_bytes();
    driver_figures(1);
    session.close();
    r.teardown_ms = session.teardown_ms();
    r.after = session.stats();
    r.rss_after = resident_bytes();
    driver_figures(2);
    if (!refused.empty()) return fail(kExitRuntime, refused);
    if (run_error) {
        Diagnostics d(lg->display, lg->source);
        if (run_error->signal) {
            err << lg->display << ": " << run_error->message << "; the session was torn down\n";
            return fail(signal_exit_code(run_error->signal), run_error->message);
        }
        d.error(run_error->loc, run_error->message);
        d.print(err);
        return fail(kExitRuntime, run_error->message);
    }
    return r;
}

// Anything an allocator still reports after teardown.
std::string leak_report(const FileReport& r) {
    std::string out;
    for (const auto& [dev, s] : r.after) {
        if (s.in_use || s.pending || s.reserved || s.live || s.allocs != s.frees)
            out += dev + ": in_use " + std::to_string(s.in_use) + ", pending " + std::to_string(s.pending) +
                   ", reserved " + std::to_string(s.reserved) + ", live " + std::to_string(s.live) + ", allocs " +
                   std::to_string(s.allocs) + " vs frees " + std::to_string(s.frees) + "; ";
    }
    return out;
}

}  // namespace

bool apply_fetch(Graph& g, const std::vector<std::string>& fetch, std::string& error) {
    if (fetch.empty()) return true;
    std::vector<Output> outs;
    for (const std::string& name : fetch) {
        auto id = g.find_fetchable(name);
        if (!id) {
            error = "--fetch=" + name + ": no top-level name or node '" + name + "' in " + g.file;
            if (auto near = nearest_name(name, g.fetchable_names()); !near.empty())
                error += "; did you mean '" + near + "'?";
            return false;
        }
        outs.push_back(Output{name, *id, {}});
    }
    g.outputs = std::move(outs);
    return true;
}

int run_command(const RunOptions& opts, std::ostream& out, std::ostream& err) {
    int exit_code = kExitOk;
    install_signal_handlers();
    for (const std::string& file : opts.files) {
        if (int sig = g_interrupt.load()) {  // interrupted between files: the rest do not run
            err << "graphrun: interrupted by " << (sig == SIGINT ? "SIGINT" : "SIGTERM") << "; " << file << " and the files after it did not run\n";
            return exit_code == kExitOk ? signal_exit_code(sig) : exit_code;
        }
        FileReport r = run_file(file, opts, err);
        if (r.code == kExitOk && opts.check_leaks) {
            std::string leaks = leak_report(r);
            if (!leaks.empty()) {
                err << r.file << ": error: memory left after teardown: " << leaks << "\n";
                r.code = kExitLeak;
                r.error = "memory left after teardown: " + leaks;
            }
        }
        if (opts.format == Format::Json) print_json(r, opts, out);
        else print_text(r, opts, opts.files.size() > 1, out);
        out.flush();
        if (exit_code == kExitOk && r.code != kExitOk) exit_code = r.code;
        if (r.code == signal_exit_code(SIGINT) || r.code == signal_exit_code(SIGTERM)) break;
    }
    return exit_code;
}

}  // namespace graphrun::cli
