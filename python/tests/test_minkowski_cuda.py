"""fieldkit.minkowski on CUDA torch tensors: each op against the same
computation on CPU tensors (same coordinates, features, weights and output
gradients), and every output and gradient left on the CUDA device.

Runs only where torch sees a CUDA device and fieldkit was built with its CUDA
backend with a device present (fieldkit.cuda_available()); scripts/gpu-check
runs this file and counts a skip there as a failure.

Tolerances: coordinates and row indices exactly equal (a device map has the
CPU map's rows in the CPU map's order); f32 features and gradients within
atol 1e-5 + rtol 1e-4 of the CPU's (the same sums, in another order on the
device); bf16 autocast within 1e-2 relative plus 1e-2 of the largest
magnitude of the f32 convolution of the bf16-rounded inputs (bf16's unit
roundoff is 2^-8: room for a few roundings, none for a wrong pair). The f64
device convolution (cuBLAS DGEMM) is gradchecked against finite differences
on the device (features and kernel).
"""
import pytest
import torch

import fieldkit
import fieldkit.minkowski as ME
from fieldkit.minkowski import functional

pytestmark = pytest.mark.skipif(
    not (torch.cuda.is_available() and fieldkit.cuda_available()),
    reason="needs a CUDA torch and a fieldkit built with CUDA on a machine with a GPU")

CUDA = "cuda"
QMode = ME.SparseTensorQuantizationMode


def coordinates_with_duplicates(n=400, extent=5, dim=3, seed=0):
    """N x (1+D) int32 in [0, extent)^D, two batch items, many repeats."""
    g = torch.Generator().manual_seed(seed)
    c = torch.randint(0, extent, (n, dim + 1), generator=g, dtype=torch.int32)
    c[:, 0] = torch.arange(n, dtype=torch.int32) % 2
    assert len(torch.unique(c, dim=0)) < n
    return c


def unique_coordinates(n=300, extent=7, dim=3, seed=1):
    """The distinct rows of such coordinates, in a random order."""
    u = torch.unique(coordinates_with_duplicates(n, extent, dim, seed), dim=0)
    return u[torch.randperm(len(u), generator=torch.Generator().manual_seed(seed))]


def randn(*shape, seed=2):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed))


def close(on_cuda, on_cpu, atol=1e-5, rtol=1e-4):
    """on_cuda is a CUDA tensor holding on_cpu's values (within the tolerance)."""
    assert on_cuda.device.type == "cuda", f"expected a CUDA tensor, got one on {on_cuda.device}"
    torch.testing.assert_close(on_cuda.cpu(), on_cpu, atol=atol, rtol=rtol)


def leaves(features):
    """(CPU leaf, CUDA leaf) of the same values, both requiring grad."""
    return (features.clone().requires_grad_(True),
            features.to(CUDA).requires_grad_(True))


def sparse_pair(channels=4, seed=3):
    """The same SparseTensor from CPU and from CUDA coordinates and features,
    with the feature leaves."""
    c = unique_coordinates()
    fc, fg = leaves(randn(len(c), channels, seed=seed))
    return ME.SparseTensor(fc, c), ME.SparseTensor(fg, c.to(CUDA)), fc, fg


def same_sparse(y_cuda, y_cpu, **tol):
    assert torch.equal(y_cuda.C.cpu(), y_cpu.C)
    close(y_cuda.F, y_cpu.F, **tol)


def backward_both(y_cpu, y_cuda, seed=9):
    g = randn(*y_cpu.F.shape, seed=seed)
    y_cpu.F.backward(g)
    y_cuda.F.backward(g.to(CUDA))


def twins(make):
    """(CPU module, CUDA module) made by make() with the same parameters."""
    torch.manual_seed(0)
    on_cpu, on_cuda = make(), make()
    on_cuda.load_state_dict(on_cpu.state_dict())
    return on_cpu, on_cuda.to(CUDA)


def same_module_grads(m_cuda, m_cpu, **tol):
    for (name, p_cpu), (_, p_cuda) in zip(m_cpu.named_parameters(), m_cuda.named_parameters()):
        assert p_cuda.grad is not None, f"{name}: no gradient on the CUDA module"
        close(p_cuda.grad, p_cpu.grad, **tol)


