// cuBLASLt under CUDA, hipBLASLt (ROCm's port, same call sequence) under HIP; see gpu_runtime.hpp. The element types
// and the half-precision device types too: MI300X (gfx942) multiplies fp8 in the FNUZ encoding of e4m3, which is
// what HIP_R_8F_E4M3_FNUZ and __hip_fp8_e4m3_fnuz name there.
#pragma once

#include "gpu_runtime.hpp"

#if defined(RAILYARD_GPU_HIP)
#include <hip/hip_bf16.h>
#include <hip/hip_fp16.h>
#include <hip/hip_fp8.h>
#include <hipblaslt/hipblaslt.h>

#define cudaDataType_t hipDataType
#define CUDA_R_32F HIP_R_32F
#define CUDA_R_16F HIP_R_16F
#define CUDA_R_16BF HIP_R_16BF
#define CUDA_R_8F_E4M3 HIP_R_8F_E4M3_FNUZ
#define __nv_bfloat16 __hip_bfloat16
#define __nv_fp8_e4m3 __hip_fp8_e4m3_fnuz
#define cublasStatus_t hipblasStatus_t
#define CUBLAS_STATUS_SUCCESS HIPBLAS_STATUS_SUCCESS
#define cublasComputeType_t hipblasComputeType_t
#define CUBLAS_COMPUTE_32F HIPBLAS_COMPUTE_32F
#define CUBLAS_COMPUTE_32F_FAST_TF32 HIPBLAS_COMPUTE_32F_FAST_TF32
#define cublasOperation_t hipblasOperation_t
#define CUBLAS_OP_N HIPBLAS_OP_N
#define CUBLAS_OP_T HIPBLAS_OP_T
#define cublasLtHandle_t hipblasLtHandle_t
#define cublasLtCreate hipblasLtCreate
#define cublasLtDestroy hipblasLtDestroy
#define cublasLtMatmulDesc_t hipblasLtMatmulDesc_t
#define cublasLtMatmulDescCreate hipblasLtMatmulDescCreate
#define cublasLtMatmulDescDestroy hipblasLtMatmulDescDestroy
#define cublasLtMatmulDescSetAttribute hipblasLtMatmulDescSetAttribute
#define CUBLASLT_MATMUL_DESC_TRANSA HIPBLASLT_MATMUL_DESC_TRANSA
#define CUBLASLT_MATMUL_DESC_TRANSB HIPBLASLT_MATMUL_DESC_TRANSB
#define cublasLtMatrixLayout_t hipblasLtMatrixLayout_t
#define cublasLtMatrixLayoutCreate hipblasLtMatrixLayoutCreate
#define cublasLtMatrixLayoutDestroy hipblasLtMatrixLayoutDestroy
#define cublasLtMatmulPreference_t hipblasLtMatmulPreference_t
#define cublasLtMatmulPreferenceCreate hipblasLtMatmulPreferenceCreate
#define cublasLtMatmulPreferenceDestroy hipblasLtMatmulPreferenceDestroy
#define cublasLtMatmulPreferenceSetAttribute hipblasLtMatmulPreferenceSetAttribute
#define CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES HIPBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
#define cublasLtMatmulHeuristicResult_t hipblasLtMatmulHeuristicResult_t
#define cublasLtMatmulAlgoGetHeuristic hipblasLtMatmulAlgoGetHeuristic
#define cublasLtMatmul hipblasLtMatmul
#else
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#endif
