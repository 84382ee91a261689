"""Squeeze-and-excitation blocks (Hu et al., "Squeeze-and-Excitation
Networks", CVPR 2018) with the reference's names and arguments: each
channel scaled by a gate computed from its per-batch-item global mean.
The reference's own blocks raise TypeError when built (they pass ``D=`` to
blocks and layers that take ``dimension=`` or none); these build and run
what its code describes."""
import torch

from ..broadcast import MinkowskiBroadcastMultiplication
from ..nonlinearity import MinkowskiLinear, MinkowskiReLU, MinkowskiSigmoid
from ..pooling import MinkowskiGlobalPooling
from .resnet_block import BasicBlock, Bottleneck


class SELayer(torch.nn.Module):
    """x * sigmoid(W2 relu(W1 mean_b(x))): the gate of each batch item
    (channel -> channel // reduction -> channel) broadcast onto its points.
    D is the reference's argument; the layers need no dimension."""

    def __init__(self, channel, reduction=16, D=-1):
        super().__init__()
        self.fc = torch.nn.Sequential(
            MinkowskiLinear(channel, channel // reduction), MinkowskiReLU(inplace=True),
            MinkowskiLinear(channel // reduction, channel), MinkowskiSigmoid())
        self.pooling = MinkowskiGlobalPooling()
        self.broadcast_mul = MinkowskiBroadcastMultiplication()

    def forward(self, x):
        return self.broadcast_mul(x, self.fc(self.pooling(x)))


class SEBasicBlock(BasicBlock):
    """BasicBlock with an SELayer on the residual branch before the add."""

    def __init__(self, inplanes, planes, stride=1, dilation=1, downsample=None, reduction=16,
                 D=-1):
        super().__init__(inplanes, planes, stride=stride, dilation=dilation,
                         downsample=downsample, dimension=D)
        self.se = SELayer(planes, reduction=reduction, D=D)

    def forward(self, x):
        out = self.relu(self.norm1(self.conv1(x)))
        out = self.se(self.norm2(self.conv2(out)))
        residual = x if self.downsample is None else self.downsample(x)
        return self.relu(out + residual)


class SEBottleneck(Bottleneck):
    """Bottleneck with an SELayer on the residual branch before the add (the
    reference's argument order: D before reduction, D=3 by default)."""

    def __init__(self, inplanes, planes, stride=1, dilation=1, downsample=None, D=3,
                 reduction=16):
        super().__init__(inplanes, planes, stride=stride, dilation=dilation,
                         downsample=downsample, dimension=D)
        self.se = SELayer(planes * self.expansion, reduction=reduction, D=D)

    def forward(self, x):
        out = self.relu(self.norm1(self.conv1(x)))
        out = self.relu(self.norm2(self.conv2(out)))
        out = self.se(self.norm3(self.conv3(out)))
        residual = x if self.downsample is None else self.downsample(x)
        return self.relu(out + residual)
