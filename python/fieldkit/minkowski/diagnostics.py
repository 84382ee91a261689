"""Reports about the running setup and a model (the reference's
``ME.print_diagnostics``, ``ME.get_gpu_memory_info``, ``ME.utils.summary`` and
``ME.utils.gradcheck``)."""
import inspect
import os
import platform
import sys

import torch

from .. import __version__, _core


def print_diagnostics():
    """Prints what a bug report needs: platform, Python, torch, fieldkit and
    whether each has CUDA, and the OpenMP thread setting."""
    lines = [
        ("platform", platform.platform()),
        ("python", sys.version.split()[0]),
        ("torch", f"{torch.__version__} (CUDA available: {torch.cuda.is_available()})"),
        ("fieldkit", f"{__version__} (built with CUDA: {bool(_core.built_with_cuda())})"),
        ("OMP_NUM_THREADS", os.environ.get("OMP_NUM_THREADS", "(unset)")),
    ]
    for name, value in lines:
        print(f"{name:>16}: {value}")


def get_gpu_memory_info():
    """(total, free) bytes of torch's current CUDA device, in the reference's
    order. Read through torch: a device's memory is one pool, whichever
    runtime asks."""
    if not torch.cuda.is_available():
        raise RuntimeError("get_gpu_memory_info: expected a CUDA device visible to torch, got "
                           "none")
    free, total = torch.cuda.mem_get_info()
    return total, free


def summary(model, sparse_input):
    """Prints one row per leaf module that ran on sparse_input (its output's
    rows x channels and its parameter count) through forward hooks; returns
    (total parameters, trainable parameters) of the model."""
    rows, hooks = [], []

    def record(module, _, output):
        shape = tuple(output.F.shape) if hasattr(output, "F") else tuple(
            getattr(output, "shape", ()))
        count = sum(p.numel() for p in module.parameters(recurse=False))
        rows.append((type(module).__name__, shape, count))

    for module in model.modules():
        if not list(module.children()):
            hooks.append(module.register_forward_hook(record))
    try:
        with torch.no_grad():
            model(sparse_input)
    finally:
        for h in hooks:
            h.remove()
    total = sum(p.numel() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"{'layer':<40}{'output':>20}{'params':>12}")
    for i, (name, shape, count) in enumerate(rows):
        print(f"{f'{name}-{i + 1}':<40}{str(list(shape)):>20}{count:>12,}")
    print(f"total params: {total:,}  trainable: {trainable:,}")
    return total, trainable


def gradcheck(func, inputs, **kwargs):
    """torch.autograd.gradcheck, dropping the keyword arguments this torch no
    longer takes (the reference forwards torch 1.x ones such as
    check_sparse_nnz, which torch 2 refuses)."""
    accepted = inspect.signature(torch.autograd.gradcheck).parameters
    return torch.autograd.gradcheck(func, inputs,
                                    **{k: v for k, v in kwargs.items() if k in accepted})
