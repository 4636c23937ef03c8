#!/usr/bin/env python3
"""Swaps each mxattn family into a tiny causal transformer and compares the
result with the same model on PyTorch SDPA.

    MXATTN_LIB=build/libmxattn.so python3 bench/model_check.py

The model has random weights from a fixed seed (2 pre-norm layers, d_model
1024, 16 heads of 64, sequence 2048, batch 2, bf16).  For each attention it
reports the final hidden states' largest absolute and relative difference
from the bf16 SDPA run, their relative L1 error against a float32 SDPA run,
and the cross-entropy of a random LM head on fixed random target tokens.
Writes model_check.json and model_check.md to bench/results/<device>-<date>/
(or --out DIR).
"""
import argparse
import datetime
import json
import os
import shlex
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attention import REPO_DIR, device_slug  # noqa: E402  (also puts python/ on the path)

import mxattn  # noqa: E402


class Block(nn.Module):
    """Pre-norm attention and MLP, as in GPT-style decoders."""

    def __init__(self, d_model, heads):
        super().__init__()
        self.heads, self.head_dim = heads, d_model // heads
        self.norm1, self.norm2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)
        self.mlp = nn.Sequential(nn.Linear(d_model, 4 * d_model), nn.GELU(),
                                 nn.Linear(4 * d_model, d_model))

    def forward(self, x, attend):
        batch, seq, d_model = x.shape
        qkv = self.qkv(self.norm1(x)).view(batch, seq, 3, self.heads, self.head_dim)
        q, k, v = qkv.unbind(dim=2)  # [B, N, H, D] views into one buffer, as models have them
        x = x + self.proj(attend(q, k, v).reshape(batch, seq, d_model))
        return x + self.mlp(self.norm2(x))


class TinyLM(nn.Module):
    def __init__(self, vocab, d_model, heads, layers):
        super().__init__()
        self.embed = nn.Embedding(vocab, d_model)
        self.blocks = nn.ModuleList(Block(d_model, heads) for _ in range(layers))
        self.norm = nn.LayerNorm(d_model)
        self.head = nn.Linear(d_model, vocab, bias=False)

    def forward(self, tokens, attend):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x, attend)
        hidden = self.norm(x)
        return hidden, self.head(hidden)


def sdpa_attend(q, k, v):
    """Causal SDPA on [B, N, H, D] tensors."""
    out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                         is_causal=True)
    return out.transpose(1, 2)


def mxattn_attend(family):
    def attend(q, k, v):
        return mxattn.attention(q, k, v, family=family, layout="NHD", causal=True)
    return attend


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", default=",".join(mxattn.FAMILIES))
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--d-model", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=16)
    parser.add_argument("--seq", type=int, default=2048)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--vocab", type=int, default=8192)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=None,
                        help="output folder (default bench/results/<device>-<date>)")
    return parser.parse_args()


def run_model(model, tokens, targets, attend):
    """(final hidden states as float32, cross-entropy loss)."""
    hidden, logits = model(tokens, attend)
    loss = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), targets.reshape(-1))
    return hidden.float(), loss.item()


def compare(name, hidden, loss, sdpa, fp32):
    """A result row: differences from the bf16 SDPA run and the fp32 one."""
    sdpa_hidden, sdpa_loss = sdpa
    diff = (hidden - sdpa_hidden).abs()
    return {
        "attention": name,
        "max_abs_diff_vs_sdpa": diff.max().item(),
        # Relative to the largest reference value: elementwise ratios blow up near zero.
        "max_rel_diff_vs_sdpa": (diff.max() / sdpa_hidden.abs().max()).item(),
        "rel_l1_vs_fp32": ((hidden - fp32[0]).abs().sum() / fp32[0].abs().sum()).item(),
        "loss": loss,
        "loss_delta_vs_sdpa": loss - sdpa_loss,
        "error": None,
    }


def write_reports(out_dir, setup, rows):
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "model_check.json"), "w") as f:
        json.dump({"setup": setup, "rows": rows}, f, indent=1)
    lines = ["# mxattn model check", "",
             *(f"- {key}: {value}" for key, value in setup.items()), "",
             "| attention | max abs diff vs SDPA | max rel diff vs SDPA | rel-L1 vs fp32 | "
             "loss | loss - SDPA loss | error |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        if r["error"]:
            lines.append(f"| {r['attention']} | | | | | | {r['error'].replace('|', '/')} |")
        else:
            lines.append(f"| {r['attention']} | {r['max_abs_diff_vs_sdpa']:.4g} | "
                         f"{r['max_rel_diff_vs_sdpa']:.4g} | {r['rel_l1_vs_fp32']:.4g} | "
                         f"{r['loss']:.5f} | {r['loss_delta_vs_sdpa']:+.2e} | |")
    with open(os.path.join(out_dir, "model_check.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return lines


def command_line():
    command = "python3 " + " ".join(shlex.quote(a) for a in sys.argv)
    if os.environ.get("MXATTN_LIB"):
        command = f"MXATTN_LIB={shlex.quote(os.environ['MXATTN_LIB'])} {command}"
    return command


def main():
    args = parse_args()
    if not torch.cuda.is_available():
        sys.exit("bench/model_check.py needs a CUDA GPU")
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.manual_seed(args.seed)
    model = TinyLM(args.vocab, args.d_model, args.heads, args.layers).cuda().eval()
    tokens = torch.randint(args.vocab, (args.batch, args.seq), device="cuda")
    targets = torch.randint(args.vocab, (args.batch, args.seq), device="cuda")
    name = torch.cuda.get_device_name()
    setup = {
        "device": name, "date": datetime.date.today().isoformat(),
        "torch": torch.__version__, "cuda": torch.version.cuda, "mxattn": mxattn.version(),
        "model": f"{args.layers} layers, d_model {args.d_model}, {args.heads} heads of "
                 f"{args.d_model // args.heads}, causal, vocab {args.vocab}, seed {args.seed}",
        "input": f"batch {args.batch}, seq {args.seq}, random tokens and targets",
        "command": command_line(),
    }
    rows = []
    with torch.inference_mode():
        fp32 = run_model(model, tokens, targets, sdpa_attend)
        model = model.to(torch.bfloat16)
        sdpa = run_model(model, tokens, targets, sdpa_attend)
        rows.append(compare("sdpa-fp32", *fp32, sdpa, fp32))
        rows.append(compare("sdpa", *sdpa, sdpa, fp32))
        for family in [f for f in args.families.split(",") if f]:
            try:
                rows.append(compare(family, *run_model(model, tokens, targets,
                                                       mxattn_attend(family)), sdpa, fp32))
            except Exception as error:  # one family failing must not hide the others
                rows.append({"attention": family, "error": f"{type(error).__name__}: {error}"})
            print(f"{family}: done", flush=True)
    out_dir = args.out or os.path.join(REPO_DIR, "bench", "results",
                                       f"{device_slug(name)}-{setup['date']}")
    print("\n".join(write_reports(out_dir, setup, rows)))
    print(f"\nwrote {out_dir}/model_check.json and model_check.md")


if __name__ == "__main__":
    main()