@pytest.mark.parametrize("mode", list(QMode))
def test_sparse_tensor_from_cuda_coordinates_reduces_duplicates_like_the_cpu(mode):
    c = coordinates_with_duplicates()
    fc, fg = leaves(randn(len(c), 3))
    x_cpu = ME.SparseTensor(fc, c, quantization_mode=mode)
    x_cuda = ME.SparseTensor(fg, c.to(CUDA), quantization_mode=mode)
    same_sparse(x_cuda, x_cpu)
    assert x_cuda.unique_index.device.type == x_cuda.inverse_mapping.device.type == "cuda"
    assert torch.equal(x_cuda.unique_index.cpu(), x_cpu.unique_index)
    assert torch.equal(x_cuda.inverse_mapping.cpu(), x_cpu.inverse_mapping)
    backward_both(x_cpu, x_cuda)
    close(fg.grad, fc.grad)


def test_cpu_coordinates_with_cuda_features_index_on_the_device():
    c = coordinates_with_duplicates()
    fc, fg = leaves(randn(len(c), 3))
    x_cpu = ME.SparseTensor(fc, c, quantization_mode=QMode.UNWEIGHTED_AVERAGE)
    x_cuda = ME.SparseTensor(fg, c, quantization_mode=QMode.UNWEIGHTED_AVERAGE)
    same_sparse(x_cuda, x_cpu)
    assert x_cuda.inverse_mapping.device.type == "cuda"


def test_device_moves_the_coordinates_with_the_features():
    """The reference's ``device=`` moves features and coordinates: a CUDA
    manager (maps built on the device), the tensor CUDA inputs give."""
    c = coordinates_with_duplicates()
    f = randn(len(c), 3)
    mode = QMode.UNWEIGHTED_AVERAGE
    x = ME.SparseTensor(f, c, quantization_mode=mode, device=CUDA)
    ref = ME.SparseTensor(f.to(CUDA), c.to(CUDA), quantization_mode=mode)
    assert x.coordinate_manager.coordinate_map_type == ME.CoordinateMapType.CUDA
    assert torch.equal(x.C.cpu(), ref.C.cpu())
    close(x.F, ref.F.cpu(), atol=0, rtol=0)
    p = torch.rand(50, 4, generator=torch.Generator().manual_seed(7)) * 4
    p[:, 0] = 0
    t = ME.TensorField(randn(50, 2), p, device=CUDA)
    assert t.F.is_cuda and t.C.is_cuda
    assert t.coordinate_manager.coordinate_map_type == ME.CoordinateMapType.CUDA


def _conv_net(kind):
    D = 3
    if kind == "submanifold":
        return ME.MinkowskiConvolution(4, 6, kernel_size=3, bias=True, dimension=D)
    if kind == "stride2":
        return ME.MinkowskiConvolution(4, 6, kernel_size=3, stride=2, bias=True, dimension=D)
    down = ME.MinkowskiConvolution(4, 5, kernel_size=2, stride=2, dimension=D)
    if kind == "transposed":
        up = ME.MinkowskiConvolutionTranspose(5, 6, kernel_size=3, stride=2, bias=True,
                                              dimension=D)
    elif kind == "generative":
        up = ME.MinkowskiGenerativeConvolutionTranspose(5, 6, kernel_size=2, stride=2,
                                                        dimension=D)
    else:
        assert kind == "channelwise"
        return ME.MinkowskiChannelwiseConvolution(4, kernel_size=3, bias=True, dimension=D)
    return torch.nn.Sequential(down, up)


@pytest.mark.parametrize("kind", ["submanifold", "stride2", "transposed", "generative",
                                  "channelwise"])
def test_convolution_forward_and_backward(kind):
    net_cpu, net_cuda = twins(lambda: _conv_net(kind))
    x_cpu, x_cuda, fc, fg = sparse_pair()
    y_cpu, y_cuda = net_cpu(x_cpu), net_cuda(x_cuda)
    same_sparse(y_cuda, y_cpu)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad)
    same_module_grads(net_cuda, net_cpu)


