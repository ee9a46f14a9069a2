"""The same configurations on a CUDA device: saved-for-backward bytes against the (CUDA) profiles, plus
``torch.cuda.max_memory_allocated``, ``torch.cuda.memory_reserved`` and what ``nvidia-smi`` shows.

Run ``.venv-validation/bin/python -m validation.gpu`` (with a CUDA build of torch) wherever a CUDA device
exists; it writes ``validation/results-gpu.json`` in the format of ``results.json``, and the "How
accurate is this?" page adds its rows when the file exists. Without a CUDA device it says so and exits 0
without writing anything.

Beside the transformers cases it trains two stack-like configurations (``STACK_CASES``) of one Llama-shaped model
(``STACK_MODEL``), written in plain torch as torchtitan writes its Llama: a **torchtitan-like** run (per-op
selective checkpointing with torchtitan's policy, SDPA, stock ``F.cross_entropy`` on fp32 logits) and a
**Megatron-like** run (full recomputation of each layer, Megatron-LM's in-place cross-entropy). Each row holds
``max_memory_allocated`` over one training step, what it holds above the model states, and the ``"torchtitan"`` /
``"megatron"`` stack's prediction of both (category ``gpu-stack``). ``python -m validation.gpu --dry-run`` prints
the configurations and the predictions without torch or a GPU.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["GPU_RESULTS", "STACK_CASES", "STACK_MODEL", "main", "stack_predictions"]

GPU_RESULTS = Path(__file__).with_name("results-gpu.json")
"""Where the GPU measurements go."""


def _nvidia_smi_used() -> int | None:
    """Bytes ``nvidia-smi`` reports used on device 0 (MiB resolution), or ``None``."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits", "-i", "0"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return int(out.split()[0]) * 2**20


def _measure(case: dict) -> dict[str, Any]:
    import torch

    from validation.configs import MODELS
    from validation.measure import _layers, build_model
    from validation.saved import SavedBytes

    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = build_model(case["model"], case["attn"]).cuda()
    counter = SavedBytes(exclude=[*model.parameters(), *model.buffers()])
    for i, layer in enumerate(_layers(model)):
        counter.watch(layer, f"layer.{i}")
    ids = torch.randint(0, MODELS[case["model"]]["vocab_size"], (case["micro_batch"], case["seq_len"]), device="cuda")
    before = torch.cuda.memory_allocated()
    with counter.recording():
        loss = model(input_ids=ids, labels=ids).loss
    after_forward = torch.cuda.memory_allocated()
    smi = _nvidia_smi_used()
    loss.backward()
    torch.cuda.synchronize()
    return {
        "layer": counter.by_scope()["layer.1"],
        "model": counter.total,
        "allocated_by_forward": after_forward - before,
        "max_memory_allocated": torch.cuda.max_memory_allocated(),
        "memory_reserved": torch.cuda.memory_reserved(),
        "nvidia_smi_used": smi,
    }


STACK_MODEL: dict[str, Any] = {
    "model_type": "llama",
    "vocab_size": 32768,
    "hidden_size": 1024,
    "intermediate_size": 3584,
    "num_hidden_layers": 8,
    "num_attention_heads": 16,
    "num_key_value_heads": 4,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-05,
    "tie_word_embeddings": False,
}
"""A Llama-shaped model small enough for any GPU (grouped-query attention 16/4, SwiGLU, RMSNorm, untied head)."""

STACK_CASES: tuple[dict[str, Any], ...] = (
    {"name": "torchtitan-like", "stack": "torchtitan", "recompute": "op", "loss": "stock", "micro_batch": 2,
     "seq_len": 4096},
    {"name": "megatron-like", "stack": "megatron", "recompute": "full", "loss": "fused", "micro_batch": 2,
     "seq_len": 4096},
)  # fmt: skip
"""The two stack-like runs: one GPU, bf16 autocast over fp32 parameters, AdamW (foreach), FlashAttention, no
dropout. torchtitan-like: per-op checkpointing and the stock loss; Megatron-like: full recomputation and the fused
in-place loss (the layer inputs are what both stacks keep under full recomputation, whoever wrote the layer)."""


def _stack_layout(case: dict[str, Any]) -> Any:
    from calc.memory.layout import Layout

    return Layout(stack=case["stack"], recompute=case["recompute"], loss=case["loss"], micro_batch=case["micro_batch"],
                  global_batch=case["micro_batch"], seq_len=case["seq_len"], flash_attention=True, dropout=False,
                  zero_stage=0)  # fmt: skip


