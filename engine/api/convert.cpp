// Converting between the two front ends' forms.
#include "engine/api/convert.h"

#include "engine/frontend/json_writer.h"
#include "engine/frontend/text_writer.h"

namespace graphrun {

std::string write_graph(const Graph& g, GraphForm form) {
    return form == GraphForm::Json ? write_json(g) : write_text(g);
}

}  // namespace graphrun
