#!/usr/bin/env python3
"""Padding masks built from per-sequence lengths, exported by torch-mlir.

Speech and sequence models (torchaudio's Conformer/Emformer,
`_lengths_to_padding_mask`; ESPnet's and NeMo's `make_pad_mask`) build
their attention padding from a lengths tensor: `arange(Nk) >= lengths[:,
None]`, then masked_fill with -inf (eager) or an additive -inf mask to
SDPA. attn-raise-attention takes such a mask as the op's key_lengths. This
writes, for test/Dialect/Attn/Transforms/mask_key_lengths.test, the
torch.export + torch_mlir.fx (linalg-on-tensors) of:

  key_lengths_sdpa.mlir      additive -inf mask to SDPA
  key_lengths_sdpa_bool.mlir boolean keep mask `arange < lengths` to SDPA
                             (NeMo's and ESPnet's form)
  key_lengths_eager.mlir     masked_fill(-inf) of the scores, softmax, @ v
  key_lengths_causal.mlir    causal (top-left) AND the padding, eager
  key_lengths_per_head.mlir  lengths per head (not per batch): no key lengths
  key_lengths_inclusive.mlir k > L hidden (k <= L shown: L + 1 keys): no key
                             lengths of L
  key_lengths_queries.mlir   the lengths hide query rows, not keys: none
  key_lengths_conformer.mlir torchaudio's Conformer (1 layer, 2 heads, d 8;
                             nn.MultiheadAttention with key_padding_mask
                             from _lengths_to_padding_mask), when
                             torchaudio imports

usage: .venv-corpus/bin/python scripts/corpus/generate_key_lengths.py
(torchaudio: its models are Python; the venv's torch is newer than any
torchaudio wheel, so install it beside without its dependencies:
pip install --no-deps --target DIR torchaudio==2.11.1, then PYTHONPATH=DIR)
"""
import os

import torch
import torch.nn.functional as F
from torch_mlir import fx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "test", "Dialect", "Attn", "Transforms", "Inputs")


def pad_mask(lengths, n):
    """torchaudio's _lengths_to_padding_mask: True where padded."""
    b = lengths.shape[0]
    return torch.arange(n, device=lengths.device).expand(b, n) >= \
        lengths.unsqueeze(1)


class Sdpa(torch.nn.Module):
    def forward(self, q, k, v, lengths):
        b, _, n, _ = k.shape
        mask = torch.zeros(b, 1, 1, n).masked_fill(
            pad_mask(lengths, n)[:, None, None, :], float("-inf"))
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)


class SdpaBool(torch.nn.Module):
    def forward(self, q, k, v, lengths):
        b, n = k.shape[0], k.shape[2]
        keep = torch.arange(n).expand(b, n) < lengths.unsqueeze(-1)
        return F.scaled_dot_product_attention(q, k, v,
                                              attn_mask=keep[:, None, None, :])


class Eager(torch.nn.Module):
    def forward(self, q, k, v, lengths):
        n, d = k.shape[2], k.shape[3]
        s = q @ k.transpose(-1, -2) / d ** 0.5
        s = s.masked_fill(pad_mask(lengths, n)[:, None, None, :],
                          float("-inf"))
        return torch.softmax(s, -1) @ v


class Causal(torch.nn.Module):
    def forward(self, q, k, v, lengths):
        nq, n, d = q.shape[2], k.shape[2], k.shape[3]
        s = q @ k.transpose(-1, -2) * d ** -0.5
        future = torch.ones(nq, n, dtype=torch.bool).triu(1)
        hide = future[None, None] | pad_mask(lengths, n)[:, None, None, :]
        s = s.masked_fill(hide, float("-inf"))
        return torch.softmax(s, -1) @ v


class PerHead(torch.nn.Module):
    def forward(self, q, k, v, lengths):
        h, n, d = k.shape[1], k.shape[2], k.shape[3]
        s = q @ k.transpose(-1, -2) * d ** -0.5
        hide = torch.arange(n).expand(h, n) >= lengths[:h].unsqueeze(1)
        s = s.masked_fill(hide[None, :, None, :], float("-inf"))
        return torch.softmax(s, -1) @ v


class Inclusive(torch.nn.Module):
    def forward(self, q, k, v, lengths):
        b, n, d = k.shape[0], k.shape[2], k.shape[3]
        s = q @ k.transpose(-1, -2) * d ** -0.5
        hide = torch.arange(n).expand(b, n) > lengths.unsqueeze(1)
        s = s.masked_fill(hide[:, None, None, :], float("-inf"))
        return torch.softmax(s, -1) @ v


class Queries(torch.nn.Module):
    def forward(self, q, k, v, lengths):
        b, nq, d = q.shape[0], q.shape[2], q.shape[3]
        s = q @ k.transpose(-1, -2) * d ** -0.5
        hide = torch.arange(nq).expand(b, nq) >= lengths.unsqueeze(1)
        s = s.masked_fill(hide[:, None, :, None], -1e4)
        return torch.softmax(s, -1) @ v


def conformer(time):
    """torchaudio's Conformer, its padding mask's max(lengths).item() (data
    dependent for torch.export) replaced by the padded time dim."""
    import torchaudio.models.conformer as conf

    def lengths_to_padding_mask(lengths):
        return torch.arange(time, dtype=lengths.dtype).expand(
            lengths.shape[0], time) >= lengths.unsqueeze(1)
    conf._lengths_to_padding_mask = lengths_to_padding_mask
    return conf.Conformer(input_dim=16, num_heads=2, ffn_dim=32, num_layers=1,
                          depthwise_conv_kernel_size=3).eval()


def write(name, module, inputs):
    with torch.no_grad():
        ep = torch.export.export(module, inputs)
        mod = fx.export_and_import(ep, output_type="linalg-on-tensors",
                                   func_name="forward")
    path = os.path.join(OUT, f"key_lengths_{name}.mlir")
    with open(path, "w") as f:
        f.write(f"// Generated by scripts/corpus/generate_key_lengths.py "
                f"({type(module).__name__}; torch {torch.__version__}).\n")
        f.write(str(mod))
    print(path)


def main():
    torch.manual_seed(0)
    q = torch.randn(2, 4, 8, 16)
    k, v = torch.randn(2, 4, 8, 16), torch.randn(2, 4, 8, 16)
    lengths = torch.tensor([5, 8, 3, 6])
    for name, module, lens in (("sdpa", Sdpa(), lengths[:2]),
                               ("sdpa_bool", SdpaBool(), lengths[:2]),
                               ("eager", Eager(), lengths[:2]),
                               ("causal", Causal(), lengths[:2]),
                               ("per_head", PerHead(), lengths),
                               ("inclusive", Inclusive(), lengths[:2]),
                               ("queries", Queries(), lengths[:2])):
        write(name, module, (q, k, v, lens))
    try:
        model = conformer(12)
    except ImportError as e:
        print(f"torchaudio not importable ({e}): no Conformer")
        return
    write("conformer", model, (torch.randn(2, 12, 16), torch.tensor([9, 12])))


if __name__ == "__main__":
    main()
