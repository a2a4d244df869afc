// Layer-wise text workloads: ASTRA-sim 1.0 (inputs/workload/ASTRA-sim-1.0) and SimAI/AICB, which extends it.
// The training loop of each parallelism policy follows ASTRA-sim's Workload.cc as SimAI keeps it
// (aliyun/SimAI astra-sim-alibabacloud/astra-sim/workload/Workload.cc): which phases compute, which collectives
// are issued, which wait (blocking) and which overlap (non-blocking), and in which group.
#include "railyard/workloads/readers.hpp"

#include "file_io.hpp"

#include "railyard/common/numbers.hpp"

#include <fmt/format.h>

#include <array>
#include <fstream>
#include <limits>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace railyard::workloads {

namespace {

enum class Policy {
  Data,
  Model,
  HybridDataModel,
  HybridModelData,
  HybridCustomized,
  Transformer,
  TransformerFwdInBckwd,
  Dlrm,
  Micro
};

std::optional<Policy> policy_from(const std::string& s)
{
  static const std::map<std::string, Policy> names = {
      {"DATA", Policy::Data},
      {"MODEL", Policy::Model},
      {"HYBRID_DATA_MODEL", Policy::HybridDataModel},
      {"HYBRID_MODEL_DATA", Policy::HybridModelData},
      {"HYBRID_CUSTOMIZED", Policy::HybridCustomized},
      {"HYBRID_TRANSFORMER", Policy::Transformer},
      {"HYBRID_TRANSFORMER_FWD_IN_BCKWD", Policy::TransformerFwdInBckwd},
      {"HYBRID_DLRM", Policy::Dlrm},
      {"HYBRID_DLRM_ENHANCED", Policy::Dlrm},
      {"MICRO", Policy::Micro}};
  auto it = names.find(s);
  if (it == names.end()) return std::nullopt;
  return it->second;
}

// Process groups a phase can use. ASTRA-sim names dimensions, not groups: "all dimensions" is the whole world
// (labelled DP for data-parallel phases and TP for model-parallel ones), and the hybrid policies split the world
// at dimension 0 into consecutive and strided groups.
enum Role : int {
  kWorldDp,       // DATA / MICRO / DLRM weight gradients: every rank
  kWorldTp,       // MODEL forward / input gradients: every rank
  kTp,            // consecutive blocks of `model_parallel` ranks
  kDp,            // the ranks with the same position in their TP block (stride model_parallel), same PP stage
  kEp,            // SimAI _EP: consecutive blocks of `ep` ranks within a DP group
  kDpEp,          // SimAI _DP_EP: same position in the EP block, stride ep within the DP group
  kTpStrided,     // HYBRID_MODEL_DATA model groups: stride world / model_parallel
  kDpConsecutive, // HYBRID_MODEL_DATA data groups: consecutive blocks of world / model_parallel
  kRoleCount
};

struct Comm {
  CollectiveKind kind = CollectiveKind::AllReduce;
  Bytes bytes{0};
  Role role = kWorldDp;
};

struct Layer {
  int line = 0;
  std::string name;
  double fwd_ticks = 0, ig_ticks = 0, wg_ticks = 0, update_ticks = 0;
  std::optional<Comm> fwd, ig, wg;
  Policy policy = Policy::Data; // the file's, or the layer's own for HYBRID_CUSTOMIZED
};

struct Header {
  Policy policy = Policy::Data;
  std::optional<int> model_parallel, ep, pp, vpp, ga, all_gpus, last_bottom_layer;
  std::optional<long long> pp_comm;
  std::set<int> checkpoints, checkpoint_initiates;
};

class LayerReader {
public:
  LayerReader(std::string path, LayerWorkloadOptions options, bool simai)
      : path_(std::move(path)), options_(options), simai_(simai)
  {
  }

