#include "railyard/models/cc/pfc.hpp"

#include <fmt/format.h>

namespace railyard::models::cc {

PfcParams pfc_defaults(Bytes mtu)
{
  PfcParams p;
  p.enabled = false;
  p.xoff = units::KiB(256);
  p.xon = p.xoff - mtu * 2.0;
  p.headroom = Bytes(0);
  // One MTU at 400 Gb/s: the frame being sent when PAUSE arrives finishes first (IEEE 802.1Qbb response delay).
  p.response_time = mtu / units::Gbps(400);
  p.priority = 3;
  p.sources = {
      {"xoff", "assumption: a static 256 KiB per ingress port and priority (switch buffers of 32-64 MiB shared by "
               "64 ports); set it per switch model"},
      {"xon", "XOFF - 2 MTU, the hysteresis of common lossless profiles (assumption)"},
      {"headroom", "computed per link: rate x (2 x cable latency + response time) + 2 MTU (IEEE 802.1Qbb Annex N "
                   "headroom terms)"},
      {"priority", "RoCE's lossless priority 3 (NVIDIA Onyx/Cumulus RoCE defaults)"},
  };
  return p;
}

Bytes required_headroom(BytesPerSec link_rate, Seconds link_latency, Seconds response_time, Bytes mtu)
{
  return link_rate * (link_latency * 2.0 + response_time) + mtu * 2.0;
}

void validate(const PfcParams& p, Bytes mtu, const InputLocation& where)
{
  auto at = [&](const char* field) {
    InputLocation loc = where;
    loc.field = where.field.empty() ? std::string(field) : where.field + "." + field;
    return loc;
  };
  auto at_least_mtu = [&](const char* field, Bytes v, bool zero_ok) {
    if (zero_ok && v.bytes() == 0)
      return;
    if (v < mtu)
      throw InputError(at(field),
                       fmt::format("PFC threshold {} = {} B is below one MTU ({} B)", field, v.bytes(), mtu.bytes()),
                       fmt::format("a pause threshold must hold at least one whole packet: give {} of {} B or more",
                                   field, mtu.bytes()));
  };
  at_least_mtu("xoff", p.xoff, false);
  at_least_mtu("xon", p.xon, false);
  at_least_mtu("headroom", p.headroom, true);
  if (p.xon > p.xoff)
    throw InputError(at("xon"), fmt::format("xon = {} B is above xoff = {} B", p.xon.bytes(), p.xoff.bytes()),
                     "resume (XON) must sit at or below pause (XOFF), e.g. XOFF - 2 MTU");
  if (p.response_time.seconds() < 0)
    throw InputError(at("response_time"), "response_time is negative", "give 0 or a time such as '0.1 us'");
  if (p.priority < 0 || p.priority > 7)
    throw InputError(at("priority"), fmt::format("priority {} is outside 0..7", p.priority),
                     "802.1p priorities are 0..7; RoCE usually uses 3");
}

PfcParams parse_pfc(const YamlNode& node, Bytes mtu)
{
  node.expect_keys({"enabled", "xoff", "xon", "headroom", "response_time", "priority"});
  PfcParams p = pfc_defaults(mtu);
  p.enabled = node.bool_or("enabled", true);
  bool xon_given = false;
  if (auto n = node.get("xoff")) {
    p.xoff = n->as_bytes();
    p.sources.emplace_back("xoff", "scenario");
  }
  if (auto n = node.get("xon")) {
    p.xon = n->as_bytes();
    xon_given = true;
    p.sources.emplace_back("xon", "scenario");
  }
  if (!xon_given)
    p.xon = p.xoff - mtu * 2.0 < mtu ? mtu : p.xoff - mtu * 2.0;
  if (auto n = node.get("headroom")) {
    p.headroom = n->as_bytes();
    p.sources.emplace_back("headroom", "scenario");
  }
  if (auto n = node.get("response_time")) {
    p.response_time = n->as_seconds();
    p.sources.emplace_back("response_time", "scenario");
  }
  if (auto n = node.get("priority"))
    p.priority = static_cast<int>(n->as_int(0, 7, "802.1p priorities are 0..7; RoCE usually uses 3"));
  // Name the line of the field that broke a rule where the user wrote it.
  try {
    validate(p, mtu, node.where());
  } catch (const InputError& e) {
    const std::string& field = e.where().field;
    const std::string leaf = field.substr(field.rfind('.') == std::string::npos ? 0 : field.rfind('.') + 1);
    if (auto n = node.get(leaf))
      throw InputError(n->where(), e.rule(), e.fix());
    throw;
  }
  return p;
}

} // namespace railyard::models::cc
