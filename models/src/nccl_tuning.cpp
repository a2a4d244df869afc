// NCCL 2.26.2's cost model (src/graph/tuning.cc ncclTopoTuneModel, ncclTopoGetAlgoTime) and its pick
// (src/enqueue.cc updateCollCostTable, topoGetAlgoInfo). Each block names the NCCL code it follows. Arithmetic is in
// double where NCCL uses float, so results can differ from NCCL's in the last float digit; only exact ties between
// two combinations could pick differently.
#include "railyard/models/nccl_tuning.hpp"

#include "railyard/models/rccl_tuning.hpp"
#include "tuning_common.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

namespace railyard::models {

#include "../data/nccl_tuning_2_26_2.inc"

using detail::field_of;
using detail::function_index;
using detail::gbps;
using detail::graph_for;
using detail::is_allgather_or_reducescatter;
using detail::is_collnet;
using detail::is_nvls;
using detail::us;

namespace {

const NcclConstants& k()
{
  return kNccl_2_26_2;
}

constexpr int kTree = static_cast<int>(Algorithm::Tree);
constexpr int kRing = static_cast<int>(Algorithm::Ring);
constexpr int kLL = static_cast<int>(Protocol::LL);
constexpr int kLL128 = static_cast<int>(Protocol::LL128);
constexpr int kSimple = static_cast<int>(Protocol::Simple);
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;

// NCCL's function index (ncclFunc_t): Broadcast, Reduce, AllGather, ReduceScatter, AllReduce.
constexpr std::array<const char*, kNcclFunctions> kFunctionNames{"Broadcast", "Reduce", "AllGather", "ReduceScatter",
                                                                 "AllReduce"};
constexpr std::array<const char*, kNcclAlgorithms> kAlgorithmNames{
    "Tree", "Ring", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"};
constexpr std::array<const char*, kNcclProtocols> kProtocolNames{"LL", "LL128", "Simple"};

// Compute-capability row of the per-generation tables (VOLTA/AMPERE/HOPPER/BLACKWELL_COMPCAP_IDX).
int compcap_index(int cc)
{
  return cc >= 100 ? 3 : cc >= 90 ? 2 : cc >= 80 ? 1 : 0;
}

// NCCL's log2i: floor(log2(n)), -1 for 0 (src/include/bitops.h log2Down).
int log2i(std::uint64_t n)
{
  int r = -1;
  while (n != 0) {
    n >>= 1;
    ++r;
  }
  return r;
}

double net_overhead_us(CpuVendor cpu)
{
  return detail::net_overhead_us(k(), cpu);
}

// getNetOverhead, x3 for Simple: the least each intra-node step of a ring across nodes costs (ring_net_overhead()).
double ring_net_overhead_us(CpuVendor cpu, Protocol proto)
{
  return net_overhead_us(cpu) * (proto == Protocol::Simple ? k().net_overhead_simple_multiplier : 1.0);
}

// ncclPatEnable with NCCL_PAT_ENABLE unset and a host-driven network (no device offload).
bool pat_enabled(const NcclTuningInput& in)
{
  return in.compute_capability >= 60 && in.nnodes == in.nranks;
}

// The LL128 default of ncclTopoTuneModel: only where NVIDIA tested it (NVLink inside the node, NIC no further than
// PXB, or PXN on sm90+; one GPU generation; known compute capabilities). The CUDA 11.8 two-rank exception for sm90
// ring all_reduce is not modelled: Railyard assumes CUDA 12.
bool ll128_default(const NcclTuningInput& in, const NcclGraph& g)
{
  const int cc = in.compute_capability;
  bool ok = g.type_inter <= NcclPath::Pxb || (cc >= 90 && g.type_inter <= NcclPath::Pxn);
  ok = ok && g.type_intra <= NcclPath::Nvb;
  return ok && (cc == 70 || cc == 80 || cc == 90 || cc == 100 || cc == 120);
}

// NCCL's algoEnable after its own rules: NVLSTree needs several nodes; without CollNet, CollNet is off and NVLS is
// single-node only.
bool algorithm_enabled_by_nccl(const NcclTuningInput& in, Algorithm a)
{
  if (in.nnodes == 1 && a == Algorithm::NvlsTree) return false;
  if (is_collnet(a)) return false;
  if (a == Algorithm::Nvls && in.nnodes > 1) return false;
  return true;
}

// updateCollCostTable (src/enqueue.cc): combinations NCCL does not even price for this call.
bool priced_by_enqueue(const NcclTuningInput& in, Algorithm a)
{
  if (is_nvls(a) && !in.nvls_supported) return false;
  if (a == Algorithm::Nvls && is_allgather_or_reducescatter(in.collective) &&
      (in.nnodes > 1 || in.nranks > k().max_nvls_arity))
    return false;
  return true;
}

} // namespace

std::string nccl_name(Algorithm a)
{
  const auto i = static_cast<std::size_t>(a);
  return i < kAlgorithmNames.size() ? kAlgorithmNames[i] : to_string(a); // RCCL's MSCCL / MSCCL++ kernels
}
std::string nccl_name(Protocol p)
{
  return kProtocolNames[static_cast<int>(p)];
}
const NcclConstants& nccl_constants()
{
  return k();
}

// ---------------------------------------------------------------------------------------------------------------
// NCCL_ALGO / NCCL_PROTO (src/graph/tuning.cc parseList)

NcclOverrides::NcclOverrides()
{
  for (auto& row : algorithms)
    row.fill(true);
  for (auto& row : protocols)
    row = {NcclEnable::On, NcclEnable::Auto, NcclEnable::On};
}

namespace {

std::vector<std::string> split_skipping_empty(std::string_view s, char sep)
{
  // strtok_r semantics: runs of separators yield no empty tokens.
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == sep) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else {
      cur.push_back(c);
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

bool equals_ignore_case(std::string_view a, std::string_view b)
{
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i]))) return false;
  return true;
}

