// Every network congestion model Railyard knows, registered once with its name, formula, citation and defaults
// (house style: one registration per model, as SimGrid's network_cm02.cpp does).
#pragma once

#include <string>
#include <vector>

namespace railyard::models::cc {

struct CcModelInfo {
  std::string name;     ///< as written in a scenario: network.cc or network.pfc
  std::string formula;  ///< what it computes, in one paragraph
  std::string citation; ///< where the model comes from
  std::vector<std::pair<std::string, std::string>> defaults; ///< parameter -> default value with unit
};

/// "none" (max-min fair sharing), "dcqcn" (per preset) and "pfc", in that order.
const std::vector<CcModelInfo>& cc_models();

} // namespace railyard::models::cc
