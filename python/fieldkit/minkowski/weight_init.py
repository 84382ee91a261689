"""He initialization for MinkowskiEngine-shaped kernels (``ME.utils.kaiming_normal_``)."""
import torch


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """He initialization of a MinkowskiEngine kernel in place: fan_in is
    C_in (times K for a (K, C_in, C_out) kernel), fan_out C_out (times K);
    std = gain / sqrt(fan) with torch's gain for the nonlinearity."""
    if tensor.dim() not in (2, 3):
        raise ValueError("kaiming_normal_: expected a (C_in, C_out) or (K, C_in, C_out) kernel, "
                         f"got shape {tuple(tensor.shape)}")
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"kaiming_normal_: expected mode 'fan_in' or 'fan_out', got {mode!r}")
    k = tensor.shape[0] if tensor.dim() == 3 else 1
    fan = k * tensor.shape[-2 if mode == "fan_in" else -1]
    std = torch.nn.init.calculate_gain(nonlinearity, a) / fan ** 0.5
    with torch.no_grad():
        return tensor.normal_(0, std)
