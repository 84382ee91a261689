"""``ME.MinkowskiFunctional`` (also importable as
``fieldkit.minkowski.MinkowskiFunctional``): torch.nn.functional applied to
a SparseTensor's or TensorField's features. The activations and the other
feature maps return the result on the same coordinates; the losses return
torch's scalar (a SparseTensor / TensorField target counts as its features)."""
import torch
import torch.nn.functional as _F

from .sparse_tensor import SparseTensor, TensorField

_ON_FEATURES = ["threshold", "relu", "hardtanh", "hardswish", "relu6", "elu", "selu", "celu",
                "leaky_relu", "prelu", "rrelu", "glu", "gelu", "logsigmoid", "hardshrink",
                "tanhshrink", "softsign", "softplus", "softmin", "softmax", "softshrink",
                "gumbel_softmax", "log_softmax", "tanh", "sigmoid", "hardsigmoid", "silu",
                "batch_norm", "normalize", "linear", "dropout", "alpha_dropout"]

_LOSSES = ["binary_cross_entropy", "binary_cross_entropy_with_logits", "poisson_nll_loss",
           "cross_entropy", "hinge_embedding_loss", "kl_div", "l1_loss", "mse_loss",
           "multilabel_margin_loss", "multilabel_soft_margin_loss", "multi_margin_loss",
           "nll_loss", "smooth_l1_loss", "soft_margin_loss"]


def _features(x):
    return x.F if isinstance(x, (SparseTensor, TensorField)) else x


def _on_features(name):
    # torch.nn.functional's tanh and sigmoid are deprecated aliases of torch's.
    fn = getattr(torch, name) if name in ("tanh", "sigmoid") else getattr(_F, name)

    def wrapped(input, *args, **kwargs):
        out = fn(input.F, *args, **kwargs)
        if isinstance(input, TensorField):
            return input._with(out)
        return SparseTensor._on_map(out, input.coordinate_map_key, input.coordinate_manager)

    wrapped.__name__ = wrapped.__qualname__ = name
    wrapped.__doc__ = f"torch.nn.functional.{name} of the features, on the same coordinates."
    return wrapped


def _loss(name):
    fn = getattr(_F, name)

    def wrapped(input, target, *args, **kwargs):
        return fn(input.F, _features(target), *args, **kwargs)

    wrapped.__name__ = wrapped.__qualname__ = name
    wrapped.__doc__ = f"torch.nn.functional.{name} of the features (a torch scalar)."
    return wrapped


__all__ = _ON_FEATURES + _LOSSES
globals().update({n: _on_features(n) for n in _ON_FEATURES})
globals().update({n: _loss(n) for n in _LOSSES})