template <size_t N>
std::string join_names(const std::array<const char*, N>& names)
{
  std::string out;
  for (const char* n : names)
    out += (out.empty() ? "" : ", ") + std::string(n);
  return out;
}

// Fills list[function][element] with 0/1 as parseList does; untouched entries keep their value.
template <size_t N>
void parse_list(std::string_view text, const char* variable, const std::array<const char*, N>& elems,
                std::array<std::array<int, N>, kNcclFunctions>& list, const InputLocation& where)
{
  const std::string fix = fmt::format("write {} as a comma list of {} (case-insensitive, no spaces), '^' in front to "
                                      "exclude, and per-function sections after ';' such as \"allreduce:tree,ring\" "
                                      "(functions: {})",
                                      variable, join_names(elems), join_names(kFunctionNames));
  const auto sections = split_skipping_empty(text, ';');
  for (size_t s = 0; s < sections.size(); ++s) {
    const auto parts = split_skipping_empty(sections[s], ':');
    std::optional<std::string> prefix;
    std::string elem_list;
    if (parts.size() < 2) {
      if (s != 0)
        throw InputError(
            where, fmt::format("{}=\"{}\": every section after the first needs a function prefix", variable, text),
            fix);
      elem_list = parts.empty() ? "" : parts[0];
    } else {
      prefix = parts[0];
      elem_list = parts[1];
    }
    int unset = 0, set = 1;
    if (!elem_list.empty() && elem_list[0] == '^') {
      unset = 1;
      set = 0;
      elem_list.erase(0, 1);
    }
    bool found_prefix = false;
    for (int f = 0; f < kNcclFunctions; ++f) {
      if (prefix && !equals_ignore_case(*prefix, kFunctionNames[f])) continue;
      found_prefix = true;
      list[f].fill(unset);
      for (const auto& elem : split_skipping_empty(elem_list, ',')) {
        size_t e = 0;
        while (e < N && !equals_ignore_case(elem, elems[e]))
          ++e;
        if (e == N)
          throw InputError(where, fmt::format("{}=\"{}\": unrecognized name \"{}\"", variable, text, elem), fix);
        list[f][e] = set;
      }
    }
    if (!found_prefix)
      throw InputError(where, fmt::format("{}=\"{}\": unrecognized function \"{}\"", variable, text, *prefix), fix);
  }
}

} // namespace

NcclOverrides NcclOverrides::parse(std::optional<std::string_view> nccl_algo,
                                   std::optional<std::string_view> nccl_proto, const InputLocation& where)
{
  NcclOverrides out;
  if (nccl_algo) {
    std::array<std::array<int, kNcclAlgorithms>, kNcclFunctions> list{};
    for (auto& row : list)
      row.fill(1);
    parse_list(*nccl_algo, "NCCL_ALGO", kAlgorithmNames, list, where);
    for (int f = 0; f < kNcclFunctions; ++f)
      for (int a = 0; a < kNcclAlgorithms; ++a)
        out.algorithms[f][a] = list[f][a] != 0;
  }
  if (nccl_proto) {
    // 2 is NCCL's "LL128 by default rule"; parseList overwrites every entry of a section it touches with 0 or 1,
    // so "^LL" turns LL128 from the default rule into forced on, exactly as in NCCL.
    std::array<std::array<int, kNcclProtocols>, kNcclFunctions> list{};
    for (auto& row : list)
      row = {1, 2, 1};
    parse_list(*nccl_proto, "NCCL_PROTO", kProtocolNames, list, where);
    for (int f = 0; f < kNcclFunctions; ++f)
      for (int p = 0; p < kNcclProtocols; ++p)
        out.protocols[f][p] = list[f][p] == 0 ? NcclEnable::Off : list[f][p] == 1 ? NcclEnable::On : NcclEnable::Auto;
  }
  return out;
}

bool NcclOverrides::algorithm_allowed(CollectiveKind kind, Algorithm a) const
{
  const auto f = function_index(kind);
  return f && algorithms[*f][static_cast<int>(a)];
}

NcclEnable NcclOverrides::protocol_enable(CollectiveKind kind, Protocol p) const
{
  const auto f = function_index(kind);
  return f ? protocols[*f][static_cast<int>(p)] : NcclEnable::Off;
}

// ---------------------------------------------------------------------------------------------------------------
// ncclTopoTuneModel: one (latency, bandwidth) per collective, algorithm and protocol

