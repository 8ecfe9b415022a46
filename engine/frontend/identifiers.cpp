#include "engine/frontend/identifiers.h"

#include <string>

namespace graphrun {

bool is_identifier(std::string_view w) {
    if (w.empty()) return false;
    for (const char* k : {"with", "repeat", "output", "true", "false", "nan", "inf"})
        if (w == k) return false;
    for (size_t i = 0; i < w.size(); ++i) {
        const char c = w[i];
        const bool letter = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
        if (!letter && !(i > 0 && c >= '0' && c <= '9')) return false;
    }
    return true;
}

std::string_view written_output_name(const Graph& g, const Output& o) {
    if (o.id < 0 || static_cast<size_t>(o.id) >= g.nodes.size()) return o.name;
    const std::string& node = g.node(o.id).name;
    auto b = g.bindings.find(o.name);
    if (is_identifier(o.name) && b != g.bindings.end() && b->second == o.id) return o.name;
    const std::string_view req = o.name;
    if (req.size() > node.size() + 1 && req.compare(0, node.size(), node) == 0 && req[node.size()] == '#' &&
        req.find_first_not_of("0123456789", node.size() + 1) == std::string_view::npos)
        return o.name;
    return node;
}

}  // namespace graphrun
