//===- attnfuse-run.cpp - run an MLIR function on the CPU and check it ----===//
//
// Executes one function of an MLIR file through attnfuse's CPU pipeline (the
// pipeline under test) and compares its results with the naive reference
// pipeline, with an fp64 evaluation of the same function, or with both (the
// FlashAttention tolerance rule). See docs/attnfuse-run.md.
//
//===----------------------------------------------------------------------===//
#include "Compare.h"
#include "FiniteDifferences.h"
#include "HostTensor.h"
#include "IndexBounds.h"
#include "Npy.h"
#include "Promote.h"
#include "Random.h"
#include "CudaRunner.h"
#include "Runner.h"

#include "attnfuse-c/Run.h"
#include "attnfuse/Conversion/Passes.h"
#include "attnfuse/InitAll.h"
#include "attnfuse/Pipelines/Pipelines.h"
#include "attnfuse/Support/NestingDepth.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/WithColor.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <unistd.h>

using namespace mlir;
using namespace attnfuse_run;
namespace cl = llvm::cl;

//===----------------------------------------------------------------------===//
// Options
//===----------------------------------------------------------------------===//

namespace {
/// What the results of the pipeline under test are compared with.
enum class CheckMode {
  Auto,
  Naive,
  F64,
  FlashAttention,
  FiniteDifferences,
  None
};
/// Where the function runs.
enum class Target { CPU, CUDA };
/// Which IR to print.
enum class PrintIR { None, AfterPipeline };
} // namespace

namespace {
/// attnfuse-run's command line, registered when the command runs
/// (attnfuseRunMain), not when libAttnFuseCAPI.so is loaded: a process that
/// loads the library (Python, an embedder with options of its own) sees
/// none of these.
struct CommandLine {
  cl::OptionCategory runCategory{"attnfuse-run options"};

  cl::opt<std::string> inputFilename{cl::Positional, cl::Required,
                                     cl::desc("<input.mlir>"),
                                     cl::cat(runCategory)};

  cl::opt<std::string> entryName{
      "entry",
      cl::desc("Function to run (default: the only public "
               "func.func with a body)"),
      cl::value_desc("name"), cl::cat(runCategory)};

  cl::list<std::string> inputFiles{
      "inputs", cl::CommaSeparated,
      cl::desc("One .npy file per argument, in order (default: "
               "random inputs)"),
      cl::value_desc("a.npy,b.npy,..."), cl::cat(runCategory)};

  cl::list<int64_t> dynamicSizes{
      "dynamic-sizes", cl::CommaSeparated,
      cl::desc(
          "Sizes of the runtime dimensions ('?') of the arguments: one per "
          "'?' in the order they appear, or one for all of them (e.g. the "
          "sequence length of a graph exported with a dynamic length)"),
      cl::value_desc("N,..."), cl::cat(runCategory)};

  cl::opt<uint64_t> seed{"seed", cl::init(0),
                         cl::desc("Seed of the random inputs (default 0)"),
                         cl::cat(runCategory)};

  cl::opt<double> keepProbability{
      "keep-probability", cl::init(0.8),
      cl::desc("Probability that a random i1 element is true (default 0.8)"),
      cl::cat(runCategory)};

  cl::opt<int64_t> intBound{
      "int-bound", cl::init(0),
      cl::desc("Random integer inputs (i8 to i64) are uniform in [0, N): "
               "token ids, positions and padding masks of exported models "
               "(default: an argument that indexes a tensor, [0, the smallest "
               "dimension it indexes); any other, any non-negative value of "
               "the type)"),
      cl::value_desc("N"), cl::cat(runCategory)};

