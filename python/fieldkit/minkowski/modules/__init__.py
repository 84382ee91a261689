"""``ME.modules``: residual and squeeze-and-excitation blocks built from the layers."""
from .resnet_block import BasicBlock, Bottleneck
from .senet_block import SEBasicBlock, SEBottleneck, SELayer

__all__ = ["BasicBlock", "Bottleneck", "SEBasicBlock", "SEBottleneck", "SELayer"]
