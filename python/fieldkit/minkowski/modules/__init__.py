"""``ME.modules``: residual blocks built from the layers."""
from .resnet_block import BasicBlock, Bottleneck

__all__ = ["BasicBlock", "Bottleneck"]