  cl::opt<CheckMode> checkMode{
      "check", cl::init(CheckMode::Auto),
      cl::desc(
          "What the results of the pipeline under test are compared with"),
      cl::values(
          clEnumValN(CheckMode::Auto, "auto",
                     "fa where a result is f16 or bf16, naive otherwise "
                     "(default)"),
          clEnumValN(CheckMode::Naive, "naive",
                     "the naive reference pipeline, elementwise within "
                     "atol + rtol * |reference|"),
          clEnumValN(CheckMode::F64, "f64",
                     "an fp64 evaluation, elementwise within "
                     "atol + rtol * |f64|"),
          clEnumValN(CheckMode::FlashAttention, "fa",
                     "the FlashAttention rule: max|test - f64| <= "
                     "2 * max|reference - f64| + atol"),
          clEnumValN(CheckMode::FiniteDifferences, "fd",
                     "gradients of attn.attention_backward against central "
                     "finite differences (f64) of the forward reference, the "
                     "other results against the naive reference"),
          clEnumValN(CheckMode::None, "none",
                     "nothing: only run the pipeline under test")),
      cl::cat(runCategory)};

  cl::opt<double> atolOption{
      "atol",
      cl::desc("Absolute tolerance for float results (default by element "
               "type: f64 1e-12, f32 1e-5, f16 1e-3, bf16 1e-2)"),
      cl::cat(runCategory)};

  cl::opt<double> rtolOption{
      "rtol",
      cl::desc("Relative tolerance for float results (default by element "
               "type: f64 1e-10, f32 1e-4, f16 1e-2, bf16 5e-2)"),
      cl::cat(runCategory)};

  cl::opt<std::string> dumpInputs{
      "dump-inputs", cl::desc("Write the inputs used to DIR/arg<i>.npy"),
      cl::value_desc("DIR"), cl::cat(runCategory)};

  cl::opt<std::string> dumpOutputs{
      "dump-outputs",
      cl::desc("Write the results of the pipeline under test to "
               "DIR/result<i>.npy"),
      cl::value_desc("DIR"), cl::cat(runCategory)};

  cl::opt<std::string> dumpReference{
      "dump-reference",
      cl::desc("Write the results of the naive reference pipeline to "
               "DIR/result<i>.npy"),
      cl::value_desc("DIR"), cl::cat(runCategory)};

  cl::opt<std::string> dumpF64{
      "dump-f64",
      cl::desc(
          "Write the results of the fp64 evaluation (the reference "
          "lowering with every float promoted to f64) to DIR/result<i>.npy"),
      cl::value_desc("DIR"), cl::cat(runCategory)};

  cl::opt<std::string> pipelineOptions{
      "pipeline-options",
      cl::desc(
          "Options of the pipeline under test: attn-lower-to-cpu-pipeline "
          "(also used by the CPU references), e.g. \"block-q=16 "
          "block-k=32\", or with --target=cuda attn-lower-to-nvvm-pipeline, "
          "e.g. \"mma=mma_sync\""),
      cl::value_desc("OPTIONS"), cl::init(""), cl::cat(runCategory)};

  cl::opt<PrintIR> printIR{
      "print-ir", cl::init(PrintIR::None), cl::desc("Print IR to stderr"),
      cl::values(clEnumValN(PrintIR::AfterPipeline, "after-pipeline",
                            "the LLVM-dialect module of the pipeline under "
                            "test")),
      cl::cat(runCategory)};

  cl::opt<Target> target{
      "target", cl::init(Target::CPU), cl::desc("Where to run"),
      cl::values(clEnumValN(Target::CPU, "cpu", "the host CPU (default)"),
                 clEnumValN(Target::CUDA, "cuda",
                            "an NVIDIA GPU: the pipeline under test is "
                            "attn-lower-to-nvvm-pipeline (with "
                            "--pipeline-options), run through the CUDA "
                            "driver; so does the naive reference "
                            "(attn-lower-to-nvvm-pipeline{naive=true}), "
                            "the fp64 evaluation stays on the CPU")),
      cl::cat(runCategory)};

  cl::opt<std::string> jitCpu{
      "jit-cpu",
      cl::desc(
          "CPU the JIT compiles for: host (the CPU it runs on) or an LLVM "
          "CPU name, e.g. x86-64, the baseline of every x86-64 CPU "
          "(default: $ATTNFUSE_JIT_CPU, else host)"),
      cl::value_desc("CPU"), cl::cat(runCategory)};

  cl::opt<std::string> dumpObject{
      "dump-object",
      cl::desc(
          "Write the object code the JIT compiled for the pipeline under "
          "test (on the CPU) to FILE, e.g. for llvm-nm"),
      cl::value_desc("FILE"), cl::cat(runCategory)};
};
CommandLine *options = nullptr;
} // namespace

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