def test_strided_features_and_expanded_gradients_cross_as_they_are():
    """Features that are a strided view (every other column) and the output
    gradient of .sum() (stride 0) reach fk without copies in Python."""
    conv_cpu, conv_cuda = twins(lambda: ME.MinkowskiConvolution(4, 6, kernel_size=3,
                                                                dimension=3))
    c = unique_coordinates()
    wc, wg = leaves(randn(len(c), 8, seed=4))
    assert not wg[:, ::2].is_contiguous()
    y_cpu = ME.MinkowskiAvgPooling(kernel_size=2, stride=2, dimension=3)(
        conv_cpu(ME.SparseTensor(wc[:, ::2], c)))
    y_cuda = ME.MinkowskiAvgPooling(kernel_size=2, stride=2, dimension=3)(
        conv_cuda(ME.SparseTensor(wg[:, ::2], c.to(CUDA))))
    same_sparse(y_cuda, y_cpu)
    y_cpu.F.sum().backward()
    y_cuda.F.sum().backward()
    close(wg.grad, wc.grad)
    same_module_grads(conv_cuda, conv_cpu)


@pytest.mark.parametrize("layer", [
    lambda: ME.MinkowskiMaxPooling(kernel_size=2, stride=2, dimension=3),
    lambda: ME.MinkowskiAvgPooling(kernel_size=3, stride=2, dimension=3),
    lambda: ME.MinkowskiSumPooling(kernel_size=3, stride=1, dimension=3),
    lambda: torch.nn.Sequential(ME.MinkowskiAvgPooling(kernel_size=2, stride=2, dimension=3),
                                ME.MinkowskiPoolingTranspose(kernel_size=2, stride=2,
                                                             dimension=3)),
    lambda: ME.MinkowskiGlobalMaxPooling(),
    lambda: ME.MinkowskiGlobalAvgPooling(),
], ids=["max", "avg", "sum", "transpose", "global_max", "global_avg"])
def test_pooling_forward_and_backward(layer):
    x_cpu, x_cuda, fc, fg = sparse_pair()
    y_cpu, y_cuda = layer()(x_cpu), layer()(x_cuda)
    same_sparse(y_cuda, y_cpu)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad)


@pytest.mark.parametrize("norm", [ME.MinkowskiBatchNorm, ME.MinkowskiInstanceNorm])
def test_normalization_forward_backward_and_running_statistics(norm):
    n_cpu, n_cuda = twins(lambda: norm(4))
    with torch.no_grad():
        for p_cpu, p_cuda in zip(n_cpu.parameters(), n_cuda.parameters()):
            p_cpu.add_(0.1 * torch.randn(p_cpu.shape))
            p_cuda.copy_(p_cpu)
    x_cpu, x_cuda, fc, fg = sparse_pair()
    y_cpu, y_cuda = n_cpu(x_cpu), n_cuda(x_cuda)
    same_sparse(y_cuda, y_cpu)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad)
    same_module_grads(n_cuda, n_cpu)
    for (name, b_cpu), (_, b_cuda) in zip(n_cpu.named_buffers(), n_cuda.named_buffers()):
        if b_cpu.is_floating_point():
            close(b_cuda, b_cpu)  # running mean and variance


@pytest.mark.parametrize("broadcast", [ME.MinkowskiBroadcastAddition,
                                       ME.MinkowskiBroadcastMultiplication,
                                       ME.MinkowskiBroadcastConcatenation, ME.MinkowskiBroadcast])
def test_broadcast_forward_and_backward(broadcast):
    x_cpu, x_cuda, fc, fg = sparse_pair()
    pool = ME.MinkowskiGlobalAvgPooling()
    y_cpu = broadcast()(x_cpu, pool(x_cpu))
    y_cuda = broadcast()(x_cuda, pool(x_cuda))
    same_sparse(y_cuda, y_cpu)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad)


@pytest.mark.parametrize("mode", list(functional.BroadcastMode))
def test_broadcast_kernels_outside_autograd(mode):
    """The C++ broadcast forward and backward on the device against the CPU,
    without torch's autograd between them (whose accumulation into a
    gradient buffer would otherwise be mixed into a failure): the forward,
    the features' and the global features' gradients."""
    fn = functional
    got = []
    for x in sparse_pair()[:2]:
        glob = ME.MinkowskiGlobalAvgPooling()(x)
        mgr = x.coordinate_manager
        groups = fn._mk.broadcast_groups(mgr, x.coordinate_map_key, x.F.detach(),
                                         glob.coordinate_map_key, glob.F.detach())
        out, saved = fn._mk.broadcast_forward(fn._plain(x.F.detach()),
                                              fn._plain(glob.F.detach()), groups, mode)
        g = randn(*out.shape, seed=9).to(out.device)
        grads = fn._mk.broadcast_backward(fn._plain(g), saved, groups, mode, True, True)
        got.append((out,) + tuple(grads))
    for on_cuda, on_cpu in zip(got[1], got[0]):
        close(on_cuda, on_cpu)


