#include "railyard/workloads/generator.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <optional>

namespace railyard::workloads {

std::string to_string(Recompute r)
{
  switch (r) {
  case Recompute::None:
    return "none";
  case Recompute::Selective:
    return "selective";
  case Recompute::Full:
    return "full";
  }
  return "?";
}

InputLocation MegatronConfig::locate(const std::string& field) const
{
  if (auto it = where.find(field); it != where.end()) return it->second;
  InputLocation at;
  if (auto it = where.find(""); it != where.end()) at = it->second;
  at.field = at.field.empty() ? field : at.field + "." + field;
  return at;
}

namespace {

[[noreturn]] void refuse(const MegatronConfig& c, const std::string& field, const std::string& rule,
                         const std::string& fix)
{
  InputLocation at = c.locate(field);
  if (at.field.empty()) at.field = field;
  throw InputError(at, rule, fix);
}

void require_positive(const MegatronConfig& c, const std::string& field, long long v)
{
  if (v < 1) refuse(c, field, fmt::format("{} is {}; it must be at least 1", field, v), "give a positive number");
}

} // namespace

MegatronLayout resolve_layout(const MegatronConfig& c, int world)
{
  const TransformerSpec& m = c.model;
  const ParallelSpec& p = c.parallel;
  const TrainingSpec& t = c.training;
  require_positive(c, "model.layers", m.layers);
  require_positive(c, "model.hidden", m.hidden);
  require_positive(c, "model.heads", m.heads);
  require_positive(c, "model.seq_length", m.seq_length);
  require_positive(c, "model.vocab", m.vocab);
  require_positive(c, "parallel.tp", p.tp);
  require_positive(c, "parallel.pp", p.pp);
  require_positive(c, "parallel.cp", p.cp);
  require_positive(c, "parallel.ep", p.ep);
  require_positive(c, "parallel.virtual_stages", p.virtual_stages);
  require_positive(c, "training.micro_batch", t.micro_batch);
  require_positive(c, "training.global_batch", t.global_batch);
  if (m.kv_heads < 0) refuse(c, "model.kv_heads", "kv_heads is negative", "give 0 (= heads) or a positive number");
  if (m.ffn_hidden < 0) refuse(c, "model.ffn_hidden", "ffn_hidden is negative", "give 0 (= 4 x hidden) or more");
  if (m.experts < 0 || m.top_k < 0 || m.moe_ffn_hidden < 0)
    refuse(c, "model.experts", "experts, top_k and moe_ffn_hidden must not be negative", "give 0 for a dense model");
  if (p.zero_stage < 0 || p.zero_stage > 3)
    refuse(c, "parallel.zero", fmt::format("ZeRO stage {} does not exist", p.zero_stage),
           "give 0 (DDP), 1 (distributed optimizer), 2 or 3 (FSDP)");
  if (!(p.bucket_params > 0))
    refuse(c, "parallel.bucket_params", "bucket_params must be positive", "give parameters per bucket, e.g. 40e6");
  if (t.bytes_per_element < 1 || t.grad_bytes_per_element < 1)
    refuse(c, "training.dtype", "element sizes must be positive", "use bf16, fp16 or fp32");

  MegatronLayout L;
  L.world = world;
  L.tp = p.tp;
  L.pp = p.pp;
  L.cp = p.cp;
  L.ep = p.ep;
  L.vpp = p.virtual_stages;
  const long long model_parallel = 1LL * p.tp * p.pp * p.cp;
  if (world < 1) refuse(c, "parallel", "the cluster has no GPUs", "give a cluster");
  if (world % model_parallel != 0)
    refuse(c, "parallel.tp",
           fmt::format("tp x pp x cp = {} x {} x {} = {} does not divide the GPU count {}", p.tp, p.pp, p.cp,
                       model_parallel, world),
           "choose tp, pp and cp whose product divides the number of GPUs");
  L.dp = static_cast<int>(world / model_parallel);
  if (p.dp != 0 && p.dp != L.dp)
    refuse(c, "parallel.dp",
           fmt::format("dp = {} but tp x pp x cp x dp = {} x {} x {} x {} = {} is not the GPU count {}", p.dp, p.tp,
                       p.pp, p.cp, p.dp, model_parallel * p.dp, world),
           fmt::format("give dp = {} (GPUs / (tp x pp x cp)) or leave it out", L.dp));
  if (m.hidden % m.heads != 0)
    refuse(c, "model.hidden", fmt::format("hidden {} is not a multiple of heads {}", m.hidden, m.heads),
           "give a hidden size that the heads divide");
  L.kv_heads = m.kv_heads == 0 ? m.heads : m.kv_heads;
  if (m.heads % L.kv_heads != 0)
    refuse(c, "model.kv_heads", fmt::format("heads {} is not a multiple of kv_heads {}", m.heads, L.kv_heads),
           "give kv_heads that divides heads (grouped-query attention)");
  if (m.heads % p.tp != 0)
    refuse(c, "model.heads", fmt::format("heads {} is not divisible by tp {}", m.heads, p.tp),
           "choose tp that divides the number of attention heads");
  if (L.kv_heads % p.tp != 0)
    refuse(c, "model.kv_heads",
           fmt::format("kv_heads {} is not divisible by tp {} (Megatron splits the query groups across TP)", L.kv_heads,
                       p.tp),
           "choose tp that divides kv_heads");
  L.ffn_hidden = m.ffn_hidden == 0 ? 4 * m.hidden : m.ffn_hidden;
  if (L.ffn_hidden % p.tp != 0)
    refuse(c, "model.ffn_hidden", fmt::format("ffn_hidden {} is not divisible by tp {}", L.ffn_hidden, p.tp),
           "choose tp that divides the FFN size");
  const long long chunks = 1LL * p.pp * p.virtual_stages;
  const bool uneven = p.first_stage_layers != 0 || p.last_stage_layers != 0;
  if (p.first_stage_layers < 0 || p.last_stage_layers < 0)
    refuse(c, p.first_stage_layers < 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers",
           "a stage's layer count is negative", "give a positive number of layers, or leave the key out");
  if (uneven) {
    const char* field = p.first_stage_layers != 0 ? "parallel.first_stage_layers" : "parallel.last_stage_layers";
    if (p.virtual_stages > 1)
      refuse(c, field, "first_stage_layers / last_stage_layers need the 1F1B schedule (virtual_stages: 1)",
             "remove virtual_stages, or split the layers evenly");
    if (p.pp < 2) refuse(c, field, "first_stage_layers / last_stage_layers need pp >= 2", "use pipeline parallelism");
    const int given = (p.first_stage_layers != 0) + (p.last_stage_layers != 0);
    const int middle = p.pp - given;
    const long long rest = 1LL * m.layers - p.first_stage_layers - p.last_stage_layers;
    if (rest < 0 || (middle == 0 && rest != 0) || (middle > 0 && (rest < middle || rest % middle != 0)))
      refuse(c, field,
             fmt::format("{} layers less {} on the first and {} on the last stage leave {} for the {} other stage(s), "
                         "which do not share them equally with at least one each",
                         m.layers, p.first_stage_layers, p.last_stage_layers, rest, middle),
             "choose first and last stage layers that leave a multiple of the other stages' count");
    const int each = middle > 0 ? static_cast<int>(rest / middle) : 0;
    for (int s = 0; s < p.pp; ++s) {
      int n = each;
      if (s == 0 && p.first_stage_layers != 0) n = p.first_stage_layers;
      if (s == p.pp - 1 && p.last_stage_layers != 0) n = p.last_stage_layers;
      L.stage_layers.push_back(n);
    }
    L.layers_per_chunk = *std::max_element(L.stage_layers.begin(), L.stage_layers.end());
  } else {
    if (m.layers % chunks != 0)
      refuse(
          c, "model.layers",
          fmt::format("layers {} is not divisible by pp x virtual_stages = {} x {}", m.layers, p.pp, p.virtual_stages),
          "choose pp and virtual_stages whose product divides the number of layers, or give "
          "parallel.first_stage_layers / last_stage_layers (Megatron's uneven split)");
    L.layers_per_chunk = static_cast<int>(m.layers / chunks);
    L.stage_layers.assign(static_cast<std::size_t>(p.pp), L.layers_per_chunk);
  }
  for (int s = 0, first = 0; s < p.pp; ++s) {
    L.stage_first.push_back(first);
    first += L.stage_layers[static_cast<std::size_t>(s)];
  }
  if (p.virtual_stages > 1 && p.pp < 2)
    refuse(c, "parallel.virtual_stages", "the interleaved schedule needs pp >= 2",
           "set virtual_stages: 1 or use pipeline parallelism");
  const long long per_step = 1LL * t.micro_batch * L.dp;
  if (t.global_batch % per_step != 0)
    refuse(c, "training.global_batch",
           fmt::format("global_batch {} is not divisible by micro_batch x dp = {} x {}", t.global_batch, t.micro_batch,
                       L.dp),
           "choose a global batch that is a multiple of micro_batch x dp");
  L.microbatches = static_cast<int>(t.global_batch / per_step);
  if (p.virtual_stages > 1 && L.microbatches % p.pp != 0)
    refuse(c, "training.global_batch",
           fmt::format("the interleaved schedule needs the micro-batches per pipeline ({}) to be a multiple of pp {}",
                       L.microbatches, p.pp),
           "choose a global batch that gives a multiple of pp micro-batches, or virtual_stages: 1");
  if (m.seq_length % p.cp != 0)
    refuse(c, "parallel.cp", fmt::format("seq_length {} is not divisible by cp {}", m.seq_length, p.cp),
           "choose cp that divides the sequence length");
  L.sequence_parallel = p.sequence_parallel && p.tp > 1;
  if (L.sequence_parallel && (m.seq_length / p.cp) % p.tp != 0)
    refuse(c, "parallel.sequence_parallel",
           fmt::format("sequence parallelism splits the {} tokens of a CP rank across tp {}, which does not divide it",
                       m.seq_length / p.cp, p.tp),
           "choose tp that divides seq_length / cp, or sequence_parallel: false");
  const bool moe = m.experts > 1;
  if (moe) {
    if (m.top_k < 1 || m.top_k > m.experts)
      refuse(c, "model.top_k", fmt::format("top_k {} is outside 1..experts ({})", m.top_k, m.experts),
             "route each token to between 1 and experts experts");
    if (m.experts % p.ep != 0)
      refuse(c, "parallel.ep", fmt::format("experts {} is not divisible by ep {}", m.experts, p.ep),
             "choose ep that divides the number of experts");
    if (L.dp % p.ep != 0)
      refuse(c, "parallel.ep",
             fmt::format("ep {} does not divide the data-parallel size {} (expert parallelism is carved out of the "
                         "data-parallel ranks)",
                         p.ep, L.dp),
             "choose ep that divides dp");
    if (p.tp > 1 && !p.sequence_parallel)
      refuse(c, "parallel.sequence_parallel", "MoE layers with tp > 1 need sequence parallelism (as Megatron-core)",
             "set sequence_parallel: true");
  } else if (p.ep != 1) {
    refuse(c, "parallel.ep", fmt::format("ep = {} but the model has no experts", p.ep),
           "set model.experts and model.top_k, or ep: 1");
  }
  L.moe_ffn_hidden = m.moe_ffn_hidden == 0 ? L.ffn_hidden : m.moe_ffn_hidden;
  const long long multiple = 128LL * p.tp;
  L.padded_vocab = static_cast<int>((m.vocab + multiple - 1) / multiple * multiple);
  return L;
}

std::vector<PipelineSlot> pipeline_schedule(int p, int s, int m, int v)
{
  std::vector<PipelineSlot> out;
  if (v <= 1) {
    // megatron/core/pipeline_parallel/schedules.py, forward_backward_pipelining_without_interleaving.
    const int warmup = std::min(p - s - 1, m);
    for (int i = 0; i < warmup; ++i)
      out.push_back({true, i, 0});
    for (int i = 0; i < m - warmup; ++i) {
      out.push_back({true, warmup + i, 0});
      out.push_back({false, i, 0});
    }
    for (int i = m - warmup; i < m; ++i)
      out.push_back({false, i, 0});
    return out;
  }
  // forward_backward_pipelining_with_interleaving: k-th forward (backward) runs model chunk
  // (k mod (p v)) / p (reversed for backward) on micro-batch (k mod p) + p * (k / (p v)).
  const int total = m * v;
  auto chunk_of = [&](int k, bool forward) {
    int c = (k % (p * v)) / p;
    return forward ? c : v - 1 - c;
  };
  auto mb_of = [&](int k) { return (k % p) + p * (k / (p * v)); };
  int warmup = (p - s - 1) * 2 + (v - 1) * p;
  warmup = std::min(warmup, total);
  for (int k = 0; k < warmup; ++k)
    out.push_back({true, mb_of(k), chunk_of(k, true)});
  const int steady = total - warmup;
  for (int k = 0; k < steady; ++k) {
    out.push_back({true, mb_of(warmup + k), chunk_of(warmup + k, true)});
    out.push_back({false, mb_of(k), chunk_of(k, false)});
  }
  for (int k = steady; k < total; ++k)
    out.push_back({false, mb_of(k), chunk_of(k, false)});
  return out;
}

double megatron_model_flops(const MegatronConfig& c)
{
  const TransformerSpec& m = c.model;
  const double s = m.seq_length, h = m.hidden;
  const double kv = (m.kv_heads == 0 ? m.heads : m.kv_heads) * (h / m.heads);
  const double f = m.ffn_hidden == 0 ? 4 * h : m.ffn_hidden;
  const double mats = m.gated_mlp ? 3 : 2;
  double layer = 2 * s * h * (h + 2 * kv) + 4 * s * s * h + 2 * s * h * h;
  if (m.experts > 1) {
    const double fe = m.moe_ffn_hidden == 0 ? f : m.moe_ffn_hidden;
    layer += 2 * s * h * m.experts + m.top_k * 2 * mats * s * h * fe;
  } else {
    layer += 2 * mats * s * h * f;
  }
  const double forward = m.layers * layer + 2 * s * h * m.vocab;
  return 3.0 * forward * c.training.global_batch;
}

namespace {

// Communicator slots of every generated program (Workload::Rank::comm_map maps them to global ids).
enum Slot : int { kTp = 0, kCp, kDp, kEp, kEdp, kPp, kEmb, kSlots };
// Streams: compute and the blocking collectives on 0, as Megatron issues them on the default stream.
enum Stream : StreamId { kCompute = 0, kPpSend = 1, kPpRecv = 2, kDpGrad = 3, kDpParam = 4, kTpAsync = 5 };
constexpr OpId kNone = ~OpId{0};

// The sizes of one step in the notation of the papers its formulas come from (Korthikanti et al. 2022, section 4 and
// Table 2: b, s, h, a, t; Narayanan et al. 2021), so each formula below reads like its source. Set once in
// generate_megatron() from the config and layout.
struct Sizes {
  double E = 2;   // bytes per element of activations and weights (training.bytes_per_element)
  double Eg = 4;  // bytes per element of gradients (training.grad_bytes_per_element)
  double b = 1;   // micro-batch size, sequences
  double s = 0;   // sequence length, tokens
  double S = 0;   // tokens of a sequence on one context-parallel rank: s / cp
  double T = 0;   // tokens of a micro-batch on one rank: b x S
  double Tsp = 0; // tokens one TP rank holds outside the TP regions: T / tp with sequence parallelism, else T
  double h = 0;   // hidden size
  double a = 0;   // attention heads
  double kvd = 0; // key/value width: KV heads x head size (h / a); h without grouped-query attention
  double f = 0;   // FFN hidden size of a dense layer
  double fe = 0;  // FFN hidden size of one expert
  double X = 0;   // experts of an MoE layer (0 without MoE)
  double k = 0;   // experts each token is routed to, top-k (0 without MoE)
  double V = 0;   // vocabulary, padded as Megatron pads it
  double tp = 1, cp = 1, ep = 1;              // tensor-, context- and expert-parallel sizes
  double m1 = 1;                              // FFN input matrices: 2 with a gated MLP (gate and up), else 1
  bool sp = false, moe = false, flash = true; // sequence parallelism, MoE layers, fused (flash) attention
};

// Parameters of one pipeline unit (a layer, the embedding, the LM head) as one TP rank holds them.
struct UnitParams {
  double dense = 0;  // reduced over the DP (x CP) group
  double expert = 0; // reduced over the expert-data-parallel group
};

// Emits the program of one pipeline stage.
class StageEmitter {
public:
  StageEmitter(const MegatronConfig& cfg, const MegatronLayout& L, const Sizes& z, int stage)
      : cfg_(cfg), L_(L), z_(z), stage_(stage), zero_(cfg.parallel.zero_stage)
  {
    b_.set_stream_label(kCompute, "compute");
    b_.set_stream_label(kPpSend, "pp send");
    b_.set_stream_label(kPpRecv, "pp recv");
    b_.set_stream_label(kDpGrad, "dp grads");
    b_.set_stream_label(kDpParam, "dp params");
    b_.set_stream_label(kTpAsync, "tp async");
    plan_buckets();
  }