/// Prints `attnfuse-run: error: <message>` and returns failure.
static LogicalResult reportError(const llvm::Twine &message) {
  llvm::WithColor::error(llvm::errs(), "attnfuse-run") << message << "\n";
  return failure();
}

/// Returns `type` as MLIR prints it.
static std::string toString(Type type) {
  std::string s;
  llvm::raw_string_ostream(s) << type;
  return s;
}

/// Returns the function to run: `--entry`, or the only public func.func with
/// a body.
static FailureOr<func::FuncOp> findEntry(ModuleOp module) {
  if (!options->entryName.empty()) {
    auto func = module.lookupSymbol<func::FuncOp>(options->entryName);
    if (!func || func.isExternal())
      return reportError("no function @" + options->entryName +
                         " with a body in " + options->inputFilename);
    return func;
  }
  SmallVector<func::FuncOp> candidates;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.isPublic() && !func.isExternal())
      candidates.push_back(func);
  if (candidates.size() == 1)
    return candidates.front();
  std::string names;
  for (func::FuncOp func : candidates)
    names += " @" + func.getSymName().str();
  return reportError(llvm::Twine(candidates.size()) + " public functions in " +
                     options->inputFilename +
                     (names.empty() ? "" : ":" + names) +
                     "; choose one with --entry");
}

/// Checks that `type` is a ranked tensor (runtime dimensions take their
/// sizes from --dynamic-sizes) or (when `allowScalar`) a scalar of a
/// supported element type.
static LogicalResult checkType(Type type, bool allowScalar,
                               const llvm::Twine &what) {
  Type element = type;
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    element = tensor.getElementType();
  } else if (!allowScalar) {
    return reportError(what + " is not a ranked tensor: " + toString(type));
  }
  std::optional<ElementKind> kind = getElementKind(element);
  if (!kind)
    return reportError(what + " has an unsupported element type: " +
                       toString(type));
  // Host buffers hold every argument and result (and their f64 copies).
  int64_t bytes = 8;
  if (auto tensor = dyn_cast<RankedTensorType>(type))
    for (int64_t dim : tensor.getShape())
      if (!ShapedType::isDynamic(dim) && llvm::MulOverflow(bytes, dim, bytes))
        return reportError(what + " has more elements than a host buffer "
                                  "can hold: " +
                           toString(type));
  return success();
}

/// Returns the element kind and shape (empty for scalars) of `type`, its
/// runtime dimensions taken from --dynamic-sizes (`nextDynamic` counts the
/// ones taken so far over all arguments).
static FailureOr<std::pair<ElementKind, SmallVector<int64_t>>>
describeType(Type type, size_t &nextDynamic, const llvm::Twine &what) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor)
    return std::pair{*getElementKind(type), SmallVector<int64_t>()};
  SmallVector<int64_t> shape(tensor.getShape());
  for (int64_t &dim : shape) {
    if (!ShapedType::isDynamic(dim))
      continue;
    if (options->dynamicSizes.empty())
      return reportError(what + " has runtime dimensions: " + toString(type) +
                         "; give their sizes with --dynamic-sizes");
    if (options->dynamicSizes.size() > 1 &&
        nextDynamic >= options->dynamicSizes.size())
      return reportError("--dynamic-sizes gives " +
                         llvm::Twine(options->dynamicSizes.size()) +
                         " sizes; the arguments have more runtime dimensions");
    dim = options->dynamicSizes.size() == 1
              ? options->dynamicSizes[0]
              : options->dynamicSizes[nextDynamic];
    ++nextDynamic;
    if (dim < 0)
      return reportError("--dynamic-sizes must be non-negative, got " +
                         llvm::Twine(dim));
  }
  int64_t bytes = 8;
  for (int64_t dim : shape)
    if (llvm::MulOverflow(bytes, dim, bytes))
      return reportError(what + " has more elements than a host buffer can "
                                "hold with --dynamic-sizes");
  return std::pair{*getElementKind(tensor.getElementType()), shape};
}

