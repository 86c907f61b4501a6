"""A k-means step written in numpy, compiled by framegraph into one graph (through torch._numpy).

    python examples/kmeans_numpy.py [--points 200000] [--clusters 8] [--dim 4] [--backend inductor] [--threads 1]

Prints the graph count, whether the result equals eager numpy's, and the time per step of eager
numpy and of the compiled function (median of repeated runs, after the first compile).
"""

import argparse
import statistics
import time

import numpy as np
import torch

import framegraph
from framegraph.counters import counters


def kmeans_step(points, centroids):
    distances = ((points[:, None, :] - centroids[None, :, :]) ** 2).sum(axis=-1)
    labels = np.argmin(distances, axis=1)
    one_hot = (labels[:, None] == np.arange(centroids.shape[0])[None, :]).astype(points.dtype)
    counts = one_hot.sum(axis=0)
    sums = one_hot.T @ points
    return sums / np.maximum(counts, 1)[:, None], labels


def median_seconds(fn, *args, repeat=15):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--clusters", type=int, default=8)
    parser.add_argument("--dim", type=int, default=4)
    parser.add_argument("--backend", default="inductor")
    parser.add_argument("--threads", type=int, default=1,
                        help="torch's threads (numpy's own kernels here run on one)")
    options = parser.parse_args()
    torch.set_num_threads(options.threads)
    rng = np.random.default_rng(0)
    points = rng.standard_normal((options.points, options.dim)).astype(np.float32)
    centroids = points[rng.choice(options.points, options.clusters, replace=False)].copy()

    compiled = framegraph.compile(kmeans_step, backend=options.backend)
    start = time.perf_counter()
    new_centroids, labels = compiled(points, centroids)
    first = time.perf_counter() - start
    expected_centroids, expected_labels = kmeans_step(points, centroids)
    equal = (np.array_equal(labels, expected_labels)
             and np.allclose(new_centroids, expected_centroids, rtol=1e-4, atol=1e-5))
    eager = median_seconds(kmeans_step, points, centroids)
    fast = median_seconds(compiled, points, centroids)
    print(f"{options.points} points, {options.clusters} clusters, {options.dim} dims, backend {options.backend}, "
          f"{options.threads} thread(s): "
          f"{counters['stats']['unique_graphs']} graph, {sum(counters['graph_break'].values())} breaks, "
          f"first call {first:.2f} s; result equals eager: {equal}")
    print(f"eager numpy {eager * 1e3:.2f} ms/step, compiled {fast * 1e3:.2f} ms/step "
          f"({eager / fast:.2f}x)")


if __name__ == "__main__":
    main()
