// Helpers shared by the topology tests: build from YAML text, inspect paths, find the line a key sits on.
#pragma once

#include "railyard/common/error.hpp"
#include "railyard/common/yaml.hpp"
#include "railyard/topologies/topology.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

namespace railyard::topo::testing {

inline Topology build_from_yaml(const std::string& yaml)
{
  const YamlNode root = YamlNode::load_string(yaml, "test.yaml");
  const YamlNode cluster = root.at("cluster");
  return build_topology(parse_cluster(cluster), cluster.where());
}

/// 1-based number of the first line of `text` that contains `needle` (0 if none): the line an error must name.
inline int line_of(const std::string& text, const std::string& needle)
{
  std::istringstream in(text);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n)
    if (line.find(needle) != std::string::npos) return n;
  return 0;
}

/// The InputError that parsing and building `yaml` (named bad.yaml) raises; fails the test if none is raised.
inline InputError error_of(const std::string& yaml)
{
  try {
    const YamlNode root = YamlNode::load_string(yaml, "bad.yaml");
    const YamlNode cluster = root.at("cluster");
    build_topology(parse_cluster(cluster), cluster.where());
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError for:\n" << yaml;
  return InputError({}, "none raised", "");
}

/// Vertex kinds along a path, starting with the source vertex.
inline std::vector<VertexKind> kinds_along(const Topology& t, const Path& p)
{
  std::vector<VertexKind> out;
  if (p.empty()) return out;
  out.push_back(t.vertex(t.link_source(p.front())).kind);
  for (LinkId id : p)
    out.push_back(t.vertex(t.link_target(id)).kind);
  return out;
}

/// True when the links of `p` form a walk from GPU `src` to GPU `dst`.
inline bool is_walk(const Topology& t, const Path& p, int src, int dst)
{
  if (p.empty()) return src == dst;
  if (t.link_source(p.front()) != t.gpu_vertex(src) || t.link_target(p.back()) != t.gpu_vertex(dst)) return false;
  for (std::size_t i = 1; i < p.size(); ++i)
    if (t.link_source(p[i]) != t.link_target(p[i - 1])) return false;
  return true;
}

inline int count_kind(const Topology& t, const Path& p, LinkKind k)
{
  int n = 0;
  for (LinkId id : p)
    n += t.link(id).kind == k ? 1 : 0;
  return n;
}

inline int count_vertices(const Topology& t, VertexKind k)
{
  int n = 0;
  for (VertexId v = 0; v < t.num_vertices(); ++v)
    n += t.vertex(v).kind == k ? 1 : 0;
  return n;
}

} // namespace railyard::topo::testing
