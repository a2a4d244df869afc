// The op graph's own rules: dependency arrays, stream order, and what validate() must catch. Every expected count
// here is the number of ops/edges the test itself adds.
#include "railyard/workloads/op_graph.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace railyard;
using namespace railyard::workloads;

namespace {

// Two ranks that each compute, all-reduce on the world communicator, then exchange one message.
Workload two_rank_workload(double rank1_bytes = 1 << 20)
{
  Workload w;
  int world = w.add_communicator("world", GroupKind::DP, {0, 1});
  for (int r = 0; r < 2; ++r) {
    RankGraphBuilder b("rank" + std::to_string(r) + ".trace", SourceKind::NodeId);
    OpId c = b.add(Op::make_compute(1e12, units::MB(10), 0), "gemm");
    OpId ar = b.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(r == 1 ? rank1_bytes : 1 << 20), world, -1, 1),
                    "allreduce");
    b.add_dep(ar, c);
    OpId p2p = r == 0 ? b.add(Op::make_send(world, 1, units::KiB(4), 7, 2), "send")
                      : b.add(Op::make_recv(world, 0, units::KiB(4), 7, 2), "recv");
    b.add_dep(p2p, ar);
    b.add_dep(p2p, ar); // duplicate on purpose: finish() keeps one
    for (OpId i = 0; i < b.size(); ++i)
      b.set_source_id(i, 100 + i);
    w.add_rank(b.finish());
  }
  return w;
}

bool mentions(const InputError& e, const std::string& text)
{
  return std::string(e.what()).find(text) != std::string::npos;
}

} // namespace

TEST(OpGraph, OpIsCompact)
{
  // The brief: tens of bytes per op plus dependencies, so an 8,192-rank generated step fits in memory.
  EXPECT_LE(sizeof(Op), 40u);
}

TEST(OpGraph, BuilderMakesCsrAndInternsNames)
{
  RankGraphBuilder b("x", SourceKind::Line);
  OpId a = b.add(Op::make_compute(1, Bytes(1), 0), "k");
  OpId c = b.add(Op::make_compute(1, Bytes(1), 0), "k");
  OpId d = b.add(Op::make_compute(1, Bytes(1), 0), "other");
  b.add_dep(d, c); // added out of op order on purpose
  b.add_dep(c, a);
  b.add_dep(d, a);
  b.add_dep(d, a);
  RankGraph g = b.finish();
  ASSERT_EQ(g.size(), 3u);
  EXPECT_EQ(g.names().size(), 2u); // "k" twice, "other" once
  EXPECT_EQ(g.name(c), "k");
  EXPECT_EQ(g.deps(a).size(), 0u);
  ASSERT_EQ(g.deps(c).size(), 1u);
  EXPECT_EQ(g.deps(c)[0], a);
  ASSERT_EQ(g.deps(d).size(), 2u); // {a, c}, duplicate a dropped
  EXPECT_EQ(g.deps(d)[0], a);
  EXPECT_EQ(g.deps(d)[1], c);
  EXPECT_EQ(count_ops(g).deps, 3u);
  EXPECT_EQ(g.describe(d), "line 2"); // no source ids set: the op id stands in
}

TEST(OpGraph, MeasuredTimesAreOptional)
{
  RankGraphBuilder b;
  OpId a = b.add(Op::make_compute(0, Bytes(0), 0), "a");
  OpId c = b.add(Op::make_compute(0, Bytes(0), 0), "c");
  b.set_measured(c, units::us(5), units::us(2));
  OpId d = b.add(Op::make_compute(0, Bytes(0), 0), "d");
  RankGraph g = b.finish();
  EXPECT_FALSE(g.measured_duration(a));
  ASSERT_TRUE(g.measured_duration(c));
  EXPECT_DOUBLE_EQ(g.measured_duration(c)->seconds(), 2e-6);
  EXPECT_DOUBLE_EQ(g.measured_start(c)->seconds(), 5e-6);
  EXPECT_FALSE(g.measured_duration(d));
}

TEST(OpGraph, ConsistentWorkloadValidates)
{
  Workload w = two_rank_workload();
  EXPECT_TRUE(find_problems(w).empty());
  EXPECT_NO_THROW(validate(w));
  EXPECT_EQ(w.peer_global_rank(0, w.graph_of(0).op(2)), 1);
}

TEST(OpGraph, RanksDisagreeOnCollectiveSize)
{
  Workload w = two_rank_workload(2 << 20);
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 1u);
  const InputError& e = problems.front();
  EXPECT_TRUE(mentions(e, "ranks disagree on a collective")) << e.what();
  EXPECT_EQ(e.where().file, "rank1.trace");
  EXPECT_EQ(e.where().field, "rank 1 node 101"); // the all-reduce is op 1, source id 100 + 1
  EXPECT_THROW(validate(w), InputError);
}

TEST(OpGraph, MissingCollectiveOnOneRank)
{
  Workload w;
  int world = w.add_communicator("world", GroupKind::TP, {0, 1});
  for (int r = 0; r < 2; ++r) {
    RankGraphBuilder b("f" + std::to_string(r), SourceKind::NodeId);
    b.add(Op::make_collective(CollectiveKind::AllGather, Bytes(64), world, -1, 0), "ag");
    if (r == 0) b.add(Op::make_collective(CollectiveKind::AllGather, Bytes(64), world, -1, 0), "ag");
    w.add_rank(b.finish());
  }
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(mentions(problems[0], "rank 1 issues 1 collectives")) << problems[0].what();
  EXPECT_EQ(problems[0].where().file, "f1");
}

