"""A torch tensor's values as a numpy array on the host."""


def host_array(t):
    """t (a torch tensor: one that requires grad, on a device, or a view
    torch only marks negated or conjugated, as z.conj().imag is) as a numpy
    array of its values; .numpy() refuses the marked views."""
    t = t.detach()
    if t.is_neg():
        t = t.resolve_neg()
    if t.is_conj():
        t = t.resolve_conj()
    return t.cpu().numpy()
