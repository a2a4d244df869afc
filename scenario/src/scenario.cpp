#include "railyard/scenario/scenario.hpp"
#include "railyard/scenario/network_section.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <numeric>
#include <set>

namespace railyard::scenario {

using namespace railyard::sim; // the simulator this layer drives

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
  if (call.bytes.bytes() < 0)
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
    call.channels = static_cast<int>(c->as_int(1, 64, "NCCL's MAXCHANNELS"));
  }
  if (auto r = n.get("root")) {
    const auto last = static_cast<std::int64_t>(call.ranks.size()) - 1;
    call.root = static_cast<int>(
        r->as_int(0, last, fmt::format("the root is a rank of this communicator of {} ranks", call.ranks.size())));
  }
  call.label = n.string_or("label", "");
  return call;
}

std::string normalized_op(const YamlNode& n)
{
  std::string out;
  for (char c : n.at("op").as_string())
    if (c != '_' && c != '-' && c != ' ') out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
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
    return static_cast<int>(n.at(key).as_int(0, gpus - 1, fmt::format("the cluster has GPUs 0..{}", gpus - 1)));
  };
  t.src = gpu("from");
  t.dst = gpu("to");
  if (t.src == t.dst)
    n.at("to").fail(fmt::format("a send from GPU {} to itself never touches the network", t.src),
                    "give two different GPUs");
  const YamlNode size = n.at("size");
  t.bytes = size.as_bytes();
  if (t.bytes.bytes() < 0)
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
      list.fail("the group is empty",
                "list the calls issued together, e.g. '[{op: send, size: 1 MiB, from: 0, to: 8}]'");
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

// ---------------------------------------------------------------------------------------------------------------
// Link parameters from the profile

// A profile's link numbers are GPU-to-GPU (calibration/names.hpp: what a peer copy or nccl-tests measures); the
// topology's are per link. Each conversion below keeps the path the profile measured at the profile's numbers:
//   nvlink:  GPU -> NVSwitch -> GPU is two NVLink links: each gets the bandwidth and half the latency;
//   pcie:    the topology's one PCIe link GPU -> NIC stands for GPU -> PCIe switch -> NIC, the same two hops as the
//            GPU -> PCIe switch -> GPU path the profile measured: it gets the profile's bandwidth and latency;
//   network: between two nodes on one leaf a path is PCIe, NIC -> leaf, leaf -> NIC, PCIe: each NIC link gets the
//            bandwidth and (latency - 2 x PCIe latency) / 2; the fabric's switch-to-switch links get the same
//            bandwidth (a path crossing the fabric alone still moves at the profile's rate); the profile has no
//            per-switch latency, so the fabric latency stays the built-in default.
struct ProfileLinks {
  const YamlNode& cluster;
  const calibration::Profile& profile;
  const InputLocation& named_at; // the scenario's `profile:` line
  topo::ClusterSpec& spec;
  ClusterLinkOrigins& origins;

  // The value the scenario wrote at cluster.<section>.<key>, if it wrote one.
  [[nodiscard]] std::optional<YamlNode> written(const char* section, const char* key) const
  {
    const auto sec = cluster.get(section);
    if (!sec || !sec->is_map()) return std::nullopt;
    return sec->get(key);
  }

  static LinkParamOrigin from_scenario(const YamlNode& value)
  {
    LinkParamOrigin o;
    o.from = LinkParamOrigin::From::Scenario;
    o.where = value.where();
    return o;
  }

  LinkParamOrigin from_profile(const calibration::LinkParams& l, const char* number, std::string derivation) const
  {
    LinkParamOrigin o;
    o.from = LinkParamOrigin::From::Profile;
    o.where = {profile.file, l.line, fmt::format("links[{}].{}", calibration::to_string(l.kind), number)};
    o.entry = o.where.field;
    o.source = std::string(number) == "latency_us" ? l.latency_source : l.bandwidth_source;
    o.derivation = std::move(derivation);
    return o;
  }

  static LinkParamOrigin by_default(std::string why)
  {
    LinkParamOrigin o;
    o.derivation = std::move(why);
    return o;
  }

  // The profile's entry for `kind`, or an InputError naming the profile file, the missing entry and the fix when the
  // cluster needs it (`needed`) and the scenario leaves some of its fields to the profile.
  const calibration::LinkParams* entry(calibration::LinkKind kind, bool needed, const std::string& fields,
                                       const std::string& why_needed) const
  {
    const auto* l = profile.link(kind);
    if (l || !needed) return l;
    const std::string k = calibration::to_string(kind);
    throw InputError(
        {profile.file, 0, fmt::format("links[{}]", k)},
        fmt::format("the profile '{}' has no '{}' entry under links:, and the scenario ({}:{}) leaves {} to it ({})",
                    profile.system, k, named_at.file, named_at.line, fields, why_needed),
        fmt::format("write {} in the scenario's cluster: section, or add to the profile's links: '- {{kind: {}, "
                    "latency_us: ..., bandwidth_GBps: ..., source: {{latency_us: ..., bandwidth_GBps: ...}}}}' "
                    "(calibration/README.md, profile format)",
                    fields, k));
  }

