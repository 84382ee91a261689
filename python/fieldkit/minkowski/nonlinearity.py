"""Layers over the features alone (nonlinearities, dropout, linear): the torch
module applied to F, the result on the same coordinates."""
import torch

from .sparse_tensor import SparseTensor, TensorField


class _FeatureModule(torch.nn.Module):
    torch_module = None

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.module = self.torch_module(*args, **kwargs)

    def forward(self, input):
        out = self.module(input.F)
        if isinstance(input, TensorField):
            return input._with(out)
        return SparseTensor._on_map(out, input.coordinate_map_key, input.coordinate_manager)

    def __repr__(self):
        return f"{type(self).__name__}({self.module.extra_repr()})"


_WRAPPED = ["ELU", "Hardshrink", "Hardsigmoid", "Hardtanh", "Hardswish", "LeakyReLU",
            "LogSigmoid", "PReLU", "ReLU", "ReLU6", "RReLU", "SELU", "CELU", "GELU", "Sigmoid",
            "SiLU", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold",
            "Softmin", "Softmax", "LogSoftmax", "Dropout", "AlphaDropout", "Linear"]

__all__ = []
for _name in _WRAPPED:
    _cls = type("Minkowski" + _name, (_FeatureModule,),
                {"torch_module": getattr(torch.nn, _name),
                 "__doc__": f"torch.nn.{_name} applied to the features."})
    globals()[_cls.__name__] = _cls
    __all__.append(_cls.__name__)


class MinkowskiSinusoidal(torch.nn.Module):
    """sin(F @ kernel + bias) * coef on the same coordinates (a SparseTensor
    or a TensorField): kernel (in, out), bias and coef (1, out), all drawn
    from U[0, 1) as the reference does."""

    def __init__(self, in_channel, out_channel):
        super().__init__()
        self.in_channel, self.out_channel = in_channel, out_channel
        self.kernel = torch.nn.Parameter(torch.rand(in_channel, out_channel))
        self.bias = torch.nn.Parameter(torch.rand(1, out_channel))
        self.coef = torch.nn.Parameter(torch.rand(1, out_channel))

    def forward(self, input):
        out = torch.sin(input.F.mm(self.kernel) + self.bias) * self.coef
        if isinstance(input, TensorField):
            return input._with(out)
        return SparseTensor._on_map(out, input.coordinate_map_key, input.coordinate_manager)


__all__.append("MinkowskiSinusoidal")
