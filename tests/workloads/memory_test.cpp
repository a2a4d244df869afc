// The memory model against its sources: Korthikanti et al. 2022 (Table 2: activations per layer by parallelism and
// recompute; section 4.2.3: the interleaved schedule's factor), Megatron's distributed-optimizer table (bytes per
// parameter), ZeRO's sharding (Rajbhandari et al. 2020) and Narayanan et al. 2021 (parameter count, eq. 2; 1F1B's
// in-flight micro-batches).
#include "railyard/workloads/memory.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace railyard;
using namespace railyard::workloads;

namespace {

// A GPT layer as Korthikanti et al. count it: multi-head attention, ffn = 4h, 16-bit activations, unfused attention.
MegatronConfig gpt(int tp, bool sp)
{
  MegatronConfig c;
  c.model.layers = 8;
  c.model.hidden = 4096;
  c.model.heads = 32;
  c.model.seq_length = 2048;
  c.model.vocab = 51200;
  c.model.flash_attention = false;
  c.parallel.tp = tp;
  c.parallel.sequence_parallel = sp;
  c.training.micro_batch = 2;
  c.training.global_batch = 2;
  c.training.recompute = Recompute::None;
  return c;
}

double rel(double got, double want)
{
  return std::abs(got - want) / want;
}

TEST(Memory, LayerActivationsAreKorthikantiTable2)
{
  const double s = 2048, b = 2, h = 4096, a = 32;
  for (int t : {1, 2, 8}) {
    const double sbh = s * b * h;
    struct Row {
      bool sp;
      Recompute rc;
      double want;
      const char* what;
    };
    const Row rows[] = {
        {false, Recompute::None, sbh * (10 + 24.0 / t + 5 * a * s / (h * t)), "tensor parallel"},
        {true, Recompute::None, sbh / t * (34 + 5 * a * s / h), "tensor + sequence parallel"},
        {false, Recompute::Selective, sbh * (10 + 24.0 / t), "tensor parallel + selective recompute"},
        {true, Recompute::Selective, sbh * 34 / t, "tensor + sequence parallel + selective recompute"},
        {false, Recompute::Full, 2 * sbh, "full recompute"},
    };
    for (const Row& r : rows) {
      const MegatronConfig c = gpt(t, r.sp);
      const MegatronLayout L = resolve_layout(c, t);
      EXPECT_LT(rel(layer_activation_bytes(c, L, r.rc), r.want), 1e-12) << r.what << ", t = " << t;
    }
  }
  // Without any parallelism: s b h (34 + 5 a s / h).
  const MegatronConfig c = gpt(1, false);
  EXPECT_LT(rel(layer_activation_bytes(c, resolve_layout(c, 1), Recompute::None), s * b * h * (34 + 5 * a * s / h)),
            1e-12);
}

TEST(Memory, FusedAttentionKeepsOneLogSumExpPerQueryRowInsteadOfTheScores)
{
  const double s = 2048, b = 2, h = 4096, a = 32, t = 8;
  MegatronConfig c = gpt(8, true);
  c.model.flash_attention = true;
  // The selective row of Table 2 plus FlashAttention's fp32 log-sum-exp per (query, head) on this rank.
  EXPECT_LT(
      rel(layer_activation_bytes(c, resolve_layout(c, 8), Recompute::None), s * b * h * 34 / t + 4 * a * s * b / t),
      1e-12);
}

// Megatron-LM docs/source/api-guide/dist_optimizer.md: bytes per parameter without / with the distributed optimizer
// over d ranks: fp16 parameters and gradients 20 / 4 + 16/d; bf16 parameters, fp32 gradients 18 / 6 + 12/d; fp32 both
// 16 / 8 + 8/d.
TEST(Memory, StatesPerParameterAreMegatronsDistributedOptimizerTable)
{
  const int d = 8;
  struct Row {
    int E, Eg;
    double plain, distributed;
  };
  for (const Row& r : {Row{2, 2, 20, 4 + 16.0 / d}, Row{2, 4, 18, 6 + 12.0 / d}, Row{4, 4, 16, 8 + 8.0 / d}}) {
    for (int zero : {0, 1}) {
      MegatronConfig c = gpt(2, true);
      c.parallel.zero_stage = zero;
      c.training.bytes_per_element = r.E;
      c.training.grad_bytes_per_element = r.Eg;
      c.training.global_batch = 2 * d;
      const auto m = megatron_memory(c, 2 * d);
      ASSERT_EQ(m.size(), 1u);
      const double per_param = (m[0].weight_bytes + m[0].gradient_bytes + m[0].optimizer_bytes) / m[0].parameters;
      EXPECT_LT(rel(per_param, zero == 0 ? r.plain : r.distributed), 1e-12) << r.E << "/" << r.Eg << " ZeRO-" << zero;
    }
  }
}

// ZeRO stage 2 keeps 2 + (4 + 12)/d bytes per bf16 parameter with fp32 gradients (the gradients sharded too; plus one
// bucket of full gradients, one parameter here); stage 3 (2 + 4 + 12)/d, plus the units gathered whole: two of the
// largest (the vocabulary-sized embedding here, V h / t parameters) for the weights and one for its gradient.
TEST(Memory, ZeroStagesTwoAndThreeShardAsZeroDoes)
{
  const int d = 16, t = 2;
  MegatronConfig c = gpt(t, true);
  c.model.vocab = 256000; // the embedding outweighs a layer: 256000 h / t > 12 h^2 / t
  c.model.tied_embeddings = true;
  c.parallel.bucket_params = 1;
  c.training.global_batch = 2 * d;
  c.parallel.zero_stage = 2;
  auto m = megatron_memory(c, t * d);
  const double P = m[0].parameters;
  EXPECT_LT(rel(m[0].weight_bytes + m[0].gradient_bytes + m[0].optimizer_bytes, 2 * P + 16 * P / d + 4 * 1), 1e-12);
  c.parallel.zero_stage = 3;
  m = megatron_memory(c, t * d);
  const double unit = 256000.0 * 4096 / t;
  EXPECT_LT(rel(m[0].weight_bytes + m[0].gradient_bytes + m[0].optimizer_bytes, 18 * P / d + (2 * 2 + 4) * unit),
            1e-12);
}

// Narayanan et al. 2021, eq. 2: P = 12 l h^2 (1 + 13 / (12 h) + (V + s) / (12 l h)) for GPT-3 175B. The generator
// counts no biases and no learned position embedding (9 l h + s h fewer, 0.02%).
TEST(Memory, ParametersMatchNarayanansCount)
{
  MegatronConfig c;
  c.model.layers = 96;
  c.model.hidden = 12288;
  c.model.heads = 96;
  c.model.seq_length = 2048;
  c.model.vocab = 51200;
  c.model.tied_embeddings = true;
  c.training.global_batch = 1;
  const double l = 96, h = 12288, V = 51200, s = 2048;
  const double P = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  EXPECT_LT(rel(megatron_memory(c, 1)[0].parameters, P), 1e-3);
}

TEST(Memory, OneFOneBHoldsAtMostPipelineDepthMinusStageMicroBatches)
{
  for (int p : {2, 4, 8})
    for (int m : {1, 3, 8, 32})
      for (int s = 0; s < p; ++s)
        EXPECT_EQ(microbatches_in_flight(p, s, m, 1), std::min(p - s, m)) << p << " " << s << " " << m;
}

// Korthikanti et al. 2022, section 4.2.3: with v interleaved chunks the first stage holds the activations of
// L (1 + (p - 1) / (p v)) layers, (p v) chunk passes of L / (p v) layers each, plus p - 1.
TEST(Memory, InterleavedFirstStageHoldsKorthikantisFactor)
{
  for (int p : {2, 4, 8})
    for (int v : {2, 3})
      EXPECT_EQ(microbatches_in_flight(p, 0, 4 * p, v), p * v + p - 1) << p << " " << v;
}

TEST(Memory, TheFirstStageHoldsTheMostActivations)
{
  MegatronConfig c = gpt(2, true);
  c.parallel.pp = 4;
  c.training.global_batch = 16;
  const auto m = megatron_memory(c, 8);
  ASSERT_EQ(m.size(), 4u);
  for (int s = 0; s < 4; ++s)
    EXPECT_EQ(m[static_cast<std::size_t>(s)].microbatches_in_flight, 4 - s);
  EXPECT_GT(m[0].activation_bytes, m[1].activation_bytes);
}

} // namespace

