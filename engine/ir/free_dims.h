// The free (symbolic) dimensions of an ONNX model's inputs: what the user
// binds them with (--dim, --input-shape, the arrays fed with --input) and what
// the model was read with (SPEC section 2). Text and JSON graphs have none.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"

namespace graphrun {

// --dim=NAME=N: every dimension named NAME (a dim_param) is N.
struct DimBinding {
    std::string name;
    int64_t value = 0;
    std::string from;  // "--dim=N=16", for messages
};

// A whole shape for one graph input: the array fed to it (--input), or
// --input-shape=NAME=1x3x224x224 where no array is fed (check, --fill).
struct GivenShape {
    std::string input;
    Shape shape;
    std::string from;  // "--input=x=@a.npy", "--input-shape=x=1x3", for messages
    // An --input-shape names an input the model must have; an --input array
    // naming none is reported by the feeds (read_feeds), with the others.
    bool must_exist = false;
};

struct ShapeBindings {
    std::vector<DimBinding> dims;
    std::vector<GivenShape> shapes;
    bool empty() const { return dims.empty() && shapes.empty(); }
};

// One free dimension of a model's input, as the model was read.
struct FreeDim {
    std::string input;  // the graph input
    int axis = 0;
    std::string name;    // its dim_param; "" for a dimension with neither value nor name
    int64_t value = 1;   // as bound
    std::string bound_by;  // the option that bound it; "" where nothing did (taken as 1)
};

}  // namespace graphrun
