#include "railyard/sim/flow_network.hpp"

#include <stdexcept>

namespace railyard::sim {

namespace {
[[noreturn]] void unsupported(const FlowNetwork& net, const char* call)
{
  throw std::logic_error(std::string(call) + ": the " + net.name() +
                         " backend runs ranks as actors only (supports_clients() is false)");
}
} // namespace

std::uint32_t FlowNetwork::add_client(FlowClient&) { unsupported(*this, "add_client"); }
void FlowNetwork::client_isend(std::uint32_t, int, int, std::uint64_t, Bytes) { unsupported(*this, "client_isend"); }
void FlowNetwork::client_irecv(std::uint32_t, int, int, std::uint64_t, std::uint64_t)
{
  unsupported(*this, "client_irecv");
}
void FlowNetwork::client_timer(std::uint32_t, Seconds, std::uint64_t) { unsupported(*this, "client_timer"); }
void FlowNetwork::client_watch_sends(std::uint32_t) { unsupported(*this, "client_watch_sends"); }
void FlowNetwork::wait_clients() { unsupported(*this, "wait_clients"); }

} // namespace railyard::sim