  Workload read()
  {
    parse();
    decide_sizes();
    build();
    validate(w_);
    return std::move(w_);
  }

private:
  [[noreturn]] void fail(int line, const std::string& field, std::string rule, std::string fix)
  {
    throw InputError({path_, line, field}, std::move(rule), std::move(fix));
  }

  // A whole number in the range the field's consumer can take (an int group size, a byte count up to 2^53).
  long long integer(const std::string& tok, int line, const std::string& field, long long min = kMinInt64,
                    long long max = kMaxInt64)
  {
    try {
      return parse_integer(tok, min, max);
    } catch (const std::invalid_argument& e) {
      fail(line, field, e.what(), fmt::format("write a whole number {}", integer_range_words(min, max)));
    }
  }

  static constexpr long long kMinInt64 = std::numeric_limits<long long>::min();
  static constexpr long long kMaxInt64 = std::numeric_limits<long long>::max();
  static constexpr long long kMaxInt = std::numeric_limits<int>::max();
  static constexpr long long kMaxRanks = 1 << 20; // the most GPUs a cluster here has
  static constexpr auto kMaxSize = static_cast<long long>(limits::kMaxBytes);

  std::optional<Comm> comm(const std::string& tok, const std::string& size_tok, int line, const std::string& field,
                           Role default_role)
  {
    const long long size = integer(size_tok, line, field + " size", 0, kMaxSize);
    if (tok == "NONE") return std::nullopt;
    std::string base = tok;
    Role role = default_role;
    for (const auto& [suffix, r] : {std::pair<std::string, Role>{"_DP_EP", kDpEp}, {"_EP", kEp}})
      if (detail::ends_with(base, suffix)) {
        if (!simai_)
          fail(line, field, fmt::format("'{}' uses SimAI's group suffix {} in an ASTRA-sim 1.0 workload", tok, suffix),
               "read the file as a SimAI workload (kind: simai)");
        base = base.substr(0, base.size() - suffix.size());
        role = r;
        break;
      }
    static const std::map<std::string, CollectiveKind> kinds = {
        {"ALLREDUCE", CollectiveKind::AllReduce},
        {"ALLGATHER", CollectiveKind::AllGather},
        {"REDUCESCATTER", CollectiveKind::ReduceScatter},
        {"ALLTOALL", CollectiveKind::AllToAll},
        // ASTRA-sim's all-reduce built from all-to-all phases: the same result, so an all-reduce here.
        {"ALLREDUCEALLTOALL", CollectiveKind::AllReduce},
        {"BROADCAST", CollectiveKind::Broadcast}};
    auto it = kinds.find(base);
    if (it == kinds.end())
      fail(line, field, fmt::format("unknown communication type '{}'", tok),
           "use NONE, ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, ALLREDUCEALLTOALL or BROADCAST, optionally with "
           "SimAI's _EP or _DP_EP suffix");
    return Comm{it->second, Bytes(static_cast<double>(size)), role};
  }

