"""What ``torch.compile`` (inductor, CPU) changes in the loss's peak and in what a transformer block saves.

``python -m validation.compile`` measures, eager and compiled, and writes ``validation/compile.json``:

* **the loss**, ``F.cross_entropy(logits.float(), labels)`` on bf16 logits (torchtitan's
  ``torchtitan/components/loss.py`` and transformers' ``ForCausalLMLoss`` call it so): the bytes saved for
  backward ([`SavedBytes`][validation.saved.SavedBytes]; the labels, which the batch holds anyway, left out) and
  the backward's transient, the peak of the CPU allocator's live bytes during ``backward()`` above what was live
  when it started (``torch.profiler`` with ``profile_memory=True``: every allocation and free with the running
  total, the ``[memory]`` events of its trace). The logits' gradient, a leaf's ``.grad``, is in the transient.
* **a torchtitan-style Llama block** (``torchtitan/models/llama3/model/model.py`` at ``6404b93``: ``nn.RMSNorm``,
  separate ``wq``/``wk``/``wv``/``wo``, complex RoPE, ``repeat_kv`` before SDPA, causal SDPA, SwiGLU ``w1``/``w3``/
  ``w2``; bf16, no activation checkpointing), compiled per block as torchtitan's ``apply_compile`` does: the bytes
  saved for backward, the block's input included.

Each compiled case runs forward and backward once before it is measured, so the backward graph's compilation is
not in the measurement. ``make validate`` runs ``python -m validation.compile --if-stale``: it measures again only
when [`stamp`][] (this file, ``validation/saved.py``, the pinned requirements, the Python minor version) differs
from the stamp in ``compile.json``. ``tests/test_compile.py`` re-predicts every row with the engine (no torch).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from validation.saved import SavedBytes

__all__ = ["BLOCK_SHAPES", "LOSS_SHAPES", "measure_block", "measure_loss", "stamp"]

OUT = Path(__file__).with_name("compile.json")
_ROOT = Path(__file__).resolve().parent.parent
_INPUTS = ("validation/compile.py", "validation/saved.py", "requirements-validation.txt")

LOSS_SHAPES: list[dict[str, int]] = [
    dict(tokens=64, vocab=1024),
    dict(tokens=256, vocab=4096),
    dict(tokens=512, vocab=32000),
    dict(tokens=1024, vocab=8192),
]
"""Loss cases: tokens of the micro-batch (sequence × batch) and vocabulary."""

BLOCK_SHAPES: list[dict[str, int]] = [
    dict(hidden=64, heads=4, kv_heads=4, ffn_hidden=176, micro_batch=2, seq_len=64),
    dict(hidden=128, heads=4, kv_heads=2, ffn_hidden=352, micro_batch=1, seq_len=128),
    dict(hidden=256, heads=8, kv_heads=2, ffn_hidden=688, micro_batch=2, seq_len=256),
    dict(hidden=256, heads=8, kv_heads=8, ffn_hidden=688, micro_batch=1, seq_len=512),
]
"""Block cases: multi-head and grouped-query attention, 64 to 512 tokens."""


def stamp() -> str:
    """SHA-256 over the files that decide a measurement and the Python minor version."""
    digest = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}".encode())
    for name in _INPUTS:
        digest.update(b"\0" + name.encode() + b"\0" + (_ROOT / name).read_bytes())
    return digest.hexdigest()


def _transient(run: Any) -> int:
    """Peak live CPU-allocator bytes while ``run()`` runs, above the bytes live when it started."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True) as prof:
        run()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "trace.json")
        prof.export_chrome_trace(path)
        events = json.loads(Path(path).read_text())["traceEvents"]
    memory = [e["args"] for e in events if e.get("name") == "[memory]"]
    if not memory:
        return 0
    start = memory[0]["Total Allocated"] - memory[0]["Bytes"]
    return max(m["Total Allocated"] for m in memory) - start


def _saved(counter: SavedBytes) -> dict[str, Any]:
    """Saved bytes without 0-dim scalars (the loss's divisor), the scalars' bytes, and each storage."""
    scopes = {scope for scope, *_ in counter._seen.values()}
    storages = [(n, d, list(s)) for scope in scopes for n, d, s in counter.tensors(scope)]
    scalars = sum(n for n, _d, s in storages if not s)
    return {
        "saved_bytes": sum(n for n, _d, s in storages if s),
        "saved_scalar_bytes": scalars,
        "saved_tensors": sorted(([n, d, s] for n, d, s in storages if s), key=lambda r: (-r[0], r[2])),
    }


def _cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), labels)


def measure_loss(tokens: int, vocab: int, compiled: bool) -> dict[str, Any]:
    """Saved bytes and backward transient of the fp32-upcast cross-entropy on ``tokens × vocab`` bf16 logits."""
    fn = torch.compile(_cross_entropy) if compiled else _cross_entropy
    torch.manual_seed(0)
    for _ in range(2):  # the first compiles forward and backward
        logits = torch.randn(tokens, vocab, dtype=torch.bfloat16, requires_grad=True)
        labels = torch.randint(0, vocab, (tokens,))
        counter = SavedBytes(exclude=[labels])
        with counter.recording():
            loss = fn(logits, labels)
        grad = torch.ones_like(loss)
        transient = _transient(lambda loss=loss, grad=grad: loss.backward(grad))
        del loss
    return {**_saved(counter), "transient_bytes": transient}


