// Small text helpers the readers share, spelled once.
#pragma once

#include <string>

namespace railyard {

/// `s` without the spaces, tabs and line ends (CR, LF) at either end.
std::string trim(const std::string& s);

} // namespace railyard
