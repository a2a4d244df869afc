#include "simgrid_network.hpp"

#include "railyard/common/hash.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

namespace railyard::sim {
namespace sg = simgrid;

EcmpZone::EcmpZone(const topo::Topology& topology, std::uint64_t seed, bool pxn)
    : NetZoneImpl("railyard"), topology_(topology), seed_(seed), pxn_(pxn)
{
}

void EcmpZone::build()
{
  // The one adapter from Railyard's typed units to SimGrid's doubles (bytes per second).
  const int gpus = topology_.num_gpus();
  hosts_.reserve(gpus);
  for (int g = 0; g < gpus; ++g) {
    auto* h = create_host(topology_.vertex(topology_.gpu_vertex(g)).name, std::vector<double>{1e15});
    h->seal();
    gpu_of_netpoint_[h->get_netpoint()] = g;
    hosts_.push_back(h);
  }
  links_.reserve(topology_.num_links());
  for (topo::LinkId id = 0; id < topology_.num_links(); ++id) {
    auto* l = create_link(topology_.link_name(id), std::vector<double>{topology_.link(id).bandwidth.bytes_per_sec()});
    l->set_latency(0);
    l->seal();
    links_.push_back(l);
  }
  seal();
}

void EcmpZone::get_local_route(const sg::kernel::routing::NetPoint* src, const sg::kernel::routing::NetPoint* dst,
                               sg::kernel::routing::Route* into, double* latency)
{
  const int s = gpu_of_netpoint_.at(src);
  const int d = gpu_of_netpoint_.at(dst);
  const std::uint64_t k = flows_per_pair_[pair_key(s, d)]++;
  for (topo::LinkId id : topology_.route(s, d, k, seed_, pxn_))
    into->link_list_.push_back(links_[id]->get_impl());
}

SimGridNetwork::SimGridNetwork(const topo::Topology& topology, bool pxn, const EcmpZone& zone)
    : topology_(topology), pxn_(pxn)
{
  for (std::size_t g = 0; g < zone.hosts().size(); ++g)
    gpu_of_host_[zone.hosts()[g]] = static_cast<int>(g);
}

sg::s4u::Mailbox* SimGridNetwork::mailbox(int src, int dst, std::uint64_t tag)
{
  const std::uint64_t key = pair_key(src, dst) * 0x9E3779B97F4A7C15ULL ^ (tag + 0x632BE59BD9B4E019ULL);
  auto it = mailboxes_.find(key);
  if (it != mailboxes_.end())
    return it->second;
  // Mailbox::by_name is a simcall: other actors run before it returns, so the map learns the mailbox only after.
  auto* mb = sg::s4u::Mailbox::by_name(fmt::format("{}>{}#{}", src, dst, tag));
  mailboxes_.emplace(key, mb);
  return mb;
}

double SimGridNetwork::pair_latency(int src, int dst)
{
  // Equal-cost paths have equal hop counts and every tier has one latency, so latency depends on the pair only.
  const std::uint64_t key = pair_key(src, dst);
  auto it = latencies_.find(key);
  if (it != latencies_.end())
    return it->second;
  const double lat = topology_.path_latency(topology_.route(src, dst, 0, 0, pxn_)).seconds();
  latencies_.emplace(key, lat);
  return lat;
}

RequestId SimGridNetwork::allocate()
{
  const RequestId id = requests_.acquire();
  requests_[id] = Request{};
  requests_[id].in_use = true;
  return id;
}

void SimGridNetwork::release(RequestId id)
{
  requests_[id] = Request{};
  requests_.release(id);
}

void SimGridNetwork::isend(int src, int dst, std::uint64_t tag, Bytes bytes)
{
  if (src == dst)
    throw std::logic_error("isend: a GPU cannot send to itself through the network");
  const auto size = static_cast<std::uint64_t>(std::max(0.0, bytes.bytes()));
  // The payload pointer carries the simulated size itself, so the receiver can account for the bytes it got.
  void* payload = reinterpret_cast<void*>(static_cast<std::uintptr_t>(size));
  sends_[sg::s4u::this_actor::get_pid()].push_back(mailbox(src, dst, tag)->put_async(payload, size));
  totals_.flows_sent++;
  totals_.bytes_sent += static_cast<double>(size);
}

RequestId SimGridNetwork::irecv(int dst, int src, std::uint64_t tag)
{
  const RequestId id = allocate();
  Request& r = requests_[id];
  r.latency = pair_latency(src, dst);
  r.box = mailbox(src, dst, tag);
  Stream& st = streams_[r.box];
  if (st.busy)
    st.waiting.push_back(id);
  else
    r.comm = r.box->get_async<void>(&r.payload);
  st.busy = true;
  return id;
}

void SimGridNetwork::stream_next(sg::s4u::Mailbox* box)
{
  Stream& st = streams_[box];
  if (st.waiting.empty()) {
    st.busy = false;
    return;
  }
  Request& r = requests_[st.waiting.front()];
  st.waiting.pop_front();
  r.comm = box->get_async<void>(&r.payload);
}

RequestId SimGridNetwork::timer(Seconds at)
{
  const RequestId id = allocate();
  requests_[id].arrival = at.seconds();
  return id;
}

std::size_t SimGridNetwork::wait_any(const std::vector<RequestId>& ids)
{
  std::vector<sg::s4u::CommPtr> comms;
  std::vector<std::size_t> comm_pos;
  auto& my_sends = sends_[sg::s4u::this_actor::get_pid()];
  while (true) {
    // The earliest request whose completion time is known.
    std::size_t best = ids.size();
    double best_t = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const Request& r = requests_[ids[i]];
      if (r.arrival >= 0 && r.arrival < best_t) {
        best_t = r.arrival;
        best = i;
      }
    }
    const double now = sg::s4u::Engine::get_clock();
    if (best < ids.size() && best_t <= now) {
      const Request& r = requests_[ids[best]];
      if (r.comm) {
        totals_.flows_received++;
        totals_.bytes_received += static_cast<double>(reinterpret_cast<std::uintptr_t>(r.payload));
      }
      release(ids[best]);
      return best;
    }
    comms.clear();
    comm_pos.clear();
    for (std::size_t i = 0; i < ids.size(); ++i) {
      const Request& r = requests_[ids[i]];
      if (r.comm && r.arrival < 0) {
        comms.push_back(r.comm);
        comm_pos.push_back(i);
      }
    }
    const std::size_t receives = comms.size();
    comms.insert(comms.end(), my_sends.begin(), my_sends.end());
    if (comms.empty()) {
      if (best == ids.size())
        throw std::logic_error("wait_any: nothing to wait for (or only for receives queued behind one not waited on)");
      sg::s4u::this_actor::sleep_until(best_t);
      continue;
    }
    const double timeout = best < ids.size() ? best_t - now : -1.0;
    const ssize_t done = sg::s4u::Comm::wait_any_for(comms, timeout);
    if (done < 0)
      continue;
    const auto d = static_cast<std::size_t>(done);
    if (d < receives) {
      Request& r = requests_[ids[comm_pos[d]]];
      r.arrival = sg::s4u::Engine::get_clock() + r.latency;
      stream_next(r.box);
    } else {
      my_sends[d - receives] = my_sends.back();
      my_sends.pop_back();
    }
  }
}

void SimGridNetwork::wait_sends()
{
  const auto me = sg::s4u::this_actor::get_pid();
  auto& my_sends = sends_[me];
  while (!my_sends.empty()) {
    const auto done = static_cast<std::size_t>(sg::s4u::Comm::wait_any(my_sends));
    my_sends[done] = my_sends.back();
    my_sends.pop_back();
  }
  sends_.erase(me);
}

Seconds SimGridNetwork::now() const { return Seconds(sg::s4u::Engine::get_clock()); }

} // namespace railyard::sim
