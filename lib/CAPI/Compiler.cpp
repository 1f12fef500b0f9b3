//===- Compiler.cpp - C API: compile and run attnfuse modules -------------===//
//
// Each compilation owns an MLIRContext with every upstream dialect, attn and
// the LLVM IR translations, collects every diagnostic through a handler, runs
// the pipeline and, when asked, JIT-compiles the entry function with MLIR's
// ExecutionEngine. Calls go through the C interface (llvm.emit_c_interface):
// memref descriptors built over dense buffers.
//
// Note: tools/attnfuse-run has its own runner (tools/attnfuse-run/Runner.cpp);
// the two should share a library once that tool has settled.
//
//===----------------------------------------------------------------------===//
#include "attnfuse-c/Compiler.h"
#include "attnfuse/Support/NestingDepth.h"

#include "attnfuse/ExecutionEngine/GPUKernels.h"
#include "attnfuse/ExecutionEngine/HostExecution.h"
#include "attnfuse/InitAll.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Transforms/Passes.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ExecutionEngine/Orc/Mangling.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

using namespace mlir;

namespace {

struct Options {
  AttnfuseTarget target = AttnfuseTargetCPU;
  std::string chip;
  /// attn-lower-to-nvvm-pipeline's options for the CUDA target.
  std::string kernelOptions;
  std::string pipeline;
  bool naive = false;
  int64_t blockQ = 64;
  int64_t blockK = 64;
  std::string entry;
  std::string sourceName = "<source>";
  /// Values a setter refused, by option ("target", "pipeline", ...): each is
  /// an error of the compilations made with these options. Setting the
  /// option again to a valid value drops its entry.
  std::map<std::string, std::string> invalid;
};

struct StoredDiagnostic {
  AttnfuseDiagnosticSeverity severity;
  std::string location;
  std::string message;
};

/// The tensor-level type of one argument or result of the entry function.
struct ValueType {
  AttnfuseElementType elementType;
  std::vector<int64_t> shape; // -1: dynamic
  bool scalar;
};

struct Compilation {
  bool succeeded = false;
  std::string ir;
  std::vector<attnfuse::GPUKernel> kernels;
  /// Per kernel, its tensor maps as JSON (attnfuse::tensorMapsToJSON).
  std::vector<std::string> tensorMapsJSON;
  std::vector<StoredDiagnostic> diagnostics;
  std::vector<ValueType> inputs, results;
  std::string entry;
  /// Whether returned buffers are freshly allocated (attnfuse's pipeline
  /// makes the caller own them); a custom pipeline gives no such guarantee.
  bool ownsResults = false;
  // The engine is destroyed before the context (reverse declaration order).
  std::unique_ptr<MLIRContext> context;
  std::unique_ptr<ExecutionEngine> engine;
};

struct Tensor {
  AttnfuseElementType elementType;
  std::vector<int64_t> shape;
  std::vector<uint64_t> storage; // 8-byte aligned
};

struct Run {
  std::string error;
  std::vector<Tensor> results;
};

/// The objects of type T that the API created and has not destroyed. Every
/// entry point looks its handle up here before it touches the object, so a
/// null handle, a destroyed one or one of another type gets the documented
/// empty value (Compiler.h), never a dereference of whatever it points to.
template <typename T>
class LiveObjects {
public:
  /// Takes ownership of `object`; returns it.
  T *add(T *object) {
    std::lock_guard<std::mutex> lock(mutex);
    objects.insert(object);
    return object;
  }
  /// The object `ptr` names, or null if it names none.
  T *lookup(const void *ptr) {
    if (!ptr)
      return nullptr;
    std::lock_guard<std::mutex> lock(mutex);
    return objects.count(ptr) ? static_cast<T *>(const_cast<void *>(ptr))
                              : nullptr;
  }
  /// Destroys the object `ptr` names, if any.
  void destroy(const void *ptr) {
    if (!ptr)
      return;
    {
      std::lock_guard<std::mutex> lock(mutex);
      if (!objects.erase(ptr))
        return;
    }
    delete static_cast<T *>(const_cast<void *>(ptr));
  }

private:
  std::mutex mutex;
  std::unordered_set<const void *> objects;
};

/// The live objects of type T. Never destroyed: a handle may be released
/// while the process exits (Python's finalization, an atexit handler), after
/// static destructors ran.
template <typename T>
LiveObjects<T> &live() {
  static auto *objects = new LiveObjects<T>();
  return *objects;
}

Options *unwrap(AttnfuseCompileOptions o) {
  return live<Options>().lookup(o.ptr);
}
Compilation *unwrap(AttnfuseCompilation c) {
  return live<Compilation>().lookup(c.ptr);
}
Run *unwrap(AttnfuseRun r) { return live<Run>().lookup(r.ptr); }

/// What the getters read for an invalid compilation handle: a compilation
/// that failed with no diagnostic, no IR, no kernels and no function.
const Compilation &getOrEmpty(AttnfuseCompilation c) {
  static const auto *empty = new Compilation();
  const Compilation *compilation = unwrap(c);
  return compilation ? *compilation : *empty;
}

/// A C string as a std::string; null data is the empty string (the caller
/// checks `isValid` first where null data with a length is an error).
std::string toString(MlirStringRef s) {
  return s.data ? std::string(s.data, s.length) : std::string();
}
/// False for a string with null data and a nonzero length.
bool isValid(MlirStringRef s) { return s.data || s.length == 0; }

/// Sets the string option `name` of `options` to `value`, or records why it
/// cannot (attnfuseCompile reports it).
void setString(AttnfuseCompileOptions options, const char *name,
               std::string Options::*field, MlirStringRef value) {
  Options *o = unwrap(options);
  if (!o)
    return;
  if (!isValid(value)) {
    o->invalid[name] = std::string("invalid ") + name +
                       ": a string with null data and length " +
                       std::to_string(value.length);
    return;
  }
  o->invalid.erase(name);
  o->*field = toString(value);
}
MlirStringRef toRef(const std::string &s) {
  return mlirStringRefCreate(s.data(), s.size());
}

std::optional<AttnfuseElementType> getElementType(Type type) {
  if (type.isF16())
    return AttnfuseElementTypeF16;
  if (type.isBF16())
    return AttnfuseElementTypeBF16;
  if (type.isF32())
    return AttnfuseElementTypeF32;
  if (type.isF64())
    return AttnfuseElementTypeF64;
  if (auto intType = dyn_cast<IntegerType>(type)) {
    if (intType.isUnsigned())
      return std::nullopt;
    switch (intType.getWidth()) {
    case 1:
      return AttnfuseElementTypeI1;
    case 8:
      return AttnfuseElementTypeI8;
    case 16:
      return AttnfuseElementTypeI16;
    case 32:
      return AttnfuseElementTypeI32;
    case 64:
      return AttnfuseElementTypeI64;
    }
  }
  return std::nullopt;
}

const char *getName(AttnfuseElementType type) {
  static const char *names[] = {"f16", "bf16", "f32", "f64", "i1",
                                "i8",  "i16",  "i32", "i64"};
  return static_cast<unsigned>(type) < 9 ? names[type] : "<invalid>";
}

std::string describe(AttnfuseElementType type, llvm::ArrayRef<int64_t> shape,
                     bool scalar) {
  if (scalar)
    return getName(type);
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += (d < 0 ? std::string("?") : std::to_string(d)) + "x";
  return s + getName(type) + ">";
}

/// Returns "file:line:col" for the first file location inside `loc`.
std::string formatLocation(Location loc) {
  std::string result;
  loc->walk([&](Location nested) {
    if (auto fileLoc = dyn_cast<FileLineColLoc>(nested)) {
      result = (fileLoc.getFilename().strref() + ":" +
                llvm::Twine(fileLoc.getLine()) + ":" +
                llvm::Twine(fileLoc.getColumn()))
                   .str();
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (result.empty() && !isa<UnknownLoc>(loc))
    llvm::raw_string_ostream(result) << loc;
  return result;
}

AttnfuseDiagnosticSeverity convert(DiagnosticSeverity severity) {
  switch (severity) {
  case DiagnosticSeverity::Error:
    return AttnfuseDiagnosticError;
  case DiagnosticSeverity::Warning:
    return AttnfuseDiagnosticWarning;
  case DiagnosticSeverity::Note:
    return AttnfuseDiagnosticNote;
  case DiagnosticSeverity::Remark:
    return AttnfuseDiagnosticRemark;
  }
  return AttnfuseDiagnosticError;
}

void registerPassesOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    // attnfuse's passes and MLIR's generic transforms (canonicalize, cse,
    // ...): what a textual attnfuse pipeline names.
    mlir::registerTransformsPasses();
    attnfuse::registerAllPasses();
  });
}


/// Reads the signature of `func` into `c`; false (with an error emitted) if
/// a type is not supported by the runner.
bool readSignature(func::FuncOp func, Compilation &c) {
  for (auto [i, type] : llvm::enumerate(func.getArgumentTypes())) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    std::optional<AttnfuseElementType> element = getElementType(
        tensorType ? tensorType.getElementType() : type);
    if (!element) {
      func.emitError() << "argument " << i << " of the entry function has type "
                       << type
                       << "; supported: ranked tensors and scalars of "
                          "f16, bf16, f32, f64, i1, i8, i16, i32, i64";
      return false;
    }
    c.inputs.push_back(
        {*element,
         tensorType ? std::vector<int64_t>(tensorType.getShape().begin(),
                                           tensorType.getShape().end())
                    : std::vector<int64_t>(),
         !tensorType});
    for (int64_t &d : c.inputs.back().shape)
      if (ShapedType::isDynamic(d))
        d = -1;
  }
  for (auto [i, type] : llvm::enumerate(func.getResultTypes())) {
    auto tensorType = dyn_cast<RankedTensorType>(type);
    std::optional<AttnfuseElementType> element =
        tensorType ? getElementType(tensorType.getElementType())
                   : std::nullopt;
    if (!element) {
      func.emitError() << "result " << i << " of the entry function has type "
                       << type
                       << "; supported: ranked tensors of f16, bf16, f32, "
                          "f64, i1, i8, i16, i32, i64";
      return false;
    }
    c.results.push_back({*element,
                         std::vector<int64_t>(tensorType.getShape().begin(),
                                              tensorType.getShape().end()),
                         false});
    for (int64_t &d : c.results.back().shape)
      if (ShapedType::isDynamic(d))
        d = -1;
  }
  return true;
}

