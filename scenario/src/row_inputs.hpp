// What the commands that write rows of a CSV over a base scenario share (railyard calibrate --steps and
// --collectives): dotted scenario keys ("cluster.nic.bandwidth") on the scenario's YAML tree, and the numbers of a row.
#pragma once

#include "railyard/common/error.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>

namespace railyard::scenario::detail {

/// Sets a dotted key of the tree to a scalar, creating maps on the way.
inline void set_key(YAML::Node root, const std::string& dotted, const std::string& value)
{
  YAML::Node n;
  n.reset(root);
  std::size_t begin = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', begin);
    const std::string part = dotted.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (dot == std::string::npos) {
      n[part] = value;
      return;
    }
    YAML::Node child = n[part];
    n.reset(child);
    begin = dot + 1;
  }
}

/// The scalar at a dotted key, or nothing when the tree has no scalar there.
inline std::optional<std::string> get_key(const YAML::Node& root, const std::string& dotted)
{
  YAML::Node n;
  n.reset(root);
  std::size_t begin = 0;
  while (true) {
    const std::size_t dot = dotted.find('.', begin);
    const std::string part = dotted.substr(begin, dot == std::string::npos ? std::string::npos : dot - begin);
    if (!n.IsMap()) return std::nullopt;
    const YAML::Node& view = n; // the const operator[] never adds the key
    const YAML::Node child = view[part];
    if (!child) return std::nullopt;
    if (dot == std::string::npos) return child.IsScalar() ? std::optional<std::string>(child.Scalar()) : std::nullopt;
    n.reset(child);
    begin = dot + 1;
  }
}

/// `s` without leading and trailing blanks.
inline std::string trim(const std::string& s)
{
  const auto b = s.find_first_not_of(" \t");
  const auto e = s.find_last_not_of(" \t");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

/// The finite number `text` starts with and the rest of it ("400 Gb/s" -> 400, " Gb/s"); nothing when it starts with
/// none.
inline std::optional<std::pair<double, std::string>> leading_number(const std::string& text)
{
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  if (used == 0 || !std::isfinite(v)) return std::nullopt;
  return std::make_pair(v, text.substr(used));
}

/// A cell that must be a plain positive number; InputError at `where` naming `what` otherwise.
inline double positive_cell(const std::string& text, const InputLocation& where, const std::string& what)
{
  const auto n = leading_number(text);
  if (!n || !n->second.empty() || n->first <= 0)
    throw InputError(where, fmt::format("{} '{}' is not a positive number", what, text),
                     "write the value as a plain number, e.g. 372.16");
  return n->first;
}

} // namespace railyard::scenario::detail
