// Names with any bytes: the JSON form (valid UTF-8, bytes recoverable), the
// terminal form (no control characters, capped), JSON documents that never
// throw, and the warning cap of Diagnostics.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "engine/api/output_text.h"
#include "engine/base/diagnostics.h"
#include "engine/base/printable.h"

using namespace graphrun;

namespace {

// What a JSON consumer does to get the bytes back: every \xHH is the byte HH.
std::string unescape_hex(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 3 < s.size() && s[i + 1] == 'x') {
            out += static_cast<char>(std::stoi(s.substr(i + 2, 2), nullptr, 16));
            i += 3;
        } else {
            out += s[i];
        }
    }
    return out;
}

bool valid_utf8(const std::string& s) {
    for (size_t i = 0; i < s.size();) {
        const size_t n = utf8_char_length(s, i);
        if (n == 0) return false;
        i += n;
    }
    return true;
}

}  // namespace

TEST_CASE("printable: UTF-8 is checked strictly") {
    CHECK(utf8_char_length("a", 0) == 1);
    CHECK(utf8_char_length("\xC3\xA9", 0) == 2);          // é
    CHECK(utf8_char_length("\xE2\x82\xAC", 0) == 3);      // €
    CHECK(utf8_char_length("\xF0\x9F\x98\x80", 0) == 4);  // an emoji
    CHECK(utf8_char_length("\xFF", 0) == 0);
    CHECK(utf8_char_length("\x80", 0) == 0);              // a stray continuation byte
    CHECK(utf8_char_length("\xC0\xAF", 0) == 0);          // overlong '/'
    CHECK(utf8_char_length("\xE0\x80\xAF", 0) == 0);      // overlong, three bytes
    CHECK(utf8_char_length("\xED\xA0\x80", 0) == 0);      // a surrogate
    CHECK(utf8_char_length("\xF4\x90\x80\x80", 0) == 0);  // past U+10FFFF
    CHECK(utf8_char_length("\xE2\x82", 0) == 0);          // cut short
}

TEST_CASE("printable: the JSON form is valid UTF-8 and gives the bytes back") {
    CHECK(json_safe("relu_1"));
    CHECK(json_safe("caf\xC3\xA9"));
    CHECK(json_safe_text("caf\xC3\xA9") == "caf\xC3\xA9");
    CHECK(json_safe_text("y\xFF\xFE") == "y\\xff\\xfe");
    // A name that spells an escape itself keeps its meaning.
    CHECK_FALSE(json_safe("a\\xff"));
    CHECK(json_safe_text("a\\xff") == "a\\x5cxff");
    CHECK(json_safe("a\\b"));  // a backslash not before 'x' stays
    for (const std::string& s : {std::string("y\xFF\xFE"), std::string("a\\xff\xC3"), std::string("\\x\\x5c"),
                                std::string("\x80\xC3\xA9\xED\xA0\x80", 6), std::string("\0\x01", 2)}) {
        const std::string j = json_safe_text(s);
        INFO(j);
        CHECK(valid_utf8(j));
        CHECK(unescape_hex(j) == s);
    }
    CHECK(json_quoted("a\"b\\c\n\x1B\xFF") == "\"a\\\"b\\\\c\\n\\u001b\\\\xff\"");
    CHECK(nlohmann::json::parse(json_quoted("y\xFF\x1B")).get<std::string>() == "y\\xff\x1B");
}

TEST_CASE("printable: dump_json never throws, whatever bytes a document holds") {
    nlohmann::ordered_json doc;
    doc["file"] = "m.onnx";
    doc["nodes"] = nlohmann::ordered_json::array({{{"name", "y\xFF\xFE"}, {"inputs", {"x", "\xC3"}}}});
    doc["by_name"] = {{"k\xFE", 1}};
    CHECK_THROWS(doc.dump());  // what aborted `check --format=json` before
    std::string text;
    REQUIRE_NOTHROW(text = dump_json(doc));
    CHECK(valid_utf8(text));
    const auto back = nlohmann::json::parse(text);
    CHECK(back["nodes"][0]["name"] == "y\\xff\\xfe");
    CHECK(back["nodes"][0]["inputs"][1] == "\\xc3");
    CHECK(back["by_name"]["k\\xfe"] == 1);
    CHECK(back["file"] == "m.onnx");
    // A document that needs nothing is written as nlohmann writes it.
    nlohmann::ordered_json plain{{"a", 1}, {"b", "c"}};
    CHECK(dump_json(plain) == plain.dump());
}

TEST_CASE("printable: the terminal form has no control characters") {
    CHECK(terminal_text("relu_1") == "relu_1");
    CHECK(terminal_text("caf\xC3\xA9") == "caf\xC3\xA9");
    CHECK(terminal_text("a\x1B[2Jb") == "a\\x1b[2Jb");
    CHECK(terminal_text("a\nb\tc\r") == "a\\x0ab\\x09c\\x0d");
    CHECK(terminal_text("a\nb\tc", kMaxShownName, true) == "a\nb\tc");
    CHECK(terminal_text("y\xFF\xFE") == "y\\xff\\xfe");
    CHECK(terminal_text("\x7F") == "\\x7f");
    CHECK(terminal_text("\xC2\x9B" "2J") == "\\xc2\\x9b2J");           // C1 CSI
    CHECK(terminal_text("x\xE2\x80\xAEy") == "x\\xe2\\x80\\xaey");  // right-to-left override
    CHECK(terminal_text("a\\b") == "a\\b");
}

