# REQUIRES: cuda
# RUN: %python %s | FileCheck %s
# A kernel compiled in-process by attnfuse.compile(target="cuda") launched on
# torch tensors through attnfuse.cuda_launch; O and LSE against float64.
import attnfuse
import attnfuse.cuda_launch as cl
import torch

SOURCE = """
func.func @attention(%q: tensor<2x8x300x128xbf16>, %k: tensor<2x2x333x128xbf16>,
                     %v: tensor<2x2x333x128xbf16>)
    -> (tensor<2x8x300x128xbf16>, tensor<2x8x300xf32>) {
  %o, %lse = attn.attention ins(%q, %k, %v : tensor<2x8x300x128xbf16>,
                                tensor<2x2x333x128xbf16>, tensor<2x2x333x128xbf16>)
      {mask = #attn.mask<causal>, alignment = #attn.alignment<bottom_right>}
      -> tensor<2x8x300x128xbf16>, tensor<2x8x300xf32>
  return %o, %lse : tensor<2x8x300x128xbf16>, tensor<2x8x300xf32>
}
"""
(kernel,) = attnfuse.compile(SOURCE, target="cuda").kernels
# The sm_90a kernel loads Q, K and V by TMA: launch() encodes their tensor
# maps from q, k and v (the caller passes the other arguments only).
# CHECK: tensor maps of arguments [0, 1, 2]
print("tensor maps of arguments", [m["source"] for m in kernel.tensor_maps])
g = torch.Generator(device="cuda").manual_seed(0)
q = torch.randn(2, 8, 300, 128, device="cuda", generator=g).bfloat16()
k = torch.randn(2, 2, 333, 128, device="cuda", generator=g).bfloat16()
v = torch.randn(2, 2, 333, 128, device="cuda", generator=g).bfloat16()
o = torch.full((2, 8, 300, 128), float("nan"), device="cuda").bfloat16()
lse = torch.full((2, 8, 300), float("nan"), device="cuda")
cl.launch(kernel, q, k, v, o, lse)
torch.cuda.synchronize()

qd, kd, vd = (t.double() for t in (q, k, v))
kd, vd = kd.repeat_interleave(4, 1), vd.repeat_interleave(4, 1)
s = qd @ kd.transpose(-1, -2) / 128 ** 0.5
rel = torch.arange(333, device="cuda")[None] - (torch.arange(300, device="cuda")[:, None] + 33)
s = s.masked_fill(rel > 0, float("-inf"))
ref_lse = torch.logsumexp(s, -1)
ref = torch.softmax(s, -1) @ vd
low = (torch.softmax(s.float(), -1).bfloat16() @ vd.bfloat16()).double()
err, low_err = (o.double() - ref).abs().max().item(), (low - ref).abs().max().item()
ok = err <= 2 * low_err + 1e-3 and (lse.double() - ref_lse).abs().max().item() < 1e-3
# CHECK: cuda launch: PASS
print("cuda launch: %s (max|O - fp64| = %.2e, bf16 torch %.2e)" %
      ("PASS" if ok else "FAIL", err, low_err))
