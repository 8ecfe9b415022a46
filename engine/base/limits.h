// Every input limit graphrun enforces, in one place: what no file, however
// large or deep, may make it exceed. Past a limit, reading or checking stops
// with an error that names the limit; nothing allocates without bound.
#pragma once
#include <cstddef>
#include <cstdint>

namespace graphrun {

// Largest graph file read; a bigger one is refused before it is read whole.
constexpr uint64_t kMaxFileBytes = uint64_t{1} << 30;

// Largest array file (.npy, .npz: an --input, an --expected-output, a const's
// file) read. Reading stops at this many bytes, whatever the file's size says
// (a /proc file says 0), so no file makes graphrun read without bound; a
// smaller memory limit (--memory-limit, or its default) lowers it for the
// --input and --expected-output files.
constexpr uint64_t kMaxArrayFileBytes = uint64_t{4} << 30;
// The most bytes the members of one .npz may inflate to, all together: every
// member's array is held at once, and deflate expands up to 1032 times, so a
// small file could otherwise ask for terabytes. The memory limit lowers it.
constexpr uint64_t kMaxNpzInflatedBytes = uint64_t{8} << 30;
// Longest .npy header read (NumPy writes a few hundred bytes; its own reader
// refuses more than 10000 unless told otherwise).
constexpr uint64_t kMaxNpyHeaderBytes = uint64_t{1} << 20;

// Deepest nesting of brackets, parentheses, unary operators and blocks (text)
// or of arrays and objects (JSON) accepted; deeper input gets a "nesting too
// deep" error instead of exhausting the stack.
constexpr int kMaxNesting = 256;

// List elements (nested lists count too) in all the literals of one file: an
// element costs about 120 bytes while it is read.
constexpr size_t kMaxLiteralElements = size_t{1} << 22;
// Nodes and repeat loops per file (generated nodes included; an empty loop
// costs memory too). About 750 bytes each by the time a graph is planned.
constexpr size_t kMaxNodes = size_t{1} << 20;
// Values (numbers, strings, arrays, objects) in one JSON document.
constexpr size_t kMaxJsonValues = size_t{1} << 24;

// Largest tensor literal / created tensor accepted, in elements; bigger is an
// error, never a giant allocation.
constexpr int64_t kMaxElements = int64_t{1} << 40;
constexpr int kMaxRank = 32;

// A const literal bigger than this (in elements) made by filling a shape from
// one scalar is refused: the literal lives in host memory outside any
// allocator, so it must stay small; fill() makes the same tensor at run time.
constexpr int64_t kMaxFilledLiteralElements = int64_t{1} << 24;

// The limits a front end reads under, passed to it explicitly: the constants
// above by default. Tests lower them to reach a limit with a small input.
struct InputLimits {
    size_t literal_elements = kMaxLiteralElements;
    size_t nodes = kMaxNodes;
    size_t json_values = kMaxJsonValues;
    // The CPU's memory limit (--memory-limit, or its default) where the caller
    // knows it: a const's array file is read within it (0: the bounds above alone).
    uint64_t memory_limit = 0;
};

}  // namespace graphrun
