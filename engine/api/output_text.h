// What graphrun writes for people and programs, safe for any bytes in a name:
// JSON documents that are valid UTF-8 whatever their strings hold, and the
// terminal forms of names and messages (engine/base/printable.h, reached by
// cli/ through this header).
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "engine/base/printable.h"

namespace graphrun {

namespace json_text_detail {

template <class Json>
bool needs_escape(const Json& j) {
    if (j.is_string()) return !json_safe(j.template get_ref<const std::string&>());
    if (j.is_array()) {
        for (const Json& e : j)
            if (needs_escape(e)) return true;
        return false;
    }
    if (j.is_object()) {
        for (auto it = j.begin(); it != j.end(); ++it)
            if (!json_safe(it.key()) || needs_escape(it.value())) return true;
    }
    return false;
}

template <class Json>
Json escaped(const Json& j) {
    if (j.is_string()) return Json(json_safe_text(j.template get_ref<const std::string&>()));
    if (j.is_array()) {
        Json out = Json::array();
        for (const Json& e : j) out.push_back(escaped(e));
        return out;
    }
    if (j.is_object()) {
        Json out = Json::object();
        for (auto it = j.begin(); it != j.end(); ++it) out[json_safe_text(it.key())] = escaped(it.value());
        return out;
    }
    return j;
}

}  // namespace json_text_detail

// `doc` as one line of JSON. Every string and key goes through
// json_safe_text (printable.h): a byte that is not UTF-8 is written as the
// text \xHH, so the document is valid UTF-8 and keeps the name's bytes; the
// document is copied only when one of its strings needs that.
template <class Json>
std::string dump_json(const Json& doc) {
    if (!json_text_detail::needs_escape(doc)) return doc.dump();
    return json_text_detail::escaped(doc).dump();
}

}  // namespace graphrun
