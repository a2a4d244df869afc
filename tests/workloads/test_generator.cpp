// The Megatron-style generator against closed forms: FLOPs per step (Narayanan et al. 2021, Korthikanti et al. 2022),
// op and collective counts per rank derived from Megatron's layer structure, pipeline schedules, and refusals.
#include "railyard/workloads/generator.hpp"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>
#include <tuple>

using namespace railyard;
using namespace railyard::workloads;

namespace {

MegatronConfig small_gpt()
{
  MegatronConfig c;
  c.model.layers = 4;
  c.model.hidden = 256;
  c.model.heads = 8;
  c.model.seq_length = 128;
  c.model.vocab = 1024; // a multiple of 128 x tp: no padding
  c.parallel.tp = 2;
  c.parallel.pp = 2;
  c.parallel.bucket_params = 1e12; // one gradient bucket per stage
  c.training.micro_batch = 2;
  c.training.global_batch = 16; // 4 micro-batches per pipeline at dp 2
  c.training.recompute = Recompute::None;
  return c;
}

// FLOPs of one rank's program, summed over its compute ops.
double program_flops(const Workload& w, int rank)
{
  double sum = 0;
  for (const Op& op : w.graph_of(rank).ops())
    if (op.kind == OpKind::Compute) sum += op.flops;
  return sum;
}

double total_flops(const Workload& w)
{
  double sum = 0;
  for (int r = 0; r < w.world_size(); ++r)
    sum += program_flops(w, r);
  return sum;
}

struct Counts {
  std::map<GroupKind, int> collectives;
  std::map<CollectiveKind, int> by_kind;
  int compute = 0, send = 0, recv = 0;
};

Counts counts_of(const Workload& w, int rank)
{
  Counts c;
  for (const Op& op : w.graph_of(rank).ops()) {
    if (op.kind == OpKind::Compute) ++c.compute;
    if (op.kind == OpKind::Send) ++c.send;
    if (op.kind == OpKind::Recv) ++c.recv;
    if (op.kind == OpKind::Collective) {
      ++c.collectives[w.communicators[w.communicator_of(rank, op)].kind];
      ++c.by_kind[op.collective()];
    }
  }
  return c;
}

} // namespace

// Narayanan et al. 2021 (eq. 3) and Korthikanti et al. 2022 (section 6.3): a GPT layer's forward pass is
// 24 B s h^2 + 4 B s^2 h FLOPs and the logits 2 B s h V; backward is twice the forward. Without recomputation the
// step is 72 B s l h^2 (1 + s/(6h) + V/(12 l h)); with full recomputation every layer's forward runs twice:
// 96 B s l h^2 (1 + s/(6h) + V/(16 l h)). Selective recomputation re-runs only QK^T and attention over V:
// 4 B s^2 h per layer on top of the no-recompute count.
TEST(Generator, StepFlopsMatchNarayananAndKorthikanti)
{
  MegatronConfig c = small_gpt();
  const double B = c.training.global_batch, s = c.model.seq_length, l = c.model.layers, h = c.model.hidden,
               V = c.model.vocab;
  const double none = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  const double full = 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  const double selective = none + 4 * B * s * s * h * l;

  EXPECT_NEAR(megatron_model_flops(c), none, none * 1e-12);
  for (auto [mode, expected] :
       {std::pair{Recompute::None, none}, std::pair{Recompute::Full, full}, std::pair{Recompute::Selective, selective}})
    for (bool flash : {true, false}) {
      c.training.recompute = mode;
      c.model.flash_attention = flash;
      const Workload w = generate_megatron(c, 8);
      EXPECT_NEAR(total_flops(w), expected, expected * 1e-12) << to_string(mode) << " flash " << flash;
    }
}

// Context parallelism splits the queries across CP ranks while every rank attends to the whole sequence: the sum
// over ranks is unchanged. Grouped-query attention shrinks the K and V projections: qkv is 2 s h (h + 2 g h/a).
TEST(Generator, FlopsWithContextParallelismAndGroupedQueryAttention)
{
  MegatronConfig c = small_gpt();
  c.model.kv_heads = 2;
  c.parallel.cp = 2;
  c.parallel.pp = 1;
  const double B = c.training.global_batch, s = c.model.seq_length, l = c.model.layers, h = c.model.hidden,
               V = c.model.vocab, kv = 2.0 * h / c.model.heads;
  const double layer = 2 * s * h * (h + 2 * kv) + 4 * s * s * h + 2 * s * h * h + 16 * s * h * h;
  const double expected = 3 * B * (l * layer + 2 * s * h * V);
  const Workload w = generate_megatron(c, 8); // tp 2 x cp 2 x dp 2
  EXPECT_NEAR(total_flops(w), expected, expected * 1e-12);
  EXPECT_NEAR(megatron_model_flops(c), expected, expected * 1e-12);
}

