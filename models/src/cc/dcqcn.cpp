#include "railyard/models/cc/dcqcn.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

namespace railyard::models::cc {

namespace {

constexpr double kMbps = 1e6 / 8; // bytes per second in one Mb/s

DcqcnParams sigcomm2015()
{
  DcqcnParams p;
  p.preset = "sigcomm2015";
  p.k_min = units::KB(5);
  p.k_max = units::KB(200);
  p.p_max = 0.01;
  p.cnp_interval = units::us(50);
  p.g = 1.0 / 256;
  p.alpha_period = units::us(55);
  p.initial_alpha = 1.0;
  p.increase_timer = units::us(55);
  p.byte_counter = units::MB(10);
  p.fast_recovery_steps = 5;
  p.rate_ai = BytesPerSec(40 * kMbps);
  p.rate_hai = BytesPerSec(200 * kMbps);
  p.min_rate = BytesPerSec(1 * kMbps);
  p.min_decrease_factor = 0.5;
  p.rate_reduce_interval = Seconds(0);
  p.clamp_target_rate = true;
  p.clamp_after_timer = false;
  const std::string paper = "Zhu et al., SIGCOMM 2015, Sections 3-5 (as listed in shared/validation/published.md)";
  p.sources = {
      {"k_min, k_max, p_max", paper},
      {"cnp_interval", paper + ": at most one CNP per flow every 50 us"},
      {"g, alpha_period", paper + ": g = 1/256, alpha updated every K = 55 us"},
      {"increase_timer, byte_counter, fast_recovery_steps, rate_ai", paper},
      {"rate_hai", "not in published.md; the DCQCN authors' ns-3 simulator configuration (bobzhuyb/ns3-rdma, "
                   "RATE_HAI 200Mb/s)"},
      {"clamp_target_rate", "paper Algorithm 1 sets R_T = R_C on every decrease (ns3-rdma CLAMP_TARGET_RATE 1)"},
      {"min_rate", "not given by the paper: ConnectX's RPG_MIN_RATE, 1 Mb/s (assumption)"},
      {"min_decrease_factor", "the paper's cut (1 - alpha/2) with alpha <= 1 keeps at least half"},
      {"rate_reduce_interval", "0: the paper cuts on every CNP; the NP already spaces CNPs by 50 us"},
  };
  return p;
}

DcqcnParams connectx()
{
  DcqcnParams p;
  p.preset = "connectx";
  // Switch side: the NIC firmware does not mark; these are NVIDIA's RoCE lossless switch defaults.
  p.k_min = units::KB(150);
  p.k_max = units::KB(1500);
  p.p_max = 1.0;
  p.cnp_interval = units::us(4);
  p.g = (1024.0 - 1019.0) / 1024.0;
  p.alpha_period = units::us(1);
  p.initial_alpha = 1023.0 / 1024.0;
  p.increase_timer = units::us(300);
  p.byte_counter = Bytes(32767);
  p.fast_recovery_steps = 1;
  p.rate_ai = BytesPerSec(5 * kMbps);
  p.rate_hai = BytesPerSec(50 * kMbps);
  p.min_rate = BytesPerSec(1 * kMbps);
  p.min_decrease_factor = 0.5;
  p.rate_reduce_interval = units::us(4);
  p.clamp_target_rate = false;
  p.clamp_after_timer = true;
  const std::string fw = "ConnectX firmware defaults as printed by `mlxconfig query` (RPG_TIME_RESET 300, "
                         "RPG_BYTE_RESET 32767, RPG_THRESHOLD 1, RPG_AI_RATE 5, RPG_HAI_RATE 50, RPG_GD 11, "
                         "RPG_MIN_DEC_FAC 50, RPG_MIN_RATE 1, DCE_TCP_G 1019, DCE_TCP_RTT 1, "
                         "RATE_REDUCE_MONITOR_PERIOD 4, INITIAL_ALPHA_VALUE 1023, MIN_TIME_BETWEEN_CNPS 4, "
                         "CLAMP_TGT_RATE 0, CLAMP_TGT_RATE_AFTER_TIME_INC 1); the same defaults are tabulated in "
                         "Peng et al., Barre, USENIX ATC 2025, Table 2";
  p.sources = {
      {"k_min, k_max", "NVIDIA Onyx `show roce` lossless defaults: ECN absolute min 150 KB, max 1500 KB"},
      {"p_max", "marking probability 100 % at max (NVIDIA Cumulus Linux RoCE congestion-control default)"},
      {"cnp_interval", fw + ": MIN_TIME_BETWEEN_CNPS = 4 us"},
      {"g, alpha_period, initial_alpha", fw + ": alpha <- (1019 alpha + 5 F) / 1024 every DCE_TCP_RTT = 1 us"},
      {"increase_timer, byte_counter, fast_recovery_steps, rate_ai, rate_hai", fw},
      {"min_rate, min_decrease_factor, rate_reduce_interval", fw},
      {"clamp_target_rate, clamp_after_timer", fw},
      {"decrease", "RPG_GD 11: rate x (1 - alpha_fw / 2^11) with alpha_fw in 1/1024 units = (1 - alpha / 2)"},
  };
  return p;
}

using Locate = std::function<InputLocation(std::string_view field)>;

void check(const DcqcnParams& p, const Locate& at)
{
  auto fail = [&](std::string_view field, const std::string& rule, const std::string& fix) {
    throw InputError(at(field), rule, fix);
  };
  if (p.k_min.bytes() < 0)
    fail("k_min", fmt::format("k_min = {} B is negative", p.k_min.bytes()), "give a queue depth of 0 or more");
  if (p.k_min > p.k_max)
    fail("k_max",
         fmt::format("ECN thresholds out of order: k_min = {} B is above k_max = {} B", p.k_min.bytes(),
                     p.k_max.bytes()),
         "RED marks from k_min up to k_max, so k_min must not exceed k_max (the paper uses 5 KB and 200 KB)");
  if (!(p.p_max >= 0 && p.p_max <= 1))
    fail("p_max", fmt::format("p_max = {} is outside [0, 1]", p.p_max),
         "p_max is the marking probability at k_max: give a value between 0 and 1, e.g. 0.01");
  if (!(p.g > 0 && p.g <= 1))
    fail("g", fmt::format("g = {} is outside (0, 1]", p.g), "give the alpha gain as a fraction, e.g. 0.00390625");
  if (!(p.initial_alpha >= 0 && p.initial_alpha <= 1))
    fail("initial_alpha", fmt::format("initial_alpha = {} is outside [0, 1]", p.initial_alpha), "give 0 to 1");
  if (!(p.min_decrease_factor >= 0 && p.min_decrease_factor <= 1))
    fail("min_decrease_factor", fmt::format("min_decrease_factor = {} is outside [0, 1]", p.min_decrease_factor),
         "give the smallest fraction of the rate one cut keeps, e.g. 0.5");
  auto positive_time = [&](std::string_view field, Seconds t) {
    if (!(t.seconds() > 0))
      fail(field, fmt::format("{} must be a positive time", field), "give a time with its unit, e.g. '55 us'");
  };
  positive_time("alpha_period", p.alpha_period);
  positive_time("increase_timer", p.increase_timer);
  if (p.cnp_interval.seconds() < 0)
    fail("cnp_interval", "cnp_interval is negative", "give 0 or a time such as '50 us'");
  if (p.rate_reduce_interval.seconds() < 0)
    fail("rate_reduce_interval", "rate_reduce_interval is negative", "give 0 or a time such as '4 us'");
  if (!(p.byte_counter.bytes() > 0))
    fail("byte_counter", "byte_counter must be positive", "give a size such as '10 MB'");
  if (p.fast_recovery_steps < 0)
    fail("fast_recovery_steps", "fast_recovery_steps is negative", "give a count such as 5");
  for (auto [field, rate] : {std::pair<std::string_view, BytesPerSec>{"rate_ai", p.rate_ai},
                             {"rate_hai", p.rate_hai},
                             {"min_rate", p.min_rate}})
    if (!(rate.bytes_per_sec() > 0))
      fail(field, fmt::format("{} must be a positive rate", field), "give a rate with its unit, e.g. '40 Mb/s'");
}

} // namespace

std::vector<std::string> dcqcn_preset_names()
{
  return {"sigcomm2015", "connectx"};
}

DcqcnParams dcqcn_preset(std::string_view name)
{
  if (name == "sigcomm2015") return sigcomm2015();
  if (name == "connectx") return connectx();
  throw std::invalid_argument(fmt::format("unknown DCQCN preset '{}': known presets are sigcomm2015, connectx", name));
}

void validate(const DcqcnParams& p, const InputLocation& where)
{
  check(p, [&](std::string_view field) {
    InputLocation at = where;
    at.field = where.field.empty() ? std::string(field) : where.field + "." + std::string(field);
    return at;
  });
}

DcqcnParams parse_dcqcn(const YamlNode& node)
{
  node.expect_keys({"preset", "k_min", "k_max", "p_max", "cnp_interval", "g", "alpha_period", "initial_alpha",
                    "increase_timer", "byte_counter", "fast_recovery_steps", "rate_ai", "rate_hai", "min_rate",
                    "min_decrease_factor", "rate_reduce_interval", "clamp_target_rate", "clamp_after_timer"});
  DcqcnParams p;
  if (auto pre = node.get("preset")) {
    const std::string name = pre->as_string();
    if (name != "sigcomm2015" && name != "connectx")
      pre->fail(fmt::format("unknown DCQCN preset '{}'", name),
                "use 'sigcomm2015' (the paper's parameters) or 'connectx' (NVIDIA ConnectX firmware defaults)");
    p = dcqcn_preset(name);
  } else {
    p = dcqcn_preset("sigcomm2015");
  }
  auto override_source = [&](const std::string& field) { p.sources.emplace_back(field, "scenario override"); };
  auto bytes = [&](const char* key, Bytes& out) {
    if (auto n = node.get(key)) {
      out = n->as_bytes();
      override_source(key);
    }
  };
  auto time = [&](const char* key, Seconds& out) {
    if (auto n = node.get(key)) {
      out = n->as_seconds();
      override_source(key);
    }
  };
  auto rate = [&](const char* key, BytesPerSec& out) {
    if (auto n = node.get(key)) {
      out = n->as_bandwidth();
      override_source(key);
    }
  };
  auto number = [&](const char* key, double& out) {
    if (auto n = node.get(key)) {
      out = n->as_double();
      override_source(key);
    }
  };
  auto flag = [&](const char* key, bool& out) {
    if (auto n = node.get(key)) {
      out = n->as_bool();
      override_source(key);
    }
  };
  bytes("k_min", p.k_min);
  bytes("k_max", p.k_max);
  number("p_max", p.p_max);
  time("cnp_interval", p.cnp_interval);
  number("g", p.g);
  time("alpha_period", p.alpha_period);
  number("initial_alpha", p.initial_alpha);
  time("increase_timer", p.increase_timer);
  bytes("byte_counter", p.byte_counter);
  if (auto n = node.get("fast_recovery_steps")) {
    p.fast_recovery_steps = static_cast<int>(n->as_int(0, std::numeric_limits<int>::max()));
    override_source("fast_recovery_steps");
  }
  rate("rate_ai", p.rate_ai);
  rate("rate_hai", p.rate_hai);
  rate("min_rate", p.min_rate);
  number("min_decrease_factor", p.min_decrease_factor);
  time("rate_reduce_interval", p.rate_reduce_interval);
  flag("clamp_target_rate", p.clamp_target_rate);
  flag("clamp_after_timer", p.clamp_after_timer);
  check(p, [&](std::string_view field) {
    // Point at the override that broke the rule when there is one, else at the section.
    if (auto n = node.get(field)) return n->where();
    InputLocation at = node.where();
    at.field = node.path() + "." + std::string(field);
    return at;
  });
  return p;
}

double marking_probability(const DcqcnParams& p, Bytes queue)
{
  const double q = queue.bytes();
  if (q <= p.k_min.bytes()) return 0.0;
  if (q > p.k_max.bytes()) return 1.0;
  const double span = p.k_max.bytes() - p.k_min.bytes();
  return span > 0 ? p.p_max * (q - p.k_min.bytes()) / span : 1.0;
}

ReactionPoint::ReactionPoint(const DcqcnParams& p, BytesPerSec line_rate, Seconds now)
    : line_(line_rate.bytes_per_sec()), rc_(line_rate.bytes_per_sec()), rt_(line_rate.bytes_per_sec()),
      alpha_(p.initial_alpha), alpha_epoch_(now.seconds()), timer_next_(now.seconds() + p.increase_timer.seconds())
{
}

void ReactionPoint::catch_up_alpha(const DcqcnParams& p, double now)
{
  // alpha <- (1 - g) alpha + g F at the end of every period, F = 1 if a CNP arrived in it: the first period ending
  // now may have seen one, the later ones did not, so they decay in closed form.
  const double k = p.alpha_period.seconds();
  if (now < alpha_epoch_ + k) return;
  const double periods = std::floor((now - alpha_epoch_) / k);
  alpha_ = (1 - p.g) * alpha_ + (cnp_in_period_ ? p.g : 0.0);
  if (periods > 1) alpha_ *= std::pow(1 - p.g, periods - 1);
  alpha_epoch_ += periods * k;
  cnp_in_period_ = false;
}

void ReactionPoint::decrease(const DcqcnParams& p, double now)
{
  if (p.clamp_target_rate || (p.clamp_after_timer && timer_events_ > 0)) rt_ = rc_;
  double cut = rc_ * (1 - alpha_ / 2);
  cut = std::max(cut, rc_ * p.min_decrease_factor);
  rc_ = std::min(rc_, std::max(cut, p.min_rate.bytes_per_sec()));
  timer_events_ = 0;
  byte_events_ = 0;
  bytes_acc_ = 0;
  timer_next_ = now + p.increase_timer.seconds();
  last_decrease_ = now;
  decrease_held_ = false;
  ++decreases_;
}

void ReactionPoint::increase(const DcqcnParams& p)
{
  // Paper Fig. 7: the first F events after a cut recover towards the target (fast recovery); then the target grows
  // by R_AI per event (additive) and, once both counters passed F, by i R_HAI (hyper increase).
  const int f = p.fast_recovery_steps;
  const int hi = std::max(timer_events_, byte_events_);
  const int lo = std::min(timer_events_, byte_events_);
  if (hi <= f) {
    // fast recovery: the target stays
  } else if (lo > f) {
    rt_ += (lo - f) * p.rate_hai.bytes_per_sec();
  } else {
    rt_ += p.rate_ai.bytes_per_sec();
  }
  rt_ = std::min(rt_, line_);
  rc_ = std::min((rt_ + rc_) / 2, line_);
}

bool ReactionPoint::on_cnp(const DcqcnParams& p, Seconds now)
{
  const double t = now.seconds();
  catch_up_alpha(p, t);
  cnp_in_period_ = true;
  if (t >= last_decrease_ + p.rate_reduce_interval.seconds()) {
    decrease(p, t);
    return true;
  }
  decrease_held_ = true;
  return false;
}

bool ReactionPoint::advance(const DcqcnParams& p, Seconds now, Bytes sent)
{
  const double t = now.seconds();
  bool changed = false;
  catch_up_alpha(p, t);
  if (decrease_held_ && t >= last_decrease_ + p.rate_reduce_interval.seconds()) {
    decrease(p, t);
    changed = true;
  }
  bytes_acc_ += sent.bytes();
  const double b = p.byte_counter.bytes();
  while (bytes_acc_ >= b) {
    bytes_acc_ -= b;
    ++byte_events_;
    increase(p);
    changed = true;
  }
  while (timer_next_ <= t) {
    timer_next_ += p.increase_timer.seconds();
    ++timer_events_;
    increase(p);
    changed = true;
  }
  return changed;
}

Seconds ReactionPoint::next_timer() const
{
  return Seconds(timer_next_);
}

bool ReactionPoint::advance_uniform(const DcqcnParams& p, Seconds from, Seconds now, Bytes sent)
{
  const double t0 = from.seconds(), t1 = now.seconds();
  double left = sent.bytes();
  if (!(t1 > t0) || !(left > 0)) return advance(p, now, sent);
  const double rate = left / (t1 - t0);
  const double b = p.byte_counter.bytes();
  double t = t0;
  bool changed = false;
  while (true) {
    // The next event strictly inside (t, t1): a timer, a held decrease's end, or the byte counter reaching B (at the
    // date the even sending brings it there; it gets exactly the bytes it lacks, so it fires).
    const double timed = next_change(p).seconds();
    double need = std::max(0.0, b - bytes_acc_);
    while (bytes_acc_ + need < b)
      need = std::nextafter(need, std::numeric_limits<double>::infinity());
    const double at_bytes = t + need / rate;
    const bool bytes_first = at_bytes < timed && need <= left;
    const double next = bytes_first ? at_bytes : timed;
    if (!(next < t1) || !(next >= t)) break;
    const double chunk = bytes_first ? need : std::min(left, rate * (next - t));
    changed = advance(p, Seconds(next), Bytes(chunk)) || changed;
    left = std::max(0.0, left - chunk);
    t = next;
  }
  return advance(p, now, Bytes(left)) || changed;
}

Seconds ReactionPoint::next_change(const DcqcnParams& p) const
{
  double t = timer_next_;
  if (decrease_held_) t = std::min(t, last_decrease_ + p.rate_reduce_interval.seconds());
  return Seconds(t);
}

Bytes ReactionPoint::bytes_to_byte_event(const DcqcnParams& p) const
{
  return Bytes(std::max(0.0, p.byte_counter.bytes() - bytes_acc_));
}

} // namespace railyard::models::cc
