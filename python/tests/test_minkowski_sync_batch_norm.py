"""MinkowskiSyncBatchNorm: two gloo processes on the CPU against one
BatchNorm over the concatenated batch (forward, backward, running
statistics); without torch.distributed it is MinkowskiBatchNorm; the
hand-written backward under gradcheck in f64; convert_sync_batchnorm."""
import os

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from conftest import random_coordinates

import fieldkit.minkowski as ME
from fieldkit._core.nefi import set_num_threads
from fieldkit.minkowski.sync_batch_norm import SyncBatchNormFunction

C = 3


def batch(seed=0):
    """The whole batch: coordinates, features and an upstream gradient."""
    c = random_coordinates(80, 2, 8, seed=seed)
    g = torch.Generator().manual_seed(seed + 1)
    f = torch.randn(len(c), C, generator=g, dtype=torch.float64) * 2 + 1
    up = torch.randn(len(c), C, generator=g, dtype=torch.float64)
    return c, f, up


def norm_net():
    """A model holding a MinkowskiBatchNorm with non-trivial parameters."""
    net = torch.nn.Sequential(ME.MinkowskiBatchNorm(C, momentum=0.3)).double()
    with torch.no_grad():
        net[0].bn.weight.copy_(torch.tensor([1.0, -2.0, 0.5]))
        net[0].bn.bias.copy_(torch.tensor([0.0, 1.0, -1.0]))
    return net


def step(net, c, f, up):
    """One forward/backward: (output features, input gradient)."""
    x = ME.SparseTensor(f.clone().requires_grad_(), c)
    y = net(x)
    (y.F * up).sum().backward()
    return y.F.detach(), x.F.grad


def worker(rank, world, init, out_dir):
    """Rank r takes rows r, r + world, ... of the batch (unequal counts)."""
    # A forked child runs no OpenMP region (the parent's team is not forked).
    torch.set_num_threads(1)
    set_num_threads(1)
    dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
    try:
        c, f, up = batch()
        rows = torch.arange(rank, len(c), world)
        net = ME.MinkowskiSyncBatchNorm.convert_sync_batchnorm(norm_net())
        assert isinstance(net[0], ME.MinkowskiSyncBatchNorm)
        y, gx = step(net, c[rows], f[rows], up[rows])
        bn = net[0].bn
        grads = torch.cat([bn.weight.grad, bn.bias.grad])
        dist.all_reduce(grads)  # what DDP does with every parameter gradient (sum)
        torch.save({"rows": rows, "y": y, "gx": gx, "grads": grads,
                    "running": (bn.running_mean, bn.running_var, bn.num_batches_tracked)},
                   os.path.join(out_dir, f"rank{rank}.pt"))
    finally:
        dist.destroy_process_group()


def test_two_gloo_processes_match_one_batch_norm_over_the_whole_batch(tmp_path):
    world = 2
    init = f"file://{tmp_path / 'rendezvous'}"
    # fork, not spawn: a spawned child imports torch again (seconds each).
    mp.start_processes(worker, args=(world, init, str(tmp_path)), nprocs=world,
                       start_method="fork")
    c, f, up = batch()
    net = norm_net()
    y, gx = step(net, c, f, up)
    bn = net[0].bn
    for rank in range(world):
        r = torch.load(tmp_path / f"rank{rank}.pt")
        assert torch.allclose(r["y"], y[r["rows"]], atol=1e-12)
        assert torch.allclose(r["gx"], gx[r["rows"]], atol=1e-12)
        assert torch.allclose(r["grads"], torch.cat([bn.weight.grad, bn.bias.grad]), atol=1e-12)
        mean, var, tracked = r["running"]
        assert torch.allclose(mean, bn.running_mean, atol=1e-12)
        assert torch.allclose(var, bn.running_var, atol=1e-12)
        assert tracked.item() == 1


def test_without_distributed_it_is_batch_norm():
    assert not dist.is_initialized()
    c, f, up = batch(seed=3)
    plain = norm_net()
    synced = ME.MinkowskiSyncBatchNorm.convert_sync_batchnorm(norm_net())
    for _ in range(2):
        y0, g0 = step(plain, c, f, up)
        y1, g1 = step(synced, c, f, up)
        assert torch.equal(y0, y1) and torch.equal(g0, g1)
    assert all(torch.equal(a, b) for a, b in zip(plain.state_dict().values(),
                                                   synced.state_dict().values()))
    assert list(plain.state_dict()) == list(synced.state_dict())


def test_function_gradcheck_f64():
    # The hand-written backward (a single process: the all-reduces are no-ops).
    g = torch.Generator().manual_seed(5)
    x = torch.randn(12, C, generator=g, dtype=torch.float64, requires_grad=True)
    w = torch.randn(C, generator=g, dtype=torch.float64, requires_grad=True)
    b = torch.randn(C, generator=g, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(
        lambda x, w, b: SyncBatchNormFunction.apply(x, w, b, 1e-5, None)[0], (x, w, b))
    y = SyncBatchNormFunction.apply(x, w, b, 1e-5, None)[0]
    ref = torch.nn.functional.batch_norm(x, None, None, w, b, training=True, eps=1e-5)
    assert torch.allclose(y, ref, atol=1e-12)


def test_convert_keeps_parameters_and_mode():
    net = torch.nn.Sequential(ME.MinkowskiConvolution(2, C, kernel_size=3, dimension=2),
                              torch.nn.Sequential(ME.MinkowskiBatchNorm(C)),
                              ME.MinkowskiReLU())
    net.eval()
    params = [id(p) for p in net.parameters()]
    out = ME.MinkowskiSyncBatchNorm.convert_sync_batchnorm(net, process_group=None)
    assert isinstance(out[1][0], ME.MinkowskiSyncBatchNorm) and not out[1][0].training
    assert [id(p) for p in out.parameters()] == params
    sync = ME.MinkowskiSyncBatchNorm(C)
    assert ME.MinkowskiSyncBatchNorm.convert_sync_batchnorm(sync) is sync


def test_sync_batch_norm_needs_rows():
    with pytest.raises(ValueError, match="at least one row"):
        SyncBatchNormFunction.apply(torch.zeros(0, C), torch.ones(C), torch.zeros(C), 1e-5, None)