def stack_predictions() -> list[dict[str, Any]]:
    """The engine's peak for each of ``STACK_CASES``: allocated, and allocated above the model states.

    Examples:
        >>> [p["name"] for p in stack_predictions()]
        ['torchtitan-like', 'megatron-like']
        >>> all(0 < p["above_states"] < p["allocated"] for p in stack_predictions())
        True
    """
    from calc.memory.overheads import peak_memory
    from calc.models.architecture import Architecture

    arch = Architecture.from_hf_config(STACK_MODEL)
    out = []
    for case in STACK_CASES:
        peak = peak_memory(arch, _stack_layout(case), optimizer="foreach")
        out.append({
            "name": case["name"],
            "allocated": peak.allocated_bytes,
            "above_states": peak.allocated_bytes - peak.memory.model_state,
            "reserved": peak.reserved_bytes,
        })  # fmt: skip
    return out


def _llama_like(torch: Any) -> Any:
    """``STACK_MODEL`` as torchtitan's Llama writes it (``wq wk wv wo``, ``w1 w2 w3``, RMSNorm, RoPE, SDPA)."""
    nn, F = torch.nn, torch.nn.functional
    c = STACK_MODEL
    h, a, g, f = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
    d = h // a

    def rope(x: Any) -> Any:
        t = x.shape[1]
        freqs = 1.0 / (500000.0 ** (torch.arange(0, d, 2, device=x.device).float() / d))
        angles = torch.outer(torch.arange(t, device=x.device).float(), freqs)
        cos, sin = angles.cos()[None, :, None, :].to(x.dtype), angles.sin()[None, :, None, :].to(x.dtype)
        x1, x2 = x[..., : d // 2], x[..., d // 2 :]
        return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.attention_norm, self.ffn_norm = nn.RMSNorm(h, eps=1e-5), nn.RMSNorm(h, eps=1e-5)
            self.wq, self.wk = nn.Linear(h, a * d, bias=False), nn.Linear(h, g * d, bias=False)
            self.wv, self.wo = nn.Linear(h, g * d, bias=False), nn.Linear(a * d, h, bias=False)
            self.w1, self.w3, self.w2 = (
                nn.Linear(h, f, bias=False),
                nn.Linear(h, f, bias=False),
                nn.Linear(f, h, bias=False),
            )

        def forward(self, x: Any) -> Any:
            b, t, _ = x.shape
            y = self.attention_norm(x)
            q, k = rope(self.wq(y).view(b, t, a, d)), rope(self.wk(y).view(b, t, g, d))
            v = self.wv(y).view(b, t, g, d)
            k, v = k.repeat_interleave(a // g, dim=2), v.repeat_interleave(a // g, dim=2)  # torchtitan's repeat_kv
            o = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True)
            x = x + self.wo(o.transpose(1, 2).contiguous().view(b, t, a * d))
            y = self.ffn_norm(x)
            return x + self.w2(F.silu(self.w1(y)) * self.w3(y))

    class Model(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.tok_embeddings = nn.Embedding(c["vocab_size"], h)
            self.layers = nn.ModuleList(Block() for _ in range(c["num_hidden_layers"]))
            self.norm, self.output = nn.RMSNorm(h, eps=1e-5), nn.Linear(h, c["vocab_size"], bias=False)

    return Model()


def _op_context(torch: Any) -> Any:
    """torchtitan's per-op policy (``torchtitan/distributed/activation_checkpoint.py``): save the outputs of
    ``mm``, the SDPA kernels, ``reduce_scatter_tensor`` and ``max``, except every second ``mm``; recompute the rest."""
    from torch.utils.checkpoint import CheckpointPolicy, create_selective_checkpoint_contexts

    ops = torch.ops.aten
    save = {ops.mm.default, ops._scaled_dot_product_efficient_attention.default,
            ops._scaled_dot_product_flash_attention.default, ops.max.default,
            torch.ops._c10d_functional.reduce_scatter_tensor.default}  # fmt: skip

    def context() -> Any:
        counts = {"forward": 0, "recompute": 0}

        def policy(ctx: Any, func: Any, *args: Any, **kwargs: Any) -> Any:
            mode = "recompute" if ctx.is_recompute else "forward"
            if func == ops.mm.default:
                counts[mode] += 1
            keep = func in save and not (func == ops.mm.default and counts[mode] % 2 == 0)
            return CheckpointPolicy.MUST_SAVE if keep else CheckpointPolicy.PREFER_RECOMPUTE

        return create_selective_checkpoint_contexts(policy)

    return context


def _fused_loss(torch: Any) -> Any:
    """Megatron-LM's ``vocab_parallel_cross_entropy`` on one rank: the fp32 softmax computed in place of the fp32
    logits and saved, the gradient computed in place and cast back to the logits' dtype."""

    class FusedCrossEntropy(torch.autograd.Function):
        @staticmethod
        def forward(ctx: Any, logits: Any, target: Any) -> Any:
            x = logits.float()
            x -= x.max(dim=-1, keepdim=True).values
            picked = x.gather(-1, target[:, None]).squeeze(-1)
            x.exp_()
            total = x.sum(dim=-1)
            x /= total[:, None]
            ctx.save_for_backward(x, target)
            ctx.dtype = logits.dtype
            return (total.log() - picked).mean()

        @staticmethod
        def backward(ctx: Any, grad: Any) -> Any:
            softmax, target = ctx.saved_tensors
            softmax.scatter_add_(-1, target[:, None], -torch.ones_like(softmax[:, :1]))
            softmax.mul_(grad / softmax.shape[0])
            return softmax.to(ctx.dtype), None

    return FusedCrossEntropy.apply


def _stack_step(torch: Any, case: dict[str, Any], model: Any, opt: Any, ids: Any) -> None:
    """One training step of ``case``: forward with its recomputation, its loss, backward, AdamW."""
    from torch.utils.checkpoint import checkpoint

    op = _op_context(torch) if case["recompute"] == "op" else None
    with torch.autocast("cuda", dtype=torch.bfloat16):
        x = model.tok_embeddings(ids)
        for layer in model.layers:
            x = checkpoint(layer, x, use_reentrant=False, **({"context_fn": op} if op else {}))
        logits = model.output(model.norm(x)).flatten(0, 1)
    labels = ids.flatten()
    if case["loss"] == "stock":
        loss = torch.nn.functional.cross_entropy(logits.float(), labels)
    else:
        loss = _fused_loss(torch)(logits, labels)
    del logits, x
    loss.backward()
    opt.step()
    opt.zero_grad(set_to_none=False)  # fp32 gradients stay: with fp32 params and AdamW, 16 B/param of states


def _measure_stacks(torch: Any) -> list[dict[str, Any]]:
    """``max_memory_allocated`` over one step of each stack case (after a warm-up step that creates the states)."""
    from validation.report import relative_error

    predicted = {p["name"]: p for p in stack_predictions()}
    rows = []
    for case in STACK_CASES:
        torch.cuda.empty_cache()
        model = _llama_like(torch).cuda()
        opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
        ids = torch.randint(0, STACK_MODEL["vocab_size"], (case["micro_batch"], case["seq_len"]), device="cuda")
        _stack_step(torch, case, model, opt, ids)  # the optimizer states exist from here on
        torch.cuda.synchronize()
        states = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
        _stack_step(torch, case, model, opt, ids)
        torch.cuda.synchronize()
        peak, p = torch.cuda.max_memory_allocated(), predicted[case["name"]]
        rows.append({"category": "gpu-stack", "name": case["name"], "inputs": {**case, "model": STACK_MODEL},
                     "measured": peak, "predicted": p["allocated"], "error": relative_error(p["allocated"], peak),
                     "measured_above_states": peak - states, "predicted_above_states": p["above_states"],
                     "memory_reserved": torch.cuda.memory_reserved()})  # fmt: skip
        del model, opt, ids
    return rows


def _dry_run() -> int:
    """Print the stack cases and the engine's prediction of each (no torch, no GPU)."""
    for p in stack_predictions():
        print(f"{p['name']}: allocated {p['allocated'] / 2**30:.2f} GiB predicted, "
              f"{p['above_states'] / 2**30:.2f} GiB above the model states")  # fmt: skip
    return 0


def main() -> int:
    """Measure every activation case on ``cuda:0`` and write ``results-gpu.json``; skip without CUDA."""
    if "--dry-run" in sys.argv[1:]:
        return _dry_run()
    try:
        import torch
    except ImportError:
        print("validation.gpu: torch is not installed (make validate installs the CPU build): skipped")
        return 0
    if not torch.cuda.is_available():
        print("validation.gpu: no CUDA device here: nothing measured, results-gpu.json left as it is")
        return 0
    import transformers

    from validation.configs import ACTIVATION_CASES
    from validation.predict import predict
    from validation.report import relative_error

    predicted = {(r["category"], r["name"]): r for r in predict()}
    rows = []
    for case in ACTIVATION_CASES:
        m = _measure(case)
        name = f"{case['model']} {case['attn']} s={case['seq_len']} b={case['micro_batch']}"
        for scope in ("layer", "model"):
            p = predicted[(f"activations-{scope}", name)]
            rows.append(
                {
                    "category": f"gpu-activations-{scope}",
                    "name": name,
                    "inputs": p["inputs"],
                    "measured": m[scope],
                    "predicted": p["cuda_predicted"],
                    "error": relative_error(p["cuda_predicted"], m[scope]),
                    **({} if scope == "layer" else {k: v for k, v in m.items() if k not in ("layer", "model")}),
                }
            )
    rows.extend(_measure_stacks(torch))
    data = {
        "generated_by": "python -m validation.gpu",
        "device": torch.cuda.get_device_name(0),
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "transformers": transformers.__version__,
        },
        "rows": rows,
    }
    GPU_RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    worst = max(abs(r["error"]) for r in rows)
    print(f"wrote {GPU_RESULTS} ({len(rows)} rows, largest error {worst:.4%})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
