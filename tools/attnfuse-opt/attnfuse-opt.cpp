//===- attnfuse-opt.cpp - mlir-opt with attnfuse's dialects and passes ----===//
#include "attnfuse/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#ifndef ATTNFUSE_MINIMAL_REGISTRATION
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#endif

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
#ifdef ATTNFUSE_MINIMAL_REGISTRATION
  // The self-contained bundle: what attnfuse's pipelines use, nothing more.
  mlir::registerTransformsPasses();
  attnfuse::registerPipelineDialects(registry);
#else
  mlir::registerAllPasses();
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  attnfuse::registerAllDialects(registry);
#endif
  attnfuse::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attnfuse optimizer driver\n", registry));
}
