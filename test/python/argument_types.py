# RUN: %python %s | FileCheck %s
# Arguments of the wrong type are TypeErrors (issue 23: attnfuse.jit(src, 3)
# raised AttributeError: 'int' object has no attribute 'encode'), empty or
# unknown values ValueErrors, and a chip for the CPU a CompileError; none of
# them reaches the C API as garbage.
import attnfuse
import attnfuse.cuda_launch

SOURCE = """
func.func @f(%q: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x4x4xf32>,
                          tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
      -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}
"""


def expect(fn, *args, **kwargs):
    try:
        fn(*args, **kwargs)
    except (TypeError, ValueError, attnfuse.CompileError) as e:
        print("%s: %s" % (type(e).__name__, str(e).replace("\n", " | ")))
    else:
        print("no error")


# CHECK: TypeError: entry must be a str, got int
expect(attnfuse.jit, SOURCE, 3)
# CHECK-NEXT: TypeError: entry must be a str, got NoneType
expect(attnfuse.jit, SOURCE, None)
# CHECK-NEXT: ValueError: entry must name a function of the module, got ''
expect(attnfuse.jit, SOURCE, "")
# CHECK-NEXT: TypeError: entry must be a str, got bytes
expect(attnfuse.run, SOURCE, b"f")
# CHECK-NEXT: TypeError: source must be MLIR text (str), got int
expect(attnfuse.jit, 3, "f")
# CHECK-NEXT: TypeError: pipeline must be a str or None, got list
expect(attnfuse.compile, SOURCE, pipeline=["canonicalize"])
# CHECK-NEXT: TypeError: naive must be a bool, got str
expect(attnfuse.compile, SOURCE, naive="no")
# CHECK-NEXT: TypeError: naive must be a bool, got int
expect(attnfuse.jit, SOURCE, "f", naive=1)
# CHECK-NEXT: TypeError: block_q must be an integer, got bool
expect(attnfuse.jit, SOURCE, "f", block_q=True)
# CHECK-NEXT: TypeError: source_name must be a str, got NoneType
expect(attnfuse.compile, SOURCE, source_name=None)
# CHECK-NEXT: TypeError: target must be a str, got int
expect(attnfuse.compile, SOURCE, target=1)
# CHECK-NEXT: ValueError: target must be one of ['cpu', 'cuda'], got 'CUDA'
expect(attnfuse.compile, SOURCE, target="CUDA")
# CHECK-NEXT: TypeError: chip must be a str, got int
expect(attnfuse.compile, SOURCE, target="cuda", chip=80)
# The CPU has no chip: an error of the compilation (the C API's).
# CHECK-NEXT: CompileError: attnfuse compilation failed: | error: chip 'sm_80' given for the CPU target (a chip selects the GPU architecture of the CUDA target)
expect(attnfuse.compile, SOURCE, chip="sm_80")
# An unknown keyword is Python's own TypeError.
# CHECK-NEXT: TypeError: jit() got an unexpected keyword argument 'entry_point'
expect(attnfuse.run, SOURCE, "f", entry_point="f")

# cuda_launch.launch checks its kernel before it imports torch.
# CHECK-NEXT: TypeError: kernel must be an attnfuse.Kernel, got str (no name, binary, grid, block, dynamic_shared_memory_bytes, argument_types)
expect(attnfuse.cuda_launch.launch, "attn_fwd_0")

# The right types still work.
import numpy as np
x = np.ones((1, 1, 4, 4), np.float32)
# CHECK-NEXT: ok: True
print("ok:", bool(np.allclose(attnfuse.run(SOURCE, "f", x, naive=np.bool_(True)), x)))
