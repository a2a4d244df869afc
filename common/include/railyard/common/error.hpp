// Errors that name the input, the rule broken and the fix. Library code throws; only the CLI turns an error into an
// exit code (2 for bad input), so library code never calls exit().
#pragma once

#include <stdexcept>
#include <string>

namespace railyard {

/// Where in the user's input a problem sits. Any part may be empty or zero (unknown).
struct InputLocation {
  std::string file;  ///< path as the user gave it
  int line = 0;      ///< 1-based; 0 when unknown
  std::string field; ///< dotted path such as "cluster.nic.bandwidth", or "rank 3 node 17" for traces
};

/// Bad user input: a malformed scenario, an impossible topology, an inconsistent trace. Exit code 2.
class InputError : public std::runtime_error {
public:
  InputError(InputLocation where, std::string rule, std::string fix);

  [[nodiscard]] const InputLocation& where() const { return where_; }
  [[nodiscard]] const std::string& rule() const { return rule_; }
  [[nodiscard]] const std::string& fix() const { return fix_; }

private:
  InputLocation where_;
  std::string rule_;
  std::string fix_;
};

/// Formats "FILE:LINE: field 'F': RULE. Fix: FIX" leaving out the parts that are unknown.
std::string format_input_error(const InputLocation& where, const std::string& rule, const std::string& fix);

} // namespace railyard
