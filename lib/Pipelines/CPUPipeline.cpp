//===- CPUPipeline.cpp - attn-lower-to-cpu-pipeline -----------------------===//
#include "attnfuse/Pipelines/Pipelines.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Conversion/TosaToLinalg/TosaToLinalg.h"
#include "mlir/Dialect/Arith/Transforms/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void attnfuse::buildTosaToLinalgPipeline(OpPassManager &pm) {
  pm.addNestedPass<func::FuncOp>(tosa::createTosaToLinalgNamed());
  pm.addNestedPass<func::FuncOp>(tosa::createTosaToLinalg());
  pm.addNestedPass<func::FuncOp>(createTosaToArithPass());
  pm.addNestedPass<func::FuncOp>(createTosaToTensorPass());
}

void attnfuse::buildAttnLowerToCPUPipeline(OpPassManager &pm,
                                           const CPUPipelineOptions &options) {
  // TOSA graphs: to linalg on tensors, in both pipelines.
  buildTosaToLinalgPipeline(pm);

  // Attention: the naive pipeline materializes the reference computation;
  // attnfuse's pipeline emits the tiled FlashAttention algorithm.
  if (options.naive) {
    pm.addPass(createConvertAttnToLinalg());
  } else {
    // Unfused attention chains become attn.attention first; casts the raising
    // leaves around the op fuse and fold away.
    attn::AttnRaiseAttentionOptions raise;
    raise.report = options.raiseReport;
    pm.addPass(attn::createAttnRaiseAttention(raise));
    // Runtime checks first: the fusion below sizes views by the facts they
    // check.
    pm.addPass(attn::createAttnHoistRuntimeChecks());
    pm.addPass(createLinalgElementwiseOpFusionPass());
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createConvertAttnToSCF(
        ConvertAttnToSCFOptions{options.blockQ, options.blockK}));
  }
  // Aggregates the raising did not absorb (or the naive pipeline keeps).
  pm.addPass(attn::createAttnDecomposeAggregates());
  pm.addPass(createCanonicalizerPass());

  // Tensors to buffers, with identity layouts at function boundaries.
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = true;
  // The online-softmax loop yields new row statistics and accumulators.
  bufferize.allowReturnAllocsFromLoops = true;
  bufferize.functionBoundaryTypeConversion =
      bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  bufferization::buildBufferDeallocationPipeline(pm);
  pm.addPass(createConvertBufferizationToMemRefPass());

  // Loops (the parallel ones run sequentially on the host), then LLVM.
  pm.addPass(createForallToForLoopPass());
  pm.addNestedPass<func::FuncOp>(createConvertLinalgToLoopsPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(attn::createAttnLowerDynamicExpandShapes());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  arith::ArithExpandOpsPassOptions expand;
  expand.includeBf16 = true;
  pm.addPass(arith::createArithExpandOpsPass(expand));
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void attnfuse::registerAttnFusePipelines() {
  PassPipelineRegistration<CPUPipelineOptions>(
      "attn-lower-to-cpu-pipeline",
      "Lower attn and upstream tensor-level IR to the LLVM dialect for the "
      "host CPU (the pipeline attnfuse-run executes)",
      buildAttnLowerToCPUPipeline);
}