  // One link parameter, by the rule every one of them follows: the scenario's value where its cluster: section
  // writes it, else the profile entry's (`take` sets it in the spec and returns how it follows from the profile's
  // number), else the built-in default.
  template <class Take>
  void resolve(LinkParamOrigin& origin, const std::optional<YamlNode>& written_value,
               const calibration::LinkParams* profile_entry, const char* number, Take take)
  {
    if (written_value)
      origin = from_scenario(*written_value);
    else if (profile_entry)
      origin = from_profile(*profile_entry, number, take(*profile_entry));
    else
      origin = by_default("built-in default: the profile has no such entry and no route of this cluster uses it");
  }

  void apply()
  {
    using calibration::LinkKind;
    using calibration::LinkParams;
    const bool intra = spec.gpus_per_node > 1;
    const bool inter = spec.nodes > 1;

    // xGMI: a fully connected node's direct links, one per GPU pair; the profile's entry is one link.
    if (spec.fully_connected()) {
      const auto x_bw = written("node", "xgmi_bandwidth");
      const auto x_lat = written("node", "xgmi_latency");
      const auto* x =
          (x_bw && x_lat)
              ? nullptr
              : entry(LinkKind::Xgmi, intra, "cluster.node.xgmi_bandwidth and cluster.node.xgmi_latency",
                      fmt::format("{} GPUs per node talk over their direct xGMI links", spec.gpus_per_node));
      resolve(origins.xgmi_bandwidth, x_bw, x, "bandwidth_GBps", [&](const LinkParams& l) {
        spec.xgmi_bandwidth = l.bandwidth;
        return std::string();
      });
      resolve(origins.xgmi_latency, x_lat, x, "latency_us", [&](const LinkParams& l) {
        spec.xgmi_latency = l.latency;
        return std::string("the profile's GPU-to-GPU latency: one direct link, one hop");
      });
    }

    // NVLink
    const auto nv_bw = written("node", "nvlink_bandwidth");
    const auto nv_lat = written("node", "nvlink_latency");
    const auto* nv = (nv_bw && nv_lat) ? nullptr
                                       : entry(LinkKind::NvLink, intra && spec.nvswitch,
                                               "cluster.node.nvlink_bandwidth and cluster.node.nvlink_latency",
                                               fmt::format("{} GPUs per node talk over NVLink", spec.gpus_per_node));
    resolve(origins.nvlink_bandwidth, nv_bw, nv, "bandwidth_GBps", [&](const LinkParams& l) {
      spec.nvlink_bandwidth = l.bandwidth;
      return std::string();
    });
    resolve(origins.nvlink_latency, nv_lat, nv, "latency_us", [&](const LinkParams& l) {
      spec.nvlink_latency = l.latency * 0.5;
      return fmt::format("half the profile's GPU-to-GPU latency of {}: a path GPU -> NVSwitch -> GPU has two NVLink "
                         "links",
                         format_seconds(l.latency));
    });

    // PCIe (GPU <-> NIC): only paths between nodes use it.
    const auto pc_bw = written("node", "pcie_bandwidth");
    const auto pc_lat = written("node", "pcie_latency");
    const auto* pc = (pc_bw && pc_lat)
                         ? nullptr
                         : entry(LinkKind::Pcie, inter, "cluster.node.pcie_bandwidth and cluster.node.pcie_latency",
                                 "every path between nodes crosses PCIe from the GPU to its NIC");
    resolve(origins.pcie_bandwidth, pc_bw, pc, "bandwidth_GBps", [&](const LinkParams& l) {
      spec.pcie_bandwidth = l.bandwidth;
      return std::string();
    });
    resolve(origins.pcie_latency, pc_lat, pc, "latency_us", [&](const LinkParams& l) {
      spec.pcie_latency = l.latency;
      return std::string("the profile's GPU -> PCIe switch -> GPU latency for the GPU -> PCIe switch -> NIC link, "
                         "the same two hops");
    });

    // NICs and the fabric, from the profile's whole path between two nodes.
    const auto nic_bw = written("nic", "bandwidth");
    const auto nic_lat = written("nic", "latency");
    const auto fab_bw = written("fabric", "link_bandwidth");
    const auto fab_lat = written("fabric", "link_latency");
    const auto* net = (nic_bw && nic_lat && fab_bw)
                          ? nullptr
                          : entry(LinkKind::Network, inter,
                                  "cluster.nic.bandwidth, cluster.nic.latency and cluster.fabric.link_bandwidth",
                                  fmt::format("the cluster has {} nodes", spec.nodes));
    resolve(origins.nic_bandwidth, nic_bw, net, "bandwidth_GBps", [&](const LinkParams& l) {
      spec.nic_bandwidth = l.bandwidth;
      return std::string();
    });
    resolve(origins.nic_latency, nic_lat, net, "latency_us", [&](const LinkParams& l) {
      const Seconds nic = (l.latency - spec.pcie_latency * 2.0) * 0.5;
      if (nic.seconds() < 0)
        throw InputError({profile.file, l.line, "links[network].latency_us"},
                         fmt::format("the profile's network latency {} is the whole path between two nodes, and it is "
                                     "shorter than the path's two PCIe links of {} each, so no NIC latency is left",
                                     format_seconds(l.latency), format_seconds(spec.pcie_latency)),
                         "write cluster.nic.latency in the scenario, or a PCIe latency below half the network "
                         "latency (cluster.node.pcie_latency, or the profile's pcie entry)");
      spec.nic_latency = nic;
      return fmt::format("(network latency {} - 2 x PCIe latency {}) / 2: a path between two nodes on one leaf is "
                         "PCIe, NIC -> leaf, leaf -> NIC, PCIe, and takes the profile's network latency",
                         format_seconds(l.latency), format_seconds(spec.pcie_latency));
    });
    resolve(origins.fabric_bandwidth, fab_bw, net, "bandwidth_GBps", [&](const LinkParams& l) {
      spec.fabric_bandwidth = l.bandwidth;
      return std::string("the network bandwidth on every switch-to-switch link, so a path across the fabric, alone, "
                         "moves at the profile's rate; fabric.oversubscription sets how many there are");
    });
    origins.fabric_latency =
        fab_lat ? from_scenario(*fab_lat)
                : by_default("built-in default: a profile has no per-switch latency (its network latency is a whole "
                             "path between two nodes on one leaf); each switch-to-switch link adds this");
  }
};