  void parse()
  {
    std::ifstream in(path_);
    if (!in) fail(0, "", "cannot open the file", "check the path and that it is readable");
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) {
      if (!l.empty() && l.back() == '\r') l.pop_back();
      lines.push_back(l);
    }
    auto tokens = [](const std::string& l) {
      std::istringstream s(l);
      std::vector<std::string> t;
      for (std::string x; s >> x;)
        t.push_back(x);
      return t;
    };
    static const std::regex aicb_re(R"(^\s*\[\s*rank\d+\s*~\s*rank\d+\s*\]\s*$)");
    if (!lines.empty() && std::regex_match(lines[0], aicb_re))
      fail(1, "trace", "this is an AICB physical workload CSV (its first line is the rank range [rankA ~ rankB])",
           "read it with trace: aicb");
    if (!lines.empty() && lines[0].find_first_not_of(" \t") != std::string::npos &&
        lines[0][lines[0].find_first_not_of(" \t")] == '{')
      fail(1, "trace", "this is a JSON trace, not a layer-wise text workload",
           "read a PyTorch profiler (Kineto) trace with trace: kineto, a Chakra JSON with trace: chakra");
    if (lines.empty() || tokens(lines[0]).empty())
      fail(1, "policy", "the first line must name the parallelism policy",
           "start with DATA, MODEL, HYBRID_... or MICRO");
    auto head = tokens(lines[0]);
    auto policy = policy_from(head[0]);
    if (!policy)
      fail(1, "policy", fmt::format("unknown parallelism policy '{}'", head[0]),
           "use DATA, MODEL, HYBRID_DATA_MODEL, HYBRID_MODEL_DATA, HYBRID_CUSTOMIZED, HYBRID_TRANSFORMER, "
           "HYBRID_TRANSFORMER_FWD_IN_BCKWD, HYBRID_DLRM or MICRO");
    h_.policy = *policy;
    for (std::size_t i = 1; i < head.size(); ++i) {
      const std::string& k = head[i];
      auto value = [&](const std::string& field, long long min, long long max) {
        if (i + 1 >= head.size()) fail(1, field, fmt::format("'{}' has no value", k), "write '" + k + " N'");
        return integer(head[++i], 1, field, min, max);
      };
      // Group sizes and counts of ranks, as ints.
      auto ranks = [&](const std::string& field) { return static_cast<int>(value(field, 1, kMaxRanks)); };
      auto set_list = [&](std::set<int>& out, const std::string& field) {
        const long long n = value(field, 0, kMaxInt);
        for (long long j = 0; j < n; ++j)
          out.insert(static_cast<int>(value(field, 0, kMaxInt)));
      };
      if (k == "model_parallel_NPU_group:")
        h_.model_parallel = ranks("model_parallel_NPU_group");
      else if (k == "ep:")
        h_.ep = ranks("ep");
      else if (k == "pp:")
        h_.pp = ranks("pp");
      else if (k == "vpp:")
        h_.vpp = static_cast<int>(value("vpp", 1, kMaxInt));
      else if (k == "ga:")
        h_.ga = static_cast<int>(value("ga", 1, kMaxInt));
      else if (k == "all_gpus:")
        h_.all_gpus = ranks("all_gpus");
      else if (k == "pp_comm" || k == "pp_comm:")
        h_.pp_comm = value("pp_comm", 0, kMaxSize);
      else if (k == "checkpoints:")
        set_list(h_.checkpoints, "checkpoints");
      else if (k == "checkpoint_initiates:")
        set_list(h_.checkpoint_initiates, "checkpoint_initiates");
      else if (k == "DLRM_LAST_BOTTOM_LAYER:")
        h_.last_bottom_layer = static_cast<int>(value("DLRM_LAST_BOTTOM_LAYER", 0, kMaxInt));
      else if (i == 1 && h_.policy == Policy::Dlrm) // ASTRA-sim 1.0: "HYBRID_DLRM <last bottom layer>"
        h_.last_bottom_layer = static_cast<int>(integer(k, 1, "DLRM last bottom layer", 0, kMaxInt));
      else
        fail(1, k, fmt::format("unknown header field '{}'", k),
             "use model_parallel_NPU_group:, ep:, pp:, vpp:, ga:, all_gpus:, pp_comm, checkpoints:, "
             "checkpoint_initiates: or DLRM_LAST_BOTTOM_LAYER:");
    }
    if (lines.size() < 2 || tokens(lines[1]).empty())
      fail(2, "layers", "the second line must give the number of layers", "write the layer count on line 2");
    const long long n = integer(tokens(lines[1])[0], 2, "layers", 0, kMaxInt);
    const std::size_t want = h_.policy == Policy::HybridCustomized ? 13 : 12;
    std::size_t li = 2;
    for (long long k = 0; k < n; ++k) {
      while (li < lines.size() && tokens(lines[li]).empty())
        ++li;
      if (li >= lines.size())
        fail(static_cast<int>(lines.size()), "layers", fmt::format("line 2 says {} layers but the file has {}", n, k),
             "fix the layer count on line 2");
      auto t = tokens(lines[li]);
      const int line = static_cast<int>(li + 1);
      if (t.size() != want)
        fail(line, "layer", fmt::format("a layer line has {} fields, not {}", t.size(), want),
             "write: name reserved fwd_time fwd_type fwd_size ig_time ig_type ig_size wg_time wg_type wg_size "
             "update_time" +
                 std::string(want == 13 ? " policy" : ""));
      Layer l;
      l.line = line;
      l.name = t[0];
      l.policy = h_.policy;
      if (h_.policy == Policy::HybridCustomized) {
        auto p = policy_from(t[12]);
        if (!p || *p == Policy::HybridCustomized || *p == Policy::Micro || *p == Policy::Dlrm)
          fail(line, "policy", fmt::format("unknown per-layer policy '{}'", t[12]),
               "use DATA, MODEL, HYBRID_DATA_MODEL or HYBRID_MODEL_DATA");
        l.policy = *p;
      }
      integer(t[1], line, "reserved");
      // Any count of ticks an int64 holds; the time it makes (ticks x tick) is checked against 1e6 s by validate().
      auto ticks = [&](const std::string& tok, const std::string& field) {
        return static_cast<double>(integer(tok, line, field, 0, kMaxInt64));
      };
      l.fwd_ticks = ticks(t[2], "fwd compute time");
      l.ig_ticks = ticks(t[5], "ig compute time");
      l.wg_ticks = ticks(t[8], "wg compute time");
      l.update_ticks = ticks(t[11], "wg update time");
      auto [model_role, data_role] = roles_of(l.policy);
      l.fwd = comm(t[3], t[4], line, "fwd comm type", model_role);
      l.ig = comm(t[6], t[7], line, "ig comm type", model_role);
      l.wg = comm(t[9], t[10], line, "wg comm type", data_role);
      layers_.push_back(std::move(l));
      ++li;
    }
    for (; li < lines.size(); ++li)
      if (!tokens(lines[li]).empty())
        fail(static_cast<int>(li + 1), "layers", fmt::format("more layer lines than the {} that line 2 announces", n),
             "fix the layer count on line 2");
    if (h_.policy == Policy::Dlrm && layers_.size() > 0) {
      // ASTRA-sim gives DLRM's first layer (the embeddings) every dimension for all three phases.
      for (auto* c : {&layers_[0].fwd, &layers_[0].ig, &layers_[0].wg})
        if (*c) (*c)->role = kWorldDp;
    }
  }