std::optional<NcclAlgoCost> algo_cost(const NcclTuningInput& in, Algorithm algo, Protocol proto)
{
  if (in.library == CollectiveLibrary::Rccl) return rccl_algo_cost(in, algo, proto);
  const auto func = function_index(in.collective);
  if (!func || in.nranks <= 1) return std::nullopt;
  const CollectiveKind coll = in.collective;
  const bool allreduce = coll == CollectiveKind::AllReduce;
  const bool ag_rs = is_allgather_or_reducescatter(coll);
  const int a = static_cast<int>(algo);
  const int p = static_cast<int>(proto);

  // Which (function, algorithm, protocol) NCCL implements at all.
  if ((coll == CollectiveKind::Broadcast || coll == CollectiveKind::Reduce) && algo != Algorithm::Ring)
    return std::nullopt;
  if (ag_rs && algo != Algorithm::Pat && algo != Algorithm::Ring && algo != Algorithm::Nvls &&
      algo != Algorithm::CollNetDirect)
    return std::nullopt;
  if (allreduce && algo == Algorithm::Pat) return std::nullopt;
  if (is_nvls(algo) && proto != Protocol::Simple) return std::nullopt;
  if (ag_rs && algo == Algorithm::Pat && (proto != Protocol::Simple || !pat_enabled(in))) return std::nullopt;

  // Enable rules and the user's NCCL_ALGO / NCCL_PROTO.
  if (!algorithm_enabled_by_nccl(in, algo) || !in.overrides.algorithm_allowed(coll, algo)) return std::nullopt;
  const NcclGraph& g = graph_for(in, algo);
  const NcclEnable pe = in.overrides.protocol_enable(coll, proto);
  if (pe == NcclEnable::Off || (pe == NcclEnable::Auto && !ll128_default(in, g))) return std::nullopt;

  const int nranks = in.nranks;
  const int nnodes = in.nnodes;
  const int cc = compcap_index(in.compute_capability);
  const int col = nnodes <= 2 ? nnodes - 1 : 2;
  const int ll_row = nnodes == 1 ? cc : (in.cpu == CpuVendor::Amd ? 1 : 0);
  const double ll_max_bw = k().ll_max_bw_gbps[ll_row][col];
  const double per_ch_tree = k().per_ch_max_tree_bw_gbps[cc][col];
  const double per_ch_ring_ll128 = k().per_ch_max_ring_ll128_bw_gbps[cc][col];
  const double per_ch_tree_ll128 = k().per_ch_max_tree_ll128_bw_gbps[cc][col];
  const int nsteps = allreduce ? 2 * (nranks - 1) : ag_rs ? nranks - 1 : nranks;

  // Bandwidth: per-channel graph bandwidth x channels, then protocol and algorithm efficiencies.
  const double intra = gbps(g.bw_intra), inter = gbps(g.bw_inter);
  double bw = nnodes <= 2 ? intra : inter;
  if (algo == Algorithm::Nvls) bw = std::min(intra, inter);
  if (algo == Algorithm::NvlsTree) bw = std::min(intra, nnodes <= 2 ? inter : inter / 2);
  double bus_bw = g.channels * bw;
  if (algo == Algorithm::Ring && proto == Protocol::LL) bus_bw = std::min(ll_max_bw, bus_bw * k().ring_ll_factor);
  if (algo == Algorithm::Ring && proto == Protocol::LL128)
    bus_bw = std::min(bus_bw * k().ring_ll128_factor, g.channels * per_ch_ring_ll128);
  if (algo == Algorithm::Tree && allreduce) bus_bw = std::min(bus_bw * k().tree_factor, g.channels * per_ch_tree);
  if (algo == Algorithm::Tree && proto == Protocol::LL) bus_bw = std::min(bus_bw / k().tree_ll_divisor, ll_max_bw);
  if (algo == Algorithm::Tree && proto == Protocol::LL128)
    bus_bw = std::min(bus_bw * (nnodes == 1 ? k().tree_ll128_one_node : k().tree_ll128_many_nodes),
                      g.channels * per_ch_tree_ll128);
  if (algo == Algorithm::Tree && g.simple_tree) bus_bw *= k().tree_simple_pattern_factor;
  if (algo == Algorithm::Pat) bus_bw *= k().pat_factor;
  // Bus bandwidth to algorithm bandwidth; NCCL skips it for non-ring all_gather / reduce_scatter.
  if (!(algo != Algorithm::Ring && ag_rs)) {
    const double ratio = algo == Algorithm::Ring ? static_cast<double>(nranks) / nsteps
                         : is_nvls(algo)         ? k().nvls_ratio
                                                 : k().tree_ratio;
    bus_bw *= ratio;
  }
  if (bus_bw <= 0) return std::nullopt;

  // Latency: base + hops priced by the hardware they cross.
  const auto& hw = k().hw_latency_us;
  const int intra_hw = g.type_intra == NcclPath::Nvl ? kHwNvlink : kHwPci;
  const int ring_hw = nnodes == 1 ? intra_hw : kHwNet;
  double lat = k().base_latency_us[a][p];
  double intra_lat = hw[intra_hw][a][p];
  // With one rank per node the network latency is fully exposed: NCCL prices it as Tree's.
  double inter_lat = (nranks == nnodes ? hw[kHwNet][kTree][p] : hw[kHwNet][a][p]) + us(g.latency_inter);
  if (proto == Protocol::Simple) inter_lat += us(g.latency_inter); // the flush
  if (algo == Algorithm::Ring) {
    if (coll == CollectiveKind::Reduce || coll == CollectiveKind::Broadcast) {
      if (g.same_channels) {
        lat += hw[ring_hw][kRing][p];
      } else {
        const double step = proto == Protocol::Simple ? hw[ring_hw][kTree][p] : hw[ring_hw][kRing][p];
        lat += nsteps * step;
      }
    } else {
      if (nnodes > 1) intra_lat = std::max(intra_lat, ring_net_overhead_us(in.cpu, proto));
      const int inter_steps = nnodes == 1 ? 0 : allreduce ? 2 * (nnodes - 1) : nnodes - 1;
      lat += (nsteps - inter_steps) * intra_lat + inter_steps * inter_lat;
    }
  } else if (algo == Algorithm::Tree) {
    if (allreduce) lat += 2 * ((nranks / nnodes - 1) * intra_lat + log2i(nnodes) * inter_lat);
  } else if (algo == Algorithm::Nvls) {
    lat = intra_lat + (nnodes > 1 ? inter_lat : 0);
  } else if (algo == Algorithm::NvlsTree) {
    lat += intra_lat + 2 * log2i(nnodes) * inter_lat;
  } else if (algo == Algorithm::Pat) {
    lat = k().pat_base_us + log2i(nnodes) * (inter_lat / k().pat_inter_divisor) + nranks * k().pat_per_rank_us;
  }
  return NcclAlgoCost{units::us(lat), units::GBps(bus_bw)};
}

