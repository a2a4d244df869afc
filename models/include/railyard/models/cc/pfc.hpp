// Priority flow control (IEEE 802.1Qbb): a switch counts, per ingress port and priority, the bytes that arrived
// through that port and still wait in its egress queues. Above XOFF it sends PAUSE upstream; the bytes already on the
// wire land in the headroom above XOFF; below XON it sends RESUME. A paused link sends nothing on that priority.
#pragma once

#include "railyard/common/units.hpp"
#include "railyard/common/yaml.hpp"

#include <string>
#include <utility>
#include <vector>

namespace railyard::models::cc {

struct PfcParams {
  bool enabled = false;
  Bytes xoff{0};            ///< pause when an ingress counter rises above this
  Bytes xon{0};             ///< resume when it falls below this
  Bytes headroom{0};        ///< room above XOFF for bytes in flight while PAUSE takes effect; 0 = computed per link
  Seconds response_time{0}; ///< time for the upstream port to stop after the PAUSE frame arrives
  int priority = 3;         ///< the lossless priority RoCE traffic uses
  std::vector<std::pair<std::string, std::string>> sources;
};

/// Defaults: XOFF 256 KiB, XON XOFF - 2 MTU, headroom computed, response 1 MTU time at 400 Gb/s.
PfcParams pfc_defaults(Bytes mtu);

/// Parses a `pfc:` section (enabled, xoff, xon, headroom, response_time, priority). Every threshold must hold at least
/// one MTU and XON must not exceed XOFF; errors name the field.
PfcParams parse_pfc(const YamlNode& node, Bytes mtu);
void validate(const PfcParams& p, Bytes mtu, const InputLocation& where);

/// The headroom a port needs so that PAUSE never loses a byte: what the upstream keeps sending during one round trip
/// of the cable (pause frame out, last bytes back), the upstream's response time, plus one MTU being sent when PAUSE
/// arrives and one MTU being received when XOFF is crossed.
Bytes required_headroom(BytesPerSec link_rate, Seconds link_latency, Seconds response_time, Bytes mtu);

} // namespace railyard::models::cc
