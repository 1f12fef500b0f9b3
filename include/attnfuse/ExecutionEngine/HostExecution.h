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
#include <string>

namespace attnfuse {

/// The environment variable that sets the default CPU of the host JIT.
inline constexpr const char *kJitCpuVariable = "ATTNFUSE_JIT_CPU";

/// How the host JIT compiles.
struct HostJitOptions {
  /// The CPU to compile for: "host" (the CPU this process runs on, with all
  /// its features) or an LLVM CPU name of the host's architecture ("x86-64",
  /// the baseline every x86-64 CPU runs; "x86-64-v3"; "sapphirerapids"; ...:
  /// `llc -mcpu=help`). Empty: $ATTNFUSE_JIT_CPU, else "host". The test suite
  /// sets the baseline, so that every machine compiles the same code.
  std::string cpu;
  /// Keeps the compiled object, for ExecutionEngine::dumpToObjectFile.
  bool keepObject = false;
};

/// The CPU `options.cpu` resolves to (see HostJitOptions::cpu).
std::string resolveJitCpu(const HostJitOptions &options);

/// JIT-compiles `module` (LLVM dialect) at O2 for `options.cpu` and provides
/// the runtime functions lowered code calls (`memrefCopy`, the allocation
/// functions, the 16-bit float conversions of FloatBuiltins.h), so that no
/// libmlir_c_runner_utils.so is needed and the code finds every builtin on
/// any CPU. Initializes the native target once. An unknown CPU name is an
/// error that names it.
llvm::Expected<std::unique_ptr<mlir::ExecutionEngine>>
createHostExecutionEngine(mlir::ModuleOp module,
                          const HostJitOptions &options = {});

/// Calls the packed-argument wrapper of `function` (`_mlir_ciface_...` for
/// the C interface) of `engine` with `arguments`. A call of `abort` by the
/// compiled code (a failed cf.assert: its message is printed first) returns
/// an error instead of ending the process; the function's allocations are
/// then lost.
llvm::Error invokeHostFunction(mlir::ExecutionEngine &engine,
                               llvm::StringRef function,
                               llvm::MutableArrayRef<void *> arguments);

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
