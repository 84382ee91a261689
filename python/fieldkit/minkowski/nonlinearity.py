"""Layers over the features alone (nonlinearities, dropout, linear): the torch
module applied to F, the result on the same coordinates."""
import torch

from .sparse_tensor import SparseTensor, TensorField


def _same_coordinates(input, features):
    if isinstance(input, TensorField):
        return input._with(features)
    return SparseTensor._on_map(features, input.coordinate_map_key, input.coordinate_manager)


class _FeatureModule(torch.nn.Module):
    torch_module = None
    # The wrapped module's attribute, so its state-dict prefix, as the
    # reference names it: `module`, but `linear` in MinkowskiLinear.
    attribute = "module"

    def __init__(self, *args, **kwargs):
        super().__init__()
        setattr(self, self.attribute, self.torch_module(*args, **kwargs))

    def forward(self, input):
        return _same_coordinates(input, getattr(self, self.attribute)(input.F))

    def __repr__(self):
        return f"{type(self).__name__}({getattr(self, self.attribute).extra_repr()})"


_WRAPPED = ["ELU", "Hardshrink", "Hardsigmoid", "Hardtanh", "Hardswish", "LeakyReLU",
            "LogSigmoid", "PReLU", "ReLU", "ReLU6", "RReLU", "SELU", "CELU", "GELU", "Sigmoid",
            "SiLU", "Softplus", "Softshrink", "Softsign", "Tanh", "Tanhshrink", "Threshold",
            "Softmin", "Softmax", "LogSoftmax", "Dropout", "AlphaDropout", "Linear"]

__all__ = []
for _name in _WRAPPED:
    _cls = type("Minkowski" + _name, (_FeatureModule,),
                {"torch_module": getattr(torch.nn, _name),
                 "attribute": "linear" if _name == "Linear" else "module",
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
        return _same_coordinates(input, torch.sin(input.F.mm(self.kernel) + self.bias) * self.coef)


__all__.append("MinkowskiSinusoidal")


class MinkowskiAdaptiveLogSoftmaxWithLoss(torch.nn.Module):
    """torch.nn.AdaptiveLogSoftmaxWithLoss on the features (arguments as
    torch's). ``forward(input, target)`` takes one class per row (an (N,)
    integer tensor, in the input's row order) and gives torch's (output, loss)
    pair, with output (each row's target log-probability) as N x 1 features
    on the input's coordinates; ``log_prob`` gives N x n_classes features,
    ``predict`` an (N,) class tensor. (The reference wraps the module like the
    nonlinearities, whose one-argument forward cannot pass the target.)"""

    def __init__(self, *args, **kwargs):
        super().__init__()
        self.module = torch.nn.AdaptiveLogSoftmaxWithLoss(*args, **kwargs)

    def forward(self, input, target):
        target = torch.as_tensor(target)
        if target.shape != (len(input.F),):
            raise ValueError(f"{type(self).__name__}: expected a target of shape "
                             f"({len(input.F)},), one class per row, got {tuple(target.shape)}")
        out = self.module(input.F, target)
        return type(out)(_same_coordinates(input, out.output[:, None]), out.loss)

    def log_prob(self, input):
        return _same_coordinates(input, self.module.log_prob(input.F))

    def predict(self, input):
        return self.module.predict(input.F)

    def __repr__(self):
        m = self.module
        return (f"{type(self).__name__}(in_features={m.in_features}, "
                f"n_classes={m.n_classes}, cutoffs={m.cutoffs[:-1]})")



__all__.append("MinkowskiAdaptiveLogSoftmaxWithLoss")