  // Groups of the model-parallel (fwd, ig) and data-parallel (wg) phases under a policy (decode_involved_dimensions).
  static std::pair<Role, Role> roles_of(Policy p)
  {
    switch (p) {
    case Policy::Data:
    case Policy::Dlrm:
    case Policy::Micro:
      return {kWorldTp, kWorldDp};
    case Policy::Model:
      return {kWorldTp, kWorldDp};
    case Policy::HybridModelData:
      return {kTpStrided, kDpConsecutive};
    case Policy::HybridDataModel:
    case Policy::Transformer:
    case Policy::TransformerFwdInBckwd:
    case Policy::HybridCustomized:
      break;
    }
    return {kTp, kDp};
  }

  void decide_sizes()
  {
    world_ = options_.world_size > 0 ? options_.world_size : h_.all_gpus.value_or(0);
    if (world_ <= 0)
      fail(1, "all_gpus", "the file does not say how many GPUs run it (no all_gpus: in the header) and none was given",
           "give the GPU count as workload.world_size: N in the scenario, or all_gpus: N on the file's first line");
    mp_ = options_.model_parallel > 0 ? options_.model_parallel : h_.model_parallel.value_or(0);
    ep_ = h_.ep.value_or(1);
    pp_ = h_.pp.value_or(1);
    bool needs_mp = false;
    for (const auto& l : layers_)
      for (const auto* c : {&l.fwd, &l.ig, &l.wg})
        if (*c && (*c)->role != kWorldDp && (*c)->role != kWorldTp) needs_mp = true;
    if (!needs_mp && mp_ == 0) mp_ = 1;
    if (mp_ <= 0)
      fail(1, "model_parallel_NPU_group", "the hybrid policy needs a model-parallel group size and the file gives none",
           "set LayerWorkloadOptions::model_parallel (`model_parallel:` in the scenario)");
    if (ep_ <= 0 || pp_ <= 0) fail(1, "ep/pp", "ep and pp must be >= 1", "fix the header");
    if (world_ % (mp_ * pp_) != 0)
      fail(1, "all_gpus",
           fmt::format("the parallelism does not divide the GPU count: {} GPUs is not a multiple of TP {} x PP {}",
                       world_, mp_, pp_),
           "choose a GPU count that is a multiple of model_parallel_NPU_group x pp");
    dp_ = world_ / (mp_ * pp_);
    if (dp_ % ep_ != 0)
      fail(1, "ep",
           fmt::format("the parallelism does not divide the GPU count: data-parallel size {} (= {} GPUs / TP {} / PP "
                       "{}) is not a multiple of EP {}",
                       dp_, world_, mp_, pp_, ep_),
           "choose ep dividing the data-parallel size");
    if (pp_ > 1 || h_.vpp || h_.ga || h_.pp_comm)
      w_.notes.push_back(fmt::format(
          "pipeline parallelism (pp {}, vpp {}, ga {}, pp_comm {} bytes) is not expanded into stages: as in SimAI's "
          "analytical mode every rank runs the file's layer list; pipeline send/recv and bubbles are not modelled",
          pp_, h_.vpp.value_or(1), h_.ga.value_or(1), h_.pp_comm.value_or(0)));
  }

