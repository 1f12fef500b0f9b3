//===- CudaRunner.cpp - run a function's attention kernels on a GPU -------===//
//
// After the first half of attn-lower-to-nvvm-pipeline
// (buildAttnGPUKernelsPipeline), the host side of a function is a sequence of
// gpu.launch_func ops whose operands are the function's arguments (buffers,
// or scalars such as the dropout seed), scalar constants, constant tensors
// (memref.get_global of a memref.global: a model's weights, dense or
// dense_resource, uploaded once), or fresh buffers (memref.alloc) that become
// the function's results or feed later launches, or views of those
// (expand_shape, collapse_shape, subview, ...: the kernels take the base
// pointer, the view's static layout is compiled into them). This holds for
// the fused kernels of convert-attn-to-gpu, the kernels of the linalg ops
// around them (layout glue, embeddings, norms, MLPs) and the naive ones of
// naive=true alike. This file reads that plan from the IR, finishes the
// pipeline (the cubins), then plays the plan with device buffers and the CUDA
// driver API.
//
//===----------------------------------------------------------------------===//
#include "CudaRunner.h"

#include "attnfuse/Dialect/Attn/IR/Attn.h"
#include "attnfuse/Dialect/Attn/Transforms/Passes.h"
#include "attnfuse/ExecutionEngine/CudaDriver.h"
#include "attnfuse/ExecutionEngine/GPUKernels.h"
#include "attnfuse/Pipelines/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/NVGPU/IR/NVGPUDialect.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Matchers.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/Passes.h"

#include <cstring>

using namespace mlir;
using namespace attnfuse_run;

namespace {
/// Where a kernel operand comes from (a TensorMap: the pointer to a TMA
/// tensor map of another operand, GPUKernel::tensorMaps).
struct Operand {
  enum Kind { Argument, Buffer, Constant, TensorMap } kind;
  unsigned index = 0; // argument number, or buffer number
  /// A constant's bits (an integer's value, a float's encoding).
  APInt bits;
  bool isFloat = false;
};

/// A device buffer the host code allocates (or a constant tensor uploaded
/// before the launches: `initial` holds its bytes), and the results it
/// becomes.
struct Buffer {
  MemRefType type;
  SmallVector<unsigned> results;
  std::optional<std::vector<char>> initial;
};

/// A function result that is not written by a kernel: a function argument
/// or a constant returned as it is.
struct Passthrough {
  unsigned result;
  Operand::Kind kind; // Argument or Buffer (a constant's)
  unsigned index;
};

/// The launch plan of the entry function.
struct Plan {
  SmallVector<SmallVector<Operand>> launches;
  SmallVector<Buffer> buffers;
  SmallVector<Passthrough> passthroughs;
};

llvm::Error unsupported(Operation *op, const llvm::Twine &why) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "--target=cuda runs functions whose computations all become GPU "
        "kernels: "
     << why
     << " (" << op->getName() << " at " << op->getLoc() << ")";
  return llvm::createStringError(text);
}

/// Returns the buffer `v` views: through bufferization.to_buffer/to_tensor
/// and the view ops, whose result has the same aligned pointer as their
/// source (the kernels are bare-pointer ones: the view's static offset and
/// strides are part of the kernel).
Value getRoot(Value v) {
  while (Operation *def = v.getDefiningOp()) {
    if (auto toBuffer = dyn_cast<bufferization::ToBufferOp>(def))
      v = toBuffer.getTensor();
    else if (auto toTensor = dyn_cast<bufferization::ToTensorOp>(def))
      v = toTensor.getBuffer();
    else if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
                 memref::SubViewOp, memref::CastOp,
                 memref::ReinterpretCastOp, memref::TransposeOp>(def))
      v = def->getOperand(0);
    else
      break;
  }
  return v;
}

/// Whether `op` is the cast of an nvgpu.tma.create.descriptor to the
/// kernel's tensor-map pointer.
bool isTensorMapPointer(Operation *op) {
  auto cast = dyn_cast<UnrealizedConversionCastOp>(op);
  return cast && cast->getNumOperands() == 1 &&
         cast->getOperand(0).getDefiningOp<nvgpu::TmaCreateDescriptorOp>();
}

