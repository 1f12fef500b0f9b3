//===- attnfuse-opt.cpp - mlir-opt with attnfuse's dialects and passes ----===//
#include "attnfuse/InitAll.h"
#include "attnfuse/Support/NestingDepth.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
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
  // Stack dumps on a crash, as MlirOptMain(argc, argv, ...) sets them up.
  llvm::InitLLVM initLLVM(argc, argv);
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
  // MlirOptMain(argc, argv, ...) split in two, to check the input's nesting
  // (attnfuse/Support/NestingDepth.h) before the parser recurses into it.
  auto [inputFilename, outputFilename] = mlir::registerAndParseCLIOptions(
      argc, argv, "attnfuse optimizer driver\n", registry);
  mlir::MlirOptMainConfig config = mlir::MlirOptMainConfig::createFromCLOptions();
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (std::optional<size_t> at =
          attnfuse::findExcessiveNesting(file->getBuffer())) {
    llvm::SourceMgr sourceMgr;
    const char *where = file->getBufferStart() + *at;
    sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
    sourceMgr.PrintMessage(
        llvm::SMLoc::getFromPointer(where), llvm::SourceMgr::DK_Error,
        "brackets nest deeper than " +
            llvm::Twine(attnfuse::kMaxNestingDepth) +
            " levels (attnfuse's limit, which keeps the parser within the "
            "stack)");
    return EXIT_FAILURE;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      mlir::openOutputFile(outputFilename, &errorMessage);
  if (!output) {
    llvm::errs() << errorMessage << "\n";
    return EXIT_FAILURE;
  }
  if (failed(mlir::MlirOptMain(output->os(), std::move(file), registry,
                               config)))
    return EXIT_FAILURE;
  output->keep();
  return EXIT_SUCCESS;
}
