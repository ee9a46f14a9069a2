"""The same configurations on a CUDA device: saved-for-backward bytes against the (CUDA) profiles, plus
``torch.cuda.max_memory_allocated``, ``torch.cuda.memory_reserved`` and what ``nvidia-smi`` shows.

Run ``.venv-validation/bin/python -m validation.gpu`` (with a CUDA build of torch) wherever a CUDA device
exists; it writes ``validation/results-gpu.json`` in the format of ``results.json``, and the "How
accurate is this?" page adds its rows when the file exists. Without a CUDA device it says so and exits 0
without writing anything.
"""

from __future__ import annotations

import json
import platform
import subprocess
import sys
from pathlib import Path
from typing import Any

__all__ = ["GPU_RESULTS", "main"]

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


def main() -> int:
    """Measure every activation case on ``cuda:0`` and write ``results-gpu.json``; skip without CUDA."""
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