bool isView(Operation *op) {
  return isa<memref::ExpandShapeOp, memref::CollapseShapeOp,
             memref::SubViewOp, memref::CastOp, memref::ReinterpretCastOp,
             memref::TransposeOp>(op);
}

/// Returns whether the memref of `v` has a static shape and a layout of
/// static strides and offset (what a bare-pointer kernel argument needs).
bool hasStaticLayout(Value v) {
  auto type = dyn_cast<MemRefType>(v.getType());
  if (!type || !type.hasStaticShape())
    return false;
  int64_t offset;
  SmallVector<int64_t> strides;
  if (failed(type.getStridesAndOffset(strides, offset)))
    return false;
  return !ShapedType::isDynamic(offset) &&
         llvm::none_of(strides, ShapedType::isDynamic);
}

/// The bytes of a constant tensor as in memory (row-major, i1 as one byte),
/// or nullopt if they cannot be read.
std::optional<std::vector<char>> getConstantBytes(Attribute value,
                                                  MemRefType type) {
  size_t elementBytes = type.getElementTypeBitWidth() == 1
                            ? 1
                            : type.getElementTypeBitWidth() / 8;
  size_t n = type.getNumElements();
  // A resource blob (torch-mlir's weights) holds the elements as in memory.
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob)
      return std::nullopt;
    ArrayRef<char> data = blob->getData();
    if (data.size() == n * elementBytes)
      return std::vector<char>(data.begin(), data.end());
    bool splat = false;
    if (!DenseElementsAttr::isValidRawBuffer(resource.getType(), data, splat))
      return std::nullopt;
    value = DenseElementsAttr::getFromRawBuffer(resource.getType(), data);
  }
  auto dense = dyn_cast<DenseElementsAttr>(value);
  if (!dense || (type.getElementTypeBitWidth() % 8 != 0 &&
                    type.getElementTypeBitWidth() != 1))
    return std::nullopt;
  std::vector<char> bytes(n * elementBytes);
  if (dense.getElementType().isInteger(1)) {
    size_t i = 0;
    for (bool b : dense.getValues<bool>())
      bytes[i++] = b;
    return bytes;
  }
  ArrayRef<char> raw = dense.getRawData();
  if (dense.isSplat()) {
    if (raw.size() < elementBytes)
      return std::nullopt;
    for (size_t i = 0; i < n; ++i)
      std::memcpy(bytes.data() + i * elementBytes, raw.data(), elementBytes);
    return bytes;
  }
  if (raw.size() != bytes.size())
    return std::nullopt;
  std::memcpy(bytes.data(), raw.data(), raw.size());
  return bytes;
}