def _field_pair(channels=3):
    """The same TensorField (continuous points, two batch items) on both sides."""
    g = torch.Generator().manual_seed(5)
    p = torch.rand(200, 4, generator=g) * 6
    p[:, 0] = (torch.arange(200) % 2).float()
    fc, fg = leaves(randn(200, channels, seed=6))
    return ME.TensorField(fc, p), ME.TensorField(fg, p.to(CUDA)), fc, fg


def test_tensor_field_sparse_convolution_and_slice():
    conv_cpu, conv_cuda = twins(lambda: ME.MinkowskiConvolution(3, 4, kernel_size=3,
                                                                dimension=3))
    t_cpu, t_cuda, fc, fg = _field_pair()
    s_cpu, s_cuda = t_cpu.sparse(), t_cuda.sparse()
    same_sparse(s_cuda, s_cpu)
    y_cpu, y_cuda = conv_cpu(s_cpu).slice(t_cpu), conv_cuda(s_cuda).slice(t_cuda)
    close(y_cuda.F, y_cpu.F)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad)
    same_module_grads(conv_cuda, conv_cpu)


def test_interpolation_at_field_points():
    x_cpu, x_cuda, fc, fg = sparse_pair(channels=3)
    t_cpu, t_cuda, _, _ = _field_pair()
    y_cpu, y_cuda = x_cpu.interpolate(t_cpu), x_cuda.interpolate(t_cuda)
    close(y_cuda.F, y_cpu.F)
    out_cpu = ME.MinkowskiInterpolation()(x_cpu, t_cpu)
    out_cuda = ME.MinkowskiInterpolation()(x_cuda, t_cuda)
    close(out_cuda, out_cpu)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad)
    # the reference's weights come on the samples' device
    mgr, key = x_cuda.coordinate_manager, x_cuda.coordinate_map_key
    rows, samples, weights = mgr.interpolation_map_weight(key, t_cuda.C)
    assert rows.is_cuda and samples.is_cuda and weights.is_cuda
    want = x_cpu.coordinate_manager.interpolation_map_weight(x_cpu.coordinate_map_key, t_cpu.C)
    assert torch.equal(rows.cpu(), want[0]) and torch.equal(samples.cpu(), want[1])


def test_splat_of_a_cuda_field():
    t_cpu, t_cuda, fc, fg = _field_pair()
    y_cpu, y_cuda = t_cpu.splat(), t_cuda.splat()
    same_sparse(y_cuda, y_cpu)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad)


def test_pruning_union_and_dense():
    x_cpu, x_cuda, fc, fg = sparse_pair(channels=2)
    keep = x_cpu.F.detach()[:, 0] > 0
    p_cpu = ME.MinkowskiPruning()(x_cpu, keep)
    p_cuda = ME.MinkowskiPruning()(x_cuda, keep.to(CUDA))
    same_sparse(p_cuda, p_cpu)
    pool = ME.MinkowskiAvgPooling(kernel_size=2, stride=1, dimension=3)
    u_cpu = ME.MinkowskiUnion()(p_cpu, pool(x_cpu))
    u_cuda = ME.MinkowskiUnion()(p_cuda, pool(x_cuda))
    same_sparse(u_cuda, u_cpu)
    d_cpu, d_cuda = u_cpu.dense()[0], u_cuda.dense()[0]
    close(d_cuda, d_cpu)
    (d_cpu.square().sum() + (p_cpu - pool(x_cpu)).F.sum()).backward()
    (d_cuda.square().sum() + (p_cuda - pool(x_cuda)).F.sum()).backward()
    close(fg.grad, fc.grad)


class UNet(torch.nn.Module):
    """Two levels: conv, BN, ReLU down by 2 and back with a skip (ME.cat)."""

    def __init__(self, cin=4, c=8, cout=3, D=3):
        super().__init__()
        block = lambda i, o, **k: torch.nn.Sequential(  # noqa: E731
            ME.MinkowskiConvolution(i, o, kernel_size=3, dimension=D, **k),
            ME.MinkowskiBatchNorm(o), ME.MinkowskiReLU())
        self.enc = block(cin, c)
        self.down = block(c, 2 * c, stride=2)
        self.mid = block(2 * c, 2 * c)
        self.up = ME.MinkowskiConvolutionTranspose(2 * c, c, kernel_size=2, stride=2, dimension=D)
        self.dec = block(2 * c, c)
        self.head = ME.MinkowskiConvolution(c, cout, kernel_size=1, bias=True, dimension=D)

    def forward(self, x):
        e = self.enc(x)
        u = self.up(self.mid(self.down(e)))
        return self.head(self.dec(ME.cat(u, e)))


