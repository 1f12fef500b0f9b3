//===- embed-attnfuse.cpp - a downstream tool running attnfuse ------------===//
//
// Usage: embed-attnfuse [--attention-only | --raise-with-patterns] [--naive]
//                       <input.mlir>
// Parses the input with attnfuse's dialects registered in the tool's own
// context and runs attnfuse's CPU pipeline (buildAttnLowerToCPUPipeline), or
// with --attention-only only the tiled attention lowering
// (createConvertAttnToSCF), or with --raise-with-patterns the raising one
// chain at a time from the tool's own rewrite pattern (matchAttentionChain and
// rewriteAttentionChain under the greedy driver's PatternRewriter), then
// prints the IR.
//
//===----------------------------------------------------------------------===//
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Transforms.h"
#include "attnfuse/InitAll.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>

namespace {
/// The embedding compiler's own pattern: attnfuse's per-chain raising under
/// whatever rewriter drives it.
struct RaiseAttentionPattern
    : mlir::OpInterfaceRewritePattern<mlir::linalg::LinalgOp> {
  using OpInterfaceRewritePattern::OpInterfaceRewritePattern;
  mlir::LogicalResult
  matchAndRewrite(mlir::linalg::LinalgOp op,
                  mlir::PatternRewriter &rewriter) const override {
    attnfuse::attn::RaiseFailure why;
    mlir::FailureOr<attnfuse::attn::AttentionChainMatch> match =
        attnfuse::attn::matchAttentionChain(op, why);
    if (mlir::failed(match))
      return rewriter.notifyMatchFailure(op, why.message);
    return mlir::success(
        mlir::succeeded(attnfuse::attn::rewriteAttentionChain(rewriter, *match)));
  }
};
} // namespace

int main(int argc, char **argv) {
  bool attentionOnly = false, naive = false, raiseWithPatterns = false;
  const char *input = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--attention-only"))
      attentionOnly = true;
    else if (!std::strcmp(argv[i], "--naive"))
      naive = true;
    else if (!std::strcmp(argv[i], "--raise-with-patterns"))
      raiseWithPatterns = true;
    else if (!input && argv[i][0] != '-')
      input = argv[i];
    else {
      llvm::errs() << "usage: embed-attnfuse [--attention-only | "
                      "--raise-with-patterns] [--naive] <input.mlir>\n";
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

  if (raiseWithPatterns) {
    // The dialects of the IR the raising writes (a pass would declare them
    // as its dependent dialects).
    context.loadDialect<attnfuse::attn::AttnDialect, mlir::linalg::LinalgDialect,
                        mlir::tensor::TensorDialect, mlir::arith::ArithDialect>();
    mlir::RewritePatternSet patterns(&context);
    patterns.add<RaiseAttentionPattern>(&context);
    if (mlir::failed(mlir::applyPatternsGreedily(*module, std::move(patterns))))
      return 1;
    module->print(llvm::outs());
    llvm::outs() << "\n";
    return 0;
  }

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
