// libFuzzer target for the .npy and .npz readers (engine/frontend/npy.h): any
// bytes either parse or give an error, never a crash, a leak or an allocation
// beyond what the bytes justify; an array that parsed writes back (encode_npy)
// to bytes that parse to the same array.
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    std::string_view bytes(reinterpret_cast<const char*>(data), size);
    std::string error;
    if (auto a = parse_npy(bytes, error)) {
        check_round_trip(*a);
    } else if (error.empty()) {
        __builtin_trap();  // a refusal always says why
    }
    error.clear();
    if (auto entries = parse_npz(bytes, error)) {
        for (const NpzEntry& e : *entries) check_round_trip(e.array);
    } else if (error.empty()) {
        __builtin_trap();
    }
    return 0;
}
