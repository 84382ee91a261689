"""Normalization layers. MinkowskiBatchNorm is torch's BatchNorm1d over the
features (as in the reference, so its state_dict and running statistics are
torch's); MinkowskiInstanceNorm normalizes each batch item with fieldkit's
C++ pair."""
import enum

import torch

from .._core import minkowski as _mk
from .functional import InstanceNormFunction, run
from .sparse_tensor import SparseTensor, TensorField


def _like(input, features):
    if isinstance(input, TensorField):
        return input._with(features)
    return SparseTensor._on_map(features, input.coordinate_map_key, input.coordinate_manager)


class MinkowskiBatchNorm(torch.nn.Module):
    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True):
        super().__init__()
        self.bn = torch.nn.BatchNorm1d(num_features, eps=eps, momentum=momentum, affine=affine,
                                       track_running_stats=track_running_stats)

    def forward(self, input):
        return _like(input, self.bn(input.F))


class GlobalPoolingMode(enum.Enum):
    """How the reference's GPU computed a global pooling (its 0.3/0.4 API,
    where MinkowskiInstanceNorm took one): AUTO, INDEX_SELECT or SPARSE. The
    engine computes each reduction one way, so the choice changes no number
    here. A plain Enum, not an int, so MinkowskiGlobalPooling, which takes a
    PoolingMode, refuses it rather than reading AUTO (0) as SUM."""

    AUTO = 0
    INDEX_SELECT = 1
    SPARSE = 2


class MinkowskiInstanceNorm(torch.nn.Module):
    """Per batch item (of a SparseTensor or a TensorField): (x - mean) /
    sqrt(var + eps) * weight + bias, weight and bias of shape (1, C) (the
    reference's). `mode`, a GlobalPoolingMode, is accepted as the reference
    takes it and kept as self.mode; it changes no number (see
    GlobalPoolingMode). eps is the reference's hard-coded 1e-8 (not torch's
    1e-5), so ported models give its numbers; pass eps= to change it."""

    def __init__(self, num_features, mode=GlobalPoolingMode.AUTO, *, eps=1e-8):
        super().__init__()
        if not isinstance(mode, GlobalPoolingMode):
            # eps was the second positional argument before mode took its place.
            raise TypeError(f"MinkowskiInstanceNorm: expected mode to be a GlobalPoolingMode "
                            f"(pass eps as eps=), got {mode!r}")
        self.num_features, self.mode, self.eps = num_features, mode, eps
        self.weight = torch.nn.Parameter(torch.ones(1, num_features))
        self.bias = torch.nn.Parameter(torch.zeros(1, num_features))

    def forward(self, input):
        if isinstance(input, TensorField):
            # host coordinates; integer ones (a field may hold them) as f64
            c = input.C.cpu()
            seg = _mk.field_batch_segments(input.F.detach(),
                                           c if c.is_floating_point() else c.double())
        else:
            seg = _mk.batch_segments(input.coordinate_manager, input.coordinate_map_key,
                                     input.F.detach())
        w, b = self.weight.reshape(-1), self.bias.reshape(-1)
        if w.dtype == input.F.dtype:
            return _like(input, run(InstanceNormFunction, input.F, w, b, seg, self.eps))
        # Parameters of another dtype (f32 over f16/bf16 features) are
        # applied by torch, as the reference applies them (out * weight +
        # bias, promoted): cast to the features' dtype, their gradients were
        # summed there (past 65504 an f16 bias gradient was inf).
        unit = torch.ones_like(w, dtype=input.F.dtype)
        normed = run(InstanceNormFunction, input.F, unit, torch.zeros_like(unit), seg, self.eps)
        return _like(input, normed * w + b)
