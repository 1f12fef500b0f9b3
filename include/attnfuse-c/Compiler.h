/*===-- attnfuse-c/Compiler.h - compile and run attnfuse modules --*- C -*-===*\
|*                                                                            *|
|* A self-contained C API over attnfuse: give it a module as text, get back   *|
|* the lowered IR as text, the diagnostics and remarks the passes emitted,    *|
|* and (on the host CPU) a JIT-compiled function to call on dense buffers.    *|
|* It needs no MlirContext from the caller: each compilation owns one.        *|
|*                                                                            *|
|* Objects are opaque handles created by `...Create`/`attnfuseCompile`/       *|
|* `attnfuseCompilationRun` and released by the matching `...Destroy`.        *|
|* Strings returned as MlirStringRef are owned by the object they come from   *|
|* and are not null-terminated.                                               *|
|*                                                                            *|
|* Invalid handles. Every function accepts any handle: one that is null       *|
|* (ptr == NULL), already destroyed, or not made by this API for its type is  *|
|* *invalid* and never dereferenced (the library keeps the set of its live    *|
|* objects). With an invalid handle:                                          *|
|*   - `...Destroy` and the option setters do nothing;                        *|
|*   - attnfuseCompile with invalid options: a null options handle means the  *|
|*     defaults; any other invalid one gives a failed compilation with an     *|
|*     error diagnostic;                                                      *|
|*   - the compilation getters return what an empty failed compilation        *|
|*     holds: false, 0, empty strings, and the documented invalid values of   *|
|*     an index out of range;                                                 *|
|*   - attnfuseCompilationRun returns a failed run whose error says that the  *|
|*     compilation handle is invalid;                                         *|
|*   - attnfuseRunSucceeded is false, attnfuseRunGetError a message saying    *|
|*     that the run handle is invalid, attnfuseRunGetNumResults 0 and         *|
|*     attnfuseRunGetResult the invalid tensor.                               *|
|* (A destroyed object's address may be reused by a new object of the same    *|
|* type; a stale handle then names the new object.)                           *|
|*                                                                            *|
|* Invalid values passed to setters (a target outside AttnfuseTarget, a       *|
|* string with NULL data and a nonzero length) are kept as errors of the      *|
|* options: attnfuseCompile reports each as an error diagnostic of a failed   *|
|* compilation. An MlirStringRef {NULL, 0} is the empty string for setters.   *|
|*                                                                            *|
|* With the CUDA target, the compilation holds the kernels of the module:     *|
|* each one's binary (cubin) and launch metadata (grid, block, dynamic shared *|
|* memory, argument types).                                                   *|
|*                                                                            *|
\*===----------------------------------------------------------------------===*/
#ifndef ATTNFUSE_C_COMPILER_H
#define ATTNFUSE_C_COMPILER_H

#include "mlir-c/Support.h"

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Element types of the tensors exchanged with compiled functions. In memory,
/// f16/bf16 are their 16-bit patterns and i1 is one byte (0 or 1).
typedef enum AttnfuseElementType {
  AttnfuseElementTypeF16 = 0,
  AttnfuseElementTypeBF16 = 1,
  AttnfuseElementTypeF32 = 2,
  AttnfuseElementTypeF64 = 3,
  AttnfuseElementTypeI1 = 4,
  AttnfuseElementTypeI8 = 5,
  AttnfuseElementTypeI16 = 6,
  AttnfuseElementTypeI32 = 7,
  AttnfuseElementTypeI64 = 8,
} AttnfuseElementType;

/// Returns the size in bytes of one element of `type`, or 0 if `type` is not
/// an AttnfuseElementType.
MLIR_CAPI_EXPORTED intptr_t
attnfuseElementTypeGetByteSize(AttnfuseElementType type);

typedef enum AttnfuseDiagnosticSeverity {
  AttnfuseDiagnosticError = 0,
  AttnfuseDiagnosticWarning = 1,
  AttnfuseDiagnosticNote = 2,
  AttnfuseDiagnosticRemark = 3,
} AttnfuseDiagnosticSeverity;

