"""MinkowskiSyncBatchNorm: batch normalization whose statistics cover the rows
of every process of a torch.distributed group (ME's wrapper of
nn.SyncBatchNorm, which torch implements for CUDA tensors only; this one is
plain torch ops plus all-reduces, so it runs on the CPU over gloo).

Without an initialized process group, with one process, or in eval mode it is
MinkowskiBatchNorm (torch's BatchNorm1d over the features). Its parameters and
buffers are BatchNorm1d's under ``bn.``, as in the reference.
"""
import torch
import torch.distributed as dist
from torch.autograd.function import once_differentiable

from .normalization import MinkowskiBatchNorm, _like


def _world(group):
    """The number of processes in `group` (1 without torch.distributed)."""
    if not (dist.is_available() and dist.is_initialized()):
        return 1
    return dist.get_world_size(group)


def _all_reduce(t, group):
    if _world(group) > 1:
        dist.all_reduce(t, group=group)
    return t


class SyncBatchNormFunction(torch.autograd.Function):
    """y = (x - mean) / sqrt(var + eps) * weight + bias with mean and (biased)
    var over the rows of every process: the count and per-channel sum are
    all-reduced, then the sum of squared deviations (two passes, so no
    E[x^2] - mean^2 cancellation). The backward all-reduces sum(g) and
    sum(g * xhat) for the input gradient:
      dx = weight * invstd * (g - sum(g) / n - xhat * sum(g * xhat) / n);
    the weight and bias gradients are this process's share (DDP adds them up
    across processes, as for every other parameter). Returns (y, mean, var,
    n) so the caller can update running statistics."""

    @staticmethod
    def forward(ctx, x, weight, bias, eps, group):
        # 16-bit features are normalized in f32 (sums over many rows).
        acc = torch.float64 if x.dtype == torch.float64 else torch.float32
        xa, c = x.to(acc), x.shape[1]
        head = _all_reduce(torch.cat([xa.sum(0), xa.new_tensor([x.shape[0]])]), group)
        n = head[c].clone()
        if n.item() == 0:
            raise ValueError("MinkowskiSyncBatchNorm: expected at least one row over the "
                             "processes, got 0")
        mean = head[:c] / n
        var = _all_reduce((xa - mean).square().sum(0), group) / n
        invstd = torch.rsqrt(var + eps)
        xhat = (xa - mean) * invstd
        y = xhat * weight.to(acc) + bias.to(acc)
        ctx.save_for_backward(xhat, invstd, weight)
        ctx.n, ctx.group, ctx.dtype = n, group, x.dtype
        ctx.mark_non_differentiable(mean, var, n)
        return y.to(x.dtype), mean, var, n

    @staticmethod
    @once_differentiable
    def backward(ctx, g, _mean, _var, _n):
        xhat, invstd, weight = ctx.saved_tensors
        c = xhat.shape[1]
        g = g.to(xhat.dtype)
        gb = g.sum(0)
        gw = (g * xhat).sum(0)
        sums = _all_reduce(torch.cat([gb, gw]), ctx.group) / ctx.n
        gx = weight.to(xhat.dtype) * invstd * (g - sums[:c] - xhat * sums[c:])
        return gx.to(ctx.dtype), gw.to(weight.dtype), gb.to(weight.dtype), None, None


class MinkowskiSyncBatchNorm(MinkowskiBatchNorm):
    """BatchNorm1d over the features with statistics synchronized across the
    processes of `process_group` (default: the world) while training."""

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True,
                 track_running_stats=True, process_group=None):
        super().__init__(num_features, eps=eps, momentum=momentum, affine=affine,
                         track_running_stats=track_running_stats)
        self.process_group = process_group

    def forward(self, input):
        bn = self.bn
        if not self.training or _world(self.process_group) == 1:
            return super().forward(input)
        x = input.F
        ones = x.new_ones(x.shape[1])
        weight = bn.weight if bn.affine else ones
        bias = bn.bias if bn.affine else torch.zeros_like(ones)
        y, mean, var, n = SyncBatchNormFunction.apply(x, weight, bias, bn.eps,
                                                      self.process_group)
        if bn.track_running_stats:
            self._update_running_stats(mean, var, n)
        return _like(input, y)

    @torch.no_grad()
    def _update_running_stats(self, mean, var, n):
        """As BatchNorm1d: an exponential (momentum) or, with momentum None,
        cumulative average of the mean and the unbiased variance."""
        bn = self.bn
        bn.num_batches_tracked.add_(1)
        m = 1.0 / bn.num_batches_tracked.item() if bn.momentum is None else bn.momentum
        unbiased = var * (n / (n - 1)) if n.item() > 1 else var
        bn.running_mean.mul_(1 - m).add_(mean.to(bn.running_mean.dtype), alpha=m)
        bn.running_var.mul_(1 - m).add_(unbiased.to(bn.running_var.dtype), alpha=m)

    @classmethod
    def convert_sync_batchnorm(cls, module, process_group=None):
        """`module` with every MinkowskiBatchNorm in its tree replaced by a
        MinkowskiSyncBatchNorm holding the same parameters, running statistics
        and training mode (the module itself when it is one)."""
        if isinstance(module, MinkowskiBatchNorm) and not isinstance(module, cls):
            out = cls(module.bn.num_features, process_group=process_group)
            out.bn = module.bn  # the same parameters and buffers (optimizers keep them)
            return out.train(module.training)
        for name, child in module.named_children():
            module.add_module(name, cls.convert_sync_batchnorm(child, process_group))
        return module