  /// What one rank of this stage holds: its parameters over all chunks, and its largest unit's.
  StageParameters parameters() const
  {
    StageParameters p;
    p.dense = stage_params_dense_;
    p.expert = stage_params_expert_;
    const UnitParams layer = layer_params(), emb = embedding_params(), head = head_params();
    p.largest_unit =
        std::max({layer.dense + layer.expert, stage_ == 0 ? emb.dense : 0.0, stage_ == L_.pp - 1 ? head.dense : 0.0});
    p.dense_group = dp_group();
    p.expert_group = edp_group();
    return p;
  }

  RankGraph build()
  {
    const auto slots = pipeline_schedule(L_.pp, stage_, L_.microbatches, L_.vpp);
    std::vector<int> last_backward(L_.vpp, -1);
    for (std::size_t i = 0; i < slots.size(); ++i)
      if (!slots[i].forward) last_backward[slots[i].chunk] = static_cast<int>(i);
    // Megatron's train_step zeroes the fp32 gradient buffer (zero_grad_buffer) before the first micro-batch.
    mem("zero grad buffer",
        z_.Eg * (stage_params_dense_ / grad_shard(dp_group()) + stage_params_expert_ / grad_shard(edp_group())));
    if (zero_ <= 2 && zero_ >= 1 && cfg_.parallel.overlap_param_gather) emit_param_gathers(kNone);
    for (std::size_t i = 0; i < slots.size(); ++i) {
      const PipelineSlot& sl = slots[i];
      if (sl.forward)
        emit_forward(sl.microbatch, sl.chunk);
      else
        emit_backward(sl.microbatch, sl.chunk, last_backward[sl.chunk] == static_cast<int>(i));
    }
    emit_step_end();
    return b_.finish();
  }

private:
  // ---- primitives ----
  OpId add(Op op, const std::string& name, std::initializer_list<OpId> deps = {})
  {
    OpId id = b_.add(op, name);
    for (OpId d : deps)
      if (d != kNone) b_.add_dep(id, d);
    if (op.stream == kCompute) last_compute_ = id;
    return id;
  }
  OpId compute(const std::string& name, double flops, double bytes, std::initializer_list<OpId> deps = {})
  {
    return add(Op::make_compute(flops, Bytes(bytes), kCompute), name, deps);
  }
  OpId mem(const std::string& name, double bytes, std::initializer_list<OpId> deps = {})
  {
    return compute(name, 0, bytes, deps);
  }
  // A GEMM C[m x n] = A[m x k] B[k x n], `batch` times: 2 m n k batch FLOPs, and its shape for the kernel model's
  // tile and wave count.
  OpId gemm(const std::string& name, GemmShape g, double bytes, std::initializer_list<OpId> deps = {})
  {
    const OpId id = compute(name, g.flops(), bytes, deps);
    b_.set_gemm(id, g);
    return id;
  }
  // Backward of a linear layer whose forward is Y[m x n] = X[m x k] W[k x n]: the data gradient dX = dY W^T is
  // [m x k] over n, the weight gradient dW = X^T dY is [k x n] over m.
  static GemmShape dgrad_of(GemmShape f) { return {f.m, f.k, f.n, f.batch}; }
  static GemmShape wgrad_of(GemmShape f) { return {f.k, f.n, f.m, f.batch}; }
  OpId coll(CollectiveKind k, int slot, double bytes, const std::string& name, StreamId stream = kCompute,
            std::initializer_list<OpId> deps = {})
  {
    return add(Op::make_collective(k, Bytes(bytes), slot, -1, stream), name, deps);
  }
  // A GEMM dimension: a whole number of elements by the layout's divisibility rules (resolve_layout).
  static std::uint32_t dim(double v) { return static_cast<std::uint32_t>(std::llround(v)); }
  static GemmShape shape(double m, double n, double k, double batch = 1)
  {
    return {dim(m), dim(n), dim(k), dim(batch)};
  }
  // The layer's linear layers as one TP rank runs them (forward, tokens x output x input).
  GemmShape qkv_shape() const { return shape(z_.T, (z_.h + 2 * z_.kvd) / z_.tp, z_.h); }
  GemmShape proj_shape() const { return shape(z_.T, z_.h, z_.h / z_.tp); }
  GemmShape fc1_shape() const { return shape(z_.T, z_.f * z_.m1 / z_.tp, z_.h); }
  GemmShape fc2_shape() const { return shape(z_.T, z_.h, z_.f / z_.tp); }
  GemmShape logits_shape() const { return shape(z_.T, z_.V / z_.tp, z_.h); }
  // MoE: the rank's tokens routed to its experts, as one GEMM of tok rows (balanced routing).
  GemmShape router_shape() const { return shape(z_.Tsp, z_.X, z_.h); }
  GemmShape expert_fc1_shape() const { return shape(z_.Tsp * z_.k, z_.fe * z_.m1, z_.h); }
  GemmShape expert_fc2_shape() const { return shape(z_.Tsp * z_.k, z_.h, z_.fe); }
  // Attention without fusion: per (sequence, local head), scores Q K^T = [S x s] over the head size h/a, and the
  // context P V = [S x h/a] over s (torch.baddbmm and torch.bmm in Megatron's CoreAttention).
  double heads_batch() const { return z_.b * z_.a / z_.tp; }
  GemmShape scores_shape() const { return shape(z_.S, z_.s, z_.h / z_.a, heads_batch()); }
  GemmShape context_shape() const { return shape(z_.S, z_.h / z_.a, z_.s, heads_batch()); }
  bool has_tp() const { return L_.tp > 1; }
  bool has_cp() const { return L_.cp > 1; }
  bool has_ep() const { return z_.moe && L_.ep > 1; }
  double dp_group() const { return 1.0 * L_.dp * L_.cp; }
  double edp_group() const { return 1.0 * L_.tp * L_.cp * L_.dp / L_.ep; }

