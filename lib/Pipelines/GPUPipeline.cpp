//===- GPUPipeline.cpp - attn-lower-to-nvvm-pipeline ----------------------===//
//
// attn.attention to a CUDA binary, modeled on upstream's
// gpu-lower-to-nvvm-pipeline (mlir/lib/Dialect/GPU/Pipelines): the fused
// kernel (convert-attn-to-gpu; or, with naive=true, the reference lowering
// as parallel loops mapped to GPU blocks and threads by upstream passes;
// in both paths, the function's other linalg ops become such kernels too),
// bufferization of the host function, the
// device module to NVVM with bare-pointer kernel arguments, nvvm-attach-target
// and gpu-module-to-binary, the host side to LLVM (gpu-to-llvm; running it
// needs MLIR's CUDA runtime wrappers, which Debian does not ship: the
// binaries are launched from Python instead, see docs/GPU.md).
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/AttnToGPU/AttnToGPU.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/Pass.h"
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

namespace {
/// memref.copy (what bufferization inserts where a tensor must be copied:
/// tensor.insert_slice, tensor.concat, tensor.pad, a result that aliases an
/// argument or a constant) as linalg.copy, so that the copy becomes a kernel
/// like any other linalg op rather than a copy on the host; and no cf.assert
/// in linalg bodies (see below).
struct MemRefCopyToLinalgPass
    : PassWrapper<MemRefCopyToLinalgPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MemRefCopyToLinalgPass)
  StringRef getArgument() const final { return "attn-memref-copy-to-linalg"; }
  StringRef getDescription() const final {
    return "memref.copy as linalg.copy";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<linalg::LinalgDialect>();
  }
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      OpBuilder b(copy);
      linalg::CopyOp::create(b, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
    // FIXME: cf.assert in a linalg body (torch-mlir's index checks of
    // gathers) makes convert-parallel-loops-to-gpu leave the loop on the
    // host, silently; the checks are dropped here (an index out of range is
    // then an out-of-bounds read, not an abort). Upstream convert-gpu-to-nvvm
    // would lower them to __assertfail once inside a kernel.
    SmallVector<Operation *> asserts;
    getOperation().walk([&](linalg::LinalgOp op) {
      op->walk([&](Operation *inner) {
        if (inner->getName().getStringRef() == "cf.assert")
          asserts.push_back(inner);
      });
    });
    for (Operation *op : asserts)
      op->erase();
  }
};

/// Whether `op`, found in a host function between the loop nests, is a
/// computation a kernel can run: loads and stores of buffers, scalar
/// arithmetic and math, sequential loops and conditionals of such ops.
/// Allocations, views, constants and launches are the host's own (the
/// launch plan), and a loop holding a parallel loop is not wrapped.
static bool isWrappableComputation(Operation *op) {
  if (isa<arith::ConstantOp>(op))
    return false;
  WalkResult result = op->walk([](Operation *inner) {
    if (isa<memref::LoadOp, memref::StoreOp, affine::AffineApplyOp,
            affine::AffineMinOp, affine::AffineMaxOp, scf::ForOp, scf::IfOp,
            scf::WhileOp, scf::YieldOp, scf::ConditionOp>(inner))
      return WalkResult::advance();
    if (isa<arith::ArithDialect, math::MathDialect, index::IndexDialect>(
            inner->getDialect()))
      return WalkResult::advance();
    return WalkResult::interrupt();
  });
  return !result.wasInterrupted();
}

