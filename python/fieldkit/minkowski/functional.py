"""The sparse ops as torch.autograd.Functions over fieldkit's C++ pure
forward/backward pairs. Each takes and returns feature tensors; the layers
(convolution.py, pooling.py, broadcast.py) resolve the coordinate maps.

Tensors cross as DLPack capsules made by torch's C entry point
(``torch.utils.dlpack.to_dlpack``: about 1 us cheaper per tensor than the
``__dlpack__`` protocol, and it takes tensors that require grad as they are),
strided and without copies, with their device (DLPack's device field); a
CUDA tensor also lends torch's current stream on its device to fk, so a
CUDA build runs the op on torch's stream. The convolution is differentiable any number of
times (its backward is a Function of its own); the other ops give first
derivatives only (their backward is not differentiable). Under
``torch.autocast`` the float inputs are cast to the autocast dtype first, as
the reference's ``maybe_autocast`` does.
"""
import functools
import warnings

import torch
from torch.autograd.function import once_differentiable

from .. import _core
from .._core import minkowski as _mk

PoolingMode = _mk.PoolingMode
BroadcastMode = _mk.BroadcastMode


def autocast(*tensors):
    """The tensors in the active autocast dtype for their device (unchanged
    outside autocast, and for non-float tensors)."""
    if not (_autocast_cpu() or _autocast_gpu()):
        return tensors
    dev = tensors[0].device.type
    if dev == "cpu" and _autocast_cpu():
        dtype = _autocast_cpu_dtype()
    elif dev == "cuda" and _autocast_gpu():
        dtype = _autocast_gpu_dtype()
    else:
        return tensors
    return tuple(t.to(dtype) if t.is_floating_point() else t for t in tensors)


_capsule = torch.utils.dlpack.to_dlpack
if hasattr(torch, "get_autocast_dtype"):  # torch >= 2.4 (the per-device names are deprecated)
    _autocast_cpu = functools.partial(torch.is_autocast_enabled, "cpu")
    _autocast_gpu = functools.partial(torch.is_autocast_enabled, "cuda")
    _autocast_cpu_dtype = functools.partial(torch.get_autocast_dtype, "cpu")
    _autocast_gpu_dtype = functools.partial(torch.get_autocast_dtype, "cuda")
else:
    _autocast_cpu, _autocast_gpu = torch.is_autocast_cpu_enabled, torch.is_autocast_enabled
    _autocast_cpu_dtype = torch.get_autocast_cpu_dtype
    _autocast_gpu_dtype = torch.get_autocast_gpu_dtype
_grad_enabled = torch.is_grad_enabled


def widened(t):
    """t in f32 when it is f16 or bf16: a sum over many rows in those loses
    digits (bf16 stops counting at 256) or overflows (f16 past 65504) where
    the mean fits; the C++ kernels accumulate in f32 too. Lazy negation and
    conjugation are applied (resolved)."""
    t = resolved(t)
    return t.float() if t.dtype in (torch.float16, torch.bfloat16) else t


def resolved(t):
    """t with torch's lazy negation and conjugation applied (a copy only where
    one is set; anything but a tensor as it is): DLPack exports the memory as
    it is, so z.conj().imag, a view marked negated, read as its negation."""
    if isinstance(t, torch.Tensor):
        if t.is_neg():
            t = t.resolve_neg()
        if t.is_conj():
            t = t.resolve_conj()
    return t


class _NoGraph:
    """The ctx of a forward that torch will not differentiate: keeps nothing."""

    def save_for_backward(self, *tensors):
        pass

    def mark_non_differentiable(self, *tensors):
        pass


def run(function, *args):
    """function.apply(*args), or, when no input needs a gradient (inference,
    torch.no_grad), its forward alone: torch's Function machinery costs about
    as much as a small op itself."""
    if _grad_enabled():
        for a in args:
            if isinstance(a, torch.Tensor) and a.requires_grad:
                return function.apply(*args)
    return function.forward(_NoGraph(), *args)


def _saved_inputs(ctx):
    """The C++ views of a forward's two inputs (ctx.inputs), released here as
    torch releases saved tensors after a backward; a second backward through
    a retained graph wraps the saved tensors again. Unpacking saved_tensors
    raises if an input was changed in place since the forward."""
    f, other = ctx.saved_tensors
    inputs, ctx.inputs = ctx.inputs, None
    return inputs if inputs is not None else _mk.saved_inputs(_plain(f), _plain(other))