// ---------------------------------------------------------------------------------------------------------------
// ncclTopoGetAlgoTime

std::optional<Seconds> predict(const NcclTuningInput& in, Algorithm algo, Protocol proto)
{
  if (in.library == CollectiveLibrary::Rccl) return rccl_predict(in, algo, proto);
  if (!function_index(in.collective)) return std::nullopt;
  if (in.nranks <= 1) // updateCollCostTable: a single rank is a local copy, priced 0 on Ring/Simple only
    return algo == Algorithm::Ring && proto == Protocol::Simple ? std::optional<Seconds>(Seconds(0)) : std::nullopt;
  if (!priced_by_enqueue(in, algo)) return std::nullopt;
  const auto cost = algo_cost(in, algo, proto);
  if (!cost) return std::nullopt;
  const auto nbytes = static_cast<std::uint64_t>(in.bytes.bytes());
  double bw = gbps(cost->bandwidth);
  double lat = us(cost->latency);
  const int log_size = log2i(nbytes >> 6);
  if (algo == Algorithm::Tree && in.collective == CollectiveKind::AllReduce && log_size >= 0 && log_size < 23)
    bw *= k().tree_correction[static_cast<int>(proto)][log_size];
  if (algo == Algorithm::Ring && proto == Protocol::Simple && in.nnodes > 1 &&
      in.collective == CollectiveKind::AllReduce &&
      nbytes / static_cast<std::uint64_t>(std::max(1, in.comm_channels) * in.nranks) >=
          static_cast<std::uint64_t>(k().ring_plateau_min_bytes_per_rank_channel))
    lat *= in.compute_capability < 80 ? k().ring_plateau_pre_ampere : k().ring_plateau;
  // One operation, so no pipelining discount (numPipeOps = 1).
  return units::us(lat + static_cast<double>(nbytes) / (1000.0 * bw));
}

Seconds ring_net_overhead(CpuVendor cpu, Protocol p)
{
  return Seconds(ring_net_overhead_us(cpu, p) * 1e-6);
}

std::vector<NcclPrediction> table(const NcclTuningInput& in)
{
  if (in.library == CollectiveLibrary::Rccl) return rccl_table(in);
  std::vector<NcclPrediction> out;
  for (int a = 0; a < kNcclAlgorithms; ++a)
    for (int p = 0; p < kNcclProtocols; ++p) {
      const auto algo = static_cast<Algorithm>(a);
      const auto proto = static_cast<Protocol>(p);
      out.push_back({algo, proto, predict(in, algo, proto)});
    }
  return out;
}

// ---------------------------------------------------------------------------------------------------------------
// topoGetAlgoInfo

namespace {

// comm->maxThreads as ncclTopoTuneModel sets it: NCCL_NTHREADS (in.nthreads) for Ring and Tree with Simple and LL,
// NCCL_LL128_NTHREADS (in.ll128_nthreads) with LL128, NCCL's defaults where unset; NVLS and CollNet always
// NCCL_MAX_NTHREADS. 0 where NCCL leaves it unset, which makes the channel trimming below a no-op, as in NCCL.
int max_threads(const NcclTuningInput& in, Algorithm algo, Protocol proto)
{
  const bool ring_or_tree = algo == Algorithm::Ring || algo == Algorithm::Tree;
  if (proto == Protocol::Simple) {
    if (ring_or_tree && in.nthreads > 0) return in.nthreads;
    if (algo == Algorithm::Ring)
      return gbps(in.ring.bw_intra) * in.ring.channels <= k().pci_bw_gbps ? 256 : k().simple_max_threads;
    if (algo == Algorithm::Tree) return k().simple_max_threads;
    if (is_nvls(algo) || is_collnet(algo)) return k().max_threads;
    return 0;
  }
  if (!ring_or_tree) return 0;
  if (proto == Protocol::LL) return in.nthreads > 0 ? in.nthreads : k().ll_max_threads;
  return in.ll128_nthreads > 0 ? in.ll128_nthreads : k().ll128_max_threads;
}

long thread_threshold(const NcclTuningInput& in, Algorithm algo, Protocol proto)
{
  if (proto == Protocol::LL) return k().ll_thread_threshold * (algo == Algorithm::Ring ? in.nranks : 1);
  if (proto == Protocol::LL128) return k().ll128_thread_threshold;
  return k().simple_thread_threshold;
}

} // namespace

std::optional<NcclChoice> choose(const NcclTuningInput& in)
{
  if (in.library == CollectiveLibrary::Rccl) return rccl_choose(in);
  std::optional<NcclChoice> best;
  for (const auto& entry : table(in))
    if (entry.time && (!best || *entry.time < best->time))
      best = NcclChoice{entry.algorithm, entry.protocol, 0, 0, *entry.time};
  if (!best) return std::nullopt;

  const Algorithm algo = best->algorithm;
  const Protocol proto = best->protocol;
  const double nbytes = in.bytes.bytes();
  int nc = in.comm_channels;
  int nt = max_threads(in, algo, proto);
  const double threshold = static_cast<double>(thread_threshold(in, algo, proto));
  if (is_nvls(algo)) {
    nc = in.nvls_channels; // "NVLS should not need more than 16 channels to get peak BW"
  } else {
    // Fewer channels while each thread would have less than `threshold` bytes.
    while (nbytes < static_cast<double>(nc) * nt * threshold && nc >= 2)
      --nc;
  }
  if (!is_nvls(algo) && algo != Algorithm::CollNetDirect) {
    while (nbytes < static_cast<double>(nc) * nt * threshold && nt % 128 == 0)
      nt /= 2;
  }
  if (proto == Protocol::Simple) {
    if (algo == Algorithm::Ring) nt += k().warp_size; // extra warp for sync
    if (algo == Algorithm::Tree) nt += 4 * k().warp_size;
  }
  if (nt / k().warp_size < 3) nt = 3 * k().warp_size;
  if (algo == Algorithm::Tree || algo == Algorithm::Pat) nt = k().max_threads;
  best->channels = nc;
  best->threads = nt;
  return best;
}

