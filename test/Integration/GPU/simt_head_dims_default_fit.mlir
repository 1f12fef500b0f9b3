// REQUIRES: cuda
// The simt family's defaults at head dims that its earlier defaults refused:
// Dqk = 256 with Dv = 136 (threads per row 2: 136 = 4 * 2 * 17) and
// Dqk = Dv = 256 (16 keys per block, so that the f32 K and V blocks fit in
// 48 KB of static shared memory), against the naive lowering on the GPU and
// fp64.
// RUN: attnfuse-run %s --entry=dv136 --target=cuda --check=fa --pipeline-options="mma=simt"
// RUN: attnfuse-run %s --entry=d256 --target=cuda --check=fa --pipeline-options="mma=simt"
func.func @dv136(%q: tensor<1x2x130x256xbf16>, %k: tensor<1x2x150x256xbf16>, %v: tensor<1x2x150x136xbf16>) -> tensor<1x2x130x136xbf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x130x256xbf16>, tensor<1x2x150x256xbf16>, tensor<1x2x150x136xbf16>) {mask = #attn.mask<causal>} -> tensor<1x2x130x136xbf16>
  return %o : tensor<1x2x130x136xbf16>
}
func.func @d256(%q: tensor<1x2x100x256xf16>, %k: tensor<1x2x100x256xf16>, %v: tensor<1x2x100x256xf16>) -> tensor<1x2x100x256xf16> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x100x256xf16>, tensor<1x2x100x256xf16>, tensor<1x2x100x256xf16>) -> tensor<1x2x100x256xf16>
  return %o : tensor<1x2x100x256xf16>
}
