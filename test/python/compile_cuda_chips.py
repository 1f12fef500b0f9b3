# REQUIRES: ptxas
# RUN: %python %s | FileCheck %s
# attnfuse.compile(target="cuda") on chips the f16 kernel cannot be built
# for (no cp.async below sm_80) and on strings that name no chip: a
# CompileError naming the chip, or for a real chip a fallback that compiles;
# never a dead interpreter (issue 23: LLVM ERROR: Cannot select: intrinsic
# %llvm.nvvm.cp.async.cg.shared.global.16 killed it).
import attnfuse

SOURCE = """
func.func @attention(%q: tensor<1x2x64x64xf16>, %k: tensor<1x2x64x64xf16>,
                     %v: tensor<1x2x64x64xf16>) -> tensor<1x2x64x64xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x64x64xf16>,
                          tensor<1x2x64x64xf16>, tensor<1x2x64x64xf16>)
      -> tensor<1x2x64x64xf16>
  return %o : tensor<1x2x64x64xf16>
}
"""

for chip in ["sm_75", "sm_60", "sm_30", "not_a_chip"]:
    try:
        r = attnfuse.compile(SOURCE, target="cuda", chip=chip)
        print("chip %s: compiled, %d kernel(s)" % (chip, len(r.kernels)))
    except attnfuse.CompileError as e:
        print("chip %s: CompileError, an error names the chip %s" % (
            chip, any(d.severity == "error" and chip in d.message
                      for d in e.diagnostics)))
# CHECK: chip sm_75: {{compiled, [1-9][0-9]* kernel\(s\)|CompileError, an error names the chip True}}
# CHECK-NEXT: chip sm_60: {{compiled, [1-9][0-9]* kernel\(s\)|CompileError, an error names the chip True}}
# CHECK-NEXT: chip sm_30: {{compiled, [1-9][0-9]* kernel\(s\)|CompileError, an error names the chip True}}
# CHECK-NEXT: chip not_a_chip: CompileError, an error names the chip True
# CHECK-NEXT: interpreter alive
print("interpreter alive")
