"""Per-call cost of crossing from Python into fieldkit's C++ (DLPack in and
out, nanobind dispatch) and of a whole 16-element sparse op through the torch
autograd wrapper, forward and forward+backward, beside torch's own per-op
costs measured in the same run (ratios are what to compare across machines).
Times are CPU time of the process by default (steady on a loaded machine;
the benchmark is single-threaded), --clock wall for wall time.

    OMP_NUM_THREADS=1 PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python bench/python/crossing.py
"""
import argparse
import time
import timeit

import torch

import fieldkit.minkowski as ME
from fieldkit import _core
from fieldkit._core import minkowski as _mk
from fieldkit.minkowski.functional import ConvolutionFunction, run


class Doubling(torch.autograd.Function):
    """A do-nothing torch autograd.Function: the wrapper's floor."""

    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class DoublingWithWeight(torch.autograd.Function):
    """The same with a second input that gets a gradient (as a weight does)."""

    @staticmethod
    def forward(ctx, x, w):
        ctx.w_shape = w.shape
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2, g.new_ones(ctx.w_shape)


def per_call_us(fn, repeats, timer):
    fn()  # warm caches and allocators
    best = min(timeit.repeat(fn, number=repeats, repeat=5, timer=timer))
    return best / repeats * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20000)
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu")
    args = ap.parse_args()
    timer = time.process_time if args.clock == "cpu" else time.perf_counter
    torch.set_num_threads(1)

    # 16 points on a line, 1 channel; a 1-offset kernel (the identity map):
    # the smallest op that still goes through the whole sparse path.
    coords = torch.stack([torch.zeros(16, dtype=torch.int32),
                          torch.arange(16, dtype=torch.int32)], 1)
    x = ME.SparseTensor(torch.randn(16, 1), coords)
    mgr, key = x.coordinate_manager, x.coordinate_map_key
    kmap = mgr.region_kernel_map(key, key, ME.KernelRegion.cube([3]), False)
    f = x.F.clone().requires_grad_()
    w = torch.randn(3, 1, 1, requires_grad=True)
    fd, wd = f.detach(), w.detach()
    t16 = torch.randn(16)

    def fwd_bwd():
        ConvolutionFunction.apply(f, w, kmap, False).sum().backward()

    def inference():
        with torch.no_grad():
            run(ConvolutionFunction, f, w, kmap, False)

    def torch_fwd_bwd():
        Doubling.apply(f).sum().backward()

    def torch_fwd_bwd_weight():
        DoublingWithWeight.apply(f, w).sum().backward()

    conv = ME.MinkowskiConvolution(1, 1, kernel_size=3, dimension=1)
    xs = ME.SparseTensor(f, coordinate_map_key=key, coordinate_manager=mgr)

    def layer_fwd_bwd():
        conv(xs).F.sum().backward()

    max_pool, global_max = ME.MinkowskiMaxPooling(3, dimension=1), ME.MinkowskiGlobalMaxPooling()

    rows = [
        ("torch.add, 16 elements (torch's own per-op floor)", lambda: torch.add(t16, t16)),
        ("DLPack round trip torch -> fk -> torch", lambda: _core.roundtrip_torch(t16)),
        ("conv_forward binding, 16 x 1, 3 offsets", lambda: _mk.conv_forward(fd, wd, kmap, False)),
        ("ConvolutionFunction.apply forward", lambda: ConvolutionFunction.apply(f, w, kmap, False)),
        ("the same under torch.no_grad (forward alone, no graph)", inference),
        ("ConvolutionFunction forward + backward (+ sum)", fwd_bwd),
        ("do-nothing autograd.Function forward + backward (+ sum)", torch_fwd_bwd),
        ("the same with a weight input (two gradients)", torch_fwd_bwd_weight),
        ("MinkowskiConvolution layer forward", lambda: conv(xs)),
        ("MinkowskiConvolution layer forward + backward (+ sum)", layer_fwd_bwd),
        ("MinkowskiMaxPooling(3) forward + backward (+ sum)",
         lambda: max_pool(xs).F.sum().backward()),
        ("MinkowskiGlobalMaxPooling forward + backward (+ sum)",
         lambda: global_max(xs).F.sum().backward()),
    ]
    print(f"{'what':58s} {'us/call':>9s} ({args.clock} time)")
    results = {}
    for name, fn in rows:
        results[name] = per_call_us(fn, args.repeats, timer)
        print(f"{name:58s} {results[name]:9.2f}")
    fb = results[rows[5][0]]
    floor = results[rows[7][0]]
    print(f"\nfieldkit op forward+backward over torch's do-nothing Function with a weight: "
          f"{fb / floor:.2f}x ({fb - floor:.2f} us added by fieldkit per op)")


if __name__ == "__main__":
    main()