// MoE: each token runs top_k experts of 2 (or 3 with SwiGLU) matrices of h x fe, plus the router's h x experts GEMM.
TEST(Generator, MixtureOfExpertsFlopsAndAllToAllCounts)
{
  MegatronConfig c = small_gpt();
  c.model.experts = 8;
  c.model.top_k = 2;
  c.model.moe_ffn_hidden = 512;
  c.model.gated_mlp = true;
  c.parallel.pp = 1;
  c.parallel.tp = 1;
  c.parallel.ep = 4;
  c.training.global_batch = 32; // 8 GPUs: dp 8, 2 micro-batches of 2
  const double B = c.training.global_batch, s = c.model.seq_length, l = c.model.layers, h = c.model.hidden,
               V = c.model.vocab, X = 8, k = 2, fe = 512;
  const double layer = 2 * s * h * (h + 2 * h) + 4 * s * s * h + 2 * s * h * h + 2 * s * h * X + k * 3 * 2 * s * h * fe;
  const double expected = 3 * B * (l * layer + 2 * s * h * V);
  const Workload w = generate_megatron(c, 8);
  EXPECT_NEAR(total_flops(w), expected, expected * 1e-12);
  // Per layer and micro-batch: dispatch and combine all-to-all forward, and both again backward.
  const int m = 2;
  Counts n = counts_of(w, 0);
  EXPECT_EQ(n.collectives[GroupKind::EP], 4 * m * c.model.layers);
  EXPECT_EQ(n.by_kind[CollectiveKind::AllToAll], 4 * m * c.model.layers);
}

// Per-rank counts for tp 2 (sequence parallel), pp 2, dp 2, 4 micro-batches, 2 layers per stage, no recompute:
//  TP collectives per layer and micro-batch: forward 2 all-gathers + 2 reduce-scatters; backward, per linear pair,
//  the all-gather of the output gradient (row-parallel), the all-gather of the input and the reduce-scatter of the
//  input gradient (column-parallel): 2 x 3 = 6. Stage 0 adds the embedding's reduce-scatter and its backward
//  all-gather; the last stage the LM head's all-gather, 3 cross-entropy all-reduces and the backward reduce-scatter.
//  After the last backward, one all-reduce of the layernorm gradients (sequence parallelism).
//  DP (ZeRO-1, one bucket): one gradient reduce-scatter and one parameter all-gather per step.
//  PP: one send and one receive per micro-batch.
//  Compute ops per layer: forward ln1, qkv, qkv bias, attention, proj, dropout-add, ln2, fc1, act, fc2, dropout-add
//  (11); backward dropout-add, fc2 bias grad, fc2 dgrad/wgrad, act, fc1 bias grad, fc1 dgrad/wgrad, ln2, residual
//  grad add, dropout-add, proj bias grad, proj dgrad/wgrad, attention, qkv dgrad/wgrad, qkv bias grad, ln1, residual
//  grad add (20); embedding 1 + 1; LM head 3 + 4; Megatron's step: zero grad buffer, grad norm, Adam, copy to the
//  model's parameters (4).
TEST(Generator, OpCountsPerRankMatchTheLayerStructure)
{
  const MegatronConfig c = small_gpt();
  const Workload w = generate_megatron(c, 8);
  const int m = 4, layers = 2;
  const MegatronLayout L = resolve_layout(c, 8);
  ASSERT_EQ(L.microbatches, m);
  ASSERT_EQ(L.layers_per_chunk, layers);
  const int first = L.rank(0, 0, 0, 0), last = L.rank(1, 0, 1, 1);
  Counts a = counts_of(w, first), z = counts_of(w, last);
  EXPECT_EQ(a.collectives[GroupKind::TP], m * (layers * 10 + 2) + 1);
  EXPECT_EQ(z.collectives[GroupKind::TP], m * (layers * 10 + 5) + 1);
  EXPECT_EQ(a.collectives[GroupKind::DP], 2);
  EXPECT_EQ(z.collectives[GroupKind::DP], 2);
  EXPECT_EQ(a.send, m);
  EXPECT_EQ(a.recv, m);
  EXPECT_EQ(z.send, m);
  EXPECT_EQ(z.recv, m);
  EXPECT_EQ(a.compute, m * (layers * 31 + 2) + 4);
  EXPECT_EQ(z.compute, m * (layers * 31 + 7) + 4);
  // Full recomputation repeats each layer's forward, with its 4 TP collectives; selective only the attention core.
  MegatronConfig f = c;
  f.training.recompute = Recompute::Full;
  Counts af = counts_of(generate_megatron(f, 8), first);
  EXPECT_EQ(af.collectives[GroupKind::TP], m * (layers * 14 + 2) + 1);
  EXPECT_EQ(af.compute, m * (layers * (31 + 11) + 2) + 4);
  f.training.recompute = Recompute::Selective;
  EXPECT_EQ(counts_of(generate_megatron(f, 8), first).compute, m * (layers * 32 + 2) + 4);
  // Without sequence parallelism: 2 all-reduces forward and 2 backward per layer; no layernorm all-reduce; each
  // gradient the first stage receives is all-gathered over TP (scatter/gather p2p, one per micro-batch).
  MegatronConfig n = c;
  n.parallel.sequence_parallel = false;
  Counts an = counts_of(generate_megatron(n, 8), first);
  EXPECT_EQ(an.by_kind[CollectiveKind::AllReduce], m * (layers * 4 + 1));
  EXPECT_EQ(an.by_kind[CollectiveKind::AllGather], m + 1); // + the ZeRO-1 parameter all-gather
}

