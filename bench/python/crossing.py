"""Per-call cost of crossing from Python into fieldkit's C++ (DLPack in and
out, nanobind dispatch) and of a whole 16-element sparse op through the torch
autograd wrapper, forward and forward+backward, beside torch's own per-op
costs measured in the same run (ratios are what to compare across machines).

    OMP_NUM_THREADS=1 PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
        .venv/bin/python bench/python/crossing.py
"""
import argparse
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


def per_call_us(fn, repeats):
    fn()  # warm caches and allocators
    best = min(timeit.repeat(fn, number=repeats, repeat=5))
    return best / repeats * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=20000)
    args = ap.parse_args()
    torch.set_num_threads(1)

    # 16 points on a line, 1 channel; a 1-offset kernel (the identity map):
    # the smallest op that still goes through the whole sparse path.
    coords = torch.stack([torch.zeros(16, dtype=torch.int32),
                          torch.arange(16, dtype=torch.int32)], 1)
    x = ME.SparseTensor(torch.randn(16, 1), coords)
    mgr, key = x.coordinate_manager, x.coordinate_map_key
    kmap = mgr.kernel_map(key, key, ME.KernelRegion.cube([3]), False)
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

    rows = [
        ("torch.add, 16 elements (torch's own per-op floor)", lambda: torch.add(t16, t16)),
        ("DLPack round trip torch -> fk -> torch", lambda: _core.roundtrip_torch(t16)),
        ("conv_forward binding, 16 x 1, 3 offsets", lambda: _mk.conv_forward(fd, wd, kmap, False)),
        ("ConvolutionFunction.apply forward", lambda: ConvolutionFunction.apply(f, w, kmap, False)),
        ("the same under torch.no_grad (forward alone, no graph)", inference),
        ("ConvolutionFunction forward + backward (+ sum)", fwd_bwd),
        ("do-nothing autograd.Function forward + backward (+ sum)", torch_fwd_bwd),
    ]
    print(f"{'what':58s} {'us/call':>9s}")
    results = {}
    for name, fn in rows:
        results[name] = per_call_us(fn, args.repeats)
        print(f"{name:58s} {results[name]:9.2f}")
    fb = results[rows[5][0]]
    floor = results[rows[6][0]]
    print(f"\nfieldkit op forward+backward over torch's do-nothing Function: {fb / floor:.2f}x "
          f"({fb - floor:.2f} us added by fieldkit per op)")


if __name__ == "__main__":
    main()