llvm::Expected<Plan> readPlan(func::FuncOp func) {
  Plan plan;
  llvm::DenseMap<Value, unsigned> bufferOf;
  // One device buffer per global, however many get_global ops read it.
  llvm::StringMap<unsigned> bufferOfGlobal;
  if (!func.getBody().hasOneBlock())
    return unsupported(func, "the function has control flow on the host");
  for (Operation &op : func.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      if (!alloc.getType().hasStaticShape() ||
          !alloc.getType().getLayout().isIdentity())
        return unsupported(alloc, "a buffer of dynamic shape or layout");
      bufferOf[alloc] = plan.buffers.size();
      plan.buffers.push_back({alloc.getType(), {}, std::nullopt});
      continue;
    }
    if (auto getGlobal = dyn_cast<memref::GetGlobalOp>(op)) {
      auto global = SymbolTable::lookupNearestSymbolFrom<memref::GlobalOp>(
          getGlobal, getGlobal.getNameAttr());
      if (!global || !global.getInitialValue() ||
          !getGlobal.getType().hasStaticShape() ||
          !getGlobal.getType().getLayout().isIdentity())
        return unsupported(getGlobal, "a global buffer without a static "
                                      "shape or initial value");
      auto [it, inserted] = bufferOfGlobal.try_emplace(
          global.getSymName(), plan.buffers.size());
      if (inserted) {
        std::optional<std::vector<char>> bytes =
            getConstantBytes(*global.getInitialValue(), getGlobal.getType());
        if (!bytes)
          return unsupported(getGlobal, "the value of the constant cannot be "
                                        "read (a missing resource blob?)");
        plan.buffers.push_back({getGlobal.getType(), {}, std::move(*bytes)});
      }
      bufferOf[getGlobal] = it->second;
      continue;
    }
    // Tensor maps of TMA kernels (convert-attn-to-gpu): the unranked view
    // the descriptor op takes, the op and the cast to the kernel's pointer.
    // The launches encode them (GPUKernel::tensorMaps).
    if (auto cast = dyn_cast<memref::CastOp>(op);
        cast && isa<UnrankedMemRefType>(cast.getType()) &&
        llvm::all_of(cast->getUsers(),
                     llvm::IsaPred<nvgpu::TmaCreateDescriptorOp>))
      continue;
    if (isa<nvgpu::TmaCreateDescriptorOp>(op) || isTensorMapPointer(&op))
      continue;
    if (isView(&op)) {
      if (!hasStaticLayout(op.getResult(0)))
        return unsupported(&op, "a view of dynamic shape or layout");
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      SmallVector<Operand> operands;
      for (Value v : launch.getKernelOperands()) {
        Attribute value;
        Value root = getRoot(v);
        if (isa<MemRefType>(v.getType()) && !hasStaticLayout(v))
          return unsupported(launch, "a kernel operand of dynamic shape or "
                                     "layout");
        if (v.getDefiningOp() && isTensorMapPointer(v.getDefiningOp())) {
          operands.push_back({Operand::TensorMap, 0, APInt(), false});
        } else if (auto arg = dyn_cast<BlockArgument>(root)) {
          operands.push_back({Operand::Argument, arg.getArgNumber(), APInt(), false});
        } else if (bufferOf.count(root)) {
          operands.push_back({Operand::Buffer, bufferOf[root], APInt(), false});
        } else if (matchPattern(v, m_Constant(&value)) &&
                   isa<IntegerAttr, FloatAttr>(value)) {
          APInt bits =
              isa<IntegerAttr>(value)
                  ? cast<IntegerAttr>(value).getValue()
                  : cast<FloatAttr>(value).getValue().bitcastToAPInt();
          operands.push_back(
              {Operand::Constant, 0, bits, isa<FloatAttr>(value)});
        } else {
          return unsupported(launch, "a kernel operand is computed on the "
                                     "host");
        }
      }
      plan.launches.push_back(std::move(operands));
      continue;
    }
    if (isa<bufferization::ToBufferOp, bufferization::ToTensorOp,
            arith::ConstantOp, memref::DeallocOp, func::ReturnOp>(op))
      continue;
    return unsupported(&op, "the function computes on the host");
  }
  auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
  for (auto [i, v] : llvm::enumerate(ret.getOperands())) {
    Value root = getRoot(v);
    // The result is read back from the buffer it views, whole: the view
    // must be all of it, in the same order.
    Type type = v.getType();
    if (auto toTensor = v.getDefiningOp<bufferization::ToTensorOp>())
      type = toTensor.getBuffer().getType();
    auto view = dyn_cast<MemRefType>(type);
    auto rootType = dyn_cast<MemRefType>(root.getType());
    bool whole = !view || (rootType && view.getLayout().isIdentity() &&
                           rootType.getLayout().isIdentity() &&
                           view.getNumElements() == rootType.getNumElements());
    if (auto arg = dyn_cast<BlockArgument>(root); arg && whole) {
      plan.passthroughs.push_back({unsigned(i), Operand::Argument,
                                   arg.getArgNumber()});
      continue;
    }
    if (!bufferOf.count(root) || !whole)
      return unsupported(ret, "result " + llvm::Twine(i) +
                                  " is not written by a kernel");
    if (plan.buffers[bufferOf[root]].initial) {
      plan.passthroughs.push_back({unsigned(i), Operand::Buffer,
                                   bufferOf[root]});
      continue;
    }
    plan.buffers[bufferOf[root]].results.push_back(i);
  }
  return plan;
}