def _plain(t):
    """A one-use DLPack capsule viewing t (keep t itself for the backward);
    for a CUDA tensor, torch's current stream on its device is lent to fk
    first (forwards and backwards alike)."""
    t = resolved(t)
    lend_streams(t)
    return _capsule(t)


def lend_streams(*tensors):
    """Lends torch's current stream on each CUDA tensor's device to fk, for a
    call that hands fk torch tensors as they are (not through _plain): the
    DLPack import orders nothing (nanobind calls __dlpack__() without a
    stream, so torch makes no wait), and fk's stream otherwise stays the one
    lent last, which may be another stream than the one that wrote them."""
    for t in tensors:
        if getattr(t, "is_cuda", False):
            _lend(t.device.index, torch.cuda.current_stream(t.device).cuda_stream)


_lend = _core.lend_cuda_stream


class ConvolutionFunction(torch.autograd.Function):
    """out = sum over the kernel map's pairs of F[in] @ W[k] (channelwise:
    F[in] * W[k]); the map decides submanifold, strided, transposed or
    generative. Differentiable any number of times: under create_graph the
    backward is ConvolutionBackwardFunction, itself differentiable."""

    @staticmethod
    def forward(ctx, features, weight, kernel_map, channelwise=False):
        if ctx.__class__ is _NoGraph:
            return _mk.conv_forward(_plain(features), _plain(weight), kernel_map, channelwise)
        # The C++ views of the inputs are kept for the backward (no second
        # wrapping); save_for_backward keeps torch's check for in-place changes.
        ctx.save_for_backward(features, weight)
        out, ctx.inputs = _mk.conv_forward_saving(_plain(features), _plain(weight), kernel_map,
                                                  channelwise)
        ctx.kernel_map, ctx.channelwise = kernel_map, channelwise
        return out

    @staticmethod
    def backward(ctx, grad_out):
        need = ctx.needs_input_grad
        if _grad_enabled():  # create_graph: a backward torch can differentiate
            f, w = ctx.saved_tensors
            ctx.inputs = None
            gf, gw = ConvolutionBackwardFunction.apply(grad_out, f, w, ctx.kernel_map,
                                                       ctx.channelwise, need[0], need[1])
            return gf, gw, None, None
        gf, gw = _mk.conv_backward_saved(_plain(grad_out), _saved_inputs(ctx), ctx.kernel_map,
                                         ctx.channelwise, need[0], need[1])
        return gf, gw, None, None


class ConvolutionBackwardFunction(torch.autograd.Function):
    """(grad_F, grad_W) of out = sum_k S_k F W_k (S_k the map's pairs of
    offset k) for the output gradient g:
        grad_F = sum_k S_k^T g W_k^T,   grad_W_k = (S_k F)^T g,
    linear in g and in each of F, W. So for upstream gradients a (of grad_F)
    and b (of grad_W) its own derivatives are convolutions again:
        d/dg = conv(a, W) + conv(F, b),
        d/dF = grad_F of (g, weight b),   d/dW = grad_W of (g, features a)
    (channelwise alike, with elementwise products). They go through
    ConvolutionFunction and this Function, so every order is differentiable."""

    @staticmethod
    def forward(ctx, grad_out, features, weight, kernel_map, channelwise, need_f, need_w):
        ctx.save_for_backward(grad_out, features, weight)
        ctx.kernel_map, ctx.channelwise = kernel_map, channelwise
        return _mk.conv_backward(_plain(grad_out), _plain(features), _plain(weight), kernel_map,
                                 channelwise, need_f, need_w)

    @staticmethod
    def backward(ctx, a, b):
        g, f, w = ctx.saved_tensors
        m, cw = ctx.kernel_map, ctx.channelwise
        need_g, need_f, need_w = ctx.needs_input_grad[:3]
        dg = df = dw = None
        if need_g:
            terms = [ConvolutionFunction.apply(a, w, m, cw) if a is not None else None,
                     ConvolutionFunction.apply(f, b, m, cw) if b is not None else None]
            terms = [t for t in terms if t is not None]
            dg = terms[0] + terms[1] if len(terms) == 2 else (terms[0] if terms else None)
        if need_f and b is not None:
            df = ConvolutionBackwardFunction.apply(g, f, b, m, cw, True, False)[0]
        if need_w and a is not None:
            dw = ConvolutionBackwardFunction.apply(g, a, w, m, cw, False, True)[1]
        return dg, df, dw, None, None, None, None


