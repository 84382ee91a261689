"""The reference's older layer that convolves onto output coordinates the
caller lists (MinkowskiConvolution's ``forward(x, coordinates)`` does the same
for coordinates already in a map)."""
import torch

from .convolution import _ConvolutionBase
from .kernel import inserted_key


class MinkowskiConvolutionOnCoords(_ConvolutionBase):
    """out[u] = sum over the kernel offsets i with u + i * ts an input
    coordinate of W_i^T x[u + i * ts] (ts the input's tensor stride), for every
    u of the given coordinates. Its arguments are the reference's (``has_bias``
    for MinkowskiConvolution's ``bias``); ``stride`` only sets the kernel
    generator's, as there: the output stride is the coordinates'.

    ``forward(input, coords, tensor_stride=1)``: coords is an N x (1+D) integer
    tensor (batch first, each coordinate a multiple of tensor_stride, no
    repeats; inserted as a new map of the input's manager, whose rows are in
    coords' order), a SparseTensor of that manager or one of its map keys."""

    def __init__(self, in_channels, out_channels, kernel_size=-1, stride=1, dilation=1,
                 has_bias=False, kernel_generator=None, dimension=None):
        super().__init__(in_channels, out_channels, kernel_size, stride, dilation, has_bias,
                         kernel_generator, dimension=dimension)
        if self.use_mm:  # one kernel shape whatever the kernel: the maps always run
            self.use_mm = False
            self.kernel = torch.nn.Parameter(self.kernel.data[None].clone())

    def forward(self, input, coords, tensor_stride=1):
        if isinstance(coords, torch.Tensor):
            coords = inserted_key(input, coords, tensor_stride, type(self).__name__)
        return super().forward(input, coords)