// ---------------------------------------------------------------------------------------------------------------
// Refusals

namespace {

[[noreturn]] void refuse(const InputLocation& where, CollectiveKind kind, Algorithm a, std::optional<Protocol> p,
                         const std::string& why, const std::string& fix)
{
  detail::refuse("NCCL", where, kind, a, p, why, fix);
}

} // namespace

void check_request(const NcclTuningInput& in, Algorithm a, std::optional<Protocol> p, const InputLocation& where)
{
  if (in.library == CollectiveLibrary::Rccl) return rccl_check_request(in, a, p, where);
  const CollectiveKind kind = in.collective;
  const auto w = field_of(where, "algorithm");
  if (!function_index(kind))
    refuse(w, kind, a, p,
           "NCCL runs it as grouped point-to-point sends and receives; NCCL_ALGO and NCCL_PROTO do not apply",
           "remove the algorithm and protocol for this collective");
  if (is_collnet(a))
    refuse(w, kind, a, p, "CollNet needs a CollNet (SHARP) network plugin, which Railyard does not model",
           "use Ring, Tree, NVLS or NVLSTree, or leave the algorithm to the cost model");
  const bool allreduce = kind == CollectiveKind::AllReduce;
  const bool ag_rs = is_allgather_or_reducescatter(kind);
  switch (a) {
  case Algorithm::Ring:
    break;
  case Algorithm::Tree:
    if (!allreduce)
      refuse(w, kind, a, p, "NCCL implements Tree only for all_reduce",
             ag_rs ? "use Ring (or PAT with one GPU per node, NVLS on one NVSwitch node)" : "use Ring");
    break;
  case Algorithm::Pat:
    if (!ag_rs)
      refuse(w, kind, a, p, "NCCL implements PAT only for all_gather and reduce_scatter",
             allreduce ? "use Ring or Tree" : "use Ring");
    if (in.gpus_per_node != 1)
      refuse(w, kind, a, p,
             fmt::format("PAT needs exactly one GPU per node and this communicator has {}", in.gpus_per_node),
             "use Ring, or a communicator with one rank per node");
    if (in.compute_capability < 60) refuse(w, kind, a, p, "PAT needs sm60 or newer for CUDA atomics", "use Ring");
    break;
  case Algorithm::Nvls:
  case Algorithm::NvlsTree: {
    if (!in.nvls_supported || in.compute_capability < 90 || in.gpus_per_node <= 2)
      refuse(w, kind, a, p,
             fmt::format("NVLS needs NVSwitch with multicast (NVLink SHARP), sm90 or newer and more than 2 GPUs per "
                         "node; this system has nvls_supported={}, compute capability {}, {} GPUs per node",
                         in.nvls_supported ? "true" : "false", in.compute_capability, in.gpus_per_node),
             "use Ring or Tree, or an H100/H200/B200 NVSwitch system");
    if (a == Algorithm::Nvls) {
      if (kind == CollectiveKind::Broadcast || kind == CollectiveKind::Reduce)
        refuse(w, kind, a, p, "NCCL implements NVLS only for all_reduce, all_gather and reduce_scatter", "use Ring");
      if (in.nnodes > 1)
        refuse(
            w, kind, a, p,
            fmt::format("NVLS spans one node unless CollNet is present, and this communicator has {} nodes", in.nnodes),
            allreduce ? "use NVLSTree (NVLS inside nodes, trees between them), Ring or Tree" : "use Ring");
      if (ag_rs && in.nranks > k().max_nvls_arity)
        refuse(w, kind, a, p, fmt::format("NCCL runs NVLS {} on at most {} ranks", to_string(kind), k().max_nvls_arity),
               "use Ring");
    } else {
      if (!allreduce) refuse(w, kind, a, p, "NCCL implements NVLSTree only for all_reduce", "use Ring");
      if (in.nnodes == 1)
        refuse(w, kind, a, p, "NVLSTree joins several nodes and this communicator has one", "use NVLS or Ring");
    }
    break;
  }
  case Algorithm::CollNetDirect:
  case Algorithm::CollNetChain:
    break;
  case Algorithm::MscclAllPairs:
  case Algorithm::Mscclpp:
    refuse(w, kind, a, p, "MSCCL and MSCCL++ are RCCL's kernels for one AMD MI300X node, not an NCCL algorithm",
           "use Ring, Tree, NVLS or NVLSTree, or leave the algorithm to the cost model");
  }
  if (!p) return;
  const auto wp = field_of(where, "protocol");
  if ((is_nvls(a) || a == Algorithm::Pat) && *p != Protocol::Simple)
    refuse(wp, kind, a, p, fmt::format("NCCL implements {} only with the Simple protocol", nccl_name(a)),
           "use protocol Simple");
  if (*p == Protocol::LL128 && in.overrides.protocol_enable(kind, Protocol::LL128) == NcclEnable::Auto &&
      !ll128_default(in, graph_for(in, a)))
    refuse(wp, kind, a, p,
           fmt::format("NCCL enables LL128 only where NVIDIA tested it (NVLink inside the node, NIC path no further "
                       "than PXB, or PXN on sm90+, compute capability 70/80/90/100/120); here compute capability {}",
                       in.compute_capability),
           "use protocol Simple or LL");
}

