// Constants read from a side file (.npz or .npy) beside the script
// (const_files.h). Each file is read and parsed once, however many constants
// it holds; an array's bytes move into the last constant that names it.
#include "engine/frontend/const_files.h"

#include <map>
#include <new>
#include <optional>
#include <vector>

#include "engine/frontend/npy.h"

namespace graphrun {

namespace {

const Loc& value_loc(const NamedAttr& a) {
    return a.value.loc.known() ? a.value.loc : a.loc;
}

// A key or member name for a message: escaped (it may come from the file).
std::string quoted(const std::string& s) {
    return quote_bytes(s, 256);
}

// One side file as read: its arrays by name ("" for an .npy), or why not.
struct SideFile {
    std::string error;
    // The file could not be held (the memory limit, or the host out of
    // memory): a runtime error (exit 1), not a bad file (exit 3).
    bool over_limit = false;
    bool npz = false;
    std::map<std::string, NpyArray> arrays;
    std::map<std::string, int> uses;  // constants still to take each array
};

SideFile read_side_file_unguarded(const std::string& path, ArrayLimits limits) {
    SideFile f;
    limits.stopped_at_memory_limit = &f.over_limit;
    std::string bytes, why;
    // A regular file only, read no further than the bytes it has and graphrun's bounds (limits.h).
    if (!read_array_file(path, bytes, why, limits)) {
        f.error = why;
        return f;
    }
    f.npz = looks_like_zip(bytes);
    if (f.npz) {
        auto entries = parse_npz(bytes, why, limits);
        if (!entries) {
            f.error = f.over_limit ? path + ": " + why : path + " is not a valid .npz: " + why;
            return f;
        }
        for (NpzEntry& e : *entries) f.arrays[e.name] = std::move(e.array);
    } else {
        auto a = parse_npy(bytes, why, limits);
        if (!a) {
            f.error = f.over_limit ? path + ": " + why : path + " is neither an .npz nor a valid .npy: " + why;
            return f;
        }
        f.arrays[""] = std::move(*a);
    }
    return f;
}

SideFile read_side_file(const std::string& path, const ArrayLimits& limits) {
    try {
        return read_side_file_unguarded(path, limits);
    } catch (const std::bad_alloc&) {
        SideFile f;
        f.error = "out of host memory while reading " + path;
        f.over_limit = true;
        return f;
    }
}

// "'a', 'b', 'c' and 9 more"
std::string names_text(const std::map<std::string, NpyArray>& arrays) {
    std::string s;
    size_t k = 0;
    for (const auto& [name, _] : arrays) {
        if (k == 6) return s + " and " + std::to_string(arrays.size() - k) + " more";
        s += (k++ ? ", " : "") + quoted(name);
    }
    return s;
}

// A const's request: the node, its file (resolved) and key as written.
struct Request {
    NodeId id;
    std::string path, key;
    const NamedAttr* file_attr;
    const NamedAttr* key_attr;
};

class Resolver {
  public:
    Resolver(Graph& g, Diagnostics& diag, std::string dir, uint64_t memory_limit, std::vector<std::string>* read_paths)
        : g_(g), diag_(diag), dir_(std::move(dir)), read_paths_(read_paths) {
        limits_.memory_limit = memory_limit;
    }

    bool run() {
        std::vector<Request> requests;
        for (size_t i = 0; i < g_.nodes.size(); ++i) {
            Node& n = g_.nodes[i];
            if (n.op != OpKind::Const || !n.find_attr("file")) continue;
            if (auto r = request(static_cast<NodeId>(i))) requests.push_back(std::move(*r));
        }
        // Every file once; an array's bytes move into the last constant that names it.
        for (const Request& r : requests)
            if (files_.try_emplace(r.path).second && read_paths_) read_paths_->push_back(r.path);
        for (auto& [path, f] : files_) f = read_side_file(path, limits_);
        for (const Request& r : requests) ++files_[r.path].uses[r.key];
        for (const Request& r : requests) take(r);
        return ok_;
    }

  private:
    // over_limit: the graph is fine, memory is short (exit 1; SPEC section 6).
    void fail(NodeId id, const Loc& loc, std::string msg, bool over_limit = false) {
        Node& n = g_.node(id);
        std::string text = std::string(n.display()) + ": const: " + std::move(msg);
        if (over_limit)
            diag_.over_limit_error(loc.known() ? loc : n.loc, std::move(text));
        else
            diag_.error(loc.known() ? loc : n.loc, std::move(text));
        n.op = OpKind::Invalid;
        ok_ = false;
    }

