//===- HostExecution.cpp - JIT execution of lowered modules on the host ---===//
#include "attnfuse/ExecutionEngine/HostExecution.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/TargetSelect.h"

#include <cstdlib>
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
/// lowers to).
void memrefCopy(int64_t elementSize, UnrankedDescriptor *src,
                UnrankedDescriptor *dst) {
  attnfuse::copyMemref(src->ranked, dst->ranked, src->rank, elementSize);
}
} // namespace

SmallVector<int64_t> attnfuse::describeDenseMemref(void *data,
                                                  ArrayRef<int64_t> shape) {
  int64_t rank = shape.size();
  SmallVector<int64_t> words(getMemrefDescriptorWords(rank));
  words[0] = words[1] = reinterpret_cast<intptr_t>(data);
  words[2] = 0;
  int64_t stride = 1;
  for (int64_t i = rank - 1; i >= 0; --i) {
    words[3 + i] = shape[i];
    words[3 + rank + i] = stride;
    stride *= shape[i];
  }
  return words;
}

void attnfuse::copyMemref(const int64_t *src, const int64_t *dst, int64_t rank,
                          size_t elementBytes) {
  // Descriptor words: allocated, aligned, offset, sizes[rank], strides[rank].
  const char *from = reinterpret_cast<const char *>(src[1]);
  char *to = reinterpret_cast<char *>(dst[1]);
  const int64_t *sizes = src + 3;
  int64_t n = 1;
  for (int64_t i = 0; i < rank; ++i)
    n *= sizes[i];
  for (int64_t e = 0; e < n; ++e) {
    int64_t fromOffset = src[2], toOffset = dst[2];
    for (int64_t i = rank - 1, rest = e; i >= 0; --i) {
      int64_t index = rest % sizes[i];
      rest /= sizes[i];
      fromOffset += index * src[3 + rank + i];
      toOffset += index * dst[3 + rank + i];
    }
    std::memcpy(to + toOffset * elementBytes, from + fromOffset * elementBytes,
                elementBytes);
  }
}

static void *checkedMalloc(size_t size) {
  void *p = std::malloc(size);
  if (!p && size != 0)
    llvm::report_bad_alloc_error("a buffer of the JIT-compiled code");
  return p;
}

static void *checkedAlignedAlloc(size_t alignment, size_t size) {
  void *p = std::aligned_alloc(alignment, size);
  if (!p && size != 0)
    llvm::report_bad_alloc_error("a buffer of the JIT-compiled code");
  return p;
}

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
    // memref.alloc: an allocation that fails is reported (the bad-alloc
    // handler of the process; attnfuse-run's exits with status 2), never a
    // null pointer the code would write through.
    symbols[interner("malloc")] = {
        llvm::orc::ExecutorAddr::fromPtr(&checkedMalloc),
        llvm::JITSymbolFlags::Exported};
    symbols[interner("aligned_alloc")] = {
        llvm::orc::ExecutorAddr::fromPtr(&checkedAlignedAlloc),
        llvm::JITSymbolFlags::Exported};
    return symbols;
  });
  return engine;
}