// Without a profile: each parameter is the scenario's or the built-in default.
void scenario_links(const YamlNode& cluster, ClusterLinkOrigins& o)
{
  auto pick = [&](LinkParamOrigin& out, const char* section, const char* key) {
    const auto sec = cluster.get(section);
    const auto v = sec && sec->is_map() ? sec->get(key) : std::nullopt;
    if (v) {
      out.from = LinkParamOrigin::From::Scenario;
      out.where = v->where();
    } else {
      out.derivation = fmt::format("built-in default (topologies ClusterSpec): the scenario neither writes "
                                   "cluster.{}.{} nor names a profile",
                                   section, key);
    }
  };
  pick(o.nvlink_bandwidth, "node", "nvlink_bandwidth");
  pick(o.nvlink_latency, "node", "nvlink_latency");
  pick(o.xgmi_bandwidth, "node", "xgmi_bandwidth");
  pick(o.xgmi_latency, "node", "xgmi_latency");
  pick(o.pcie_bandwidth, "node", "pcie_bandwidth");
  pick(o.pcie_latency, "node", "pcie_latency");
  pick(o.nic_bandwidth, "nic", "bandwidth");
  pick(o.nic_latency, "nic", "latency");
  pick(o.fabric_bandwidth, "fabric", "link_bandwidth");
  pick(o.fabric_latency, "fabric", "link_latency");
}

nlohmann::ordered_json origin_json(const LinkParamOrigin& o)
{
  nlohmann::ordered_json j;
  switch (o.from) {
  case LinkParamOrigin::From::Scenario:
    j["from"] = "scenario";
    j["file"] = o.where.file;
    j["line"] = o.where.line;
    j["field"] = o.where.field;
    break;
  case LinkParamOrigin::From::Profile:
    j["from"] = "profile";
    j["file"] = o.where.file;
    j["line"] = o.where.line;
    j["entry"] = o.entry;
    j["source"] = o.source;
    if (!o.derivation.empty()) j["derivation"] = o.derivation;
    break;
  case LinkParamOrigin::From::Default:
    j["from"] = "default";
    j["note"] = o.derivation;
    break;
  }
  return j;
}

} // namespace

std::string nccl_system_of_gpu(const std::string& gpu_model)
{
  // CUDA's names: "NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA H200", "NVIDIA B200". H200 before H100
  // would not matter (neither name holds the other), but B200 must not be read as a "200" of anything else.
  for (const NcclSystem& s : kNcclSystems)
    if (gpu_model.find(s.gpu) != std::string::npos) return std::string(s.name);
  return {};
}

