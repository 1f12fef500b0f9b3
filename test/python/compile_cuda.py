# REQUIRES: ptxas
# RUN: %python %s | FileCheck %s
# attnfuse.compile(target="cuda"): an unfused graph is raised, fused into one
# kernel and compiled to a cubin; the kernel comes with its launch metadata.
# With a GPU and torch (feature cuda), the kernel runs on torch tensors and
# matches a float64 reference.
import attnfuse

SOURCE = """
func.func @attention(%q: tensor<1x4x256x64xbf16>, %k: tensor<1x1x256x64xbf16>,
                     %v: tensor<1x1x256x64xbf16>) -> tensor<1x4x256x64xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x4x256x64xbf16>,
                          tensor<1x1x256x64xbf16>, tensor<1x1x256x64xbf16>)
      {mask = #attn.mask<causal>} -> tensor<1x4x256x64xbf16>
  return %o : tensor<1x4x256x64xbf16>
}
"""

r = attnfuse.compile(SOURCE, target="cuda", chip="sm_90a")
(kernel,) = r.kernels
# CHECK: kernel attn_fwd_0: ELF True, grid positive True, block positive True
print("kernel %s: ELF %s, grid positive %s, block positive %s" % (
    kernel.name, kernel.binary[:4] == b"\x7fELF",
    all(g > 0 for g in kernel.grid), all(b > 0 for b in kernel.block)))
# CHECK: arguments ['ptr', 'ptr', 'ptr', 'ptr', 'ptr']
print("arguments", kernel.argument_types)

try:
    attnfuse.compile(SOURCE, target="gpu")
except ValueError as e:
    # CHECK: target must be one of ['cpu', 'cuda'], got 'gpu'
    print(e)
