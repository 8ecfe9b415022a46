// Diagnostics with their place, printed the way compilers print them.
#include "engine/base/diagnostics.h"

#include <algorithm>
#include <map>
#include <sstream>

#include "engine/base/json_pointer.h"
#include "engine/base/printable.h"

namespace graphrun {

void Diagnostics::error(const Loc& loc, std::string message) {
    diags_.push_back(Diagnostic{Severity::Error, loc, std::move(message)});
    ++errors_;
}
void Diagnostics::over_limit_error(const Loc& loc, std::string message) {
    error(loc, std::move(message));
    over_limit_ = true;
}
void Diagnostics::usage_error(const Loc& loc, std::string message) {
    error(loc, std::move(message));
    usage_ = true;
}
void Diagnostics::warning(const Loc& loc, std::string message) {
    diags_.push_back(Diagnostic{Severity::Warning, loc, std::move(message)});
}
void Diagnostics::note(const Loc& loc, std::string message) {
    diags_.push_back(Diagnostic{Severity::Note, loc, std::move(message)});
}

namespace {

// The 1-based line `line` of `src`, without its newline.
std::string_view source_line(std::string_view src, uint32_t line) {
    size_t start = 0;
    for (uint32_t l = 1; l < line; ++l) {
        size_t nl = src.find('\n', start);
        if (nl == std::string_view::npos) return {};
        start = nl + 1;
    }
    size_t end = src.find('\n', start);
    if (end == std::string_view::npos) end = src.size();
    std::string_view s = src.substr(start, end - start);
    if (!s.empty() && s.back() == '\r') s.remove_suffix(1);
    return s;
}

}  // namespace

std::string Diagnostics::format(const Diagnostic& d) const {
    std::ostringstream os;
    const char* sev = d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warning" : "note";
    os << terminal_text(file_);
    if (d.loc.line != 0) {
        os << ':' << d.loc.line << ':' << d.loc.col;
    } else if (const std::string pointer = this->pointer(d.loc); !pointer.empty()) {
        os << ": " << terminal_text(pointer);
    }
    // A message quotes names, which may hold any bytes and any length.
    os << ": " << sev << ": " << terminal_text(d.message, kMaxShownLine, true) << '\n';
    if (d.loc.line == 0 || source_.empty()) return os.str();
    if (d.loc.line < first_line_) return os.str();
    std::string_view text = source_line(source_, d.loc.line - first_line_ + 1);
    constexpr size_t kMaxShown = 200;
    // Show a window of the line around the column, with unprintable bytes as '?'.
    size_t col = d.loc.col > 0 ? d.loc.col - 1 : 0;
    size_t from = col > kMaxShown / 2 && text.size() > kMaxShown ? col - kMaxShown / 2 : 0;
    std::string shown, caret;
    for (size_t i = from; i < text.size() && i < from + kMaxShown; ++i) {
        auto c = static_cast<unsigned char>(text[i]);
        bool cont = (c & 0xC0) == 0x80;
        if (c == '\t') shown += '\t';
        else if (c < 0x20 || c == 0x7F) shown += '?';
        else shown += static_cast<char>(c);
        if (i < col && !cont) caret += (c == '\t' ? '\t' : ' ');
    }
    os << "    " << (from > 0 ? "..." : "") << shown << '\n';
    os << "    " << (from > 0 ? "   " : "") << caret << "^\n";
    return os.str();
}

std::string Diagnostics::pointer(const Loc& loc) const {
    if (!loc.pointer.empty()) return loc.pointer.str();
    if (!loc.in_json() || source_.empty()) return {};
    if (!pointers_) pointers_ = std::make_shared<JsonPointerFinder>(source_);
    return std::string(pointers_->pointer(loc));
}

namespace {

// What makes two warnings alike: the message without its quoted parts and
// numbers ("input 'x7': dimension 0 'N' is taken as 1" is one kind for every
// input and dimension).
std::string warning_kind(std::string_view message) {
    std::string kind;
    bool quoted = false;
    for (const char c : message) {
        if (c == '\'') {
            quoted = !quoted;
            kind += c;
        } else if (!quoted && (c < '0' || c > '9')) {
            kind += c;
        }
    }
    return kind;
}

}  // namespace

std::vector<std::string> Diagnostics::printed() const {
    std::vector<std::string> out;
    struct Kind {
        size_t shown = 0, left_out = 0;
        const Diagnostic* first_left_out = nullptr;
    };
    std::map<std::string, Kind> kinds;
    std::vector<std::string> order;  // kinds in the order of their first left-out warning
    size_t warnings_shown = 0;
    bool shown = true;  // whether the diagnostic a note follows was shown
    for (const Diagnostic& d : diags_) {
        if (d.severity == Severity::Error) {
            shown = true;
        } else if (d.severity == Severity::Warning) {
            const std::string key = warning_kind(d.message);
            Kind& k = kinds[key];
            shown = k.shown < kMaxWarningsPerKind && warnings_shown < kMaxWarnings;
            if (shown) {
                ++k.shown;
                ++warnings_shown;
            } else if (k.left_out++ == 0) {
                k.first_left_out = &d;
                order.push_back(key);
            }
        }
        if (shown) out.push_back(format(d));
    }
    // At most kMaxWarningsPerKind such lines; then the rest in one.
    size_t other_kinds = 0, other_warnings = 0;
    for (size_t i = kMaxWarningsPerKind; i < order.size(); ++i) ++other_kinds, other_warnings += kinds[order[i]].left_out;
    if (order.size() > kMaxWarningsPerKind) order.resize(kMaxWarningsPerKind);
    for (const std::string& key : order) {
        const Kind& k = kinds[key];
        const Diagnostic& d = *k.first_left_out;
        out.push_back(terminal_text(file_) + ": warning: ... " + std::to_string(k.left_out) + " more warning" +
                      (k.left_out == 1 ? "" : "s") + " like this: " + terminal_text(d.message, kMaxShownLine) +
                      "\n");
    }
    if (other_warnings > 0)
        out.push_back(terminal_text(file_) + ": warning: ... " + std::to_string(other_warnings) +
                      " more warnings of " + std::to_string(other_kinds) + " other kinds\n");
    return out;
}

void Diagnostics::print(std::ostream& os) const {
    for (const std::string& line : printed()) os << line;
}

size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<size_t> prev(b.size() + 1), cur(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j) prev[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            size_t sub = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
        }
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

std::string nearest_name(std::string_view word, const std::vector<std::string>& candidates) {
    if (word.size() > 64) return {};
    std::string best;
    size_t best_d = SIZE_MAX;
    for (const std::string& c : candidates) {
        if (c == word || c.size() > 64) continue;
        size_t d = edit_distance(word, c);
        if (d < best_d || (d == best_d && c < best)) {
            best_d = d;
            best = c;
        }
    }
    // A likely typo: at most a third of the word changed (and at least one edit allowed).
    size_t limit = std::max<size_t>(1, std::max(word.size(), best.size()) / 3);
    return best_d <= limit ? best : std::string{};
}

}  // namespace graphrun