// ZeRO stages: 0 all-reduces each bucket once (last micro-batch); 2 reduce-scatters in every micro-batch; 3 gathers
// every unit's parameters before its forward and backward and reduce-scatters its gradients, per micro-batch.
TEST(Generator, ZeroStagesChangeTheDataParallelCollectives)
{
  MegatronConfig c = small_gpt();
  c.parallel.pp = 1;
  c.parallel.tp = 1;
  c.training.global_batch = 32; // dp 8, 2 micro-batches of 2
  const int m = 2, units = c.model.layers + 2;
  auto dp = [&](int zero) {
    c.parallel.zero_stage = zero;
    return counts_of(generate_megatron(c, 8), 0);
  };
  Counts z0 = dp(0), z2 = dp(2), z3 = dp(3);
  EXPECT_EQ(z0.by_kind[CollectiveKind::AllReduce], 1);
  EXPECT_EQ(z0.collectives[GroupKind::DP], 1);
  EXPECT_EQ(z2.by_kind[CollectiveKind::ReduceScatter], m);
  EXPECT_EQ(z2.by_kind[CollectiveKind::AllGather], 1);
  EXPECT_EQ(z3.by_kind[CollectiveKind::AllGather], 2 * m * units);
  EXPECT_EQ(z3.by_kind[CollectiveKind::ReduceScatter], m * units);
}

// Gradient buckets: with bucket_params set to one layer's parameters, every layer closes a bucket.
TEST(Generator, GradientBucketsFollowBucketSize)
{
  MegatronConfig c = small_gpt();
  c.parallel.pp = 1;
  c.parallel.tp = 1;
  c.training.global_batch = 32;
  const double h = c.model.hidden;
  const double layer = 4 * h * h + 8 * h * h + 4 * h; // attention + MLP (ffn 4h) + 2 layernorms
  c.parallel.bucket_params = layer;
  Counts n = counts_of(generate_megatron(c, 8), 0);
  // Units in backward order: the LM head (V h + 2h, less than a layer) shares its bucket with the last layer, each
  // other layer fills one, the embedding opens a fifth.
  ASSERT_LT(c.model.vocab * h + 2 * h, layer);
  EXPECT_EQ(n.by_kind[CollectiveKind::ReduceScatter], 5);
  EXPECT_EQ(n.by_kind[CollectiveKind::AllGather], 5);
}

