// AICB "physical" workloads (aliyun/aicb workload/physical/...): the collectives one rank issues, in order, as CSV.
#include "railyard/workloads/readers.hpp"

#include "file_io.hpp"

#include "railyard/common/csv.hpp"
#include "railyard/common/numbers.hpp"

#include <fmt/format.h>

#include <array>
#include <cstdint>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace railyard::workloads {

namespace {

// One line of the file as RFC 4180 fields (common/csv.hpp: quoted fields, a CR before the LF).
std::vector<std::string> split_csv(const std::string& line, const std::string& path, int lineno)
{
  const auto records = parse_csv(line, path, {.skip_blank_lines = false, .first_line = lineno});
  return records.empty() ? std::vector<std::string>{""} : records.front().fields;
}

enum Slot : int { kWorld, kTpGroup, kDpGroup, kEpGroup, kPpGroup, kSlotCount };

class AicbPhysicalReader {
public:
  AicbPhysicalReader(std::string path, LayerWorkloadOptions options) : path_(std::move(path)), options_(options) {}

  Workload read()
  {
    std::ifstream in(path_);
    if (!in) fail(0, "", "cannot open the file", "check the path and that it is readable");
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);)
      lines.push_back(l);
    static const std::regex ranks_re(R"(^\s*\[\s*rank(\d+)\s*~\s*rank(\d+)\s*\]\s*$)");
    std::smatch m;
    if (lines.empty() || !std::regex_match(lines[0], m, ranks_re)) {
      // A layer-wise workload (SimAI's, which AICB also writes, or ASTRA-sim 1.0's) starts with its policy instead.
      static const std::regex policy_re(R"(^\s*(DATA|MODEL|MICRO|HYBRID_\w+)\b.*)");
      static const std::regex simai_re(R"(\b(all_gpus|ep|vpp|ga|pp):)");
      if (!lines.empty() && std::regex_match(lines[0], policy_re)) {
        if (std::regex_search(lines[0], simai_re))
          fail(1, "trace",
               "this is a SimAI layer-wise workload (its first line names the parallelism policy and "
               "SimAI's ep:, pp:, vpp:, ga: or all_gpus:), not an AICB physical workload CSV",
               "read it with trace: simai");
        fail(1, "trace",
             "this is a layer-wise workload (its first line names the parallelism policy), not an AICB "
             "physical workload CSV",
             "read it with trace: astrasim1 (or trace: simai when SimAI or AICB wrote it)");
      }
      fail(1, "ranks", "the first line must be the rank range, as AICB writes it: [rank0 ~ rankN]",
           "give an AICB physical workload CSV (trace: aicb), or name the trace's own kind: simai and astrasim1 "
           "read layer-wise text, kineto and chakra JSON or protobuf");
    }
    const int first = integer(m[1], 1, "ranks", 0, kMaxRanks - 1), last = integer(m[2], 1, "ranks", 0, kMaxRanks - 1);
    if (last < first)
      fail(1, "ranks", fmt::format("the rank range [rank{} ~ rank{}] is empty", first, last),
           "write the first rank, then the last: [rank0 ~ rankN]");
    world_ = options_.world_size > 0 ? options_.world_size : last - first + 1;
    if (lines.size() < 2) fail(2, "header", "the second line must name the columns", "keep AICB's header line");
    auto header = split_csv(lines[1], path_, 2);
    auto col = [&](const char* name) {
      for (std::size_t i = 0; i < header.size(); ++i)
        if (header[i] == name) return i;
      fail(2, name, fmt::format("no '{}' column", name), "keep AICB's columns");
    };
    const std::size_t c_type = col("comm_type"), c_group = col("comm_group"), c_gsize = col("comm_group_size"),
                      c_size = col("msg_size"), c_stage = col("stage"), c_src = col("src"), c_count = col("count");

