// RCCL 2.21.5's cost model (src/graph/tuning.cc ncclTopoTuneModel, ncclTopoGetAlgoTime, the __HIP_PLATFORM_AMD__
// branches), its pick (src/enqueue.cc topoGetAlgoInfo, getChannnelThreadInfo) and what its rome models give an 8x
// MI300X node (src/graph/rome_models.cc, src/graph/connect.cc ncclTopoPostset). Each block names the RCCL code it
// follows. RCCL computes in float, this in double: only an exact tie could pick differently.
#include "railyard/models/rccl_tuning.hpp"

#include "railyard/models/lowering.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <stdexcept>

namespace railyard::models {

#include "../data/rccl_tuning_2_21_5.inc"

namespace {

const RcclConstants& k()
{
  return kRccl_2_21_5;
}

constexpr int kTree = static_cast<int>(Algorithm::Tree);
constexpr int kRing = static_cast<int>(Algorithm::Ring);
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
constexpr int kMi300xTuningModel = 5; // rome_model_79 and rome_model_81 options: "tuning=5"

std::optional<int> function_index(CollectiveKind kind)
{
  switch (kind) {
  case CollectiveKind::Broadcast:
    return 0;
  case CollectiveKind::Reduce:
    return 1;
  case CollectiveKind::AllGather:
    return 2;
  case CollectiveKind::ReduceScatter:
    return 3;
  case CollectiveKind::AllReduce:
    return 4;
  case CollectiveKind::AllToAll:
  case CollectiveKind::SendRecv:
    return std::nullopt;
  }
  return std::nullopt;
}

bool is_ag_rs(CollectiveKind kind)
{
  return kind == CollectiveKind::AllGather || kind == CollectiveKind::ReduceScatter;
}
bool is_bcast_reduce(CollectiveKind kind)
{
  return kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
}
bool is_nvls(Algorithm a)
{
  return a == Algorithm::Nvls || a == Algorithm::NvlsTree;
}
bool is_collnet(Algorithm a)
{
  return a == Algorithm::CollNetDirect || a == Algorithm::CollNetChain;
}

// src/include/utils.h log2i: 0 for 0 and 1 (unlike NCCL 2.26's log2Down, which gives -1 for 0).
int log2i(std::uint64_t n)
{
  int l = 0;
  while (n >>= 1)
    ++l;
  return l;
}

double gbps(BytesPerSec b)
{
  return b.bytes_per_sec() / units::kGB;
}
double us(Seconds s)
{
  return s.seconds() * 1e6;
}

// IsArchMatch (src/misc/archinfo.cc) compares a prefix of gcnArchName.
bool arch_match(const std::string& gfx, const char* target)
{
  return gfx.rfind(target, 0) == 0;
}
bool gfx94(const NcclTuningInput& in)
{
  return arch_match(in.rccl.gfx, "gfx94");
}

const RcclTuningModel& tuning(const NcclTuningInput& in)
{
  return k().tuning_models[static_cast<std::size_t>(in.rccl.tuning_model)];
}

const NcclGraph& graph_for(const NcclTuningInput& in, Algorithm a)
{
  // src/init.cc: graphs[] = { tree, ring, collnetDirect, collnetChain, nvls, nvls }.
  switch (a) {
  case Algorithm::Ring:
    return in.ring;
  case Algorithm::Nvls:
  case Algorithm::NvlsTree:
    return in.nvls;
  default:
    return in.tree;
  }
}

double net_overhead_us(CpuVendor cpu)
{
  switch (cpu) {
  case CpuVendor::Intel:
    return k().net_overhead_intel_us;
  case CpuVendor::Amd:
    return k().net_overhead_amd_us;
  case CpuVendor::Other:
    return k().net_overhead_other_us;
  }
  return k().net_overhead_other_us;
}

struct Entry {
  double lat_us = 0;
  double bw_gbps = 0; // 0: RCCL leaves comm->bandwidths at 0
};

// One (latency, bandwidth) of ncclTopoTuneModel before the enable rules and NCCL_ALGO / NCCL_PROTO.
Entry model_entry(const NcclTuningInput& in, Algorithm algo, Protocol proto)
{
  const CollectiveKind coll = in.collective;
  const bool allreduce = coll == CollectiveKind::AllReduce;
  const bool ag_rs = is_ag_rs(coll);
  const int a = static_cast<int>(algo);
  const int p = static_cast<int>(proto);
  const int nranks = in.nranks, nnodes = in.nnodes;
  if (algo == Algorithm::Pat) return {}; // not an RCCL 2.21.5 algorithm
  if (is_bcast_reduce(coll) && algo != Algorithm::Ring) return {};
  if (ag_rs && algo != Algorithm::Ring && algo != Algorithm::Nvls && algo != Algorithm::CollNetDirect) return {};
  // "if (a == TREE && p == SIMPLE && IsArchMatch(gcn, "gfx94") && nodes[GPU].count == nRanks) continue;"
  if (algo == Algorithm::Tree && proto == Protocol::Simple && gfx94(in) && nnodes == 1) return {};
  if (is_nvls(algo) && proto != Protocol::Simple) return {};

  const RcclTuningModel& m = tuning(in);
  const NcclGraph& g = graph_for(in, algo);
  const int nsteps = allreduce ? 2 * (nranks - 1) : ag_rs ? nranks - 1 : nranks;
  // RCCL counts 2 * nNodes network steps for a ring all_reduce (NCCL: 2 * (nNodes - 1)).
  const int inter_steps = allreduce ? (nnodes > 1 ? 2 * nnodes : 0) : ag_rs ? nnodes - 1 : nnodes;

  // Bandwidth: graph channels x per-channel bandwidth (comm->topo->baseBw is 0 for the MI300X models), x bwRatio.
  const double bw = (nnodes <= 2 || is_collnet(algo)) ? gbps(g.bw_intra) : gbps(g.bw_inter);
  double bus = g.channels * bw * m.bw_ratio[nnodes <= 2 ? 0 : 1][a][p];
  if (algo == Algorithm::Ring && proto == Protocol::LL && is_bcast_reduce(coll) && gfx94(in) && nnodes == 1)
    bus *= k().gfx94_ring_ll_bcast_reduce_factor;
  if (!(algo == Algorithm::CollNetDirect && ag_rs)) {
    const double ratio = algo == Algorithm::Ring ? static_cast<double>(nranks) / nsteps
                         : is_nvls(algo)         ? 5.0 / 6.0
                                                 : k().tree_ratio;
    bus *= ratio;
  }

  // Latency: baseLat + hops priced by the tuning model's hwLat.
  const auto& hw = m.hw_latency_us;
  const int intra_hw = g.type_intra == NcclPath::Nvl ? kHwNvlink : kHwPci;
  const int ring_hw = nnodes == 1 ? intra_hw : kHwNet;
  double lat = k().base_latency_us[a][p];
  double intra_lat = hw[intra_hw][a][p];
  // RCCL takes the graph's latencyInter instead of hwLat when it has one (NCCL adds them).
  double inter_lat = g.latency_inter.seconds() > 0 ? us(g.latency_inter) : hw[kHwNet][a][p];
  if (proto == Protocol::Simple) inter_lat += us(g.latency_inter);
  if (algo == Algorithm::Ring) {
    if (is_bcast_reduce(coll)) {
      if (g.same_channels) {
        lat += hw[ring_hw][kRing][p];
      } else {
        const double step = proto == Protocol::Simple ? hw[ring_hw][kTree][p] : hw[ring_hw][kRing][p];
        lat += nsteps * step;
      }
    } else {
      double overhead = 0;
      if (nnodes > 1)
        overhead = net_overhead_us(in.cpu) * (proto == Protocol::Simple ? k().net_overhead_simple_multiplier : 1.0);
      intra_lat = std::max(intra_lat, overhead);
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
  } else if (algo == Algorithm::Tree) {
    lat += 2 * ((nranks / nnodes - 1) * intra_lat + log2i(static_cast<std::uint64_t>(nnodes)) * inter_lat);
  } else if (algo == Algorithm::CollNetDirect) {
    lat += 2 * (std::min(1, nranks / nnodes - 1) * intra_lat + (nranks / nnodes - 1) * 0.4) + inter_lat;
  } else if (algo == Algorithm::CollNetChain) {
    lat += 2 * (nranks / nnodes - 1) * intra_lat + inter_lat;
  } else if (algo == Algorithm::Nvls) {
    if (nnodes > 1) lat += hw[kHwNet][a][p];
  } else if (algo == Algorithm::NvlsTree) {
    lat += 2 * (nnodes - 1) * hw[kHwNet][a][p];
  }
  return {lat, bus > 0 ? bus : 0};
}

// The algorithm and protocol enables at the end of ncclTopoTuneModel, from NCCL_ALGO / NCCL_PROTO (one list for
// every collective: RCCL 2.21.5's parseList has no per-function sections; rccl_validate checks the rows agree).
bool algorithm_enabled(const NcclTuningInput& in, Algorithm algo)
{
  if (algo == Algorithm::Pat) return false;
  const auto& row = in.overrides.algorithms[4];
  std::array<bool, kRcclAlgorithms> on{};
  for (int a = 0; a < kRcclAlgorithms; ++a)
    on[static_cast<std::size_t>(a)] = row[static_cast<std::size_t>(a)];
  if (in.nnodes == 1) on[static_cast<int>(Algorithm::NvlsTree)] = false;
  // Without CollNet support: CollNet off, NVLS off across nodes, and "If user has hard set NCCL_ALGO=COLLNET, ignore
  // it": with Ring, Tree, NVLS and NVLSTree all off, Ring and Tree come back.
  on[static_cast<int>(Algorithm::CollNetDirect)] = on[static_cast<int>(Algorithm::CollNetChain)] = false;
  if (in.nnodes > 1) on[static_cast<int>(Algorithm::Nvls)] = false;
  if (!on[kRing] && !on[kTree] && !on[static_cast<int>(Algorithm::Nvls)] && !on[static_cast<int>(Algorithm::NvlsTree)])
    on[kRing] = on[kTree] = true;
  return on[static_cast<std::size_t>(algo)];
}

bool protocol_enabled(const NcclTuningInput& in, Algorithm algo, Protocol proto)
{
  const NcclEnable e = in.overrides.protocols[4][static_cast<std::size_t>(proto)];
  if (proto == Protocol::LL && arch_match(in.rccl.gfx, "gfx12")) return false; // "Disable LL protocol on gfx12xx"
  if (e == NcclEnable::Auto) {
    // LL128 by default only on gfx90a with the rome model's ll128Enabled (ENABLE_LL128 builds); no MI300X model
    // sets ll128Enabled, so it is off on gfx942.
    (void)algo;
    return false;
  }
  return e == NcclEnable::On;
}

// comm->bandwidths / comm->latencies for the call's collective after the enables, including the fallback "at least
// set ring algo available" (the ring bandwidths from before the enables) when nothing is left.
struct Table {
  std::array<std::array<Entry, kNcclProtocols>, kRcclAlgorithms> e{};
  std::array<Entry, kNcclProtocols> ring_backup{}; // comm->ringbdw (with the ring latencies)
};

Table tune(const NcclTuningInput& in)
{
  Table t;
  bool available = false;
  for (int a = 0; a < kRcclAlgorithms; ++a)
    for (int p = 0; p < kNcclProtocols; ++p) {
      const auto algo = static_cast<Algorithm>(a);
      const auto proto = static_cast<Protocol>(p);
      Entry e = model_entry(in, algo, proto);
      if (algo == Algorithm::Ring) t.ring_backup[static_cast<std::size_t>(p)] = e;
      if (!algorithm_enabled(in, algo) || !protocol_enabled(in, algo, proto)) e.bw_gbps = 0;
      available = available || e.bw_gbps > 0;
      t.e[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)] = e;
    }
  if (!available)
    for (int p = 0; p < kNcclProtocols; ++p)
      t.e[kRing][static_cast<std::size_t>(p)] = t.ring_backup[static_cast<std::size_t>(p)];
  return t;
}

// ncclTopoGetAlgoTime's AMD branch: bandwidth x correction factor by size, then latency + bytes / bandwidth.
std::optional<double> algo_time_us(const NcclTuningInput& in, Algorithm algo, Protocol proto, Entry e)
{
  if (e.bw_gbps <= 0) return std::nullopt;
  const auto nbytes = static_cast<std::uint64_t>(in.bytes.bytes());
  const int idx = std::min(log2i(nbytes >> 6), 26);
  const auto& m = tuning(in);
  const auto p = static_cast<std::size_t>(proto);
  double bw = e.bw_gbps;
  if (algo == Algorithm::Tree)
    bw *= m.tree_correction[p][static_cast<std::size_t>(idx)];
  else if (algo == Algorithm::Ring && in.nnodes > 1)
    bw *= m.ring_correction[p][static_cast<std::size_t>(idx)];
  if (bw <= 0) return std::nullopt; // a zero factor (LL128 rows) prices the call at infinity
  return e.lat_us + static_cast<double>(nbytes) / (1000.0 * bw);
}

InputLocation field_of(const InputLocation& where, const std::string& sub)
{
  InputLocation w = where;
  if (w.field.empty()) w.field = sub;
  return w;
}

[[noreturn]] void refuse(const InputLocation& where, CollectiveKind kind, Algorithm a, std::optional<Protocol> p,
                         const std::string& why, const std::string& fix)
{
  const std::string what =
      p ? fmt::format("{} with algorithm {} and protocol {}", to_string(kind), nccl_name(a), nccl_name(*p))
        : fmt::format("{} with algorithm {}", to_string(kind), nccl_name(a));
  throw InputError(where, fmt::format("RCCL cannot run {}: {}", what, why), fix);
}

} // namespace

const RcclConstants& rccl_constants()
{
  return k();
}

// ---------------------------------------------------------------------------------------------------------------
// ncclTopoTuneModel, ncclTopoGetAlgoTime

std::optional<NcclAlgoCost> rccl_algo_cost(const NcclTuningInput& in, Algorithm a, Protocol p)
{
  if (!function_index(in.collective) || in.nranks <= 1 || a == Algorithm::Pat) return std::nullopt;
  const Entry e = tune(in).e[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
  if (e.bw_gbps <= 0) return std::nullopt;
  return NcclAlgoCost{units::us(e.lat_us), units::GBps(e.bw_gbps)};
}

std::optional<Seconds> rccl_predict(const NcclTuningInput& in, Algorithm a, Protocol p)
{
  if (!function_index(in.collective)) return std::nullopt;
  if (in.nranks <= 1) // topoGetAlgoInfo: one rank runs Ring/Simple (a local copy)
    return a == Algorithm::Ring && p == Protocol::Simple ? std::optional<Seconds>(Seconds(0)) : std::nullopt;
  if (a == Algorithm::Pat) return std::nullopt;
  const Entry e = tune(in).e[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
  const auto t = algo_time_us(in, a, p, e);
  if (!t) return std::nullopt;
  return units::us(*t);
}

std::vector<NcclPrediction> rccl_table(const NcclTuningInput& in)
{
  std::vector<NcclPrediction> out;
  for (int a = 0; a < kNcclAlgorithms; ++a)
    for (int p = 0; p < kNcclProtocols; ++p) {
      const auto algo = static_cast<Algorithm>(a);
      const auto proto = static_cast<Protocol>(p);
      out.push_back({algo, proto, rccl_predict(in, algo, proto)});
    }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// topoGetAlgoInfo, getChannnelThreadInfo

std::optional<NcclChoice> rccl_choose(const NcclTuningInput& in)
{
  if (!function_index(in.collective)) return std::nullopt;
  std::optional<NcclChoice> best, backup;
  if (in.nranks <= 1) {
    best = NcclChoice{Algorithm::Ring, Protocol::Simple, 0, 0, Seconds(0)};
  } else {
    const Table t = tune(in);
    for (int a = 0; a < kRcclAlgorithms; ++a) {
      const auto algo = static_cast<Algorithm>(a);
      if (is_collnet(algo) || is_nvls(algo)) continue; // collNetSupport and nvlsSupport are 0 on AMD
      for (int p = 0; p < kNcclProtocols; ++p) {
        const auto proto = static_cast<Protocol>(p);
        // "if (p == NCCL_PROTO_LL128 && comm->topo->type != RCCL_TOPO_XGMI_ALL) continue;": a matched rome model
        // adds RCCL_TOPO_4P2H_ROME to the type.
        if (proto == Protocol::LL128 && in.rccl.rome_model != 0) continue;
        Entry e = t.e[static_cast<std::size_t>(a)][static_cast<std::size_t>(p)];
        bool is_backup = false;
        if (algo == Algorithm::Ring && e.bw_gbps <= 0) { // "try back up RING algorithm"
          e = t.ring_backup[static_cast<std::size_t>(p)];
          is_backup = true;
        }
        const auto time = algo_time_us(in, algo, proto, e);
        if (!time) continue;
        auto& slot = is_backup ? backup : best;
        if (!slot || *time < us(slot->time)) slot = NcclChoice{algo, proto, 0, 0, units::us(*time)};
      }
    }
    if (!best) best = backup;
    if (!best) return std::nullopt; // "Error : no algorithm/protocol available"
  }

  // getChannnelThreadInfo (AMD): channels from comm->nChannels down while bytes < nc x nt x threshold; the thread
  // count is never reduced on AMD and no sync warps are added.
  const Algorithm algo = best->algorithm;
  const Protocol proto = best->protocol;
  // comm->maxThreads (HIP branch of ncclTopoTuneModel): Ring/Simple 256 up to PCI_BW of ring bandwidth, else
  // NCCL_SIMPLE_MAX_NTHREADS; other Simple and LL NCCL_MAX_NTHREADS; LL128 NCCL_LL128_MAX_NTHREADS.
  int nt = k().max_threads;
  if (algo == Algorithm::Ring && proto == Protocol::Simple)
    nt = gbps(in.ring.bw_intra) * in.ring.channels <= k().pci_bw_gbps ? 256 : k().simple_max_threads;
  if (proto == Protocol::LL128) nt = k().ll128_max_threads;
  const double threshold =
      proto == Protocol::LL ? static_cast<double>(k().ll_thread_threshold) * (algo == Algorithm::Ring ? in.nranks : 1)
      : proto == Protocol::LL128 ? static_cast<double>(k().ll128_thread_threshold)
                                 : static_cast<double>(k().simple_thread_threshold);
  int nc = std::max(1, in.comm_channels);
  while (in.bytes.bytes() < static_cast<double>(nc) * nt * threshold && nc >= 2)
    --nc;
  best->channels = nc;
  best->threads = nt;
  return best;
}

// ---------------------------------------------------------------------------------------------------------------
// Refusals and input checks

void rccl_check_request(const NcclTuningInput& in, Algorithm a, std::optional<Protocol> p, const InputLocation& where)
{
  const CollectiveKind kind = in.collective;
  const auto w = field_of(where, "algorithm");
  if (!function_index(kind))
    refuse(w, kind, a, p,
           "RCCL runs it as grouped point-to-point sends and receives (or MSCCL on one MI300X node); NCCL_ALGO and "
           "NCCL_PROTO do not apply",
           "remove the algorithm and protocol for this collective");
  switch (a) {
  case Algorithm::CollNetDirect:
  case Algorithm::CollNetChain:
    refuse(w, kind, a, p, "CollNet needs a CollNet (SHARP) network plugin, which Railyard does not model",
           "use Ring or Tree, or leave the algorithm to the cost model");
  case Algorithm::Nvls:
  case Algorithm::NvlsTree:
    refuse(w, kind, a, p,
           fmt::format("NVLS needs NVSwitch multicast (NVLink SHARP); AMD GPUs ({}) have none, RCCL's nvlsSupport "
                       "is 0 and its tuning model gives NVLS zero bandwidth",
                       in.rccl.gfx),
           "use Ring or Tree");
  case Algorithm::Pat:
    refuse(w, kind, a, p,
           "RCCL 2.21.5 (NCCL 2.21.5 base) has no PAT algorithm: NCCL_NUM_ALGORITHMS is 6, PAT came with NCCL 2.23",
           "use Ring");
  case Algorithm::Tree:
    if (kind != CollectiveKind::AllReduce)
      refuse(w, kind, a, p, "RCCL implements Tree only for all_reduce (it would fall back to Ring)", "use Ring");
    if (p && *p == Protocol::Simple && gfx94(in) && in.nnodes == 1)
      refuse(field_of(where, "protocol"), kind, a, p,
             "RCCL's ncclTopoTuneModel skips Tree/Simple on one gfx94x node (src/graph/tuning.cc), so it never runs",
             "use Tree with LL, or Ring");
    break;
  case Algorithm::Ring:
    break;
  }
  if (p && *p == Protocol::LL128)
    refuse(field_of(where, "protocol"), kind, a, p,
           fmt::format("RCCL does not run LL128 here: tuning model {} gives it bwRatio {} (zero bandwidth), RCCL "
                       "enables LL128 by default only on gfx90a, and topoGetAlgoInfo skips it on a topology matched "
                       "to a rome model",
                       in.rccl.tuning_model,
                       tuning(in).bw_ratio[in.nnodes <= 2 ? 0 : 1][static_cast<std::size_t>(a)]
                                          [static_cast<std::size_t>(Protocol::LL128)]),
           "use protocol LL or Simple");
}

void rccl_validate(const NcclTuningInput& in, const InputLocation& where)
{
  auto bad = [&](const std::string& field, const std::string& rule, const std::string& fix) {
    InputLocation w = where;
    w.field = where.field.empty() ? field : where.field + "." + field;
    throw InputError(w, rule, fix);
  };
  if (in.nranks < 1)
    bad("nranks", fmt::format("nranks is {}; a communicator has at least one rank", in.nranks), "set nranks >= 1");
  if (in.nnodes < 1 || in.gpus_per_node < 1 || in.nnodes * in.gpus_per_node != in.nranks)
    bad("nnodes", fmt::format("nranks {} is not nnodes {} x gpus_per_node {}", in.nranks, in.nnodes, in.gpus_per_node),
        "RCCL's model assumes the same number of ranks on every node; make nranks = nnodes * gpus_per_node");
  if (in.bytes.bytes() < 0) bad("bytes", "bytes is negative", "give the buffer size in bytes, 0 or more");
  if (in.rccl.tuning_model < 0 || in.rccl.tuning_model >= static_cast<int>(k().tuning_models.size()))
    bad("rccl.tuning_model", fmt::format("tuning model {} is outside rcclTuningModel[0..5]", in.rccl.tuning_model),
        "use the rome model's tuning= option (5 for MI300X), or 0 where no rome model matched");
  if (in.rccl.gfx != "gfx942")
    bad("rccl.gfx", fmt::format("gfx \"{}\": the RCCL model covers MI300X (gfx942) only", in.rccl.gfx),
        "use gfx942 (node_spec(NodeLayout::Mi300x))");
  if (in.nranks > 1 && (in.comm_channels < 1 || in.ring.channels < 1 || in.tree.channels < 1))
    bad("comm_channels", "the ring and tree graphs and the communicator need at least one channel",
        "take the channel counts from derive_graphs() or from RCCL's 'Pattern ...' and 'coll channels' log lines");
  for (const auto* g : {&in.ring, &in.tree, &in.nvls})
    if (g->bw_intra.bytes_per_sec() < 0 || g->bw_inter.bytes_per_sec() < 0 || g->channels < 0)
      bad("graph", "graph bandwidths and channel counts cannot be negative", "use the values RCCL's search prints");
  for (int f = 0; f < kNcclFunctions; ++f)
    if (in.overrides.algorithms[static_cast<std::size_t>(f)] != in.overrides.algorithms[4] ||
        in.overrides.protocols[static_cast<std::size_t>(f)] != in.overrides.protocols[4])
      bad("overrides",
          "RCCL 2.21.5 reads NCCL_ALGO / NCCL_PROTO as one list for every collective (src/graph/tuning.cc "
          "parseList); per-function sections such as \"allreduce:tree\" came with later NCCL",
          "write NCCL_ALGO / NCCL_PROTO as a plain comma list, e.g. \"ring,tree\" or \"^LL\"");
}

// ---------------------------------------------------------------------------------------------------------------
// Rome models: the graphs and rings of an 8x MI300X node

namespace {

// parseGraph (src/graph/rome_models.cc): rings separated by '|', "Nk" tokens name NICs; a ring whose GPU count is not
// the node's is ignored.
std::vector<std::vector<int>> parse_rings(const char* text, int ngpus)
{
  std::vector<std::vector<int>> out;
  std::stringstream all(text);
  std::string ring;
  while (std::getline(all, ring, '|')) {
    std::stringstream ss(ring);
    std::string tok;
    std::vector<int> gpus;
    while (ss >> tok)
      if (tok[0] != 'N') gpus.push_back(std::stoi(tok));
    if (static_cast<int>(gpus.size()) == ngpus) out.push_back(gpus);
  }
  return out;
}

void check_node(const NodeSpec& node, int nnodes)
{
  const InputLocation where{};
  auto bad = [&](const std::string& field, const std::string& rule, const std::string& fix) {
    InputLocation w = where;
    w.field = "node." + field;
    throw InputError(w, rule, fix);
  };
  if (nnodes < 1) bad("nnodes", fmt::format("nnodes is {}", nnodes), "use one node or more");
  if (node.gfx != "gfx942")
    bad("gfx", fmt::format("gfx \"{}\": RCCL's graphs are modelled for MI300X (gfx942) only", node.gfx),
        "use node_spec(NodeLayout::Mi300x)");
  if (node.gpus != 8 || node.nvlinks_per_gpu != 7)
    bad("gpus",
        fmt::format("{} GPUs with {} xGMI links each: RCCL's MI300X rome models (rome_model_79, rome_model_81) "
                    "are 8 GPUs on a fully connected mesh, 7 links each",
                    node.gpus, node.nvlinks_per_gpu),
        "use all 8 GPUs of a node");
  if (node.xgmi_link_bw.bytes_per_sec() <= 0)
    bad("xgmi_link_bw", "an xGMI link needs a positive bandwidth", "use 48 GB/s (GFX94X_XGMI_WIDTH)");
  if (nnodes > 1 && node.nics != 8)
    bad("nics",
        fmt::format("{} NICs per node: across nodes RCCL's MI300X choice is modelled for rome_model_81, one NIC per "
                    "GPU (8); other NIC counts match other rome models or none",
                    node.nics),
        "use 8 NICs per node");
}

struct RcclLayout {
  NcclSystemGraphs graphs;
  std::vector<std::vector<int>> channel_orders; // one per comm channel
};

RcclLayout layout(const NodeSpec& node, int nnodes, NcclChannelLimits limits, int host)
{
  check_node(node, nnodes);
  const int ngpus = node.gpus;
  // parseA2a8P: a one-node communicator has no NIC (ncclTopoTrimSystem removes them when all ranks are local and the
  // GPUs are all xGMI-connected), so pattern "4040" and rome_model_79; several nodes: "4444" and rome_model_81.
  const bool one = nnodes == 1;
  const char* text = k().rome_model_79_ring_base;
  bool reverse = false;
  if (!one) {
    text = k().rome_model_81_ring_base;
    reverse = host % 2 == 1;
    if (nnodes % 2 == 1 && host == nnodes - 1) {
      text = k().rome_model_81_ring_tail1;
      reverse = false;
    } else if (nnodes % 2 == 1 && host == nnodes - 2) {
      text = k().rome_model_81_ring_tail2;
      reverse = false;
    }
  }
  auto rings = parse_rings(text, ngpus);
  if (reverse)
    for (auto& r : rings)
      std::reverse(r.begin(), r.end());
  const int nch = static_cast<int>(rings.size());

  // parseGraph: bwIntra = bwInter = system->totalBw / nChannels; totalBw is a GPU's xGMI total (getTotalBw: the larger
  // of its LINK_NVL sum and its PCI link).
  const double total = std::max(node.nvlinks_per_gpu * gbps(node.xgmi_link_bw), gbps(node.pcie_bw));
  NcclGraph g;
  g.channels = nch;
  g.bw_intra = g.bw_inter = units::GBps(total / nch);
  g.type_intra = NcclPath::Nvl;
  g.type_inter = NcclPath::Pix;
  g.same_channels = true;

  RcclLayout out;
  out.graphs.ring = g;
  out.graphs.tree = g; // BALANCED_TREE: no treeBase in either model, so parseGraph on the same ringBase
  out.graphs.library = CollectiveLibrary::Rccl;
  out.graphs.rccl.gfx = node.gfx;
  out.graphs.rccl.tuning_model = kMi300xTuningModel;
  out.graphs.rccl.rome_model = one ? 79 : 81;
  out.graphs.rccl.msccl_enabled = one; // rome_model_79 "mscclEnabled=1"; rome_model_81 has no such option

  // ncclTopoPostset (src/graph/connect.cc).
  const int cu = node.compute_units;
  int max_channels = (cu == 80 || cu == 20 || cu == 38) ? cu : k().max_channels;
  if (!one) max_channels = std::min(k().multi_node_max_channels, max_channels); // nIntraChannels > 0 or nNodes > 1
  const int max_n = std::min(limits.max > 0 ? std::min(limits.max, k().max_channels) : k().max_channels, max_channels);
  const int nranks = nnodes * ngpus;
  const int nc0 = nranks == 2 ? k().gfx94_nc_two_ranks : nranks == 4 ? k().gfx94_nc_four_ranks : k().default_nc;
  const int nc = std::min(max_n / nch, nc0) * nch;
  std::vector<std::vector<int>> channels = rings;
  if (nch <= max_channels / 2) channels.insert(channels.end(), rings.begin(), rings.end());
  int comm = std::min(max_channels, static_cast<int>(channels.size()));
  int min_n = limits.min > 0 ? std::min(limits.min, k().max_channels) : k().default_min_channels;
  if (!one) min_n = std::min(64, min_n);
  if (min_n > max_channels) min_n = k().default_min_channels;
  if (out.graphs.rccl.msccl_enabled) {
    // mscclSchedulerInit: the most channels any loaded 8-rank MSCCL algorithm needs, of those within the maximum.
    int required = 0;
    for (int c : k().msccl_8_rank_channels)
      if (c <= max_n) required = std::max(required, c);
    min_n = std::max(min_n, required);
  }
  // "Honor NCCL_MIN_NRINGS/NCCL_MAX_NRINGS": cut to the maximum (and config.maxCTAs, MAXCHANNELS by default), then
  // copyChannels up to max(min, nc): channel c copies channel c - comm.
  comm = std::min({limits.max > 0 ? std::min(limits.max, k().max_channels) : k().max_channels, comm, k().max_channels});
  channels.resize(static_cast<std::size_t>(comm));
  const int target = std::max({min_n, nc, 1});
  for (int c = comm; c < target; ++c)
    channels.push_back(channels[static_cast<std::size_t>(c - comm)]);
  out.graphs.comm_channels = static_cast<int>(channels.size());
  out.channel_orders = std::move(channels);
  return out;
}

} // namespace

NcclSystemGraphs rccl_derive_graphs(const NodeSpec& node, int nnodes, NcclChannelLimits limits)
{
  return layout(node, nnodes, limits, 0).graphs;
}

std::vector<std::vector<int>> rccl_ring_orders(const NodeSpec& node, int nnodes, int host)
{
  if (host < 0 || host >= std::max(1, nnodes))
    throw InputError(InputLocation{"", 0, "host"}, fmt::format("host {} is not a node of {}", host, nnodes),
                     "give a node index from 0 to nnodes - 1");
  const auto orders = layout(node, nnodes, {}, host).channel_orders;
  const int n = static_cast<int>(orders.size());
  for (int period = 1; period <= n; ++period) {
    if (n % period != 0) continue;
    bool ok = true;
    for (int c = period; c < n && ok; ++c)
      ok = orders[static_cast<std::size_t>(c)] == orders[static_cast<std::size_t>(c % period)];
    if (ok) return {orders.begin(), orders.begin() + period};
  }
  return orders;
}

// ---------------------------------------------------------------------------------------------------------------
// Lowering costs and the kernels RCCL takes before its model

LoweringCosts rccl_lowering_costs(Algorithm a, Protocol p, int nranks, int nnodes)
{
  if (nnodes < 1 || nranks < nnodes)
    throw std::invalid_argument(fmt::format("rccl_lowering_costs: {} ranks on {} nodes", nranks, nnodes));
  const auto& m = k().tuning_models[kMi300xTuningModel];
  const auto ai = static_cast<std::size_t>(a);
  const auto pi = static_cast<std::size_t>(p);
  const double to_s = 1e-6;
  LoweringCosts c;
  switch (a) {
  case Algorithm::Ring:
  case Algorithm::Tree: {
    double intra = m.hw_latency_us[kHwNvlink][ai][pi];
    // ncclTopoTuneModel: "Inter-node rings still have to launch nsteps * net overhead" (AMD EPYC host: 2 us, x3 for
    // Simple) as the floor of every intra-node ring hop.
    if (a == Algorithm::Ring && nnodes > 1)
      intra =
          std::max(intra, k().net_overhead_amd_us * (p == Protocol::Simple ? k().net_overhead_simple_multiplier : 1.0));
    c.launch = Seconds(k().base_latency_us[ai][pi] * to_s);
    c.intra_hop = Seconds(intra * to_s);
    c.inter_hop = Seconds(m.hw_latency_us[kHwNet][ai][pi] * to_s);
    break;
  }
  case Algorithm::Nvls:
  case Algorithm::NvlsTree:
  case Algorithm::Pat:
  case Algorithm::CollNetDirect:
  case Algorithm::CollNetChain:
    throw std::invalid_argument(fmt::format("RCCL does not run {} on MI300X", nccl_name(a)));
  }
  return c;
}

RcclKernelPath rccl_default_path(const NcclTuningInput& in)
{
  // src/collectives.cc: ncclAllReduce / ncclAllGather go to mscclEnqueueCheck when MSCCL is available for the
  // communicator (RCCL_MSCCL_ENABLE=1 by default and the rome model's mscclEnabled=1); there MSCCL++ takes all_reduce
  // of nBytes <= mscclpp_threshold and all_gather of nBytes x nRanks <= it (src/misc/msccl/msccl_lifecycle.cc), then
  // MSCCL's scheduler takes a loaded algorithm whose [minBytes, maxBytes] and rank count fit.
  if (in.library != CollectiveLibrary::Rccl || !in.rccl.msccl_enabled || in.nranks != 8)
    return RcclKernelPath::CostModel;
  const double bytes = in.bytes.bytes();
  if (in.collective == CollectiveKind::AllReduce) {
    if (bytes <= static_cast<double>(k().mscclpp_threshold_bytes)) return RcclKernelPath::Mscclpp;
    if (bytes <= static_cast<double>(k().msccl_allreduce_max_bytes)) return RcclKernelPath::Msccl;
  }
  if (in.collective == CollectiveKind::AllGather && bytes <= static_cast<double>(k().mscclpp_threshold_bytes))
    return RcclKernelPath::Mscclpp;
  return RcclKernelPath::CostModel;
}

std::string to_string(RcclKernelPath p)
{
  switch (p) {
  case RcclKernelPath::CostModel:
    return "cost model";
  case RcclKernelPath::Mscclpp:
    return "MSCCL++";
  case RcclKernelPath::Msccl:
    return "MSCCL";
  }
  return "cost model";
}

} // namespace railyard::models
