"""Benchmarks comparing framegraph with torch.compile side by side (`python -m bench`).

`workloads` defines what is measured; `compile_time`, `cache_hit` and `steady_state` measure it;
`report` writes `bench/RESULTS.md`. `hook_overhead.py` is a standalone microbenchmark of the C hook, and `distributed.py`
(`python -m bench.distributed`) times a DDP step and an FSDP2 step on 2 gloo processes.
"""
