//===- GPUKernels.h - the kernels of a module lowered for CUDA --*- C++ -*-===//
#ifndef ATTNFUSE_EXECUTIONENGINE_GPUKERNELS_H
#define ATTNFUSE_EXECUTIONENGINE_GPUKERNELS_H

#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

#include <string>
#include <vector>

namespace attnfuse {

/// A kernel argument that is a pointer to a TMA tensor map (a 128-byte
/// CUtensorMap in device memory) of another argument, `source`, a contiguous
/// buffer: what the launcher passes to cuTensorMapEncodeTiled, outermost
/// dimension first (the driver takes them innermost first). The kernel's
/// attn.tensor_maps attribute (convert-attn-to-gpu) describes them.
struct TensorMapArgument {
  unsigned argument, source;
  /// The element type ("bf16", "f16", "f32") and shape of the source.
  std::string elementType;
  std::vector<int64_t> dims;
  /// The source's strides in elements, outermost first, where it is a
  /// strided view (a permutation of a contiguous buffer); empty: contiguous.
  std::vector<int64_t> strides;
  /// The box in elements; the swizzle and the L2 promotion in bytes.
  std::vector<int64_t> box;
  int64_t swizzle, l2Promotion;
};

/// What a launcher needs of a kernel besides its binary and launch sizes,
/// from the attributes convert-attn-to-gpu puts on its gpu.func: the
/// arguments' names (attn.args: the roles of KernelPlan.h, "q", "lse",
/// "dq_accum", ..., and "tmap_<source>" for tensor maps), its tensor maps
/// (attn.tensor_maps) and its instruction family (attn.family). Empty for
/// kernels of other origins.
struct KernelAttributes {
  std::vector<std::string> argumentNames;
  std::vector<TensorMapArgument> tensorMaps;
  std::string family;
};

/// The attributes of the kernels of a module, by "gpu-module::kernel".
using KernelAttributeTable = llvm::StringMap<KernelAttributes>;

/// The attributes of the gpu.func kernels of `module`, read before its
/// device code is compiled (the binary keeps no attributes).
KernelAttributeTable collectKernelAttributes(mlir::ModuleOp module);

/// A JSON array of `maps` (objects with the fields of TensorMapArgument:
/// argument, source, dtype, dims, box, swizzle, l2_promotion), for the C API
/// and the Python launchers.
std::string tensorMapsToJSON(const std::vector<TensorMapArgument> &maps);

/// A kernel launched by a module lowered with attn-lower-to-nvvm-pipeline
/// (format=bin): its cubin and launch configuration. Sizes are -1 where they
/// are not compile-time constants.
struct GPUKernel {
  std::string name;
  std::string binary;
  int64_t grid[3];
  int64_t block[3];
  int64_t dynamicSharedMemoryBytes;
  /// LLVM types of the arguments in order ("ptr", "i64", "f32", ...).
  std::vector<std::string> argumentTypes;
  /// The arguments' names, tensor maps and family (KernelAttributes).
  std::vector<std::string> argumentNames;
  std::vector<TensorMapArgument> tensorMaps;
  std::string family;
};

/// The kernels of `module`'s gpu.launch_func ops, in walk order, with the
/// binary of the gpu.binary each names and their attributes from
/// `attributes` (collectKernelAttributes before the binaries were made).
std::vector<GPUKernel>
collectGPUKernels(mlir::ModuleOp module,
                  const KernelAttributeTable &attributes = {});

/// Compiles `module` for CUDA as attn-lower-to-nvvm-pipeline with
/// `options` does, to cubins (it sets format=bin), in the pipeline's two halves:
/// the kernels (buildAttnGPUKernelsPipeline: gpu.launch_func ops on the
/// host, gpu.func kernels with their attributes), then `afterKernels` where
/// given (a launcher reads its host plan from the outlined launches) and the
/// kernels' attributes, then the binaries (buildAttnGPUBinaryPipeline). The
/// kernels (collectGPUKernels), or failure after diagnostics on the module's
/// context. The one compile-for-CUDA sequence of the C API and attnfuse-run.
mlir::FailureOr<std::vector<GPUKernel>> compileForCuda(
    mlir::ModuleOp module, GPUPipelineOptions &options,
    llvm::function_ref<mlir::LogicalResult(mlir::ModuleOp)> afterKernels = {});

} // namespace attnfuse

#endif // ATTNFUSE_EXECUTIONENGINE_GPUKERNELS_H
