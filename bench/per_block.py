"""Per-block compilation: an 8-layer transformers Llama whose decoder layers are each compiled
on their own (as FSDP2 training compiles blocks), framegraph beside torch.compile.

Each run is a fresh child: seconds for the first forward (every layer compiled or reused) and
the graphs made. Identical layers share one graph in both frontends. Needs transformers (the
`models` extra).
"""

from __future__ import annotations

import importlib.util
import statistics
import time

import torch

from . import harness

LAYERS = 8


def first_forward(frontend: str) -> dict:
    import transformers

    from tests.models.zoo import _LLAMA_LIKE

    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(
        transformers.LlamaConfig(**{**_LLAMA_LIKE, "num_hidden_layers": LAYERS})).eval()
    ids = torch.randint(0, 100, (2, 16), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        expected = model(ids, use_cache=False).logits
        harness.clear_counters()
        graphs: list = []

        def backend(gm, example_inputs):
            graphs.append(gm)
            return gm.forward

        for i, layer in enumerate(model.model.layers):
            model.model.layers[i] = harness.compile_with(frontend, layer, backend)
        t0 = time.perf_counter()
        actual = model(ids, use_cache=False).logits
        seconds = time.perf_counter() - t0
    return {"seconds": seconds, "graphs": len(graphs), "mismatch": harness.check_equal([actual], [expected])}


def run(runs: int, log) -> dict:
    if importlib.util.find_spec("transformers") is None:
        return {}
    results: dict = {frontend: [] for frontend in harness.FRONTENDS}
    for i in range(runs):
        for frontend in harness.FRONTENDS if i % 2 == 0 else harness.FRONTENDS[::-1]:
            results[frontend].append(harness.run_isolated(first_forward, frontend, timeout=300))
    log("per-block compile: done")
    return results


def render(results: dict) -> str:
    head = ["### Per-block compile (`bench/per_block.py`)", "",
            f"A transformers Llama of {LAYERS} decoder layers, each layer compiled on its own (eager "
            "backend), batch 2 x 16 tokens: seconds of the first forward (median), graphs made.", ""]
    if not results:
        return "\n".join(head + ["Skipped: transformers is not installed (the `models` extra)."])
    cells = {}
    for frontend, runs in results.items():
        errors = [r["error"] for r in runs if "error" in r]
        if errors:
            return "\n".join(head + [f"Failed ({frontend}): {errors[0]}"])
        cells[frontend] = (statistics.median(r["seconds"] for r in runs), runs[0]["graphs"],
                           any(r["mismatch"] for r in runs))
    fg, tc = cells["framegraph"], cells["torch"]
    rows = ["| frontend | first forward (s) | graphs | equals eager |", "|---|---|---|---|",
            f"| framegraph | {fg[0]:.3f} | {fg[1]} | {'no' if fg[2] else 'yes'} |",
            f"| torch.compile | {tc[0]:.3f} | {tc[1]} | {'no' if tc[2] else 'yes'} |",
            "", f"framegraph / torch.compile: {fg[0] / tc[0]:.2f}x"]
    return "\n".join(head + rows)
