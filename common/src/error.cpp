#include "railyard/common/error.hpp"

#include <fmt/format.h>

namespace railyard {

std::string format_input_error(const InputLocation& where, const std::string& rule, const std::string& fix)
{
  std::string out;
  if (!where.file.empty()) {
    out += where.file;
    if (where.line > 0)
      out += fmt::format(":{}", where.line);
    out += ": ";
  }
  if (!where.field.empty())
    out += fmt::format("field '{}': ", where.field);
  out += rule;
  if (!fix.empty())
    out += fmt::format(". Fix: {}", fix);
  return out;
}

InputError::InputError(InputLocation where, std::string rule, std::string fix)
    : std::runtime_error(format_input_error(where, rule, fix))
    , where_(std::move(where))
    , rule_(std::move(rule))
    , fix_(std::move(fix))
{
}

} // namespace railyard