  int first_layer(int chunk) const { return L_.first_layer(stage_, chunk); }
  int chunk_layers() const { return L_.layers_of(stage_); }
  bool has_embedding(int chunk) const { return stage_ == 0 && chunk == 0; }
  bool has_head(int chunk) const { return stage_ == L_.pp - 1 && chunk == L_.vpp - 1; }

  // ---- parameters and buckets ----
  UnitParams layer_params() const
  {
    UnitParams u;
    u.dense = z_.h * (z_.h + 2 * z_.kvd) / z_.tp + z_.h * z_.h / z_.tp + 4 * z_.h;
    if (z_.moe) {
      u.dense += z_.h * z_.X;
      u.expert = (z_.X / z_.ep) * (z_.m1 + 1) * z_.h * z_.fe;
    } else {
      u.dense += (z_.m1 + 1) * z_.h * z_.f / z_.tp;
    }
    return u;
  }
  UnitParams embedding_params() const { return {z_.V * z_.h / z_.tp, 0}; }
  // The final layernorm, and the output matrix unless it is the embedding's on this same stage (tied, one stage).
  UnitParams head_params() const
  {
    const bool shared = cfg_.model.tied_embeddings && L_.pp == 1;
    return {(shared ? 0 : z_.V * z_.h / z_.tp) + 2 * z_.h, 0};
  }
  // Gradients held per rank: all of its parameters' under ZeRO-0/1, its shard under ZeRO-2/3.
  double grad_shard(double group) const { return zero_ >= 2 ? group : 1; }
  // Pipeline transfers are split across the TP ranks and all-gathered by the receiver (scatter/gather
  // optimization) when sequence parallelism does not split them already.
  bool gather_p2p() const { return cfg_.parallel.scatter_gather_p2p && !z_.sp && has_tp(); }

