// The REPL's `:commands`: what the session holds (:vars, :stats, :timeline),
// what it releases (:del, :reset, :close, :cleanup), files in and out (:load,
// :save), :help and :quit.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "cli/app.h"
#include "cli/commands.h"
#include "cli/repl_impl.h"
#include "cli/table.h"
#include "engine/api/output_text.h"
#include "engine/api/units.h"

namespace graphrun::cli {

namespace {

std::optional<CleanupStrategy> parse_cleanup(std::string_view s) {
    if (s == "background") return CleanupStrategy::Background;
    if (s == "safepoint") return CleanupStrategy::Safepoint;
    if (s == "close") return CleanupStrategy::Close;
    return std::nullopt;
}

std::string bytes_text(uint64_t b) {
    return std::to_string(b) + " bytes" + (b >= 1024 ? " (" + human_bytes(b) + ")" : "");
}

std::string plural(uint64_t n, const char* one, const char* many) {
    return std::to_string(n) + " " + (n == 1 ? one : many);
}

// What became of values just unreferenced: released already (nothing is
// pending on any device), or what the strategy does with them.
std::string release_note(const LiveSession& session) {
    uint64_t pending = 0;
    for (const auto& [dev, s] : session.stats()) pending += s.pending;
    if (pending == 0) return "released";
    switch (session.cleanup()) {
        case CleanupStrategy::Background:
            return "the reclaimer thread releases them";
        case CleanupStrategy::Safepoint:
            return "released at the next statement";
        case CleanupStrategy::Close:
            return "held until :close under cleanup=close";
    }
    return "";
}

std::string joined(const std::vector<std::string>& names) {
    std::string s;
    for (const std::string& n : names) s += (s.empty() ? "" : ", ") + terminal_text(n);
    return s;
}

}  // namespace

std::vector<std::string> command_words(std::string_view line, std::string& error) {
    std::vector<std::string> words;
    size_t i = 0;
    while (i < line.size()) {
        if (line[i] == ' ' || line[i] == '\t') {
            ++i;
            continue;
        }
        std::string w;
        while (i < line.size() && line[i] != ' ' && line[i] != '\t') {
            if (line[i] != '"') {
                w += line[i++];
                continue;
            }
            for (++i;; ++i) {  // "quoted text", with \" and \\ inside
                if (i >= line.size()) {
                    error = "a quote is not closed";
                    return words;
                }
                if (line[i] == '"') break;
                if (line[i] == '\\' && i + 1 < line.size() &&
                    (line[i + 1] == '"' || line[i + 1] == '\\'))
                    ++i;
                w += line[i];
            }
            ++i;
        }
        words.push_back(std::move(w));
    }
    return words;
}


const std::vector<Repl::Command>& Repl::commands() {
    static const std::vector<Command> table = {
        {"vars", "", "the bound names: dtype, shape, device, bytes", &Repl::cmd_vars},
        {"stats", "", "the memory statistics now, per device", &Repl::cmd_stats},
        {"timeline", "",
         "in_use, peak and pending after each statement (sampled to about 200 rows)",
         &Repl::cmd_timeline},
        {"del", "NAME...", "unbind names (as the statement `del NAME`)", &Repl::cmd_del},
        {"reset", "", "unbind every name and say what became unreferenced (Keras' clear_session)",
         &Repl::cmd_reset},
        {"close", "", "tear the session down, print the statistics, open a fresh one",
         &Repl::cmd_close},
        {"cleanup", "[STRATEGY]",
         "switch to background, safepoint or close; alone: the current one", &Repl::cmd_cleanup},
        {"load", "FILE [--input=NAME=@F.npy ...] [--fill=random|zeros|ones] [--seed=N] [--dim=NAME=N ...] [--input-shape=NAME=AxB ...]",
         "run a .graph, .json or .onnx file in the session; its outputs become names",
         &Repl::cmd_load},
        {"save", "NAME... FILE.npz", "write the named values into one .npz file", &Repl::cmd_save},
        {"help", "", "this list", &Repl::cmd_help},
        {"quit", "",
         "close the session, print the statistics after teardown and leave (also Ctrl-D)",
         &Repl::cmd_quit},
    };
    return table;
}

void Repl::usage_error(const std::string& message) {
    out_.flush();
    err_ << "graphrun: error: " << message << "\n";
    fail(kExitUsage);
}

void Repl::command(std::string_view line) {
    std::string error;
    std::vector<std::string> words = command_words(line.substr(1), error);
    if (!error.empty()) return usage_error(std::string(line) + ": " + error);
    if (words.empty()) return usage_error("a command name must follow ':' (:help lists them)");
    std::string name = words.front();
    words.erase(words.begin());
    if (name == "q" || name == "exit") name = "quit";
    for (const Command& c : commands())
        if (name == c.name) return (this->*c.run)(words);
    std::vector<std::string> names;
    for (const Command& c : commands()) names.push_back(c.name);
    std::string msg = "unknown command ':" + terminal_text(name) + "'";
    if (std::string near = suggest(name, names); !near.empty())
        msg += "; did you mean ':" + near + "'?";
    else
        msg += " (:help lists the commands)";
    usage_error(msg);
}

void Repl::cmd_help(const std::vector<std::string>&) {
    out_ << "Statements run as they are typed; a bare name or expression prints its value. "
            "Commands:\n";
    for (const Command& c : commands()) {
        out_ << "  :" << c.name << (c.args[0] ? " " : "") << c.args << "\n      " << c.help << "\n";
    }
    out_ << "Ctrl-C stops the running statement (or discards the typed line); Ctrl-D ends the "
            "session.\n";
}

void Repl::cmd_stats(const std::vector<std::string>& args) {
    if (!args.empty()) return usage_error(":stats takes no arguments");
    print_memory_table("memory now", session_.stats(), out_);
    const std::vector<LiveVar> vars = session_.vars();
    out_ << "session: cleanup=" << cleanup_name(session_.cleanup()) << ", "
         << plural(vars.size(), "name", "names") << " bound, "
         << plural(statements_, "statement", "statements") << " run\n";
}

void Repl::cmd_vars(const std::vector<std::string>& args) {
    if (!args.empty()) return usage_error(":vars takes no arguments");
    const std::vector<LiveVar> vars = session_.vars();
    if (vars.empty()) {
        out_ << "no names are bound\n";
        return;
    }
    TextTable table({"name", "dtype", "shape", "device", "bytes"}, 4);
    uint64_t total = 0;
    std::set<uint64_t> counted;  // aliases share a buffer: it is held, and counted, once
    size_t shared = 0;
    for (const LiveVar& v : vars) {
        const bool alias = v.buffer != 0 && !counted.insert(v.buffer).second;
        table.add({v.name, dtype_name(v.dtype), shape_string(v.shape), v.device,
                   std::to_string(v.bytes) + (alias ? " (shared)" : "")},
                  {{4, v.bytes}});
        if (alias) ++shared;
        else total += v.bytes;
    }
    table.print(out_);
    out_ << plural(vars.size(), "name", "names") << ", " << bytes_text(total);
    if (shared) out_ << " (" << plural(shared, "name shares", "names share") << " another's buffer)";
    out_ << "\n";
}

void Repl::cmd_del(const std::vector<std::string>& args) {
    if (args.empty()) return usage_error(":del needs the names to unbind (:del NAME...)");
    for (const std::string& name : args) {
        std::optional<ReleaseReport> r = session_.del(name);
        if (!r) {
            std::string msg = "no name '" + terminal_text(name) + "' is bound";
            if (std::string near = suggest(name, session_.names()); !near.empty())
                msg += "; did you mean '" + terminal_text(near) + "'?";
            usage_error(msg);
            continue;
        }
        out_ << "deleted " << terminal_text(name) << ": " << plural(r->buffers, "buffer", "buffers")
             << ", " << bytes_text(r->bytes) << " unreferenced (" << release_note(session_)
             << ")\n";
    }
    if (opts_.echo_stats) echo_stats();
}

void Repl::cmd_reset(const std::vector<std::string>& args) {
    if (!args.empty()) return usage_error(":reset takes no arguments");
    const ReleaseReport r = session_.reset();
    out_ << "reset: " << plural(r.names, "name", "names") << " unbound; "
         << plural(r.buffers, "buffer", "buffers") << ", " << bytes_text(r.bytes)
         << " unreferenced (" << release_note(session_) << ")\n";
    if (opts_.echo_stats) echo_stats();
}

void Repl::cmd_close(const std::vector<std::string>& args) {
    if (!args.empty()) return usage_error(":close takes no arguments");
    print_teardown(session_.close());
    out_ << "a fresh session is open (cleanup=" << cleanup_name(session_.cleanup()) << ")\n";
}

void Repl::cmd_cleanup(const std::vector<std::string>& args) {
    if (args.size() > 1)
        return usage_error(":cleanup takes one strategy: background, safepoint or close");
    const CleanupStrategy was = session_.cleanup();
    if (args.empty()) {
        out_ << "cleanup: " << cleanup_name(was) << "\n";
        return;
    }
    std::optional<CleanupStrategy> s = parse_cleanup(args[0]);
    if (!s) {
        std::string msg = "unknown cleanup strategy '" + terminal_text(args[0]) + "'";
        if (std::string near = suggest(args[0], {"background", "safepoint", "close"});
            !near.empty())
            msg += "; did you mean '" + near + "'?";
        return usage_error(msg + " (background, safepoint or close)");
    }
    session_.set_cleanup(*s);
    out_ << "cleanup: " << cleanup_name(*s) << " (was " << cleanup_name(was) << ")\n";
    if (opts_.echo_stats) echo_stats();
}

void Repl::cmd_load(const std::vector<std::string>& args) {
    std::string file;
    FeedOptions feeds;
    feeds.memory_limit = opts_.live.memory_limit;
    ShapeBindings shapes;  // an ONNX model's free dimensions (--dim, --input-shape)
    static const std::vector<std::string> options = {"--input", "--fill", "--seed", "--dim", "--input-shape"};
    for (size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a.size() < 2 || a.compare(0, 2, "--") != 0) {
            if (!file.empty())
                return usage_error(":load runs one file (got '" + file + "' and '" + a + "')");
            file = a;
            continue;
        }
        const size_t eq = a.find('=');
        const std::string opt = a.substr(0, eq);
        std::string value;
        if (eq != std::string::npos)
            value = a.substr(eq + 1);
        else if (i + 1 < args.size())
            value = args[++i];
        if (std::find(options.begin(), options.end(), opt) == options.end()) {
            std::string msg = ":load: unknown option '" + terminal_text(opt) + "'";
            if (std::string near = suggest(opt, options); !near.empty())
                msg += "; did you mean " + near + "?";
            return usage_error(msg + " (--input, --fill, --seed, --dim, --input-shape)");
        }
        if (eq == std::string::npos && value.empty())
            return usage_error(":load: " + opt + " needs a value");
        if (opt == "--input") {
            std::string error;
            std::optional<ArraySource> src = parse_array_option("--input", value, true, error);
            if (!src) return usage_error(error);
            feeds.inputs.push_back(std::move(*src));
        } else if (opt == "--fill") {
            if (value == "random")
                feeds.fill = FillMode::Random;
            else if (value == "zeros")
                feeds.fill = FillMode::Zeros;
            else if (value == "ones")
                feeds.fill = FillMode::Ones;
            else
                return usage_error(":load: --fill is random, zeros or ones (got '" +
                                   terminal_text(value) + "')");
        } else if (opt == "--dim" || opt == "--input-shape") {
            if (std::string p = add_binding(shapes, opt, value); !p.empty())
                return usage_error(":load: " + opt + ": " + p);
        } else {
            if (std::string p = integer_problem(value, 0, INT64_MAX, "2^63-1"); !p.empty())
                return usage_error(":load: --seed: " + p);
            feeds.seed = std::stoull(value);
        }
    }
    if (file.empty())
        return usage_error(":load needs a file (:load FILE [--input=NAME=@F.npy] [--fill=...])");
    const StatementResult r = session_.load(file, feeds, shapes);
    if (!r.error) {
        out_ << "loaded " << terminal_text(file) << ": ";
        if (r.bound.empty())
            out_ << "no names bound\n";
        else
            out_ << "bound " << joined(r.bound) << "\n";
    }
    report(r);
}

