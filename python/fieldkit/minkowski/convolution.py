"""Convolution layers with the reference's names, arguments and parameter
shapes: ``kernel`` (K, C_in, C_out) (channelwise (K, C); a 1x1 unit-stride
convolution, transposed or not, (C_in, C_out), the forward one run as one
matmul), ``bias`` (1, C_out)."""
import enum
import math

import torch

from .. import Error
from .functional import ConvolutionFunction, autocast, run
from .determinism import is_deterministic, sorted_coordinates
from .kernel import (expanded_output_key, inserted_key, make_generator, output_key,
                     transposed_output_key)
from .sparse_tensor import SparseTensor, layer_input


class ConvolutionMode(enum.IntEnum):
    """The reference's GPU GEMM choice (its values): a layer accepts and
    records it; the CPU engine picks its own path per call (ops/conv_path.h)."""

    DEFAULT = 0
    DIRECT_GEMM = 1
    COPY_GEMM = 2


def convolution_output_key(x, gen, transposed):
    """The map a convolution of x makes when no output coordinates are given:
    the finer map (transposed), every input + offset (expand_coordinates),
    else the strided map."""
    if transposed:
        return transposed_output_key(x, gen)
    if gen.expand_coordinates:
        return expanded_output_key(x, gen)
    return x.coordinate_manager.stride(x.coordinate_map_key, gen.kernel_stride)


