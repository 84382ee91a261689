"""Costs of TensorField.splat beside interpolation at the same points (its
transpose), and of a convolution's gradient penalty (a backward under
create_graph, then the backward of that) beside a plain forward+backward.
Times are CPU time of the process (steady on a loaded machine; run it with one
thread), the median of --repeats runs; the ratios are what to compare.

    OMP_NUM_THREADS=1 PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \\
        .venv/bin/python bench/python/splat_and_double_backward.py
"""
import argparse
import statistics
import time

import torch

import fieldkit.minkowski as ME


def cpu_ms(fn, repeats):
    times = []
    for _ in range(repeats):
        t = time.process_time()
        fn()
        times.append((time.process_time() - t) * 1e3)
    return statistics.median(times)


def splat_figures(points, channels, repeats):
    g = torch.Generator().manual_seed(0)
    x = torch.rand(points, 3, generator=g) * 40
    c = torch.cat([torch.zeros(points, 1), x], 1)
    f = torch.randn(points, channels, generator=g)
    mgr = ME.CoordinateManager(3)
    field = ME.TensorField(f, c, coordinate_manager=mgr)
    s = field.splat()
    splat_ms = cpu_ms(lambda: field.splat(), repeats)
    interp_ms = cpu_ms(lambda: s.interpolate(field), repeats)
    print(f"splat: {points} points (3-D, uniform in a 40^3 box), C = {channels}: "
          f"{len(s)} voxels; splat {splat_ms:.1f} ms, interpolation at the points on the "
          f"splat map {interp_ms:.1f} ms (ratio {splat_ms / interp_ms:.2f})")


def penalty_figures(points, channels, repeats):
    g = torch.Generator().manual_seed(1)
    coords = torch.unique(torch.randint(0, 30, (points, 4), generator=g, dtype=torch.int32),
                          dim=0)
    coords[:, 0] = 0
    coords = torch.unique(coords, dim=0)
    x = ME.SparseTensor(torch.randn(len(coords), channels, generator=g), coords)
    conv = ME.MinkowskiConvolution(channels, channels, kernel_size=3, dimension=3)

    def plain():
        f = x.F.detach().requires_grad_()
        conv(ME.SparseTensor(f, coordinate_map_key=x.coordinate_map_key,
                             coordinate_manager=x.coordinate_manager)).F.square().sum().backward()

    def penalty():
        f = x.F.detach().requires_grad_()
        y = conv(ME.SparseTensor(f, coordinate_map_key=x.coordinate_map_key,
                                 coordinate_manager=x.coordinate_manager)).F.square().sum()
        (gf,) = torch.autograd.grad(y, f, create_graph=True)
        gf.square().sum().backward()

    plain()
    p_ms, q_ms = cpu_ms(plain, repeats), cpu_ms(penalty, repeats)
    print(f"gradient penalty: 3x3x3 conv, {len(coords)} voxels, C = {channels}: forward+backward "
          f"{p_ms:.1f} ms, forward + create_graph backward + its backward {q_ms:.1f} ms "
          f"(ratio {q_ms / p_ms:.2f})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--points", type=int, default=100000)
    ap.add_argument("--channels", type=int, default=16)
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} torch thread(s)")
    splat_figures(a.points, a.channels, a.repeats)
    penalty_figures(a.points // 4, a.channels, a.repeats)


if __name__ == "__main__":
    main()
