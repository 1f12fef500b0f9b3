//===- embed-attnfuse.cpp - a downstream tool running attnfuse ------------===//
//
// Usage: embed-attnfuse [--attention-only] [--naive] <input.mlir>
// Parses the input with attnfuse's dialects registered in the tool's own
// context and runs attnfuse's CPU pipeline (buildAttnLowerToCPUPipeline), or
// with --attention-only only the tiled attention lowering
// (createConvertAttnToSCF), then prints the IR.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/InitAll.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

int main(int argc, char **argv) {
  bool attentionOnly = false, naive = false;
  const char *input = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--attention-only"))
      attentionOnly = true;
    else if (!std::strcmp(argv[i], "--naive"))
      naive = true;
    else if (!input && argv[i][0] != '-')
      input = argv[i];
    else {
      llvm::errs() << "usage: embed-attnfuse [--attention-only] [--naive] "
                      "<input.mlir>\n";
      return 2;
    }
  }
  if (!input) {
    llvm::errs() << "embed-attnfuse: no input file\n";
    return 2;
  }

  // The embedding compiler's registry, plus attnfuse's dialects.
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  attnfuse::registerAllDialects(registry);
  mlir::MLIRContext context(registry);

  llvm::SourceMgr sourceMgr;
  mlir::SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(input, sourceMgr, &context);
  if (!module)
    return 1;

  mlir::PassManager pm(&context);
  if (attentionOnly) {
    pm.addPass(attnfuse::createConvertAttnToSCF(
        attnfuse::ConvertAttnToSCFOptions{/*blockQ=*/32, /*blockK=*/16}));
  } else {
    attnfuse::CPUPipelineOptions options;
    options.naive = naive;
    attnfuse::buildAttnLowerToCPUPipeline(pm, options);
  }
  if (mlir::failed(pm.run(*module)))
    return 1;
  module->print(llvm::outs());
  llvm::outs() << "\n";
  return 0;
}