def _save_for_torchs_checks(ctx, features):
    """A pooling's backward reads its argmax (kept on ctx, a C++ object), not
    its input; the input is saved all the same, and unpacked in backward, so
    that torch's own checks hold as for max_pool2d: a second backward through
    a freed graph raises, and so does one after the input changed in place."""
    ctx.save_for_backward(features)


class LocalPoolingFunction(torch.autograd.Function):
    """Max / average / sum over each output's pairs in a kernel map (pooling,
    or its transpose when the map is a transposed one)."""

    @staticmethod
    def forward(ctx, features, kernel_map, mode):
        _save_for_torchs_checks(ctx, features)
        out, ctx.argmax = _mk.pool_forward(_plain(features), kernel_map, mode)
        ctx.kernel_map, ctx.mode = kernel_map, mode
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        _ = ctx.saved_tensors
        g = _mk.pool_backward(_plain(grad_out), ctx.kernel_map, ctx.mode, ctx.argmax)
        return g, None, None


class GlobalPoolingFunction(torch.autograd.Function):
    """One row per batch item: max / average / sum of the item's rows."""

    @staticmethod
    def forward(ctx, features, groups, mode):
        _save_for_torchs_checks(ctx, features)
        out, ctx.argmax = _mk.global_pool_forward(_plain(features), groups, mode)
        ctx.groups, ctx.mode = groups, mode
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        _ = ctx.saved_tensors
        g = _mk.global_pool_backward(_plain(grad_out), ctx.groups, ctx.mode, ctx.argmax)
        return g, None, None


class BroadcastFunction(torch.autograd.Function):
    """out[i] = F[i] (+, *, concatenated with) glob[group(i)]."""

    @staticmethod
    def forward(ctx, features, glob, groups, mode):
        ctx.save_for_backward(features, glob)  # (torch's in-place check)
        out, ctx.inputs = _mk.broadcast_forward(_plain(features), _plain(glob), groups, mode)
        ctx.groups, ctx.mode = groups, mode
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        need = ctx.needs_input_grad
        # An addition's d/dF is grad_out itself: handed back as torch's own
        # tensor, not as C++'s view of its memory, which torch would take for
        # a tensor of its own to accumulate another gradient into in place.
        alias = ctx.mode == BroadcastMode.ADD and need[0]
        gf, gg = _mk.broadcast_backward(_plain(grad_out), _saved_inputs(ctx), ctx.groups,
                                        ctx.mode, need[0] and not alias, need[1])
        return (grad_out if alias else gf), gg, None, None


class InstanceNormFunction(torch.autograd.Function):
    """(x - mean_s) / sqrt(var_s + eps) * weight + bias with the statistics of
    each segment s (a batch item) of the rows."""

    @staticmethod
    def forward(ctx, features, weight, bias, segments, eps):
        stats = _mk.normalize_statistics(_plain(features), segments, eps)
        ctx.save_for_backward(features, weight)
        ctx.segments, ctx.stats = segments, stats
        return _mk.normalize_forward(_plain(features), segments, stats, _plain(weight),
                                     _plain(bias))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        f, w = ctx.saved_tensors
        need = ctx.needs_input_grad
        gx, gw, gb = _mk.normalize_backward(_plain(grad_out), _plain(f), ctx.segments, ctx.stats,
                                            _plain(w),
                                            need[0], need[1], need[2])
        return gx, gw, gb, None, None


class SpmmFunction(torch.autograd.Function):
    """out = A @ dense with A the coordinate list `coo` holding `values`."""

    @staticmethod
    def forward(ctx, values, dense, coo):
        ctx.save_for_backward(values, dense)
        ctx.coo = coo
        return _mk.spmm_forward(coo, _plain(values), _plain(dense))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        return (*_spmm_grads(ctx, grad_out, ctx.needs_input_grad[0], ctx.needs_input_grad[1]),
                None)


def _spmm_grads(ctx, grad_out, need_values, need_dense):
    v, d = ctx.saved_tensors
    return _mk.spmm_backward(_plain(grad_out), ctx.coo, _plain(v), _plain(d), need_values,
                             need_dense)


def _coo(rows, cols, size):
    lend_streams(rows, cols)
    return _mk.coo_list(rows, cols, _matrix_size(size))


