// Names and messages made safe for where graphrun writes them: a name may hold
// any bytes (an ONNX model's protobuf strings, an .npz member's key, a JSON
// \u escape), but JSON must be valid UTF-8 and a terminal must never receive
// a control sequence or a 20 MB line. One escape form serves both: a byte
// that cannot be shown is written as the four characters \xHH.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace graphrun {

// The most bytes a name takes on a terminal line, and the most a message
// line (which quotes names) takes; past them the middle is left out.
constexpr size_t kMaxShownName = 256;
constexpr size_t kMaxShownLine = 2048;

// The length of the well-formed UTF-8 character at s[i] (1 to 4), or 0 when
// the byte there does not start one (a stray continuation byte, an overlong
// form, a surrogate, past U+10FFFF, or a sequence cut short).
size_t utf8_char_length(std::string_view s, size_t i);

// --- JSON: valid UTF-8 that keeps every byte ---
// Each byte that is not part of well-formed UTF-8 becomes the text \xHH (two
// lowercase hex digits), and a backslash that is followed by `x` becomes
// \x5c, so that replacing every \xHH by the byte HH gives the original bytes
// back. Text that is valid UTF-8 without "\x" is unchanged.
bool json_safe(std::string_view s);
std::string json_safe_text(std::string_view s);
void append_json_safe(std::string& out, std::string_view s);
// `s` as a JSON string literal, quotes included: JSON's own escapes for '"',
// '\' and control characters, after json_safe_text.
std::string json_quoted(std::string_view s);

// --- Terminal: no control characters, bounded length ---
// Control characters (C0, DEL, C1 and the Unicode bidirectional overrides and
// line separators, which reorder or break what a terminal shows) and bytes
// that are not well-formed UTF-8 become \xHH, one per byte; a backslash stays
// as it is. When the result would exceed `max_bytes` it is cut in the middle:
// "start...(N bytes)...end", N the length of `s` in bytes.
// `keep_line_breaks` keeps '\n' and '\t' (a message of several lines).
bool terminal_safe(std::string_view s);  // printable ASCII only: shown as is
// Appends the one character at s[i] (a byte, when it is not well-formed
// UTF-8) as terminal_text shows it; returns the bytes of `s` it took.
size_t append_terminal_char(std::string& out, std::string_view s, size_t i, bool keep_line_breaks);
std::string terminal_text(std::string_view s, size_t max_bytes = kMaxShownName, bool keep_line_breaks = false);
void append_terminal_text(std::string& out, std::string_view s, size_t max_bytes = kMaxShownName,
                          bool keep_line_breaks = false);

// --- A value quoted in a message ---
// `s` when it has at most `max_bytes` bytes; else its first bytes and "..."
// in `max_bytes` bytes in all (3 at least: the marker), never cut inside a
// UTF-8 character: a message is about the value, not a copy of it (a 20 MB
// literal is quoted by its start).
std::string clipped_text(std::string_view s, size_t max_bytes);

}  // namespace graphrun