// 1F1B (Megatron schedules.py): stage s runs min(p-s-1, m) warm-up forwards, then alternates, then cools down.
TEST(Generator, OneFOneBSchedule)
{
  const int p = 4, m = 6;
  for (int s = 0; s < p; ++s) {
    const auto slots = pipeline_schedule(p, s, m, 1);
    ASSERT_EQ(slots.size(), 2u * m);
    const int warmup = std::min(p - s - 1, m);
    for (int i = 0; i < warmup; ++i)
      EXPECT_TRUE(slots[i].forward && slots[i].microbatch == i);
    EXPECT_TRUE(slots[warmup].forward);
    EXPECT_FALSE(slots[warmup + 1].forward);
    EXPECT_EQ(slots[warmup + 1].microbatch, 0);
    EXPECT_FALSE(slots.back().forward);
    EXPECT_EQ(slots.back().microbatch, m - 1);
  }
}

// Interleaved (Megatron schedules.py): warm-up (p - s - 1) * 2 + (v - 1) * p forwards; the k-th forward runs chunk
// (k mod pv) / p on micro-batch (k mod p) + p (k / pv); every (micro-batch, chunk) runs forward once, then backward.
TEST(Generator, InterleavedSchedule)
{
  const int p = 4, v = 2, m = 8;
  for (int s = 0; s < p; ++s) {
    const auto slots = pipeline_schedule(p, s, m, v);
    ASSERT_EQ(slots.size(), 2u * m * v);
    const int warmup = std::min((p - s - 1) * 2 + (v - 1) * p, m * v);
    int k = 0;
    for (int i = 0; i < warmup; ++i, ++k) {
      ASSERT_TRUE(slots[i].forward);
      EXPECT_EQ(slots[i].chunk, (k % (p * v)) / p);
      EXPECT_EQ(slots[i].microbatch, (k % p) + p * (k / (p * v)));
    }
    std::set<std::pair<int, int>> fwd, bwd;
    for (const auto& sl : slots) {
      if (sl.forward) {
        EXPECT_TRUE(fwd.insert({sl.microbatch, sl.chunk}).second);
      } else {
        EXPECT_TRUE(fwd.count({sl.microbatch, sl.chunk})) << "backward before forward";
        EXPECT_TRUE(bwd.insert({sl.microbatch, sl.chunk}).second);
      }
    }
    EXPECT_EQ(fwd.size(), static_cast<std::size_t>(m * v));
    EXPECT_EQ(bwd.size(), static_cast<std::size_t>(m * v));
  }
}

// One program per pipeline stage, whatever the GPU count; the generated workload passes the op-graph validation
// (communicators, send/receive matching, collective agreement) including with the interleaved schedule.
TEST(Generator, ProgramsAreSharedPerStageAndValid)
{
  MegatronConfig c = small_gpt();
  c.parallel.pp = 4;
  c.parallel.virtual_stages = 1;
  c.model.layers = 8;
  c.training.global_batch = 64;
  const Workload w = generate_megatron(c, 64); // tp 2, pp 4, dp 8
  EXPECT_EQ(w.graphs.size(), 4u);
  EXPECT_EQ(w.world_size(), 64);
  EXPECT_TRUE(find_problems(w).empty());
  c.parallel.virtual_stages = 2;
  const Workload vi = generate_megatron(c, 64);
  const auto problems = find_problems(vi);
  EXPECT_TRUE(problems.empty()) << (problems.empty() ? "" : problems.front().what());
  c.parallel.virtual_stages = 1;
  c.parallel.cp = 2;
  c.parallel.ep = 1;
  c.training.global_batch = 32;
  EXPECT_TRUE(find_problems(generate_megatron(c, 64)).empty());
}

namespace {

std::string refused_field(const MegatronConfig& c, int world)
{
  try {
    generate_megatron(c, world);
  } catch (const InputError& e) {
    return e.where().field;
  }
  return "accepted";
}

} // namespace

