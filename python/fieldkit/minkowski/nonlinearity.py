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
