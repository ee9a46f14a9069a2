"""Measure with real PyTorch and transformers: saved-for-backward bytes, model states, per-rank shards.

Run by ``make validate`` (``python -m validation.measure``), which then rewrites ``validation/results.json``
and fails when a prediction is out of tolerance. Only the configurations whose stamp ([`case_key`][]: the case,
its model config, the harness code and the pinned versions) is not in ``validation/measured.json`` are measured
again; ``make validate FULL=1`` (``--full``) measures every one. Nothing is downloaded: every model is built from a
small config (``validation/configs.py``) with random weights.
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

from validation.configs import MODELS, REFERENCE_LAYERS, SHARDING_CASES, STATE_CASES
from validation.saved import SavedBytes

__all__ = ["build_model", "measure_activations", "measure_reference_layer", "measure_sharding", "measure_state"]


def build_model(name: str, attn: str = "eager", dtype: torch.dtype = torch.bfloat16) -> torch.nn.Module:
    """The causal LM of ``MODELS[name]`` with random weights, in training mode."""
    import transformers

    config = dict(MODELS[name])
    config = transformers.AutoConfig.for_model(**config)
    config._attn_implementation = attn
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, attn_implementation=attn)
    return model.to(dtype).train()


def _layers(model: torch.nn.Module) -> torch.nn.ModuleList:
    base = getattr(model, "transformer", None) or model.model
    return base.h if hasattr(base, "h") else base.layers


def measure_activations(case: dict, device: str = "cpu") -> dict[str, Any]:
    """Bytes saved for backward by one forward of ``case``: the second layer's and the whole model's."""
    model = build_model(case["model"], case["attn"]).to(device)
    counter = SavedBytes(exclude=[*model.parameters(), *model.buffers()])
    for i, layer in enumerate(_layers(model)):
        counter.watch(layer, f"layer.{i}")
    torch.manual_seed(1)
    vocab = MODELS[case["model"]]["vocab_size"]
    ids = torch.randint(0, vocab, (case["micro_batch"], case["seq_len"]), device=device)
    with counter.recording():
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    scopes = counter.by_scope()
    return {"layer": scopes["layer.1"], "model": counter.total}


# ------------------------------------------------------------------ Megatron-style reference layers


class _FusedNorm(torch.autograd.Function):
    """RMSNorm / LayerNorm that saves only its input (statistics recomputed in backward)."""

    @staticmethod
    def forward(ctx, x, weight, rms):
        ctx.save_for_backward(x, weight)
        ctx.rms = rms
        with torch.enable_grad():
            return _norm(x.detach(), weight.detach(), rms).detach()

    @staticmethod
    def backward(ctx, grad):
        x, weight = ctx.saved_tensors
        with torch.enable_grad():
            x, w = x.detach().requires_grad_(), weight.detach().requires_grad_()
            gx, gw = torch.autograd.grad(_norm(x, w, ctx.rms), (x, w), grad)
        return gx, gw, None


def _norm(x: torch.Tensor, w: torch.Tensor, rms: bool) -> torch.Tensor:
    x32 = x.float()
    if rms:
        y = x32 * torch.rsqrt(x32.pow(2).mean(-1, keepdim=True) + 1e-6)
    else:
        y = torch.nn.functional.layer_norm(x32, x32.shape[-1:])
    return (y * w.float()).to(x.dtype)


class _SaveInputs(torch.autograd.Function):
    """An elementwise op that saves its inputs only (Megatron's fused ``bias_swiglu`` / ``bias_gelu``)."""

    @staticmethod
    def forward(ctx, x, kind):
        ctx.save_for_backward(x)
        ctx.kind = kind
        return _act(x, kind).detach()

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        with torch.enable_grad():
            x = x.detach().requires_grad_()
            (gx,) = torch.autograd.grad(_act(x, ctx.kind), (x,), grad)
        return gx, None


def _act(x: torch.Tensor, kind: str) -> torch.Tensor:
    if kind == "swiglu":
        gate, up = x.chunk(2, dim=-1)
        return torch.nn.functional.silu(gate) * up
    return torch.nn.functional.gelu(x, approximate="tanh")


class _FusedSoftmax(torch.autograd.Function):
    """Causal softmax saving its 16-bit output only (Megatron's ``scaled_upper_triang_masked_softmax``)."""

    @staticmethod
    def forward(ctx, scores):
        s = scores.shape[-1]
        mask = torch.ones(s, s, dtype=torch.bool, device=scores.device).triu(1)
        out = torch.softmax(scores.float().masked_fill(mask, float("-inf")), dim=-1).to(scores.dtype)
        ctx.save_for_backward(out)
        return out

    @staticmethod
    def backward(ctx, grad):
        (y,) = ctx.saved_tensors
        y32 = y.float()
        g = grad.float()
        return (y32 * (g - (g * y32).sum(-1, keepdim=True))).to(grad.dtype)


def measure_reference_layer(case: dict, device: str = "cpu") -> dict[str, Any]:
    """Bytes one Megatron-style layer (no dropout, unfused attention core) saves, in bf16."""
    s, b, h, a, g, f = (case[k] for k in ("seq_len", "micro_batch", "hidden", "heads", "kv_heads", "ffn_hidden"))
    d = h // a
    rms = case["mlp"] == "swiglu"
    dt = torch.bfloat16
    torch.manual_seed(0)

    def w(*shape: int) -> torch.Tensor:
        return (torch.randn(*shape, device=device) * 0.02).to(dt).requires_grad_()

    n1, n2 = w(h), w(h)
    wqkv, wo = w((a + 2 * g) * d, h), w(h, a * d)
    up = 2 * f if rms else f
    w1, w2 = w(up, h), w(h, f)
    params = [n1, n2, wqkv, wo, w1, w2]
    x = torch.randn(s, b, h, device=device).to(dt).requires_grad_()  # Megatron's [s, b, h] layout
    counter = SavedBytes(exclude=params)  # the layer input x is saved: it is the first norm's input
    with counter.recording():
        y = _FusedNorm.apply(x, n1, rms)
        qkv = torch.nn.functional.linear(y, wqkv)
        q, k, v = qkv.split([a * d, g * d, g * d], dim=-1)
        # [b·a, s, d]; a new tensor, as RoPE's output is (a view would keep the whole QKV storage alive)
        q = q.reshape(s, b * a, d).transpose(0, 1).contiguous()
        k = k.reshape(s, b, g, d).repeat_interleave(a // g, dim=2).reshape(s, b * a, d).transpose(0, 1)
        v = v.reshape(s, b, g, d).repeat_interleave(a // g, dim=2).reshape(s, b * a, d).transpose(0, 1)
        probs = _FusedSoftmax.apply(torch.bmm(q, k.transpose(1, 2)) * d**-0.5)
        ctx = torch.bmm(probs, v).transpose(0, 1).reshape(s, b, a * d)
        x2 = x + torch.nn.functional.linear(ctx, wo)
        z = _FusedNorm.apply(x2, n2, rms)
        hidden = _SaveInputs.apply(torch.nn.functional.linear(z, w1), case["mlp"])
        out = x2 + torch.nn.functional.linear(hidden, w2)
    out.float().sum().backward()
    return {"layer": counter.total}


# ------------------------------------------------------------------ model states after a real step


def _storage_bytes(tensors: list[torch.Tensor], seen: set[int]) -> int:
    total = 0
    for t in tensors:
        if hasattr(t, "to_local"):
            t = t.to_local()
        st = t.untyped_storage()
        if st.data_ptr() and st.data_ptr() not in seen:
            seen.add(st.data_ptr())
            total += st.nbytes()
    return total


def _optimizer_states(opt: torch.optim.Optimizer) -> dict[str, list[torch.Tensor]]:
    out: dict[str, list[torch.Tensor]] = {"momentum": [], "variance": [], "step": []}
    key = {"exp_avg": "momentum", "momentum_buffer": "momentum", "exp_avg_sq": "variance", "step": "step"}
    states = getattr(opt, "optim", opt).state  # ZeroRedundancyOptimizer wraps the local optimizer
    for state in states.values():
        for name, value in state.items():
            if isinstance(value, torch.Tensor) and name in key:
                out[key[name]].append(value)
    return out


_RECIPES = {
    # convention: (parameter dtype, optimizer, fused into backward)
    "fp32-adam-16": (torch.float32, "adam", False),
    "bf16-adam-pure-8": (torch.bfloat16, "adam", False),
    "fp32-sgd-8": (torch.float32, "sgd", False),
    "fp32-sgdm-12": (torch.float32, "sgdm", False),
    "fp32-adam-fused-12": (torch.float32, "adam", True),
    "bf16-adam-fused-6": (torch.bfloat16, "adam", True),
}


def _optimizer(kind: str, params: list[torch.nn.Parameter]) -> torch.optim.Optimizer:
    if kind == "adam":
        return torch.optim.Adam(params, lr=1e-4)
    return torch.optim.SGD(params, lr=1e-3, momentum=0.9 if kind == "sgdm" else 0.0)


def measure_state(case: dict) -> dict[str, Any]:
    """Weights, gradients and optimizer states held after one real step (and the next forward's start)."""
    dtype, kind, fused = _RECIPES[case["convention"]]
    model = build_model(case["model"], "sdpa", dtype)
    params = list(model.parameters())
    if fused:  # PyTorch tutorial "How to save memory by fusing the optimizer step into the backward pass"
        opts = {p: _optimizer(kind, [p]) for p in params}

        def hook(p: torch.Tensor) -> None:
            opts[p].step()
            opts[p].zero_grad(set_to_none=True)

        for p in params:
            p.register_post_accumulate_grad_hook(hook)
    else:
        opt = _optimizer(kind, params)
    ids = torch.randint(0, MODELS[case["model"]]["vocab_size"], (1, 32))
    model(input_ids=ids, labels=ids).loss.backward()
    if not fused:
        opt.step()
    states: dict[str, list[torch.Tensor]] = {"momentum": [], "variance": [], "step": []}
    for o in opts.values() if fused else [opt]:
        for k, v in _optimizer_states(o).items():
            states[k].extend(v)
    seen: set[int] = set()
    return {
        "convention": case["convention"],
        "params": sum(p.numel() for p in params),
        "weights": _storage_bytes(params, seen),
        "gradients": _storage_bytes([p.grad for p in params if p.grad is not None], seen),
        "momentum": _storage_bytes(states["momentum"], seen),
        "variance": _storage_bytes(states["variance"], seen),
        "step_counters": _storage_bytes(states["step"], seen),
    }


# ------------------------------------------------------------------ per-rank shards under gloo


def _rank(rank: int, world: int, strategy: str, model_name: str, init: str, out: str) -> None:
    import torch.distributed as dist

    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    model = build_model(model_name, "sdpa", torch.float32)
    if strategy.startswith("fsdp2"):
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        # fsdp2-mp: FSDP2's mixed precision (bf16 compute copies gathered per unit, fp32 sharded states)
        mp = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
        kw = {"mp_policy": mp} if strategy == "fsdp2-mp" else {}
        for layer in _layers(model):
            fully_shard(layer, **kw)
        fully_shard(model, **kw)
        opt: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    else:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-4)
    torch.manual_seed(rank)
    ids = torch.randint(0, MODELS[model_name]["vocab_size"], (1, 32))
    model(input_ids=ids, labels=ids).loss.backward()
    if strategy == "zero1":
        for p in model.parameters():
            dist.all_reduce(p.grad)
    opt.step()
    params = list(model.parameters())
    states = _optimizer_states(opt)
    seen: set[int] = set()
    row = {
        "weights": _storage_bytes(params, seen),
        "gradients": _storage_bytes([p.grad for p in params if p.grad is not None], seen),
        "momentum": _storage_bytes(states["momentum"], seen),
        "variance": _storage_bytes(states["variance"], seen),
    }
    torch.save(row, f"{out}.{rank}")
    dist.destroy_process_group()


def measure_sharding(case: dict) -> dict[str, Any]:
    """Per-rank bytes of each model-state component after one step, ``world`` gloo ranks on this CPU."""
    import torch.multiprocessing as mp

    world = case["world"]
    with tempfile.TemporaryDirectory() as tmp:
        init = f"file://{os.path.join(tmp, 'rendezvous')}"
        out = os.path.join(tmp, "rank")
        mp.spawn(_rank, args=(world, case["strategy"], case["model"], init, out), nprocs=world, join=True)
        ranks = [torch.load(f"{out}.{r}") for r in range(world)]
    return {"ranks": ranks}


MEASURED = Path(__file__).with_name("measured.json")
"""Every configuration's raw measurement, under [`case_key`][]: what ``make validate`` re-uses when neither the
configuration nor the harness changed (committed beside ``results.json``)."""

HARNESS = ("validation/measure.py", "validation/saved.py", "requirements-validation.txt")
"""Files whose bytes decide what a measurement is: the measuring code and the pinned torch / transformers."""

_ROOT = Path(__file__).resolve().parent.parent


def harness_stamp() -> str:
    """SHA-256 over [`HARNESS`][] and the Python minor version: when it changes, every case is measured again."""
    digest = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}".encode())
    for name in HARNESS:
        digest.update(b"\0" + name.encode() + b"\0" + (_ROOT / name).read_bytes())
    return digest.hexdigest()


def case_key(kind: str, case: dict, stamp: str) -> str:
    """The key of one measurement: its kind, its case, the model config it builds and the harness stamp.

    Examples:
        >>> a = case_key("states", {"model": "gpt2", "convention": "fp32-adam-16"}, "s")
        >>> a == case_key("states", {"convention": "fp32-adam-16", "model": "gpt2"}, "s"), len(a)
        (True, 64)
        >>> a == case_key("states", {"model": "gpt2", "convention": "fp32-adam-16"}, "other harness")
        False
    """
    from validation.configs import MODELS

    what = {"kind": kind, "case": case, "model": MODELS.get(case.get("model", ""))}
    return hashlib.sha256((stamp + json.dumps(what, sort_keys=True, default=str)).encode()).hexdigest()


def measure_all(full: bool = False) -> dict[str, list[dict[str, Any]]]:
    """Every configuration's measurement, taken again only where [`case_key`][] is not in [`MEASURED`][]
    (everything when ``full``); rewrites [`MEASURED`][] with exactly the current keys."""
    from validation.configs import ACTIVATION_CASES

    kinds: dict[str, tuple[list[dict], Any]] = {
        "activations": (ACTIVATION_CASES, measure_activations),
        "reference_layers": (REFERENCE_LAYERS, measure_reference_layer),
        "states": (STATE_CASES, measure_state),
        "sharding": (SHARDING_CASES, measure_sharding),
    }
    stamp = harness_stamp()
    known = {} if full or not MEASURED.exists() else json.loads(MEASURED.read_text())
    kept: dict[str, Any] = {}
    measured: dict[str, list[dict[str, Any]]] = {}
    fresh = 0
    for kind, (cases, measure) in kinds.items():
        measured[kind] = []
        for case in cases:
            key = case_key(kind, case, stamp)
            if key not in known:
                known[key], fresh = measure(case), fresh + 1
            kept[key] = known[key]
            measured[kind].append(known[key])
    MEASURED.write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
    total = sum(len(cases) for cases, _ in kinds.values())
    print(f"measured {fresh} of {total} configurations; {total - fresh} unchanged since {MEASURED.name} (FULL=1: all)")
    return measured


def main(argv: list[str] | None = None) -> int:
    """Measure what changed (``--full``: everything) and rewrite ``validation/results.json`` (see
    ``validation/report.py``): the engine's predictions are always computed afresh."""
    from validation.report import write_results

    args = sys.argv[1:] if argv is None else argv
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    measured = measure_all(full="--full" in args)
    rc = write_results(measured, device="cpu")
    from validation.llm_analysis import check  # the engine's llm-analysis reproduction vs the real package

    peers = check()
    bad = [line for line in peers if not line.startswith("ok")]
    print(f"llm-analysis 0.2.2: {len(peers) - len(bad)}/{len(peers)} configurations reproduced exactly")
    print("\n".join(bad))
    return rc or (1 if bad else 0)


if __name__ == "__main__":
    sys.exit(main())