void validate(const NcclTuningInput& in, const InputLocation& where)
{
  if (in.library == CollectiveLibrary::Rccl) return rccl_validate(in, where);
  auto bad = [&](const std::string& field, const std::string& rule, const std::string& fix) {
    InputLocation w = where;
    w.field = where.field.empty() ? field : where.field + "." + field;
    throw InputError(w, rule, fix);
  };
  if (in.nranks < 1)
    bad("nranks", fmt::format("nranks is {}; a communicator has at least one rank", in.nranks), "set nranks >= 1");
  if (in.nnodes < 1 || in.gpus_per_node < 1 || in.nnodes * in.gpus_per_node != in.nranks)
    bad("nnodes", fmt::format("nranks {} is not nnodes {} x gpus_per_node {}", in.nranks, in.nnodes, in.gpus_per_node),
        "NCCL's model assumes the same number of ranks on every node; make nranks = nnodes * gpus_per_node");
  if (in.bytes.bytes() < 0) bad("bytes", "bytes is negative", "give the buffer size in bytes, 0 or more");
  if (in.compute_capability < 60 || in.compute_capability >= 200)
    bad("compute_capability", fmt::format("compute capability {} is outside 60..199", in.compute_capability),
        "write it as NCCL does: 80 for A100, 90 for H100/H200, 100 for B200");
  if (in.nranks > 1 && (in.comm_channels < 1 || in.ring.channels < 1 || in.tree.channels < 1))
    bad("comm_channels", "the ring and tree graphs and the communicator need at least one channel",
        "take the channel counts from derive_graphs() or from NCCL's 'Pattern ...' and 'coll channels' log lines");
  for (const auto* g : {&in.ring, &in.tree, &in.nvls})
    if (g->bw_intra.bytes_per_sec() < 0 || g->bw_inter.bytes_per_sec() < 0 || g->channels < 0)
      bad("graph", "graph bandwidths and channel counts cannot be negative", "use the values NCCL's search prints");
}

// ---------------------------------------------------------------------------------------------------------------
// Standard nodes and the channel graphs NCCL's search gives them

NodeSpec node_spec(NodeLayout layout)
{
  NodeSpec s;
  switch (layout) {
  case NodeLayout::DgxA100:
    s = {"DGX A100",
         8,
         80,
         12,
         false,
         8,
         units::GBps(25.0),
         units::GBps(24.0),
         2,
         CpuVendor::Amd,
         "NVIDIA DGX A100 user guide: 8x A100 SXM4, 12 NVLink3 links each to six NVSwitches, 8x ConnectX-6 HDR "
         "200 Gb/s compute NICs, two GPUs and two NICs per PCIe Gen4 switch, 2x AMD EPYC 7742. NCCL counts "
         "20 GB/s per sm80 NVLink (src/graph/topo.h), 24 GB/s per Gen4 x16 link and port speed / 8 per NIC",
         "",
         BytesPerSec{0},
         0};
    break;
  case NodeLayout::DgxH100:
    s = {"DGX H100",
         8,
         90,
         18,
         true,
         8,
         units::GBps(50.0),
         units::GBps(48.0),
         1,
         CpuVendor::Intel,
         "NVIDIA DGX H100 user guide: 8x H100 SXM5, 18 NVLink4 links each to four NVSwitches with NVLink SHARP, 8x "
         "ConnectX-7 400 Gb/s compute NICs, one GPU and one NIC per PCIe Gen5 switch, 2x Intel Xeon 8480C. NCCL's "
         "topology dump of such a node prints NVL[370.8], PCI[48.0] and NET[50.0] (NVIDIA/nccl-tests issue 256)",
         "",
         BytesPerSec{0},
         0};
    break;
  case NodeLayout::HgxB200:
    s = {"HGX B200",
         8,
         100,
         18,
         true,
         8,
         units::GBps(50.0),
         units::GBps(48.0),
         1,
         CpuVendor::Intel,
         "NVIDIA DGX B200 user guide: 8x B200, 18 NVLink5 links each to two NVSwitches with NVLink SHARP, 8x "
         "ConnectX-7 400 Gb/s compute NICs on PCIe Gen5, 2x Intel Xeon 8570. NCCL counts 40 GB/s per sm100 NVLink "
         "(src/graph/topo.h)",
         "",
         BytesPerSec{0},
         0};
    break;
  case NodeLayout::Mi300x:
    s = {"8x MI300X",
         8,
         0, // compute capability is NVIDIA's; the GPU is gfx942
         7,
         false,
         8,
         units::GBps(50.0),
         units::GBps(48.0),
         1,
         CpuVendor::Amd,
         "AMD Instinct MI300X platform: 8x MI300X OAM (gfx942, 304 CUs) on a fully connected xGMI mesh, one link per "
         "GPU pair (7 per GPU), no switch; each GPU on PCIe Gen5 x16 with its own NIC (400 Gb/s assumed), 2x AMD EPYC "
         "with one NUMA node of four GPUs each: the layout of RCCL's rome_model_81 (rome_model_79 without NICs, "
         "src/graph/rome_models.cc). RCCL 2.21.5 counts 48 GB/s per gfx94x xGMI link (src/graph/topo.h "
         "GFX94X_XGMI_WIDTH), 16 x 240 / 80 = 48 GB/s per Gen5 x16 link (src/graph/topo.cc) and port speed / 8 per "
         "NIC; its MI300X graphs take their bandwidth from the xGMI total alone",
         "gfx942",
         units::GBps(48.0),
         304};
    break;
  }
  return s;
}

