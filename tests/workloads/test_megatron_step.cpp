// What the Megatron-style generator adds around the layers, against Megatron-LM's own code and Korthikanti et al.
// 2022 (arXiv 2205.05198): the optimizer's memory passes per parameter, tied embeddings, the pipeline's
// scatter/gather and blocking p2p, the layernorm-gradient all-reduce of sequence parallelism, and the FLOPs of the
// paper's 22B configuration (its Table 3) against its equations (7) and (8).
#include "railyard/workloads/generator.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>

using namespace railyard;
using namespace railyard::workloads;

namespace {

MegatronConfig gpt(int tp, int pp, int global_batch)
{
  MegatronConfig c;
  c.model.layers = 8;
  c.model.hidden = 256;
  c.model.heads = 8;
  c.model.seq_length = 128;
  c.model.vocab = 1024; // a multiple of 128 x tp: no padding
  c.parallel.tp = tp;
  c.parallel.pp = pp;
  c.parallel.zero_stage = 0;
  c.training.micro_batch = 2;
  c.training.global_batch = global_batch;
  c.training.recompute = Recompute::None;
  return c;
}

// Sum of the bytes of the compute ops of `rank` named `name`, and how many there are.
std::pair<double, int> bytes_of(const Workload& w, int rank, const std::string& name)
{
  const RankGraph& g = w.graph_of(rank);
  std::pair<double, int> out{0, 0};
  for (OpId i = 0; i < g.size(); ++i)
    if (g.op(i).kind == OpKind::Compute && g.name(i) == name) {
      out.first += g.op(i).bytes.bytes();
      ++out.second;
    }
  return out;
}

// The collectives of `rank` named `name` (or starting with it when `prefix`).
std::vector<OpId> collectives_named(const Workload& w, int rank, const std::string& name, bool prefix = false)
{
  const RankGraph& g = w.graph_of(rank);
  std::vector<OpId> out;
  for (OpId i = 0; i < g.size(); ++i)
    if (g.op(i).kind == OpKind::Collective && (prefix ? g.name(i).rfind(name, 0) == 0 : g.name(i) == name))
      out.push_back(i);
  return out;
}

} // namespace

// Megatron's mixed-precision step (megatron/core/optimizer/optimizer.py, MixedPrecisionOptimizer.step, and
// training.py's zero_grad_buffer) touches, per parameter: the fp32 gradient buffer zeroed before the first
// micro-batch (4 B, every local parameter); the gradient norm for clipping (clip_grads.py, multi_tensor_l2norm: reads
// the 4 B gradient); Adam with fp32 master weights (reads parameter, gradient and two moments, 16 B; writes
// parameter and moments, 12 B); the copy of the master weights into the bf16 model (reads 4 B, writes 2 B). The last
// three run on the rank's shard: all its parameters without ZeRO, 1/dp of them with the distributed optimizer.
// Parameters per TP rank (Narayanan et al. 2021, section 3.5: a layer has 12 h^2 weights plus 4h layernorm
// parameters; biases are not modelled): stage 0 holds its layers and the V x h / tp embedding, the last stage its
// layers, the V x h / tp output matrix and the final layernorm (2h).
TEST(MegatronStep, OptimizerPassesMoveMegatronsBytesPerParameter)
{
  for (int zero : {0, 1}) {
    MegatronConfig c = gpt(2, 2, 16); // dp 2, 4 micro-batches of 2
    c.parallel.zero_stage = zero;
    const Workload w = generate_megatron(c, 8);
    const MegatronLayout L = resolve_layout(c, 8);
    const double h = c.model.hidden, V = c.model.vocab, tp = 2, layers = 4, shard = zero == 1 ? L.dp : 1;
    const double layer = 12 * h * h / tp + 4 * h;
    const double stage_params[2] = {layers * layer + V * h / tp, layers * layer + V * h / tp + 2 * h};
    for (int stage = 0; stage < 2; ++stage) {
      const int rank = L.rank(1, 0, 1, stage);
      const double P = stage_params[stage];
      EXPECT_EQ(bytes_of(w, rank, "zero grad buffer"), std::pair(4 * P, 1)) << "zero " << zero << " stage " << stage;
      EXPECT_EQ(bytes_of(w, rank, "grad norm"), std::pair(4 * P / shard, 1));
      EXPECT_EQ(bytes_of(w, rank, "optimizer step"), std::pair(28 * P / shard, 1));
      EXPECT_EQ(bytes_of(w, rank, "copy main params to model params"), std::pair(6 * P / shard, 1));
    }
  }
}