  // A unit is a layer (index >= 0), the LM head (-1) or the embedding (-2), in the order the backward pass finishes
  // their gradients. Buckets group whole units until they hold bucket_params (Megatron fills them per parameter).
  struct Bucket {
    double params = 0;
    std::vector<int> units;
  };
  struct ChunkBuckets {
    std::vector<Bucket> dense, expert;
    std::map<int, std::pair<int, int>> of_unit; // unit -> (dense bucket, expert bucket), -1 when none
  };

  void plan_buckets()
  {
    buckets_.resize(L_.vpp);
    for (int c = 0; c < L_.vpp; ++c) {
      std::vector<std::pair<int, UnitParams>> units;
      if (has_head(c)) units.emplace_back(-1, head_params());
      for (int l = first_layer(c) + chunk_layers() - 1; l >= first_layer(c); --l)
        units.emplace_back(l, layer_params());
      if (has_embedding(c)) units.emplace_back(-2, embedding_params());
      auto& cb = buckets_[c];
      auto place = [&](std::vector<Bucket>& list, double params, int unit) {
        if (params <= 0) return -1;
        if (list.empty() || list.back().params >= cfg_.parallel.bucket_params) list.emplace_back();
        list.back().params += params;
        list.back().units.push_back(unit);
        return static_cast<int>(list.size() - 1);
      };
      for (const auto& [unit, p] : units) {
        int d = place(cb.dense, p.dense, unit);
        int e = place(cb.expert, p.expert, unit);
        cb.of_unit[unit] = {d, e};
      }
      for (const auto& bk : cb.dense)
        stage_params_dense_ += bk.params;
      for (const auto& bk : cb.expert)
        stage_params_expert_ += bk.params;
    }
  }

  // Gradients of `unit` are final once its last wgrad op `done` has run: close its buckets when it was their last
  // unit. Called in the backward pass of the micro-batch that reduces gradients.
  void unit_gradients_ready(int chunk, int unit, OpId done)
  {
    if (zero_ == 3) return; // FSDP reduce-scatters per layer (emit_layer_grad_rs)
    auto& cb = buckets_[chunk];
    const auto [d, e] = cb.of_unit.at(unit);
    const CollectiveKind kind = zero_ == 0 ? CollectiveKind::AllReduce : CollectiveKind::ReduceScatter;
    const char* what = zero_ == 0 ? "all-reduce" : "reduce-scatter";
    if (d >= 0 && cb.dense[d].units.back() == unit && dp_group() > 1)
      grad_syncs_.push_back(coll(kind, kDp, cb.dense[d].params * z_.Eg,
                                 fmt::format("grad {} chunk {} bucket {}", what, chunk, d), kDpGrad, {done}));
    if (e >= 0 && cb.expert[e].units.back() == unit && edp_group() > 1)
      grad_syncs_.push_back(coll(kind, kEdp, cb.expert[e].params * z_.Eg,
                                 fmt::format("expert grad {} chunk {} bucket {}", what, chunk, e), kDpGrad, {done}));
  }

  // ZeRO-1/2: all-gather of the updated parameters, per bucket. At the step start (overlap_param_gather: the first
  // forward of each unit waits for its bucket) or after the optimizer (`after`).
  void emit_param_gathers(OpId after)
  {
    for (int c = 0; c < L_.vpp; ++c) {
      auto& cb = buckets_[c];
      cb_gather_.resize(L_.vpp);
      cb_gather_[c].dense.assign(cb.dense.size(), kNone);
      cb_gather_[c].expert.assign(cb.expert.size(), kNone);
      // Forward order: the bucket of the first layer first.
      for (int d = static_cast<int>(cb.dense.size()) - 1; d >= 0; --d)
        if (dp_group() > 1)
          cb_gather_[c].dense[d] = coll(CollectiveKind::AllGather, kDp, cb.dense[d].params * z_.E,
                                        fmt::format("param all-gather chunk {} bucket {}", c, d), kDpParam, {after});
      for (int e = static_cast<int>(cb.expert.size()) - 1; e >= 0; --e)
        if (edp_group() > 1)
          cb_gather_[c].expert[e] =
              coll(CollectiveKind::AllGather, kEdp, cb.expert[e].params * z_.E,
                   fmt::format("expert param all-gather chunk {} bucket {}", c, e), kDpParam, {after});
    }
  }

  // The ops a unit's first forward must wait for (overlapped parameter gathers).
  void wait_params(int chunk, int unit)
  {
    if (cb_gather_.empty() || first_forward_done_[chunk]) return;
    const auto [d, e] = buckets_[chunk].of_unit.at(unit);
    if (d >= 0 && cb_gather_[chunk].dense[d] != kNone) pending_.push_back(cb_gather_[chunk].dense[d]);
    if (e >= 0 && cb_gather_[chunk].expert[e] != kNone) pending_.push_back(cb_gather_[chunk].expert[e]);
  }

  // FSDP (ZeRO-3): all-gather a unit's parameters before it runs, at most two units ahead of the compute stream.
  void fsdp_gather(int unit, const UnitParams& p, const std::string& pass)
  {
    if (zero_ != 3) return;
    const OpId throttle = fsdp_window_[0];
    fsdp_window_[0] = fsdp_window_[1];
    fsdp_window_[1] = last_compute_;
    if (p.dense > 0 && dp_group() > 1)
      pending_.push_back(coll(CollectiveKind::AllGather, kDp, p.dense * z_.E,
                              fmt::format("{} param all-gather {}", pass, unit_name(unit)), kDpParam, {throttle}));
    if (p.expert > 0 && edp_group() > 1)
      pending_.push_back(coll(CollectiveKind::AllGather, kEdp, p.expert * z_.E,
                              fmt::format("{} expert param all-gather {}", pass, unit_name(unit)), kDpParam,
                              {throttle}));
  }
  void fsdp_reduce(int unit, const UnitParams& p, OpId done)
  {
    if (zero_ != 3) return;
    if (p.dense > 0 && dp_group() > 1)
      grad_syncs_.push_back(coll(CollectiveKind::ReduceScatter, kDp, p.dense * z_.Eg,
                                 fmt::format("grad reduce-scatter {}", unit_name(unit)), kDpGrad, {done}));
    if (p.expert > 0 && edp_group() > 1)
      grad_syncs_.push_back(coll(CollectiveKind::ReduceScatter, kEdp, p.expert * z_.Eg,
                                 fmt::format("expert grad reduce-scatter {}", unit_name(unit)), kDpGrad, {done}));
  }
  static std::string unit_name(int unit)
  {
    if (unit == -1) return "lm head";
    if (unit == -2) return "embedding";
    return fmt::format("L{}", unit);
  }

