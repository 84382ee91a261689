"""A small sparse U-Net (conv, strided conv, pooling, transposed conv, global
pooling + broadcast, ReLU, linear) trains with torch.optim.SGD: its loss falls,
and state_dict round-trips."""
import torch
from conftest import random_coordinates

import fieldkit.minkowski as ME


class TinyUNet(torch.nn.Module):
    def __init__(self, cin=3, cout=2, D=2):
        super().__init__()
        self.enc = torch.nn.Sequential(
            ME.MinkowskiConvolution(cin, 8, kernel_size=3, dimension=D, bias=True),
            ME.MinkowskiReLU())
        self.down = ME.MinkowskiConvolution(8, 16, kernel_size=2, stride=2, dimension=D)
        self.pool = ME.MinkowskiMaxPooling(kernel_size=3, stride=1, dimension=D)
        self.glob = ME.MinkowskiGlobalAvgPooling()
        self.add = ME.MinkowskiBroadcastAddition()
        self.up = ME.MinkowskiConvolutionTranspose(16, 8, kernel_size=2, stride=2, dimension=D)
        self.relu = ME.MinkowskiReLU()
        self.head = ME.MinkowskiLinear(16, cout)

    def forward(self, x):
        e = self.enc(x)
        d = self.pool(self.down(e))
        d = self.add(d, self.glob(d))
        u = self.relu(self.up(d))
        return self.head(ME.cat(u, e))


def test_tiny_unet_trains_with_sgd():
    torch.manual_seed(0)
    coords = random_coordinates(120, 2, 10, seed=3)
    feats = torch.randn(len(coords), 3)
    labels = (coords[:, 1] > 4).long()  # learnable from position-dependent features
    feats[:, 0] = coords[:, 1].float() / 10
    net = TinyUNet()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    losses = []
    for _ in range(30):
        x = ME.SparseTensor(feats, coords)
        out = net(x)
        loss = torch.nn.functional.cross_entropy(out.F, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses

    clone = TinyUNet()
    clone.load_state_dict(net.state_dict())
    x = ME.SparseTensor(feats, coords)
    assert torch.equal(clone(x).F, net(x).F)
    assert "down.kernel" in net.state_dict() and net.state_dict()["down.kernel"].shape == (4, 8, 16)


def test_inference_skips_the_graph_and_gives_the_same_result():
    torch.manual_seed(1)
    coords = random_coordinates(60, 2, 8, seed=4)
    x = ME.SparseTensor(torch.randn(len(coords), 3), coords)
    net = TinyUNet()
    with_graph = net(x).F
    with torch.no_grad():
        without = net(x).F
    assert with_graph.grad_fn is not None and without.grad_fn is None
    assert torch.equal(with_graph, without)


def test_residual_blocks_keep_the_map_and_backpropagate():
    from fieldkit.minkowski.modules.resnet_block import BasicBlock, Bottleneck

    coords = random_coordinates(60, 3, 6, seed=5)
    x = ME.SparseTensor(torch.randn(len(coords), 8), coords)
    for block in (BasicBlock(8, 8, dimension=3), Bottleneck(8, 2, dimension=3)):
        y = block(x)
        assert y.coordinate_map_key == x.coordinate_map_key and y.F.shape == (len(x), 8)
        y.F.sum().backward()
        assert all(p.grad is not None for p in block.parameters())