/// Writes `tensors` to `dir/<prefix><i>.npy`, creating `dir`.
static LogicalResult dumpTensors(StringRef dir, StringRef prefix,
                                 ArrayRef<HostTensor> tensors) {
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    return reportError("cannot create " + dir + ": " + ec.message());
  for (auto [i, tensor] : llvm::enumerate(tensors)) {
    llvm::SmallString<128> path(dir);
    llvm::sys::path::append(path, prefix + llvm::Twine(i) + ".npy");
    if (llvm::Error error = writeNpy(path, tensor))
      return reportError(llvm::toString(std::move(error)));
  }
  return success();
}

/// Formats a non-negative error: `0`, `inf` or `1.2e-03`.
static std::string formatError(double value) {
  if (value == 0)
    return "0";
  if (std::isinf(value))
    return "inf";
  std::string s;
  llvm::raw_string_ostream(s) << llvm::format("%.1e", value);
  return s;
}

//===----------------------------------------------------------------------===//
// Evaluations
//===----------------------------------------------------------------------===//

namespace {
/// The ways attnfuse-run evaluates the function. F64Stored is F64 with the
/// results of the attention ops rounded to their element types
/// (roundAttentionResults): the storage floor's measurement.
enum class Evaluation { Reference, UnderTest, F64, F64Stored };
} // namespace

/// Compiles a clone of `module` for `evaluation`, runs `entry` on `inputs`
/// and returns its results.
static FailureOr<SmallVector<HostTensor>>
evaluate(ModuleOp module, StringRef entry, Evaluation evaluation,
         ArrayRef<HostTensor> inputs) {
  bool f64 =
      evaluation == Evaluation::F64 || evaluation == Evaluation::F64Stored;
  StringRef name = evaluation == Evaluation::Reference   ? "reference"
                   : evaluation == Evaluation::UnderTest ? "under-test"
                   : evaluation == Evaluation::F64       ? "f64"
                                                         : "stored-f64";
  OwningOpRef<ModuleOp> clone = module.clone();
  SmallVector<HostTensor> args(inputs);
  if (evaluation == Evaluation::F64Stored)
    roundAttentionResults(*clone);
  if (f64) {
    // attn.attention (like TOSA) only takes f16, bf16 and f32 operands:
    // lower both to linalg first (the op's reference lowering computes in
    // f32, which then becomes f64).
    PassManager pm(module.getContext());
    attnfuse::buildTosaToLinalgPipeline(pm);
    pm.addPass(attnfuse::createConvertAttnToLinalg());
    if (failed(pm.run(*clone)) || failed(promoteFloatsToF64(*clone)))
      return reportError("cannot promote " + options->inputFilename +
                         " to f64");
    for (HostTensor &arg : args) {
      if (!isFloat(arg.getKind()))
        continue;
      HostTensor wide(ElementKind::F64, arg.getShape());
      for (int64_t i = 0, e = arg.getNumElements(); i < e; ++i)
        wide.setFloat(i, arg.getFloat(i));
      arg = std::move(wide);
    }
  }
  // With --target=cuda the pipeline under test and the naive reference both
  // run on the GPU: the fused kernels, and the reference lowering as
  // upstream-made kernels (naive=true), same options otherwise. The fp64
  // evaluation stays on the CPU.
  if (!f64 && options->target == Target::CUDA) {
    bool naive = evaluation == Evaluation::Reference;
    llvm::Expected<SmallVector<HostTensor>> results =
        executeOnCuda(*clone, entry, options->pipelineOptions, naive, args);
    if (!results)
      return reportError(llvm::Twine("cannot run ") +
                         (naive ? "the naive reference " : "") +
                         "on the GPU: " +
                         llvm::toString(results.takeError()));
    return std::move(*results);
  }
  FunctionType signature =
      clone->lookupSymbol<func::FuncOp>(entry).getFunctionType();
  bool naive = evaluation != Evaluation::UnderTest;
  // With --target=cuda the options are the GPU pipeline's; the fp64
  // evaluation takes the CPU pipeline's defaults.
  StringRef cpuOptions = options->target == Target::CUDA
                             ? StringRef()
                             : StringRef(options->pipelineOptions);
  if (failed(lowerToLLVM(*clone, entry, naive, cpuOptions)))
    return reportError(llvm::Twine("the ") + name + " pipeline failed");
  if (evaluation == Evaluation::UnderTest &&
      options->printIR == PrintIR::AfterPipeline)
    clone->print(llvm::errs());
  JitSettings jit{options->jitCpu, /*objectFile=*/""};
  if (evaluation == Evaluation::UnderTest)
    jit.objectFile = options->dumpObject;
  llvm::Expected<SmallVector<HostTensor>> results =
      execute(*clone, entry, signature, args, jit);
  if (!results)
    return reportError(llvm::Twine("cannot run the ") + name + " pipeline: " +
                       llvm::toString(results.takeError()));
  return std::move(*results);
}

