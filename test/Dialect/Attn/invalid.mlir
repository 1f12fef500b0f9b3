// RUN: attnfuse-opt %s -split-input-file -verify-diagnostics

func.func @rank(%q: tensor<2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{query must have rank 4 [B, Hq, Nq, Dqk], got rank 3}}
  %o = attn.attention ins(%q, %k, %v : tensor<2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @dynamic_mixed(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x?x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{key and value must have the same sequence length, got ? and 8}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x?x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @element_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf64>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{value element type must be f16, bf16 or f32, got 'f64'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf64>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @mixed_element_types(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf16>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{query, key and value must have the same element type, got 'f32', 'f16' and 'f32'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @batch(%q: tensor<1x2x8x16xf32>, %k: tensor<2x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{batch sizes differ: query 1, key 2, value 1}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<2x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @kv_heads(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x1x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{key and value must have the same number of heads, got 2 and 1}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x1x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @kv_length(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x9x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{key and value must have the same sequence length, got 8 and 9}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x9x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @head_dim(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x32xf32>, %v: tensor<1x2x8x32xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{query and key head dimensions differ: 16 and 32}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x32xf32>, tensor<1x2x8x32xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @zero_size(%q: tensor<1x2x0x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x0x16xf32> {
  // expected-error @+1 {{query, key and value dimensions must be positive}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x0x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x0x16xf32>
  return %o : tensor<1x2x0x16xf32>
}

// -----

func.func @gqa(%q: tensor<1x3x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x3x8x16xf32> {
  // expected-error @+1 {{number of query heads (3) must be a multiple of the number of key/value heads (2)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x3x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x3x8x16xf32>
  return %o : tensor<1x3x8x16xf32>
}

// -----

func.func @output_shape(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32> {
  // expected-error @+1 {{output must be 'tensor<1x2x8x16xf32>' ([B, Hq, Nq, Dv] in the query's element type), got 'tensor<1x2x8x8xf32>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x8xf32>
  return %o : tensor<1x2x8x8xf32>
}

// -----

func.func @output_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf16> {
  // expected-error @+1 {{output must be 'tensor<1x2x8x16xf32>' ([B, Hq, Nq, Dv] in the query's element type), got 'tensor<1x2x8x16xf16>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf16>
  return %o : tensor<1x2x8x16xf16>
}

// -----

func.func @bias_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %b: tensor<8x8xi32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{bias element type must be f16, bf16, f32 or f64, got 'i32'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) bias(%b : tensor<8x8xi32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @bias_rank(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %b: tensor<1x1x2x8x8xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{bias must have rank at most 4, got rank 5}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) bias(%b : tensor<1x1x2x8x8xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @dynamic_head_dim(%q: tensor<1x2x8x?xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{query must have static head count and head dim (dimensions 1 and 3), got 'tensor<1x2x8x?xf32>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x?xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @dynamic_batch_mixed(%q: tensor<?x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<?x2x8x16xf32> {
  // expected-error @+1 {{batch sizes differ: query ?, key 1, value 1}}
  %o = attn.attention ins(%q, %k, %v : tensor<?x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<?x2x8x16xf32>
  return %o : tensor<?x2x8x16xf32>
}

// -----

func.func @bias_static_for_runtime(%q: tensor<1x2x?x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %b: tensor<8x8xf32>) -> tensor<1x2x?x16xf32> {
  // expected-error @+1 {{bias of shape [8, 8] does not broadcast to [B, Hq, Nq, Nk] = [1, 2, ?, 8] (dimension 0 is 8: a runtime size takes '?' or 1, a static one its size or 1)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x?x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) bias(%b : tensor<8x8xf32>) -> tensor<1x2x?x16xf32>
  return %o : tensor<1x2x?x16xf32>
}

// -----

func.func @bias_dynamic(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %b: tensor<?x8xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{bias of shape [?, 8] does not broadcast to [B, Hq, Nq, Nk] = [1, 2, 8, 8] (dimension 0 is runtime ('?'): a runtime size takes '?' or 1, a static one its size or 1)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) bias(%b : tensor<?x8xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @bias_broadcast(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %b: tensor<1x3x8x8xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{bias of shape [1, 3, 8, 8] does not broadcast to [B, Hq, Nq, Nk] = [1, 2, 8, 8] (dimension 1 is 3, expected 1 or 2)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) bias(%b : tensor<1x3x8x8xf32>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @keep_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %m: tensor<8x8xi8>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{keep_mask element type must be i1, got 'i8'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) keep(%m : tensor<8x8xi8>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @keep_broadcast(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %m: tensor<7xi1>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{keep_mask of shape [7] does not broadcast to [B, Hq, Nq, Nk] = [1, 2, 8, 8] (dimension 0 is 7, expected 1 or 8)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) keep(%m : tensor<7xi1>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @scale(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{scale must be finite}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {scale = 0x7F800000 : f32} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @window_attrs(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{window_left and window_right require mask = #attn.mask<sliding_window>}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {mask = #attn.mask<causal>, window_left = 2} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @window_missing(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{a sliding_window mask requires both window_left and window_right}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {mask = #attn.mask<sliding_window>, window_left = 2} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @window_negative(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{window bounds must be non-negative, got window_left = -1, window_right = 2}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {mask = #attn.mask<sliding_window>, window_left = -1, window_right = 2} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @alignment(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{alignment = #attn.alignment<bottom_right> requires a causal or sliding_window mask}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {alignment = #attn.alignment<bottom_right>} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @dropout_range(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{dropout_p must be in [0, 1), got 1}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {dropout_p = 1.0 : f32} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @dropout_seed(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{dropout_p > 0 requires a seed operand}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) {dropout_p = 0.5 : f32} -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @seed_without_dropout(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %s: i64) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{a seed operand requires dropout_p > 0}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) seed(%s) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @lse(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8xf16> {
  // expected-error @+1 {{lse must be 'tensor<1x2x8xf32>' ([B, Hq, Nq] in f32), got 'tensor<1x2x8xf16>'}}
  %o, %l = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>, tensor<1x2x8xf16>
  return %l : tensor<1x2x8xf16>
}

// -----

func.func @region_signature(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{score_mod region must take (score: f32, b: index, h: index, q: index, k: index)}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) score_mod {
  ^bb0(%s: f32, %i: index):
    attn.yield %s : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @region_yield(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{score_mod region must end with attn.yield of one f32 value}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    %d = arith.extf %s : f32 to f64
    attn.yield %d : f64
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @region_blocks(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{score_mod region must have exactly one block}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    cf.br ^bb1
  ^bb1:
    attn.yield %s : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @region_effects(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %buf: memref<f32>) -> tensor<1x2x8x16xf32> {
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) score_mod {
  ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
    // expected-error @+1 {{'memref.load' op inside a score_mod region must be free of memory effects}}
    %x = memref.load %buf[] : memref<f32>
    attn.yield %x : f32
  } -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

func.func @yield_parent(%x: f32) {
  // expected-error @+1 {{'attn.yield' op expects parent op to be one of 'attn.attention, attn.attention_backward'}}
  attn.yield %x : f32
}

// -----

func.func @backward_output(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf16>, %lse: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{output must be 'tensor<1x2x8x16xf32>' ([B, Hq, Nq, Dv]), got 'tensor<1x2x8x16xf16>'}}
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf16>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @backward_grad_output(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf32>, %do: tensor<1x2x9x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{grad_output must be 'tensor<1x2x8x16xf32>' ([B, Hq, Nq, Dv]), got 'tensor<1x2x9x16xf32>'}}
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x9x16xf32>) -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @backward_lse(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf16>, %do: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{lse must be 'tensor<1x2x8xf32>' ([B, Hq, Nq] in f32), got 'tensor<1x2x8xf16>'}}
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf32>, tensor<1x2x8xf16>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @backward_results(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{grad_key must have the type of its input, 'tensor<1x2x8x16xf32>', got 'tensor<1x2x8x16xf16>'}}
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf16>, tensor<1x2x8x16xf32>
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @backward_grad_bias_without_bias(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{grad_bias needs a bias operand}}
  %dq, %dk, %dv, %db = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8x8xf32>
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @backward_grad_bias_type(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xf32>, %bias: tensor<1x8xf16>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{grad_bias must have the type of the bias, 'tensor<1x8xf16>', got 'tensor<8x8xf16>'}}
  %dq, %dk, %dv, %db = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) bias(%bias : tensor<1x8xf16>) -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<8x8xf16>
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @backward_not_differentiable(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %o: tensor<1x2x8x16xf32>, %lse: tensor<1x2x8xf32>, %do: tensor<1x2x8x16xf32>) -> tensor<1x2x8x16xf32> {
  %dq, %dk, %dv = attn.attention_backward ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>)
      grad(%o, %lse, %do : tensor<1x2x8x16xf32>, tensor<1x2x8xf32>, tensor<1x2x8x16xf32>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        // expected-error @+1 {{'math.floor' op in a score_mod region cannot be differentiated with respect to the score}}
        %f = math.floor %s : f32
        attn.yield %f : f32
      } -> tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>
  return %dq : tensor<1x2x8x16xf32>
}

// -----

func.func @bias_f8(%q: tensor<1x2x8x16xf32>, %k: tensor<1x2x8x16xf32>, %v: tensor<1x2x8x16xf32>, %b: tensor<8x8xf8E4M3FN>) -> tensor<1x2x8x16xf32> {
  // expected-error @+1 {{bias element type must be f16, bf16, f32 or f64, got 'f8E4M3FN'}}
  %o = attn.attention ins(%q, %k, %v : tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>, tensor<1x2x8x16xf32>) bias(%b : tensor<8x8xf8E4M3FN>) -> tensor<1x2x8x16xf32>
  return %o : tensor<1x2x8x16xf32>
}

// -----

// The generic form can give a required operand an empty segment.
func.func @empty_required_segment(%q: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{requires exactly one 'key' operand (operandSegmentSizes), got 2}}
  %o = "attn.attention"(%q, %q, %q) <{operandSegmentSizes = array<i32: 1, 2, 0, 0, 0, 0, 0, 0, 0, 0>}> ({}) : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}

// -----

func.func @empty_required_segment_value(%q: tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{requires exactly one 'value' operand (operandSegmentSizes), got 0}}
  %o = "attn.attention"(%q, %q, %q) <{operandSegmentSizes = array<i32: 1, 1, 0, 1, 0, 0, 0, 0, 0, 0>}> ({}) : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  return %o : tensor<1x1x4x4xf32>
}

// -----

func.func @backward_empty_required_segment(%q: tensor<1x1x4x4xf32>, %lse: tensor<1x1x4xf32>) -> tensor<1x1x4x4xf32> {
  // expected-error @+1 {{requires exactly one 'lse' operand (operandSegmentSizes), got 0}}
  %dq, %dk, %dv = "attn.attention_backward"(%q, %q, %q, %q, %q, %lse) <{operandSegmentSizes = array<i32: 1, 1, 1, 1, 0, 1, 1, 0, 0, 0, 0, 0>}> ({}) : (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
  return %dq : tensor<1x1x4x4xf32>
}

// -----

// An element count that overflows int64 (the score matrix has 2^64 elements).
func.func @score_matrix_too_large(%q: tensor<1x1x4294967296x4xf32>) -> tensor<1x1x4294967296x4xf32> {
  // expected-error @+1 {{the score matrix [1, 1, 4294967296, 4294967296] has more than 2^60 elements (its size in f64 must fit in int64)}}
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x4294967296x4xf32>, tensor<1x1x4294967296x4xf32>, tensor<1x1x4294967296x4xf32>) -> tensor<1x1x4294967296x4xf32>
  return %o : tensor<1x1x4294967296x4xf32>
}

// -----

func.func @operand_too_large(%q: tensor<1x1x1x4611686018427387904xf32>) -> tensor<1x1x1x4611686018427387904xf32> {
  // expected-error @+1 {{the query [1, 1, 1, 4611686018427387904] has more than 2^60 elements}}
  %o = attn.attention ins(%q, %q, %q : tensor<1x1x1x4611686018427387904xf32>, tensor<1x1x1x4611686018427387904xf32>, tensor<1x1x1x4611686018427387904xf32>) -> tensor<1x1x1x4611686018427387904xf32>
  return %o : tensor<1x1x1x4611686018427387904xf32>
}

// -----

// A score used only inside a nested region has a derivative the forward mode
// cannot see (it read dQ = dK = 0): rejected at that op.
func.func @backward_score_in_nested_region(%q: tensor<1x1x4x4xf32>, %o: tensor<1x1x4x4xf32>, %lse: tensor<1x1x4xf32>) -> tensor<1x1x4x4xf32> {
  %dq, %dk, %dv = attn.attention_backward ins(%q, %q, %q : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>)
      grad(%o, %lse, %o : tensor<1x1x4x4xf32>, tensor<1x1x4xf32>, tensor<1x1x4x4xf32>) score_mod {
      ^bb0(%s: f32, %b: index, %h: index, %i: index, %j: index):
        %c = arith.cmpi ule, %j, %i : index
        // expected-error @+1 {{'scf.if' op in a score_mod region cannot be differentiated with respect to the score (it uses the score inside its regions}}
        %r = scf.if %c -> f32 {
          %t = math.tanh %s : f32
          scf.yield %t : f32
        } else {
          %z = arith.constant 0.0 : f32
          scf.yield %z : f32
        }
        attn.yield %r : f32
      } -> tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>
  return %dq : tensor<1x1x4x4xf32>
}

// -----

func.func @key_lengths_type(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x6x8xf32>, %v: tensor<2x1x6x8xf32>,
                            %lens: tensor<2xf32>) -> tensor<2x1x4x8xf32> {
  // expected-error @+1 {{key_lengths must be a rank-1 tensor of i32 or i64 [B], got 'tensor<2xf32>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<2x1x4x8xf32>, tensor<2x1x6x8xf32>, tensor<2x1x6x8xf32>)
      key_lengths(%lens : tensor<2xf32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

func.func @key_lengths_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x6x8xf32>, %v: tensor<2x1x6x8xf32>,
                             %lens: tensor<3xi32>) -> tensor<2x1x4x8xf32> {
  // expected-error @+1 {{key_lengths must have the query's batch size 2 in dimension 0, got 'tensor<3xi32>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<2x1x4x8xf32>, tensor<2x1x6x8xf32>, tensor<2x1x6x8xf32>)
      key_lengths(%lens : tensor<3xi32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

func.func @key_lengths_runtime_batch(%q: tensor<?x1x4x8xf32>, %k: tensor<?x1x6x8xf32>, %v: tensor<?x1x6x8xf32>,
                                     %lens: tensor<2xi32>) -> tensor<?x1x4x8xf32> {
  // expected-error @+1 {{key_lengths must have the query's batch size ? in dimension 0, got 'tensor<2xi32>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<?x1x4x8xf32>, tensor<?x1x6x8xf32>, tensor<?x1x6x8xf32>)
      key_lengths(%lens : tensor<2xi32>) -> tensor<?x1x4x8xf32>
  return %o : tensor<?x1x4x8xf32>
}

// -----

func.func @block_table_rank(%q: tensor<2x1x4x8xf32>, %k: tensor<5x1x4x8xf32>, %v: tensor<5x1x4x8xf32>,
                            %t: tensor<2xi32>) -> tensor<2x1x4x8xf32> {
  // expected-error @+1 {{block_table must be a rank-2 tensor of i32 or i64 [B, P], got 'tensor<2xi32>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<2x1x4x8xf32>, tensor<5x1x4x8xf32>, tensor<5x1x4x8xf32>)
      block_table(%t : tensor<2xi32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

func.func @block_table_pages(%q: tensor<2x1x4x8xf32>, %k: tensor<5x1x4x8xf32>, %v: tensor<6x1x4x8xf32>,
                             %t: tensor<2x3xi32>) -> tensor<2x1x4x8xf32> {
  // expected-error @+1 {{paged key and value must have the same number of pages, got 5 and 6}}
  %o = attn.attention ins(%q, %k, %v : tensor<2x1x4x8xf32>, tensor<5x1x4x8xf32>, tensor<6x1x4x8xf32>)
      block_table(%t : tensor<2x3xi32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

func.func @block_table_page_size(%q: tensor<2x1x4x8xf32>, %k: tensor<5x1x?x8xf32>, %v: tensor<5x1x?x8xf32>,
                                 %t: tensor<2x3xi32>) -> tensor<2x1x4x8xf32> {
  // expected-error @+1 {{paged key and value must have a static page size (dimension 2), got 'tensor<5x1x?x8xf32>'}}
  %o = attn.attention ins(%q, %k, %v : tensor<2x1x4x8xf32>, tensor<5x1x?x8xf32>, tensor<5x1x?x8xf32>)
      block_table(%t : tensor<2x3xi32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

// The bias broadcasts to [B, Hq, Nq, P * page size] = [2, 1, 4, 12].
func.func @block_table_bias(%q: tensor<2x1x4x8xf32>, %k: tensor<5x1x4x8xf32>, %v: tensor<5x1x4x8xf32>,
                            %t: tensor<2x3xi32>, %bias: tensor<4x4xf32>) -> tensor<2x1x4x8xf32> {
  // expected-error @+1 {{bias of shape [4, 4] does not broadcast to [B, Hq, Nq, Nk] = [2, 1, 4, 12] (dimension 1 is 4, expected 1 or 12)}}
  %o = attn.attention ins(%q, %k, %v : tensor<2x1x4x8xf32>, tensor<5x1x4x8xf32>, tensor<5x1x4x8xf32>)
      bias(%bias : tensor<4x4xf32>) block_table(%t : tensor<2x3xi32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

func.func @offsets_one_side(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x6x8xf32>, %cq: tensor<3xi32>) -> tensor<1x1x4x8xf32> {
  // expected-error @+1 {{sequence_offsets needs both the query and the key offsets}}
  %o = "attn.attention"(%q, %k, %k, %cq) <{operandSegmentSizes = array<i32: 1, 1, 1, 0, 0, 0, 0, 0, 1, 0>}> ({}) : (tensor<1x1x4x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32>, tensor<3xi32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

func.func @offsets_type(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x6x8xf32>, %cq: tensor<3xi32>, %ck: tensor<3x1xi32>) -> tensor<1x1x4x8xf32> {
  // expected-error @+1 {{key offsets must be a rank-1 tensor of i32 or i64 [S + 1], got 'tensor<3x1xi32>'}}
  %o = attn.attention ins(%q, %k, %k : tensor<1x1x4x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32>)
      sequence_offsets(%cq, %ck : tensor<3xi32>, tensor<3x1xi32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

func.func @offsets_lengths(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x6x8xf32>, %cq: tensor<3xi32>, %ck: tensor<4xi64>) -> tensor<1x1x4x8xf32> {
  // expected-error @+1 {{query and key offsets must have the same length S + 1, got 3 and 4}}
  %o = attn.attention ins(%q, %k, %k : tensor<1x1x4x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32>)
      sequence_offsets(%cq, %ck : tensor<3xi32>, tensor<4xi64>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

func.func @offsets_batch(%q: tensor<2x1x4x8xf32>, %k: tensor<2x1x6x8xf32>, %cq: tensor<3xi32>) -> tensor<2x1x4x8xf32> {
  // expected-error @+1 {{packed sequences (sequence_offsets) need batch 1, got 2}}
  %o = attn.attention ins(%q, %k, %k : tensor<2x1x4x8xf32>, tensor<2x1x6x8xf32>, tensor<2x1x6x8xf32>)
      sequence_offsets(%cq, %cq : tensor<3xi32>, tensor<3xi32>) -> tensor<2x1x4x8xf32>
  return %o : tensor<2x1x4x8xf32>
}

// -----

func.func @offsets_runtime_batch(%q: tensor<?x1x4x8xf32>, %k: tensor<?x1x6x8xf32>, %cq: tensor<3xi32>) -> tensor<?x1x4x8xf32> {
  // expected-error @+1 {{packed sequences (sequence_offsets) need batch 1, got ?}}
  %o = attn.attention ins(%q, %k, %k : tensor<?x1x4x8xf32>, tensor<?x1x6x8xf32>, tensor<?x1x6x8xf32>)
      sequence_offsets(%cq, %cq : tensor<3xi32>, tensor<3xi32>) -> tensor<?x1x4x8xf32>
  return %o : tensor<?x1x4x8xf32>
}

// -----

func.func @offsets_and_lengths(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x6x8xf32>, %cq: tensor<3xi32>, %lens: tensor<1xi32>) -> tensor<1x1x4x8xf32> {
  // expected-error @+1 {{sequence_offsets cannot be combined with key_lengths or block_table}}
  %o = attn.attention ins(%q, %k, %k : tensor<1x1x4x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32>)
      key_lengths(%lens : tensor<1xi32>) sequence_offsets(%cq, %cq : tensor<3xi32>, tensor<3xi32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}

// -----

func.func @offsets_empty(%q: tensor<1x1x4x8xf32>, %k: tensor<1x1x6x8xf32>, %cq: tensor<0xi32>) -> tensor<1x1x4x8xf32> {
  // expected-error @+1 {{sequence offsets need at least one entry (S + 1 >= 1), got 0}}
  %o = attn.attention ins(%q, %k, %k : tensor<1x1x4x8xf32>, tensor<1x1x6x8xf32>, tensor<1x1x6x8xf32>)
      sequence_offsets(%cq, %cq : tensor<0xi32>, tensor<0xi32>) -> tensor<1x1x4x8xf32>
  return %o : tensor<1x1x4x8xf32>
}
