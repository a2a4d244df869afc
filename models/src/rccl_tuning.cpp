// RCCL 2.21.5's cost model (src/graph/tuning.cc ncclTopoTuneModel, ncclTopoGetAlgoTime, the __HIP_PLATFORM_AMD__
// branches), its pick (src/enqueue.cc topoGetAlgoInfo, getChannnelThreadInfo) and the graphs it sets up on MI300X:
// the rome models for whole 8-GPU nodes (src/graph/rome_models.cc), its own search for other shapes
// (src/graph/search.cc ncclTopoCompute: ported exactly on one node, a closed-form link budget in place of the
// depth-first search across nodes), then src/graph/connect.cc ncclTopoPostset. Each block names the RCCL code it
// follows. RCCL computes in float, the cost model here in double: only an exact tie could pick differently.
#include "railyard/models/rccl_tuning.hpp"

#include "railyard/models/lowering.hpp"
#include "tuning_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <sstream>
#include <stdexcept>

namespace railyard::models {

#include "../data/rccl_kernels_mi300x.inc"
#include "../data/rccl_tuning_2_21_5.inc"

using detail::field_of;
using detail::function_index;
using detail::gbps;
using detail::graph_for;
using detail::is_collnet;
using detail::is_nvls;
using detail::us;

namespace {

const RcclConstants& k()
{
  return kRccl_2_21_5;
}

constexpr int kTree = static_cast<int>(Algorithm::Tree);
constexpr int kRing = static_cast<int>(Algorithm::Ring);
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;
constexpr int kMi300xTuningModel = 5; // rome_model_79 and rome_model_81 options: "tuning=5"
// comm->topo->tuning where no rome model matched: ncclTopoGetSystemFromXml ncclCalloc's the topology and only a rome
// model's "tuning=" option (src/graph/rome_models.cc parseOptions) writes it.
constexpr int kNoRomeTuningModel = 0;

bool is_ag_rs(CollectiveKind kind)
{
  return detail::is_allgather_or_reducescatter(kind);
}
bool is_bcast_reduce(CollectiveKind kind)
{
  return kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce;
}

// src/include/utils.h log2i: 0 for 0 and 1 (unlike NCCL 2.26's log2Down, which gives -1 for 0).
int log2i(std::uint64_t n)
{
  int l = 0;
  while (n >>= 1)
    ++l;
  return l;
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

double net_overhead_us(CpuVendor cpu)
{
  return detail::net_overhead_us(k(), cpu);
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

[[noreturn]] void refuse(const InputLocation& where, CollectiveKind kind, Algorithm a, std::optional<Protocol> p,
                         const std::string& why, const std::string& fix)
{
  detail::refuse("RCCL", where, kind, a, p, why, fix);
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
        // "if (p == NCCL_PROTO_LL128 && comm->topo->type != RCCL_TOPO_XGMI_ALL) continue;": ncclTopoTrimSystem sets
        // RCCL_TOPO_XGMI_ALL on an xGMI mesh, and a matched rome model or more than 4 GPUs of a node
        // (parseRome4P2H) add RCCL_TOPO_4P2H_ROME to it.
        if (proto == Protocol::LL128 && (in.rccl.rome_model != 0 || in.gpus_per_node > 4)) continue;
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
  case Algorithm::MscclAllPairs:
  case Algorithm::Mscclpp:
    refuse(w, kind, a, p,
           "RCCL takes MSCCL and MSCCL++ itself, before NCCL_ALGO is read (src/collectives.cc mscclEnqueueCheck); "
           "they are not NCCL_ALGO values",
           "leave the algorithm to RCCL (its default path runs them where it does), or use Ring or Tree");
  }
  if (p && *p == Protocol::LL128)
    refuse(field_of(where, "protocol"), kind, a, p,
           fmt::format("RCCL does not run LL128 here: tuning model {} gives it bwRatio {}, and ncclTopoTuneModel "
                       "enables LL128 by default only on gfx90a with a rome model's ll128Enabled (ENABLE_LL128 "
                       "builds), so on gfx942 its bandwidth is zero; topoGetAlgoInfo also skips it on a topology "
                       "matched to a rome model",
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
// The graphs RCCL sets up on MI300X: the rome models for whole 8-GPU nodes, its own search for every other shape

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

[[noreturn]] void bad_input(const std::string& field, const std::string& rule, const std::string& fix)
{
  throw InputError(InputLocation{"", 0, field}, rule, fix);
}

// What rccl_communicator_graphs can answer for, and why not otherwise.
void check_shape(const NodeSpec& node, int nnodes, int ppn)
{
  if (nnodes < 1) bad_input("nnodes", fmt::format("nnodes is {}", nnodes), "use one node or more");
  if (node.gfx != "gfx942")
    bad_input("node.gfx", fmt::format("gfx \"{}\": RCCL's graphs are modelled for MI300X (gfx942) only", node.gfx),
              "use node_spec(NodeLayout::Mi300x)");
  if (ppn < 1 || ppn > 8 || ppn > std::max(node.gpus, 2))
    bad_input("ranks_per_node",
              fmt::format("{} ranks per node on a node of {} GPUs: an MI300X node has 8 GPUs and a communicator uses "
                          "1 to all of them on each node",
                          ppn, node.gpus),
              "give the communicator's GPUs per node, 1 to 8");
  if (nnodes == 1 && ppn == 1)
    bad_input("ranks_per_node",
              "a one-rank communicator has no channels to search: RCCL runs every collective on it as a local copy "
              "(topoGetAlgoInfo: nRanks 1 is Ring/Simple)",
              "use at least two GPUs, or leave the one-rank call to rccl_choose (it needs no graphs)");
  if (node.nvlinks_per_gpu < ppn - 1)
    bad_input("node.nvlinks_per_gpu",
              fmt::format("{} xGMI links per GPU for {} GPUs per node: RCCL's MI300X graphs are modelled on a fully "
                          "connected mesh, one direct xGMI link from each GPU to every other (7 on MI300X)",
                          node.nvlinks_per_gpu, ppn),
              "use node_spec(NodeLayout::Mi300x) (7 links per GPU)");
  if (node.xgmi_link_bw.bytes_per_sec() <= 0)
    bad_input("node.xgmi_link_bw", "an xGMI link needs a positive bandwidth", "use 48 GB/s (GFX94X_XGMI_WIDTH)");
  if (node.pcie_bw.bytes_per_sec() <= 0)
    bad_input("node.pcie_bw", "the GPU's PCIe link needs a positive bandwidth",
              "use 48 GB/s (Gen5 x16, src/graph/topo.cc ncclTopoAddPci)");
  if (nnodes > 1 && (node.nics < 1 || node.nic_bw.bytes_per_sec() <= 0))
    bad_input("node.nics",
              fmt::format("{} NICs of {} GB/s: across nodes every RCCL channel enters and leaves a node through a NIC",
                          node.nics, gbps(node.nic_bw)),
              "give the NICs the communicator's GPUs use on one node (1 or more) and their speed");
  if (ppn == 8 && nnodes > 1 && node.nics != 8) {
    // parseRome4P2H (src/graph/rome_models.cc) matches 8 xGMI-meshed GPUs on two NUMA nodes by NIC count.
    const std::string model = node.nics == 16  ? "rome_model_84 (16 NICs, pattern \"4848\")"
                              : node.nics == 4 ? "rome_model_87 (4 NICs, pattern \"4242\", netOverride, tuning 0)"
                                               : "no rome model, so RCCL's own search on 8 GPUs";
    bad_input(
        "node.nics",
        fmt::format("{} NICs per node: a whole 8x MI300X node across nodes is modelled for rome_model_81 (8 NICs, "
                    "one per GPU); with {} NICs RCCL takes {}, whose rings Railyard does not carry",
                    node.nics, node.nics, model),
        "use 8 NICs per node, or a communicator of fewer GPUs per node");
  }
}

// ---- RCCL's search on one node: an exact port for the xGMI mesh ----
//
// On one node RCCL trims the NICs (src/graph/paths.cc ncclTopoTrimSystem: all ranks local and all GPUs xGMI-connected)
// and no rome model has fewer than 8 GPUs that an MI300X node could match (rome_model_80, the one 4-GPU model, needs
// four NUMA nodes with a GPU and a NIC each and a Rome-class CPU), so src/graph/search.cc ncclTopoCompute runs its
// depth-first search over the communicator's GPUs. Between two GPUs of the mesh the only path is their one xGMI link
// (PATH_NVL, GFX94X_XGMI_WIDTH 48 GB/s), so the search depends on nothing but the GPU count, and is ported here
// statement by statement: ncclTopoSearchRec (intra-node branch), ncclTopoSearchTryGpu, ncclTopoSearchRecGpu,
// ncclTopoReplayGetGpu, ncclTopoSearchNextGpuSort (every candidate scores the same on a mesh, so they come in index
// order after the current GPU), ncclTopoFollowPath / followPath with SUB_ROUND, ncclTopoCompareGraphs, the timeouts,
// ncclTopoCompute's pass 1 and pass 2 and ncclTopoDupChannels. RCCL's float arithmetic is kept.

constexpr int kPathNvl = 1, kPathSys = 7; // src/graph/topo.h PATH_NVL, PATH_SYS (LOC NVL NVB PIX PXB PXN PHB SYS)
constexpr int kForcedPci = 1, kForcedReplay = 2; // src/graph/search.cc FORCED_ORDER_PCI, FORCED_ORDER_REPLAY
constexpr int kMaxMeshGpus = 8;

enum class SearchPattern { BalancedTree, Ring };

struct SearchGraph {
  SearchPattern pattern = SearchPattern::Ring;
  int min_channels = 1, max_channels = 1;
  int channels = 0;
  float bw_intra = 0, bw_inter = 0;
  int type_intra = kPathNvl;
  bool same_channels = true;
  int hops = 0;
  std::vector<int> intra; // intra[c * ngpus + step]: the GPU at position `step` of channel c
};

float speed(int i)
{
  return static_cast<float>(k().search_speeds_gbps[static_cast<std::size_t>(i)]);
}
int nspeeds()
{
  return static_cast<int>(k().search_speeds_gbps.size());
}

class MeshSearch {
public:
  // ncclTopoSearchInit: maxBw is the best GPU-to-GPU path (one link), totalBw a GPU's xGMI total or its PCIe link.
  MeshSearch(int ngpus, float link_bw, float pci_bw, bool amd_cpu)
      : n_(ngpus), link_(static_cast<std::size_t>(ngpus * ngpus), link_bw), used_(static_cast<std::size_t>(ngpus), 0),
        max_bw_(link_bw), total_bw_(std::max(pci_bw, static_cast<float>(ngpus - 1) * link_bw)), amd_cpu_(amd_cpu)
  {
  }

  // ncclTopoCompute after the rome models failed to match (no NIC, no NVSwitch, no CollNet).
  void compute(SearchGraph& graph)
  {
    graph.bw_intra = graph.bw_inter = 0;
    graph.type_intra = kPathNvl;
    graph.channels = 0;
    graph.same_channels = true;
    graph.hops = 0;
    graph.intra.assign(static_cast<std::size_t>(k().max_channels * n_), 0);
    float total = total_bw_;
    if (n_ > 1 && graph.pattern != SearchPattern::Ring) total *= static_cast<float>(n_ * 1.0 / (n_ - 1));
    int idx = 0;
    while ((speed(idx) > max_bw_ || speed(idx) * static_cast<float>(graph.min_channels) > total) && idx < nspeeds() - 1)
      ++idx;
    SearchGraph tmp = graph;
    tmp.bw_intra = tmp.bw_inter = speed(idx);
    long global_timeout = k().search_global_timeout;
    int pass = 1;
    while (true) {
      // search:
      long time = tmp.same_channels ? k().search_timeout_same_channels : k().search_timeout;
      tmp.channels = 0;
      global_timeout -= time;
      search_rec(tmp, graph, time);
      bool done = time == -1 || static_cast<float>(graph.channels) * graph.bw_inter >= total_bw_;
      if (!done && pass == 1) {
        // "Try having different channels (except when going through AMD CPUs)"
        if (tmp.same_channels && !(amd_cpu_ && tmp.type_intra == kPathSys)) {
          tmp.same_channels = false;
          continue;
        }
        tmp.same_channels = true;
        if (time != -1)
          global_timeout += time;
        else
          global_timeout = k().search_global_timeout;
        if (global_timeout < 0 && graph.channels) {
          done = true;
        } else {
          // No NIC: typeIntra may rise to PATH_SYS (every path here is PATH_NVL, so it finds the same rings again).
          if (tmp.type_intra < kPathSys && (graph.channels == 0 || tmp.type_intra < graph.type_intra)) {
            ++tmp.type_intra;
            continue;
          }
          tmp.type_intra = kPathNvl;
          // "Decrease bw until we find a solution"
          if (idx < nspeeds() - 1 &&
              (graph.channels == 0 || speed(idx + 1) / graph.bw_inter > static_cast<float>(k().speed_step_ratio))) {
            tmp.bw_inter = tmp.bw_intra = speed(++idx);
            continue;
          }
          idx = 0;
          while (speed(idx) > max_bw_ && idx < nspeeds() - 1)
            ++idx;
          tmp.bw_intra = tmp.bw_inter = speed(idx);
        }
      }
      // done:
      if (pass == 1) {
        time = -1;
        dup_channels(graph);
        tmp = graph;
        idx = 0;
        while (speed(idx) > graph.bw_inter && idx < nspeeds() - 1)
          ++idx;
        tmp.bw_intra = tmp.bw_inter = speed(idx);
        tmp.min_channels = graph.channels;
        pass = 2;
      }
      // pass 2: "See if we can increase bw"
      if (time != 0 && idx > 0) {
        if (graph.pattern == SearchPattern::Ring) {
          tmp.bw_intra = tmp.bw_inter = speed(--idx);
          continue;
        }
        if (tmp.bw_intra == graph.bw_intra && tmp.bw_intra < tmp.bw_inter * 2) {
          tmp.bw_intra = speed(--idx);
          continue;
        }
      }
      break;
    }
    if (graph.channels == 0) { // "Could not find a path for pattern %d, falling back to simple order"
      for (int i = 0; i < n_; ++i)
        graph.intra[static_cast<std::size_t>(i)] = i;
      graph.bw_intra = graph.bw_inter = static_cast<float>(k().fallback_bw_gbps);
      graph.type_intra = kPathSys;
      graph.channels = 1;
    }
  }

private:
  float& link(int from, int to) { return link_[static_cast<std::size_t>(from * n_ + to)]; }
  int& at(SearchGraph& g, int channel, int step) { return g.intra[static_cast<std::size_t>(channel * n_ + step)]; }

  // ncclTopoFollowPath + followPath for the one-link path between two GPUs (PATH_NVL is never above typeIntra).
  bool follow(SearchGraph& g, int from, int to, int mult)
  {
    float& bw = link(from, to);
    const float need = g.bw_intra * static_cast<float>(mult);
    if (bw < need) return false;
    bw = std::round((bw - need) * 1000) / 1000; // SUB_ROUND
    g.hops += mult;
    return true;
  }

  void try_gpu(SearchGraph& g, SearchGraph& save, int step, int back_to_first, int forced, long& time, int from,
               int gpu)
  {
    const std::uint64_t flag = 1ULL << g.channels;
    if (from >= 0 && !follow(g, from, gpu, 1)) return;
    used_[static_cast<std::size_t>(gpu)] ^= flag;
    rec_gpu(g, save, gpu, step, back_to_first, forced, time);
    used_[static_cast<std::size_t>(gpu)] ^= flag;
    if (from >= 0) follow(g, from, gpu, -1);
  }

  void rec_gpu(SearchGraph& g, SearchGraph& save, int gpu, int step, int back_to_first, int forced, long& time)
  {
    if (time <= 0) return;
    --time;
    if (step == n_) {
      ++g.channels;
      if (better(g, save)) {
        save = g;
        if (g.channels == g.max_channels) time = -1;
      }
      if (g.channels < g.max_channels) search_rec(g, save, time);
      --g.channels;
      return;
    }
    at(g, g.channels, step) = gpu;
    if (step < n_ - 1) {
      std::array<int, kMaxMeshGpus> next{};
      int count = 0;
      if (forced == kForcedPci) {
        next[count++] = step + 1;
      } else if (forced == kForcedReplay) {
        next[count++] = at(g, g.channels - 1, step + 1);
      } else {
        const std::uint64_t flag = 1ULL << g.channels;
        for (int i = 1; i < n_; ++i)
          if (!(used_[static_cast<std::size_t>((gpu + i) % n_)] & flag)) next[count++] = (gpu + i) % n_;
      }
      for (int i = 0; i < count; ++i)
        try_gpu(g, save, step + 1, back_to_first, forced, time, gpu, next[static_cast<std::size_t>(i)]);
    } else if (step == back_to_first) {
      const int first = at(g, g.channels, 0);
      if (follow(g, gpu, first, 1)) {
        rec_gpu(g, save, first, step + 1, -1, forced, time);
        follow(g, gpu, first, -1);
      }
    } else {
      rec_gpu(g, save, gpu, n_, -1, forced, time);
    }
  }

  void search_rec(SearchGraph& g, SearchGraph& save, long& time)
  {
    const int back_to_first = g.pattern == SearchPattern::Ring ? n_ - 1 : -1;
    if (g.channels == 0)
      try_gpu(g, save, 0, back_to_first, kForcedPci, time, -1, 0);
    else
      try_gpu(g, save, 0, back_to_first, kForcedReplay, time, -1, at(g, g.channels - 1, 0));
    if (!g.same_channels || g.channels == 0)
      for (int s = 0; s < n_; ++s)
        try_gpu(g, save, 0, back_to_first, 0, time, -1, s);
  }

  // ncclTopoCompareGraphs: more channels x bwIntra, then fewer hops. Its fourth rule (more channel neighbours joined
  // by an xGMI link, ncclTopoCountXGMI) ties on a mesh, where every pair is.
  static bool better(const SearchGraph& g, const SearchGraph& ref)
  {
    if (g.channels < g.min_channels) return false;
    const float bw = static_cast<float>(g.channels) * g.bw_intra;
    const float ref_bw = static_cast<float>(ref.channels) * ref.bw_intra;
    if (bw > ref_bw) return true;
    if (bw < ref_bw) return false;
    return g.pattern == ref.pattern && g.hops < ref.hops;
  }

  // ncclTopoDupChannels (RCCL gives AMD GPUs cudaCompCap 60, so its "ccMin > 80" rule never applies).
  void dup_channels(SearchGraph& g) const
  {
    if (g.channels == 0 || g.bw_intra < static_cast<float>(k().dup_min_bw_gbps)) return;
    if (k().hip_compute_capability > k().dup_skip_above_compute_capability &&
        g.bw_intra < static_cast<float>(k().dup_skip_below_gbps) && g.channels > k().dup_skip_above_channels)
      return;
    const int dup = std::min(g.channels * 2, g.max_channels);
    for (int i = 0; i < (dup - g.channels) * n_; ++i)
      g.intra[static_cast<std::size_t>(g.channels * n_ + i)] = g.intra[static_cast<std::size_t>(i)];
    const int div = (dup + g.channels - 1) / g.channels;
    g.bw_intra /= static_cast<float>(div);
    g.bw_inter /= static_cast<float>(div);
    g.channels = dup;
  }

  int n_;
  std::vector<float> link_; // what is left of each directed xGMI link i -> j
  std::vector<std::uint64_t> used_;
  float max_bw_, total_bw_;
  bool amd_cpu_;
};

// ---- Across nodes with a NIC per channel: a closed-form link budget ----
//
// Across nodes the search starts and ends each channel at a NIC, and which NICs and GPUs it pairs depends on the PCIe
// and NUMA layout (PIX/PXB/PHB paths, the crossNic retry, PXN off by default in RCCL: NCCL_PXN_DISABLE 1), which
// Railyard does not model. So ncclTopoCompute's speed search is followed exactly (RCCL's speed array, the .49 step
// rule, pass 1 down, ncclTopoDupChannels, pass 2 up; the tree's minChannels 1 and maxChannels = the ring's channels
// from src/init.cc), but the depth-first search is replaced by what a channel takes from the links, as
// models/src/nccl_tuning.cpp derive_graphs does for NVSwitch nodes, adapted to the mesh:
//  - each channel enters one NIC and leaves one (the ring's crossNic pairing): at most floor(min(NIC, PCIe) / bwInter)
//    channels per NIC (the NIC's net.bw and its PCIe path both carry them);
//  - each channel crosses the node's GPUs as a chain of ppn - 1 direct xGMI hops at bwIntra; the ppn (ppn - 1)
//    directed links carry floor(link / bwIntra) channels each, so at most ppn x floor(link / bwIntra) channels.
// With one GPU per node there is no xGMI hop: the NIC bound is what RCCL's search meets, so that case is exact.
struct Budget {
  int channels = 0;
  double intra = 0, inter = 0;
};

int net_capacity(const NodeSpec& node, int ppn, double intra, double inter, int max_channels)
{
  constexpr double kEps = 1e-6; // RCCL rounds link bandwidth to 1e-3 GB/s while subtracting (SUB_ROUND)
  const int per_nic = static_cast<int>(std::floor(std::min(gbps(node.nic_bw), gbps(node.pcie_bw)) / inter + kEps));
  int n = std::min(max_channels, node.nics * per_nic);
  if (ppn > 1) n = std::min(n, ppn * static_cast<int>(std::floor(gbps(node.xgmi_link_bw) / intra + kEps)));
  return n;
}

Budget net_search(const NodeSpec& node, int ppn, bool ring, int min_channels, int max_channels)
{
  const double link = gbps(node.xgmi_link_bw);
  // ncclTopoSearchInit with NICs: maxBw is the best GPU-to-NIC path, totalBw a GPU's xGMI total or its PCIe link.
  const double max_bw = std::min(gbps(node.nic_bw), gbps(node.pcie_bw));
  const double total_bw = std::max(gbps(node.pcie_bw), (ppn - 1) * link);
  const double pattern_total = (!ring && ppn > 1) ? total_bw * ppn / (ppn - 1) : total_bw;
  auto fits = [&](double intra, double inter) {
    const int n = net_capacity(node, ppn, intra, inter, max_channels);
    return n >= min_channels ? n : 0;
  };
  int idx = 0;
  while ((speed(idx) > max_bw || speed(idx) * min_channels > pattern_total) && idx < nspeeds() - 1)
    ++idx;
  Budget best;
  while (true) {
    const Budget s{fits(speed(idx), speed(idx)), speed(idx), speed(idx)};
    if (s.channels > 0 && s.channels * s.intra > best.channels * best.intra) best = s;
    if (best.channels == max_channels || (best.channels > 0 && best.channels * best.inter >= total_bw)) break;
    if (idx < nspeeds() - 1 && (best.channels == 0 || speed(idx + 1) / best.inter > k().speed_step_ratio)) {
      ++idx;
      continue;
    }
    break;
  }
  if (best.channels == 0) return best;
  // ncclTopoDupChannels ("ccMin > 80 && bwIntra < 50 && nChannels > 4" never holds: AMD GPUs are cudaCompCap 60).
  if (best.intra >= k().dup_min_bw_gbps &&
      !(k().hip_compute_capability > k().dup_skip_above_compute_capability && best.intra < k().dup_skip_below_gbps &&
        best.channels > k().dup_skip_above_channels)) {
    const int dup = std::min(best.channels * 2, max_channels);
    const int div = (dup + best.channels - 1) / best.channels;
    best = {dup, best.intra / div, best.inter / div};
  }
  idx = 0;
  while (speed(idx) > best.inter && idx < nspeeds() - 1)
    ++idx;
  Budget tmp{best.channels, speed(idx), speed(idx)};
  const int need = best.channels;
  while (idx > 0) {
    if (ring) {
      tmp.intra = tmp.inter = speed(--idx);
      const int n = net_capacity(node, ppn, tmp.intra, tmp.inter, max_channels);
      if (n >= need && n * tmp.intra > best.channels * best.intra) best = {n, tmp.intra, tmp.inter};
    } else {
      // Trees raise bwIntra alone while it stays below twice bwInter.
      if (!(tmp.intra == best.intra && tmp.intra < tmp.inter * 2)) break;
      tmp.intra = speed(--idx);
      if (net_capacity(node, ppn, tmp.intra, tmp.inter, need) >= need && tmp.intra > best.intra) best.intra = tmp.intra;
    }
  }
  return best;
}

struct RcclLayout {
  NcclSystemGraphs graphs;
  std::vector<std::vector<int>> channel_orders; // one per comm channel; empty where Railyard has no order
  bool orders_known = true;
};

NcclGraph to_graph(int channels, double intra, double inter, NcclPath type_intra, bool same_channels)
{
  NcclGraph g;
  g.channels = channels;
  g.bw_intra = units::GBps(intra);
  g.bw_inter = units::GBps(inter);
  g.type_intra = type_intra;
  g.type_inter = NcclPath::Pix;
  g.same_channels = same_channels;
  return g;
}

// ncclTopoPostset (src/graph/connect.cc) with the nc of src/init.cc (allGather3Data.nc: 2; on MI300X 16 for 2 ranks,
// 4 for 4 ranks), from the search's `rings` (comm->nChannels of them).
void postset(RcclLayout& out, const std::vector<std::vector<int>>& rings, const NodeSpec& node, int nnodes, int ppn,
             NcclChannelLimits limits)
{
  const int nch = static_cast<int>(rings.size());
  const int cu = node.compute_units;
  int max_channels = (cu == 80 || cu == 20 || cu == 38) ? cu : k().max_channels;
  if (nnodes > 1)
    max_channels = std::min(k().multi_node_max_channels, max_channels); // nIntraChannels > 0 or nNodes > 1
  const int max_n = std::min(limits.max > 0 ? std::min(limits.max, k().max_channels) : k().max_channels, max_channels);
  const int nranks = nnodes * ppn;
  const int nc0 = nranks == 2 ? k().gfx94_nc_two_ranks : nranks == 4 ? k().gfx94_nc_four_ranks : k().default_nc;
  const int nc = std::min(max_n / nch, nc0) * nch;
  std::vector<std::vector<int>> channels = rings;
  if (nch <= max_channels / 2) channels.insert(channels.end(), rings.begin(), rings.end());
  int comm = std::min(max_channels, static_cast<int>(channels.size()));
  int min_n = limits.min > 0 ? std::min(limits.min, k().max_channels) : k().default_min_channels;
  if (nnodes > 1) min_n = std::min(k().multi_node_max_channels, min_n);
  if (nranks < 8 && k().multi_node_max_channels < min_n) min_n = k().default_min_channels; // "less than 8 GPUs"
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
}

// A whole 8x MI300X node: rome_model_79 on one node, rome_model_81 across nodes (parseA2a8P).
RcclLayout rome_layout(const NodeSpec& node, int nnodes, NcclChannelLimits limits, int host)
{
  const int ngpus = 8;
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
  RcclLayout out;
  // BALANCED_TREE: no treeBase in either model, so parseGraph on the same ringBase.
  out.graphs.ring = out.graphs.tree = to_graph(nch, total / nch, total / nch, NcclPath::Nvl, true);
  out.graphs.library = CollectiveLibrary::Rccl;
  out.graphs.rccl.gfx = node.gfx;
  out.graphs.rccl.tuning_model = kMi300xTuningModel;
  out.graphs.rccl.rome_model = one ? 79 : 81;
  out.graphs.rccl.msccl_enabled = one; // rome_model_79 "mscclEnabled=1"; rome_model_81 has no such option
  postset(out, rings, node, nnodes, ngpus, limits);
  return out;
}

// Any other shape: no rome model matches, so RCCL runs its search, comm->topo->tuning stays 0 (the topology is
// ncclCalloc'ed and only a rome model's "tuning=" option sets it, src/graph/rome_models.cc parseOptions) and MSCCL is
// off (comm->topo->mscclEnabled likewise comes only from a rome model).
RcclLayout search_layout(const NodeSpec& node, int nnodes, int ppn, NcclChannelLimits limits)
{
  RcclLayout out;
  out.graphs.library = CollectiveLibrary::Rccl;
  out.graphs.rccl.gfx = node.gfx;
  out.graphs.rccl.tuning_model = kNoRomeTuningModel;
  out.graphs.rccl.rome_model = 0;
  out.graphs.rccl.msccl_enabled = false;
  std::vector<std::vector<int>> rings;
  if (nnodes == 1) {
    const auto link = static_cast<float>(gbps(node.xgmi_link_bw));
    const auto pci = static_cast<float>(gbps(node.pcie_bw));
    const bool amd = node.cpu == CpuVendor::Amd;
    // src/init.cc: ring 1..MAXCHANNELS/2 channels, or 2 on a one-node RCCL_TOPO_4P2H_ROME system (more than 4 GPUs).
    SearchGraph ring;
    ring.pattern = SearchPattern::Ring;
    ring.min_channels = 1;
    ring.max_channels = ppn > 4 ? k().rome_4p2h_one_node_ring_channels : k().max_channels / 2;
    MeshSearch(ppn, link, pci, amd).compute(ring);
    // Without a NIC the tree must have exactly the ring's channel count.
    SearchGraph tree;
    tree.pattern = SearchPattern::BalancedTree;
    tree.min_channels = tree.max_channels = ring.channels;
    MeshSearch(ppn, link, pci, amd).compute(tree);
    for (int c = 0; c < ring.channels; ++c)
      rings.emplace_back(ring.intra.begin() + c * ppn, ring.intra.begin() + (c + 1) * ppn);
    // src/init.cc: on one node comm->nChannels and both graphs' nChannels are the ring's.
    auto path = [](int type) { return type == kPathNvl ? NcclPath::Nvl : NcclPath::Sys; };
    out.graphs.ring = to_graph(ring.channels, ring.bw_intra, ring.bw_inter, path(ring.type_intra), ring.same_channels);
    out.graphs.tree = to_graph(ring.channels, tree.bw_intra, tree.bw_inter, path(tree.type_intra), tree.same_channels);
  } else {
    const Budget ring = net_search(node, ppn, true, 1, k().max_channels / 2);
    const Budget tree = net_search(node, ppn, false, 1, ring.channels);
    // src/init.cc: with NICs, comm->nChannels and both graphs' nChannels are the smaller of the two.
    const int nch = std::min(ring.channels, tree.channels);
    // One GPU: ncclTopoCompute sets typeIntra PATH_LOC (ncclTopoTuneModel then prices intra hops as PCI).
    const NcclPath intra = ppn == 1 ? NcclPath::Loc : NcclPath::Nvl;
    out.graphs.ring = to_graph(nch, ring.intra, ring.inter, intra, ppn == 1);
    out.graphs.tree = to_graph(nch, tree.intra, tree.inter, intra, ppn == 1);
    out.orders_known = ppn == 1;
    rings.assign(static_cast<std::size_t>(nch), ppn == 1 ? std::vector<int>{0} : std::vector<int>{});
  }
  postset(out, rings, node, nnodes, ppn, limits);
  return out;
}

RcclLayout layout(const NodeSpec& node, int nnodes, int ppn, NcclChannelLimits limits, int host)
{
  check_shape(node, nnodes, ppn);
  if (ppn == 8) return rome_layout(node, nnodes, limits, host);
  return search_layout(node, nnodes, ppn, limits);
}

// sim/src/nccl_resolve.cpp describes a communicator's node as gpus = max(2, ranks per node) and nics = the NICs its
// GPUs use there, so two GPUs with one NIC across nodes stand for one GPU per node.
int ranks_per_node(const NodeSpec& node, int nnodes)
{
  return nnodes > 1 && node.gpus == 2 && node.nics == 1 ? 1 : node.gpus;
}

} // namespace

NcclSystemGraphs rccl_communicator_graphs(const NodeSpec& node, int nnodes, int ranks_per_node,
                                          NcclChannelLimits limits)
{
  return layout(node, nnodes, ranks_per_node, limits, 0).graphs;
}

NcclSystemGraphs rccl_derive_graphs(const NodeSpec& node, int nnodes, NcclChannelLimits limits)
{
  return rccl_communicator_graphs(node, nnodes, ranks_per_node(node, nnodes), limits);
}

NcclTuningInput rccl_make_input(const NodeSpec& node, int nnodes, int ranks_per_node, CollectiveKind kind, Bytes bytes)
{
  const auto graphs = rccl_communicator_graphs(node, nnodes, ranks_per_node);
  NcclTuningInput in;
  in.collective = kind;
  in.bytes = bytes;
  in.nnodes = nnodes;
  in.gpus_per_node = ranks_per_node;
  in.nranks = nnodes * ranks_per_node;
  in.compute_capability = node.compute_capability;
  in.cpu = node.cpu;
  in.nvls_supported = false;
  in.ring = graphs.ring;
  in.tree = graphs.tree;
  in.nvls = graphs.nvls;
  in.comm_channels = graphs.comm_channels;
  in.nvls_channels = graphs.nvls_channels;
  in.library = graphs.library;
  in.rccl = graphs.rccl;
  return in;
}

std::vector<std::vector<int>> rccl_ring_orders(const NodeSpec& node, int nnodes, int host)
{
  if (host < 0 || host >= std::max(1, nnodes))
    throw InputError(InputLocation{"", 0, "host"}, fmt::format("host {} is not a node of {}", host, nnodes),
                     "give a node index from 0 to nnodes - 1");
  const int ppn = ranks_per_node(node, nnodes);
  const auto l = layout(node, nnodes, ppn, {}, host);
  if (!l.orders_known)
    bad_input("node.gpus",
              fmt::format("{} GPUs per node across {} nodes: the channel count is a closed-form link budget, and the "
                          "order in which RCCL's search chains the GPUs between two NICs depends on the PCIe and "
                          "NUMA paths (PXB, PHB, crossNic) that Railyard does not model",
                          ppn, nnodes),
              "use whole 8-GPU nodes (rome_model_81's rings), one node, or one GPU per node for ring orders");
  const auto& orders = l.channel_orders;
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
  // Whole 8x MI300X nodes match rome_model_79 / rome_model_81 (tuning=5); every other shape matches none (tuning 0).
  const bool whole_nodes = nnodes >= 1 && nranks == 8 * nnodes;
  return rccl_lowering_costs(a, p, nranks, nnodes, whole_nodes ? kMi300xTuningModel : kNoRomeTuningModel);
}

LoweringCosts rccl_lowering_costs(Algorithm a, Protocol p, int nranks, int nnodes, int tuning_model)
{
  if (nnodes < 1 || nranks < nnodes)
    throw std::invalid_argument(fmt::format("rccl_lowering_costs: {} ranks on {} nodes", nranks, nnodes));
  if (tuning_model < 0 || tuning_model >= static_cast<int>(k().tuning_models.size()))
    throw std::invalid_argument(fmt::format("rccl_lowering_costs: tuning model {} is not 0..5", tuning_model));
  const auto& m = k().tuning_models[static_cast<std::size_t>(tuning_model)];
  const auto ai = static_cast<std::size_t>(a);
  const auto pi = static_cast<std::size_t>(p);
  const double to_s = 1e-6;
  LoweringCosts c;
  switch (a) {
  case Algorithm::Ring:
  case Algorithm::Tree: {
    // One GPU per node: the graph's typeIntra is PATH_LOC, so ncclTopoTuneModel takes the PCI row.
    double intra = m.hw_latency_us[nranks == nnodes && nnodes > 1 ? kHwPci : kHwNvlink][ai][pi];
    // ncclTopoTuneModel: "Inter-node rings still have to launch nsteps * net overhead" (AMD EPYC host: 2 us, x3 for
    // Simple) as the floor of every intra-node ring hop.
    if (a == Algorithm::Ring && nnodes > 1)
      intra =
          std::max(intra, k().net_overhead_amd_us * (p == Protocol::Simple ? k().net_overhead_simple_multiplier : 1.0));
    c.launch = Seconds(k().base_latency_us[ai][pi] * to_s);
    c.intra_hop = Seconds(intra * to_s);
    // A network hop's latency is tuning model 0's (RCCL's generic table), whatever model chose the algorithm:
    // tuning model 5's NET entry for Ring/Simple (320 us, against 15.1 us in model 0 and 14 us in NCCL) is a weight
    // that steers RCCL's choice to Tree at mid sizes, not a time a hop takes. RCCL runs every all_gather and
    // reduce_scatter across nodes as Ring/Simple, and with 320 us per hop a 2-node all_gather of 4 MiB would take
    // 1.6 ms (busbw 2.4 GB/s); the 2-node rccl-tests ring sweep (AAC10, fit half: 512 MiB 3096 us, 1 GiB 5908 us)
    // leaves a few hundred microseconds for all of a call's latency (models/README.md, "RCCL cost model").
    c.inter_hop = Seconds(k().tuning_models[kNoRomeTuningModel].hw_latency_us[kHwNet][ai][pi] * to_s);
    break;
  }
  case Algorithm::MscclAllPairs:
    // MSCCL's kernel is launched by RCCL's enqueue and moves data through RCCL's Primitives over the same xGMI
    // connections (src/device/msccl_kernel_impl.h), so it pays RCCL's launch and per-hop costs of its protocol.
    c.launch = Seconds(k().base_latency_us[kRing][pi] * to_s);
    c.intra_hop = Seconds(m.hw_latency_us[kHwNvlink][kRing][pi] * to_s);
    c.link_efficiency =
        p == Protocol::Simple ? kRcclKernels.msccl_link_efficiency_simple : kRcclKernels.msccl_link_efficiency_ll;
    break;
  case Algorithm::Mscclpp:
    // MSCCL++'s kernels are plain HIP kernels in a graph: no RCCL constant applies; fitted (rccl_kernels_mi300x.inc).
    c.launch = Seconds(kRcclKernels.mscclpp_launch_us * to_s);
    c.link_efficiency =
        p == Protocol::Simple ? kRcclKernels.mscclpp_link_efficiency_simple : kRcclKernels.mscclpp_link_efficiency_ll;
    break;
  case Algorithm::Nvls:
  case Algorithm::NvlsTree:
  case Algorithm::Pat:
  case Algorithm::CollNetDirect:
  case Algorithm::CollNetChain:
    throw std::invalid_argument(fmt::format("RCCL does not run {} on MI300X", nccl_name(a)));
  }
  return c;
}

std::span<const MscclAlgorithmSpec> msccl_algorithms()
{
  return kMscclAlgorithms;
}

const MscclAlgorithmSpec* msccl_algorithm(CollectiveKind kind, Protocol p, int channels)
{
  for (const auto& a : kMscclAlgorithms)
    if (a.kind == kind && a.protocol == p && a.channels == channels) return &a;
  return nullptr;
}

const RcclKernelConstants& rccl_kernel_constants()
{
  return kRcclKernels;
}

std::optional<RcclKernel> rccl_default_kernel(const NcclTuningInput& in, const RcclCallMode& mode, int max_channels)
{
  // src/collectives.cc: ncclAllReduce, ncclAllGather and ncclAllToAll call mscclEnqueueCheck when mscclAvailable
  // (RCCL_MSCCL_ENABLE and MSCCL initialised, which src/init.cc does only where the topology says mscclEnabled: the
  // rome model's option, rome_model_79 on one 8x MI300X node).
  if (in.library != CollectiveLibrary::Rccl || !in.rccl.msccl_enabled || !mode.msccl) return std::nullopt;
  const auto contains = [](const auto& names, const std::string& s) {
    return std::find_if(names.begin(), names.end(), [&](const char* n) { return s == n; }) != names.end();
  };
  const double bytes = in.bytes.bytes();
  const CollectiveKind kind = in.collective;
  // nBytes as mscclEnqueueCheck computes it: count x type size, where count is per rank for all_gather (sendcount)
  // and per peer for alltoall; in nccl-tests' size convention all_gather's and alltoall's sizes are nRanks times it.
  const int type_size = nccl_tests_type_bytes(mode.type);
  if (type_size <= 0) return std::nullopt;
  const double per_call =
      kind == CollectiveKind::AllGather || kind == CollectiveKind::AllToAll ? bytes / in.nranks : bytes;
  const auto count = static_cast<std::int64_t>(per_call / type_size);
  const auto n_bytes = count * type_size;

  // MSCCL++ (mscclEnqueueCheck, "check if one rank per GPU and graph mode is enabled"): src/init.cc sets
  // mscclppCompatible for gfx94x when RCCL_MSCCLPP_ENABLE, mscclEnabled() and allProcessHostsUnique hold.
  const long threshold = k().mscclpp_threshold_bytes;
  if (mode.mscclpp && mode.process_per_gpu && mode.graph_captured && n_bytes > 0 &&
      n_bytes % kRcclKernels.mscclpp_alignment_bytes == 0) {
    if (kind == CollectiveKind::AllReduce && n_bytes <= threshold && mode.redop == "sum" &&
        contains(kRcclKernels.mscclpp_allreduce_types, mode.type) && in.nranks == 8)
      return RcclKernel{RcclKernelPath::Mscclpp, Algorithm::Mscclpp, Protocol::LL, 1, "allreduce7"};
    if (kind == CollectiveKind::AllGather && n_bytes * in.nranks <= threshold && in.nranks == 8)
      return RcclKernel{RcclKernelPath::Mscclpp, Algorithm::Mscclpp, Protocol::Simple, 1, "allgather6"};
  }

  // MSCCL's internal scheduler (mscclInternalSchedulerSelectAlgo): the first algorithm loaded for this rank count
  // (mscclInternalSchedulerInit drops those needing more channels than NCCL_MAX_NCHANNELS) that fits.
  if (!contains(kRcclKernels.msccl_ops, mode.redop) && kind != CollectiveKind::AllToAll) return std::nullopt;
  for (const auto& a : kMscclAlgorithms) {
    if (a.kind != kind || a.ranks != in.nranks) continue;
    if (max_channels > 0 && a.channels > max_channels) continue;
    const std::int64_t multiplier = kind == CollectiveKind::AllToAll ? a.ranks : 1; // msccl_parser.cc sizeMultiplier
    const std::int64_t sized = n_bytes * multiplier;
    const bool fits = count > 0 && (count * multiplier) % a.chunks_per_loop == 0 && sized >= a.min_bytes &&
                      (a.max_bytes == 0 || sized <= a.max_bytes);
    if (fits && (mode.in_place ? a.in_place : a.out_of_place))
      return RcclKernel{RcclKernelPath::Msccl, Algorithm::MscclAllPairs, a.protocol, a.channels, a.file};
  }
  return std::nullopt;
}

RcclKernelPath rccl_default_path(const NcclTuningInput& in, const RcclCallMode& mode)
{
  const auto kernel = rccl_default_kernel(in, mode);
  return kernel ? kernel->path : RcclKernelPath::CostModel;
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