TEST(Generator, RefusesLayoutsThatDoNotFitAndNamesTheField)
{
  MegatronConfig c = small_gpt();
  c.where[""] = InputLocation{"scenario.yaml", 12, "workload"};
  c.where["parallel.tp"] = InputLocation{"scenario.yaml", 20, "workload.parallel.tp"};
  EXPECT_EQ(refused_field(c, 10), "workload.parallel.tp"); // tp x pp = 4 does not divide 10 GPUs
  try {
    generate_megatron(c, 10);
  } catch (const InputError& e) {
    EXPECT_EQ(e.where().line, 20);
    EXPECT_EQ(e.where().file, "scenario.yaml");
  }
  MegatronConfig h = small_gpt();
  h.parallel.tp = 8;
  h.parallel.pp = 1;
  h.model.heads = 12;
  h.model.hidden = 384;
  EXPECT_EQ(refused_field(h, 8), "model.heads");
  MegatronConfig g = small_gpt();
  g.training.global_batch = 10;
  EXPECT_EQ(refused_field(g, 8), "training.global_batch");
  MegatronConfig l = small_gpt();
  l.model.layers = 5;
  EXPECT_EQ(refused_field(l, 8), "model.layers");
  MegatronConfig d = small_gpt();
  d.parallel.dp = 4;
  EXPECT_EQ(refused_field(d, 8), "parallel.dp");
  MegatronConfig e = small_gpt();
  e.model.experts = 6;
  e.model.top_k = 2;
  e.parallel.ep = 4;
  e.parallel.pp = 1;
  EXPECT_EQ(refused_field(e, 8), "parallel.ep");
  MegatronConfig k = small_gpt();
  k.model.kv_heads = 3;
  EXPECT_EQ(refused_field(k, 8), "model.kv_heads");
  MegatronConfig v = small_gpt();
  v.parallel.virtual_stages = 2;
  v.training.global_batch = 12; // 3 micro-batches: not a multiple of pp 2
  v.model.layers = 8;
  EXPECT_EQ(refused_field(v, 8), "training.global_batch");
}

// Every GEMM carries its shape for the kernel model's tile and wave count, in Megatron's terms: the 22B layer of
// Korthikanti et al. 2022 (h 6144, 64 heads, s 2048, micro-batch 4, TP 8, no sequence parallelism) has T = b s = 8192
// tokens; QKV is [T x 3h/tp] over h, its data gradient [T x h] over 3h/tp, its weight gradient [h x 3h/tp] over T;
// the scores are b a/tp = 32 products [s x s] over h/a = 96. Each shape's 2 m n k batch is the op's FLOPs, and every
// compute op with FLOPs is a GEMM when attention is not fused.
TEST(Generator, GemmsCarryTheirShapes)
{
  MegatronConfig c;
  c.model.layers = 2;
  c.model.hidden = 6144;
  c.model.heads = 64;
  c.model.seq_length = 2048;
  c.model.vocab = 51200;
  c.model.flash_attention = false;
  c.parallel.tp = 8;
  c.parallel.sequence_parallel = false;
  c.training.micro_batch = 4;
  c.training.global_batch = 4;
  c.training.recompute = Recompute::Full;
  const Workload w = generate_megatron(c, 8);
  const RankGraph& g = w.graph_of(0);
  std::map<std::string, GemmShape> by_name;
  int gemms = 0;
  for (OpId i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    const auto shape = g.gemm(i);
    if (op.kind == OpKind::Compute && op.flops > 0) {
      ASSERT_TRUE(shape) << g.name(i) << " has FLOPs but no GEMM shape";
      EXPECT_DOUBLE_EQ(shape->flops(), op.flops) << g.name(i);
      ++gemms;
      by_name[g.name(i)] = *shape;
    } else {
      EXPECT_FALSE(shape) << g.name(i);
    }
  }
  // Per layer: forward qkv, scores, context, proj, fc1, fc2 (6), its recomputation (6), backward 4 linears x 2 and
  // 4 attention products (12); plus the logits forward, dgrad, wgrad.
  EXPECT_EQ(gemms, 2 * (6 + 6 + 12) + 3);
  auto expect_shape = [&](const std::string& name, std::uint32_t m, std::uint32_t n, std::uint32_t k,
                          std::uint32_t batch) {
    ASSERT_TRUE(by_name.count(name)) << name;
    const GemmShape s = by_name[name];
    EXPECT_EQ(std::tie(s.m, s.n, s.k, s.batch), std::tie(m, n, k, batch)) << name;
  };
  const std::uint32_t T = 4 * 2048, h = 6144, tp = 8;
  expect_shape("L0 fwd qkv", T, 3 * h / tp, h, 1);
  expect_shape("L0 bwd qkv dgrad", T, h, 3 * h / tp, 1);
  expect_shape("L0 bwd qkv wgrad", h, 3 * h / tp, T, 1);
  expect_shape("L0 fwd proj", T, h, h / tp, 1);
  expect_shape("L0 fwd fc1", T, 4 * h / tp, h, 1);
  expect_shape("L0 bwd fc2 wgrad", 4 * h / tp, h, T, 1);
  expect_shape("L0 fwd attention scores", 2048, 2048, 96, 32);
  expect_shape("L0 fwd attention over values", 2048, 96, 2048, 32);
  expect_shape("L0 bwd attention over values grad probs", 2048, 2048, 96, 32);
  expect_shape("L0 bwd attention scores grad keys", 2048, 96, 2048, 32);
  expect_shape("logits", T, 51200 / tp, h, 1);
  expect_shape("logits wgrad", h, 51200 / tp, T, 1);
  validate(w); // also checks every shape against its op's FLOPs
}

