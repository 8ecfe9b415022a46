// libFuzzer target for the .npy and .npz readers (engine/frontend/npy.h): any
// bytes either parse or give an error, never a crash, a leak or an allocation
// beyond what the bytes justify; an array that parsed writes back (encode_npy)
// to bytes that parse to the same array; the header-only .npz reader
// (npz_member_shapes) agrees with the full one wherever that one succeeds.
//
// The .npz reader runs under bounds small enough for the fuzzer's memory
// limit (an archive may declare gigabytes; a deflate bomb may hold them), once
// with graphrun's bound on one file's arrays lowered and once with a memory
// limit, so that both messages are reached; a refusal must name its bound.
// Seeds: tests/fuzz/seeds/npy/ (.npy files; .npz archives stored, deflated,
// with several members, and ones whose members share or overlap their bytes).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "engine/frontend/npy.h"

using namespace graphrun;

namespace {

void check_round_trip(const NpyArray& a) {
    std::string error;
    auto again = parse_npy(encode_npy(a.dtype, a.shape, a.data.data()), error);
    if (!again || again->dtype != a.dtype || again->shape != a.shape || again->data != a.data) __builtin_trap();
}

// The arrays that parsed stay within the bound they were read under.
void check_within(const std::vector<NpzEntry>& entries, uint64_t cap) {
    uint64_t total = 0;
    for (const NpzEntry& e : entries) total += e.array.data.size();
    if (total > cap) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    ArrayLimits small;
    small.array_bytes = uint64_t{64} << 20;
    std::string error;
    if (auto a = parse_npy(bytes, error, small)) {
        check_round_trip(*a);
        if (a->data.size() > small.array_cap()) __builtin_trap();
    } else if (error.empty()) {
        __builtin_trap();  // a refusal always says why
    }
    ArrayLimits memory;
    memory.memory_limit = uint64_t{1} << 20;
    for (const ArrayLimits& limits : {small, memory}) {
        error.clear();
        auto entries = parse_npz(bytes, error, limits);
        if (entries) {
            check_within(*entries, limits.array_cap());
            for (const NpzEntry& e : *entries) check_round_trip(e.array);
        } else if (error.empty()) {
            __builtin_trap();
        }
        // The header-only reader (free dimensions from --input files): where
        // the whole archive parses, it gives the same names and shapes.
        std::string shapes_error;
        auto shapes = npz_member_shapes(bytes, shapes_error, limits);
        if (!shapes && shapes_error.empty()) __builtin_trap();
        if (entries) {
            if (!shapes || shapes->size() != entries->size()) __builtin_trap();
            for (size_t k = 0; k < entries->size(); ++k)
                if ((*shapes)[k].first != (*entries)[k].name || (*shapes)[k].second != (*entries)[k].array.shape)
                    __builtin_trap();
        }
    }
    return 0;
}
