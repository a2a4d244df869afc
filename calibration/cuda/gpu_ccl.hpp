// NCCL under CUDA, RCCL under HIP: RCCL keeps NCCL's API and names (ncclAllReduce, ncclCommInitRank, ...), so only the
// header differs; see gpu_runtime.hpp.
#pragma once

#include "gpu_runtime.hpp"

#if defined(RAILYARD_GPU_HIP)
#include <rccl/rccl.h>
#else
#include <nccl.h>
#endif