size_t byteSize(MemRefType type) {
  unsigned bits = type.getElementTypeBitWidth();
  return type.getNumElements() * (bits == 1 ? 1 : bits / 8);
}

/// The width in bits of a scalar kernel argument of LLVM type `type` ("i64",
/// "f32", ...; 0 if it is none of those).
unsigned scalarBits(llvm::StringRef type) {
  unsigned bits = 0;
  if (type == "f16" || type == "bf16")
    return 16;
  if (type == "f32")
    return 32;
  if (type == "f64")
    return 64;
  if (type.consume_front("i") && !type.getAsInteger(10, bits) && bits <= 64)
    return bits;
  return 0;
}

/// Checks that a kernel's launch configuration is known and within CUDA's
/// limits.
llvm::Error checkLaunchConfiguration(const attnfuse::GPUKernel &kernel) {
  auto error = [&](const llvm::Twine &why) {
    return llvm::createStringError("kernel " + kernel.name + ": " + why);
  };
  int64_t threads = 1;
  for (int i = 0; i < 3; ++i) {
    if (kernel.grid[i] < 1 || kernel.block[i] < 1)
      return error("its grid and block sizes are not compile-time constants");
    threads *= kernel.block[i];
  }
  if (kernel.dynamicSharedMemoryBytes < 0)
    return error("its dynamic shared memory is not a compile-time constant");
  if (threads > 1024 || kernel.block[2] > 64)
    return error("a block of " + llvm::Twine(kernel.block[0]) + "x" +
                 llvm::Twine(kernel.block[1]) + "x" +
                 llvm::Twine(kernel.block[2]) +
                 " threads exceeds CUDA's limits");
  if (kernel.grid[0] > 2147483647 || kernel.grid[1] > 65535 ||
      kernel.grid[2] > 65535)
    return error("a grid of " + llvm::Twine(kernel.grid[0]) + "x" +
                 llvm::Twine(kernel.grid[1]) + "x" +
                 llvm::Twine(kernel.grid[2]) +
                 " blocks exceeds CUDA's limits");
  return llvm::Error::success();
}
} // namespace

