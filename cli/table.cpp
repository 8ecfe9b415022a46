// Text tables (table.h).
#include "cli/table.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

#include "engine/api/output_text.h"
#include "engine/api/units.h"

namespace graphrun::cli {

void TextTable::add(std::vector<std::string> row, const std::vector<std::pair<size_t, uint64_t>>& bytes) {
    std::vector<std::string> units(row.size());
    bool any = false;
    for (const auto& [column, count] : bytes)
        if (count >= 1024 && column < units.size()) {  // below 1 KiB the exact figure says it all
            units[column] = human_bytes(count);
            any = true;
        }
    for (std::string& cell : row)  // a device's or a file's name may hold any bytes
        if (!terminal_safe(cell)) cell = terminal_text(cell);
    rows_.push_back(std::move(row));
    if (any) rows_.push_back(std::move(units));
}

void TextTable::print(std::ostream& out) const {
    std::vector<size_t> w;
    for (const auto& row : rows_) {
        if (w.size() < row.size()) w.resize(row.size(), 0);
        for (size_t i = 0; i < row.size(); ++i) w[i] = std::max(w[i], row[i].size());
    }
    for (const auto& row : rows_) {
        std::ostringstream line;
        line << "  ";
        for (size_t i = 0; i < row.size(); ++i)
            line << (i ? "  " : "") << (i < left_ ? std::left : std::right) << std::setw(static_cast<int>(w[i]))
                 << row[i];
        std::string text = line.str();
        text.erase(text.find_last_not_of(' ') + 1);  // a units row ends in blanks
        out << text << "\n";
    }
}

}  // namespace graphrun::cli