// Tied embeddings (Korthikanti et al. 2022, section 3): on one stage the LM head reuses the embedding, so the step
// updates V h / tp fewer parameters; on a pipeline the first and last stages each hold the matrix and all-reduce its
// fp32 gradient between them (Megatron's embedding group, _allreduce_embedding_grads); middle stages do not.
TEST(MegatronStep, TiedEmbeddingsShareTheMatrixAndAllReduceItsGradientAcrossTheEnds)
{
  MegatronConfig one = gpt(2, 1, 16); // dp 4
  const double h = one.model.hidden, V = one.model.vocab, tp = 2;
  const double untied = bytes_of(generate_megatron(one, 8), 0, "zero grad buffer").first;
  one.model.tied_embeddings = true;
  const Workload w1 = generate_megatron(one, 8);
  EXPECT_DOUBLE_EQ(untied - bytes_of(w1, 0, "zero grad buffer").first, 4 * V * h / tp);
  EXPECT_TRUE(collectives_named(w1, 0, "embedding grads all-reduce").empty());

  MegatronConfig four = gpt(2, 4, 8); // dp 1, 4 micro-batches
  four.model.tied_embeddings = true;
  const Workload w = generate_megatron(four, 8);
  EXPECT_TRUE(find_problems(w).empty());
  const MegatronLayout L = resolve_layout(four, 8);
  for (int t = 0; t < 2; ++t)
    for (int stage = 0; stage < 4; ++stage) {
      const int rank = L.rank(t, 0, 0, stage);
      const auto ar = collectives_named(w, rank, "embedding grads all-reduce");
      if (stage == 1 || stage == 2) {
        EXPECT_TRUE(ar.empty()) << "middle stage " << stage;
        continue;
      }
      ASSERT_EQ(ar.size(), 1u) << "stage " << stage;
      const Op& op = w.graph_of(rank).op(ar[0]);
      EXPECT_EQ(op.collective(), CollectiveKind::AllReduce);
      EXPECT_DOUBLE_EQ(op.bytes.bytes(), 4 * V * h / tp);
      const Communicator& comm = w.communicators[w.communicator_of(rank, op)];
      EXPECT_EQ(std::set<int>(comm.ranks.begin(), comm.ranks.end()),
                (std::set<int>{L.rank(t, 0, 0, 0), L.rank(t, 0, 0, 3)}));
    }
}

// Pipeline transfers (Narayanan et al. 2021, section 4.1): without sequence parallelism each TP rank sends 1/tp of
// the b s h activation (or gradient) and the receiver all-gathers the tensor over TP, once per received micro-batch;
// with sequence parallelism the tensor is already split and goes as is; with the optimization off every TP rank
// sends it whole.
TEST(MegatronStep, ScatterGatherSplitsPipelineTransfersAcrossTensorParallelRanks)
{
  const int m = 4;
  MegatronConfig c = gpt(2, 2, 16); // dp 2, 4 micro-batches of 2
  const double b = 2, s = c.model.seq_length, h = c.model.hidden, E = 2, tp = 2;
  const MegatronLayout L = resolve_layout(c, 8);
  const int first = L.rank(0, 0, 0, 0), last = L.rank(0, 0, 0, 1);
  auto check = [&](bool sp, bool scatter, double send_bytes, int gathers) {
    c.parallel.sequence_parallel = sp;
    c.parallel.scatter_gather_p2p = scatter;
    const Workload w = generate_megatron(c, 8);
    EXPECT_TRUE(find_problems(w).empty());
    for (int rank : {first, last}) {
      int sends = 0;
      for (const Op& op : w.graph_of(rank).ops())
        if (op.kind == OpKind::Send || op.kind == OpKind::Recv) {
          EXPECT_DOUBLE_EQ(op.bytes.bytes(), send_bytes) << "sp " << sp << " scatter " << scatter;
          sends += op.kind == OpKind::Send;
        }
      EXPECT_EQ(sends, m);
    }
    const auto g_first = collectives_named(w, first, "received gradients tp all-gather");
    const auto g_last = collectives_named(w, last, "received activations tp all-gather");
    EXPECT_EQ(static_cast<int>(g_first.size()), gathers) << "sp " << sp << " scatter " << scatter;
    EXPECT_EQ(static_cast<int>(g_last.size()), gathers);
    for (OpId id : g_first)
      EXPECT_DOUBLE_EQ(w.graph_of(first).op(id).bytes.bytes(), b * s * h * E);
  };
  check(false, true, b * s * h * E / tp, m);
  check(false, false, b * s * h * E, 0);
  check(true, true, b * s * h * E / tp, 0);
}