// The memory-bound kernels of one layer (Megatron 2022, no fused attention, 2-byte activations, 1-byte dropout masks),
// counted kernel by kernel as bytes read + written, in units of s b h (tokens x hidden) and a s^2 b (score elements):
//  forward: ln1 reads x, writes y (4); qkv bias reads and writes the 3h-wide output (12); softmax reads the scores,
//  writes the probabilities (4 as^2b); attention dropout reads them, writes the output and the mask (5 as^2b);
//  context transpose reads and writes the context (4); bias-dropout-add reads the projection and the residual,
//  writes the sum and the mask (7); ln2 (4); bias-gelu reads and writes the 4h-wide activation (16);
//  bias-dropout-add (7): 54 sbh + 9 as^2b.
//  backward: dropout-add reads the gradient and the mask, writes the gradient (5); fc2 bias grad reads it (2);
//  gelu backward reads the gradient and its input, writes the gradient, 4h wide (24); fc1 bias grad (8); ln2 reads
//  the gradient and its input, writes the gradient (6); residual grad add (6); dropout-add (5); proj bias grad (2);
//  context transpose (4); attention dropout (5 as^2b); softmax reads the gradient and its output, writes the
//  gradient (6 as^2b); qkv bias grad reads the 3h-wide gradient (6); ln1 (6); residual grad add (6):
//  80 sbh + 11 as^2b.
// Every activation Korthikanti et al. 2022 (section 4.1) count in 34 sbh + 5 as^2b is written by one of these
// kernels or a GEMM: the layernorm outputs, Q/K/V (qkv bias), the softmax output (2 as^2b), the dropout mask (as^2b)
// and output (2 as^2b), the projection's dropout mask (sbh), the gelu output (8 sbh), the MLP's dropout mask (sbh).
TEST(Generator, MemoryBoundKernelsOfALayerMoveTheirTensors)
{
  MegatronConfig c;
  c.model.layers = 1;
  c.model.hidden = 256;
  c.model.heads = 8;
  c.model.seq_length = 128;
  c.model.vocab = 1024;
  c.model.flash_attention = false;
  c.parallel.tp = 1;
  c.training.micro_batch = 2;
  c.training.global_batch = 2;
  c.training.recompute = Recompute::None;
  const Workload w = generate_megatron(c, 1);
  const RankGraph& g = w.graph_of(0);
  double fwd = 0, bwd = 0;
  for (OpId i = 0; i < g.size(); ++i) {
    const Op& op = g.op(i);
    if (op.kind != OpKind::Compute || op.flops > 0) continue;
    if (g.name(i).rfind("L0 fwd ", 0) == 0) fwd += op.bytes.bytes();
    if (g.name(i).rfind("L0 bwd ", 0) == 0) bwd += op.bytes.bytes();
  }
  const double sbh = 128.0 * 2 * 256, as2b = 8.0 * 128 * 128 * 2;
  EXPECT_DOUBLE_EQ(fwd, 54 * sbh + 9 * as2b);
  EXPECT_DOUBLE_EQ(bwd, 80 * sbh + 11 * as2b);
}

