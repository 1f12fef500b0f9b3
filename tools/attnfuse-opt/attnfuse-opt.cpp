//===- attnfuse-opt.cpp - mlir-opt with attnfuse's dialects and passes ----===//
#include "attnfuse/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"
#ifndef ATTNFUSE_MINIMAL_REGISTRATION
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/GPU/GPUToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/NVVM/NVVMToLLVMIRTranslation.h"
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
  // gpu-module-to-binary translates the device modules to LLVM IR (as
  // mlir-opt registers them; convert-attn-to-gpu also asks for them, the
  // naive GPU pipeline does not run it).
  mlir::registerBuiltinDialectTranslation(registry);
  mlir::registerLLVMDialectTranslation(registry);
  mlir::registerGPUDialectTranslation(registry);
  mlir::registerNVVMDialectTranslation(registry);
#endif
  attnfuse::registerAllPasses();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "attnfuse optimizer driver\n", registry));
}