namespace {

// Korthikanti et al. 2022 ran the four models of their Table 3 on A100 80GB GPUs (Selene), with full recomputation
// and with their present work (selective recompute + sequence parallelism), Table 5: sequence 2048, vocabulary 51200,
// TP 8 and no data parallelism; 22B micro-batch 4 on one stage, 175B / 530B interleaved with 3 chunks (section 6).
// What ran fits: the memory model must put every stage under the A100's 81920 MiB.
TEST(Memory, KorthikantiTable5LayoutsFitTheA100sTheyRanOn)
{
  struct Model {
    const char* name;
    int heads, hidden, layers, pp, gpus, global_batch, micro_batch, chunks;
  };
  const Model models[] = {{"22B", 64, 6144, 48, 1, 8, 4, 4, 1},
                          {"175B", 96, 12288, 96, 8, 64, 64, 1, 3},
                          {"530B", 128, 20480, 105, 35, 280, 280, 1, 3},
                          {"1T", 160, 25600, 128, 64, 512, 512, 1, 1}};
  for (const Model& m : models)
    for (Recompute rc : {Recompute::Selective, Recompute::Full}) {
      MegatronConfig c;
      c.model.layers = m.layers;
      c.model.hidden = m.hidden;
      c.model.heads = m.heads;
      c.model.seq_length = 2048;
      c.model.vocab = 51200;
      c.model.flash_attention = false; // 2022: unfused attention
      c.parallel.tp = 8;
      c.parallel.pp = m.pp;
      c.parallel.virtual_stages = m.chunks;
      c.parallel.sequence_parallel = rc == Recompute::Selective;
      c.training.micro_batch = m.micro_batch;
      c.training.global_batch = m.global_batch;
      c.training.recompute = rc;
      double most = 0;
      for (const StageMemory& s : megatron_memory(c, m.gpus))
        most = std::max(most, s.total_bytes());
      EXPECT_LT(most, 81920.0 * 1024 * 1024) << m.name << " " << to_string(rc);
    }
}

} // namespace
