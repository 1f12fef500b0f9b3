//===- TensorMapCodes.h - CUtensorMap swizzle and L2 codes ------*- C++ -*-===//
//
// A tensor map's swizzle and L2 promotion are counted in bytes where attnfuse
// describes them (TensorMapSpec, the kernels' attn.tensor_maps attribute,
// the JSON of the C API and of the GPU artifacts); CUDA's
// CUtensorMapSwizzle and CUtensorMapL2promotion, and nvgpu's
// TensorMapSwizzleKind and TensorMapL2PromoKind, which follow them, number
// 0, 32, 64, 128 bytes and 0, 64, 128, 256 bytes as 0 .. 3. The one
// translation, for the pass (nvgpu.tma.create.descriptor) and the driver
// (cuTensorMapEncodeTiled); Python's launcher has its own table
// (python-bindings/attnfuse/cuda_launch.py).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_CONVERSION_ATTNTOGPU_TENSORMAPCODES_H
#define ATTNFUSE_CONVERSION_ATTNTOGPU_TENSORMAPCODES_H

#include "llvm/Support/MathExtras.h"

#include <cstdint>

namespace attnfuse {

/// The CUtensorMapSwizzle of a swizzle of `bytes` (0, 32, 64 or 128).
inline unsigned tensorMapSwizzleCode(int64_t bytes) {
  return bytes ? llvm::Log2_64(bytes / 32) + 1 : 0;
}

/// The CUtensorMapL2promotion of an L2 promotion of `bytes` (0, 64, 128 or
/// 256).
inline unsigned tensorMapL2PromotionCode(int64_t bytes) {
  return bytes ? llvm::Log2_64(bytes / 64) + 1 : 0;
}

} // namespace attnfuse

#endif // ATTNFUSE_CONVERSION_ATTNTOGPU_TENSORMAPCODES_H
