/* Stand-in for the few cuBLAS names ggml-cuda's host code mentions: device-only compiles never call them. */
#pragma once
typedef struct cublasContext *cublasHandle_t;
typedef enum { CUBLAS_STATUS_SUCCESS = 0 } cublasStatus_t;
typedef enum { CUBLAS_DEFAULT_MATH = 0, CUBLAS_TF32_TENSOR_OP_MATH = 3 } cublasMath_t;
typedef enum { CUBLAS_COMPUTE_16F = 64, CUBLAS_COMPUTE_32F = 68 } cublasComputeType_t;
const char *cublasGetStatusString(cublasStatus_t);
cublasStatus_t cublasCreate(cublasHandle_t *);
cublasStatus_t cublasSetMathMode(cublasHandle_t, cublasMath_t);