llvm::Expected<SmallVector<HostTensor>>
attnfuse_run::executeOnCuda(ModuleOp input, StringRef entry,
                            StringRef pipelineOptions, bool naive,
                            ArrayRef<HostTensor> inputs) {
  // Unfused chains become attn.attention first (the pipeline raises again:
  // nothing is left then), as in the CPU pipeline.
  OwningOpRef<ModuleOp> raised = input.clone();
  PassManager raise(input.getContext());
  attnfuse::attn::AttnRaiseAttentionOptions raiseOptions;
  raiseOptions.report = "none";
  raise.addPass(attnfuse::attn::createAttnRaiseAttention(raiseOptions));
  raise.addPass(createLinalgElementwiseOpFusionPass());
  raise.addPass(createCanonicalizerPass());
  if (failed(raise.run(*raised)))
    return llvm::createStringError("attn-raise-attention failed");
  ModuleOp module = *raised;

  // Only the entry function is compiled: kernels of the module's other
  // functions would not be in its launch plan.
  for (auto other :
       llvm::make_early_inc_range(module.getOps<func::FuncOp>()))
    if (other.getSymName() != entry)
      other.erase();

  // Everything the function computes becomes kernels: the attention ops
  // (fused, or the naive lowering) and the linalg ops around them; what is
  // left on the host is reported by readPlan.
  attnfuse::GPUPipelineOptions options;
  if (failed(options.parseFromString(pipelineOptions)))
    return llvm::createStringError("invalid --pipeline-options for the GPU "
                                   "pipeline");
  options.naive = naive;
  StringRef pipelineName = naive ? "attn-lower-to-nvvm-pipeline{naive=true}"
                                 : "attn-lower-to-nvvm-pipeline";
  // The launch plan, from the bufferized host code once the kernels are
  // outlined (between the pipeline's two halves).
  std::optional<Plan> plan;
  llvm::Error planError = llvm::Error::success();
  FailureOr<std::vector<attnfuse::GPUKernel>> compiled =
      attnfuse::compileForCuda(module, options, [&](ModuleOp kernelsModule) {
        llvm::Expected<Plan> read =
            readPlan(kernelsModule.lookupSymbol<func::FuncOp>(entry));
        if (!read) {
          planError = read.takeError();
          return failure();
        }
        plan = std::move(*read);
        return success();
      });
  if (planError)
    return std::move(planError);
  if (failed(compiled))
    return llvm::createStringError(pipelineName + " failed");
  std::vector<attnfuse::GPUKernel> &kernels = *compiled;
  if (kernels.size() != plan->launches.size())
    return llvm::createStringError("the pipeline produced " +
                                   llvm::Twine(kernels.size()) +
                                   " kernel launches, the plan " +
                                   llvm::Twine(plan->launches.size()));
  for (const attnfuse::GPUKernel &kernel : kernels)
    if (llvm::Error e = checkLaunchConfiguration(kernel))
      return std::move(e);

  llvm::Expected<attnfuse::CudaDriver *> driver = attnfuse::CudaDriver::get();
  if (!driver)
    return driver.takeError();
  attnfuse::CudaDriver &cuda = **driver;
  // Device copies of the tensor arguments and the allocated buffers.
  SmallVector<uint64_t> argumentPtrs(inputs.size(), 0), bufferPtrs;
  auto release = [&] {
    for (uint64_t p : argumentPtrs)
      if (p)
        llvm::consumeError(cuda.free(p));
    for (uint64_t p : bufferPtrs)
      llvm::consumeError(cuda.free(p));
  };
  auto fail = [&](llvm::Error e) -> llvm::Error {
    release();
    return e;
  };
  FunctionType signature =
      input.lookupSymbol<func::FuncOp>(entry).getFunctionType();
  for (auto [i, type] : llvm::enumerate(signature.getInputs())) {
    if (!isa<RankedTensorType>(type))
      continue;
    llvm::Expected<uint64_t> ptr = cuda.allocate(inputs[i].getNumBytes());
    if (!ptr)
      return fail(ptr.takeError());
    argumentPtrs[i] = *ptr;
    if (llvm::Error e = cuda.copyToDevice(*ptr, inputs[i].data(),
                                          inputs[i].getNumBytes()))
      return fail(std::move(e));
  }
  for (const Buffer &buffer : plan->buffers) {
    llvm::Expected<uint64_t> ptr = cuda.allocate(byteSize(buffer.type));
    if (!ptr)
      return fail(ptr.takeError());
    bufferPtrs.push_back(*ptr);
    // Constant tensors (weights) are uploaded before the launches.
    if (buffer.initial)
      if (llvm::Error e = cuda.copyToDevice(*ptr, buffer.initial->data(),
                                            buffer.initial->size()))
        return fail(std::move(e));
  }

  // The tensor map of argument `i` of `kernel`, whose earlier arguments'
  // values are `values`, encoded and copied to a device buffer of its own
  // (released with the others): its address.
  auto makeTensorMap =
      [&](const attnfuse::GPUKernel &kernel, unsigned i,
          ArrayRef<uint64_t> values) -> llvm::Expected<uint64_t> {
    auto map = llvm::find_if(kernel.tensorMaps,
                             [&](const auto &m) { return m.argument == i; });
    if (map == kernel.tensorMaps.end() || map->source >= values.size())
      return llvm::createStringError(
          "kernel " + kernel.name + ": argument " + llvm::Twine(i) +
          " is a tensor map the kernel does not describe");
    llvm::Expected<attnfuse::CudaDriver::TensorMap> encoded =
        cuda.encodeTensorMap(*map, values[map->source]);
    if (!encoded)
      return encoded.takeError();
    llvm::Expected<uint64_t> ptr = cuda.allocate(sizeof(*encoded));
    if (!ptr)
      return ptr.takeError();
    bufferPtrs.push_back(*ptr);
    if (llvm::Error e = cuda.copyToDevice(*ptr, &*encoded, sizeof(*encoded)))
      return std::move(e);
    return *ptr;
  };

  // The launches, in program order.
  for (auto [kernel, operands] : llvm::zip(kernels, plan->launches)) {
    llvm::Expected<void *> function = cuda.loadFunction(
        kernel.binary, kernel.name, kernel.dynamicSharedMemoryBytes);
    if (!function)
      return fail(function.takeError());
    if (operands.size() != kernel.argumentTypes.size())
      return fail(llvm::createStringError(
          "kernel " + kernel.name + " takes " +
          llvm::Twine(kernel.argumentTypes.size()) + " arguments, the plan " +
          llvm::Twine(operands.size())));
    // One 8-byte slot per argument: a pointer, or a scalar in its low bytes
    // (little-endian), as wide as the kernel parameter.
    SmallVector<uint64_t> values;
    for (auto [i, o, type] : llvm::enumerate(operands, kernel.argumentTypes)) {
      if (o.kind == Operand::TensorMap) {
        llvm::Expected<uint64_t> map = makeTensorMap(kernel, i, values);
        if (!map)
          return fail(map.takeError());
        values.push_back(*map);
        continue;
      }
      bool isPointer =
          o.kind == Operand::Buffer ||
          (o.kind == Operand::Argument &&
           isa<RankedTensorType>(signature.getInput(o.index)));
      unsigned bits = scalarBits(type);
      if (isPointer != (type == "ptr") || (!isPointer && bits == 0))
        return fail(llvm::createStringError(
            "kernel " + kernel.name + " takes a " + type +
            " argument where the plan has a " +
            (isPointer ? "buffer" : "scalar") +
            "; --target=cuda passes buffers as pointers and integer or float "
            "scalars"));
      uint64_t slot = 0;
      if (o.kind == Operand::Buffer) {
        slot = bufferPtrs[o.index];
      } else if (isPointer) {
        slot = argumentPtrs[o.index];
      } else if (o.kind == Operand::Constant) {
        // Integer constants (index ones are i64 in the kernel) as wide as
        // the parameter; float constants must already be.
        if (o.isFloat && o.bits.getBitWidth() != bits)
          return fail(llvm::createStringError(
              "kernel " + kernel.name + " takes a " + type +
              " argument for a float constant of " +
              llvm::Twine(o.bits.getBitWidth()) + " bits"));
        slot = o.bits.sextOrTrunc(bits).getZExtValue();
      } else {
        // A scalar argument, passed by value (the dropout seed).
        const HostTensor &scalar = inputs[o.index];
        if (scalar.getNumBytes() * 8 != (bits == 1 ? 8 : bits))
          return fail(llvm::createStringError(
              "kernel " + kernel.name + " takes a " + type +
              " argument for function argument " + llvm::Twine(o.index) +
              " of " + llvm::Twine(scalar.getNumBytes()) + " bytes"));
        std::memcpy(&slot, scalar.data(), scalar.getNumBytes());
      }
      values.push_back(slot);
    }
    SmallVector<void *> arguments;
    for (uint64_t &v : values)
      arguments.push_back(&v);
    if (llvm::Error e =
            cuda.launch(*function, kernel.grid, kernel.block,
                        kernel.dynamicSharedMemoryBytes, arguments))
      return fail(std::move(e));
  }

  // The results.
  SmallVector<HostTensor> results;
  for (Type type : signature.getResults()) {
    auto tensorType = cast<RankedTensorType>(type);
    results.emplace_back(*getElementKind(tensorType.getElementType()),
                         tensorType.getShape());
  }
  for (auto [buffer, ptr] : llvm::zip(plan->buffers, bufferPtrs)) {
    for (unsigned result : buffer.results) {
      HostTensor &out = results[result];
      if (llvm::Error e = cuda.copyToHost(out.data(), ptr, out.getNumBytes()))
        return fail(std::move(e));
    }
  }
  // Results the function returns as they are: an argument, a constant.
  for (const Passthrough &p : plan->passthroughs) {
    HostTensor &out = results[p.result];
    if (p.kind == Operand::Argument)
      std::memcpy(out.data(), inputs[p.index].data(), out.getNumBytes());
    else
      std::memcpy(out.data(), plan->buffers[p.index].initial->data(),
                  out.getNumBytes());
  }
  release();
  return results;
}