TEST_CASE("printable: a long name is cut in the middle with its length") {
    const std::string name = "head" + std::string(20'000'000, 'y') + "tail";
    const std::string shown = terminal_text(name);
    CHECK(shown.size() <= kMaxShownName);
    CHECK(shown.rfind("heady", 0) == 0);
    CHECK(shown.find("...(20000008 bytes)...") != std::string::npos);
    CHECK(shown.size() >= 4);
    CHECK(shown.substr(shown.size() - 4) == "tail");
    // Escapes count against the cap; a character is never cut in half.
    const std::string escapes(1000, '\x1B');
    const std::string e = terminal_text(escapes);
    CHECK(e.size() <= kMaxShownName);
    CHECK(e.find("...(1000 bytes)...") != std::string::npos);
    CHECK(e.rfind("\\x1b", 0) == 0);
    CHECK(e.substr(e.size() - 4) == "\\x1b");
    std::string euros;
    for (int i = 0; i < 500; ++i) euros += "\xE2\x82\xAC";
    const std::string u = terminal_text(euros);
    CHECK(u.size() <= kMaxShownName);
    CHECK(valid_utf8(u));
    CHECK(u.find("\\x") == std::string::npos);
}

TEST_CASE("diagnostics: messages are shown escaped and capped") {
    Diagnostics d("m\x1B.graph", "x = relu(y)\n");
    d.error(Loc{1, 5, {}}, "unknown name '\x1B[2J" + std::string(10'000, 'q') + "'");
    const std::string s = d.format(d.all().front());
    CHECK(s.find('\x1B') == std::string::npos);
    CHECK(s.rfind("m\\x1b.graph:1:5: error: unknown name '\\x1b[2J", 0) == 0);
    const std::string first_line = s.substr(0, s.find('\n'));
    CHECK(first_line.size() < kMaxShownLine + 64);
    CHECK(first_line.find("bytes)...") != std::string::npos);
}

TEST_CASE("diagnostics: warnings alike are capped, with the count left out") {
    Diagnostics d("m.onnx", {});
    for (int i = 0; i < 1000; ++i)
        d.warning({}, "input 'x" + std::to_string(i) + "': dimension 0 'N' is taken as 1");
    d.warning({}, "something else");
    for (int i = 0; i < 30; ++i) d.warning({}, "a third kind " + std::to_string(i));
    d.error({}, "the one error");
    const std::vector<std::string> lines = d.printed();
    size_t dims = 0, others = 0, thirds = 0, errors = 0;
    for (const std::string& l : lines) {
        dims += l.find("dimension 0 'N'") != std::string::npos && l.find("more warnings") == std::string::npos;
        others += l.find("something else") != std::string::npos;
        thirds += l.find("a third kind") != std::string::npos && l.find("more warnings") == std::string::npos;
        errors += l.find("error: the one error") != std::string::npos;
    }
    CHECK(dims == kMaxWarningsPerKind);
    CHECK(others == 1);
    CHECK(thirds == kMaxWarningsPerKind);
    CHECK(errors == 1);
    std::ostringstream printed;
    d.print(printed);
    CHECK(printed.str().find("m.onnx: warning: ... 980 more warnings like this: input 'x20': dimension 0 'N' is "
                             "taken as 1\n") != std::string::npos);
    CHECK(printed.str().find("m.onnx: warning: ... 10 more warnings like this: a third kind 20\n") !=
          std::string::npos);
    CHECK(lines.size() == 2 * kMaxWarningsPerKind + 1 + 1 + 2);
}

TEST_CASE("diagnostics: at most kMaxWarnings in all") {
    Diagnostics d("m.onnx", {});
    for (int k = 0; k < 200; ++k)
        for (int i = 0; i < 3; ++i) d.warning({}, "kind" + std::string(static_cast<size_t>(k % 26) + 1, 'a' + k / 26 % 26) + " warning");
    const std::vector<std::string> lines = d.printed();
    CHECK(lines.size() <= kMaxWarnings + kMaxWarningsPerKind + 1);
    CHECK(lines.back().find("more warnings of") != std::string::npos);
}

TEST_CASE("printable: clipped_text quotes a value by its start, never inside a character") {
    CHECK(clipped_text("", 10).empty());
    CHECK(clipped_text("0123456789", 10) == "0123456789");  // fits: as it is
    CHECK(clipped_text("0123456789A", 10) == "0123456...");  // 10 bytes in all
    CHECK(clipped_text(std::string(1 << 20, 'x'), 60).size() == 60);
    // "é" is two bytes (c3 a9): a cut after its first byte backs off to before it.
    const std::string accents = "abcdef\xc3\xa9gh";  // 10 bytes
    CHECK(clipped_text(accents, 9) == "abcdef...");
    CHECK(clipped_text(accents, 10) == accents);
    const std::string euro = "ab\xe2\x82\xac\xe2\x82\xac";  // "ab€€", 8 bytes
    CHECK(clipped_text(euro, 7) == "ab...");
    CHECK(clipped_text(euro, 6) == "ab...");
    CHECK(clipped_text("abcdef", 2) == "...");  // no room for a character: the marker alone
}