// Megatron's p2p calls wait for their requests and synchronize the device (p2p_communication.py: req.wait(), then
// torch.cuda.synchronize()): with blocking_p2p every send is a dependency of a later op of the compute stream; without
// it none is.
TEST(MegatronStep, BlockingSendsHoldTheComputeStream)
{
  for (bool blocking : {true, false}) {
    MegatronConfig c = gpt(2, 2, 16);
    c.parallel.blocking_p2p = blocking;
    const Workload w = generate_megatron(c, 8);
    for (int rank : {0, 7}) {
      const RankGraph& g = w.graph_of(rank);
      std::set<OpId> sends, awaited;
      for (OpId i = 0; i < g.size(); ++i) {
        if (g.op(i).kind == OpKind::Send) sends.insert(i);
        if (g.op(i).stream == 0)
          for (OpId d : g.deps(i))
            if (g.op(d).kind == OpKind::Send) awaited.insert(d);
      }
      ASSERT_FALSE(sends.empty());
      EXPECT_EQ(awaited, blocking ? sends : std::set<OpId>{}) << "rank " << rank << " blocking " << blocking;
    }
  }
}

// Under sequence parallelism each TP rank computes the layernorm gradients on its part of the sequence; Megatron
// all-reduces them over TP once per step (finalize_model_grads, _allreduce_layernorm_grads): 2 layernorms of 2h
// parameters per layer, plus the final layernorm on the last stage, in fp32. Without sequence parallelism there is
// nothing to reduce.
TEST(MegatronStep, SequenceParallelLayernormGradientsAreAllReducedOverTensorParallelRanks)
{
  MegatronConfig c = gpt(2, 2, 16);
  c.parallel.sequence_parallel = true;
  const double h = c.model.hidden, layers = 4;
  const Workload w = generate_megatron(c, 8);
  const MegatronLayout L = resolve_layout(c, 8);
  for (int stage = 0; stage < 2; ++stage) {
    const int rank = L.rank(0, 0, 1, stage);
    const auto ar = collectives_named(w, rank, "layernorm grads tp all-reduce");
    ASSERT_EQ(ar.size(), 1u);
    const Op& op = w.graph_of(rank).op(ar[0]);
    EXPECT_EQ(w.communicators[w.communicator_of(rank, op)].kind, GroupKind::TP);
    EXPECT_DOUBLE_EQ(op.bytes.bytes(), 4 * (4 * h * layers + (stage == 1 ? 2 * h : 0)));
  }
  c.parallel.sequence_parallel = false;
  EXPECT_TRUE(collectives_named(generate_megatron(c, 8), 0, "layernorm grads tp all-reduce").empty());
}

// The paper's 22B configuration (Table 3: 64 heads, hidden 6144, 48 layers, TP 8, 8 GPUs, global batch 4, micro-batch
// 4; section 6: s = 2048, V = 51200) generates the FLOPs of its Appendix A: equation (7), 72 B L s h^2 (1 + s/6h +
// V/12hL), without recomputation; selective recomputation adds the forward QK^T and attention over V, 4 B s^2 h per
// layer: 16 B L s^2 h in all, i.e. 72 B L s h^2 (1 + 2s/9h + V/12hL) (equation (8) as corrected by the authors in
// NVIDIA/Megatron-LM issue 523: the printed s/3h overcounts); full recomputation runs every forward twice,
// 96 B L s h^2 (1 + s/6h + V/16hL) (Narayanan et al. 2021, equation 3).
TEST(MegatronStep, PaperTwentyTwoBillionConfigurationHasTheFlopsOfItsAppendixA)
{
  MegatronConfig c;
  c.model.layers = 48;
  c.model.hidden = 6144;
  c.model.heads = 64;
  c.model.seq_length = 2048;
  c.model.vocab = 51200;
  c.model.flash_attention = false;
  c.model.tied_embeddings = true;
  c.parallel.tp = 8;
  c.parallel.sequence_parallel = false;
  c.training.micro_batch = 4;
  c.training.global_batch = 4;
  const double B = 4, L = 48, s = 2048, h = 6144, V = 51200;
  const double model = 72 * B * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  const double selective = 72 * B * L * s * h * h * (1 + 2 * s / (9 * h) + V / (12 * h * L));
  const double full = 96 * B * L * s * h * h * (1 + s / (6 * h) + V / (16 * h * L));
  EXPECT_NEAR(megatron_model_flops(c), model, model * 1e-12);
  for (auto [mode, expected] : {std::pair{Recompute::None, model}, std::pair{Recompute::Selective, selective},
                                std::pair{Recompute::Full, full}}) {
    c.training.recompute = mode;
    c.parallel.sequence_parallel = mode == Recompute::Selective;
    const Workload w = generate_megatron(c, 8);
    double sum = 0;
    for (int r = 0; r < 8; ++r)
      for (const Op& op : w.graph_of(r).ops())
        if (op.kind == OpKind::Compute) sum += op.flops;
    EXPECT_NEAR(sum, expected, expected * 1e-12) << to_string(mode);
  }
}
