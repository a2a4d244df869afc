// A traced job replayed at a larger data-parallel size (workloads::replicate_data_parallel): the groups each new
// rank lands in, worked out here from Megatron's rank order, and the refusals.
#include "railyard/workloads/op_graph.hpp"
#include "railyard/workloads/readers.hpp"

#include <gtest/gtest.h>

#include <algorithm>

using namespace railyard;
using namespace railyard::workloads;

namespace {

// An 8-rank job: TP groups {0..3}, {4..7}; DP groups {r, r + 4}. Every rank all-reduces 1 MiB on its TP group, then
// 64 MiB on its DP group; ranks share one program through their slot maps (slot 0: TP, slot 1: DP).
Workload tp4_dp2()
{
  Workload w;
  for (int t = 0; t < 2; ++t)
    w.add_communicator("tp" + std::to_string(t), GroupKind::TP, {4 * t, 4 * t + 1, 4 * t + 2, 4 * t + 3});
  for (int d = 0; d < 4; ++d)
    w.add_communicator("dp" + std::to_string(d), GroupKind::DP, {d, d + 4});
  RankGraphBuilder b;
  const OpId tp = b.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(1 << 20), 0, -1, 0), "tp all-reduce");
  const OpId dp = b.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(64 << 20), 1, -1, 0), "dp all-reduce");
  b.add_dep(dp, tp);
  w.graphs.push_back(std::make_shared<const RankGraph>(b.finish()));
  for (int r = 0; r < 8; ++r)
    w.ranks.push_back(Workload::Rank{0, {r / 4, 2 + r % 4}});
  validate(w);
  return w;
}

std::vector<int> group_of(const Workload& w, int rank, int slot)
{
  const Op& op = w.graph_of(rank).op(static_cast<OpId>(slot));
  return w.communicators[static_cast<std::size_t>(w.communicator_of(rank, op))].ranks;
}

} // namespace

// Four replicas (32 ranks): rank 4k + ... keeps its job rank's TP group inside its replica and joins the DP group of
// every replica's copy of its job rank: rank 13 (replica 1, job rank 5) is in TP {12..15} and DP {1, 5, 9, ..., 29}.
TEST(ReplicateDataParallel, TensorGroupsAreCopiedAndDataGroupsSpanTheReplicas)
{
  const Workload w = replicate_data_parallel(tp4_dp2(), 32, {"s.yaml", 3, "workload.world_size"});
  ASSERT_EQ(w.world_size(), 32);
  EXPECT_EQ(w.graphs.size(), 1U); // programs stay shared
  EXPECT_EQ(group_of(w, 13, 0), (std::vector<int>{12, 13, 14, 15}));
  EXPECT_EQ(group_of(w, 13, 1), (std::vector<int>{1, 5, 9, 13, 17, 21, 25, 29}));
  EXPECT_EQ(group_of(w, 30, 0), (std::vector<int>{28, 29, 30, 31}));
  EXPECT_EQ(group_of(w, 30, 1), (std::vector<int>{2, 6, 10, 14, 18, 22, 26, 30}));
  // 2 TP groups x 4 replicas, 4 DP groups; the DP groups remember their traced members (for measured collectives).
  EXPECT_EQ(w.communicators.size(), 2U * 4 + 4);
  for (const auto& c : w.communicators)
    if (c.kind == GroupKind::DP)
      EXPECT_EQ(c.recorded_ranks.size(), 2U) << c.name;
    else
      EXPECT_TRUE(c.recorded_ranks.empty()) << c.name;
  // Sizes as traced: 64 MiB per rank on the DP group.
  EXPECT_EQ(w.graph_of(13).op(1).bytes.bytes(), 64.0 * (1 << 20));
  EXPECT_NE(w.notes.back().find("4 replicas along data parallelism"), std::string::npos) << w.notes.back();
}

TEST(ReplicateDataParallel, RefusesSizesThatAreNotWholeReplicas)
{
  for (const int n : {4, 12, 20}) {
    try {
      replicate_data_parallel(tp4_dp2(), n, {"s.yaml", 3, "workload.world_size"});
      ADD_FAILURE() << n;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where().field, "workload.world_size");
      EXPECT_NE(std::string(e.what()).find("not a multiple of the traced job's 8 ranks"), std::string::npos)
          << e.what();
    }
  }
}

// A partial trace (HTA's nccl_data: rank 0 of a 2-rank DDP job) fills its job: the rank not traced runs rank 0's
// program, and the default group spans every rank. A partial trace with a group smaller than the job cannot place
// the ranks it lacks.
TEST(ReplicateDataParallel, PartialTracesFillTheirJob)
{
  const std::string hta =
      std::string(RAILYARD_SOURCE_DIR) + "/tests/data/traces/kineto/hta/nccl_parser_config/nccl_data.json.gz";
  const Workload traced = read_kineto({hta});
  ASSERT_EQ(traced.world_size(), 1);
  ASSERT_EQ(traced.recorded_world, 2);
  const Workload w = replicate_data_parallel(traced, 16, {"s.yaml", 3, "workload.world_size"});
  ASSERT_EQ(w.world_size(), 16);
  ASSERT_EQ(w.communicators.size(), 1U);
  EXPECT_EQ(w.communicators[0].ranks.size(), 16U);
  EXPECT_EQ(w.communicators[0].recorded_ranks, (std::vector<int>{0, 1}));
  for (int r = 0; r < 16; ++r)
    EXPECT_EQ(w.ranks[static_cast<std::size_t>(r)].graph, 0U);

  Workload partial = tp4_dp2();
  partial.recorded_world = 16; // as if these 8 ranks were half of a 16-rank job
  partial.recorded_ranks = {0, 1, 2, 3, 4, 5, 6, 7};
  try {
    replicate_data_parallel(partial, 32, {"s.yaml", 3, "workload.world_size"});
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("group 'tp0' spans 4 of them"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("trace every rank of one data-parallel replica"), std::string::npos);
  }
}
