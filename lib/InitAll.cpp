//===- InitAll.cpp - register every attnfuse dialect and pass -------------===//
#include "attnfuse/InitAll.h"

#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/Pipelines/Pipelines.h"

void attnfuse::registerAllDialects(mlir::DialectRegistry &registry) {
  registry.insert<attn::AttnDialect>();
}

void attnfuse::registerAllPasses() {
  registerAttnFuseConversionPasses();
  attn::registerAttnTransformsPasses();
  registerAttnFusePipelines();
  registerAttnFuseGPUPipeline();
}