def _matrix_size(size):
    """size as [rows, cols], two whole numbers >= 0 (3.5 was truncated to 3,
    a one-entry size an IndexError)."""
    try:
        dims = [s.item() if hasattr(s, "item") else s for s in size]
    except TypeError:
        dims = None
    if dims is None or len(dims) != 2 or not all(
            isinstance(d, int) or (isinstance(d, float) and d.is_integer()) for d in dims) or \
            any(isinstance(d, bool) or d < 0 for d in dims):
        raise ValueError(f"spmm: expected size as two whole numbers >= 0 (rows, cols), got "
                         f"{size!r}")
    return [int(d) for d in dims]


class MinkowskiSPMMFunction(torch.autograd.Function):
    """The reference's ``apply(rows, cols, vals, size, mat)``: A @ mat for the
    (size[0] x size[1]) A[rows[p], cols[p]] += vals[p]; gradients for vals
    and mat (the reference gives mat's only)."""

    @staticmethod
    def forward(ctx, rows, cols, vals, size, mat):
        return SpmmFunction.forward(ctx, vals, mat, _coo(rows, cols, size))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        need = ctx.needs_input_grad
        gv, gm = _spmm_grads(ctx, grad_out, need[2], need[4])
        return None, None, gv, None, gm


def average_values(rows, size, dtype, device=None):
    """1 / (entries in its row) for every entry of the list (spmm_average's A),
    on `device` (default: the rows')."""
    rows = torch.as_tensor(rows).long().to(device)
    # At least f32: 1/1000 rounded to f16 made the mean of 1000 hundreds 100.06
    # (the spmm takes f32 values beside half features, its output half).
    counts = torch.bincount(rows, minlength=_matrix_size(size)[0]).to(
        torch.promote_types(dtype, torch.float32))
    return 1.0 / counts[rows]


class MinkowskiSPMMAverageFunction(torch.autograd.Function):
    """The reference's ``apply(rows, cols, size, mat)``: each output row the
    mean of mat's rows that its entries name; the gradient goes to mat."""

    @staticmethod
    def forward(ctx, rows, cols, size, mat):
        vals = average_values(rows, size, mat.dtype, mat.device)
        return SpmmFunction.forward(ctx, vals, mat, _coo(rows, cols, size))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        return None, None, None, _spmm_grads(ctx, grad_out, False, ctx.needs_input_grad[3])[1]


class SplatFunction(torch.autograd.Function):
    """out[c] = sum of w_c(q) F[q] over the points q that have c among their
    2^D corners (the splat map's list); the backward is the transposed list."""

    @staticmethod
    def forward(ctx, features, splat_map):
        ctx.save_for_backward(features)
        ctx.splat_map = splat_map
        return _mk.splat_forward(splat_map, _plain(features))

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        (f,) = ctx.saved_tensors
        return _mk.splat_backward(_plain(grad_out), ctx.splat_map, _plain(f)), None


def spmm(rows, cols, values, size, mat, is_sorted=False, cuda_spmm_alg=1):
    """A @ mat for the sparse (size[0] x size[1]) A[rows[p], cols[p]] += values[p]
    (duplicates add up); differentiable w.r.t. values and mat.

    is_sorted and cuda_spmm_alg are the reference's cuSPARSE options (skip its
    sort of an already row-sorted list; COO algorithm 1-4). They change
    nothing here: this engine groups the list by row itself (a stable sort,
    any input order, on CPU and CUDA alike) and calls no cuSPARSE, so they
    are accepted for ported calls and ignored, and is_sorted=True with an
    unsorted list still gives the right product."""
    return run(SpmmFunction, values, mat, _coo(rows, cols, size))


def spmm_average(rows, cols, size, mat):
    """(A @ mat, COO, vals) for A[rows[p], cols[p]] = 1 / (entries in row
    rows[p]): each output row the mean of the named rows of mat;
    differentiable w.r.t. mat. As the reference returns them, COO is the
    2 x nnz int64 (row, col) list sorted by row (stably) and vals its values
    in that order, so spmm(COO[0], COO[1], vals, size, mat) is the result."""
    vals = average_values(rows, size, mat.dtype, mat.device)
    result = run(SpmmFunction, vals, mat, _coo(rows, cols, size))
    rows = torch.as_tensor(rows).long().to(vals.device)
    order = torch.sort(rows, stable=True).indices
    coo = torch.stack([rows[order], torch.as_tensor(cols).long().to(vals.device)[order]])
    return result, coo, vals[order]


