#include "railyard/common/yaml.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <functional>
#include <stdexcept>

namespace railyard {

YamlNode::YamlNode(YAML::Node node, std::shared_ptr<const std::string> file, std::string path)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path))
{
}

namespace {
YamlNode load_with(const std::string& name, const std::function<YAML::Node()>& loader)
{
  try {
    return YamlNode(loader(), std::make_shared<const std::string>(name), "");
  } catch (const YAML::BadFile&) {
    throw InputError({name, 0, ""}, "cannot open the file", "check the path and that the file is readable");
  } catch (const YAML::ParserException& e) {
    throw InputError({name, e.mark.line + 1, ""}, fmt::format("malformed YAML ({})", e.msg),
                     "fix the YAML syntax at that line (indentation, a missing ':' or an unclosed quote or bracket)");
  }
}

// yaml-cpp accepts a list, a map or nothing as a key ("? [a, b]: 1"); converting such a key to text throws
// YAML::TypedBadConversion, which is no InputError.
std::string key_text(const YAML::Node& key, const std::shared_ptr<const std::string>& file, const std::string& path)
{
  if (!key.IsScalar())
    throw InputError({file ? *file : "", key.Mark().line >= 0 ? key.Mark().line + 1 : 0, path},
                     "a key is a list, a map or empty, not a name", "write each key as a plain name: 'key: value'");
  return key.as<std::string>();
}
} // namespace

YamlNode YamlNode::load_file(const std::string& path)
{
  return load_with(path, [&] { return YAML::LoadFile(path); });
}

YamlNode YamlNode::load_string(const std::string& text, const std::string& name)
{
  return load_with(name, [&] { return YAML::Load(text); });
}

InputLocation YamlNode::where() const
{
  const int line = node_.IsDefined() && node_.Mark().line >= 0 ? node_.Mark().line + 1 : 0;
  return {file_ ? *file_ : std::string(), line, path_};
}

void YamlNode::fail(const std::string& rule, const std::string& fix) const { throw InputError(where(), rule, fix); }

bool YamlNode::has(std::string_view key) const
{
  return node_.IsMap() && node_[std::string(key)].IsDefined() && !node_[std::string(key)].IsNull();
}

YamlNode YamlNode::at(std::string_view key) const
{
  if (!node_.IsMap())
    fail("expected a map with the key '" + std::string(key) + "'", "write it as 'key: value' lines under this field");
  const std::string k(key);
  if (!has(key))
    fail(fmt::format("missing required field '{}'", k), fmt::format("add '{}:' here", k));
  return YamlNode(node_[k], file_, path_.empty() ? k : path_ + "." + k);
}

std::optional<YamlNode> YamlNode::get(std::string_view key) const
{
  if (!has(key))
    return std::nullopt;
  return at(key);
}

std::vector<YamlNode> YamlNode::items() const
{
  if (!node_.IsSequence())
    fail("expected a list", "write the entries as '- item' lines");
  std::vector<YamlNode> out;
  out.reserve(node_.size());
  for (size_t i = 0; i < node_.size(); ++i)
    out.emplace_back(node_[i], file_, fmt::format("{}[{}]", path_, i));
  return out;
}

std::vector<std::string> YamlNode::keys() const
{
  std::vector<std::string> out;
  if (node_.IsMap())
    for (const auto& kv : node_)
      out.push_back(key_text(kv.first, file_, path_));
  return out;
}

std::string YamlNode::as_string() const
{
  if (!node_.IsScalar())
    fail("expected a single value", "write a scalar such as 'name: value'");
  return node_.Scalar();
}

std::int64_t YamlNode::as_int() const
{
  const std::string s = as_string();
  try {
    size_t pos = 0;
    const long long v = std::stoll(s, &pos);
    if (pos != s.size())
      throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    fail(fmt::format("'{}' is not an integer", s), "write a whole number such as 8");
  }
}

double YamlNode::as_double() const
{
  const std::string s = as_string();
  try {
    size_t pos = 0;
    const double v = std::stod(s, &pos);
    if (pos != s.size())
      throw std::invalid_argument(s);
    return v;
  } catch (const std::exception&) {
    fail(fmt::format("'{}' is not a number", s), "write a number such as 2.0");
  }
}

bool YamlNode::as_bool() const
{
  const std::string s = as_string();
  if (s == "true" || s == "yes" || s == "on")
    return true;
  if (s == "false" || s == "no" || s == "off")
    return false;
  fail(fmt::format("'{}' is not a boolean", s), "write true or false");
}

Bytes YamlNode::as_bytes() const
{
  try {
    return parse_bytes(as_string());
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a size such as '4 MiB', '1 GB' or a count of bytes");
  }
}

Seconds YamlNode::as_seconds() const
{
  try {
    return parse_seconds(as_string());
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a time with its unit, such as '1.5 us' or '2 ms'");
  }
}

BytesPerSec YamlNode::as_bandwidth() const
{
  try {
    return parse_bandwidth(as_string());
  } catch (const std::invalid_argument& e) {
    fail(e.what(), "write a bandwidth with its unit, such as '400 Gb/s' or '50 GB/s'");
  }
}

std::string YamlNode::string_or(std::string_view key, const std::string& fallback) const
{
  auto n = get(key);
  return n ? n->as_string() : fallback;
}
std::int64_t YamlNode::int_or(std::string_view key, std::int64_t fallback) const
{
  auto n = get(key);
  return n ? n->as_int() : fallback;
}
double YamlNode::double_or(std::string_view key, double fallback) const
{
  auto n = get(key);
  return n ? n->as_double() : fallback;
}
bool YamlNode::bool_or(std::string_view key, bool fallback) const
{
  auto n = get(key);
  return n ? n->as_bool() : fallback;
}

void YamlNode::expect_keys(std::initializer_list<std::string_view> allowed) const
{
  if (!node_.IsMap())
    fail("expected a map of 'key: value' lines", "indent the fields of this section under it");
  std::vector<std::string> names(allowed.begin(), allowed.end());
  for (const auto& kv : node_) {
    const auto key = key_text(kv.first, file_, path_);
    if (std::find(names.begin(), names.end(), key) != names.end())
      continue;
    const int line = kv.first.Mark().line >= 0 ? kv.first.Mark().line + 1 : 0;
    const std::string near = closest_spelling(key, names);
    std::string list;
    for (const auto& n : names)
      list += (list.empty() ? "" : ", ") + n;
    throw InputError({file_ ? *file_ : "", line, path_.empty() ? key : path_ + "." + key},
                     fmt::format("unknown field '{}'", key),
                     near.empty() ? fmt::format("remove it; the known fields here are: {}", list)
                                  : fmt::format("did you mean '{}'? The known fields here are: {}", near, list));
  }
}

std::string closest_spelling(std::string_view word, const std::vector<std::string>& candidates)
{
  std::string best;
  size_t best_d = std::max<size_t>(3, word.size() / 3) + 1;
  for (const auto& c : candidates) {
    std::vector<size_t> prev(c.size() + 1), cur(c.size() + 1);
    for (size_t j = 0; j <= c.size(); ++j)
      prev[j] = j;
    for (size_t i = 1; i <= word.size(); ++i) {
      cur[0] = i;
      for (size_t j = 1; j <= c.size(); ++j)
        cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (word[i - 1] == c[j - 1] ? 0 : 1)});
      std::swap(prev, cur);
    }
    if (prev[c.size()] < best_d) {
      best_d = prev[c.size()];
      best = c;
    }
  }
  return best;
}

} // namespace railyard
