"""A few seconds of fieldkit from Python: a small sparse network (MinkowskiEngine's
API, `import fieldkit.minkowski as ME`) learns to label the points of random 2-D
scenes inside/outside a disc, trained with torch.optim.Adam; then a nefi toy1d
smoke solve from the same process.

    make demo          (or: PYTHONPATH=python FIELDKIT_CORE_DIR=build/release/python/fieldkit \
                            .venv/bin/python python/examples/sparse_segmentation.py)
"""
import os

import torch

import fieldkit.minkowski as ME
import fieldkit.nefi as nefi


def scene(n=400, extent=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    pts = torch.rand(n, 2, generator=g) * extent
    inside = ((pts - extent / 2).norm(dim=1) < extent / 4).long()
    return pts, inside


class Net(torch.nn.Module):
    def __init__(self, D=2):
        super().__init__()
        self.net = torch.nn.Sequential(
            ME.MinkowskiConvolution(4, 16, kernel_size=3, dimension=D), ME.MinkowskiReLU(),
            ME.MinkowskiConvolution(16, 32, kernel_size=2, stride=2, dimension=D),
            ME.MinkowskiReLU(),
            ME.MinkowskiConvolution(32, 32, kernel_size=3, dimension=D), ME.MinkowskiReLU(),
            ME.MinkowskiConvolutionTranspose(32, 16, kernel_size=2, stride=2, dimension=D),
            ME.MinkowskiReLU(), ME.MinkowskiLinear(16, 2))

    def forward(self, x):
        return self.net(x)


def batch(seeds):
    coords, feats, labels = [], [], []
    for s in seeds:
        pts, lab = scene(seed=s)
        c, f, l = ME.sparse_quantize(pts, torch.ones(len(pts), 1), labels=lab,
                                     quantization_size=1.0)
        coords.append(c)
        feats.append(f)
        labels.append(l)
    c, f, l = ME.sparse_collate(coords, feats, labels)
    # the position (centred) and its squared radius as features next to the occupancy
    p = c[:, 1:].float() / 16 - 1
    f = torch.cat([f, p, (p * p).sum(1, keepdim=True)], 1)
    return ME.SparseTensor(f, c), l.long()


def main():
    torch.manual_seed(0)
    net = Net()
    opt = torch.optim.Adam(net.parameters(), lr=1e-2)
    for step in range(40):
        x, y = batch(range(step % 8 * 4, step % 8 * 4 + 4))
        out = net(x)
        loss = torch.nn.functional.cross_entropy(out.F, y, ignore_index=-100)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == 39:
            acc = (out.F.argmax(1) == y).float().mean().item()
            print(f"step {step:2d}  loss {loss.item():.3f}  accuracy {acc:.2f}")

    config = os.path.join(os.path.dirname(__file__), "..", "..", "configs", "toy1d_smoke.yaml")
    for method, r in nefi.invert(config, seed=0).items():
        print(f"nefi toy1d {method}: psnr {r['metrics']['psnr']:.2f} dB "
              f"({r['total_steps']} steps, reconstruction {r['reconstruction'].shape})")


if __name__ == "__main__":
    main()
