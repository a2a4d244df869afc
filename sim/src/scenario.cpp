#include "railyard/sim/scenario.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
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
  models::CollectiveCall call;
  const YamlNode op = n.at("op");
  const auto kind = models::collective_from_string(op.as_string());
  if (!kind)
    op.fail(fmt::format("unknown collective '{}'", op.as_string()),
            "use one of: " + known_list({"all_reduce", "all_gather", "reduce_scatter", "broadcast", "reduce",
                                         "alltoall", "sendrecv", "send (with from and to)"}));
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

std::string normalized_op(const YamlNode& n)
{
  std::string out;
  for (char c : n.at("op").as_string())
    if (c != '_' && c != '-' && c != ' ')
      out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  return out;
}

// `op: send` with `from` and `to` (GPU ids): one transfer of `size` bytes.
models::P2pTransfer parse_send(const YamlNode& n, int gpus, bool in_group)
{
  if (in_group)
    n.expect_keys({"op", "size", "from", "to", "label"});
  else
    n.expect_keys({"op", "size", "from", "to", "repeat", "label"});
  models::P2pTransfer t;
  auto gpu = [&](const char* key) {
    const YamlNode v = n.at(key);
    const auto g = v.as_int();
    if (g < 0 || g >= gpus)
      v.fail(fmt::format("GPU {} does not exist: the cluster has GPUs 0..{}", g, gpus - 1),
             "use a GPU id inside the cluster");
    return static_cast<int>(g);
  };
  t.src = gpu("from");
  t.dst = gpu("to");
  if (t.src == t.dst)
    n.at("to").fail(fmt::format("a send from GPU {} to itself never touches the network", t.src),
                    "give two different GPUs");
  const YamlNode size = n.at("size");
  t.bytes = size.as_bytes();
  if (t.bytes.value() < 0)
    size.fail(fmt::format("size {} is negative", size.as_string()), "give a size of 0 bytes or more, e.g. '1 MiB'");
  return t;
}

// One group member or plain entry: a send, or a collective call.
void parse_member(const YamlNode& n, int gpus, CollectiveSpec& spec, bool in_group)
{
  const std::string op = normalized_op(n);
  if (op == "send" || op == "recv") {
    if (op == "recv" || !n.has("from") || !n.has("to"))
      n.at("op").fail("a one-way transfer is written as its send, with the GPUs at both ends",
                      "write '{op: send, size: 1 MiB, from: 0, to: 9}' (or op: sendrecv for nccl-tests' ring of "
                      "sends)");
    spec.sends.push_back(parse_send(n, gpus, in_group));
    return;
  }
  if (in_group)
    n.expect_keys({"op", "size", "ranks", "algorithm", "protocol", "channels", "root", "label"});
  else
    n.expect_keys({"op", "size", "ranks", "algorithm", "protocol", "channels", "root", "repeat", "label"});
  spec.group.push_back(parse_call(n, gpus));
  spec.group_where.push_back(n.where());
}