  // The communicator of `role` for every rank, created on first use. Rank layout (Megatron's): rank =
  // tp + TP * (dp + DP * pp), EP blocks inside each DP group.
  const std::vector<int>& comm_of_role(Role role)
  {
    auto& map = role_comms_[role];
    if (!map.empty()) return map;
    map.assign(world_, -1);
    auto tp_of = [&](int r) { return r % mp_; };
    auto dp_of = [&](int r) { return (r / mp_) % dp_; };
    auto pp_of = [&](int r) { return r / (mp_ * dp_); };
    auto key_members = [&](auto key, GroupKind kind, const char* label) {
      std::map<std::vector<int>, std::vector<int>> groups; // key -> members in rank order
      for (int r = 0; r < world_; ++r)
        groups[key(r)].push_back(r);
      for (auto& [k, members] : groups) {
        std::string name = fmt::format("{} {}", label, w_.communicators.size());
        int id = w_.add_communicator(std::move(name), kind, members);
        for (int r : members)
          map[r] = id;
      }
    };
    const int block = world_ / mp_; // HYBRID_MODEL_DATA: data groups are consecutive blocks of this size
    switch (role) {
    case kWorldDp:
      key_members([](int) { return std::vector<int>{}; }, GroupKind::DP, "world(dp)");
      break;
    case kWorldTp:
      key_members([](int) { return std::vector<int>{}; }, GroupKind::TP, "world(tp)");
      break;
    case kTp:
      key_members([&](int r) { return std::vector<int>{dp_of(r), pp_of(r)}; }, GroupKind::TP, "tp");
      break;
    case kDp:
      key_members([&](int r) { return std::vector<int>{tp_of(r), pp_of(r)}; }, GroupKind::DP, "dp");
      break;
    case kEp:
      key_members([&](int r) { return std::vector<int>{tp_of(r), pp_of(r), dp_of(r) / ep_}; }, GroupKind::EP, "ep");
      break;
    case kDpEp:
      key_members([&](int r) { return std::vector<int>{tp_of(r), pp_of(r), dp_of(r) % ep_}; }, GroupKind::DP, "dp_ep");
      break;
    case kTpStrided:
      key_members([&](int r) { return std::vector<int>{r % block}; }, GroupKind::TP, "tp");
      break;
    case kDpConsecutive:
      key_members([&](int r) { return std::vector<int>{r / block}; }, GroupKind::DP, "dp");
      break;
    case kRoleCount:
      break;
    }
    return map;
  }

