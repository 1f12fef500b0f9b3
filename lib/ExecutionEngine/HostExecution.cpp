//===- HostExecution.cpp - JIT execution of lowered modules on the host ---===//
#include "attnfuse/ExecutionEngine/HostExecution.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/TargetSelect.h"

#include <cstring>
#include <mutex>

using namespace mlir;

namespace {
/// An unranked memref descriptor: the rank, then a pointer to the ranked one.
struct UnrankedDescriptor {
  int64_t rank;
  int64_t *ranked;
};

/// MLIR's C runner utility `memrefCopy` (what memref.copy of strided memrefs
/// lowers to): copies `src` into `dst` element by element, both strided.
void memrefCopy(int64_t elementSize, UnrankedDescriptor *src,
                UnrankedDescriptor *dst) {
  int64_t rank = src->rank;
  const int64_t *s = src->ranked, *d = dst->ranked;
  const char *from = reinterpret_cast<const char *>(s[1]);
  char *to = reinterpret_cast<char *>(d[1]);
  int64_t n = 1;
  for (int64_t i = 0; i < rank; ++i)
    n *= s[3 + i];
  for (int64_t e = 0; e < n; ++e) {
    int64_t fromOffset = s[2], toOffset = d[2];
    for (int64_t i = rank - 1, rest = e; i >= 0; --i) {
      int64_t index = rest % s[3 + i];
      rest /= s[3 + i];
      fromOffset += index * s[3 + rank + i];
      toOffset += index * d[3 + rank + i];
    }
    std::memcpy(to + toOffset * elementSize, from + fromOffset * elementSize,
                elementSize);
  }
}
} // namespace

llvm::Expected<std::unique_ptr<ExecutionEngine>>
attnfuse::createHostExecutionEngine(ModuleOp module) {
  static std::once_flag nativeTarget;
  std::call_once(nativeTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  ExecutionEngineOptions options;
  std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0,
                                /*targetMachine=*/nullptr);
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Default;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      ExecutionEngine::create(module, options);
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    symbols[interner("memrefCopy")] = {
        llvm::orc::ExecutorAddr::fromPtr(&memrefCopy),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  return engine;
}