/// One diagnostic. Notes attached to a diagnostic follow it as separate
/// entries of severity Note. `location` is "file:line:col" when known.
typedef struct AttnfuseDiagnostic {
  AttnfuseDiagnosticSeverity severity;
  MlirStringRef location;
  MlirStringRef message;
} AttnfuseDiagnostic;

/// A dense, row-major (C-contiguous) tensor. A rank-0 tensor is also how a
/// scalar argument is passed.
typedef struct AttnfuseTensor {
  AttnfuseElementType elementType;
  intptr_t rank;
  const int64_t *shape; ///< `rank` sizes; -1 means dynamic in a signature.
  void *data;
} AttnfuseTensor;

typedef struct AttnfuseCompileOptions {
  void *ptr;
} AttnfuseCompileOptions;
typedef struct AttnfuseCompilation {
  void *ptr;
} AttnfuseCompilation;
typedef struct AttnfuseRun {
  void *ptr;
} AttnfuseRun;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

/// Creates options with the defaults: attnfuse's CPU pipeline
/// (attn-lower-to-cpu-pipeline, fused lowering, 64x64 blocks), no JIT.
MLIR_CAPI_EXPORTED AttnfuseCompileOptions attnfuseCompileOptionsCreate(void);
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsDestroy(AttnfuseCompileOptions options);

/// Runs `pipeline` instead of attnfuse's pipeline: a textual pass pipeline,
/// either anchored (`builtin.module(convert-attn-to-scf,canonicalize)`) or a
/// pass list run on the module (`convert-attn-to-linalg`). Empty: the default.
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsSetPipeline(AttnfuseCompileOptions options,
                                  MlirStringRef pipeline);

/// Options of attnfuse's pipeline: `naive` selects the reference lowering
/// (convert-attn-to-linalg), blockQ/blockK the tiles of the fused lowering.
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsSetNaive(AttnfuseCompileOptions options, bool naive);
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsSetBlockSizes(AttnfuseCompileOptions options,
                                    int64_t blockQ, int64_t blockK);

/// Also JIT-compiles the function `entry` for the host CPU so that
/// attnfuseCompilationRun can call it. `entry` must take ranked tensors or
/// scalars of AttnfuseElementType types and return ranked tensors; it is
/// marked `llvm.emit_c_interface` before the pipeline runs. Empty: no JIT.
/// Not with the CUDA target; nor can a module that still holds GPU code
/// after a custom pipeline be JIT-compiled (both are errors).
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsSetEntry(AttnfuseCompileOptions options,
                               MlirStringRef entry);

/// The file name used in the locations of the source (default "<source>").
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsSetSourceName(AttnfuseCompileOptions options,
                                    MlirStringRef name);

/// Where the compiled code runs.
typedef enum {
  AttnfuseTargetCPU = 0,  ///< attn-lower-to-cpu-pipeline (the default).
  AttnfuseTargetCUDA = 1, ///< attn-lower-to-nvvm-pipeline, cubins inside.
} AttnfuseTarget;

/// Selects the target; `chip` names the GPU architecture for CUDA (e.g.
/// "sm_90a", "sm_80"; empty: sm_90a) and must be empty for the CPU. The CUDA
/// target needs ptxas (the CUDA toolkit) where compilation runs, not a GPU;
/// it JIT-compiles nothing, so it takes no entry function (the kernels are
/// launched by the caller, see attnfuseCompilationGetKernel). A chip the
/// pipeline cannot compile for is an error diagnostic of the compilation.
/// Each of these is an error of the compilation: a `target` that is not an
/// AttnfuseTarget, a chip with the CPU target, an entry with the CUDA target.
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsSetTarget(AttnfuseCompileOptions options,
                                AttnfuseTarget target, MlirStringRef chip);
