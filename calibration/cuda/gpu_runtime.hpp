// One source for CUDA and ROCm: the calibration programs are written against the CUDA runtime's names, and this
// header maps the ones they use onto HIP's when they are compiled as HIP (clang defines __HIP__, hipcc
// __HIP_PLATFORM_AMD__), the way ROCm's own ports keep one source (hipify's mapping tables list the same pairs:
// cudaMalloc -> hipMalloc, ...). gpu_blaslt.hpp does the same for cuBLASLt -> hipBLASLt and gpu_ccl.hpp for NCCL ->
// RCCL, whose API keeps NCCL's names. Only the names the programs use are mapped, so a new call fails to compile under
// HIP until it is added here.
#pragma once

#if defined(__HIP__) || defined(__HIP_PLATFORM_AMD__)
#include <hip/hip_runtime.h>

#define RAILYARD_GPU_HIP 1
namespace railyard::calib {
inline constexpr const char* kGpuRuntime = "hip";         ///< the "# gpu_runtime:" of every CSV
inline constexpr const char* kPeerLinkFast = "xgmi";      ///< the link kind of peers with a direct GPU link
inline constexpr const char* kCollectiveLibrary = "RCCL"; ///< the "# collective_library:" of nccl_sweep's CSVs
} // namespace railyard::calib

#define cudaError_t hipError_t
#define cudaSuccess hipSuccess
#define cudaErrorPeerAccessAlreadyEnabled hipErrorPeerAccessAlreadyEnabled
#define cudaGetErrorString hipGetErrorString
#define cudaGetErrorName hipGetErrorName
#define cudaGetLastError hipGetLastError
#define cudaDeviceProp hipDeviceProp_t
#define cudaGetDeviceCount hipGetDeviceCount
#define cudaGetDeviceProperties hipGetDeviceProperties
#define cudaSetDevice hipSetDevice
#define cudaRuntimeGetVersion hipRuntimeGetVersion
#define cudaDriverGetVersion hipDriverGetVersion
#define cudaDeviceCanAccessPeer hipDeviceCanAccessPeer
#define cudaDeviceEnablePeerAccess hipDeviceEnablePeerAccess
#define cudaDeviceGetP2PAttribute hipDeviceGetP2PAttribute
#define cudaDevP2PAttrNativeAtomicSupported hipDevP2PAttrNativeAtomicSupported
#define cudaMalloc hipMalloc
#define cudaFree hipFree
#define cudaMemGetInfo hipMemGetInfo
#define cudaMemset hipMemset
#define cudaMemsetAsync hipMemsetAsync
#define cudaMemcpy hipMemcpy
#define cudaMemcpyAsync hipMemcpyAsync
#define cudaMemcpyPeerAsync hipMemcpyPeerAsync
#define cudaMemcpyDeviceToHost hipMemcpyDeviceToHost
#define cudaMemcpyDeviceToDevice hipMemcpyDeviceToDevice
#define cudaStream_t hipStream_t
#define cudaStreamCreate hipStreamCreate
#define cudaStreamCreateWithFlags hipStreamCreateWithFlags
#define cudaStreamNonBlocking hipStreamNonBlocking
#define cudaStreamSynchronize hipStreamSynchronize
#define cudaStreamDestroy hipStreamDestroy
#define cudaEvent_t hipEvent_t
#define cudaEventCreate hipEventCreate
#define cudaEventRecord hipEventRecord
#define cudaEventSynchronize hipEventSynchronize
#define cudaEventElapsedTime hipEventElapsedTime
#define cudaEventDestroy hipEventDestroy

#else
#include <cuda_runtime.h>

namespace railyard::calib {
inline constexpr const char* kGpuRuntime = "cuda";
inline constexpr const char* kPeerLinkFast = "nvlink";
inline constexpr const char* kCollectiveLibrary = "NCCL";
} // namespace railyard::calib
#endif
