// Converting between the front ends' forms; large host constants go to a
// side .npz that the written script references (engine/frontend/const_files.h).
#include "engine/api/convert.h"

#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "engine/frontend/const_files.h"
#include "engine/frontend/json_writer.h"
#include "engine/frontend/npy.h"
#include "engine/frontend/text_writer.h"

namespace graphrun {

namespace {

// model.graph -> model.npz, in the output's directory.
std::string side_file_of(const std::string& output) {
    const std::string dir = directory_of(output);
    std::string base = dir.empty() ? output : output.substr(dir.size() + (dir == "/" ? 0 : 1));
    const size_t dot = base.rfind('.');
    if (dot != std::string::npos && dot > 0) base.resize(dot);
    return base + ".npz";
}

// A key that every zip reader takes as a plain member name.
bool plain_key(const std::string& k) {
    if (k.empty() || k.size() > 200) return false;
    for (char c : k)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-' && c != ':')
            return false;
    return true;
}

// The script (r.script) to o.output and the side file's members to
// r.side_file: both checked first, each written whole or not at all, and the
// script renamed into place only once the side file is.
ConvertResult& write_files(const ConvertOptions& o, const std::vector<NpzMember>& members, ConvertResult& r) {
    std::vector<OutputPath> outputs{{o.output, "-o " + o.output}};
    if (!r.side_file.empty()) outputs.push_back({r.side_file, "the side file " + r.side_file + " of -o " + o.output});
    std::ostringstream said;  // the caller prints r.error
    if (std::optional<Error> e = check_output_paths(outputs, o.reads ? *o.reads : ReadFiles(), said)) {
        r.usage = e->kind == ErrorKind::Usage;
        r.error = e->message;
        return r;
    }
    AtomicFile script;
    if (!script.open(o.output, r.error)) return r;
    script.write(r.script);
    if (!script.sync(r.error)) return r;
    if (!r.side_file.empty()) {
        struct stat st {};
        r.replaced_side_file = ::lstat(r.side_file.c_str(), &st) == 0;
        if (!write_npz_file(r.side_file, members, r.error)) return r;
    }
    if (!script.commit(r.error)) return r;
    r.script.clear();
    r.ok = true;
    return r;
}

std::string write_form(const Graph& g, GraphForm form, const ExternalConsts* ext) {
    return form == GraphForm::Json ? write_json(g, ext) : write_text(g, ext);
}

}  // namespace

std::string write_graph(const Graph& g, GraphForm form) {
    return write_form(g, form, nullptr);
}

ConvertResult convert_graph(const Graph& g, const ConvertOptions& o) {
    ConvertResult r;
    const bool to_stdout = o.output.empty() || o.output == "-";
    // The host constants over the limit, in program order.
    std::vector<NodeId> large;
    const Node* biggest = nullptr;
    for (size_t i = 0; i < g.nodes.size(); ++i) {
        const Node& n = g.nodes[i];
        if (!n.host_literal || n.op != OpKind::Const) continue;
        if (static_cast<int64_t>(n.literal.size() / dtype_size(n.dtype)) <= o.inline_limit) continue;
        if (!biggest || n.literal.size() > biggest->literal.size()) biggest = &n;
        large.push_back(static_cast<NodeId>(i));
    }
    if (large.empty()) {
        r.script = write_form(g, o.form, nullptr);
    } else if (to_stdout) {
        const Node& big = *biggest;
        r.usage = true;
        r.error = std::to_string(large.size()) + (large.size() == 1 ? " constant holds" : " constants hold") +
                  " more than " + std::to_string(o.inline_limit) + " elements (the largest: '" +
                  std::string(big.display()) + "', " + type_string(big.dtype, big.shape) +
                  "); they go to a side file beside the script: give -o FILE (the side file is then "
                  "FILE's name with .npz), or --inline-limit=N to write constants of up to N elements inline";
        return r;
    } else {
        r.side_file = directory_of(o.output);
        const std::string name = side_file_of(o.output);
        r.side_file = r.side_file.empty() ? name : r.side_file == "/" ? "/" + name : r.side_file + "/" + name;
        if (r.side_file == o.output) {
            r.usage = true;
            r.error = "the script " + o.output + " would be its own side file; name it .graph or .json";
            return r;
        }
        ExternalConsts ext;
        std::vector<NpzMember> members;
        std::set<std::string> keys;
        for (NodeId id : large) {
            const Node& n = g.node(id);
            // The value's own name (an ONNX initializer's: "conv1.weight"), else the node's.
            std::string key(n.display());
            if (!plain_key(key) || !keys.insert(key).second) {
                key = n.name;
                for (int k = 2; !keys.insert(key).second; ++k) key = n.name + "_" + std::to_string(k);
            }
            ext[id] = ExternalConst{name, key};
            members.push_back(NpzMember{key, n.dtype, n.shape, n.literal.data()});
        }
        r.external = members.size();
        r.script = write_form(g, o.form, &ext);
        return write_files(o, members, r);
    }
    if (!to_stdout) return write_files(o, {}, r);
    r.ok = true;
    return r;
}

}  // namespace graphrun
