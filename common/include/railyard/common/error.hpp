// Errors that name the input, the rule broken and the fix. Library code throws; only the CLI turns an error into an
// exit code (2 for bad input, 4 for an output the operating system would not let us write), so library code never
// calls exit().
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

/// A write the operating system refused or cut short once the output was under way: no space (ENOSPC), quota
/// (EDQUOT), an I/O error (EIO), a short write, or a failed fsync(), close() or rename(). Exit code 4. Unlike an
/// InputError nothing the user typed is wrong; the message names the file, the OS's reason and what to do.
class OutputError : public std::runtime_error {
public:
  /// `os_errno` is the errno of the failed call (0 when there is none, e.g. a stream that failed without one).
  OutputError(std::string path, std::string what_failed, int os_errno, std::string fix);

  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] int os_errno() const { return errno_; }

private:
  std::string path_;
  int errno_ = 0;
};

/// The fix OutputError gives for an errno: free space for ENOSPC and EDQUOT, check the device for EIO, ...
std::string output_error_fix(int os_errno);

} // namespace railyard