/// The kernel options of the CUDA target, as attn-lower-to-nvvm-pipeline
/// takes them ("deterministic=true mma=simt block-k=32": the options of
/// docs/Passes; empty: the defaults). A chip set by
/// attnfuseCompileOptionsSetTarget overrides one given here. Text the
/// pipeline does not parse is an error of the compilation, as are kernel
/// options with the CPU target.
MLIR_CAPI_EXPORTED void
attnfuseCompileOptionsSetKernelOptions(AttnfuseCompileOptions options,
                                       MlirStringRef text);

//===----------------------------------------------------------------------===//
// Compilation
//===----------------------------------------------------------------------===//

/// Parses `source` (an MLIR module in textual form) and runs the
/// pipeline of `options` (null: the defaults) on it. Never fails to return an
/// object: check attnfuseCompilationSucceeded and read the diagnostics. A
/// source with NULL data (even {NULL, 0}), invalid options (see the top of
/// this file) and the errors the options hold give a failed compilation with
/// an error diagnostic each, before anything is parsed.
MLIR_CAPI_EXPORTED AttnfuseCompilation
attnfuseCompile(MlirStringRef source, AttnfuseCompileOptions options);

MLIR_CAPI_EXPORTED void
attnfuseCompilationDestroy(AttnfuseCompilation compilation);

/// True if the source parsed, the pipeline succeeded and, when an entry was
/// requested, the function was JIT-compiled.
MLIR_CAPI_EXPORTED bool
attnfuseCompilationSucceeded(AttnfuseCompilation compilation);

/// The IR after the pipeline (empty if parsing or the pipeline failed).
MLIR_CAPI_EXPORTED MlirStringRef
attnfuseCompilationGetIR(AttnfuseCompilation compilation);

/// The errors, warnings, notes and remarks emitted, in order. For `pos`
/// outside [0, attnfuseCompilationGetNumDiagnostics) the diagnostic has a
/// null location and message.
MLIR_CAPI_EXPORTED intptr_t
attnfuseCompilationGetNumDiagnostics(AttnfuseCompilation compilation);
MLIR_CAPI_EXPORTED AttnfuseDiagnostic
attnfuseCompilationGetDiagnostic(AttnfuseCompilation compilation,
                                 intptr_t pos);

/// True if the compilation holds a JIT-compiled entry function.
MLIR_CAPI_EXPORTED bool
attnfuseCompilationIsExecutable(AttnfuseCompilation compilation);

/// The tensor-level signature of the entry function (0 if not executable).
/// Shapes use -1 for dynamic sizes; a scalar argument has rank 0 and
/// attnfuseCompilationIsScalarInput true. `data` is null. For `pos` outside
/// [0, GetNumInputs) (or [0, GetNumResults)) the tensor is invalid: rank -1,
/// null shape and data (and IsScalarInput is false).
MLIR_CAPI_EXPORTED intptr_t
attnfuseCompilationGetNumInputs(AttnfuseCompilation compilation);
MLIR_CAPI_EXPORTED AttnfuseTensor
attnfuseCompilationGetInputType(AttnfuseCompilation compilation, intptr_t pos);
MLIR_CAPI_EXPORTED bool
attnfuseCompilationIsScalarInput(AttnfuseCompilation compilation,
                                 intptr_t pos);
MLIR_CAPI_EXPORTED intptr_t
attnfuseCompilationGetNumResults(AttnfuseCompilation compilation);
MLIR_CAPI_EXPORTED AttnfuseTensor
attnfuseCompilationGetResultType(AttnfuseCompilation compilation,
                                 intptr_t pos);

//===----------------------------------------------------------------------===//
// Kernels of the CUDA target
//===----------------------------------------------------------------------===//