  // The next compute op also waits for everything pending (received activations, gathered parameters).
  OpId compute_waiting(const std::string& name, double flops, double bytes)
  {
    OpId id = compute(name, flops, bytes);
    for (OpId d : pending_)
      b_.add_dep(id, d);
    pending_.clear();
    return id;
  }

  // ---- forward ----
  void emit_layer_forward(int l, const std::string& pass)
  {
    const std::string P = fmt::format("L{} {} ", l, pass);
    const double Ttp = z_.T / z_.tp;
    compute_waiting(P + "ln1", 0, 2 * z_.Tsp * z_.h * z_.E);
    if (z_.sp) coll(CollectiveKind::AllGather, kTp, z_.T * z_.h * z_.E, P + "tp all-gather");
    gemm(P + "qkv", qkv_shape(),
         z_.E * (z_.T * z_.h + z_.h * (z_.h + 2 * z_.kvd) / z_.tp + z_.T * (z_.h + 2 * z_.kvd) / z_.tp));
    // The QKV layer adds its bias in a kernel of its own (Megatron's column-parallel linear, skip_bias_add=False:
    // `output = output + bias`), reading and writing its output; the other linears fuse theirs into bias-gelu and
    // bias-dropout-add.
    mem(P + "qkv bias", 2 * z_.T * (z_.h + 2 * z_.kvd) / z_.tp * z_.E);
    emit_attention_core(P, true);
    gemm(P + "proj", proj_shape(), z_.E * (Ttp * z_.h + z_.h * z_.h / z_.tp + z_.T * z_.h));
    tp_reduce(P, z_.T * z_.h * z_.E);
    mem(P + "dropout-add", z_.Tsp * z_.h * (3 * z_.E + 1));
    mem(P + "ln2", 2 * z_.Tsp * z_.h * z_.E);
    if (z_.moe) {
      const double tok = z_.Tsp * z_.k;
      gemm(P + "router", router_shape(), z_.E * (z_.Tsp * z_.h + z_.h * z_.X + z_.Tsp * z_.X));
      if (has_ep()) coll(CollectiveKind::AllToAll, kEp, tok * z_.h * z_.E, P + "ep dispatch all-to-all");
      gemm(P + "expert fc1", expert_fc1_shape(),
           z_.E * (tok * z_.h + (z_.X / z_.ep) * z_.h * z_.fe * z_.m1 + tok * z_.fe * z_.m1));
      mem(P + "expert act", tok * z_.fe * z_.E * (z_.m1 + 1));
      gemm(P + "expert fc2", expert_fc2_shape(), z_.E * (tok * z_.fe + (z_.X / z_.ep) * z_.fe * z_.h + tok * z_.h));
      if (has_ep()) coll(CollectiveKind::AllToAll, kEp, tok * z_.h * z_.E, P + "ep combine all-to-all");
    } else {
      if (z_.sp) coll(CollectiveKind::AllGather, kTp, z_.T * z_.h * z_.E, P + "tp all-gather");
      gemm(P + "fc1", fc1_shape(), z_.E * (z_.T * z_.h + z_.h * z_.f * z_.m1 / z_.tp + z_.T * z_.f * z_.m1 / z_.tp));
      mem(P + "act", Ttp * z_.f * z_.E * (z_.m1 + 1));
      gemm(P + "fc2", fc2_shape(), z_.E * (Ttp * z_.f + z_.f * z_.h / z_.tp + z_.T * z_.h));
      tp_reduce(P, z_.T * z_.h * z_.E);
    }
    mem(P + "dropout-add", z_.Tsp * z_.h * (3 * z_.E + 1));
  }

  // Output of a row-parallel block: reduce-scatter under sequence parallelism, else all-reduce.
  void tp_reduce(const std::string& P, double bytes)
  {
    if (!has_tp()) return;
    if (z_.sp)
      coll(CollectiveKind::ReduceScatter, kTp, bytes, P + "tp reduce-scatter");
    else
      coll(CollectiveKind::AllReduce, kTp, bytes, P + "tp all-reduce");
  }

  // QK^T, softmax, dropout, attention over V: the part selective recomputation re-runs. The local queries (s/cp)
  // attend to the keys of the whole sequence, all-gathered across CP first.
  void emit_attention_core(const std::string& P, bool gather_kv)
  {
    const double heads_tp = z_.a / z_.tp;
    const double kv_bytes = z_.b * z_.s * z_.kvd / z_.tp * z_.E; // one of K, V for the whole sequence
    if (gather_kv && has_cp()) coll(CollectiveKind::AllGather, kCp, 2 * kv_bytes, P + "cp kv all-gather");
    const double core = 2 * z_.b * z_.S * z_.s * z_.h / z_.tp; // one of QK^T, attention over V
    const double q_bytes = z_.T * z_.h / z_.tp * z_.E;
    if (z_.flash) {
      compute(P + "attention", 2 * core, 2 * q_bytes + 2 * kv_bytes);
      return;
    }
    const double scores = z_.b * heads_tp * z_.S * z_.s; // elements of the score matrix
    gemm(P + "attention scores", scores_shape(), q_bytes + kv_bytes + scores * z_.E);
    mem(P + "softmax", 2 * scores * z_.E);
    mem(P + "attention dropout", scores * (2 * z_.E + 1));
    gemm(P + "attention over values", context_shape(), scores * z_.E + kv_bytes + q_bytes);
    // [b, heads, s, h/a] -> [s, b, heads, h/a]: Megatron's CoreAttention `context_layer.permute(2, 0, 1,
    // 3).contiguous()`, a copy of the context.
    mem(P + "context transpose", 2 * q_bytes);
  }

  void emit_forward(int mb, int chunk)
  {
    const auto first = static_cast<OpId>(b_.size());
    if (!(stage_ == 0 && chunk == 0)) {
      const int prev = stage_ > 0 ? stage_ - 1 : L_.pp - 1;
      // Posted when the compute stream gets here (Megatron's p2p calls are synchronous with the schedule).
      receive(add(Op::make_recv(kPp, prev, Bytes(activation_bytes()), tag(true, chunk - (stage_ == 0)), kPpRecv),
                  fmt::format("recv activations chunk {}", chunk), {last_compute_}),
              "activations");
    }
    if (has_embedding(chunk)) {
      wait_params(chunk, -2);
      fsdp_gather(-2, embedding_params(), "fwd");
      compute_waiting("embedding", 0, z_.T * z_.h * z_.E * 2);
      tp_reduce("embedding ", z_.T * z_.h * z_.E);
    }
    for (int l = first_layer(chunk); l < first_layer(chunk) + chunk_layers(); ++l) {
      wait_params(chunk, l);
      fsdp_gather(l, layer_params(), "fwd");
      emit_layer_forward(l, "fwd");
    }
    if (has_head(chunk)) {
      wait_params(chunk, -1);
      fsdp_gather(-1, head_params(), "fwd");
      emit_head_forward();
    }
    first_forward_done_[chunk] = true;
    if (!has_head(chunk)) {
      const int next = stage_ < L_.pp - 1 ? stage_ + 1 : 0;
      sent(add(Op::make_send(kPp, next, Bytes(activation_bytes()), tag(true, chunk), kPpSend),
               fmt::format("send activations chunk {}", chunk), {last_compute_}));
    }
    // The framework's per-micro-batch host work (Megatron's forward_step: get_batch, the loss function) comes before
    // the slot's first op.
    if (b_.size() > first) b_.add_host_marks(first, kHostMicrobatch);
    (void)mb;
  }