class Block(nn.Module):
    """A Llama block as torchtitan's ``TransformerBlock`` computes it (bf16, bias-free, RMSNorm eps 1e-5)."""

    def __init__(self, hidden: int, heads: int, kv_heads: int, ffn_hidden: int) -> None:
        super().__init__()
        self.a, self.g, self.d = heads, kv_heads, hidden // heads

        def linear(n_in: int, n_out: int) -> nn.Linear:
            return nn.Linear(n_in, n_out, bias=False)

        self.wq, self.wk = linear(hidden, heads * self.d), linear(hidden, kv_heads * self.d)
        self.wv, self.wo = linear(hidden, kv_heads * self.d), linear(heads * self.d, hidden)
        self.w1, self.w2, self.w3 = linear(hidden, ffn_hidden), linear(ffn_hidden, hidden), linear(hidden, ffn_hidden)
        self.attention_norm, self.ffn_norm = nn.RMSNorm(hidden, eps=1e-5), nn.RMSNorm(hidden, eps=1e-5)

    @staticmethod
    def _rope(x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
        pairs = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
        return torch.view_as_real(pairs * freqs.view(1, x.shape[1], 1, -1)).flatten(3).type_as(x)

    def _expand(self, x: torch.Tensor) -> torch.Tensor:  # torchtitan's repeat_kv
        b, s, g, d = x.shape
        rep = self.a // g
        return x if rep == 1 else x.unsqueeze(3).expand(b, s, g, rep, d).reshape(b, s, g * rep, d)

    def _attention(self, x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
        b, s, _ = x.shape
        q, k, v = (w(x).view(b, s, -1, self.d) for w in (self.wq, self.wk, self.wv))
        q, k = self._rope(q, freqs), self._rope(k, freqs)
        k, v = self._expand(k), self._expand(v)
        out = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
        return self.wo(out.transpose(1, 2).contiguous().view(b, s, -1))

    def forward(self, x: torch.Tensor, freqs: torch.Tensor) -> torch.Tensor:
        h = x + self._attention(self.attention_norm(x), freqs)
        y = self.ffn_norm(h)
        return h + self.w2(F.silu(self.w1(y)) * self.w3(y))


def _freqs(head_dim: int, seq_len: int) -> torch.Tensor:
    """RoPE's complex64 frequencies (torchtitan's ``precompute_freqs_cis``, theta 10,000)."""
    inv = 1.0 / (10000.0 ** (torch.arange(0, head_dim, 2)[: head_dim // 2].float() / head_dim))
    angles = torch.outer(torch.arange(seq_len).float(), inv)
    return torch.polar(torch.ones_like(angles), angles)


def measure_block(case: dict[str, int], compiled: bool) -> dict[str, Any]:
    """Bytes one block saves for backward (its input included; parameters and RoPE frequencies left out)."""
    torch.manual_seed(0)
    block = Block(case["hidden"], case["heads"], case["kv_heads"], case["ffn_hidden"]).to(torch.bfloat16)
    fn = torch.compile(block) if compiled else block
    freqs = _freqs(case["hidden"] // case["heads"], case["seq_len"])
    for _ in range(2):  # the first compiles forward and backward
        x = torch.randn(case["micro_batch"], case["seq_len"], case["hidden"], dtype=torch.bfloat16, requires_grad=True)
        counter = SavedBytes(exclude=[*block.parameters(), freqs])
        with counter.recording():
            out = fn(x, freqs)
        out.sum().backward()
    return _saved(counter)


def measure() -> dict[str, Any]:
    """Every case, eager and compiled."""
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    modes = {"eager": False, "compiled": True}
    loss = [{**c, **{m: measure_loss(c["tokens"], c["vocab"], on) for m, on in modes.items()}} for c in LOSS_SHAPES]
    block = [{**c, **{m: measure_block(c, on) for m, on in modes.items()}} for c in BLOCK_SHAPES]
    return {
        "stamp": stamp(),
        "torch": torch.__version__,
        "backend": "inductor, CPU",
        "dtype": "bfloat16",
        "loss": loss,
        "block": block,
    }


def main(argv: list[str] | None = None) -> int:
    """Measure and write ``compile.json`` (``--if-stale``: only when its stamp is not today's)."""
    args = sys.argv[1:] if argv is None else argv
    if "--if-stale" in args and OUT.exists() and json.loads(OUT.read_text()).get("stamp") == stamp():
        print(f"{OUT.name}: unchanged since its inputs were measured")
        return 0
    OUT.write_text(json.dumps(measure(), indent=1) + "\n")
    print(f"wrote {OUT.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
