//===- HostExecution.h - JIT execution of lowered modules on the host -*- C++ -*-===//
//
// What every host runner of attnfuse shares (attnfuse-run, the C API and
// through it Python): JIT-compiling a module lowered by
// attn-lower-to-cpu-pipeline with the runtime symbols its code calls, and the
// layout of memref descriptors in MLIR's C interface.
//
//===----------------------------------------------------------------------===//
#ifndef ATTNFUSE_EXECUTIONENGINE_HOSTEXECUTION_H
#define ATTNFUSE_EXECUTIONENGINE_HOSTEXECUTION_H

#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/Error.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace attnfuse {

/// JIT-compiles `module` (LLVM dialect) at O2 for the host and provides the
/// runtime functions lowered code calls (`memrefCopy`), so that no
/// libmlir_c_runner_utils.so is needed. Initializes the native target once.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
createHostExecutionEngine(mlir::ModuleOp module);

/// Number of 64-bit words of a rank-`rank` memref descriptor in the C
/// interface: {T *allocated; T *aligned; int64_t offset; int64_t sizes[R];
/// int64_t strides[R];}. All words are 8 bytes, so a struct of descriptors
/// (several results) has no padding.
inline size_t getMemrefDescriptorWords(int64_t rank) { return 3 + 2 * rank; }

/// The C-interface descriptor of the dense row-major buffer `data` of `shape`.
llvm::SmallVector<int64_t> describeDenseMemref(void *data,
                                               llvm::ArrayRef<int64_t> shape);

/// Copies the memref described by `src` into the one described by `dst`
/// (descriptors as above, rank `rank`, either strided; `dst` has `src`'s
/// sizes), element by element.
void copyMemref(const int64_t *src, const int64_t *dst, int64_t rank,
                size_t elementBytes);

} // namespace attnfuse

#endif // ATTNFUSE_EXECUTIONENGINE_HOSTEXECUTION_H
