// The text tables of `run`, `run --timeline` and `compare`: columns aligned,
// the first few left and the rest right, and under a row whose byte figures
// reach 1 KiB a row of the same figures in binary units ("17.00 MiB"), so
// that a table stays as narrow as its exact figures.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace graphrun::cli {

class TextTable {
public:
    TextTable(std::vector<std::string> head, size_t left_columns) : left_(left_columns) {
        rows_.push_back(std::move(head));
    }
    // A row; `bytes` names the columns that hold byte counts, with the counts.
    void add(std::vector<std::string> row, const std::vector<std::pair<size_t, uint64_t>>& bytes = {});
    // Two spaces before the first column and between columns; no trailing blanks.
    void print(std::ostream& out) const;

private:
    size_t left_;
    std::vector<std::vector<std::string>> rows_;
};

}  // namespace graphrun::cli
