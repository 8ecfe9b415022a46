// Unit tests of the conv area's window geometry (engine/ir/conv_geometry.h),
// which validation, the CPU and the GPU share: ONNX's output sizes and pads.
#include <doctest/doctest.h>

#include <string>
#include <utility>
#include <vector>

#include "engine/ir/conv_geometry.h"

using namespace graphrun;

namespace {

Attr ints(std::vector<int64_t> v) {
    std::vector<Attr> items;
    for (int64_t x : v) items.push_back(Attr::integer(x));
    return Attr::make_list(std::move(items));
}

Node node(OpKind op, std::vector<std::pair<std::string, Attr>> attrs) {
    Node n;
    n.op = op;
    for (auto& [k, v] : attrs) n.attrs.push_back(NamedAttr{k, std::move(v), {}});
    return n;
}

std::string out(const Node& n, const Shape& x, const Shape* w = nullptr) {
    WindowProblem p;
    auto g = window_geometry(n, x, w, &p);
    if (!g) return "error: " + p.message;
    std::string s;
    for (int64_t d : window_output_shape(*g)) s += (s.empty() ? "" : ",") + std::to_string(d);
    return s;
}

}  // namespace

TEST_CASE("conv geometry: explicit pads, strides, dilations, groups") {
    const Shape w{8, 3, 3, 3};
    CHECK(out(node(OpKind::Conv, {}), {1, 3, 7, 7}, &w) == "1,8,5,5");
    CHECK(out(node(OpKind::Conv, {{"pads", ints({1, 1, 1, 1})}, {"strides", ints({2, 2})}}),
              {2, 3, 7, 7}, &w) == "2,8,4,4");
    CHECK(out(node(OpKind::Conv, {{"pads", ints({1, 0, 2, 1})}}), {1, 3, 6, 7}, &w) == "1,8,7,6");
    CHECK(out(node(OpKind::Conv, {{"dilations", Attr::integer(2)}}), {1, 3, 9, 9}, &w) ==
          "1,8,5,5");
    const Shape dw{6, 1, 3, 3};
    CHECK(out(node(OpKind::Conv, {{"group", Attr::integer(6)}, {"pads", Attr::integer(1)}}),
              {1, 6, 5, 5}, &dw) == "1,6,5,5");
    const Shape w1{4, 2, 3};
    CHECK(out(node(OpKind::Conv, {{"strides", Attr::integer(2)}}), {1, 2, 9}, &w1) == "1,4,4");
    CHECK(out(node(OpKind::Conv, {{"group", Attr::integer(2)}}), {1, 3, 5, 5}, &w)
              .rfind("error: the input's 3", 0) == 0);
}

TEST_CASE(
    "conv geometry: auto_pad puts the odd pad at the end (SAME_UPPER) or the beginning "
    "(SAME_LOWER)") {
    const Shape w{2, 3, 4, 4};
    WindowProblem p;
    auto up = window_geometry(node(OpKind::Conv, {{"auto_pad", Attr::string("SAME_UPPER")}}),
                              {1, 3, 7, 7}, &w, &p);
    REQUIRE(up);
    CHECK(up->out[1] == 7);
    CHECK(up->pad_begin[1] == 1);
    CHECK(up->pad_end[1] == 2);
    auto low = window_geometry(node(OpKind::Conv, {{"auto_pad", Attr::string("SAME_LOWER")},
                                                   {"strides", Attr::integer(2)}}),
                               {1, 3, 7, 7}, &w, &p);
    REQUIRE(low);
    CHECK(low->out[1] == 4);  // ceil(7 / 2)
    CHECK(low->pad_begin[1] == 2);
    CHECK(low->pad_end[1] == 1);
    CHECK(out(node(OpKind::Conv, {{"auto_pad", Attr::string("VALID")}}), {1, 3, 7, 7}, &w) ==
          "1,2,4,4");
    CHECK(out(node(OpKind::Conv,
                   {{"auto_pad", Attr::string("SAME_UPPER")}, {"pads", ints({1, 1, 1, 1})}}),
              {1, 3, 7, 7},
              &w) == "error: pads and auto_pad cannot both be given (auto_pad computes the pads)");
}

TEST_CASE("pool geometry: ceil_mode drops a window that would start in the end padding") {
    auto k3s2 = [](bool ceil, int64_t pad) {
        return node(OpKind::MaxPool, {{"kernel_shape", Attr::integer(3)},
                                      {"strides", Attr::integer(2)},
                                      {"pads", Attr::integer(pad)},
                                      {"ceil_mode", Attr::boolean(ceil)}});
    };
    CHECK(out(k3s2(false, 0), {1, 1, 6, 6}) == "1,1,2,2");
    CHECK(out(k3s2(true, 0), {1, 1, 6, 6}) == "1,1,3,3");
    CHECK(out(k3s2(true, 1), {1, 1, 5, 5}) == "1,1,3,3");  // a 4th window would start at 6 >= 5 + 1
    CHECK(out(node(OpKind::GlobalAvgPool, {}), {2, 3, 4, 5, 6}) == "2,3,1,1,1");
    CHECK(out(node(OpKind::AvgPool, {{"kernel_shape", Attr::integer(3)}}), {1, 1, 2, 2})
              .rfind("error: the height of the window (3", 0) == 0);
}

TEST_CASE("conv_transpose geometry: output_padding, output_shape") {
    const Shape w{2, 3, 3, 3};
    CHECK(out(node(OpKind::ConvTranspose, {}), {1, 2, 3, 3}, &w) == "1,3,5,5");
    CHECK(out(node(OpKind::ConvTranspose, {{"strides", Attr::integer(2)},
                                           {"pads", Attr::integer(1)},
                                           {"output_padding", Attr::integer(1)}}),
              {1, 2, 4, 4}, &w) == "1,3,8,8");
    CHECK(out(node(OpKind::ConvTranspose,
                   {{"strides", ints({3, 2})}, {"output_shape", ints({10, 8})}}),
              {1, 2, 3, 3}, &w) == "1,3,10,8");
    const Shape wg{4, 1, 2, 2};
    CHECK(out(node(OpKind::ConvTranspose, {{"group", Attr::integer(2)}}), {1, 4, 3, 3}, &wg) ==
          "1,2,4,4");
}