namespace {

double nvlink_bw_gbps(int cc)
{
  return cc >= 100 ? k().nvlink_bw_sm100_gbps : cc >= 90 ? k().nvlink_bw_sm90_gbps : k().nvlink_bw_sm80_gbps;
}

std::vector<double> speed_array(int cc, bool with_net)
{
  auto to_vec = [](const auto& arr) { return std::vector<double>(arr.begin(), arr.end()); };
  if (cc >= 100) return with_net ? to_vec(k().speed_inter_sm100) : to_vec(k().speed_intra_sm100);
  if (cc >= 90) return with_net ? to_vec(k().speed_inter_sm90) : to_vec(k().speed_intra_sm90);
  return with_net ? to_vec(k().speed_inter) : to_vec(k().speed_intra);
}

enum class Pattern { Ring, Tree, Nvls };

struct Solution {
  int channels = 0;
  double intra = 0, inter = 0; // GB/s per channel
};

// How many channels of `pattern` fit at per-channel speeds (intra, inter), counting what each channel takes from
// the NVLink, PCIe and NIC links of a symmetric NVSwitch node. Closed forms of what NCCL's depth-first search finds:
//  - one node (NCCL trims the NICs): a ring or a replayed tree chain takes `intra` in and out of each GPU's NVLinks
//    per channel; an NVLS channel takes `intra` from every GPU and twice that from its head GPU;
//  - several nodes: each channel enters and leaves the node through NICs, at most floor(min(NIC, PCIe) / inter) per
//    NIC, and its NVLink hops rotate over the GPUs, loading each with (gpus-1)/gpus of the channels; NVLS channels
//    take one NIC each, at most one head per GPU.
int capacity(const NodeSpec& node, int nnodes, Pattern pattern, double intra, double inter, int max_channels)
{
  constexpr double kEps = 1e-6; // NCCL rounds link bandwidth to 1e-3 GB/s while subtracting (SUB_ROUND)
  const double nvl = node.nvlinks_per_gpu * nvlink_bw_gbps(node.compute_capability);
  const int g = node.gpus;
  if (nnodes == 1) {
    if (pattern == Pattern::Nvls) {
      int n = 0;
      while (n < std::min(max_channels, g) && (n + 2) * intra <= nvl + kEps)
        ++n;
      return n;
    }
    return std::min(max_channels, static_cast<int>(std::floor(nvl / intra + kEps)));
  }
  const int per_nic = static_cast<int>(std::floor(std::min(gbps(node.nic_bw), gbps(node.pcie_bw)) / inter + kEps));
  if (pattern == Pattern::Nvls) {
    if (per_nic < 1) return 0;
    int n = 0;
    while (n < std::min({max_channels, g, node.nics}) && (n + 2) * intra <= nvl + kEps)
      ++n;
    return n;
  }
  const int nvl_limit = static_cast<int>(std::floor(nvl / (intra * (g - 1) / g) + kEps));
  return std::min({max_channels, node.nics * per_nic, nvl_limit});
}

// ncclTopoCompute (src/graph/search.cc) on the capacity model above.
Solution search(const NodeSpec& node, int nnodes, Pattern pattern, int min_channels, int max_channels)
{
  const int cc = node.compute_capability;
  const bool with_net = nnodes > 1;
  const auto speeds = speed_array(cc, with_net);
  const int nspeeds = static_cast<int>(speeds.size());
  const int g = node.gpus;
  const double nvl = node.nvlinks_per_gpu * nvlink_bw_gbps(cc);
  // system->maxBw: best GPU->GPU path (one node) or GPU->NIC path; system->totalBw: a GPU's NVLink total.
  const double max_bw = with_net ? std::min(gbps(node.nic_bw), gbps(node.pcie_bw)) : nvl;
  const double total_bw = nvl;
  const double pattern_total = (pattern != Pattern::Ring && g > 1) ? total_bw * g / (g - 1) : total_bw;
  auto fits = [&](double intra, double inter) {
    const int n = capacity(node, nnodes, pattern, intra, inter, max_channels);
    return n >= min_channels ? n : 0;
  };
  auto better = [&](const Solution& s, const Solution& ref) {
    if (pattern == Pattern::Nvls)
      return (s.channels > ref.channels && s.channels <= g) || s.channels * s.inter > ref.channels * ref.inter;
    return s.channels * s.intra > ref.channels * ref.intra;
  };

  // Pass 1: from the fastest admissible speed down until a solution is good enough.
  int idx = 0;
  while ((speeds[idx] > max_bw || speeds[idx] * min_channels > pattern_total) && idx < nspeeds - 1)
    ++idx;
  Solution best;
  while (true) {
    const Solution s{fits(speeds[idx], speeds[idx]), speeds[idx], speeds[idx]};
    if (s.channels > 0 && better(s, best)) best = s;
    const bool perfect = best.channels == max_channels;
    if (perfect || (best.channels > 0 && best.channels * best.inter >= total_bw)) break;
    if (idx < nspeeds - 1 && (best.channels == 0 || speeds[idx + 1] / best.inter > k().speed_step_ratio)) {
      ++idx;
      continue;
    }
    break;
  }
  if (best.channels == 0) return best;

  // ncclTopoDupChannels: split fast ring/tree channels in two.
  if (pattern != Pattern::Nvls && best.intra >= k().dup_min_bw_gbps &&
      !(cc > 80 && best.intra < k().dup_skip_below_gbps && best.channels > k().dup_skip_above_channels)) {
    const int dup = std::min(best.channels * 2, max_channels);
    const int div = (dup + best.channels - 1) / best.channels;
    best = {dup, best.intra / div, best.inter / div};
  }

  // Pass 2: raise the speed while the channel count still fits.
  idx = 0;
  while (speeds[idx] > best.inter && idx < nspeeds - 1)
    ++idx;
  Solution tmp{best.channels, speeds[idx], speeds[idx]};
  const int need = best.channels;
  while (idx > 0) {
    if (pattern == Pattern::Ring) {
      --idx;
      tmp.intra = tmp.inter = speeds[idx];
      const int n = capacity(node, nnodes, pattern, tmp.intra, tmp.inter, max_channels);
      if (n >= need && n * tmp.intra > best.channels * best.intra) best = {n, tmp.intra, tmp.inter};
    } else if (pattern == Pattern::Nvls) {
      if (!(tmp.inter == best.inter && tmp.inter < tmp.intra * 2)) break;
      --idx;
      tmp.inter = speeds[idx];
      if (capacity(node, nnodes, pattern, tmp.intra, tmp.inter, need) >= need && tmp.inter > best.inter)
        best.inter = tmp.inter;
    } else {
      if (!(tmp.intra == best.intra && tmp.intra < tmp.inter * 2)) break;
      --idx;
      tmp.intra = speeds[idx];
      if (capacity(node, nnodes, pattern, tmp.intra, tmp.inter, need) >= need && tmp.intra > best.intra)
        best.intra = tmp.intra;
    }
  }
  return best;
}

NcclGraph to_graph(const Solution& s, bool same_channels, bool simple_tree)
{
  NcclGraph g;
  g.channels = s.channels;
  g.bw_intra = units::GBps(s.intra);
  g.bw_inter = units::GBps(s.inter);
  g.type_intra = NcclPath::Nvl;
  g.type_inter = NcclPath::Pix;
  g.same_channels = same_channels;
  g.simple_tree = simple_tree;
  return g;
}

} // namespace