nlohmann::ordered_json nccl_system_json(const Scenario& sc)
{
  nlohmann::ordered_json j;
  j["system"] = sc.nccl.system.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(sc.nccl.system);
  j["library"] = sim::to_string(sc.nccl.library);
  if (sc.nccl.system_from == "scenario")
    j["from"] = fmt::format("scenario {}:{} nccl.system", sc.nccl.where.file, sc.nccl.where.line);
  else if (sc.nccl.system_from == "profile")
    j["from"] = fmt::format("profile {}: gpu.model '{}'", sc.profile_data->file, sc.profile_data->gpu_model);
  else if (sc.nccl.system_from == "library")
    j["from"] = "nccl.library: rccl (MI300X, the AMD node RCCL's model covers)";
  else if (sc.nccl.system_from == "node")
    j["from"] = "the cluster's fully connected node (MI300X on xGMI, the node RCCL's model covers)";
  else
    j["from"] = "the generation whose NVLink bandwidth per GPU is closest to the cluster's";
  return j;
}

nlohmann::ordered_json cluster_links_json(const Scenario& sc)
{
  const auto& c = sc.cluster;
  const auto& o = sc.link_origins;
  auto kind = [](BytesPerSec bw, Seconds lat, const LinkParamOrigin& bw_from, const LinkParamOrigin& lat_from) {
    nlohmann::ordered_json j;
    j["bandwidth_Bps"] = bw.bytes_per_sec();
    j["latency_s"] = lat.seconds();
    j["bandwidth_from"] = origin_json(bw_from);
    j["latency_from"] = origin_json(lat_from);
    return j;
  };
  nlohmann::ordered_json j;
  if (c.fully_connected())
    j["xgmi"] = kind(c.xgmi_bandwidth, c.xgmi_latency, o.xgmi_bandwidth, o.xgmi_latency);
  else
    j["nvlink"] = kind(c.nvlink_bandwidth, c.nvlink_latency, o.nvlink_bandwidth, o.nvlink_latency);
  j["pcie"] = kind(c.pcie_bandwidth, c.pcie_latency, o.pcie_bandwidth, o.pcie_latency);
  j["nic"] = kind(c.nic_bandwidth, c.nic_latency, o.nic_bandwidth, o.nic_latency);
  j["fabric"] = kind(c.fabric_bandwidth, c.fabric_latency, o.fabric_bandwidth, o.fabric_latency);
  return j;
}

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
    if (dash == std::string::npos || dash == 0)
      node.fail(fmt::format("'{}' is not a rank set", s), "write 'all', a range such as '0-7', or a list [0, 1, 2]");
    // Both ends inside the cluster before the range is expanded: '0-2000000000' must not fill memory first.
    auto end = [&](const std::string& part) {
      try {
        return static_cast<int>(parse_integer(part, 0, gpus - 1));
      } catch (const std::invalid_argument& e) {
        node.fail(fmt::format("in the rank set '{}': {} (the cluster has GPUs 0..{})", s, e.what(), gpus - 1),
                  "write 'all', a range of GPU ids such as '0-7', or a list [0, 1, 2]");
      }
    };
    const int a = end(s.substr(0, dash));
    const int b = end(s.substr(dash + 1));
    if (a > b) node.fail(fmt::format("range '{}' is empty", s), "write the lower GPU id first, e.g. '0-7'");
    for (int g = a; g <= b; ++g)
      out.push_back(g);
  } else {
    for (const auto& item : node.items())
      out.push_back(static_cast<int>(item.as_int(0, gpus - 1, fmt::format("the cluster has GPUs 0..{}", gpus - 1))));
  }
  std::set<int> seen;
  for (int g : out) {
    if (g < 0 || g >= gpus)
      node.fail(fmt::format("GPU {} does not exist: the cluster has GPUs 0..{}", g, gpus - 1),
                "use GPU ids inside the cluster");
    if (!seen.insert(g).second) node.fail(fmt::format("GPU {} is listed twice", g), "list each GPU once");
  }
  if (out.empty()) node.fail("the rank set is empty", "list at least one GPU");
  return out;
}

std::string to_string(JobSpec::Placement p)
{
  switch (p) {
  case JobSpec::Placement::Contiguous:
    return "contiguous";
  case JobSpec::Placement::RailAligned:
    return "rail_aligned";
  case JobSpec::Placement::Scattered:
    return "scattered";
  }
  return "?";
}