  void emit_head_forward()
  {
    const double Vtp = z_.V / z_.tp;
    compute_waiting("final ln", 0, 2 * z_.Tsp * z_.h * z_.E);
    if (z_.sp) coll(CollectiveKind::AllGather, kTp, z_.T * z_.h * z_.E, "lm head tp all-gather");
    gemm("logits", logits_shape(), z_.E * (z_.T * z_.h + z_.h * Vtp + z_.T * Vtp));
    mem("cross entropy", z_.T * Vtp * 4 * 3);
    // Vocab-parallel cross entropy: all-reduces of the max logit, the target logit and the sum of exponentials.
    if (has_tp())
      for (const char* what : {"max", "target", "sum"})
        coll(CollectiveKind::AllReduce, kTp, z_.T * 4, fmt::format("cross entropy tp all-reduce ({})", what));
  }

  // ---- backward ----
  // Backward of a column-parallel linear (qkv, fc1): under sequence parallelism the input is all-gathered again for
  // the weight gradient while the data gradient runs, and the data gradient is reduce-scattered while the weight
  // gradient runs (Megatron's LinearWithGradAccumulationAndAsyncCommunication); without it, the data gradient is
  // all-reduced asynchronously. Returns the wgrad op.
  OpId column_backward(const std::string& P, const std::string& name, GemmShape fwd, double bytes)
  {
    OpId gather = kNone;
    if (z_.sp)
      gather = coll(CollectiveKind::AllGather, kTp, z_.T * z_.h * z_.E, P + name + " input tp all-gather", kTpAsync,
                    {last_compute_});
    OpId dgrad = gemm(P + name + " dgrad", dgrad_of(fwd), bytes);
    OpId reduce = kNone;
    if (has_tp())
      reduce = coll(z_.sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce, kTp, z_.T * z_.h * z_.E,
                    P + name + (z_.sp ? " dgrad tp reduce-scatter" : " dgrad tp all-reduce"), kTpAsync, {dgrad});
    OpId wgrad = gemm(P + name + " wgrad", wgrad_of(fwd), bytes, {gather});
    if (reduce != kNone) pending_.push_back(reduce);
    return wgrad;
  }

  // Backward of a row-parallel linear (proj, fc2): the output gradient is all-gathered under sequence parallelism.
  OpId row_backward(const std::string& P, const std::string& name, GemmShape fwd, double bytes)
  {
    if (z_.sp) coll(CollectiveKind::AllGather, kTp, z_.T * z_.h * z_.E, P + name + " grad tp all-gather");
    const GemmShape dg = dgrad_of(fwd);
    b_.set_gemm(compute_waiting(P + name + " dgrad", dg.flops(), bytes), dg);
    return gemm(P + name + " wgrad", wgrad_of(fwd), bytes);
  }

  void emit_layer_backward(int chunk, int l, bool reduce_grads)
  {
    if (cfg_.training.recompute == Recompute::Full) emit_layer_forward(l, "recompute");
    const std::string P = fmt::format("L{} bwd ", l);
    const double Ttp = z_.T / z_.tp;
    compute_waiting(P + "dropout-add", 0, z_.Tsp * z_.h * (2 * z_.E + 1));
    // Bias gradients: a bias broadcast over the tokens has its gradient summed over them, a kernel that reads the
    // output gradient (autograd's reduction for the biases fused into bias-dropout-add and bias-gelu; grad_output.sum
    // in the column-parallel linear's backward).
    if (!z_.moe) mem(P + "fc2 bias grad", z_.Tsp * z_.h * z_.E);
    if (z_.moe) {
      const double tok = z_.Tsp * z_.k;
      if (has_ep()) coll(CollectiveKind::AllToAll, kEp, tok * z_.h * z_.E, P + "ep combine all-to-all");
      const double fc2_bytes = z_.E * (tok * z_.fe + (z_.X / z_.ep) * z_.fe * z_.h + tok * z_.h);
      gemm(P + "expert fc2 dgrad", dgrad_of(expert_fc2_shape()), fc2_bytes);
      gemm(P + "expert fc2 wgrad", wgrad_of(expert_fc2_shape()), fc2_bytes);
      mem(P + "expert act", tok * z_.fe * z_.E * (z_.m1 + 2));
      const double fc1_bytes = z_.E * (tok * z_.h + (z_.X / z_.ep) * z_.h * z_.fe * z_.m1 + tok * z_.fe * z_.m1);
      gemm(P + "expert fc1 dgrad", dgrad_of(expert_fc1_shape()), fc1_bytes);
      gemm(P + "expert fc1 wgrad", wgrad_of(expert_fc1_shape()), fc1_bytes);
      if (has_ep()) coll(CollectiveKind::AllToAll, kEp, tok * z_.h * z_.E, P + "ep dispatch all-to-all");
      const double router_bytes = z_.E * (z_.Tsp * z_.h + z_.h * z_.X + z_.Tsp * z_.X);
      gemm(P + "router dgrad", dgrad_of(router_shape()), router_bytes);
      gemm(P + "router wgrad", wgrad_of(router_shape()), router_bytes);
    } else {
      row_backward(P, "fc2", fc2_shape(), z_.E * (Ttp * z_.f + z_.f * z_.h / z_.tp + z_.T * z_.h));
      mem(P + "act", Ttp * z_.f * z_.E * (z_.m1 + 2));
      mem(P + "fc1 bias grad", Ttp * z_.f * z_.m1 * z_.E);
      column_backward(P, "fc1", fc1_shape(),
                      z_.E * (z_.T * z_.h + z_.h * z_.f * z_.m1 / z_.tp + z_.T * z_.f * z_.m1 / z_.tp));
    }
    compute_waiting(P + "ln2", 0, 3 * z_.Tsp * z_.h * z_.E);
    // The layernorm's input also feeds the residual connection: autograd adds the two gradients (reads both, writes
    // the sum).
    mem(P + "residual grad add", 3 * z_.Tsp * z_.h * z_.E);
    mem(P + "dropout-add", z_.Tsp * z_.h * (2 * z_.E + 1));
    mem(P + "proj bias grad", z_.Tsp * z_.h * z_.E);
    row_backward(P, "proj", proj_shape(), z_.E * (Ttp * z_.h + z_.h * z_.h / z_.tp + z_.T * z_.h));
    if (cfg_.training.recompute == Recompute::Selective) emit_attention_core(fmt::format("L{} recompute ", l), false);
    emit_attention_core_backward(P);
    column_backward(P, "qkv", qkv_shape(),
                    z_.E * (z_.T * z_.h + z_.h * (z_.h + 2 * z_.kvd) / z_.tp + z_.T * (z_.h + 2 * z_.kvd) / z_.tp));
    mem(P + "qkv bias grad", z_.T * (z_.h + 2 * z_.kvd) / z_.tp * z_.E);
    compute_waiting(P + "ln1", 0, 3 * z_.Tsp * z_.h * z_.E);
    const OpId ln = mem(P + "residual grad add", 3 * z_.Tsp * z_.h * z_.E);
    fsdp_reduce(l, layer_params(), ln);
    if (reduce_grads) unit_gradients_ready(chunk, l, ln);
  }

  void emit_attention_core_backward(const std::string& P)
  {
    const double heads_tp = z_.a / z_.tp;
    const double kv_bytes = z_.b * z_.s * z_.kvd / z_.tp * z_.E;
    const double core = 2 * z_.b * z_.S * z_.s * z_.h / z_.tp;
    const double q_bytes = z_.T * z_.h / z_.tp * z_.E;
    if (z_.flash) {
      compute(P + "attention", 4 * core, 2 * (2 * q_bytes + 2 * kv_bytes));
    } else {
      // The gradient of the permuted context comes back non-contiguous; autograd's view backward copies it.
      mem(P + "context transpose", 2 * q_bytes);
      // Each batched product's backward is two: for the context P V, dP = dO V^T ([S x s] over h/a) and
      // dV = P^T dO ([s x h/a] over S); for the scores Q K^T, dQ = dS K ([S x h/a] over s) and dK = dS^T Q
      // ([s x h/a] over S).
      const double scores = z_.b * heads_tp * z_.S * z_.s;
      const double d = z_.h / z_.a, hb = heads_batch();
      gemm(P + "attention over values grad probs", shape(z_.S, z_.s, d, hb), scores * z_.E + kv_bytes + q_bytes);
      gemm(P + "attention over values grad values", shape(z_.s, d, z_.S, hb), scores * z_.E + kv_bytes + q_bytes);
      mem(P + "attention dropout", scores * (2 * z_.E + 1));
      mem(P + "softmax", 3 * scores * z_.E);
      gemm(P + "attention scores grad queries", shape(z_.S, d, z_.s, hb), q_bytes + kv_bytes + scores * z_.E);
      gemm(P + "attention scores grad keys", shape(z_.s, d, z_.S, hb), q_bytes + kv_bytes + scores * z_.E);
    }
    if (has_cp()) coll(CollectiveKind::ReduceScatter, kCp, 2 * kv_bytes, P + "cp dkv reduce-scatter");
  }