def _scatter(out, rows, values, reduce, include_self):
    """torch's scatter_reduce along rows (its beta warning under torch < 2 silenced)."""
    index = rows[:, None].expand(-1, values.shape[1])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="scatter_reduce")
        return out.scatter_reduce(0, index, values, reduce, include_self=include_self)


def _direct_pairs(in_map, out_map, in_feat, out_nrows):
    """The pairs as int64 rows, checked against the features and out_nrows."""
    if not isinstance(in_feat, torch.Tensor) or in_feat.dim() != 2:
        raise ValueError("MinkowskiDirectMaxPoolingFunction: expected 2-D in_feat (N x C), got "
                         f"{getattr(in_feat, 'shape', type(in_feat))}")
    in_map, out_map = torch.as_tensor(in_map), torch.as_tensor(out_map)
    for name, m in (("in_map", in_map), ("out_map", out_map)):
        if m.dim() != 1 or m.is_floating_point() or m.dtype == torch.bool:
            raise ValueError(f"MinkowskiDirectMaxPoolingFunction: expected {name} as a 1-D "
                             f"integer tensor, got {m.dtype} of shape {tuple(m.shape)}")
    if in_map.numel() != out_map.numel():
        raise ValueError("MinkowskiDirectMaxPoolingFunction: expected in_map and out_map of one "
                         f"length, got {in_map.numel()} and {out_map.numel()}")
    in_rows, out_rows = in_map.long().to(in_feat.device), out_map.long().to(in_feat.device)
    for name, rows, n in (("in_map", in_rows, in_feat.shape[0]), ("out_map", out_rows, out_nrows)):
        if rows.numel() and (int(rows.min()) < 0 or int(rows.max()) >= n):
            raise ValueError(f"MinkowskiDirectMaxPoolingFunction: expected {name} rows in "
                             f"[0, {n}), got [{int(rows.min())}, {int(rows.max())}]")
    return in_rows, out_rows


class MinkowskiDirectMaxPoolingFunction(torch.autograd.Function):
    """The reference's ``apply(in_map, out_map, in_feat, out_nrows,
    is_sorted=False)``: out[o, c] = max of in_feat[in_map[p], c] over the
    pairs p with out_map[p] = o (out_nrows x C; a row no pair names is 0).
    The gradient goes to in_feat alone, per channel to one input row: on a
    tie, that of the first such pair in the order given (so is_sorted, which
    tells the reference's GPU it need not sort, changes nothing here).
    Under torch.autocast in_feat is cast first, as the reference's
    maybe_autocast does; the cast is on the tape, so an f32 leaf gets an f32
    gradient."""

    @classmethod
    def apply(cls, in_map, out_map, in_feat, out_nrows, is_sorted=False):
        (in_feat,) = autocast(in_feat)
        return super().apply(in_map, out_map, in_feat, out_nrows, is_sorted)

    @staticmethod
    def forward(ctx, in_map, out_map, in_feat, out_nrows, is_sorted=False):
        out_nrows = int(out_nrows)
        in_rows, out_rows = _direct_pairs(in_map, out_map, in_feat, out_nrows)
        c, p = in_feat.shape[1], in_rows.numel()
        values = in_feat.detach()[in_rows]
        out = _scatter(in_feat.new_zeros(out_nrows, c), out_rows, values, "amax", False)
        # The arg-max: the first pair (in the order given) that reaches its row's
        # max; a NaN max is reached by the first NaN (NaN != NaN lost its
        # gradient, which the C++ pooling and torch.max send to that row).
        pair = torch.arange(p, device=in_feat.device)[:, None].expand(-1, c)
        best = out[out_rows]
        hit = (values == best) | (torch.isnan(values) & torch.isnan(best))
        candidate = torch.where(hit, pair, torch.full_like(pair, p))
        first = _scatter(torch.full((out_nrows, c), p, dtype=torch.long, device=in_feat.device),
                         out_rows, candidate, "amin", True)
        found = first < p
        ctx.argmax = torch.where(found, in_rows[first.clamp(max=max(p - 1, 0))] if p else first,
                                 torch.full_like(first, -1))
        ctx.in_nrows = in_feat.shape[0]
        return out

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_out):
        argmax = ctx.argmax
        found = argmax >= 0
        grad = grad_out.new_zeros(ctx.in_nrows, grad_out.shape[1])
        channel = torch.arange(grad_out.shape[1], device=grad_out.device).expand_as(argmax)
        grad.index_put_((argmax[found], channel[found]), grad_out[found], accumulate=True)
        return None, None, grad, None, None
