//===- Runner.cpp - compile and execute a function on the CPU -------------===//
#include "Runner.h"

#include "attnfuse/ExecutionEngine/HostExecution.h"

#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/ExecutionEngine/ExecutionEngine.h"
#include "mlir/Pass/PassManager.h"


using namespace mlir;
using namespace attnfuse_run;

LogicalResult attnfuse_run::lowerToLLVM(ModuleOp module, StringRef entry,
                                        bool naive, StringRef pipelineOptions) {
  auto func = module.lookupSymbol<func::FuncOp>(entry);
  func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                UnitAttr::get(module.getContext()));
  PassManager pm(module.getContext());
  attnfuse::CPUPipelineOptions options;
  if (failed(options.parseFromString(pipelineOptions)))
    return failure();
  // The reference is always naive; `naive=1` in pipelineOptions makes the
  // pipeline under test naive too (e.g. to measure it alone).
  if (naive)
    options.naive = true;
  attnfuse::buildAttnLowerToCPUPipeline(pm, options);
  return pm.run(module);
}

/// Copies the (possibly strided) memref described at `words` into a new
/// tensor of `type`.
static llvm::Expected<HostTensor> readResult(const int64_t *words,
                                             RankedTensorType type,
                                             unsigned index) {
  ElementKind kind = *getElementKind(type.getElementType());
  int64_t rank = type.getRank();
  // A runtime dimension ('?') takes its size from the descriptor.
  ArrayRef<int64_t> sizes(words + 3, rank);
  for (auto [size, expected] : llvm::zip(sizes, type.getShape()))
    if (size < 0 || (!ShapedType::isDynamic(expected) && size != expected))
      return llvm::createStringError("result " + std::to_string(index) +
                                     " has unexpected sizes");
  HostTensor tensor(kind, sizes);
  attnfuse::copyMemref(
      words, attnfuse::describeDenseMemref(tensor.data(), sizes).data(), rank,
      getByteSize(kind));
  return tensor;
}

llvm::Expected<SmallVector<HostTensor>>
attnfuse_run::execute(ModuleOp module, StringRef entry, FunctionType signature,
                      ArrayRef<HostTensor> inputs, const JitSettings &jit) {
  SmallVector<HostTensor> outputs;
  if (llvm::Error error = executeEach(
          module, entry, signature, jit, 1,
          [&](size_t) { return SmallVector<HostTensor>(inputs); },
          [&](size_t, SmallVector<HostTensor> results) {
            outputs = std::move(results);
            return llvm::Error::success();
          }))
    return std::move(error);
  return outputs;
}

/// Calls `entry` once on `inputs` through `engine`.
static llvm::Expected<SmallVector<HostTensor>>
invoke(ExecutionEngine &engine, StringRef entry, FunctionType signature,
       ArrayRef<HostTensor> inputs) {
  // The C interface takes a pointer to the results (one descriptor, or a
  // struct of descriptors, all 8-byte words, hence no padding), then a pointer
  // to the descriptor of each memref argument and scalars by value.
  // invokePacked takes the address of each of these.
  size_t resultWords = 0;
  for (Type type : signature.getResults())
    resultWords +=
        attnfuse::getMemrefDescriptorWords(cast<RankedTensorType>(type).getRank());
  SmallVector<int64_t> results(resultWords);
  void *resultsPtr = results.data();

  // Copies of the inputs: the compiled function may write its arguments.
  SmallVector<HostTensor> args(inputs);
  SmallVector<SmallVector<int64_t>> descriptors(args.size());
  SmallVector<void *> descriptorPtrs(args.size());
  SmallVector<void *> packed;
  if (resultWords)
    packed.push_back(&resultsPtr);
  for (auto [i, type] : llvm::enumerate(signature.getInputs())) {
    if (!isa<RankedTensorType>(type)) {
      packed.push_back(args[i].data());
      continue;
    }
    descriptors[i] =
        attnfuse::describeDenseMemref(args[i].data(), args[i].getShape());
    descriptorPtrs[i] = descriptors[i].data();
    packed.push_back(&descriptorPtrs[i]);
  }
  if (llvm::Error error = attnfuse::invokeHostFunction(
          engine, ("_mlir_ciface_" + entry).str(), packed))
    return std::move(error);

  // The result buffers are not freed: a result may be a constant global or
  // alias an argument, and the process ends soon.
  SmallVector<HostTensor> outputs;
  const int64_t *words = results.data();
  for (auto [i, type] : llvm::enumerate(signature.getResults())) {
    auto tensorType = cast<RankedTensorType>(type);
    llvm::Expected<HostTensor> output = readResult(words, tensorType, i);
    if (!output)
      return output.takeError();
    outputs.push_back(std::move(*output));
    words += attnfuse::getMemrefDescriptorWords(tensorType.getRank());
  }
  return outputs;
}

llvm::Error attnfuse_run::executeEach(
    ModuleOp module, StringRef entry, FunctionType signature,
    const JitSettings &jit, size_t numSets,
    llvm::function_ref<SmallVector<HostTensor>(size_t)> inputSet,
    llvm::function_ref<llvm::Error(size_t, SmallVector<HostTensor>)>
        consume) {
  attnfuse::HostJitOptions options{jit.cpu, !jit.objectFile.empty()};
  llvm::Expected<std::unique_ptr<ExecutionEngine>> engine =
      attnfuse::createHostExecutionEngine(module, options);
  if (!engine)
    return engine.takeError();
  for (size_t i = 0; i < numSets; ++i) {
    llvm::Expected<SmallVector<HostTensor>> results =
        invoke(**engine, entry, signature, inputSet(i));
    if (!results)
      return results.takeError();
    if (llvm::Error error = consume(i, std::move(*results)))
      return error;
  }
  // The object exists once the code has been compiled (on the first call).
  if (!jit.objectFile.empty())
    (*engine)->dumpToObjectFile(jit.objectFile);
  return llvm::Error::success();
}