  void emit_head_backward(bool reduce_grads)
  {
    const double Vtp = z_.V / z_.tp;
    compute_waiting("cross entropy bwd", 0, z_.T * Vtp * 4 * 2);
    const double bytes = z_.E * (z_.T * z_.h + z_.h * Vtp + z_.T * Vtp);
    gemm("logits dgrad", dgrad_of(logits_shape()), bytes);
    gemm("logits wgrad", wgrad_of(logits_shape()), bytes);
    if (has_tp())
      coll(z_.sp ? CollectiveKind::ReduceScatter : CollectiveKind::AllReduce, kTp, z_.T * z_.h * z_.E,
           z_.sp ? "lm head tp reduce-scatter" : "lm head tp all-reduce");
    const OpId ln = mem("final ln bwd", 3 * z_.Tsp * z_.h * z_.E);
    fsdp_reduce(-1, head_params(), ln);
    if (reduce_grads) unit_gradients_ready(L_.vpp - 1, -1, ln);
  }

  void emit_backward(int mb, int chunk, bool last_microbatch)
  {
    // ZeRO-0/1 reduce gradients once, in the last micro-batch; ZeRO-2 in every micro-batch.
    const bool reduce = zero_ == 2 || (zero_ <= 1 && last_microbatch);
    if (!has_head(chunk)) {
      const int next = stage_ < L_.pp - 1 ? stage_ + 1 : 0;
      receive(add(Op::make_recv(kPp, next, Bytes(activation_bytes()), tag(false, chunk + (next == 0)), kPpRecv),
                  fmt::format("recv gradients chunk {}", chunk), {last_compute_}),
              "gradients");
    }
    if (has_head(chunk)) {
      fsdp_gather(-1, head_params(), "bwd");
      emit_head_backward(reduce);
    }
    for (int l = first_layer(chunk) + chunk_layers() - 1; l >= first_layer(chunk); --l) {
      fsdp_gather(l, layer_params(), "bwd");
      emit_layer_backward(chunk, l, reduce);
    }
    if (has_embedding(chunk)) {
      fsdp_gather(-2, embedding_params(), "bwd");
      if (z_.sp) coll(CollectiveKind::AllGather, kTp, z_.T * z_.h * z_.E, "embedding grad tp all-gather");
      const OpId w = compute_waiting("embedding wgrad", 0, z_.T * z_.h * z_.E * 2 + z_.T * z_.h * z_.E);
      fsdp_reduce(-2, embedding_params(), w);
      if (reduce) unit_gradients_ready(0, -2, w);
    } else {
      const int prev = stage_ > 0 ? stage_ - 1 : L_.pp - 1;
      sent(add(Op::make_send(kPp, prev, Bytes(activation_bytes()), tag(false, chunk), kPpSend),
               fmt::format("send gradients chunk {}", chunk), {last_compute_}));
    }
    (void)mb;
  }

  // Once every gradient is reduced, Megatron's finalize_model_grads all-reduces the gradients of the parameters that
  // TP ranks replicate under sequence parallelism (layernorms) and the tied embedding's between the first and last
  // stage; then its mixed-precision optimizer step (megatron/core/optimizer/optimizer.py) runs memory-bound passes
  // over the rank's shard: the gradient norm for clipping (clip_grads.py, multi_tensor_l2norm: reads the fp32
  // gradient), Adam with fp32 master weights and moments (reads parameter, gradient and two moments, writes
  // parameter and moments), the copy of the master weights into the bf16 model (reads 4 B, writes E). ZeRO-1/2 then
  // gather the parameters. Not modelled: fp16 loss-scale unscaling and the clipping multiply (both conditional).
  void emit_step_end()
  {
    const double dense_shard = zero_ >= 1 ? dp_group() : 1;
    const double expert_shard = zero_ >= 1 ? edp_group() : 1;
    const double params = stage_params_dense_ / dense_shard + stage_params_expert_ / expert_shard;
    std::vector<OpId> before = grad_syncs_;
    before.insert(before.end(), pending_.begin(), pending_.end());
    pending_.clear();
    auto after_grads = [&](OpId id) {
      for (OpId g : before)
        b_.add_dep(id, g);
      before.clear();
      return id;
    };
    if (z_.sp && stage_layernorm_params() > 0)
      after_grads(
          coll(CollectiveKind::AllReduce, kTp, stage_layernorm_params() * z_.Eg, "layernorm grads tp all-reduce"));
    if (cfg_.model.tied_embeddings && L_.pp > 1 && (stage_ == 0 || stage_ == L_.pp - 1))
      after_grads(coll(CollectiveKind::AllReduce, kEmb, z_.V * z_.h / z_.tp * z_.Eg, "embedding grads all-reduce"));
    // The optimizer's host work comes here, and the host waits for the gradient norm (clip_grads' total_norm.item(),
    // and the fp16 found-inf check) before it steps.
    const OpId norm = after_grads(mem("grad norm", params * z_.Eg));
    b_.add_host_marks(norm, kHostStep | kHostSync);
    mem("optimizer step", params * ((4 + z_.Eg + 4 + 4) + (4 + 4 + 4)));
    const OpId copy = mem("copy main params to model params", params * (4 + z_.E));
    if ((zero_ == 1 || zero_ == 2) && !cfg_.parallel.overlap_param_gather) emit_param_gathers(copy);
  }

  // Layernorm weights and biases of this stage (2 per layer, the final one on the last stage): under sequence
  // parallelism each TP rank computes their gradients on its part of the sequence.
  double stage_layernorm_params() const
  {
    double n = 4 * z_.h * chunk_layers() * L_.vpp;
    if (stage_ == L_.pp - 1) n += 2 * z_.h;
    return n;
  }

  // A received activation or gradient: the next compute waits for it, after its TP all-gather when the sender split it.
  void receive(OpId recv, const char* what)
  {
    b_.add_host_marks(recv, kHostSyncP2p);
    if (!gather_p2p()) {
      pending_.push_back(recv);
      return;
    }
    coll(CollectiveKind::AllGather, kTp, z_.T * z_.h * z_.E, fmt::format("received {} tp all-gather", what), kCompute,
         {recv});
  }
  // A blocking send holds the compute stream until it completes.
  void sent(OpId send)
  {
    b_.add_host_marks(send, kHostSyncP2p);
    if (cfg_.parallel.blocking_p2p) pending_.push_back(send);
  }

  double activation_bytes() const { return (z_.sp || gather_p2p() ? z_.T / z_.tp : z_.T) * z_.h * z_.E; }
  // Tags keep each (direction, model chunk) stream of p2p messages in order: FIFO matching per (src, dst, tag).
  int tag(bool forward, int sender_chunk) const { return (forward ? 0 : 1) + 2 * sender_chunk; }