    struct Row {
      int line;
      CollectiveKind kind;
      Slot slot;
      double bytes;
      int root;
      int count;
      std::string name;
    };
    std::vector<Row> rows;
    for (std::size_t li = 2; li < lines.size(); ++li) {
      const int line = static_cast<int>(li + 1);
      if (lines[li].find_first_not_of(" \t\r") == std::string::npos) continue;
      auto f = split_csv(lines[li], path_, line);
      if (f.size() != header.size())
        fail(line, "row", fmt::format("{} fields where the header names {}", f.size(), header.size()),
             "keep one value per column");
      std::string type = f[c_type];
      if (type.rfind("CommType.", 0) == 0) type = type.substr(9);
      if (type == "epoch_end") continue; // AICB's iteration marker
      static const std::map<std::string, CollectiveKind> kinds = {{"all_reduce", CollectiveKind::AllReduce},
                                                                  {"all_gather", CollectiveKind::AllGather},
                                                                  {"reduce_scatter", CollectiveKind::ReduceScatter},
                                                                  {"broadcast", CollectiveKind::Broadcast},
                                                                  {"reduce", CollectiveKind::Reduce},
                                                                  {"all_to_all", CollectiveKind::AllToAll},
                                                                  {"alltoall", CollectiveKind::AllToAll}};
      auto k = kinds.find(type);
      if (k == kinds.end())
        fail(line, "comm_type", fmt::format("unknown or unsupported communication type '{}'", f[c_type]),
             "use all_reduce, all_gather, reduce_scatter, broadcast, reduce or all_to_all (point-to-point rows "
             "name no peer pairing and are not read)");
      std::string group = f[c_group];
      if (group.rfind("CommGroup.", 0) == 0) group = group.substr(10);
      static const std::map<std::string, Slot> slots = {{"tp_group", kTpGroup}, {"dp_group", kDpGroup},
                                                        {"ep_group", kEpGroup}, {"pp_group", kPpGroup},
                                                        {"None", kWorld},       {"", kWorld}};
      auto s = slots.find(group);
      if (s == slots.end())
        fail(line, "comm_group", fmt::format("unknown communication group '{}'", f[c_group]),
             "use tp_group, dp_group, ep_group or pp_group");
      if (s->second != kWorld) {
        const int gs = integer(f[c_gsize], line, "comm_group_size", 1, kMaxRanks);
        int& known = size_[s->second];
        if (known != 0 && known != gs)
          fail(line, "comm_group_size", fmt::format("{} has size {} here but {} before", group, gs, known),
               "give every row of a group the same size");
        known = gs;
      }
      int root = -1;
      if (k->second == CollectiveKind::Broadcast || k->second == CollectiveKind::Reduce)
        root = f[c_src] == "None" || f[c_src].empty() ? 0 : integer(f[c_src], line, "src", 0, kMaxRanks - 1);
      // 6.4 GB rows do not fit an int; up to 2^53 B, the largest size a double counts exactly.
      const auto bytes =
          static_cast<double>(whole(f[c_size], line, "msg_size", static_cast<long long>(limits::kMaxBytes)));
      // A row issued `count` times: as many as a scenario's repeat may be.
      const int count = f[c_count].empty() || f[c_count] == "None" ? 1 : integer(f[c_count], line, "count", 0, 1000000);
      rows.push_back({line, k->second, s->second, bytes, root, count, f[c_stage] + " " + type});
    }
    layout();
    RankGraphBuilder b(path_, SourceKind::Line);
    b.set_stream_label(0, "nccl");
    for (const auto& r : rows) {
      for (int i = 0; i < r.count; ++i) {
        // AICB's src is the root's rank in its group (0 for Megatron's TP broadcasts); out of range is caught below.
        OpId id = b.add(Op::make_collective(r.kind, Bytes(r.bytes), r.slot, r.root, 0), r.name);
        b.set_source_id(id, static_cast<std::uint64_t>(r.line));
      }
      group_of(r.slot);
    }
    w_.graphs.push_back(std::make_shared<const RankGraph>(b.finish()));
    for (int r = 0; r < world_; ++r) {
      Workload::Rank rk;
      rk.comm_map.assign(kSlotCount, -1);
      for (int s = 0; s < kSlotCount; ++s)
        if (!comm_of_[s].empty()) rk.comm_map[s] = comm_of_[s][r];
      w_.ranks.push_back(std::move(rk));
    }
    w_.source = path_;
    w_.notes.push_back("AICB physical workload: collectives only, issued one after another on one stream; no compute");
    validate(w_);
    return std::move(w_);
  }

