#include "railyard/workloads/memory.hpp"

#include <algorithm>

namespace railyard::workloads {

namespace {

// Bytes per element of what is stored: FP8 training keeps its weights and activations in bf16 (Transformer Engine
// casts to FP8 per GEMM), so an element size below 2 counts as 2.
double stored_bytes(int bytes_per_element)
{
  return std::max(bytes_per_element, 2);
}

// The peak over a stage's schedule of the forward passes held, in total and per model chunk (at that chunk's own
// peak, an upper bound for the chunk's share at the total's peak).
struct InFlight {
  int total = 0;
  std::vector<int> per_chunk;
};

InFlight count_in_flight(int stages, int stage, int microbatches, int chunks)
{
  InFlight f;
  f.per_chunk.assign(static_cast<std::size_t>(chunks), 0);
  std::vector<int> held(static_cast<std::size_t>(chunks), 0);
  int total = 0;
  for (const PipelineSlot& s : pipeline_schedule(stages, stage, microbatches, chunks)) {
    const int d = s.forward ? 1 : -1;
    total += d;
    int& h = held[static_cast<std::size_t>(s.chunk)];
    h += d;
    f.total = std::max(f.total, total);
    f.per_chunk[static_cast<std::size_t>(s.chunk)] = std::max(f.per_chunk[static_cast<std::size_t>(s.chunk)], h);
  }
  return f;
}

} // namespace

int microbatches_in_flight(int stages, int stage, int microbatches, int chunks)
{
  return count_in_flight(stages, stage, microbatches, chunks).total;
}

double layer_activation_bytes(const MegatronConfig& c, const MegatronLayout& L, Recompute recompute)
{
  // Korthikanti et al. 2022, section 4.1, in their notation: per layer and micro-batch, with 16-bit activations and
  // 1-byte dropout masks, s b h (34 + 5 a s / h) bytes, of which 10 s b h lie outside the tensor-parallel regions
  // (two layernorm inputs, the inputs of the QKV and FC1 GEMMs, two dropout masks) and 24 s b h + 5 a s^2 b inside
  // them (Q, K, V, the projection's input, the softmax output, its dropout mask and output, the GeLU's input and
  // output). Here with E bytes per element, T = b s / cp tokens, key/value width kvd, FFN width f (m1 + 1 of its
  // tensors kept: one input of the activation function per input matrix, and its output).
  const double E = stored_bytes(c.training.bytes_per_element);
  const double b = c.training.micro_batch, s = c.model.seq_length, h = c.model.hidden, a = c.model.heads;
  const double t = L.tp;
  const double S = s / L.cp, T = b * S;
  const double kvd = 1.0 * L.kv_heads * (h / a);
  const double T_kv = L.cp > 1 ? b * s : T; // context parallelism all-gathers the keys and values of the sequence
  const double sp_share = L.sequence_parallel ? t : 1;
  if (recompute == Recompute::Full) return E * T * h / sp_share; // the layer's input only (Korthikanti: 2 s b h)
  const double outside = (4 * E + 2) * T * h;
  double inside = E * T * h + 2 * E * T_kv * kvd + E * T * h; // Q, K and V, the output projection's input
  const bool moe = c.model.experts > 1;
  const double m1 = c.model.gated_mlp ? 2 : 1;
  if (!moe) inside += E * T * L.ffn_hidden * (m1 + 1);
  if (!c.model.flash_attention && recompute == Recompute::None)
    inside += (2 * E + 1) * a * b * S * s; // softmax output, its dropout mask and the dropout's output
  else if (c.model.flash_attention)
    inside += 4 * a * b * S; // FlashAttention keeps one fp32 log-sum-exp per query row and head
  double bytes = outside / sp_share + inside / t;
  if (moe) {
    // Experts are not split over TP: each rank runs its experts on the k T / sp_share tokens routed to them on
    // average (balanced routing), keeping their dispatched input, the activation function's inputs and its output.
    const double routed = c.model.top_k * T / sp_share;
    bytes += E * routed * (h + L.moe_ffn_hidden * (m1 + 1)) + E * (T / sp_share) * c.model.experts; // + router logits
  }
  return bytes;
}

std::vector<StageMemory> megatron_memory(const MegatronConfig& c, int world)
{
  const MegatronLayout L = resolve_layout(c, world);
  const std::vector<StageParameters> params = megatron_stage_parameters(c, world);
  const double Ew = stored_bytes(c.training.bytes_per_element);
  const double Eg = c.training.grad_bytes_per_element;
  // Megatron's distributed optimizer table: Adam's two fp32 moments, an fp32 master copy unless the weights are fp32,
  // an fp32 copy of the gradients unless they are reduced in fp32 (bf16/fp32: 12, fp16/fp16: 16, fp32/fp32: 8).
  const double optimizer_per_param = 8 + (Ew < 4 ? 4 : 0) + (Eg < 4 ? 4 : 0);
  const int zero = c.parallel.zero_stage;
  const Recompute rc = c.training.recompute;
  const double per_layer = layer_activation_bytes(c, L, rc);
  // The backward pass of a recomputed layer re-runs its forward and holds what that stores, for one layer.
  double working = 0;
  if (rc == Recompute::Full)
    working = layer_activation_bytes(c, L, Recompute::None);
  else if (rc == Recompute::Selective)
    working = layer_activation_bytes(c, L, Recompute::None) - per_layer;
  const double E = Ew, t = L.tp;
  const double T = 1.0 * c.training.micro_batch * c.model.seq_length / L.cp;
  const double sp_share = L.sequence_parallel ? t : 1;

  std::vector<StageMemory> out;
  for (int st = 0; st < L.pp; ++st) {
    const StageParameters& p = params[static_cast<std::size_t>(st)];
    StageMemory m;
    m.stage = st;
    m.parameters = p.dense + p.expert;
    const double sharded = p.dense / p.dense_group + p.expert / p.expert_group;
    m.weight_bytes = Ew * (zero >= 3 ? sharded + 2 * p.largest_unit : m.parameters); // ZeRO-3: two units gathered
    if (zero >= 3)
      m.gradient_bytes = Eg * (sharded + p.largest_unit); // one unit's gradient before its reduce-scatter
    else if (zero == 2)
      m.gradient_bytes = Eg * (sharded + std::min(c.parallel.bucket_params, m.parameters)); // + one bucket
    else
      m.gradient_bytes = Eg * m.parameters;
    m.optimizer_bytes = optimizer_per_param * (zero >= 1 ? sharded : m.parameters);
    const InFlight f = count_in_flight(L.pp, st, L.microbatches, L.vpp);
    m.microbatches_in_flight = f.total;
    double act = f.total * L.layers_of(st) * per_layer + working;
    if (st == 0) act += f.per_chunk.front() * T * c.model.hidden / sp_share; // the embedding's dropout mask
    if (st == L.pp - 1)
      // The final layernorm's input and the output layer's input (sequence-parallel shards), and the logits the
      // cross-entropy keeps in fp32 (Korthikanti et al. 2022, section 4.3).
      act += f.per_chunk.back() * (2 * E * T * c.model.hidden / sp_share + 4 * T * L.padded_vocab / t);
    m.activation_bytes = act;
    out.push_back(m);
  }
  return out;
}

} // namespace railyard::workloads