/// What convert-linalg-to-parallel-loops and the canonicalizer leave outside
/// every scf.parallel: a linalg op of one element, whose unit-trip loops the
/// canonicalizer folds away (the decode step's `past_len + arange(1)`, the
/// RMSNorm of its single token: the reduction's scf.for alone), or of rank 0
/// become loads, arithmetic and stores in the host function, where no
/// kernel computes them (on the GPU, the host cannot even address those
/// buffers). Each maximal run of such ops, with constants interleaved, whose
/// values are used only inside the run, is wrapped in a one-iteration
/// scf.parallel: a kernel of one thread. A run with a value used later (a
/// scalar read on the host for a kernel) stays, for attnfuse-run to report.
struct WrapHostComputationsPass
    : PassWrapper<WrapHostComputationsPass, OperationPass<func::FuncOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(WrapHostComputationsPass)
  StringRef getArgument() const final { return "attn-wrap-host-computations"; }
  StringRef getDescription() const final {
    return "computations left between the parallel loops as one-iteration "
           "scf.parallel loops";
  }
  void getDependentDialects(DialectRegistry &registry) const override {
    registry.insert<scf::SCFDialect, arith::ArithDialect>();
  }
  void runOnOperation() override {
    for (Block &block : getOperation().getBody()) {
      SmallVector<SmallVector<Operation *>> runs(1);
      for (Operation &op : block) {
        if (isWrappableComputation(&op))
          runs.back().push_back(&op);
        else if (!isa<arith::ConstantOp>(op) && !runs.back().empty())
          runs.emplace_back();
      }
      for (ArrayRef<Operation *> run : runs)
        if (!run.empty())
          wrap(block, run);
    }
  }

  static void wrap(Block &block, ArrayRef<Operation *> run) {
    llvm::SmallPtrSet<Operation *, 16> inRun(run.begin(), run.end());
    for (Operation *op : run)
      for (Operation *user : op->getUsers())
        if (!inRun.contains(block.findAncestorOpInBlock(*user)))
          return;
    // After the run's last op: whatever the run uses (constants between its
    // ops included) is defined before.
    OpBuilder b(run.back()->getContext());
    b.setInsertionPointAfter(run.back());
    Location loc = run.front()->getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                        ValueRange{one}, ValueRange{one});
    Operation *terminator = loop.getBody()->getTerminator();
    for (Operation *op : run)
      op->moveBefore(terminator);
  }
};
} // namespace

/// The linalg ops left on buffers in the host functions (the naive path's
/// whole reference lowering; after convert-attn-to-gpu, what surrounds the
/// attention ops: layout copies, embeddings, norms, MLPs, gathers) become
/// kernels, shared by both paths: parallel loops (reduction dimensions stay
/// sequential scf.for inside), each tiled 1x1x8x32 over its leading
/// dimensions and mapped innermost-first, so that a block's threads cover the
/// last two tiled dimensions (at most 256 threads, x along the contiguous
/// one) and its grid the tiles and outer dimensions (a fourth one loops
/// inside the kernel); each loop nest becomes one gpu.launch, then a
/// gpu.func. Kernels already written as gpu.func (convert-attn-to-gpu's) are
/// left as they are.
static void addLinalgKernels(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(std::make_unique<MemRefCopyToLinalgPass>());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToParallelLoopsPass());
  pm.addNestedPass<func::FuncOp>(createParallelLoopTilingPass({1, 1, 8, 32}));
  // Drops the unit-trip dimensions of the tiled loops before mapping.
  pm.addPass(createCanonicalizerPass());
  // What that leaves outside the loops (one-element ops) as one-thread
  // kernels.
  pm.addNestedPass<func::FuncOp>(std::make_unique<WrapHostComputationsPass>());
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

/// The naive kernels: the reference lowering of the attention ops, then
/// the whole function as linalg kernels (addLinalgKernels).
static void addNaiveKernels(OpPassManager &pm) {
  pm.addPass(attnfuse::createConvertAttnToLinalg());
  pm.addPass(attnfuse::attn::createAttnDecomposeAggregates());
  pm.addPass(createCanonicalizerPass());
  addBufferization(pm);
  addLinalgKernels(pm);
}

