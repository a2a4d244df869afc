// DCQCN (Zhu et al., "Congestion Control for Large-Scale RDMA Deployments", SIGCOMM 2015): RED-style ECN marking at
// switch egress queues (congestion point), CNP pacing at the receiver (notification point) and the sender's rate
// machine (reaction point). Parameters are data with their source; the reaction point is a pure state machine that
// the fluid network drives with times and byte counts.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/common/yaml.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace railyard::models::cc {

struct DcqcnParams {
  std::string preset; ///< the preset these values started from ("sigcomm2015", "connectx")

  // Congestion point: RED marking on the egress queue, p(q) = 0 below k_min, p_max (q - k_min) / (k_max - k_min)
  // between, 1 above k_max.
  Bytes k_min{0};
  Bytes k_max{0};
  double p_max = 0;

  // Notification point: at most one CNP per flow per cnp_interval, sent when a marked packet arrives.
  Seconds cnp_interval{0};

  // Reaction point.
  double g = 0;                    ///< alpha EWMA gain: alpha <- (1 - g) alpha + g F once per alpha_period
  Seconds alpha_period{0};         ///< alpha update period (paper K = 55 us; ConnectX dce_tcp_rtt)
  double initial_alpha = 1;        ///< alpha of a new flow
  Seconds increase_timer{0};       ///< rate-increase timer T
  Bytes byte_counter{0};           ///< rate-increase byte counter B
  int fast_recovery_steps = 0;     ///< F: increase events spent in fast recovery after a decrease
  BytesPerSec rate_ai{0};          ///< additive increase of the target rate
  BytesPerSec rate_hai{0};         ///< hyper increase step of the target rate
  BytesPerSec min_rate{0};         ///< the rate never falls below this
  double min_decrease_factor = 0;  ///< one decrease keeps at least this fraction of the current rate
  Seconds rate_reduce_interval{0}; ///< at most one decrease per interval; a CNP inside it is applied at its end
  bool clamp_target_rate = true;   ///< on a decrease, target <- current always (paper) ...
  bool clamp_after_timer = false;  ///< ... or only if a timer increase happened since the last decrease (ConnectX)

  std::vector<std::pair<std::string, std::string>> sources; ///< parameter name -> where its value comes from
};

/// The named parameter sets. Unknown name: std::invalid_argument listing the known ones.
DcqcnParams dcqcn_preset(std::string_view name);
std::vector<std::string> dcqcn_preset_names();

/// Parses a `dcqcn:` section: `preset:` (default sigcomm2015) and any field above as an override, each with its unit
/// (k_min: 5 KB, rate_ai: 40 Mb/s, increase_timer: 55 us). Validates the result: errors name the field.
DcqcnParams parse_dcqcn(const YamlNode& node);
/// Checks the rules every parameter set must follow (0 <= k_min <= k_max, 0 <= p_max <= 1, positive periods, ...).
/// `where` locates the section; the field named in the error is appended to its path.
void validate(const DcqcnParams& p, const InputLocation& where);

/// RED marking probability of a packet leaving a queue holding `queue` bytes.
double marking_probability(const DcqcnParams& p, Bytes queue);

/// The reaction point of one flow (DCQCN paper Algorithm 1 and Fig. 7; ConnectX firmware semantics for the clamp and
/// rate-reduce-interval options). Times are absolute simulated seconds, rates bytes per second.
class ReactionPoint {
public:
  ReactionPoint() = default;
  /// A new flow starts at line rate with alpha = initial_alpha.
  ReactionPoint(const DcqcnParams& p, BytesPerSec line_rate, Seconds now);

  /// A CNP arrives. Returns true if the current rate changed now; a CNP inside rate_reduce_interval of the last
  /// decrease is held and applied by advance() when the interval ends.
  bool on_cnp(const DcqcnParams& p, Seconds now);
  /// Brings the machine to `now` after `sent` more bytes: alpha periods, held decreases, byte-counter and timer
  /// increase events. Returns true if the current rate changed.
  bool advance(const DcqcnParams& p, Seconds now, Bytes sent);

  /// advance() for `sent` bytes sent evenly over [from, now]: the byte-counter events, timer events and a held
  /// decrease's end inside the interval happen in the order of their dates, each with the bytes sent up to it, as if
  /// advance() had been called at each of those dates. A sender whose rate does not matter until something else
  /// changes it may thus be brought up to date lazily, in one call, with the same result.
  bool advance_uniform(const DcqcnParams& p, Seconds from, Seconds now, Bytes sent);
  /// A CNP came inside the rate-reduce interval: a decrease waits for the interval's end.
  [[nodiscard]] bool decrease_held() const { return decrease_held_; }
  [[nodiscard]] BytesPerSec rate() const { return BytesPerSec(rc_); }
  [[nodiscard]] BytesPerSec target() const { return BytesPerSec(rt_); }
  [[nodiscard]] double alpha() const { return alpha_; }
  [[nodiscard]] int decreases() const { return decreases_; }
  /// When the rate-increase timer fires next.
  [[nodiscard]] Seconds next_timer() const;
  /// The earliest date at which the machine changes its rate without a CNP and without sending: the next timer event
  /// or the end of a held decrease's rate-reduce interval.
  [[nodiscard]] Seconds next_change(const DcqcnParams& p) const;
  /// Bytes still to send before the next byte-counter increase event.
  [[nodiscard]] Bytes bytes_to_byte_event(const DcqcnParams& p) const;
  /// At line rate with its target there too: no increase event changes it (only a CNP does).
  [[nodiscard]] bool at_line_rate() const { return rc_ >= line_ && rt_ >= line_; }

private:
  void catch_up_alpha(const DcqcnParams& p, double now);
  void decrease(const DcqcnParams& p, double now);
  void increase(const DcqcnParams& p);

  double line_ = 0;
  double rc_ = 0, rt_ = 0, alpha_ = 1;
  double alpha_epoch_ = 0;     ///< start of the current alpha period
  bool cnp_in_period_ = false; ///< a CNP arrived during the current alpha period
  int timer_events_ = 0, byte_events_ = 0;
  double timer_next_ = 0; ///< when the rate-increase timer fires next
  double bytes_acc_ = 0;  ///< bytes sent since the last byte-counter event
  double last_decrease_ = -1e300;
  bool decrease_held_ = false;
  int decreases_ = 0;
};

} // namespace railyard::models::cc
