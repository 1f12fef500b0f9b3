//===- Npy.h - NumPy .npy files for attnfuse-run ----------------*- C++ -*-===//
//
// Reads .npy files into HostTensors of a requested element type and shape, and
// writes HostTensors as .npy files (format versions 1.0 to 3.0, C order,
// little-endian).
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_TOOLS_ATTNFUSE_RUN_NPY_H
#define ATTNFUSE_TOOLS_ATTNFUSE_RUN_NPY_H

#include "HostTensor.h"

#include "llvm/Support/Error.h"

namespace attnfuse_run {

/// Reads the .npy file `path` as a tensor of `kind` elements and shape
/// `shape` (empty: a 0-d array). The array's shape must equal `shape`.
/// Conversions: float arrays (<f2, <f4, <f8) to a float `kind`, rounding to
/// nearest even; bool and integer arrays to an integer `kind` (the values must
/// fit: -2^(N-1) <= v < 2^N for iN, 0 or 1 for i1); for bf16 also raw bit
/// patterns (<u2 or <V2).
llvm::Expected<HostTensor> readNpy(llvm::StringRef path, ElementKind kind,
                                   llvm::ArrayRef<int64_t> shape);

/// Writes `tensor` to `path`. Element types map to: f16 '<f2', bf16 '<f4'
/// (widened exactly), f32 '<f4', f64 '<f8', i1 '|b1', i8 '|i1', i16 '<i2',
/// i32 '<i4', i64 '<i8'.
llvm::Error writeNpy(llvm::StringRef path, const HostTensor &tensor);

} // namespace attnfuse_run

#endif // ATTNFUSE_TOOLS_ATTNFUSE_RUN_NPY_H
