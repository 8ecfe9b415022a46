// The JSON front end (SPEC section 2): a JSON graph into the graph IR.
#pragma once
#include <string_view>

#include "engine/base/diagnostics.h"
#include "engine/base/limits.h"
#include "engine/ir/graph.h"

namespace graphrun {

// Parses `source` into `g` (which must be empty) through a GraphBuilder.
// Errors carry the JSON pointer of the bad value, or line and column where the
// JSON itself is malformed. Reads under `limits`. Returns !diag.has_errors().
// When `diag` was made with `source` (as the loader makes it), the places of
// values are their offsets in it (Loc::in_json), whose pointers `diag` (or a
// JsonPointerFinder on `source`) finds; otherwise they are the pointers.
// A source of a megabyte or more, in the layout `graphrun convert` writes, is
// read on a second core while the graph is built from it (json_document.h:
// StreamedDocument); the graph and the diagnostics are those of reading it whole.
bool parse_json(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits = {});
// As parse_json, always reading the whole document first (what the streamed
// reading is tested against).
bool parse_json_whole(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits = {});
// As parse_json, streaming a source of any size (on one core too) where
// parse_json would stream a big one: for the tests and the fuzz target, which
// hold it to parse_json_whole's results.
bool parse_json_streamed(std::string_view source, Graph& g, Diagnostics& diag, const InputLimits& limits = {});

}  // namespace graphrun