    std::optional<Request> request(NodeId id) {
        const Node& n = g_.node(id);
        const NamedAttr* file = n.find_attr("file");
        const NamedAttr* key = n.find_attr("key");
        if (const NamedAttr* v = n.find_attr("value")) {
            fail(id, value_loc(*v), "a const takes its values from value= or from file=, not both");
            return std::nullopt;
        }
        if (!file->value.is_word() || file->value.s.empty()) {
            fail(id, value_loc(*file), "file must be a file name (a string), such as file=\"model.npz\"");
            return std::nullopt;
        }
        if (key && !key->value.is_word()) {
            fail(id, value_loc(*key), "key must be a name (a string), such as key=\"conv1.weight\"");
            return std::nullopt;
        }
        const std::string& name = file->value.s;
        std::string path = name[0] == '/' || dir_.empty() ? name : dir_ == "/" ? "/" + name : dir_ + "/" + name;
        return Request{id, std::move(path), key ? key->value.s : std::string(), file, key};
    }

    // The array named by r, checked against the const's shape and dtype, into the node.
    void take(const Request& r) {
        SideFile& f = files_[r.path];
        const std::string& written = r.file_attr->value.s;
        if (!f.error.empty()) return fail(r.id, value_loc(*r.file_attr), f.error, f.over_limit);
        if (!f.npz && r.key_attr)
            return fail(r.id, value_loc(*r.key_attr),
                        written + " is an .npy file (one array): key= is only for an .npz");
        if (f.npz && !r.key_attr)
            return fail(r.id, value_loc(*r.file_attr),
                        written + " is an .npz of " + std::to_string(f.arrays.size()) +
                            (f.arrays.size() == 1 ? " array" : " arrays") + "; say which with key= (" +
                            names_text(f.arrays) + ")");
        auto it = f.arrays.find(r.key);
        if (it == f.arrays.end()) {
            std::vector<std::string> names;
            for (const auto& [name, _] : f.arrays) names.push_back(name);
            std::string near = nearest_name(r.key, names);
            return fail(r.id, value_loc(*r.key_attr),
                        written + " has no array " + quoted(r.key) +
                            (near.empty() ? "; it holds " + names_text(f.arrays)
                                          : "; did you mean " + quoted(near) + "?"));
        }
        const NpyArray& a = it->second;
        const std::string what = f.npz ? written + "[" + quoted(r.key) + "]" : written;
        Node& n = g_.node(r.id);
        if (const NamedAttr* s = n.find_attr("shape")) {
            std::optional<Shape> want = shape_of(s->value);
            if (!want) return fail(r.id, value_loc(*s), "shape must be a list of integers");
            if (*want != a.shape)
                return fail(r.id, value_loc(*s),
                            what + " is " + type_string(a.dtype, a.shape) + ", but shape=" +
                                shape_string(*want));
        }
        if (const NamedAttr* t = n.find_attr("dtype")) {
            std::optional<DType> want = t->value.is_word() ? parse_dtype(t->value.s) : std::nullopt;
            if (!want)
                return fail(r.id, value_loc(*t), "dtype must be f32, f64, i32, i64 or bool");
            if (*want != a.dtype)
                return fail(r.id, value_loc(*t),
                            what + " is " + type_string(a.dtype, a.shape) + ", but dtype=" +
                                dtype_name(*want) + "; the const takes the array's dtype");
        }
        Loc shape_loc, dtype_loc;
        std::vector<NamedAttr> attrs;
        for (NamedAttr& na : n.attrs) {
            if (na.name == "shape") shape_loc = na.loc;
            if (na.name == "dtype") dtype_loc = na.loc;
            if (na.name != "file" && na.name != "key" && na.name != "shape" && na.name != "dtype")
                attrs.push_back(std::move(na));
        }
        std::vector<Attr> dims;
        for (int64_t d : a.shape) dims.push_back(Attr::integer(d));
        attrs.insert(attrs.begin(), {NamedAttr{"shape", Attr::make_list(std::move(dims)), shape_loc},
                                     NamedAttr{"dtype", Attr::ident(dtype_name(a.dtype)), dtype_loc}});
        n.attrs = std::move(attrs);
        n.host_literal = true;
        if (--f.uses[r.key] == 0)
            n.literal = std::move(it->second.data);
        else
            n.literal = it->second.data;
    }

    static std::optional<Shape> shape_of(const Attr& a) {
        if (a.kind != Attr::Kind::List) return std::nullopt;
        Shape s;
        for (const Attr& d : a.list) {
            if (d.kind != Attr::Kind::Number || !d.is_int) return std::nullopt;
            s.push_back(d.i);
        }
        return s;
    }

    Graph& g_;
    Diagnostics& diag_;
    std::string dir_;
    std::vector<std::string>* read_paths_;
    std::map<std::string, SideFile> files_;
    ArrayLimits limits_;
    bool ok_ = true;
};

}  // namespace

std::string directory_of(const std::string& path) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return "";
    return slash == 0 ? "/" : path.substr(0, slash);
}

bool resolve_const_files(Graph& g, Diagnostics& diag, const std::string& script_path, uint64_t memory_limit,
                         std::vector<std::string>* read_paths) {
    return Resolver(g, diag, script_path == "-" ? "" : directory_of(script_path), memory_limit, read_paths).run();
}

}  // namespace graphrun