class _ConvolutionBase(torch.nn.Module):
    transposed = False
    generative = False

    def __init__(self, in_channels, out_channels, kernel_size=-1, stride=1, dilation=1,
                 bias=False, kernel_generator=None, expand_coordinates=False,
                 convolution_mode=ConvolutionMode.DEFAULT, dimension=None):
        super().__init__()
        self.convolution_mode = ConvolutionMode(convolution_mode or 0)
        self.in_channels, self.out_channels, self.dimension = in_channels, out_channels, dimension
        self.kernel_generator = make_generator(kernel_generator, kernel_size, stride, dilation,
                                               dimension, expand_coordinates or self.generative)
        gen = self.kernel_generator
        k = gen.kernel_volume
        pointwise = k == 1 and gen.unit_stride
        # The reference keeps a 2-D kernel for every 1x1 unit-stride layer,
        # transposed ones too, so their checkpoints load; only the forward
        # layer skips the maps (a transposed one still finds its output map),
        # and only when its one offset is the origin (a CUSTOM region of one
        # other offset is a shift, not a 1x1).
        self.use_mm = pointwise and not self.transposed and gen.region.is_identity(gen.dimension)
        shape = (in_channels, out_channels) if pointwise else (k, in_channels, out_channels)
        self.kernel = torch.nn.Parameter(torch.empty(shape))
        self.bias = torch.nn.Parameter(torch.empty(1, out_channels)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        k = self.kernel_generator.kernel_volume
        fan = (self.out_channels if self.transposed else self.in_channels) * k
        bound = 1.0 / math.sqrt(max(fan, 1))  # 0 channels: nothing to initialise
        with torch.no_grad():
            self.kernel.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def _output_key(self, x, coordinates):
        if isinstance(coordinates, torch.Tensor):
            return inserted_key(x, coordinates, self._output_stride(x), type(self).__name__)
        given = output_key(x, coordinates)
        if given is not None:
            return given
        return convolution_output_key(x, self.kernel_generator, self.transposed)

    def _output_stride(self, x):
        """The tensor stride of listed output coordinates: the input's times
        the stride (divided by it, transposed)."""
        ts, s = list(x.tensor_stride), list(self.kernel_generator.kernel_stride)
        ts, s = (ts * x.D if len(ts) == 1 else ts), (s * x.D if len(s) == 1 else s)
        if not self.transposed:
            return [t * q for t, q in zip(ts, s)]
        if any(t % q for t, q in zip(ts, s)):
            raise ValueError(f"{type(self).__name__}: expected a stride dividing the input "
                             f"tensor stride, got stride {s} for tensor stride {ts}")
        return [t // q for t, q in zip(ts, s)]

    def forward(self, input, coordinates=None):
        layer_input(input, type(self).__name__, self.dimension)
        kernel, bias, mgr = self.kernel, self.bias, input._manager
        if self.use_mm and coordinates is None:
            if input._F.shape[1] != kernel.shape[-2]:
                raise ValueError(f"{type(self).__name__}: expected {kernel.shape[-2]} input "
                                 f"channels, got {input._F.shape[1]}")
            f, w = autocast(input._F, kernel)
            if not f.is_floating_point():  # named as the kernel-map path names it
                raise Error(f"{type(self).__name__}: expected f32, f64, f16 or bf16 features, "
                            f"got {f.dtype}")
            if w.dtype != f.dtype:  # as the kernel-map path refuses them (no silent casts)
                raise Error(f"{type(self).__name__}: expected weights of the features' dtype "
                            f"{f.dtype}, got {w.dtype}")
            if f.dtype == torch.float16 and f.device.type == "cpu":  # torch < 2 has no CPU
                out = f.float().mm(w.float()).half()  # half matmul: f32, rounded once
            else:
                out = f.mm(w)
            key = input._key
        else:
            if is_deterministic():
                input = sorted_coordinates(input)
            key = self._output_key(input, coordinates)
            kmap = mgr.region_kernel_map(input._key, key, self.kernel_generator.region,
                                         self.transposed)
            f, w = autocast(input._F, kernel if kernel.dim() == 3 else kernel[None])
            out = run(ConvolutionFunction, f, w, kmap, False)
        if bias is not None:
            out = out + bias.to(out.dtype)
        return SparseTensor._on_map(out, key, mgr)

    def extra_repr(self):
        g = self.kernel_generator
        return (f"{self.in_channels}, {self.out_channels}, kernel_size={g.kernel_size}, "
                f"stride={g.kernel_stride}, dilation={g.kernel_dilation}, D={self.dimension}")


class MinkowskiConvolution(_ConvolutionBase):
    """Sparse convolution: stride 1 keeps the input's coordinates (submanifold),
    stride s pools them to floor(c / (ts*s)) * (ts*s); ``forward(x, coordinates)``
    convolves onto a given map of the same manager. expand_coordinates=True
    outputs on every input + kernel offset on the output stride's grid (a new
    map each call)."""


class MinkowskiConvolutionTranspose(_ConvolutionBase):
    """Transposed convolution: back to tensor stride ts / s, onto the existing
    map of that stride (the encoder's) when there is one."""

    transposed = True


class MinkowskiGenerativeConvolutionTranspose(_ConvolutionBase):
    """Transposed convolution that always makes new coordinates: every input
    plus every kernel offset."""

    transposed = True
    generative = True

    def __init__(self, in_channels, out_channels, kernel_size=-1, stride=1, dilation=1,
                 bias=False, kernel_generator=None, convolution_mode=ConvolutionMode.DEFAULT,
                 dimension=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, dilation, bias,
                         kernel_generator, True, convolution_mode, dimension)


class MinkowskiChannelwiseConvolution(torch.nn.Module):
    """Depthwise sparse convolution: out[o, c] = sum F[i, c] * W[k, c]."""

    def __init__(self, in_channels, kernel_size=-1, stride=1, dilation=1, bias=False,
                 kernel_generator=None, dimension=-1):
        super().__init__()
        self.in_channels, self.dimension = in_channels, dimension
        self.kernel_generator = make_generator(kernel_generator, kernel_size, stride, dilation,
                                               dimension)
        k = self.kernel_generator.kernel_volume
        self.kernel = torch.nn.Parameter(torch.empty(k, in_channels))
        self.bias = torch.nn.Parameter(torch.empty(1, in_channels)) if bias else None
        bound = 1.0 / math.sqrt(max(in_channels * k, 1))
        with torch.no_grad():
            self.kernel.uniform_(-bound, bound)
            if self.bias is not None:
                self.bias.uniform_(-bound, bound)

    def forward(self, input, coordinates=None):
        layer_input(input, type(self).__name__, self.dimension)
        mgr, key = input.coordinate_manager, input.coordinate_map_key
        out_key = output_key(input, coordinates)
        if out_key is None:
            out_key = mgr.stride(key, self.kernel_generator.kernel_stride)
        kmap = mgr.region_kernel_map(key, out_key, self.kernel_generator.region, False)
        f, w = autocast(input.F, self.kernel)
        out = run(ConvolutionFunction, f, w, kmap, True)
        if self.bias is not None:
            out = out + self.bias.to(out.dtype)
        return SparseTensor._on_map(out, out_key, mgr)