  const MegatronConfig& cfg_;
  const MegatronLayout& L_;
  const Sizes& z_;
  const int stage_;
  const int zero_;
  RankGraphBuilder b_;
  OpId last_compute_ = kNone;
  std::vector<OpId> pending_;
  std::vector<OpId> grad_syncs_;
  std::vector<ChunkBuckets> buckets_;
  struct Gathers {
    std::vector<OpId> dense, expert;
  };
  std::vector<Gathers> cb_gather_;
  std::map<int, bool> first_forward_done_;
  OpId fsdp_window_[2] = {kNone, kNone};
  double stage_params_dense_ = 0, stage_params_expert_ = 0;
};

Sizes make_sizes(const MegatronConfig& cfg, const MegatronLayout& L)
{
  Sizes z;
  z.E = cfg.training.bytes_per_element;
  z.Eg = cfg.training.grad_bytes_per_element;
  z.b = cfg.training.micro_batch;
  z.s = cfg.model.seq_length;
  z.S = z.s / L.cp;
  z.T = z.b * z.S;
  z.sp = L.sequence_parallel;
  z.tp = L.tp;
  z.cp = L.cp;
  z.ep = L.ep;
  z.Tsp = z.sp ? z.T / L.tp : z.T;
  z.h = cfg.model.hidden;
  z.a = cfg.model.heads;
  z.kvd = 1.0 * L.kv_heads * (z.h / z.a);
  z.f = L.ffn_hidden;
  z.fe = L.moe_ffn_hidden;
  z.moe = cfg.model.experts > 1;
  z.X = z.moe ? cfg.model.experts : 0;
  z.k = z.moe ? cfg.model.top_k : 0;
  z.V = L.padded_vocab;
  z.m1 = cfg.model.gated_mlp ? 2 : 1;
  z.flash = cfg.model.flash_attention;
  return z;
}

} // namespace

Workload generate_megatron(const MegatronConfig& cfg, int world)
{
  const MegatronLayout L = resolve_layout(cfg, world);
  const Sizes z = make_sizes(cfg, L);

  Workload w;
  w.source = fmt::format("megatron generator: {} layers, hidden {}, {} heads ({} kv), seq {}, tp {} pp {} dp {} cp {} "
                         "ep {}{}, {} micro-batches of {}, recompute {}, ZeRO-{}",
                         cfg.model.layers, cfg.model.hidden, cfg.model.heads, L.kv_heads, cfg.model.seq_length, L.tp,
                         L.pp, L.dp, L.cp, L.ep, L.vpp > 1 ? fmt::format(" vpp {}", L.vpp) : "", L.microbatches,
                         cfg.training.micro_batch, to_string(cfg.training.recompute), cfg.parallel.zero_stage);
  if (cfg.parallel.first_stage_layers != 0 || cfg.parallel.last_stage_layers != 0)
    w.notes.push_back(fmt::format("layers per pipeline stage: {} (first_stage_layers / last_stage_layers)",
                                  fmt::join(L.stage_layers, ", ")));
  if (L.padded_vocab != cfg.model.vocab)
    w.notes.push_back(fmt::format("vocabulary padded from {} to {} (a multiple of 128 x tp, as Megatron)",
                                  cfg.model.vocab, L.padded_vocab));

  // Communicators, slot by slot, and each rank's map.
  std::vector<std::vector<std::int32_t>> maps(world, std::vector<std::int32_t>(kSlots, -1));
  auto group = [&](const std::string& name, GroupKind kind, int slot, const std::vector<int>& members) {
    const int id = w.add_communicator(name, kind, members);
    for (int r : members)
      maps[r][slot] = id;
  };
  int n = 0;
  if (L.tp > 1)
    for (int pp = 0; pp < L.pp; ++pp)
      for (int dp = 0; dp < L.dp; ++dp)
        for (int cp = 0; cp < L.cp; ++cp) {
          std::vector<int> m;
          for (int t = 0; t < L.tp; ++t)
            m.push_back(L.rank(t, cp, dp, pp));
          group(fmt::format("tp{}", n++), GroupKind::TP, kTp, m);
        }
  n = 0;
  if (L.cp > 1)
    for (int pp = 0; pp < L.pp; ++pp)
      for (int dp = 0; dp < L.dp; ++dp)
        for (int t = 0; t < L.tp; ++t) {
          std::vector<int> m;
          for (int cp = 0; cp < L.cp; ++cp)
            m.push_back(L.rank(t, cp, dp, pp));
          group(fmt::format("cp{}", n++), GroupKind::CP, kCp, m);
        }
  n = 0;
  if (L.dp * L.cp > 1)
    for (int pp = 0; pp < L.pp; ++pp)
      for (int t = 0; t < L.tp; ++t) {
        std::vector<int> m;
        for (int dp = 0; dp < L.dp; ++dp)
          for (int cp = 0; cp < L.cp; ++cp)
            m.push_back(L.rank(t, cp, dp, pp));
        group(fmt::format("dp{}", n++), GroupKind::DP, kDp, m);
      }
  if (z.moe) {
    n = 0;
    if (L.ep > 1)
      for (int pp = 0; pp < L.pp; ++pp)
        for (int blk = 0; blk < L.dp / L.ep; ++blk)
          for (int cp = 0; cp < L.cp; ++cp)
            for (int t = 0; t < L.tp; ++t) {
              std::vector<int> m;
              for (int e = 0; e < L.ep; ++e)
                m.push_back(L.rank(t, cp, blk * L.ep + e, pp));
              group(fmt::format("ep{}", n++), GroupKind::EP, kEp, m);
            }
    n = 0;
    if (L.tp * L.cp * L.dp / L.ep > 1)
      for (int pp = 0; pp < L.pp; ++pp)
        for (int e = 0; e < L.ep; ++e) {
          std::vector<int> m;
          for (int dp = e; dp < L.dp; dp += L.ep)
            for (int cp = 0; cp < L.cp; ++cp)
              for (int t = 0; t < L.tp; ++t)
                m.push_back(L.rank(t, cp, dp, pp));
          group(fmt::format("expert-dp{}", n++), GroupKind::DP, kEdp, m);
        }
  }
  n = 0;
  if (L.pp > 1)
    for (int dp = 0; dp < L.dp; ++dp)
      for (int cp = 0; cp < L.cp; ++cp)
        for (int t = 0; t < L.tp; ++t) {
          std::vector<int> m;
          for (int pp = 0; pp < L.pp; ++pp)
            m.push_back(L.rank(t, cp, dp, pp));
          group(fmt::format("pp{}", n++), GroupKind::PP, kPp, m);
        }
  // Tied embeddings: the copies on the first and last stage (Megatron's embedding group).
  n = 0;
  if (cfg.model.tied_embeddings && L.pp > 1)
    for (int dp = 0; dp < L.dp; ++dp)
      for (int cp = 0; cp < L.cp; ++cp)
        for (int t = 0; t < L.tp; ++t)
          group(fmt::format("emb{}", n++), GroupKind::PP, kEmb, {L.rank(t, cp, dp, 0), L.rank(t, cp, dp, L.pp - 1)});

  // One program per pipeline stage.
  for (int s = 0; s < L.pp; ++s)
    w.graphs.push_back(std::make_shared<const RankGraph>(StageEmitter(cfg, L, z, s).build()));
  w.ranks.resize(world);
  for (int pp = 0; pp < L.pp; ++pp)
    for (int dp = 0; dp < L.dp; ++dp)
      for (int cp = 0; cp < L.cp; ++cp)
        for (int t = 0; t < L.tp; ++t) {
          const int r = L.rank(t, cp, dp, pp);
          w.ranks[r].graph = static_cast<std::uint32_t>(pp);
          w.ranks[r].comm_map = std::move(maps[r]);
        }
  return w;
}

std::vector<StageParameters> megatron_stage_parameters(const MegatronConfig& cfg, int world)
{
  const MegatronLayout L = resolve_layout(cfg, world);
  const Sizes z = make_sizes(cfg, L);
  std::vector<StageParameters> out;
  for (int s = 0; s < L.pp; ++s)
    out.push_back(StageEmitter(cfg, L, z, s).parameters());
  return out;
}

} // namespace railyard::workloads
