//===- HostExecution.cpp - JIT execution of lowered modules on the host ---===//
#include "attnfuse/ExecutionEngine/HostExecution.h"
#include "attnfuse/ExecutionEngine/FloatBuiltins.h"

#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/TargetSelect.h"

#include <csetjmp>
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

/// Where `abort` of the JIT-compiled code returns to (invokeHostFunction).
static thread_local std::jmp_buf *abortTarget = nullptr;

/// `abort` of the JIT-compiled code (what a failed cf.assert calls).
[[noreturn]] static void jitAbort() {
  if (abortTarget)
    std::longjmp(*abortTarget, 1);
  std::abort();
}

/// Calls `fn(arguments)`; false if the code called `abort`. Only trivially
/// destructible objects live in this frame, so longjmp may leave it.
static bool callCatchingAbort(void (*fn)(void **), void **arguments) {
  std::jmp_buf target;
  std::jmp_buf *outer = abortTarget;
  abortTarget = &target;
  if (setjmp(target)) {
    abortTarget = outer;
    return false;
  }
  fn(arguments);
  abortTarget = outer;
  return true;
}

llvm::Error
attnfuse::invokeHostFunction(ExecutionEngine &engine, StringRef function,
                             llvm::MutableArrayRef<void *> arguments) {
  // Global constructors first (what invokePacked does).
  engine.initialize();
  llvm::Expected<void (*)(void **)> fn = engine.lookupPacked(function);
  if (!fn)
    return fn.takeError();
  if (!callCatchingAbort(*fn, arguments.data()))
    return llvm::createStringError(
        "@" + function.str() +
        " aborted: the program called abort (a cf.assert that failed; its "
        "message is on standard output)");
  return llvm::Error::success();
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

std::string attnfuse::resolveJitCpu(const HostJitOptions &options) {
  if (!options.cpu.empty())
    return options.cpu;
  if (const char *cpu = std::getenv(kJitCpuVariable); cpu && *cpu)
    return cpu;
  return "host";
}

/// The target machine of the JIT for `cpu` ("host" or a CPU name of the
/// host's architecture).
static llvm::Expected<std::unique_ptr<llvm::TargetMachine>>
createJitTargetMachine(StringRef cpu) {
  llvm::Expected<llvm::orc::JITTargetMachineBuilder> builder =
      llvm::orc::JITTargetMachineBuilder::detectHost();
  if (!builder)
    return builder.takeError();
  if (cpu != "host") {
    const llvm::Triple &triple = builder->getTargetTriple();
    std::string error;
    const llvm::Target *target =
        llvm::TargetRegistry::lookupTarget(triple, error);
    if (!target)
      return llvm::createStringError(error);
    // The target's table of CPUs (asked of its generic subtarget: creating
    // one for an unknown CPU prints a warning).
    std::unique_ptr<llvm::MCSubtargetInfo> subtarget(
        target->createMCSubtargetInfo(triple, "", ""));
    if (!subtarget || !subtarget->isCPUStringValid(cpu))
      return llvm::createStringError(
          "unknown JIT CPU '" + cpu.str() + "' for " + triple.str() +
          " (expected 'host' or a CPU name of `llc -mcpu=help`, e.g. "
          "'x86-64'; set by " +
          std::string(attnfuse::kJitCpuVariable) + " or the caller)");
    // The CPU's own features, none of the host's.
    builder->setCPU(cpu.str());
    builder->setFeatures("");
  }
  builder->setCodeGenOptLevel(llvm::CodeGenOptLevel::Default);
  return builder->createTargetMachine();
}

llvm::Expected<std::unique_ptr<ExecutionEngine>>
attnfuse::createHostExecutionEngine(ModuleOp module,
                                    const HostJitOptions &jitOptions) {
  static std::once_flag nativeTarget;
  std::call_once(nativeTarget, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
  });
  llvm::Expected<std::unique_ptr<llvm::TargetMachine>> targetMachine =
      createJitTargetMachine(resolveJitCpu(jitOptions));
  if (!targetMachine)
    return targetMachine.takeError();
  ExecutionEngineOptions options;
  // The engine owns the target machine while it optimizes and compiles.
  std::function<llvm::Error(llvm::Module *)> transformer =
      makeOptimizingTransformer(/*optLevel=*/2, /*sizeLevel=*/0,
                                targetMachine->get());
  options.transformer = transformer;
  options.jitCodeGenOptLevel = llvm::CodeGenOptLevel::Default;
  options.enableObjectDump = jitOptions.keepObject;
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      ExecutionEngine::create(module, options, std::move(*targetMachine));
  if (!engine)
    return engine.takeError();
  (*engine)->registerSymbols([](llvm::orc::MangleAndInterner interner) {
    llvm::orc::SymbolMap symbols;
    auto add = [&](StringRef name, void *address) {
      symbols[interner(name)] = {llvm::orc::ExecutorAddr::fromPtr(address),
                                 llvm::JITSymbolFlags::Exported};
    };
    add("memrefCopy", reinterpret_cast<void *>(&memrefCopy));
    // memref.alloc: an allocation that fails is reported (the bad-alloc
    // handler of the process; attnfuse-run's exits with status 2), never a
    // null pointer the code would write through.
    add("malloc", reinterpret_cast<void *>(&checkedMalloc));
    add("aligned_alloc", reinterpret_cast<void *>(&checkedAlignedAlloc));
    add("abort", reinterpret_cast<void *>(&jitAbort));
    forEachFloatBuiltin(add);
    return symbols;
  });
  return engine;
}
