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
# Q, K, V, O, lse and, as the sm_90a kernel loads Q, K and V and stores O
# by TMA, a tensor map of each: the launcher encodes them
# (cuda_launch.launch takes the other five), from what tensor_maps says.
# CHECK: arguments ['ptr', 'ptr', 'ptr', 'ptr', 'ptr', 'ptr', 'ptr', 'ptr', 'ptr']
print("arguments", kernel.argument_types)
for m in kernel.tensor_maps:
    print("tensor map %(argument)d of %(source)d: %(dtype)s %(dims)s box "
          "%(box)s swizzle %(swizzle)d l2 %(l2_promotion)d" % m)
# CHECK-NEXT: tensor map 5 of 0: bf16 [1, 4, 256, 64] box [1, 1, {{[0-9]+}}, 64] swizzle 128 l2 {{[0-9]+}}
# CHECK-NEXT: tensor map 6 of 1: bf16 [1, 1, 256, 64] box [1, 1, {{[0-9]+}}, 64] swizzle 128 l2 {{[0-9]+}}
# CHECK-NEXT: tensor map 7 of 2: bf16 [1, 1, 256, 64] box [1, 1, {{[0-9]+}}, 64] swizzle 128 l2 {{[0-9]+}}
# CHECK-NEXT: tensor map 8 of 3: bf16 [1, 4, 256, 64] box [1, 1, 64, 64] swizzle 128 l2 {{[0-9]+}}
# CHECK-NEXT: Kernel(attn_fwd_0, {{.*}}, tensor_maps=[{'argument': 5,
print(repr(kernel))

# The sm_80 kernel (mma_sync) takes no tensor maps; nor does a Kernel made
# without them.
(kernel80,) = attnfuse.compile(SOURCE, target="cuda", chip="sm_80").kernels
# CHECK-NEXT: sm_80: 5 arguments, tensor maps [], repr without them True
print("sm_80: %d arguments, tensor maps %s, repr without them %s" % (
    len(kernel80.argument_types), kernel80.tensor_maps,
    "tensor_maps" not in repr(kernel80)))
# CHECK-NEXT: made by hand: []
print("made by hand:", attnfuse.Kernel("k", b"", (1, 1, 1), (1, 1, 1), 0,
                                       ["ptr"]).tensor_maps)

try:
    attnfuse.compile(SOURCE, target="gpu")
except ValueError as e:
    # CHECK: target must be one of ['cpu', 'cuda'], got 'gpu'
    print(e)
