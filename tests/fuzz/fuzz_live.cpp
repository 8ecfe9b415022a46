// libFuzzer target for the live session (engine/api/live.h, SPEC section 8):
// statements fed one at a time to one session that stays open, as
// `graphrun repl` feeds them. The first byte picks the cleanup strategy; the
// rest is split into statements where LiveSession::needs_more says a text is
// complete (as the REPL does). A line `!reset`, `!close`, `!cleanup` or
// `!del NAME` calls the session's own operation. After every statement the
// session must still work, and after the last, teardown must leave nothing.
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>

#include "engine/api/live.h"
#include "engine/base/interrupt.h"

using namespace graphrun;

namespace {

// Texts whose repeat counts multiply past this are skipped: the fuzzer looks
// for crashes and leaks, not for slow loops.
constexpr double kMaxPasses = 1e4;

double passes(std::string_view text) {
    double total = 1;
    for (size_t at = text.find("repeat"); at != std::string_view::npos; at = text.find("repeat", at + 6)) {
        size_t i = at + 6;
        while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
        double n = 0;
        while (i < text.size() && text[i] >= '0' && text[i] <= '9') n = n * 10 + (text[i++] - '0');
        total *= n > 1 ? n : 1;
    }
    return total;
}

// Each input gets this long; then a watchdog thread asks the running
// statement to stop (as Ctrl-C does) and the rest of the input is skipped,
// so that no input reaches libFuzzer's own timeout however costly its ops.
constexpr auto kInputTime = std::chrono::seconds(2);
std::atomic<int64_t> g_deadline_ns{0};  // 0: none

void start_watchdog() {
    static std::once_flag once;
    std::call_once(once, [] {
        std::thread([] {
            for (;;) {
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
                const int64_t d = g_deadline_ns.load();
                const int64_t now = std::chrono::steady_clock::now().time_since_epoch().count();
                if (d != 0 && now > d) g_interrupt_signal.store(15);
            }
        }).detach();
    });
}

bool all_released(const MemoryStats& s) {
    return s.in_use == 0 && s.pending == 0 && s.reserved == 0 && s.live == 0 && s.allocs == s.frees;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size < 1) return 0;
    const CleanupStrategy strategies[] = {CleanupStrategy::Background, CleanupStrategy::Safepoint,
                                          CleanupStrategy::Close, CleanupStrategy::Safepoint};
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
    if (passes(text) > kMaxPasses) return 0;
    LiveOptions opts;
    opts.cleanup = strategies[data[0] & 3];
    opts.placement.device = "cpu";
    opts.memory_limit = uint64_t{64} << 10;  // small: every one op stays quick to compute
    opts.threads = 1;
    start_watchdog();
    clear_interrupt();
    g_deadline_ns.store(
        (std::chrono::steady_clock::now() + kInputTime).time_since_epoch().count());
    LiveSession live(opts);
    std::string pending;
    uint32_t line = 1, first = 1;
    size_t start = 0;
    while (start <= text.size() && !interrupted()) {
        size_t end = text.find('\n', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view l = text.substr(start, end - start);
        start = end + 1;
        if (pending.empty()) first = line;
        ++line;
        if (pending.empty() && l == "!reset") {
            live.reset();
        } else if (pending.empty() && l == "!close") {
            TeardownReport t = live.close();
            for (const auto& [device, stats] : t.after)
                if (!all_released(stats)) __builtin_trap();
        } else if (pending.empty() && l == "!cleanup") {
            live.set_cleanup(strategies[(static_cast<int>(live.cleanup()) + 1) % 3]);
        } else if (pending.empty() && l.substr(0, 5) == "!del ") {
            (void)live.del(l.substr(5));
        } else {
            pending.append(l);
            pending += '\n';
            if (!LiveSession::needs_more(pending) || start > text.size()) {
                StatementResult r = live.execute(pending, "<fuzz>", first);
                (void)r;
                pending.clear();
            }
        }
        if (end == text.size()) break;
    }
    g_deadline_ns.store(0);
    clear_interrupt();
    for (const LiveVar& v : live.vars()) (void)live.value(v.name);
    TeardownReport t = live.close();
    for (const auto& [device, stats] : t.after)
        if (!all_released(stats)) __builtin_trap();
    return 0;
}