/// Returns the tolerance for results of element type `kind`: the default,
/// overridden for floats by --atol and --rtol.
static Tolerance getTolerance(ElementKind kind) {
  Tolerance tolerance = getDefaultTolerance(kind);
  if (!isFloat(kind))
    return tolerance;
  if (options->atolOption.getNumOccurrences())
    tolerance.atol = options->atolOption;
  if (options->rtolOption.getNumOccurrences())
    tolerance.rtol = options->rtolOption;
  return tolerance;
}

/// Appends the mismatch and NaN counts of `comparison` to `os`, if any.
static void printCounts(llvm::raw_ostream &os, const Comparison &comparison,
                        int64_t numElements) {
  if (comparison.numMismatches)
    os << " mismatches=" << comparison.numMismatches << "/" << numElements;
  if (comparison.numNaNs)
    os << " nan=" << comparison.numNaNs;
}

//===----------------------------------------------------------------------===//
// Main
//===----------------------------------------------------------------------===//

/// Runs the tool; returns whether every comparison passed, or failure on any
/// error (reported).
static FailureOr<bool> runMain() {
  // A NaN tolerance would make every comparison pass (x > NaN is false).
  for (auto *option : {&options->atolOption, &options->rtolOption}) {
    if (!option->getNumOccurrences() || option->getValue() >= 0)
      continue;
    std::string value;
    llvm::raw_string_ostream(value) << option->getValue();
    return reportError("--" + option->ArgStr +
                       " must be a non-negative number, got " + value);
  }
  DialectRegistry registry;
  attnfuse::registerPipelineDialects(registry);
  MLIRContext context(registry);

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(options->inputFilename, &errorMessage);
  if (!file)
    return reportError(errorMessage);
  std::optional<size_t> tooDeep =
      attnfuse::findExcessiveNesting(file->getBuffer());
  const char *tooDeepAt = tooDeep ? file->getBufferStart() + *tooDeep : nullptr;
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagnostics(sourceMgr, &context);
  if (tooDeepAt) {
    sourceMgr.PrintMessage(llvm::SMLoc::getFromPointer(tooDeepAt),
                           llvm::SourceMgr::DK_Error,
                           "brackets nest deeper than " +
                               llvm::Twine(attnfuse::kMaxNestingDepth) +
                               " levels");
    return reportError("cannot parse " + options->inputFilename);
  }
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return reportError("cannot parse " + options->inputFilename);
  FailureOr<func::FuncOp> entry = findEntry(*module);
  if (failed(entry))
    return failure();
  std::string funcName = entry->getSymName().str();
  FunctionType type = entry->getFunctionType();
  // The naive graph rounds its intermediates to f16/bf16 where the pipeline
  // under test keeps f32: elementwise, the two differ by the naive graph's
  // own error, which the FlashAttention rule measures against fp64.
  if (options->checkMode == CheckMode::Auto)
    options->checkMode = llvm::any_of(type.getResults(),
                                      [](Type t) {
                                        Type e = getElementTypeOrSelf(t);
                                        return e.isF16() || e.isBF16();
                                      })
                             ? CheckMode::FlashAttention
                             : CheckMode::Naive;
  for (auto [i, argType] : llvm::enumerate(type.getInputs()))
    if (failed(checkType(argType, /*allowScalar=*/true,
                         "argument " + llvm::Twine(i) + " of @" + funcName)))
      return failure();
  for (auto [i, resultType] : llvm::enumerate(type.getResults()))
    if (failed(checkType(resultType, /*allowScalar=*/false,
                         "result " + llvm::Twine(i) + " of @" + funcName)))
      return failure();

  // Inputs.
  if (!(options->keepProbability >= 0 && options->keepProbability <= 1)) {
    std::string value;
    llvm::raw_string_ostream(value)
        << llvm::format("%g", options->keepProbability.getValue());
    return reportError("--keep-probability must be a probability in [0, 1], "
                       "got " + value);
  }
  if (options->intBound < 0)
    return reportError("--int-bound must be positive (or 0: the type's range)");
  SmallVector<HostTensor> inputs;
  if (!options->inputFiles.empty() &&
      options->inputFiles.size() != type.getNumInputs())
    return reportError("--inputs names " +
                       llvm::Twine(options->inputFiles.size()) +
                       " files but @" + funcName + " takes " +
                       llvm::Twine(type.getNumInputs()) + " arguments");
  size_t nextDynamic = 0;
  for (auto [i, argType] : llvm::enumerate(type.getInputs())) {
    auto described = describeType(argType, nextDynamic,
                                  "argument " + llvm::Twine(i) + " of @" +
                                      funcName);
    if (failed(described))
      return failure();
    auto [kind, shape] = *described;
    if (options->inputFiles.empty()) {
      // Integers that index a tensor are drawn in its range unless
      // --int-bound says otherwise.
      int64_t bound = options->intBound;
      if (!options->intBound.getNumOccurrences() && !isFloat(kind) &&
          kind != ElementKind::I1)
        bound = findIndexedSize(*entry, i).value_or(0);
      inputs.push_back(makeRandomTensor(kind, shape, options->seed, i,
                                        options->keepProbability, bound));
      continue;
    }
    llvm::Expected<HostTensor> input =
        readNpy(options->inputFiles[i], kind, shape);
    if (!input)
      return reportError("argument " + llvm::Twine(i) + " of @" + funcName +
                         ": " + llvm::toString(input.takeError()));
    inputs.push_back(std::move(*input));
  }
  if (!options->dumpInputs.empty() &&
      failed(dumpTensors(options->dumpInputs, "arg", inputs)))
    return failure();

  // Evaluations.
  bool needReference = options->checkMode == CheckMode::Naive ||
                       options->checkMode == CheckMode::FiniteDifferences ||
                       options->checkMode == CheckMode::FlashAttention ||
                       !options->dumpReference.empty();
  bool needF64 = options->checkMode == CheckMode::F64 ||
                 options->checkMode == CheckMode::FlashAttention ||
                 !options->dumpF64.empty();
  SmallVector<HostTensor> test, reference, f64;
  auto runTest = [&]() -> LogicalResult {
    FailureOr<SmallVector<HostTensor>> results =
        evaluate(*module, funcName, Evaluation::UnderTest, inputs);
    if (failed(results))
      return failure();
    test = std::move(*results);
    if (!options->dumpOutputs.empty() &&
        failed(dumpTensors(options->dumpOutputs, "result", test)))
      return failure();
    return success();
  };
  auto runReference = [&]() -> LogicalResult {
    FailureOr<SmallVector<HostTensor>> results =
        evaluate(*module, funcName, Evaluation::Reference, inputs);
    if (failed(results))
      return failure();
    reference = std::move(*results);
    if (!options->dumpReference.empty() &&
        failed(dumpTensors(options->dumpReference, "result", reference)))
      return failure();
    return success();
  };
  // On the GPU the naive reference runs first: the oracle's kernels are
  // compiled and their launch plan read even where no driver is installed
  // (the run stops there), which the lit tests check.
  bool referenceFirst = options->target == Target::CUDA && needReference;
  if (referenceFirst && failed(runReference()))
    return failure();
  if (failed(runTest()))
    return failure();
  if (needReference && !referenceFirst && failed(runReference()))
    return failure();
  // The function's results in fp64 (`how`), into `out`.
  auto evaluateInto = [&](SmallVector<HostTensor> &out,
                          Evaluation how) -> LogicalResult {
    FailureOr<SmallVector<HostTensor>> results =
        evaluate(*module, funcName, how, inputs);
    if (failed(results))
      return failure();
    out = std::move(*results);
    return success();
  };
  if (needF64) {
    if (failed(evaluateInto(f64, Evaluation::F64)))
      return failure();
    if (!options->dumpF64.empty() &&
        failed(dumpTensors(options->dumpF64, "result", f64)))
      return failure();
  }

  // The storage floor of result i: the largest change that rounding the
  // attention ops' results to their element types makes to it, in exact
  // arithmetic (max |stored-f64 - f64| over elements finite in both). Where
  // the exact value is 0 (a gradient that cancels: dQ and dK of a row that
  // sees one key, with O rounded before Di = rowsum(dO * O)), a relative
  // tolerance is undefined, and this is the error that every pipeline
  // storing O in its type makes (docs/attnfuse-run.md). Evaluated once, and
  // only when a comparison would fail without it.
  SmallVector<HostTensor> f64Stored;
  auto storageFloor = [&](size_t i) -> FailureOr<double> {
    if (f64.empty() && failed(evaluateInto(f64, Evaluation::F64)))
      return failure();
    if (f64Stored.empty() &&
        failed(evaluateInto(f64Stored, Evaluation::F64Stored)))
      return failure();
    double floor = 0;
    if (isFloat(f64[i].getKind()))
      for (int64_t j = 0, e = f64[i].getNumElements(); j < e; ++j) {
        double a = f64Stored[i].getFloat(j), b = f64[i].getFloat(j);
        if (std::isfinite(a) && std::isfinite(b))
          floor = std::max(floor, std::abs(a - b));
      }
    return floor;
  };

  // Comparisons, one summary line.
  std::string details;
  llvm::raw_string_ostream os(details);
  bool pass = true;
  for (auto [i, resultType] : llvm::enumerate(type.getResults())) {
    const HostTensor &actual = test[i];
    os << (i ? "; " : " ") << "result" << i << " " << resultType;
    Tolerance tolerance = getTolerance(actual.getKind());
    int64_t n = actual.getNumElements();
    switch (options->checkMode) {
    case CheckMode::Auto: // resolved to naive or fa above
    case CheckMode::None:
      break;
    case CheckMode::Naive:
    case CheckMode::F64:
    case CheckMode::FiniteDifferences: {
      const HostTensor *expected =
          options->checkMode == CheckMode::F64 ? &f64[i] : &reference[i];
      std::optional<HostTensor> fd;
      if (options->checkMode == CheckMode::FiniteDifferences) {
        if (std::optional<GradientResult> gradient =
                getGradientResult(*entry, i)) {
          llvm::Expected<HostTensor> estimate = finiteDifferenceGradient(
              *entry, *gradient, inputs,
              JitSettings{options->jitCpu, /*objectFile=*/""});
          if (!estimate)
            return reportError(llvm::toString(estimate.takeError()));
          fd = std::move(*estimate);
          expected = &*fd;
          os << " vs fd";
        } else {
          os << " vs naive";
        }
      }
      Comparison c = compare(actual, *expected, tolerance);
      // A gradient's exact value can be 0 where the pipelines' is not
      // (rounding of O): the finite differences then get the storage floor,
      // twice, as an absolute tolerance (relative error is undefined at 0).
      std::optional<double> storage;
      if (fd && c.numMismatches > c.numNaNs) {
        FailureOr<double> floor = storageFloor(i);
        if (failed(floor))
          return failure();
        storage = *floor;
        c = compare(actual, *expected,
                    {tolerance.atol + 2 * *storage, tolerance.rtol});
      }
      pass &= c.numMismatches == 0;
      os << " max_abs=" << formatError(c.maxAbs)
         << " max_rel=" << formatError(c.maxRel);
      if (storage)
        os << " storage=" << formatError(*storage);
      printCounts(os, c, n);
      break;
    }
    case CheckMode::FlashAttention: {
      // The elementwise tolerance is irrelevant here: only maxAbs and the
      // NaN counts are used.
      Comparison c = compare(actual, f64[i], tolerance);
      Comparison r = compare(reference[i], f64[i], tolerance);
      // The rule measures against the naive computation's own error, so
      // that error must be an error, not a wrong result: within 5% of the
      // output's magnitude (a naive reference as wrong as the result under
      // test, all zeros say, would prove nothing).
      double bound = 2 * r.maxAbs + tolerance.atol;
      double magnitude = 0;
      if (isFloat(actual.getKind()))
        for (int64_t j = 0, e = f64[i].getNumElements(); j < e; ++j)
          if (std::isfinite(f64[i].getFloat(j)))
            magnitude = std::max(magnitude, std::abs(f64[i].getFloat(j)));
      bool referenceSane = r.maxAbs <= 0.05 * magnitude + tolerance.atol;
      // Where the exact result is 0 or small by cancellation (a gradient),
      // 5% of it says nothing: the naive reference may also be off by the
      // error that storing the attention ops' results in their types makes
      // by itself (twice the storage floor).
      std::optional<double> storage;
      if (!referenceSane && isFloat(actual.getKind()) && r.numNaNs == 0 &&
          !std::isinf(r.maxAbs)) {
        FailureOr<double> floor = storageFloor(i);
        if (failed(floor))
          return failure();
        storage = *floor;
        referenceSane = r.maxAbs <=
                        0.05 * magnitude + tolerance.atol + 2 * *storage;
      }
      bool ok = c.numNaNs == 0 && r.numNaNs == 0 && referenceSane &&
                !std::isinf(c.maxAbs) &&
                (isFloat(actual.getKind()) ? c.maxAbs <= bound
                                           : c.numMismatches == 0);
      pass &= ok;
      os << " max_abs=" << formatError(c.maxAbs)
         << " ref_max_abs=" << formatError(r.maxAbs)
         << " bound=" << formatError(bound);
      if (c.numNaNs)
        os << " nan=" << c.numNaNs;
      if (r.numNaNs)
        os << " ref_nan=" << r.numNaNs;
      if (storage)
        os << " storage=" << formatError(*storage);
      if (!referenceSane)
        os << " (the naive reference is off by more than 5% of max|O| = "
           << formatError(magnitude) << " + atol"
           << (storage ? " + 2 * storage" : "") << ")";
      break;
    }
    }
  }
  StringRef modeName = options->checkMode == CheckMode::Naive ? "naive"
                       : options->checkMode == CheckMode::F64 ? "f64"
                       : options->checkMode == CheckMode::FlashAttention ? "fa"
                       : options->checkMode == CheckMode::FiniteDifferences
                           ? "fd"
                           : "none";
  StringRef verdict = options->checkMode == CheckMode::None ? "RAN"
                      : pass                                ? "PASS"
                                                            : "FAIL";
  // Which naive reference ran, where it is not the CPU's.
  StringRef referenceNote = options->target == Target::CUDA && needReference
                                ? " (reference: naive lowering on the GPU)"
                                : "";
  llvm::outs() << "attnfuse-run: @" << funcName << " check=" << modeName
               << referenceNote << ": " << verdict << details << "\n";
  return pass;
}

/// An allocation that cannot be satisfied (a host buffer, the compiler, or
/// the JIT-compiled code's malloc: createHostExecutionEngine) is an error
/// like any other: exit status 2, not "LLVM ERROR: out of memory".
static void reportOutOfMemory(void *, const char *reason, bool) {
  // No allocation here: the message is written directly.
  static const char message[] = "attnfuse-run: error: out of memory: ";
  (void)!::write(2, message, sizeof(message) - 1);
  (void)!::write(2, reason, std::strlen(reason));
  (void)!::write(2, "\n", 1);
  std::_Exit(2);
}

int attnfuseRunMain(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  static CommandLine commandLine;
  options = &commandLine;
  llvm::install_bad_alloc_error_handler(reportOutOfMemory);
  cl::HideUnrelatedOptions(options->runCategory);
  if (!cl::ParseCommandLineOptions(
          argc, argv,
          "attnfuse-run: runs a function of an MLIR file on the CPU through "
          "attnfuse's pipeline and checks its results\n",
          &llvm::errs()))
    return 2;
  // Exit status: 0 when every comparison passes, 1 when one fails, 2 on
  // errors.
  FailureOr<bool> pass = runMain();
  if (failed(pass))
    return 2;
  return *pass ? 0 : 1;
}