// A collectives entry: a call, a send, or `group:` with several of them issued together.
CollectiveSpec parse_entry(const YamlNode& item, int gpus)
{
  CollectiveSpec spec;
  spec.where = item.where();
  if (!item.is_map())
    item.fail("a collectives entry is a map", "write an entry such as '- {op: all_reduce, size: 1 GiB}'");
  if (item.has("group")) {
    item.expect_keys({"group", "repeat", "label"});
    const YamlNode list = item.at("group");
    const auto members = list.items();
    if (members.empty())
      list.fail("the group is empty", "list the calls issued together, e.g. '[{op: send, size: 1 MiB, from: 0, to: 8}]'");
    for (const auto& m : members) {
      if (m.has("repeat"))
        m.at("repeat").fail("a group member cannot repeat on its own", "put repeat on the group entry");
      parse_member(m, gpus, spec, true);
    }
  } else {
    parse_member(item, gpus, spec, false);
  }
  if (spec.sends.empty() && spec.group.size() == 1) {
    spec.call = spec.group.front();
    spec.group.clear();
    spec.group_where.clear();
  } else {
    // The summary a group reports under: the first member's op, every byte moved, every GPU involved.
    std::set<int> gpu_set;
    spec.call.kind = spec.group.empty() ? models::CollectiveKind::SendRecv : spec.group.front().kind;
    for (const auto& c : spec.group) {
      spec.call.bytes += c.bytes;
      gpu_set.insert(c.ranks.begin(), c.ranks.end());
    }
    for (const auto& t : spec.sends) {
      spec.call.bytes += t.bytes;
      gpu_set.insert(t.src);
      gpu_set.insert(t.dst);
    }
    spec.call.ranks.assign(gpu_set.begin(), gpu_set.end());
  }
  spec.call.label = item.string_or("label", spec.call.label);
  return spec;
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

Scenario parse_scenario(const YamlNode& root, bool collectives_required)
{
  root.expect_keys({"name", "seed", "cluster", "network", "nccl", "collectives", "description", "profile",
                   "workload"});
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
  if (auto net = root.get("network"))
    parse_network(*net, sc.sim);
  if (auto nc = root.get("nccl")) {
    nc->expect_keys({"step_overhead", "system", "algo", "proto", "latencies"});
    sc.nccl.where = nc->where();
    if (auto o = nc->get("step_overhead")) {
      sc.step_overhead = o->as_seconds();
      if (sc.step_overhead.value() < 0)
        o->fail("step_overhead is negative", "give a time of 0 or more, e.g. '0.5 us'");
    }
    if (auto sys = nc->get("system")) {
      static const std::vector<std::string> kSystems{"dgx_a100", "dgx_h100", "hgx_h200", "hgx_b200"};
      sc.nccl.system = sys->as_string();
      if (std::find(kSystems.begin(), kSystems.end(), sc.nccl.system) == kSystems.end())
        sys->fail(fmt::format("unknown system '{}' for NCCL's cost model", sc.nccl.system),
                  "use one of: dgx_a100, dgx_h100, hgx_h200, hgx_b200 (the node layout NCCL's topology search sees)");
    }
    std::optional<YamlNode> algo = nc->get("algo"), proto = nc->get("proto");
    if (algo)
      sc.nccl.algo = algo->as_string();
    if (proto)
      sc.nccl.proto = proto->as_string();
    // NCCL_ALGO and NCCL_PROTO in NCCL's own syntax; a bad list names the line of the key it came from.
    if (algo)
      sc.nccl.overrides = models::NcclOverrides::parse(sc.nccl.algo, std::nullopt, algo->where());
    if (proto) {
      const auto p = models::NcclOverrides::parse(std::nullopt, sc.nccl.proto, proto->where());
      sc.nccl.overrides.protocols = p.protocols;
    }
    sc.nccl.latencies = nc->bool_or("latencies", true);
  }
  if (!collectives_required && !root.has("collectives"))
    return sc;
  if (auto p = root.get("profile")) {
    sc.profile = resolve_scenario_path(*p, p->as_string(), sc.file);
    sc.profile_where = p->where();
  }
  if (auto wl = root.get("workload")) {
    if (root.has("collectives"))
      root.at("collectives").fail("a scenario runs either collectives or a workload, not both",
                                  "move the collectives into a scenario of their own");
    sc.workload = parse_workload(*wl, sc.file);
    return sc;
  }
  const YamlNode list = root.at("collectives");
  const auto items = list.items();
  if (items.empty())
    list.fail("no collectives to run", "add at least one entry such as '- {op: all_reduce, size: 1 GiB}'");
  for (const auto& item : items) {
    CollectiveSpec spec = parse_entry(item, sc.cluster.gpus());
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

Scenario parse_scenario(const YamlNode& root) { return parse_scenario(root, true); }

Scenario load_scenario(const std::string& path) { return parse_scenario(YamlNode::load_file(path)); }

Scenario load_scenario_cluster(const std::string& path) { return parse_scenario(YamlNode::load_file(path), false); }

} // namespace railyard::sim