/// A GPU kernel of a CUDA compilation and how the host code launches it.
/// Grid and block sizes are -1 where they are not compile-time constants.
/// For `pos` outside [0, attnfuseCompilationGetNumKernels) every field is
/// null or -1 (numArguments = -1); an argument type out of range is a null
/// string.
typedef struct {
  MlirStringRef name;    ///< the kernel's symbol in the binary
  MlirStringRef binary;  ///< the cubin (ELF), to cuModuleLoadData
  int64_t grid[3];
  int64_t block[3];
  int64_t dynamicSharedMemoryBytes;
  intptr_t numArguments; ///< in order; see ...GetKernelArgumentType
} AttnfuseKernel;

MLIR_CAPI_EXPORTED intptr_t
attnfuseCompilationGetNumKernels(AttnfuseCompilation compilation);
MLIR_CAPI_EXPORTED AttnfuseKernel
attnfuseCompilationGetKernel(AttnfuseCompilation compilation, intptr_t pos);
/// The LLVM type of a kernel argument ("ptr" for a tensor's base pointer, as
/// the pipeline passes memrefs bare; "i64", "f32", ... for scalars).
MLIR_CAPI_EXPORTED MlirStringRef attnfuseCompilationGetKernelArgumentType(
    AttnfuseCompilation compilation, intptr_t kernel, intptr_t argument);
/// The name of a kernel argument, its role (docs/GPU.md: "q", "k", "v",
/// "bias", "keep", "seed", "o", "lse", "do", "di", "dq_accum", "dk", "dv",
/// "dq", "capture" (each, in order), "tmap_<source>" for a tensor map);
/// empty for an out-of-range kernel or argument, and for kernels that
/// convert-attn-to-gpu did not make.
MLIR_CAPI_EXPORTED MlirStringRef attnfuseCompilationGetKernelArgumentName(
    AttnfuseCompilation compilation, intptr_t kernel, intptr_t argument);
/// The kernel's arguments that are TMA tensor maps, as a JSON array ("[]"
/// for none) of objects {argument, source, dtype, dims, box, swizzle,
/// l2_promotion}: argument `argument` is a pointer to a 128-byte CUtensorMap
/// in device memory that the launcher encodes (cuTensorMapEncodeTiled) for
/// the buffer passed as argument `source`, of `dtype` elements and shape
/// `dims`, in boxes of `box` elements (outermost first), with `swizzle` and
/// `l2_promotion` bytes and zeros out of bounds. Empty for an out-of-range
/// kernel.
MLIR_CAPI_EXPORTED MlirStringRef attnfuseCompilationGetKernelTensorMaps(
    AttnfuseCompilation compilation, intptr_t kernel);

//===----------------------------------------------------------------------===//
// Execution on the host CPU
//===----------------------------------------------------------------------===//

/// Calls the JIT-compiled entry function on `args` (copied first: the
/// compiled code may write its arguments) and collects its results. Checks
/// the number, element types and shapes of `args` against the signature;
/// a mismatch gives a failed run with an error message, not a call. Never
/// fails to return an object: check attnfuseRunSucceeded.
MLIR_CAPI_EXPORTED AttnfuseRun attnfuseCompilationRun(
    AttnfuseCompilation compilation, intptr_t numArgs,
    const AttnfuseTensor *args);

MLIR_CAPI_EXPORTED void attnfuseRunDestroy(AttnfuseRun run);
MLIR_CAPI_EXPORTED bool attnfuseRunSucceeded(AttnfuseRun run);
/// Why the run failed (empty if it succeeded; for an invalid run handle, a
/// message saying so).
MLIR_CAPI_EXPORTED MlirStringRef attnfuseRunGetError(AttnfuseRun run);
MLIR_CAPI_EXPORTED intptr_t attnfuseRunGetNumResults(AttnfuseRun run);
/// Result `pos`, dense row-major; its shape and data are owned by `run`. For
/// `pos` outside [0, attnfuseRunGetNumResults) the tensor is invalid: rank
/// -1, null shape and data.
MLIR_CAPI_EXPORTED AttnfuseTensor attnfuseRunGetResult(AttnfuseRun run,
                                                        intptr_t pos);

#ifdef __cplusplus
}
#endif

#endif // ATTNFUSE_C_COMPILER_H