  // ---- the training loop, one program shared by every rank ----

  static constexpr StreamId kCompute = 0, kModelComm = 1, kDataComm = 2;

  OpId compute(const Layer& l, const char* phase, double ticks)
  {
    OpId id = b_.add(Op::make_compute(0, Bytes(0), kCompute), l.name + " " + phase);
    b_.set_source_id(id, static_cast<std::uint64_t>(l.line));
    b_.set_measured(id, std::nullopt, options_.tick * ticks);
    if (wait_for_) {
      b_.add_dep(id, *wait_for_);
      wait_for_.reset();
    }
    return id;
  }

  OpId collective(const Layer& l, const char* phase, const Comm& c, StreamId stream, OpId after)
  {
    comm_of_role(c.role); // create the communicators
    int root = c.kind == CollectiveKind::Broadcast ? 0 : -1;
    OpId id = b_.add(Op::make_collective(c.kind, c.bytes, c.role, root, stream), l.name + " " + phase);
    b_.set_source_id(id, static_cast<std::uint64_t>(l.line));
    b_.add_dep(id, after);
    return id;
  }

  void weight_update(const Layer& l, OpId wg_comm)
  {
    if (l.update_ticks <= 0) return;
    OpId id = b_.add(Op::make_compute(0, Bytes(0), kUnordered), l.name + " weight update");
    b_.set_source_id(id, static_cast<std::uint64_t>(l.line));
    b_.set_measured(id, std::nullopt, options_.tick * l.update_ticks);
    b_.add_dep(id, wg_comm);
  }

  void forward(std::size_t i, bool blocking_comm)
  {
    const Layer& l = layers_[i];
    OpId c = compute(l, "fwd", l.fwd_ticks);
    if (l.fwd && l.policy != Policy::Data) { // a HYBRID_CUSTOMIZED layer marked DATA has no model-parallel comm
      OpId f = collective(l, "fwd comm", *l.fwd, kModelComm, c);
      if (blocking_comm) wait_for_ = f;
    }
  }

