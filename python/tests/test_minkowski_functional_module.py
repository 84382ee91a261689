"""ME.MinkowskiFunctional: torch.nn.functional on the features (each wrapper
against torch's function on F written here, gradcheck in f64), losses as
torch scalars, MinkowskiModuleBase and is_cuda_available."""
import torch
import torch.nn.functional as tf
from conftest import random_sparse

import fieldkit
import fieldkit.minkowski as ME
import fieldkit.minkowski.MinkowskiFunctional as MEF


def test_every_wrapper_is_torchs_function_on_the_features():
    x = random_sparse()
    w = torch.randn(4, 3, dtype=torch.float64)
    cases = {"relu": (), "elu": (0.5,), "leaky_relu": (0.1,), "softmax": (1,),
             "log_softmax": (1,), "linear": (w,), "normalize": (),
             "threshold": (0.1, 2.0), "silu": (), "tanh": (), "hardswish": ()}
    for name, args in cases.items():
        y = getattr(MEF, name)(x, *args)
        reference = getattr(torch if name == "tanh" else tf, name)
        assert torch.equal(y.F, reference(x.F, *args)), name
        assert y.coordinate_map_key == x.coordinate_map_key
    x4 = random_sparse(channels=4)
    assert torch.equal(MEF.glu(x4, 1).F, tf.glu(x4.F, 1))
    assert ME.MinkowskiFunctional is MEF
    f = x.F.detach().clone().requires_grad_()
    assert torch.autograd.gradcheck(
        lambda t: MEF.softplus(ME.SparseTensor(t, coordinate_map_key=x.coordinate_map_key,
                                               coordinate_manager=x.coordinate_manager)).F, (f,))


def test_a_field_stays_a_field_and_losses_are_scalars():
    points = torch.tensor([[0, 0.5, 1.5], [1, 2.25, 0.0]], dtype=torch.float64)
    field = ME.TensorField(torch.tensor([[1.0, -2.0], [0.5, 3.0]], dtype=torch.float64), points)
    out = MEF.silu(field)
    assert isinstance(out, ME.TensorField) and torch.equal(out.F, tf.silu(field.F))
    x = random_sparse()
    target = torch.randn_like(x.F)
    assert torch.equal(MEF.mse_loss(x, target), tf.mse_loss(x.F, target))
    on_x = ME.SparseTensor(target, coordinate_map_key=x.coordinate_map_key,
                           coordinate_manager=x.coordinate_manager)
    assert torch.equal(MEF.l1_loss(x, on_x, reduction="sum"), tf.l1_loss(x.F, target,
                                                                         reduction="sum"))
    labels = torch.arange(len(x)) % 3
    assert torch.equal(MEF.cross_entropy(x, labels), tf.cross_entropy(x.F, labels))


def test_module_base_and_cuda_flag():
    assert issubclass(ME.MinkowskiModuleBase, torch.nn.Module)
    assert ME.is_cuda_available() == fieldkit._core.built_with_cuda()


def test_cuda_versions_follow_the_build():
    # The reference's encoding: 1000 * major + 10 * minor, -1 on a CPU-only build.
    if not ME.is_cuda_available():
        assert ME.cuda_version() == -1 and ME.cudart_version() == -1
        return
    built = ME.cuda_version()
    assert built >= 11000 and built % 10 == 0  # e.g. 13000 for CUDA 13.0
    assert ME.cudart_version() in (0, built) or ME.cudart_version() >= 11000
