// An immutable string in one pointer: what a Loc keeps of a JSON pointer.
// A graph of a million nodes holds several million Locs, nearly all of them
// from text, where the pointer is empty: std::string would spend 32 bytes on
// each; this spends 8, and nothing on the heap when empty.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace graphrun {

class CompactString {
public:
    CompactString() = default;
    CompactString(std::string_view s) { assign(s); }  // NOLINT: converts like std::string
    CompactString(const std::string& s) : CompactString(std::string_view(s)) {}
    CompactString(const char* s) : CompactString(std::string_view(s)) {}
    CompactString(const CompactString& o) { assign(o.view()); }
    CompactString(CompactString&& o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
    CompactString& operator=(const CompactString& o) {
        if (this != &o) {
            CompactString copy(o);
            std::swap(p_, copy.p_);
        }
        return *this;
    }
    CompactString& operator=(CompactString&& o) noexcept {
        std::swap(p_, o.p_);
        return *this;
    }
    ~CompactString() { std::free(p_); }

    bool empty() const { return p_ == nullptr; }
    void clear() {
        std::free(p_);
        p_ = nullptr;
    }
    size_t size() const {
        if (!p_) return 0;
        uint32_t n;
        std::memcpy(&n, p_, sizeof n);
        return n;
    }
    std::string_view view() const { return p_ ? std::string_view(p_ + sizeof(uint32_t), size()) : std::string_view(); }
    operator std::string_view() const { return view(); }  // NOLINT
    std::string str() const { return std::string(view()); }

    friend bool operator==(const CompactString& a, std::string_view b) { return a.view() == b; }
    friend bool operator==(const CompactString& a, const std::string& b) { return a.view() == b; }
    friend bool operator==(const CompactString& a, const char* b) { return a.view() == b; }
    friend bool operator==(const CompactString& a, const CompactString& b) { return a.view() == b.view(); }
    friend std::string operator+(const CompactString& a, std::string_view b) {
        std::string s(a.view());
        s += b;
        return s;
    }
    friend std::ostream& operator<<(std::ostream& os, const CompactString& s) { return os << s.view(); }

private:
    // Length (4 bytes) then the characters; nullptr for the empty string.
    void assign(std::string_view s) {
        const size_t len = s.size();
        if (len == 0) return;
        if (len > UINT32_MAX) throw std::length_error("CompactString: too long");
        const auto n = static_cast<uint32_t>(len);
        p_ = static_cast<char*>(std::malloc(sizeof n + len));
        if (!p_) throw std::bad_alloc();
        std::memcpy(p_, &n, sizeof n);
        std::memcpy(p_ + sizeof n, s.data(), n);
    }

    char* p_ = nullptr;
};

}  // namespace graphrun