  void build()
  {
    b_ = RankGraphBuilder(path_, SourceKind::Line);
    b_.set_stream_label(kCompute, "compute");
    b_.set_stream_label(kModelComm, "model-parallel comm");
    b_.set_stream_label(kDataComm, "data-parallel comm");
    const std::size_t n = layers_.size();
    const Policy p = h_.policy;
    if (p == Policy::Micro) {
      // SimAI issues only the first layer; every line is issued here, one after another (a size sweep).
      std::optional<OpId> prev;
      for (const auto& l : layers_) {
        if (!l.wg) continue;
        comm_of_role(l.wg->role);
        OpId id = b_.add(Op::make_collective(l.wg->kind, l.wg->bytes, l.wg->role, -1, kDataComm), l.name + " wg comm");
        b_.set_source_id(id, static_cast<std::uint64_t>(l.line));
        if (prev) b_.add_dep(id, *prev);
        prev = id;
      }
    } else if (p == Policy::Data) {
      for (std::size_t i = 0; i < n; ++i)
        compute(layers_[i], "fwd", layers_[i].fwd_ticks);
      for (std::size_t k = n; k-- > 0;) {
        const Layer& l = layers_[k];
        OpId c = compute(l, "wg", l.wg_ticks);
        if (l.wg) weight_update(l, collective(l, "wg comm", *l.wg, kDataComm, c));
        if (k > 0) compute(l, "ig", l.ig_ticks);
      }
    } else if (p == Policy::Dlrm) {
      build_dlrm();
    } else {
      const bool transformer = p == Policy::Transformer || p == Policy::TransformerFwdInBckwd;
      for (std::size_t i = 0; i < n; ++i)
        forward(i, true);
      for (std::size_t k = n; k-- > 0;) {
        const Layer& l = layers_[k];
        if (p == Policy::TransformerFwdInBckwd && h_.checkpoint_initiates.count(static_cast<int>(k))) {
          // Recompute from the nearest checkpoint at or below this layer up to the layer before it.
          std::size_t c = k;
          while (c > 0 && !h_.checkpoints.count(static_cast<int>(c)))
            --c;
          for (std::size_t r = c; r < k; ++r)
            forward(r, true);
        }
        OpId ig = compute(l, "ig", l.ig_ticks);
        std::optional<OpId> ig_comm;
        if (l.ig && l.policy != Policy::Data && (transformer || k > 0))
          ig_comm = collective(l, "ig comm", *l.ig, kModelComm, ig);
        if (ig_comm && transformer) // blocking: the weight-gradient compute waits
          wait_for_ = *ig_comm;
        OpId wg = compute(l, "wg", l.wg_ticks);
        if (l.wg && l.policy != Policy::Model) weight_update(l, collective(l, "wg comm", *l.wg, kDataComm, wg));
        if (ig_comm && !transformer) // non-blocking, but the next layer's backward waits for it
          wait_for_ = *ig_comm;
      }
    }
    RankGraph g = b_.finish();
    auto shared = std::make_shared<const RankGraph>(std::move(g));
    w_.graphs.push_back(shared);
    // Each rank maps the roles (slots) to its own groups.
    for (int r = 0; r < world_; ++r) {
      Workload::Rank rk;
      rk.graph = 0;
      rk.comm_map.assign(kRoleCount, -1);
      for (int role = 0; role < kRoleCount; ++role)
        if (!role_comms_[role].empty()) rk.comm_map[role] = role_comms_[role][r];
      w_.ranks.push_back(std::move(rk));
    }
    w_.source = path_;
  }

  void build_dlrm()
  {
    const std::size_t n = layers_.size();
    const std::size_t last_bottom = static_cast<std::size_t>(std::max(0, h_.last_bottom_layer.value_or(0)));
    std::optional<OpId> emb_fwd_comm;
    for (std::size_t i = 0; i < n; ++i) {
      const Layer& l = layers_[i];
      if (i == last_bottom + 1 && emb_fwd_comm) // the top MLP needs the embeddings' all-to-all
        wait_for_ = *emb_fwd_comm;
      OpId c = compute(l, "fwd", l.fwd_ticks);
      if (l.fwd && l.fwd->kind == CollectiveKind::AllToAll) {
        OpId f = collective(l, "fwd comm", *l.fwd, kModelComm, c);
        if (i == 0) emb_fwd_comm = f;
      }
    }
    for (std::size_t k = n; k-- > 0;) {
      const Layer& l = layers_[k];
      OpId wg = compute(l, "wg", l.wg_ticks);
      if (l.wg) weight_update(l, collective(l, "wg comm", *l.wg, kDataComm, wg));
      if (k == 0) break;
      OpId ig = compute(l, "ig", l.ig_ticks);
      if (k == last_bottom + 1 && layers_[0].ig) collective(layers_[0], "ig comm", *layers_[0].ig, kModelComm, ig);
    }
  }

  std::string path_;
  LayerWorkloadOptions options_;
  bool simai_;
  Header h_;
  std::vector<Layer> layers_;
  int world_ = 0, mp_ = 0, ep_ = 1, pp_ = 1, dp_ = 1;
  std::array<std::vector<int>, kRoleCount> role_comms_;
  RankGraphBuilder b_;
  std::optional<OpId> wait_for_;
  Workload w_;
};

} // namespace

Workload read_simai_workload(const std::string& path, const LayerWorkloadOptions& options)
{
  return LayerReader(path, options, true).read();
}

Workload read_astrasim1_workload(const std::string& path, const LayerWorkloadOptions& options)
{
  return LayerReader(path, options, false).read();
}

} // namespace railyard::workloads