namespace {
/// Refuses a chip attnfuse cannot compile for (getUnsupportedChipReason: no
/// chip name, older than the toolkit targets, unknown to NVPTX, or newer
/// than the features' PTX ISA) with an error at the module, before any pass
/// makes code for it (NVPTX would abort the process).
struct CheckChipPass
    : PassWrapper<CheckChipPass, OperationPass<ModuleOp>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(CheckChipPass)
  CheckChipPass(std::string chip, std::string features)
      : chip(std::move(chip)), features(std::move(features)) {}
  StringRef getArgument() const final { return "attn-check-gpu-chip"; }
  StringRef getDescription() const final {
    return "refuse a chip attnfuse cannot compile for";
  }
  void runOnOperation() override {
    if (std::string why = attnfuse::getUnsupportedChipReason(chip, features);
        !why.empty()) {
      getOperation().emitError("attn-lower-to-nvvm-pipeline: chip ") << why;
      signalPassFailure();
    }
  }
  std::string chip, features;
};
} // namespace

void attnfuse::buildAttnGPUKernelsPipeline(OpPassManager &pm,
                                           const GPUPipelineOptions &options) {
  pm.addPass(std::make_unique<CheckChipPass>(options.chip, options.features));
  // TOSA graphs to linalg, then unfused chains become attn.attention, as in
  // the CPU pipeline (in both paths: the naive kernels compute the same
  // raised op).
  buildTosaToLinalgPipeline(pm);
  attn::AttnRaiseAttentionOptions raise;
  raise.report = options.raiseReport;
  pm.addPass(attn::createAttnRaiseAttention(raise));
  // Runtime checks first: the fusion below sizes views by the facts they
  // check.
  pm.addPass(attn::createAttnHoistRuntimeChecks());
  pm.addPass(createLinalgElementwiseOpFusionPass());
  pm.addPass(createCanonicalizerPass());

  if (options.naive) {
    addNaiveKernels(pm);
    return;
  }

  // The fused kernels and their launches. The forward kernels take key
  // lengths and paged K/V; packed sequences and the backward's key lengths
  // become a keep mask first.
  pm.addPass(attn::createAttnExpandInferenceOperands(
      {/*keepForwardCacheOperands=*/true}));
  pm.addPass(createConvertAttnToGPUPass(options.getKernelOptions()));
  pm.addPass(createCanonicalizerPass());

  addBufferization(pm);
  // Whatever the function computes besides the attention ops (layout glue
  // of the raising, whole models' embeddings, norms, MLPs) runs on the GPU
  // too, as the naive path's kernels.
  addLinalgKernels(pm);
}

void attnfuse::buildAttnGPUBinaryPipeline(OpPassManager &pm,
                                          const GPUPipelineOptions &options) {
  // Device code to NVVM (nvgpu: ldmatrix, cp.async of the mma.sync family).
  pm.addNestedPass<gpu::GPUModuleOp>(createConvertNVGPUToNVVMPass());
  // math.fpowi as multiplications (constant exponents: torch-mlir's
  // x.pow(2) of RMSNorm, x.pow(3) of gelu_new) or math.powf (others).
  // convert-gpu-to-nvvm would call libdevice's __nv_powif(float, i32) /
  // __nv_powi(double, i32) declared with the op's own exponent type: with
  // torch-mlir's i64 exponent the call and the callee disagree on where the
  // exponent is (ptxas passes it in R6:R7, __nv_powif reads R5), so the
  // power is taken to whatever R5 holds.
  math::MathExpandOpsPassOptions expandPowI;
  expandPowI.opMnemonics = {"fpowi"};
  pm.addNestedPass<gpu::GPUModuleOp>(
      math::createMathExpandOpsPass(expandPowI));
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
  pm.addPass(attn::createAttnLowerDynamicExpandShapes());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  // The tensor maps of TMA kernels (nvgpu.tma.create.descriptor): calls of
  // the CUDA runtime wrappers' mgpuTensorMapEncodeTiledMemref.
  pm.addPass(createConvertNVGPUToNVVMPass());
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
