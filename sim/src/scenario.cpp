#include "railyard/sim/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <set>

namespace railyard::sim {

namespace {

std::string known_list(std::initializer_list<const char*> names)
{
  std::string out;
  for (const char* n : names)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

models::CollectiveCall parse_call(const YamlNode& n, int gpus)
{
  n.expect_keys({"op", "size", "ranks", "algorithm", "protocol", "channels", "root", "repeat", "label"});
  models::CollectiveCall call;
  const YamlNode op = n.at("op");
  const auto kind = models::collective_from_string(op.as_string());
  if (!kind)
    op.fail(fmt::format("unknown collective '{}'", op.as_string()),
            "use one of: " + known_list({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                         "alltoall", "sendrecv"}));
  call.kind = *kind;
  const YamlNode size = n.at("size");
  call.bytes = size.as_bytes();
  if (call.bytes.value() < 0)
    size.fail(fmt::format("size {} is negative", size.as_string()), "give a size of 0 bytes or more, e.g. '1 GiB'");
  if (n.has("ranks")) {
    call.ranks = parse_ranks(n.at("ranks"), gpus);
  } else {
    call.ranks.resize(static_cast<std::size_t>(gpus));
    std::iota(call.ranks.begin(), call.ranks.end(), 0);
  }
  if (auto a = n.get("algorithm")) {
    const auto alg = models::algorithm_from_string(a->as_string());
    if (!alg)
      a->fail(fmt::format("unknown algorithm '{}'", a->as_string()),
              "use one of: ring, tree, nvls, nvlstree, pat, collnetdirect, collnetchain (NCCL_ALGO names)");
    call.algorithm = alg;
  }
  if (auto p = n.get("protocol")) {
    const auto proto = models::protocol_from_string(p->as_string());
    if (!proto)
      p->fail(fmt::format("unknown protocol '{}'", p->as_string()), "use one of: LL, LL128, Simple (NCCL_PROTO names)");
    call.protocol = proto;
  }
  if (auto c = n.get("channels")) {
    const auto v = c->as_int();
    if (v < 1 || v > 64)
      c->fail(fmt::format("channels = {} is outside 1..64", v), "give between 1 and 64 channels (NCCL's MAXCHANNELS)");
    call.channels = static_cast<int>(v);
  }
  if (auto r = n.get("root")) {
    const auto v = r->as_int();
    if (v < 0 || v >= static_cast<std::int64_t>(call.ranks.size()))
      r->fail(fmt::format("root {} is not a rank of this communicator of {} ranks", v, call.ranks.size()),
              "give a communicator rank between 0 and ranks-1");
    call.root = static_cast<int>(v);
  }
  call.label = n.string_or("label", "");
  return call;
}

} // namespace

std::vector<int> parse_ranks(const YamlNode& node, int gpus)
{
  std::vector<int> out;
  if (node.is_scalar()) {
    const std::string s = node.as_string();
    if (s == "all") {
      for (int g = 0; g < gpus; ++g)
        out.push_back(g);
      return out;
    }
    const auto dash = s.find('-');
    int a = -1, b = -1;
    try {
      if (dash == std::string::npos || dash == 0)
        throw std::invalid_argument(s);
      size_t pa = 0, pb = 0;
      a = std::stoi(s.substr(0, dash), &pa);
      b = std::stoi(s.substr(dash + 1), &pb);
      if (pa != dash || pb != s.size() - dash - 1)
        throw std::invalid_argument(s);
    } catch (const std::exception&) {
      node.fail(fmt::format("'{}' is not a rank set", s), "write 'all', a range such as '0-7', or a list [0, 1, 2]");
    }
    if (a > b)
      node.fail(fmt::format("range '{}' is empty", s), "write the lower GPU id first, e.g. '0-7'");
    for (int g = a; g <= b; ++g)
      out.push_back(g);
  } else {
    for (const auto& item : node.items())
      out.push_back(static_cast<int>(item.as_int()));
  }
  std::set<int> seen;
  for (int g : out) {
    if (g < 0 || g >= gpus)
      node.fail(fmt::format("GPU {} does not exist: the cluster has GPUs 0..{}", g, gpus - 1),
                "use GPU ids inside the cluster");
    if (!seen.insert(g).second)
      node.fail(fmt::format("GPU {} is listed twice", g), "list each GPU once");
  }
  if (out.empty())
    node.fail("the rank set is empty", "list at least one GPU");
  return out;
}

Scenario parse_scenario(const YamlNode& root)
{
  root.expect_keys({"name", "seed", "cluster", "network", "nccl", "collectives", "description"});
  Scenario sc;
  sc.file = root.where().file;
  sc.name = root.string_or("name", "scenario");
  if (auto s = root.get("seed")) {
    const auto v = s->as_int();
    if (v < 0)
      s->fail("seed is negative", "give a seed of 0 or more");
    sc.sim.seed = static_cast<std::uint64_t>(v);
  }
  const YamlNode cluster = root.at("cluster");
  sc.cluster = topo::parse_cluster(cluster);
  sc.cluster_where = cluster.where();
  if (auto net = root.get("network")) {
    net->expect_keys({"backend", "pxn", "time_precision"});
    if (auto b = net->get("backend")) {
      if (b->as_string() != "simgrid")
        b->fail(fmt::format("unknown network backend '{}'", b->as_string()), "use 'simgrid'");
      sc.sim.backend = Backend::SimGrid;
    }
    sc.sim.pxn = net->bool_or("pxn", true);
    if (auto p = net->get("time_precision")) {
      const double v = p->as_double();
      if (!(v > 0 && v <= 1e-5))
        p->fail(fmt::format("time_precision {} is outside (0, 1e-5]", v),
                "use 1e-9 (exact) up to 1e-6 (faster); 1e-5 already moves results by ~3% (DESIGN.md)");
      sc.sim.time_precision = v;
    }
  }
  if (auto nc = root.get("nccl")) {
    nc->expect_keys({"step_overhead"});
    if (auto o = nc->get("step_overhead")) {
      sc.step_overhead = o->as_seconds();
      if (sc.step_overhead.value() < 0)
        o->fail("step_overhead is negative", "give a time of 0 or more, e.g. '0.5 us'");
    }
  }
  const YamlNode list = root.at("collectives");
  const auto items = list.items();
  if (items.empty())
    list.fail("no collectives to run", "add at least one entry such as '- {op: all_reduce, size: 1 GiB}'");
  for (const auto& item : items) {
    CollectiveSpec spec;
    spec.call = parse_call(item, sc.cluster.gpus());
    spec.where = item.where();
    if (auto r = item.get("repeat")) {
      const auto v = r->as_int();
      if (v < 1 || v > 1000000)
        r->fail(fmt::format("repeat = {} is outside 1..1000000", v), "give how many times to run the call");
      spec.repeat = static_cast<int>(v);
    }
    sc.collectives.push_back(std::move(spec));
  }
  return sc;
}

Scenario load_scenario(const std::string& path) { return parse_scenario(YamlNode::load_file(path)); }

} // namespace railyard::sim
