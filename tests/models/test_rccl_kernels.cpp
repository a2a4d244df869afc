// The kernels RCCL 2.21.5 runs on one 8x MI300X node before its cost model (rccl_default_kernel) and their schedules
// (lower() with MscclAllPairs / Mscclpp). Which kernel is expected comes from RCCL's source, quoted per test:
// src/misc/msccl/msccl_lifecycle.cc (mscclEnqueueCheck, mscclInternalSchedulerSelectAlgo) and the <algo> lines of
// tools/msccl-algorithms/*.xml at ROCm/rccl 0cbce2a7; the bytes each schedule moves come from the kernels' own data
// movement (the XMLs' send steps; MSCCL++ apps/nccl/src/allreduce.hpp allreduce7 and allgather.hpp allgather6 at
// microsoft/mscclpp 1e82dd44), written out in each test.
#include "railyard/models/lowering.hpp"
#include "railyard/models/rccl_tuning.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

using namespace railyard;
using namespace railyard::models;

namespace {

constexpr long kKiB = 1024, kMiB = 1024 * 1024;

NcclTuningInput one_node(CollectiveKind kind, double bytes, int nnodes = 1)
{
  return make_input(node_spec(NodeLayout::Mi300x), nnodes, kind, Bytes(bytes));
}

// The kernel's name, or "cost model".
std::string kernel(CollectiveKind kind, double bytes, const RcclCallMode& mode = {}, int max_channels = 0)
{
  const auto k = rccl_default_kernel(one_node(kind, bytes), mode, max_channels);
  return k ? k->name : "cost model";
}

RcclCallMode in_place_int8()
{
  RcclCallMode m;
  m.in_place = true;
  m.type = "int8";
  return m;
}

RcclCallMode int8()
{
  RcclCallMode m;
  m.type = "int8";
  return m;
}

RcclCallMode graph()
{
  RcclCallMode m;
  m.graph_captured = true;
  return m;
}

Schedule lower_kernel(CollectiveKind kind, double bytes, Algorithm a, Protocol p, int channels,
                      double link_efficiency = 1.0)
{
  LoweringInput in;
  in.call.kind = kind;
  in.call.bytes = Bytes(bytes);
  in.call.ranks.resize(8);
  std::iota(in.call.ranks.begin(), in.call.ranks.end(), 0);
  in.call.algorithm = a;
  in.call.protocol = p;
  in.call.channels = channels;
  in.costs.link_efficiency = link_efficiency;
  return lower(in);
}

// Payload and wire bytes rank `src` sends rank `dst` over the whole schedule.
std::pair<double, double> sent(const Schedule& s, int src, int dst)
{
  double payload = 0, wire = 0;
  for (const auto& ch : s.channels)
    for (const auto& st : ch) {
      const auto peers = s.patterns[st.pattern].sends(src);
      for (std::size_t i = 0; i < peers.size(); ++i)
        if (peers[i] == dst) {
          payload += st.bytes.bytes() * s.patterns[st.pattern].send_weight(src, i);
          wire += st.wire_bytes.bytes() * s.patterns[st.pattern].send_weight(src, i);
        }
    }
  return {payload, wire};
}

TEST(RcclKernels, MscclAlgorithmsAreTheXmlFilesRcclInstalls)
{
  // tools/msccl-algorithms at 0cbce2a7, the <algo> line of each file: 7 allreduce and 5 alltoall algorithms, 8 GPUs.
  EXPECT_EQ(msccl_algorithms().size(), 12u);
  const auto* ll32 = msccl_algorithm(CollectiveKind::AllReduce, Protocol::LL, 4);
  ASSERT_NE(ll32, nullptr);
  // allreduce-allpairs-8n-ll-32tb-op.xml: proto="LL" nchannels="4" nchunksperloop="256" minBytes="0" maxBytes="65536"
  EXPECT_EQ(std::string(ll32->file), "allreduce-allpairs-8n-ll-32tb-op.xml");
  EXPECT_EQ(ll32->chunks_per_loop, 256);
  EXPECT_EQ(ll32->max_bytes, 65536);
  // alltoall-8n-512kb-7mb.xml: nchannels="32" nchunksperloop="32", each GPU has 4 blocks sending to a peer.
  const auto* a2a = msccl_algorithm(CollectiveKind::AllToAll, Protocol::Simple, 32);
  ASSERT_NE(a2a, nullptr);
  EXPECT_EQ(a2a->peer_channels, 4);
  EXPECT_EQ(a2a->min_bytes, 524289);
  EXPECT_EQ(msccl_algorithm(CollectiveKind::AllGather, Protocol::LL, 4), nullptr); // no allgather file
}

TEST(RcclKernels, MscclAllReduceFilesAtTheirMinAndMaxBytes)
{
  // mscclInternalSchedulerSelectAlgo: nBytes in [minBytes, maxBytes], count divisible by nchunksperloop, and the file
  // in-place or out-of-place as the call. With int8, count = bytes, so the XMLs' own boundaries can be hit.
  //   -op files (out-of-place): ll-32tb 0..65536 (256 chunks), ll-64tb 65537..524287 (512), simple 524288..16777216.
  //   in-place: ll-32tb 0..65536, ll-64tb 65537..524287, simple 524288..11534336, simple_2 14680065..16777216.
  const auto ar = CollectiveKind::AllReduce;
  EXPECT_EQ(kernel(ar, 65536, int8()), "allreduce-allpairs-8n-ll-32tb-op.xml");
  EXPECT_EQ(kernel(ar, 65536, in_place_int8()), "allreduce-allpairs-8n-ll-32tb.xml");
  // 65537 is ll-64tb's minBytes but not a multiple of its 512 chunks; 65536 + 512 is the first size it takes.
  EXPECT_EQ(kernel(ar, 65537, int8()), "cost model");
  EXPECT_EQ(kernel(ar, 65536 + 512, int8()), "allreduce-allpairs-8n-ll-64tb-op.xml");
  // 524287 is ll-64tb's maxBytes (odd: no file takes it); 524288 is the Simple files' minBytes.
  EXPECT_EQ(kernel(ar, 524287, int8()), "cost model");
  EXPECT_EQ(kernel(ar, 524288 - 512, int8()), "allreduce-allpairs-8n-ll-64tb-op.xml");
  EXPECT_EQ(kernel(ar, 524288, int8()), "allreduce-allpairs-8n-simple-op.xml");
  EXPECT_EQ(kernel(ar, 524288, in_place_int8()), "allreduce-allpairs-8n-simple.xml");
  // In-place: simple.xml ends at 11534336 (11 MiB), simple_2.xml starts at 14680065; between them no file.
  EXPECT_EQ(kernel(ar, 11534336, in_place_int8()), "allreduce-allpairs-8n-simple.xml");
  EXPECT_EQ(kernel(ar, 11534336 + 512, in_place_int8()), "cost model");
  EXPECT_EQ(kernel(ar, 11534336 + 512, int8()), "allreduce-allpairs-8n-simple-op.xml");
  EXPECT_EQ(kernel(ar, 14680064, in_place_int8()), "cost model");
  EXPECT_EQ(kernel(ar, 14680064 + 512, in_place_int8()), "allreduce-allpairs-8n-simple_2.xml");
  EXPECT_EQ(kernel(ar, 16777216, in_place_int8()), "allreduce-allpairs-8n-simple_2.xml");
  EXPECT_EQ(kernel(ar, 16777216, int8()), "allreduce-allpairs-8n-simple-op.xml");
  EXPECT_EQ(kernel(ar, 16777216 + 512, int8()), "cost model");
  // float: count = bytes / 4 must divide by 256, so MSCCL starts at 1 KiB (512 B is 128 floats).
  EXPECT_EQ(kernel(ar, 512), "cost model");
  EXPECT_EQ(kernel(ar, 1024), "allreduce-allpairs-8n-ll-32tb-op.xml");
}

TEST(RcclKernels, MscclppOnlyForGraphCapturedCallsOfOneProcessPerGpu)
{
  const auto ar = CollectiveKind::AllReduce;
  // mscclEnqueueCheck: MSCCL++ needs captureStatus != mscclNoCapture, nBytes > 0 and (nBytes & 31) == 0, all_reduce
  // nBytes <= mscclpp_threshold (RCCL_MSCCLPP_THRESHOLD, 1 MiB), op sum, type half/int32/uint32/float.
  EXPECT_EQ(kernel(ar, 64 * kKiB), "allreduce-allpairs-8n-ll-32tb-op.xml"); // not captured: MSCCL
  EXPECT_EQ(kernel(ar, 64 * kKiB, graph()), "allreduce7");
  EXPECT_EQ(kernel(ar, 32, graph()), "allreduce7");
  EXPECT_EQ(kernel(ar, 16, graph()), "cost model"); // 16 & 31 != 0, and 4 floats do not fill 256 chunks
  EXPECT_EQ(kernel(ar, kMiB, graph()), "allreduce7");
  EXPECT_EQ(kernel(ar, 2 * kMiB, graph()), "allreduce-allpairs-8n-simple-op.xml"); // above the threshold
  RcclCallMode m = graph();
  m.process_per_gpu = false; // -g 8: every rank has the same pid, allProcessHostsUnique fails
  EXPECT_EQ(kernel(ar, 64 * kKiB, m), "allreduce-allpairs-8n-ll-32tb-op.xml");
  m = graph();
  m.type = "double"; // not an MSCCL++ type; 8192 doubles divide by 256 for MSCCL
  EXPECT_EQ(kernel(ar, 64 * kKiB, m), "allreduce-allpairs-8n-ll-32tb-op.xml");
  m = graph();
  m.redop = "max"; // MSCCL++ sums only; MSCCL takes ops below ncclAvg
  EXPECT_EQ(kernel(ar, 64 * kKiB, m), "allreduce-allpairs-8n-ll-32tb-op.xml");
  m.redop = "avg";
  EXPECT_EQ(kernel(ar, 64 * kKiB, m), "cost model");
  // all_gather: nBytes x nRanks <= threshold, nBytes (per rank) a multiple of 32; RCCL installs no MSCCL allgather.
  const auto ag = CollectiveKind::AllGather;
  EXPECT_EQ(kernel(ag, kMiB, graph()), "allgather6");
  EXPECT_EQ(kernel(ag, 8 * 32, graph()), "allgather6");
  EXPECT_EQ(kernel(ag, 8 * 16, graph()), "cost model");
  EXPECT_EQ(kernel(ag, 2 * kMiB, graph()), "cost model");
  EXPECT_EQ(kernel(ag, kMiB), "cost model");
}

TEST(RcclKernels, SwitchesChannelLimitsAndOtherCommunicators)
{
  const auto ar = CollectiveKind::AllReduce;
  RcclCallMode m = graph();
  m.mscclpp = false; // RCCL_MSCCLPP_ENABLE=0: MSCCL still runs
  EXPECT_EQ(kernel(ar, 64 * kKiB, m), "allreduce-allpairs-8n-ll-32tb-op.xml");
  m.msccl = false; // RCCL_MSCCL_ENABLE=0: neither (src/init.cc starts MSCCL++ only when mscclEnabled())
  m.mscclpp = true;
  EXPECT_EQ(kernel(ar, 64 * kKiB, m), "cost model");
  // mscclInternalSchedulerInit drops algorithms needing more than NCCL_MAX_NCHANNELS channels: ll-64tb needs 8.
  EXPECT_EQ(kernel(ar, 128 * kKiB, {}, 4), "cost model");
  EXPECT_EQ(kernel(ar, 64 * kKiB, {}, 4), "allreduce-allpairs-8n-ll-32tb-op.xml");
  // alltoall (nBytes x sizeMultiplier 8 = nccl-tests' size): alltoall-8n-0-9kb.xml up to 9216 bytes.
  EXPECT_EQ(kernel(CollectiveKind::AllToAll, 9216), "alltoall-8n-0-9kb.xml");
  EXPECT_EQ(kernel(CollectiveKind::AllToAll, 43 * kMiB), "alltoall-8n-7mb-43mb.xml");
  EXPECT_EQ(kernel(CollectiveKind::AllToAll, 64 * kMiB), "cost model");
  // Several nodes (rome_model_81 has no mscclEnabled option), a communicator of 4 GPUs (no rome model): no MSCCL.
  EXPECT_FALSE(rccl_default_kernel(one_node(ar, 64 * kKiB, 16)));
  EXPECT_FALSE(rccl_default_kernel(rccl_make_input(node_spec(NodeLayout::Mi300x), 1, 4, ar, Bytes(64 * kKiB))));
  // NVIDIA: never.
  EXPECT_FALSE(
      rccl_default_kernel(make_input(node_spec(NodeLayout::DgxH100), 1, CollectiveKind::AllReduce, Bytes(kMiB))));
}

TEST(RcclKernels, MscclAllPairsMovesTwoEighthsPerDirectedLink)
{
  // allreduce-allpairs-8n-*: each of a GPU's blocks for a peer sends twice (phase 1: chunks of the peer's eighth;
  // phase 2: chunks of its own reduced eighth), so per directed link 2 x S / 8; LL puts 16 wire bytes per 8 data.
  const double s = 4.0 * kMiB;
  for (const auto& [p, channels, wire] : {std::tuple{Protocol::Simple, 8, 1.0}, std::tuple{Protocol::LL, 4, 2.0}}) {
    const Schedule sch = lower_kernel(CollectiveKind::AllReduce, s, Algorithm::MscclAllPairs, p, channels);
    EXPECT_EQ(sch.algorithm, Algorithm::MscclAllPairs);
    EXPECT_EQ(sch.channels.size(), static_cast<std::size_t>(channels));
    for (const auto& ch : sch.channels)
      EXPECT_EQ(ch.size(), 2u); // two phases, one send each
    for (int src = 0; src < 8; ++src)
      for (int dst = 0; dst < 8; ++dst) {
        const auto [payload, wire_bytes] = sent(sch, src, dst);
        EXPECT_DOUBLE_EQ(payload, src == dst ? 0.0 : 2 * s / 8) << src << "->" << dst;
        EXPECT_DOUBLE_EQ(wire_bytes, src == dst ? 0.0 : 2 * s / 8 * wire) << src << "->" << dst;
      }
  }
  // A link reached at a share e carries bytes / e (the same time as the bytes at e x the link rate).
  const Schedule slow = lower_kernel(CollectiveKind::AllReduce, s, Algorithm::MscclAllPairs, Protocol::Simple, 8, 0.5);
  EXPECT_DOUBLE_EQ(sent(slow, 0, 1).second, 2 * (2 * s / 8));
  // Only 8 ranks, only the installed algorithms.
  EXPECT_THROW(lower_kernel(CollectiveKind::AllReduce, s, Algorithm::MscclAllPairs, Protocol::Simple, 3),
               std::invalid_argument);
  EXPECT_THROW(lower_kernel(CollectiveKind::AllGather, s, Algorithm::MscclAllPairs, Protocol::Simple, 8),
               std::invalid_argument);
}

TEST(RcclKernels, MscclAllToAllIsOneStepOfDirectSends)
{
  // alltoall-8n-7mb-43mb.xml: 8 blocks per peer, one send each of one of 64 chunks: S / 8 per directed link.
  const double s = 16.0 * kMiB;
  const Schedule sch = lower_kernel(CollectiveKind::AllToAll, s, Algorithm::MscclAllPairs, Protocol::Simple, 8);
  EXPECT_EQ(sch.channels.size(), 8u);
  for (const auto& ch : sch.channels)
    EXPECT_EQ(ch.size(), 1u);
  EXPECT_DOUBLE_EQ(sent(sch, 3, 6).first, s / 8);
  EXPECT_DOUBLE_EQ(sent(sch, 3, 3).first, 0.0);
  // alltoall-8n-512kb-7mb.xml: nchannels 32, of which 4 blocks send to each peer.
  const Schedule wide =
      lower_kernel(CollectiveKind::AllToAll, 4.0 * kMiB, Algorithm::MscclAllPairs, Protocol::Simple, 32);
  EXPECT_EQ(wide.channels.size(), 4u);
  EXPECT_DOUBLE_EQ(sent(wide, 0, 7).first, 4.0 * kMiB / 8);
}

TEST(RcclKernels, MscclppKernelsMoveWhatTheirSourceMoves)
{
  // allreduce7: step 1 putPackets of the peer's eighth (nelemsPerRank) into its scratch, step 2 the reduced eighth
  // written to every peer, both as LL8 packets (uint32 data + uint32 flag): 2 x S / 8 payload, twice that on the wire.
  const double s = 512.0 * kKiB;
  const Schedule ar = lower_kernel(CollectiveKind::AllReduce, s, Algorithm::Mscclpp, Protocol::LL, 1);
  ASSERT_EQ(ar.channels.size(), 1u);
  EXPECT_EQ(ar.channels[0].size(), 2u);
  EXPECT_DOUBLE_EQ(sent(ar, 2, 5).first, 2 * s / 8);
  EXPECT_DOUBLE_EQ(sent(ar, 2, 5).second, 2 * (2 * s / 8));
  // allgather6 (S = the output): a semaphore signal to each peer, then its own block S / 8 into every peer's output
  // with plain stores.
  const Schedule ag = lower_kernel(CollectiveKind::AllGather, s, Algorithm::Mscclpp, Protocol::Simple, 1);
  ASSERT_EQ(ag.channels[0].size(), 2u);
  EXPECT_DOUBLE_EQ(sent(ag, 7, 0).first, 8 + s / 8);
  EXPECT_DOUBLE_EQ(sent(ag, 7, 0).second, 8 + s / 8);
  EXPECT_THROW(lower_kernel(CollectiveKind::AllReduce, s, Algorithm::Mscclpp, Protocol::Simple, 1),
               std::invalid_argument);
  EXPECT_THROW(lower_kernel(CollectiveKind::ReduceScatter, s, Algorithm::Mscclpp, Protocol::Simple, 1),
               std::invalid_argument);
}

TEST(RcclKernels, CostsAreRcclsOwnForMscclAndFittedForMscclpp)
{
  // src/graph/tuning.cc baseLat[Ring] = {12, 12, 17} us (LL, LL128, Simple); rcclTuningModel[5] (tuning_model_5)
  // hwLat[NVLINK][Ring] = {0.8, 0, 2.1} us.
  const double us = 1e-6;
  auto c = rccl_lowering_costs(Algorithm::MscclAllPairs, Protocol::LL, 8, 1);
  EXPECT_NEAR(c.launch.seconds(), 12 * us, 1e-12);
  EXPECT_NEAR(c.intra_hop.seconds(), 0.8 * us, 1e-12);
  EXPECT_DOUBLE_EQ(c.link_efficiency, rccl_kernel_constants().msccl_link_efficiency_ll);
  c = rccl_lowering_costs(Algorithm::MscclAllPairs, Protocol::Simple, 8, 1);
  EXPECT_NEAR(c.launch.seconds(), 17 * us, 1e-12);
  EXPECT_NEAR(c.intra_hop.seconds(), 2.1 * us, 1e-12);
  EXPECT_DOUBLE_EQ(c.link_efficiency, rccl_kernel_constants().msccl_link_efficiency_simple);
  c = rccl_lowering_costs(Algorithm::Mscclpp, Protocol::LL, 8, 1);
  EXPECT_NEAR(c.launch.seconds(), rccl_kernel_constants().mscclpp_launch_us * us, 1e-12);
  EXPECT_EQ(c.intra_hop.seconds(), 0.0);
  // Fitted shares are shares: in (0, 1].
  for (double e :
       {rccl_kernel_constants().msccl_link_efficiency_ll, rccl_kernel_constants().msccl_link_efficiency_simple,
        rccl_kernel_constants().mscclpp_link_efficiency_ll, rccl_kernel_constants().mscclpp_link_efficiency_simple}) {
    EXPECT_GT(e, 0.0);
    EXPECT_LE(e, 1.0);
  }
  // NCCL's costs do not cover them.
  EXPECT_THROW(nccl_lowering_costs(Algorithm::MscclAllPairs, Protocol::LL, 90, 8), std::invalid_argument);
}

} // namespace
