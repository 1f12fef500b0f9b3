//===- GPUPipeline.cpp - attn-lower-to-nvvm-pipeline ----------------------===//
//
// attn.attention to a CUDA binary, modeled on upstream's
// gpu-lower-to-nvvm-pipeline (mlir/lib/Dialect/GPU/Pipelines): the fused
// kernel (convert-attn-to-gpu; or, with naive=true, the reference lowering
// as parallel loops mapped to GPU blocks and threads by upstream passes),
// bufferization of the host function, the
// device module to NVVM with bare-pointer kernel arguments, nvvm-attach-target
// and gpu-module-to-binary, the host side to LLVM (gpu-to-llvm; running it
// needs MLIR's CUDA runtime wrappers, which Debian does not ship: the
// binaries are launched from Python instead, see docs/GPU.md).
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Process.h"

using namespace mlir;

/// The CUDA toolkit whose libdevice resolves the math functions (__nv_*)
/// of the kernels: the option, else $CUDA_HOME, $CUDA_PATH, $CUDA_ROOT, else
/// /usr/local/cuda. Without libdevice they would stay unresolved calls in the
/// PTX, silently.
static std::string findCudaToolkit(const std::string &option) {
  if (!option.empty())
    return option;
  for (const char *var : {"CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"})
    if (std::optional<std::string> v = llvm::sys::Process::GetEnv(var))
      if (!v->empty())
        return *v;
  if (llvm::sys::fs::exists("/usr/local/cuda/nvvm/libdevice"))
    return "/usr/local/cuda";
  return "";
}

/// Tensors to buffers, identity layouts at function boundaries (the host
/// functions' arguments are plain dense buffers).
static void addBufferization(OpPassManager &pm) {
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createConvertBufferizationToMemRefPass());
}

/// The naive kernels: the reference lowering's linalg ops on buffers become
/// parallel loops (reduction dimensions stay sequential scf.for inside), each
/// tiled 1x1x8x32 over its leading dimensions and mapped innermost-first, so
/// that a block's threads cover the last two tiled dimensions (at most 256
/// threads, x along the contiguous one) and its grid the tiles and outer
/// dimensions (a fourth one loops inside the kernel); each loop nest becomes
/// one gpu.launch.
static void addNaiveKernels(OpPassManager &pm) {
  pm.addPass(attnfuse::createConvertAttnToLinalg());
  pm.addPass(attnfuse::attn::createAttnDecomposeAggregates());
  pm.addPass(createCanonicalizerPass());
  addBufferization(pm);
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createParallelLoopTilingPass({1, 1, 8, 32}));
  // Drops the unit-trip dimensions of the tiled loops before mapping.
  pm.addPass(createCanonicalizerPass());
  GpuMapParallelLoopsPassOptions mapping;
  mapping.mappingPolicyStr = "innermost-first";
  pm.addNestedPass<func::FuncOp>(createGpuMapParallelLoopsPass(mapping));
  pm.addNestedPass<func::FuncOp>(createConvertParallelLoopToGpuPass());
  pm.addPass(createCanonicalizerPass());
  // Constants and index computations move into the kernels, whose operands
  // then are buffers and scalar function arguments only.
  pm.addPass(createGpuLaunchSinkIndexComputationsPass());
  pm.addPass(createGpuKernelOutliningPass());
}

void attnfuse::buildAttnGPUKernelsPipeline(OpPassManager &pm,
                                           const GPUPipelineOptions &options) {
  // TOSA graphs to linalg, then unfused chains become attn.attention, as in
  // the CPU pipeline (in both paths: the naive kernels compute the same
  // raised op).
  buildTosaToLinalgPipeline(pm);
  attn::AttnRaiseAttentionOptions raise;
  raise.report = options.raiseReport;
  pm.addPass(attn::createAttnRaiseAttention(raise));
  pm.addPass(createLinalgElementwiseOpFusionPass());
  pm.addPass(createCanonicalizerPass());

  if (options.naive) {
    addNaiveKernels(pm);
    return;
  }

  // The fused kernels and their launches.
  ConvertAttnToGPUOptions kernel;
  kernel.blockQ = options.blockQ;
  kernel.blockK = options.blockK;
  kernel.threadsPerRow = options.threadsPerRow;
  kernel.chunk = options.chunk;
  kernel.minCtasPerSM = options.minCtasPerSM;
  kernel.lazyRescale = options.lazyRescale;
  kernel.warps = options.warps;
  kernel.stages = options.stages;
  kernel.sharedMemoryLimit = sharedMemoryLimitForChip(options.chip);
  kernel.mma = options.mma;
  pm.addPass(createConvertAttnToGPU(kernel));
  pm.addPass(createCanonicalizerPass());

  addBufferization(pm);
  // Kernels written as gpu.launch (none from convert-attn-to-gpu, which
  // emits gpu.func directly) become gpu.func too.
  pm.addPass(createGpuKernelOutliningPass());
}

void attnfuse::buildAttnGPUBinaryPipeline(OpPassManager &pm,
                                          const GPUPipelineOptions &options) {
  // Device code to NVVM (nvgpu: ldmatrix, cp.async of the mma.sync family).
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertNVGPUToNVVMPass());
  // The naive kernels index with affine.min/affine.apply (the tiling).
  if (options.naive)
    pm.addNestedPass<gpu::GPUModuleOp>(createLowerAffinePass());
  pm.addNestedPass<gpu::GPUModuleOp>(createSCFToControlFlowPass());
  ConvertGpuOpsToNVVMOpsOptions nvvm;
  nvvm.useBarePtrCallConv = true;
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertGpuOpsToNVVMOps(nvvm));
  pm.addNestedPass<gpu::GPUModuleOp>(createCanonicalizerPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createCSEPass());
  pm.addNestedPass<gpu::GPUModuleOp>(createReconcileUnrealizedCastsPass());
  GpuNVVMAttachTargetOptions target;
  target.chip = options.chip;
  target.features = options.features;
  target.optLevel = options.optLevel;
  pm.addPass(createGpuNVVMAttachTarget(target));

  // Host code to LLVM.
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  GpuToLLVMConversionPassOptions host;
  host.kernelBarePtrCallConv = true;
  pm.addPass(createGpuToLLVMConversionPass(host));
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());

  // Device modules to PTX (isa), cubin (bin) or fatbin.
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = options.format;
  binary.toolkitPath = findCudaToolkit(options.cudaPath);
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void attnfuse::buildAttnLowerToNVVMPipeline(OpPassManager &pm,
                                            const GPUPipelineOptions &options) {
  buildAttnGPUKernelsPipeline(pm, options);
  buildAttnGPUBinaryPipeline(pm, options);
}

void attnfuse::registerAttnFuseGPUPipeline() {
  PassPipelineRegistration<GPUPipelineOptions>(
      "attn-lower-to-nvvm-pipeline",
      "Lower attn.attention to fused CUDA kernels (gpu.binary) and the host "
      "function to the LLVM dialect",
      buildAttnLowerToNVVMPipeline);
}
