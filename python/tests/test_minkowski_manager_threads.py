"""Python threads sharing one CoordinateManager: a coordinate field's key
is chosen and stored at once (two fields never get one key), a map sorted
for the determinism mode gets one "@sorted" twin however many threads sort
it at once, and the calls that run without the GIL (pooling, quantization,
inserts, kernel maps) give each thread the single-threaded answer."""
import sys
import threading

import torch

import fieldkit.minkowski as ME


def together(n, fn):
    """fn(i) for i < n, started at once from n threads."""
    barrier = threading.Barrier(n)

    def run(i):
        barrier.wait()
        fn(i)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_fields_inserted_from_several_threads_keep_their_own_points():
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads between nearly every bytecode
    try:
        for trial in range(40):
            mgr = ME.CoordinateManager(D=2)
            fields = [ME.TensorField(torch.ones(20, 1), coordinate_manager=mgr,
                                     coordinates=torch.cat([torch.zeros(20, 1),
                                                            torch.rand(20, 2) + 10 * i], 1))
                      for i in range(4)]
            keys = [None] * 4

            def key(i):
                keys[i] = fields[i].coordinate_field_map_key

            together(4, key)
            assert len(set(map(str, keys))) == 4, (trial, keys)
            for f, k in zip(fields, keys):
                assert torch.equal(mgr.get_coordinate_field(k), f.C)
    finally:
        sys.setswitchinterval(old)


def test_one_sorted_twin_per_map_under_threads():
    g = torch.Generator().manual_seed(0)
    c = torch.unique(torch.cat([torch.randint(0, 2, (80000, 1), generator=g),
                                torch.randint(0, 40, (80000, 3), generator=g)], 1), dim=0)
    c = c[torch.randperm(len(c), generator=g)].int()
    f = torch.randn(len(c), 2, generator=g)
    conv = ME.MinkowskiConvolution(2, 2, kernel_size=3, dimension=3)
    was = ME.is_deterministic()
    ME.set_deterministic(True)
    try:
        for _ in range(4):
            x = ME.SparseTensor(f, coordinates=c)
            out = [None, None]

            def convolve(i):
                out[i] = conv(x)

            together(2, convolve)
            assert x.coordinate_manager.num_maps() == 2  # the map and its one twin
            assert torch.equal(out[0].F, out[1].F)
            assert ME.cat(out[0], x).shape == (len(c), 4)
    finally:
        ME.set_deterministic(was)


def test_calls_without_the_gil_agree_across_threads():
    g = torch.Generator().manual_seed(2)
    c = torch.cat([torch.randint(0, 2, (30000, 1), generator=g),
                   torch.randint(0, 30, (30000, 3), generator=g)], 1).int()
    f = torch.randn(len(c), 3, generator=g, requires_grad=True)
    mgr = ME.CoordinateManager(D=3)
    pool = ME.MinkowskiMaxPooling(3, stride=2, dimension=3)
    glob = ME.MinkowskiGlobalAvgPooling()

    def work():
        x = ME.SparseTensor(f, coordinates=c, coordinate_manager=mgr,
                            quantization_mode=ME.SparseTensorQuantizationMode.UNWEIGHTED_AVERAGE)
        y, z = pool(x), glob(x)
        grad, = torch.autograd.grad((y.F.sum() + z.F.sum()), f)
        q = ME.utils.sparse_quantize(c[:, 1:].float() * 0.7, f.detach(), quantization_size=1.0)
        return y.F.detach(), z.F.detach(), grad, q[0], q[1]

    want = work()
    got = [None] * 4

    def run(i):
        got[i] = work()

    together(4, run)
    for g_ in got:
        for a, b in zip(g_, want):
            assert torch.equal(a, b)