namespace {

void parse_jobs(const YamlNode& list, Scenario& sc, const std::string& paths_base)
{
  const int per_node = sc.cluster.gpus_per_node;
  int total = 0;
  for (const YamlNode& item : list.items()) {
    if (!item.is_map()) item.fail("a jobs entry is a map", "write '- {name: a, gpus: 64, workload: {...}}'");
    item.expect_keys({"name", "gpus", "placement", "workload"});
    JobSpec job;
    job.where = item.where();
    job.name = item.string_or("name", fmt::format("job{}", sc.jobs.size()));
    for (const auto& other : sc.jobs)
      if (other.name == job.name)
        item.at("name").fail(fmt::format("two jobs are named '{}'", job.name), "give every job a name of its own");
    const YamlNode gpus = item.at("gpus");
    job.gpus = static_cast<int>(gpus.as_int(1, 1 << 24, "a GPU count"));
    if (job.gpus < per_node || job.gpus % per_node != 0)
      gpus.fail(
          fmt::format("gpus = {} is not a positive multiple of the cluster's {} GPUs per node", job.gpus, per_node),
          "jobs take whole nodes: give a multiple of gpus_per_node");
    total += job.gpus;
    if (total > sc.cluster.gpus())
      gpus.fail(
          fmt::format("the jobs up to this one take {} GPUs, more than the cluster's {}", total, sc.cluster.gpus()),
          "give the jobs fewer GPUs, or the cluster more nodes");
    if (auto pl = item.get("placement")) {
      const std::string v = pl->as_string();
      if (v == "contiguous")
        job.placement = JobSpec::Placement::Contiguous;
      else if (v == "rail_aligned")
        job.placement = JobSpec::Placement::RailAligned;
      else if (v == "scattered")
        job.placement = JobSpec::Placement::Scattered;
      else
        pl->fail(fmt::format("unknown placement '{}'", v),
                 "use contiguous (the next free nodes), rail_aligned (starting at a leaf group boundary) or "
                 "scattered (free nodes at random, from the scenario's seed)");
    }
    job.workload = parse_workload(item.at("workload"), paths_base);
    if (job.workload.collective_model == WorkloadSpec::CollectiveModel::Profile)
      item.at("workload")
          .fail("collective_model: profile is not supported in jobs: a fitted time knows nothing of "
                "the other jobs",
                "remove collective_model, and let the jobs share the fabric (communication: coupled)");
    if (!sc.jobs.empty() && (job.workload.communication_given != sc.jobs.front().workload.communication_given ||
                             job.workload.replay.comm != sc.jobs.front().workload.replay.comm))
      item.at("workload")
          .fail("the jobs replay with different communication models",
                "give every job the same replay.communication (or none): they share one network");
    sc.jobs.push_back(std::move(job));
  }
  if (sc.jobs.empty()) list.fail("no jobs", "add at least one entry such as '- {name: a, gpus: 64, workload: {...}}'");
}

} // namespace

namespace {

// nccl.library and nccl.system agree with each other and with the cluster's node: NCCL's model covers NVSwitch nodes,
// RCCL's the fully connected 8x MI300X node (xGMI). Fills in the library a system implies, and the system RCCL
// implies (mi300x, the one AMD node modelled).
void check_library(Scenario& sc, const std::optional<InputLocation>& library_where,
                   const std::optional<InputLocation>& system_where)
{
  using models::CollectiveLibrary;
  const NcclSystem* sys = sc.nccl.system.empty() ? nullptr : find_nccl_system(sc.nccl.system);
  const topo::ClusterSpec& c = sc.cluster;
  const InputLocation system_at = system_where ? *system_where : sc.profile_data ? sc.profile_where : sc.cluster_where;
  if (library_where && sys && sys->library != sc.nccl.library)
    throw InputError(*library_where,
                     fmt::format("nccl.library is {}, and the system '{}' ({}) runs {}",
                                 sim::to_string(sc.nccl.library), sc.nccl.system,
                                 sc.nccl.system_from == "profile" ? "named by the profile's GPU model" : "nccl.system",
                                 sim::to_string(sys->library)),
                     "remove nccl.library (the system implies it), or name a system of that library: mi300x for "
                     "rccl; dgx_a100, dgx_h100, hgx_h200 or hgx_b200 for nccl");
  if (!library_where)
    sc.nccl.library = sys ? sys->library : c.fully_connected() ? CollectiveLibrary::Rccl : sc.nccl.library;
  if (sc.nccl.library == CollectiveLibrary::Rccl && !sys) {
    sc.nccl.system = "mi300x";
    sc.nccl.system_from = library_where ? "library" : "node";
  }
  const InputLocation at = library_where                     ? *library_where
                           : system_where || sc.profile_data ? system_at
                                                             : sc.cluster_where;
  if (sc.nccl.library == CollectiveLibrary::Rccl) {
    if (!c.fully_connected())
      throw InputError(at,
                       fmt::format("RCCL's model covers AMD MI300X nodes, whose 8 GPUs are fully connected over xGMI, "
                                   "and this cluster's node is an {} node",
                                   topo::to_string(c.node_kind)),
                       "describe the node as cluster.node: {kind: fully_connected, xgmi_bandwidth: 64 GB/s}, or use "
                       "nccl.library: nccl on NVIDIA nodes");
    if (c.gpus_per_node != 8) {
      InputLocation w = sc.cluster_where;
      w.field = "cluster.gpus_per_node";
      throw InputError(w,
                       fmt::format("RCCL's model covers 8x MI300X nodes (its rome models for gfx942), and this node "
                                   "has {} GPUs",
                                   c.gpus_per_node),
                       "set gpus_per_node: 8 (run fewer GPUs as a communicator of some of them)");
    }
  } else if (c.fully_connected()) {
    throw InputError(at,
                     "NCCL's model covers nodes whose GPUs sit on an NVSwitch; the fully connected node is modelled "
                     "for AMD MI300X with RCCL",
                     "write nccl: {library: rccl} (or system: mi300x) for an MI300X node, or describe an NVIDIA node "
                     "with node kind nvswitch");
  }
}

} // namespace