void Repl::cmd_save(const std::vector<std::string>& args) {
    if (args.size() < 2)
        return usage_error(":save needs the names and then the file (:save NAME... FILE.npz)");
    const std::vector<std::string> names(args.begin(), args.end() - 1);
    const std::string& file = args.back();
    if (std::optional<Error> e = session_.save(names, file)) {
        print_error(*e);
        fail(exit_code(*e));
        return;
    }
    out_ << "saved " << joined(names) << " to " << terminal_text(file) << "\n";
}

void Repl::cmd_timeline(const std::vector<std::string>& args) {
    if (!args.empty()) return usage_error(":timeline takes no arguments");
    const std::vector<LiveTimelineRow> rows = session_.timeline();
    if (rows.empty()) {
        out_ << "no statements have run in this session\n";
        return;
    }
    out_ << "timeline (memory after each statement):\n";
    TextTable table({"#", "statement", "device", "in_use", "peak", "pending"}, 3);
    for (const LiveTimelineRow& r : rows)
        for (const auto& [dev, s] : r.memory)
            table.add({std::to_string(r.statement), r.text, dev, std::to_string(s.in_use),
                       std::to_string(s.peak), std::to_string(s.pending)},
                      {{3, s.in_use}, {4, s.peak}, {5, s.pending}});
    table.print(out_);
}

void Repl::cmd_quit(const std::vector<std::string>& args) {
    if (!args.empty()) return usage_error(":quit takes no arguments");
    quit_ = true;
}

}  // namespace graphrun::cli