def test_unet_forward_and_backward():
    net_cpu, net_cuda = twins(UNet)
    x_cpu, x_cuda, fc, fg = sparse_pair()
    y_cpu, y_cuda = net_cpu(x_cpu), net_cuda(x_cuda)
    same_sparse(y_cuda, y_cpu, atol=1e-4, rtol=1e-4)
    backward_both(y_cpu, y_cuda)
    close(fg.grad, fc.grad, atol=1e-4, rtol=1e-4)
    same_module_grads(net_cuda, net_cpu, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("stride", [1, 2])
def test_bf16_autocast_convolution_keeps_f32_gradients(stride):
    """Under autocast the features and kernel are cast to bf16: the reference
    is the f32 convolution of the bf16-rounded features, kernel and output
    gradient. The f32 leaves get f32 gradients on the device."""
    conv_ref, conv_cuda = twins(lambda: ME.MinkowskiConvolution(4, 8, kernel_size=3,
                                                                stride=stride, dimension=3))
    with torch.no_grad():
        conv_ref.kernel.copy_(conv_ref.kernel.bfloat16().float())
    c = unique_coordinates()
    f = randn(len(c), 4, seed=3)
    f_ref = f.bfloat16().float().requires_grad_(True)
    f_cuda = f.to(CUDA).requires_grad_(True)
    y_ref = conv_ref(ME.SparseTensor(f_ref, c))
    with torch.autocast("cuda", dtype=torch.bfloat16):
        y_cuda = conv_cuda(ME.SparseTensor(f_cuda, c.to(CUDA)))
    assert y_cuda.F.dtype == torch.bfloat16
    assert torch.equal(y_cuda.C.cpu(), y_ref.C)

    def bf16_close(a, b):
        close(a.float(), b.detach(), atol=1e-2 * float(b.abs().max()), rtol=1e-2)

    bf16_close(y_cuda.F, y_ref.F)
    g = randn(*y_ref.F.shape, seed=9).bfloat16()
    y_ref.F.backward(g.float())
    y_cuda.F.backward(g.to(CUDA))
    assert f_cuda.grad.dtype == conv_cuda.kernel.grad.dtype == torch.float32
    bf16_close(f_cuda.grad, f_ref.grad)
    bf16_close(conv_cuda.kernel.grad, conv_ref.kernel.grad)


def on_map(x, features):
    """`features` on x's coordinates (a new SparseTensor of x's manager)."""
    return ME.SparseTensor(features, coordinate_map_key=x.coordinate_map_key,
                           coordinate_manager=x.coordinate_manager)


@pytest.mark.parametrize("kind", ["submanifold", "stride2", "transposed", "generative"])
def test_f64_convolution_gradcheck_on_the_device(kind):
    """torch.autograd.gradcheck of the f64 device convolution in the features
    and in the (first) layer's kernel. Scatters use f64 atomics, so two
    backward passes may differ in the last bits: nondet_tol allows that."""
    torch.manual_seed(0)
    net = _conv_net(kind).double().to(CUDA)
    first = net[0] if isinstance(net, torch.nn.Sequential) else net
    c = unique_coordinates(n=80, extent=4)
    x = ME.SparseTensor(randn(len(c), 4, seed=5).double().to(CUDA), c.to(CUDA))
    f = x.F.detach().clone().requires_grad_(True)
    assert torch.autograd.gradcheck(lambda ff: net(on_map(x, ff)).F, (f,), nondet_tol=1e-12)
    saved = first._parameters["kernel"]

    def with_kernel(w):
        first._parameters["kernel"] = w
        try:
            return net(x).F
        finally:
            first._parameters["kernel"] = saved

    w = saved.detach().clone().requires_grad_(True)
    assert w.is_cuda and w.dtype == torch.float64
    assert torch.autograd.gradcheck(with_kernel, (w,), nondet_tol=1e-12)


def test_fieldkit_and_torch_see_the_same_devices():
    assert fieldkit._core.cuda_device_count() == torch.cuda.device_count()
