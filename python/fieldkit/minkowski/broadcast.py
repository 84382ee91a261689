"""Broadcasting a per-batch-item global feature (e.g. a global pooling's
output) onto every point of a tensor of the same manager."""
import torch

from .._core import minkowski as _mk
from .functional import BroadcastFunction, BroadcastMode, autocast, run
from .sparse_tensor import SparseTensor, layer_input


class _Broadcast(torch.nn.Module):
    mode = BroadcastMode.ADD

    def forward(self, input, input_glob):
        layer_input(input, type(self).__name__)
        layer_input(input_glob, type(self).__name__ + " (the global tensor)")
        mgr = input.coordinate_manager
        if input_glob.coordinate_manager is not mgr:
            raise ValueError("broadcast: expected a global tensor of the input's coordinate "
                             "manager, got one of another manager")
        groups = _mk.broadcast_groups(mgr, input.coordinate_map_key, input.F.detach(),
                                      input_glob.coordinate_map_key, input_glob.F.detach())
        f, g = autocast(input.F, input_glob.F)
        out = run(BroadcastFunction, f, g, groups, self.mode)
        return SparseTensor._on_map(out, input.coordinate_map_key, mgr)


class MinkowskiBroadcastAddition(_Broadcast):
    mode = BroadcastMode.ADD


class MinkowskiBroadcastMultiplication(_Broadcast):
    mode = BroadcastMode.MULTIPLY


class MinkowskiBroadcastConcatenation(_Broadcast):
    mode = BroadcastMode.CONCATENATE


class MinkowskiBroadcast(torch.nn.Module):
    """forward(input, input_glob): each row of the input gets its batch item's
    global feature (a copy; input's features are not read), on the input's
    map: the C++ broadcast-add of the global features onto zeros, so the
    global features' gradient is the sum over their item's rows."""

    def forward(self, input, input_glob):
        layer_input(input, type(self).__name__)
        layer_input(input_glob, type(self).__name__ + " (the global tensor)")
        mgr = input.coordinate_manager
        if input_glob.coordinate_manager is not mgr:
            raise ValueError("broadcast: expected a global tensor of the input's coordinate "
                             "manager, got one of another manager")
        groups = _mk.broadcast_groups(mgr, input.coordinate_map_key, input.F.detach(),
                                      input_glob.coordinate_map_key, input_glob.F.detach())
        (g,) = autocast(input_glob.F)
        zeros = g.new_zeros(len(input), g.shape[1])
        out = run(BroadcastFunction, zeros, g, groups, BroadcastMode.ADD)
        return SparseTensor._on_map(out, input.coordinate_map_key, mgr)
