"""A torch tensor's values as a numpy array on the host."""
import numpy as np


def host_array(t):
    """t (a torch tensor: one that requires grad, on a device, a view torch
    only marks negated or conjugated, as z.conj().imag is, or of a dtype
    numpy lacks) as a numpy array of its values; .numpy() refuses them."""
    import torch  # t is a tensor: torch is there

    t = t.detach()
    if t.is_neg():
        t = t.resolve_neg()
    if t.is_conj():
        t = t.resolve_conj()
    t = t.cpu()
    # numpy has no bfloat16 or complex32; float32 and complex64 hold their
    # values exactly.
    wider = {torch.bfloat16: torch.float32, torch.complex32: torch.complex64}.get(t.dtype)
    return (t if wider is None else t.to(wider)).numpy()


def host_values(v):
    """v as a numpy array of its own shape (a 0-d one stays 0-d): a torch
    tensor by host_array, anything else as numpy reads it."""
    return np.asarray(host_array(v) if hasattr(v, "detach") else v)


def c_contiguous(a):
    """a in C order, of its own shape: np.ascontiguousarray makes a 0-d
    array (1,), and the engine's shape checks then name [1] for ()."""
    return np.require(a, requirements="C")