// Megatron-core's uneven split (decoder_first/last_pipeline_num_layers), as Llama 3 405B ran 126 layers on 16
// stages: 14 layers on 4 stages as 3, 4, 4, 3. The step's FLOPs are still 72 B s l h^2 (1 + s/(6h) + V/(12 l h))
// with l = 14, and a middle stage's layers cost 4/3 of the last stage's layers (whose program adds the logits).
TEST(Generator, FirstAndLastStagesCanHoldFewerLayers)
{
  MegatronConfig c = small_gpt();
  c.model.layers = 14;
  c.parallel.tp = 1;
  c.parallel.pp = 4;
  c.parallel.first_stage_layers = 3;
  c.parallel.last_stage_layers = 3;
  c.training.global_batch = 16; // dp 2, 4 micro-batches of 2
  const MegatronLayout L = resolve_layout(c, 8);
  EXPECT_EQ(L.stage_layers, (std::vector<int>{3, 4, 4, 3}));
  EXPECT_EQ(L.stage_first, (std::vector<int>{0, 3, 7, 11}));
  const Workload w = generate_megatron(c, 8);
  const double B = c.training.global_batch, s = c.model.seq_length, l = 14, h = c.model.hidden, V = c.model.vocab;
  const double none = 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
  EXPECT_NEAR(total_flops(w), none, none * 1e-12);
  // Per stage, per rank: layers x 72 b' s h^2 (1 + s/(6h)) with b' the rank's 8 sequences; the last adds 6 b' s h V.
  const double per_layer = 72 * (B / 2) * s * h * h * (1 + s / (6 * h));
  const int rank_of_stage[] = {0, 2, 4, 6}; // tp 1, dp 2: rank = dp + 2 pp
  const double layers[] = {3, 4, 4, 3};
  for (int st = 0; st < 4; ++st) {
    const double want = layers[st] * per_layer + (st == 3 ? 6 * (B / 2) * s * h * V : 0);
    EXPECT_NEAR(program_flops(w, rank_of_stage[st]), want, want * 1e-12) << "stage " << st;
  }
  // Only the first given: the others share the rest (14 - 2 = 12 over 3).
  c.parallel.last_stage_layers = 0;
  c.parallel.first_stage_layers = 2;
  EXPECT_EQ(resolve_layout(c, 8).stage_layers, (std::vector<int>{2, 4, 4, 4}));
  // Refusals: a rest the other stages cannot share, interleaving, one stage.
  c.parallel.first_stage_layers = 3;
  EXPECT_THROW(resolve_layout(c, 8), InputError); // 11 over 3 stages
  c.parallel.first_stage_layers = 2;
  c.parallel.virtual_stages = 2;
  EXPECT_THROW(resolve_layout(c, 8), InputError);
  c.parallel.virtual_stages = 1;
  c.parallel.pp = 1;
  EXPECT_THROW(resolve_layout(c, 8), InputError);
}

// The framework's host marks (sim::HostModel): one micro-batch mark per forward pass of each model chunk, one step
// mark on the gradient norm, which the host waits for (clip_grads' .item()), and a p2p sync mark on every pipeline
// send and receive (Megatron's batch_p2p_sync).
TEST(Generator, HostMarksOpenMicroBatchesAndTheOptimizer)
{
  for (int vpp : {1, 2}) {
    MegatronConfig c = small_gpt();
    c.model.layers = 8;
    c.parallel.virtual_stages = vpp;
    const Workload w = generate_megatron(c, 8);
    const MegatronLayout L = resolve_layout(c, 8);
    for (int stage = 0; stage < 2; ++stage) {
      const RankGraph& g = w.graph_of(L.rank(0, 0, stage, 0));
      int microbatch = 0, step = 0, sync = 0, p2p_sync = 0, p2p_ops = 0;
      for (OpId i = 0; i < g.size(); ++i) {
        const std::uint8_t m = g.host_marks(i);
        microbatch += (m & kHostMicrobatch) != 0;
        step += (m & kHostStep) != 0;
        sync += (m & kHostSync) != 0;
        p2p_sync += (m & kHostSyncP2p) != 0;
        p2p_ops += g.op(i).kind == OpKind::Send || g.op(i).kind == OpKind::Recv;
        if (m & kHostStep) EXPECT_EQ(g.name(i), "grad norm");
      }
      SCOPED_TRACE(fmt::format("vpp {} stage {}", vpp, stage));
      EXPECT_EQ(microbatch, L.microbatches * vpp);
      EXPECT_EQ(step, 1);
      EXPECT_EQ(sync, 1);
      EXPECT_EQ(p2p_sync, p2p_ops);
      EXPECT_GT(p2p_ops, 0);
    }
  }
}