Scenario parse_scenario(const YamlNode& root, bool collectives_required, const std::string& paths_from)
{
  std::optional<InputLocation> library_where, system_where;
  std::vector<std::pair<const char*, InputLocation>> rccl_keys; // nccl.msccl, nccl.mscclpp, nccl.graph_capture given
  std::vector<std::pair<const char*, InputLocation>> nccl_only_keys; // nccl.nthreads, nccl.ll128_nthreads given
  root.expect_keys(
      {"name", "seed", "cluster", "network", "nccl", "collectives", "description", "profile", "workload", "jobs"});
  Scenario sc;
  sc.file = root.where().file;
  // Relative paths resolve beside this file, or beside `paths_from` (railyard sweep's points: written under the sweep's
  // output folder, their paths are the base scenario's).
  const std::string& paths_base = paths_from.empty() ? sc.file : paths_from;
  sc.name = root.string_or("name", "scenario");
  if (auto s = root.get("seed")) sc.sim.seed = s->as_uint64();
  const YamlNode cluster = root.at("cluster");
  sc.cluster = topo::parse_cluster(cluster);
  sc.cluster_where = cluster.where();
  if (auto p = root.get("profile")) {
    sc.profile = resolve_scenario_path(*p, p->as_string(), paths_base);
    sc.profile_where = p->where();
    sc.profile_data = std::make_shared<const calibration::Profile>(calibration::read_profile(sc.profile));
    ProfileLinks{cluster, *sc.profile_data, sc.profile_where, sc.cluster, sc.link_origins}.apply();
  } else {
    scenario_links(cluster, sc.link_origins);
  }
  if (auto net = root.get("network")) parse_network(*net, sc.sim, sc.records);
  if (auto nc = root.get("nccl")) {
    nc->expect_keys({"step_overhead", "library", "system", "algo", "proto", "latencies", "net_latency", "min_channels",
                     "max_channels", "nthreads", "ll128_nthreads", "msccl", "mscclpp", "graph_capture"});
    sc.nccl.where = nc->where();
    if (auto o = nc->get("step_overhead")) {
      sc.step_overhead = o->as_seconds();
      if (sc.step_overhead.seconds() < 0)
        o->fail("step_overhead is negative", "give a time of 0 or more, e.g. '0.5 us'");
    }
    if (auto sys = nc->get("system")) {
      sc.nccl.system = sys->as_string();
      sc.nccl.system_from = "scenario";
      system_where = sys->where();
      if (!find_nccl_system(sc.nccl.system))
        sys->fail(fmt::format("unknown system '{}' for NCCL's cost model", sc.nccl.system),
                  fmt::format("use one of: {} (the node layout NCCL's topology search sees)", nccl_system_names()));
    }
    if (auto lib = nc->get("library")) {
      const std::string name = lib->as_string();
      if (name == "nccl")
        sc.nccl.library = models::CollectiveLibrary::Nccl;
      else if (name == "rccl")
        sc.nccl.library = models::CollectiveLibrary::Rccl;
      else
        lib->fail(fmt::format("'{}' is not a collective library", name), "write nccl (NVIDIA GPUs) or rccl (AMD GPUs)");
      library_where = lib->where();
    }
    std::optional<YamlNode> algo = nc->get("algo"), proto = nc->get("proto");
    if (algo) sc.nccl.algo = algo->as_string();
    if (proto) sc.nccl.proto = proto->as_string();
    // NCCL_ALGO and NCCL_PROTO in NCCL's own syntax; a bad list names the line of the key it came from.
    if (algo) sc.nccl.overrides = models::NcclOverrides::parse(sc.nccl.algo, std::nullopt, algo->where());
    if (proto) {
      const auto p = models::NcclOverrides::parse(std::nullopt, sc.nccl.proto, proto->where());
      sc.nccl.overrides.protocols = p.protocols;
    }
    sc.nccl.latencies = nc->bool_or("latencies", true);
    // One network step's latency on this transport: one time for every protocol, or one per protocol.
    if (auto o = nc->get("net_latency")) {
      auto step_latency = [](const YamlNode& v) {
        const Seconds lat = v.as_seconds();
        if (!(lat.seconds() >= 0) || lat.seconds() > 1e-3)
          v.fail(fmt::format("net_latency {} s is not a network step's latency (0 to 1 ms)", lat.seconds()),
                 "give the latency of one network step of NCCL's pipeline on this transport, e.g. '20 us' (EFA on "
                 "P5, aws-ofi-nccl's tuner), or leave the key out for NCCL's InfiniBand constants");
        return lat;
      };
      std::array<Seconds, 3> lat{};
      if (o->is_map()) {
        o->expect_keys({"LL", "LL128", "Simple"});
        for (const auto& [key, p] : {std::pair{"LL", models::Protocol::LL}, std::pair{"LL128", models::Protocol::LL128},
                                     std::pair{"Simple", models::Protocol::Simple}}) {
          const auto v = o->get(key);
          if (!v)
            o->fail(fmt::format("net_latency has no time for protocol {}", key),
                    "give all three, e.g. {LL: 20 us, LL128: 20 us, Simple: 23 us}, or one time for every protocol");
          lat[static_cast<std::size_t>(p)] = step_latency(*v);
        }
      } else {
        lat.fill(step_latency(*o));
      }
      if (!sc.nccl.latencies)
        o->fail("net_latency is given with latencies: false, which turns every NCCL latency off",
                "remove one of the two keys");
      sc.nccl.net_latency = lat;
    }
    // NCCL_MIN_NCHANNELS / NCCL_MAX_NCHANNELS: NCCL clamps them to 1..MAXCHANNELS (64); a scenario says what it means.
    auto channel_limit = [&](const char* key, int& out) {
      if (auto v = nc->get(key)) out = static_cast<int>(v->as_int(1, 64, "NCCL's MAXCHANNELS"));
    };
    channel_limit("min_channels", sc.nccl.channels.min);
    channel_limit("max_channels", sc.nccl.channels.max);
    // NCCL_NTHREADS / NCCL_LL128_NTHREADS: threads per channel, as NCCL's getNthreads takes them (src/graph/tuning.cc):
    // a multiple of the warp size within NCCL's bounds. NCCL warns and clamps anything else; a scenario says what it
    // means, so anything else is refused.
    auto threads = [&](const char* key, const char* env, long lo, long hi, int& out) {
      if (auto v = nc->get(key)) {
        const auto nt = v->as_int(lo, hi, fmt::format("{}'s bounds", env));
        if (nt % 32 != 0)
          v->fail(fmt::format("{} ({}) is {}, not a multiple of the warp size (32)", key, env, nt),
                  fmt::format("give a multiple of 32 from {} to {}", lo, hi));
        out = static_cast<int>(nt);
        nccl_only_keys.emplace_back(key, v->where());
      }
    };
    threads("nthreads", "NCCL_NTHREADS", 64, 512, sc.nccl.nthreads); // 2 warps .. NCCL_SIMPLE_MAX_NTHREADS
    threads("ll128_nthreads", "NCCL_LL128_NTHREADS", 160, 640, sc.nccl.ll128_nthreads); // MAX / 4 .. LL128_MAX
    // RCCL_MSCCL_ENABLE, RCCL_MSCCLPP_ENABLE, and whether the calls are captured into a HIP graph (MSCCL++ runs only
    // then): RCCL's default path on one 8x MI300X node (models/rccl_tuning.hpp rccl_default_kernel).
    for (const char* key : {"msccl", "mscclpp", "graph_capture"})
      if (auto v = nc->get(key)) rccl_keys.emplace_back(key, v->where());
    sc.nccl.rccl_calls.msccl = nc->bool_or("msccl", true);
    sc.nccl.rccl_calls.mscclpp = nc->bool_or("mscclpp", true);
    sc.nccl.rccl_calls.graph_captured = nc->bool_or("graph_capture", false);
  }
  // A profile's links are measured rates, below the NVLink line rate NCCL's model keys the generation on (an H200's
  // 367 GB/s is nearer A100's 300 than H100's 450 by ratio), so the profile's GPU model names the system instead.
  if (sc.nccl.system.empty() && sc.profile_data) {
    sc.nccl.system = nccl_system_of_gpu(sc.profile_data->gpu_model);
    if (!sc.nccl.system.empty()) sc.nccl.system_from = "profile";
  }
  check_library(sc, library_where, system_where);
  // RCCL does not relay through PXN unless asked: RCCL 2.21.5 gives NCCL_PXN_DISABLE the default 1 (ROCm/rccl 0cbce2a7
  // src/graph/paths.cc, NCCL_PARAM(PxnDisable, "PXN_DISABLE", 1)), where NCCL's is 0. `network.pxn` given wins.
  if (sc.nccl.library == models::CollectiveLibrary::Rccl) {
    const auto net = root.get("network");
    if (!net || !net->get("pxn")) sc.sim.pxn = false;
  }
  // A key of one library's given for the other: refused at the first such key, which the message names.
  const auto refuse_key = [](const std::vector<std::pair<const char*, InputLocation>>& keys, std::string_view what,
                             const std::string& fix) {
    InputLocation w = keys.front().second;
    w.field = std::string("nccl.") + keys.front().first;
    throw InputError(w, fmt::format("nccl.{} {}", keys.front().first, what), fix);
  };
  if (sc.nccl.library == models::CollectiveLibrary::Rccl && !nccl_only_keys.empty())
    refuse_key(nccl_only_keys,
               "sets NCCL's threads per channel, and RCCL's thread counts (its own defaults and bounds per GPU) are "
               "not modelled",
               "remove the key for this RCCL scenario");
  if (sc.nccl.library != models::CollectiveLibrary::Rccl && !rccl_keys.empty())
    refuse_key(rccl_keys,
               "sets how RCCL takes calls (its MSCCL / MSCCL++ kernels on one AMD MI300X node), and this scenario "
               "runs NCCL",
               "remove the key, or use nccl: {library: rccl} on a fully connected MI300X node");
  if (!collectives_required && !root.has("collectives")) return sc;
  if (auto jobs = root.get("jobs")) {
    if (root.has("collectives") || root.has("workload"))
      jobs->fail(
          "a scenario runs collectives, a workload or jobs, not two of them",
          "put the workload into jobs: as a job of its own, or move the collectives into a scenario of their own");
    parse_jobs(*jobs, sc, paths_base);
    sc.workload = sc.jobs.front().workload;
    return sc;
  }
  if (auto wl = root.get("workload")) {
    if (root.has("collectives"))
      root.at("collectives")
          .fail("a scenario runs either collectives or a workload, not both",
                "move the collectives into a scenario of their own");
    sc.workload = parse_workload(*wl, paths_base);
    if (sc.workload->collective_model == WorkloadSpec::CollectiveModel::Profile) {
      const InputLocation& at = sc.workload->collective_model_where;
      if (!sc.profile_data)
        throw InputError(at,
                         "collective_model: profile takes the profile's fitted collective costs, and the scenario "
                         "names no profile",
                         "add 'profile: <path>/calibration/profiles/<system>.yaml' to the scenario, or use "
                         "collective_model: schedule");
      if (sc.profile_data->collectives.empty())
        throw InputError(at,
                         fmt::format("collective_model: profile takes the profile's fitted collective costs, and the "
                                     "profile {} has no collectives: entries, so every collective would fall back to "
                                     "its schedule",
                                     sc.profile_data->file),
                         "calibrate the profile from nccl-tests logs (railyard calibrate), or use collective_model: "
                         "schedule");
    }
    return sc;
  }
  const YamlNode list = root.at("collectives");
  const auto items = list.items();
  if (items.empty())
    list.fail("no collectives to run", "add at least one entry such as '- {op: all_reduce, size: 1 GiB}'");
  // Every call of a run is a row of collectives.csv and a result kept in memory: at most kMaxCalls in all.
  constexpr long long kMaxCalls = 1000000;
  long long calls = 0;
  for (const auto& item : items) {
    CollectiveSpec spec = parse_entry(item, sc.cluster.gpus());
    if (auto r = item.get("repeat")) {
      spec.repeat = static_cast<int>(r->as_int(1, kMaxCalls, "how many times to run the call"));
    }
    calls += spec.repeat;
    if (calls > kMaxCalls)
      item.fail(fmt::format("the collectives list runs more than {} calls (entries x repeat) up to here", kMaxCalls),
                "run fewer calls in one scenario, or split it into several runs");
    sc.collectives.push_back(std::move(spec));
  }
  return sc;
}

Scenario parse_scenario(const YamlNode& root)
{
  return parse_scenario(root, true, {});
}

Scenario parse_scenario(const YamlNode& root, bool collectives_required)
{
  return parse_scenario(root, collectives_required, {});
}

Scenario load_scenario(const std::string& path, const std::string& paths_from)
{
  return parse_scenario(YamlNode::load_file(path), true, paths_from);
}

Scenario load_scenario_cluster(const std::string& path)
{
  return parse_scenario(YamlNode::load_file(path), false, {});
}

std::vector<std::string> Scenario::input_files() const
{
  std::vector<std::string> files;
  if (!file.empty()) files.push_back(file);
  if (!profile.empty()) files.push_back(profile);
  auto add = [&files](const WorkloadSpec& w) {
    files.insert(files.end(), w.trace_paths.begin(), w.trace_paths.end());
    if (!w.comm_group_file.empty()) files.push_back(w.comm_group_file);
  };
  if (workload) add(*workload);
  for (const auto& job : jobs)
    add(job.workload);
  return files;
}

} // namespace railyard::scenario