TEST(OpGraph, DanglingDependencyAndNegativeSize)
{
  RankGraphBuilder b("g", SourceKind::NodeId);
  OpId a = b.add(Op::make_compute(1, Bytes(-5), 0), "neg");
  b.add_dep(a, 42);
  b.set_source_id(a, 9);
  Workload w;
  w.add_rank(b.finish());
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(mentions(problems[0], "op id 42 which does not exist")) << problems[0].what();
  EXPECT_EQ(problems[0].where().field, "rank 0 node 9");
  EXPECT_TRUE(mentions(problems[1], "-5 bytes")) << problems[1].what();
}

TEST(OpGraph, CycleThroughDependenciesIsReportedWithNodeIds)
{
  RankGraphBuilder b("cyc", SourceKind::NodeId);
  OpId a = b.add(Op::make_compute(1, Bytes(0), kUnordered), "a");
  OpId c = b.add(Op::make_compute(1, Bytes(0), kUnordered), "b");
  OpId d = b.add(Op::make_compute(1, Bytes(0), kUnordered), "c");
  b.add_dep(c, a);
  b.add_dep(d, c);
  b.add_dep(a, d);
  b.set_source_id(a, 10);
  b.set_source_id(c, 11);
  b.set_source_id(d, 12);
  Workload w;
  w.add_rank(b.finish());
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 1u);
  std::string msg = problems[0].what();
  EXPECT_TRUE(mentions(problems[0], "dependency cycle")) << msg;
  for (const char* id : {"node 10", "node 11", "node 12"})
    EXPECT_NE(msg.find(id), std::string::npos) << msg;
}

TEST(OpGraph, CycleThroughStreamOrder)
{
  // Op 0 waits for op 1, but both sit on stream 0 where op 0 runs first: a deadlock on a real GPU too.
  RankGraphBuilder b;
  OpId a = b.add(Op::make_compute(1, Bytes(0), 0), "a");
  OpId c = b.add(Op::make_compute(1, Bytes(0), 0), "b");
  b.add_dep(a, c);
  Workload w;
  w.add_rank(b.finish());
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_TRUE(mentions(problems[0], "op 0 -> op 1 -> op 0") || mentions(problems[0], "op 1 -> op 0 -> op 1"))
      << problems[0].what();
}

TEST(OpGraph, UnknownCommunicatorAndNonMember)
{
  Workload w;
  int pair = w.add_communicator("pair", GroupKind::PP, {1, 2});
  for (int r = 0; r < 3; ++r) {
    RankGraphBuilder b("h" + std::to_string(r));
    if (r == 0) {
      b.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(8), 5, -1, 0), "bad slot");
      b.add(Op::make_collective(CollectiveKind::AllReduce, Bytes(8), pair, -1, 0), "not a member");
    }
    w.add_rank(b.finish());
  }
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(mentions(problems[0], "communicator slot 5 which does not exist")) << problems[0].what();
  EXPECT_TRUE(mentions(problems[1], "rank 0 is not one of its members")) << problems[1].what();
}

TEST(OpGraph, UnmatchedSendAndSizeMismatch)
{
  Workload w;
  int world = w.add_communicator("world", GroupKind::PP, {0, 1});
  RankGraphBuilder b0("s0"), b1("s1");
  b0.add(Op::make_send(world, 1, Bytes(100), 0, 0), "send a");
  b0.add(Op::make_send(world, 1, Bytes(100), 0, 0), "send b");
  b1.add(Op::make_recv(world, 0, Bytes(90), 0, 0), "recv a");
  w.add_rank(b0.finish());
  w.add_rank(b1.finish());
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(mentions(problems[0], "expects 90 bytes")) << problems[0].what();
  EXPECT_TRUE(mentions(problems[1], "2 sends, 1 receives")) << problems[1].what();
}

TEST(OpGraph, SharedProgramsWithSlotMaps)
{
  // Four ranks, two data-parallel pairs {0,2} and {1,3}, one shared program whose slot 0 is "my DP group".
  Workload w;
  int dp_a = w.add_communicator("dp0", GroupKind::DP, {0, 2});
  int dp_b = w.add_communicator("dp1", GroupKind::DP, {1, 3});
  RankGraphBuilder b;
  b.add(Op::make_collective(CollectiveKind::ReduceScatter, units::MiB(1), 0, -1, 0), "rs");
  w.graphs.push_back(std::make_shared<const RankGraph>(b.finish()));
  for (int r = 0; r < 4; ++r)
    w.ranks.push_back(Workload::Rank{0, {r % 2 == 0 ? dp_a : dp_b}});
  EXPECT_TRUE(find_problems(w).empty());
  EXPECT_EQ(w.communicator_of(3, w.graph_of(3).op(0)), dp_b);
}

TEST(OpGraph, CommunicatorMembersMustBeRanksOnce)
{
  Workload w;
  w.add_communicator("twice", GroupKind::DP, {0, 1, 0});
  w.add_communicator("outside", GroupKind::TP, {1, 7});
  for (int r = 0; r < 2; ++r)
    w.add_rank(RankGraphBuilder("m" + std::to_string(r)).finish());
  auto problems = find_problems(w);
  ASSERT_EQ(problems.size(), 2u);
  EXPECT_TRUE(mentions(problems[0], "lists rank 0 twice")) << problems[0].what();
  EXPECT_TRUE(mentions(problems[1], "member 7 is not a rank of the workload (world size 2)")) << problems[1].what();
}