private:
  [[noreturn]] void fail(int line, const std::string& field, std::string rule, std::string fix)
  {
    throw InputError({path_, line, field}, std::move(rule), std::move(fix));
  }

  static constexpr int kMaxRanks = 1 << 20; // the most GPUs a cluster here has

  long long whole(const std::string& tok, int line, const std::string& field, long long max)
  {
    try {
      return parse_integer(tok, 0, max);
    } catch (const std::invalid_argument& e) {
      fail(line, field, e.what(), fmt::format("write a whole number {}", integer_range_words(0, max)));
    }
  }

  int integer(const std::string& tok, int line, const std::string& field, int min, int max)
  {
    try {
      return static_cast<int>(parse_integer(tok, min, max));
    } catch (const std::invalid_argument& e) {
      fail(line, field, e.what(), fmt::format("write a whole number {}", integer_range_words(min, max)));
    }
  }

  // Megatron's order: rank = tp + TP * (dp + DP * pp); EP blocks inside each DP group.
  void layout()
  {
    tp_ = size_[kTpGroup] ? size_[kTpGroup] : 1;
    dp_ = size_[kDpGroup] ? size_[kDpGroup] : world_ / tp_;
    if (tp_ <= 0 || dp_ <= 0 || world_ % (tp_ * dp_) != 0)
      fail(1, "ranks",
           fmt::format("the parallelism does not divide the GPU count: {} ranks is not a multiple of TP {} x DP {}",
                       world_, tp_, dp_),
           "check the rank range and the group sizes");
    pp_ = world_ / (tp_ * dp_);
    if (size_[kPpGroup] && size_[kPpGroup] != pp_)
      fail(1, "pp_group",
           fmt::format("pp_group size {} but {} ranks / (TP {} x DP {}) = {}", size_[kPpGroup], world_, tp_, dp_, pp_),
           "check the group sizes");
    ep_ = size_[kEpGroup] ? size_[kEpGroup] : 1;
    if (dp_ % ep_ != 0)
      fail(1, "ep_group",
           fmt::format("the parallelism does not divide the GPU count: DP {} is not a multiple of EP {}", dp_, ep_),
           "check the group sizes");
  }

  void group_of(Slot s)
  {
    auto& map = comm_of_[s];
    if (!map.empty()) return;
    map.assign(world_, -1);
    auto key = [&](int r) -> std::array<int, 3> {
      int tp = r % tp_, dp = (r / tp_) % dp_, pp = r / (tp_ * dp_);
      switch (s) {
      case kTpGroup:
        return {dp, pp, 0};
      case kDpGroup:
        return {tp, pp, 0};
      case kEpGroup:
        return {tp, pp, dp / ep_};
      case kPpGroup:
        return {tp, dp, 0};
      default:
        return {0, 0, 0};
      }
    };
    static const std::array<GroupKind, kSlotCount> kinds = {GroupKind::Other, GroupKind::TP, GroupKind::DP,
                                                            GroupKind::EP, GroupKind::PP};
    static const std::array<const char*, kSlotCount> labels = {"world", "tp", "dp", "ep", "pp"};
    std::map<std::array<int, 3>, std::vector<int>> groups;
    for (int r = 0; r < world_; ++r)
      groups[key(r)].push_back(r);
    for (auto& [k, members] : groups) {
      int id = w_.add_communicator(fmt::format("{} {}", labels[s], w_.communicators.size()), kinds[s], members);
      for (int r : members)
        map[r] = id;
    }
  }

  std::string path_;
  LayerWorkloadOptions options_;
  Workload w_;
  int world_ = 0, tp_ = 1, dp_ = 1, pp_ = 1, ep_ = 1;
  std::array<int, kSlotCount> size_{};
  std::array<std::vector<int>, kSlotCount> comm_of_;
};

} // namespace

Workload read_aicb_physical_workload(const std::string& path, const LayerWorkloadOptions& options)
{
  return AicbPhysicalReader(path, options).read();
}

} // namespace railyard::workloads
