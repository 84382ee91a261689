"""He initialization for MinkowskiEngine-shaped kernels (``ME.utils.kaiming_normal_``)."""
import torch


def kaiming_normal_(tensor, a=0, mode="fan_in", nonlinearity="leaky_relu"):
    """He initialization in place, std = gain / sqrt(fan) with torch's gain
    for the nonlinearity and the fans the reference's ME.utils.kaiming_normal_
    uses: a (K, C_in, C_out) kernel has fan_in K * C_in and fan_out K * C_out;
    a 2-D tensor is a torch Linear weight (out, in), fan_in size(1) and
    fan_out size(0) (so a kernel_size=1 convolution's (C_in, C_out) kernel
    gets fan_in C_out there too). `mode` is 'fan_in' or 'fan_out' in any
    case."""
    fan = _fan(tensor, mode)
    std = torch.nn.init.calculate_gain(nonlinearity, a) / fan ** 0.5
    with torch.no_grad():
        return tensor.normal_(0, std)


def _fan(tensor, mode):
    """The fan `mode` names, as the reference computes it."""
    if tensor.dim() not in (2, 3):
        raise ValueError("kaiming_normal_: expected a (out, in) Linear weight or a (K, C_in, "
                         f"C_out) kernel, got shape {tuple(tensor.shape)}")
    # The reference lower-cases mode, so 'FAN_IN' from a ported script works.
    fans = ("fan_in", "fan_out")
    if not isinstance(mode, str) or mode.lower() not in fans:
        raise ValueError(f"kaiming_normal_: expected mode 'fan_in' or 'fan_out', got {mode!r}")
    if tensor.dim() == 2:
        fan_in, fan_out = tensor.shape[1], tensor.shape[0]
    else:
        k = tensor.shape[0]
        fan_in, fan_out = k * tensor.shape[1], k * tensor.shape[2]
    return fan_in if mode.lower() == "fan_in" else fan_out