NcclSystemGraphs derive_graphs(const NodeSpec& node, int nnodes, NcclChannelLimits limits)
{
  if (!node.gfx.empty()) return rccl_derive_graphs(node, nnodes, limits);
  NcclSystemGraphs out;
  const int cc = node.compute_capability;
  // src/init.cc: ring 1..MAXCHANNELS/2 channels, tree exactly as many as the ring, NVLS up to one head per GPU
  // (forced to every GPU on one node).
  const Solution ring = search(node, nnodes, Pattern::Ring, 1, k().max_channels / 2);
  const Solution tree = search(node, nnodes, Pattern::Tree, ring.channels, ring.channels);
  // Rings and trees through different NICs per channel cannot all replay channel 0 (sameChannels 0). With one GPU
  // per NIC switch, sm90+ falls back from the balanced tree to NCCL_TOPO_PATTERN_TREE ("Try a simpler tree").
  out.ring = to_graph(ring, nnodes == 1, false);
  out.tree = to_graph(tree, nnodes == 1, nnodes > 1 && cc >= 90 && node.gpus_per_nic_switch < 2);
  if (cc >= 90) {
    const int nvls_max = std::min(k().max_nvls_arity, node.gpus);
    const Solution nvls = search(node, nnodes, Pattern::Nvls, nnodes == 1 ? nvls_max : 1, nvls_max);
    out.nvls = to_graph(nvls, false, false);
  }
  // ncclTopoPostset (src/graph/connect.cc): double the channels, then again for fast multi-node sm90 rings, then at
  // least as many as NVLS launches.
  int comm = std::min(k().max_channels, 2 * std::min(ring.channels, tree.channels));
  if (cc >= 90 && nnodes > 1 && ring.intra > k().postset_double_min_ring_bw_gbps &&
      comm < k().postset_double_below_channels)
    comm = std::min(k().max_channels, 2 * comm);
  // "Honor NCCL_MIN_NRINGS/NCCL_MAX_NRINGS. We permit combining max, then min, to only use the first channels, then
  // duplicate them." (connect.cc; both within MAXCHANNELS).
  if (limits.max > 0) comm = std::min(comm, limits.max);
  if (limits.min > 0) comm = std::max(comm, std::min(limits.min, k().max_channels));
  const bool nvls_supported = node.nvswitch_multicast && cc >= 90 && node.gpus > 2;
  out.nvls_channels = nvls_supported ? (cc >= 100 ? k().nvls_channels_sm100 : k().nvls_channels_sm90) : 0;
  out.comm_channels = std::max(comm, out.nvls_channels);
  return out;
}

NcclTuningInput make_input(const NodeSpec& node, int nnodes, CollectiveKind kind, Bytes bytes)
{
  const auto graphs = derive_graphs(node, nnodes);
  NcclTuningInput in;
  in.collective = kind;
  in.bytes = bytes;
  in.nnodes = nnodes;
  in.gpus_per_node = node.gpus;
  in.nranks = nnodes * node.gpus;
  in.compute_capability = node.compute_capability;
  in.cpu = node.cpu;
  in.nvls_supported = node.nvswitch_multicast && node.compute_capability >= 90 && node.gpus > 2;
  in.ring = graphs.ring;
  in.tree = graphs.tree;
  in.nvls = graphs.nvls;
  in.comm_channels = graphs.comm_channels;
  in.nvls_channels = graphs.nvls_channels;
  in.library = graphs.library;
  in.rccl = graphs.rccl;
  return in;
}

} // namespace railyard::models
