// The host side of a benchmark that calls collectives back to back, as nccl-tests does. The simulator gives the
// device time of one collective; a measurement also contains the CPU thread that issues the calls. nccl-tests with
// `-g G` drives G GPUs from one thread: every iteration is a group of G calls (src/common.cu startColl), each call
// costs the thread some time in NCCL's enqueue and the CUDA launch, and NCCL releases before 2.19 build one work
// element per channel of the call (src/enqueue.cc, 2.12-2.18). Kernel launches are asynchronous, so back-to-back
// iterations run at the slower of the two: the GPUs, or the thread that feeds them.
#pragma once

#include "railyard/common/units.hpp"

#include <string>
#include <vector>

namespace railyard::models {

/// The thread's cost of issuing one collective call to one GPU.
struct HostIssueCost {
  Seconds per_call{0};    ///< per call, whatever its size
  Seconds per_channel{0}; ///< added for each channel the call launches
  /// Some cost is given: the thread is modelled (all zero: the device time alone).
  [[nodiscard]] bool modelled() const { return per_call.seconds() > 0 || per_channel.seconds() > 0; }
};

/// Host time of one iteration: `calls` calls (one per GPU the thread drives) of `channels` channels each.
Seconds host_issue_time(const HostIssueCost& cost, int calls, int channels);

/// Time per iteration of back-to-back iterations: the thread runs ahead of the GPUs while it is the faster of the
/// two (the kernels queue on the streams), so an iteration takes the longer of the device and host times.
Seconds back_to_back_time(Seconds device, Seconds host);

/// One iteration known to be host-bound: the channels of each call and the measured time per iteration.
struct HostBoundSample {
  int channels = 0;
  Seconds time{0};
};

struct HostIssueFit {
  HostIssueCost cost;
  double rms_relative_residual = 0; ///< sqrt(mean((fitted - measured) / measured)^2) over the samples
};

/// Least squares of time = calls * (per_call + per_channel * channels) over host-bound iterations. Needs at least two
/// different channel counts; an InputError names `source` when the samples are too few or the fit gives a negative
/// cost (they were not host-bound).
HostIssueFit fit_host_issue(const std::vector<HostBoundSample>& samples, int calls, const std::string& source);

} // namespace railyard::models