void compile(Compilation &c, llvm::StringRef source, const Options &options) {
  DialectRegistry registry;
  attnfuse::registerPipelineDialects(registry);
  // One thread: diagnostics then come in a deterministic order.
  c.context = std::make_unique<MLIRContext>(registry,
                                            MLIRContext::Threading::DISABLED);
  MLIRContext &ctx = *c.context;
  // Diagnostics carry their message and location, not a dump of the op.
  ctx.printOpOnDiagnostic(false);
  auto record = [&c](Diagnostic &diag) {
    c.diagnostics.push_back({convert(diag.getSeverity()),
                             formatLocation(diag.getLocation()), diag.str()});
    for (Diagnostic &note : diag.getNotes())
      c.diagnostics.push_back({AttnfuseDiagnosticNote,
                               formatLocation(note.getLocation()), note.str()});
  };
  ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
    record(diag);
    return success();
  });
  auto error = [&](const llvm::Twine &message) {
    c.diagnostics.push_back({AttnfuseDiagnosticError, "", message.str()});
  };

  // Deep nesting would overflow the parser's stack, and the caller's
  // process with it (attnfuse/Support/NestingDepth.h).
  if (std::optional<size_t> at = attnfuse::findExcessiveNesting(source)) {
    StringRef before = StringRef(source).take_front(*at);
    unsigned line = before.count('\n') + 1;
    size_t lineStart = before.rfind('\n');
    unsigned column =
        *at - (lineStart == StringRef::npos ? 0 : lineStart + 1) + 1;
    emitError(FileLineColLoc::get(&ctx, options.sourceName, line, column))
        << "brackets nest deeper than " << attnfuse::kMaxNestingDepth
        << " levels";
    return;
  }
  OwningOpRef<ModuleOp> module =
      parseSourceString<ModuleOp>(source, ParserConfig(&ctx),
                                  options.sourceName);
  if (!module)
    return;

  func::FuncOp func;
  if (!options.entry.empty()) {
    func = module->lookupSymbol<func::FuncOp>(options.entry);
    if (!func || func.isExternal()) {
      error("no function '" + options.entry + "' with a body in the module");
      return;
    }
    if (!readSignature(func, c))
      return;
    func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                  UnitAttr::get(&ctx));
  }

  if (options.pipeline.empty() && options.target == AttnfuseTargetCUDA) {
    attnfuse::GPUPipelineOptions pipelineOptions;
    if (!options.kernelOptions.empty()) {
      std::string message;
      llvm::raw_string_ostream os(message);
      if (failed(pipelineOptions.parseFromString(options.kernelOptions, os))) {
        error("invalid kernel options '" + options.kernelOptions + "': " +
              llvm::StringRef(message).trim().str());
        return;
      }
    }
    if (!options.chip.empty())
      pipelineOptions.chip = options.chip;
    FailureOr<std::vector<attnfuse::GPUKernel>> kernels =
        attnfuse::compileForCuda(*module, pipelineOptions);
    if (failed(kernels))
      return;
    c.kernels = std::move(*kernels);
  } else {
    PassManager pm(&ctx, ModuleOp::getOperationName(),
                   OpPassManager::Nesting::Implicit);
    if (options.pipeline.empty()) {
      attnfuse::CPUPipelineOptions pipelineOptions;
      pipelineOptions.naive = options.naive;
      pipelineOptions.blockQ = options.blockQ;
      pipelineOptions.blockK = options.blockK;
      attnfuse::buildAttnLowerToCPUPipeline(pm, pipelineOptions);
      c.ownsResults = true;
    } else {
      registerPassesOnce();
      std::string message;
      llvm::raw_string_ostream os(message);
      // An anchored pipeline `builtin.module(...)` is the same as its body
      // run on the module; any other text is a pass list run on the module.
      llvm::StringRef pipeline = llvm::StringRef(options.pipeline).trim();
      if (pipeline.starts_with("builtin.module(") && pipeline.ends_with(")"))
        pipeline = pipeline.drop_front(strlen("builtin.module(")).drop_back();
      if (failed(parsePassPipeline(pipeline, pm, os))) {
        // The parser's first line, without its "<buffer>:1:1: error: "
        // prefix.
        llvm::StringRef reason = llvm::StringRef(message).split('\n').first;
        size_t prefix = reason.find("error: ");
        if (prefix != llvm::StringRef::npos)
          reason = reason.drop_front(prefix + strlen("error: "));
        error("invalid pass pipeline '" + options.pipeline + "': " + reason);
        return;
      }
    }
    if (failed(pm.run(*module)))
      return;
    // (A pipeline of the caller's that makes cubins.)
    c.kernels = attnfuse::collectGPUKernels(*module);
  }

  llvm::raw_string_ostream(c.ir) << *module;
  for (const attnfuse::GPUKernel &kernel : c.kernels)
    c.tensorMapsJSON.push_back(attnfuse::tensorMapsToJSON(kernel.tensorMaps));

  if (!options.entry.empty()) {
    // Host code that launches kernels needs a GPU runtime the JIT does not
    // have (and translating gpu.binary for it crashed in embedBinary).
    Operation *gpuOp = nullptr;
    module->walk([&](Operation *op) {
      if (isa_and_nonnull<gpu::GPUDialect>(op->getDialect())) {
        gpuOp = op;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (gpuOp) {
      gpuOp->emitError() << "cannot JIT-compile '" << options.entry
                         << "' for the host CPU: the module holds GPU code ('"
                         << gpuOp->getName() << "')";
      return;
    }
    llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
        attnfuse::createHostExecutionEngine(*module);
    if (!engine) {
      error("cannot JIT-compile the module (is it lowered to the LLVM "
            "dialect?): " +
            llvm::toString(engine.takeError()));
      return;
    }
    c.engine = std::move(*engine);
    c.entry = options.entry;
  }
  c.succeeded = true;
}


int64_t getNumElements(llvm::ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

void run(const Compilation &c, llvm::ArrayRef<AttnfuseTensor> args, Run &r) {
  if (!c.engine) {
    r.error = "the compilation holds no executable function (set an entry "
              "and check that the compilation succeeded)";
    return;
  }
  if (args.size() != c.inputs.size()) {
    r.error = "'" + c.entry + "' takes " + std::to_string(c.inputs.size()) +
              " arguments, got " + std::to_string(args.size());
    return;
  }
  // Check, then copy the arguments: the compiled code may write them.
  std::vector<std::vector<uint64_t>> copies(args.size());
  for (auto [i, arg] : llvm::enumerate(args)) {
    const ValueType &want = c.inputs[i];
    intptr_t byteSize = attnfuseElementTypeGetByteSize(arg.elementType);
    bool rankOk = static_cast<size_t>(arg.rank) == want.shape.size() &&
                  (arg.rank == 0 || arg.shape);
    bool shapeOk = rankOk && byteSize != 0 && arg.elementType == want.elementType;
    for (intptr_t d = 0; shapeOk && d < arg.rank; ++d)
      shapeOk = arg.shape[d] >= 0 &&
                (want.shape[d] < 0 || want.shape[d] == arg.shape[d]);
    if (!shapeOk) {
      std::string got =
          byteSize == 0 ? std::string("an invalid element type")
          : arg.rank < 0 || (arg.rank > 0 && !arg.shape)
              ? std::string("an invalid shape")
              : describe(arg.elementType,
                         llvm::ArrayRef<int64_t>(arg.shape, arg.rank),
                         /*scalar=*/false);
      r.error = "argument " + std::to_string(i) + " of '" + c.entry +
                "' must be " + describe(want.elementType, want.shape, want.scalar) +
                ", got " + got;
      return;
    }
    // No buffer holds more bytes than an int64_t counts (a dynamic size
    // can be anything).
    int64_t bytes = byteSize;
    bool overflow = false;
    for (intptr_t d = 0; d < arg.rank && !overflow; ++d)
      overflow = llvm::MulOverflow(bytes, arg.shape[d], bytes);
    if (overflow) {
      r.error = "argument " + std::to_string(i) + " of '" + c.entry +
                "' has more bytes than a 64-bit integer counts";
      return;
    }
    if (bytes > 0 && !arg.data) {
      r.error = "argument " + std::to_string(i) + " has no data";
      return;
    }
    copies[i].resize((bytes + 7) / 8 + 1);
    if (bytes > 0)
      std::memcpy(copies[i].data(), arg.data, bytes);
  }

  // The C interface takes a pointer to the results (one descriptor, or a
  // struct of descriptors: all 8-byte words, no padding), then a pointer to
  // the descriptor of each memref argument and scalars by value;
  // invokeHostFunction takes the address of each of these.
  size_t resultWords = 0;
  for (const ValueType &result : c.results)
    resultWords += attnfuse::getMemrefDescriptorWords(result.shape.size());
  std::vector<int64_t> resultStorage(resultWords);
  void *resultsPtr = resultStorage.data();
  std::vector<llvm::SmallVector<int64_t>> descriptors(args.size());
  std::vector<void *> descriptorPtrs(args.size());
  llvm::SmallVector<void *> packed;
  if (resultWords)
    packed.push_back(&resultsPtr);
  for (auto [i, arg] : llvm::enumerate(args)) {
    if (c.inputs[i].scalar) {
      packed.push_back(copies[i].data());
      continue;
    }
    llvm::SmallVector<int64_t> &words = descriptors[i];
    words = attnfuse::describeDenseMemref(
        copies[i].data(), llvm::ArrayRef<int64_t>(arg.shape, arg.rank));
    descriptorPtrs[i] = words.data();
    packed.push_back(&descriptorPtrs[i]);
  }
  if (llvm::Error error =
          attnfuse::invokeHostFunction(*c.engine, "_mlir_ciface_" + c.entry,
                                       packed)) {
    r.error = llvm::toString(std::move(error));
    return;
  }

  // Copy the (possibly strided) results into dense tensors, then free the
  // buffers the function allocated (once each: results may alias).
  llvm::DenseSet<void *> allocations;
  const int64_t *words = resultStorage.data();
  for (auto [i, want] : llvm::enumerate(c.results)) {
    size_t rank = want.shape.size();
    const int64_t *sizes = words + 3;
    Tensor out{want.elementType, std::vector<int64_t>(sizes, sizes + rank),
               {}};
    size_t elementBytes = attnfuseElementTypeGetByteSize(want.elementType);
    int64_t n = getNumElements(out.shape);
    out.storage.resize((n * elementBytes + 7) / 8 + 1);
    attnfuse::copyMemref(
        words,
        attnfuse::describeDenseMemref(out.storage.data(), out.shape).data(),
        rank, elementBytes);
    if (c.ownsResults)
      allocations.insert(reinterpret_cast<void *>(words[0]));
    r.results.push_back(std::move(out));
    words += attnfuse::getMemrefDescriptorWords(rank);
  }
  for (void *allocation : allocations)
    std::free(allocation);
}

AttnfuseTensor toC(const ValueType &type) {
  return {type.elementType, static_cast<intptr_t>(type.shape.size()),
          type.shape.data(), nullptr};
}

} // namespace

//===----------------------------------------------------------------------===//
// C API
//===----------------------------------------------------------------------===//

intptr_t attnfuseElementTypeGetByteSize(AttnfuseElementType type) {
  switch (type) {
  case AttnfuseElementTypeF16:
  case AttnfuseElementTypeBF16:
  case AttnfuseElementTypeI16:
    return 2;
  case AttnfuseElementTypeF32:
  case AttnfuseElementTypeI32:
    return 4;
  case AttnfuseElementTypeF64:
  case AttnfuseElementTypeI64:
    return 8;
  case AttnfuseElementTypeI1:
  case AttnfuseElementTypeI8:
    return 1;
  }
  return 0;
}

AttnfuseCompileOptions attnfuseCompileOptionsCreate(void) {
  return {live<Options>().add(new Options())};
}
void attnfuseCompileOptionsDestroy(AttnfuseCompileOptions options) {
  live<Options>().destroy(options.ptr);
}
void attnfuseCompileOptionsSetPipeline(AttnfuseCompileOptions options,
                                       MlirStringRef pipeline) {
  setString(options, "pipeline", &Options::pipeline, pipeline);
}
void attnfuseCompileOptionsSetNaive(AttnfuseCompileOptions options,
                                    bool naive) {
  if (Options *o = unwrap(options))
    o->naive = naive;
}
void attnfuseCompileOptionsSetBlockSizes(AttnfuseCompileOptions options,
                                         int64_t blockQ, int64_t blockK) {
  if (Options *o = unwrap(options)) {
    o->blockQ = blockQ;
    o->blockK = blockK;
  }
}
void attnfuseCompileOptionsSetTarget(AttnfuseCompileOptions options,
                                     AttnfuseTarget target,
                                     MlirStringRef chip) {
  Options *o = unwrap(options);
  if (!o)
    return;
  // `target` may hold any int the caller cast to the enum.
  int value = static_cast<int>(target);
  if (value == AttnfuseTargetCPU || value == AttnfuseTargetCUDA) {
    o->invalid.erase("target");
    o->target = target;
  } else {
    o->invalid["target"] = "invalid target " + std::to_string(value) +
                           " (AttnfuseTargetCPU = 0, AttnfuseTargetCUDA = 1)";
  }
  setString(options, "chip", &Options::chip, chip);
}
void attnfuseCompileOptionsSetKernelOptions(AttnfuseCompileOptions options,
                                            MlirStringRef text) {
  setString(options, "kernel options", &Options::kernelOptions, text);
}
void attnfuseCompileOptionsSetEntry(AttnfuseCompileOptions options,
                                    MlirStringRef entry) {
  setString(options, "entry", &Options::entry, entry);
}
void attnfuseCompileOptionsSetSourceName(AttnfuseCompileOptions options,
                                         MlirStringRef name) {
  setString(options, "source name", &Options::sourceName, name);
}

/// Why `options` (null: invalid handle) cannot compile `source`: one error
/// message each, empty if none.
static std::vector<std::string> checkInputs(MlirStringRef source,
                                            const Options *options) {
  std::vector<std::string> errors;
  if (!source.data)
    errors.push_back("the source is a null string (data NULL, length " +
                     std::to_string(source.length) + ")");
  if (!options) {
    errors.push_back("invalid options handle (destroyed, or not made by "
                     "attnfuseCompileOptionsCreate)");
    return errors;
  }
  for (const auto &[name, message] : options->invalid)
    errors.push_back(message);
  if (options->blockQ <= 0 || options->blockK <= 0)
    errors.push_back("block sizes must be positive, got block-q=" +
                     std::to_string(options->blockQ) +
                     " block-k=" + std::to_string(options->blockK));
  if (options->target == AttnfuseTargetCUDA && !options->entry.empty())
    errors.push_back(
        "the CUDA target cannot JIT-compile the entry function '" +
        options->entry +
        "' (the JIT runs host CPU code): set no entry with the CUDA target "
        "and launch its kernels (attnfuseCompilationGetKernel)");
  if (options->target == AttnfuseTargetCPU && !options->chip.empty())
    errors.push_back("chip '" + options->chip +
                     "' given for the CPU target (a chip selects the GPU "
                     "architecture of the CUDA target)");
  if (options->target == AttnfuseTargetCPU && !options->kernelOptions.empty())
    errors.push_back("kernel options '" + options->kernelOptions +
                     "' given for the CPU target (they are "
                     "attn-lower-to-nvvm-pipeline's)");
  return errors;
}

AttnfuseCompilation attnfuseCompile(MlirStringRef source,
                                    AttnfuseCompileOptions options) {
  auto *c = live<Compilation>().add(new Compilation());
  Options defaults;
  const Options *opts = options.ptr ? unwrap(options) : &defaults;
  std::vector<std::string> errors = checkInputs(source, opts);
  for (std::string &message : errors)
    c->diagnostics.push_back({AttnfuseDiagnosticError, "", std::move(message)});
  if (errors.empty())
    compile(*c, llvm::StringRef(source.data, source.length), *opts);
  return {c};
}

/// Whether `pos` indexes a sequence of `size` elements (the getters return
/// an invalid value, documented in Compiler.h, for any other `pos`).
static bool inRange(intptr_t pos, size_t size) {
  return pos >= 0 && static_cast<size_t>(pos) < size;
}
/// What the tensor getters return for an index out of range.
static constexpr AttnfuseTensor kInvalidTensor = {AttnfuseElementTypeF32, -1,
                                                  nullptr, nullptr};

void attnfuseCompilationDestroy(AttnfuseCompilation compilation) {
  live<Compilation>().destroy(compilation.ptr);
}
bool attnfuseCompilationSucceeded(AttnfuseCompilation compilation) {
  return getOrEmpty(compilation).succeeded;
}
MlirStringRef attnfuseCompilationGetIR(AttnfuseCompilation compilation) {
  return toRef(getOrEmpty(compilation).ir);
}
intptr_t attnfuseCompilationGetNumKernels(AttnfuseCompilation compilation) {
  return getOrEmpty(compilation).kernels.size();
}
AttnfuseKernel attnfuseCompilationGetKernel(AttnfuseCompilation compilation,
                                            intptr_t pos) {
  const auto &kernels = getOrEmpty(compilation).kernels;
  AttnfuseKernel result = {};
  if (!inRange(pos, kernels.size())) {
    result.numArguments = -1;
    for (int i = 0; i < 3; ++i)
      result.grid[i] = result.block[i] = -1;
    result.dynamicSharedMemoryBytes = -1;
    return result;
  }
  const attnfuse::GPUKernel &k = kernels[pos];
  result.name = toRef(k.name);
  result.binary = toRef(k.binary);
  for (int i = 0; i < 3; ++i) {
    result.grid[i] = k.grid[i];
    result.block[i] = k.block[i];
  }
  result.dynamicSharedMemoryBytes = k.dynamicSharedMemoryBytes;
  result.numArguments = k.argumentTypes.size();
  return result;
}
MlirStringRef
attnfuseCompilationGetKernelTensorMaps(AttnfuseCompilation compilation,
                                       intptr_t kernel) {
  const auto &maps = getOrEmpty(compilation).tensorMapsJSON;
  if (!inRange(kernel, maps.size()))
    return {nullptr, 0};
  return toRef(maps[kernel]);
}
MlirStringRef
attnfuseCompilationGetKernelArgumentType(AttnfuseCompilation compilation,
                                         intptr_t kernel, intptr_t argument) {
  const auto &kernels = getOrEmpty(compilation).kernels;
  if (!inRange(kernel, kernels.size()) ||
      !inRange(argument, kernels[kernel].argumentTypes.size()))
    return {nullptr, 0};
  return toRef(kernels[kernel].argumentTypes[argument]);
}
MlirStringRef
attnfuseCompilationGetKernelArgumentName(AttnfuseCompilation compilation,
                                         intptr_t kernel, intptr_t argument) {
  const auto &kernels = getOrEmpty(compilation).kernels;
  if (!inRange(kernel, kernels.size()) ||
      !inRange(argument, kernels[kernel].argumentNames.size()))
    return {nullptr, 0};
  return toRef(kernels[kernel].argumentNames[argument]);
}
intptr_t
attnfuseCompilationGetNumDiagnostics(AttnfuseCompilation compilation) {
  return getOrEmpty(compilation).diagnostics.size();
}
AttnfuseDiagnostic
attnfuseCompilationGetDiagnostic(AttnfuseCompilation compilation,
                                 intptr_t pos) {
  const auto &diagnostics = getOrEmpty(compilation).diagnostics;
  if (!inRange(pos, diagnostics.size()))
    return {AttnfuseDiagnosticError, {nullptr, 0}, {nullptr, 0}};
  const StoredDiagnostic &d = diagnostics[pos];
  return {d.severity, toRef(d.location), toRef(d.message)};
}
bool attnfuseCompilationIsExecutable(AttnfuseCompilation compilation) {
  return getOrEmpty(compilation).engine != nullptr;
}
intptr_t attnfuseCompilationGetNumInputs(AttnfuseCompilation compilation) {
  const Compilation &c = getOrEmpty(compilation);
  return c.engine ? c.inputs.size() : 0;
}
AttnfuseTensor attnfuseCompilationGetInputType(AttnfuseCompilation compilation,
                                               intptr_t pos) {
  const Compilation &c = getOrEmpty(compilation);
  if (!c.engine || !inRange(pos, c.inputs.size()))
    return kInvalidTensor;
  return toC(c.inputs[pos]);
}
bool attnfuseCompilationIsScalarInput(AttnfuseCompilation compilation,
                                      intptr_t pos) {
  const Compilation &c = getOrEmpty(compilation);
  return c.engine && inRange(pos, c.inputs.size()) && c.inputs[pos].scalar;
}
intptr_t attnfuseCompilationGetNumResults(AttnfuseCompilation compilation) {
  const Compilation &c = getOrEmpty(compilation);
  return c.engine ? c.results.size() : 0;
}
AttnfuseTensor
attnfuseCompilationGetResultType(AttnfuseCompilation compilation,
                                 intptr_t pos) {
  const Compilation &c = getOrEmpty(compilation);
  if (!c.engine || !inRange(pos, c.results.size()))
    return kInvalidTensor;
  return toC(c.results[pos]);
}

AttnfuseRun attnfuseCompilationRun(AttnfuseCompilation compilation,
                                   intptr_t numArgs,
                                   const AttnfuseTensor *args) {
  auto *r = live<Run>().add(new Run());
  const Compilation *c = unwrap(compilation);
  if (!c)
    r->error = "invalid compilation handle (null, destroyed, or not made by "
               "attnfuseCompile)";
  else if (numArgs < 0 || (numArgs > 0 && !args))
    r->error = "invalid argument array";
  else
    run(*c, llvm::ArrayRef<AttnfuseTensor>(args, numArgs), *r);
  return {r};
}

void attnfuseRunDestroy(AttnfuseRun run) { live<Run>().destroy(run.ptr); }
bool attnfuseRunSucceeded(AttnfuseRun run) {
  const Run *r = unwrap(run);
  return r && r->error.empty();
}
MlirStringRef attnfuseRunGetError(AttnfuseRun run) {
  static const std::string invalid =
      "invalid run handle (null, destroyed, or not made by "
      "attnfuseCompilationRun)";
  const Run *r = unwrap(run);
  return toRef(r ? r->error : invalid);
}
intptr_t attnfuseRunGetNumResults(AttnfuseRun run) {
  const Run *r = unwrap(run);
  return r ? r->results.size() : 0;
}
AttnfuseTensor attnfuseRunGetResult(AttnfuseRun run, intptr_t pos) {
  Run *r = unwrap(run);
  if (!r || !inRange(pos, r->results.size()))
    return kInvalidTensor;
  Tensor &t = r->results[pos];
  return {t.elementType, static_cast<intptr_t>(t.shape.size()), t.shape.data(),
          t.storage.data()};
}
