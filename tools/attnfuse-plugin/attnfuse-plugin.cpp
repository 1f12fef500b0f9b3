//===- attnfuse-plugin.cpp - attnfuse as an mlir-opt plugin ---------------===//
//
// Loads attnfuse into any MLIR 22 opt tool linked against libMLIR.so:
//   mlir-opt --load-dialect-plugin=AttnFusePlugin.so \
//            --load-pass-plugin=AttnFusePlugin.so --convert-attn-to-scf in.mlir
// The dialect entry point registers the attn dialect; the pass entry point
// registers attnfuse's passes and pipelines.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/InitAll.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/Plugins/DialectPlugin.h"
#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

static void registerDialects(mlir::DialectRegistry *registry) {
  attnfuse::registerAllDialects(*registry);
}

static void registerPasses() { attnfuse::registerAllPasses(); }

extern "C" LLVM_ATTRIBUTE_WEAK mlir::DialectPluginLibraryInfo
mlirGetDialectPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "attnfuse", LLVM_VERSION_STRING,
          registerDialects};
}

extern "C" LLVM_ATTRIBUTE_WEAK mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "attnfuse", LLVM_VERSION_STRING,
          registerPasses};
}
