"""The base SparseTensor and TensorField share: the features' properties,
per-batch-item access and dtype casts (the reference's Tensor)."""
import torch

from .._core import Error


def batch_ids(coordinates, where):
    """Column 0 of `coordinates` as int64 batch ids: a field's floats rounded
    half to even, as quantizing rounds them (a point at 1 - 1e-7 is in batch
    1); NaN, an infinity or a value outside int32 refused by name (cast to
    int32 they wrapped: batch 2^32 pooled with batch 0)."""
    b = coordinates[:, 0]
    if b.is_floating_point():
        bad = ~torch.isfinite(b)
        if bool(bad.any()):
            raise Error(f"{where}: expected finite batch indices, got "
                        f"{b[bad][0].item()}")
        b = torch.round(b.double())  # in f64: f32 took 2^31 - 1 for 2^31
    if len(b) and (bool((b < -2 ** 31).any()) or bool((b > 2 ** 31 - 1).any())):
        far = b[(b < -2 ** 31) | (b > 2 ** 31 - 1)][0].item()
        raise Error(f"{where}: expected batch indices within int32, got {far}")
    return b.to(torch.int64)


class _Tensor:
    """What SparseTensor and TensorField share (the reference's Tensor base):
    the features' properties, per-batch-item access, dtype casts. A subclass
    has _F, C and _with(features) (the same coordinates, other features)."""

    @property
    def F(self):
        return self._F

    features = F

    @property
    def coordinates(self):
        return self.C

    @property
    def shape(self):
        return self._F.shape

    @property
    def dtype(self):
        return self._F.dtype

    @property
    def device(self):
        return self._F.device

    def get_device(self):
        return self._F.get_device()

    @property
    def requires_grad(self):
        return self._F.requires_grad

    def requires_grad_(self, flag=True):
        self._F.requires_grad_(flag)
        return self

    def __len__(self):
        return self._F.shape[0]

    def size(self):
        return self._F.size()

    def detach(self):
        """Detaches the features in place and returns this tensor, as the
        reference does."""
        self._F = self._F.detach()
        return self

    # The reference converts in place and returns self: ported code calls
    # x.double() without keeping the result. (It has no half(); neither do we.)
    def float(self):
        """Converts the features to float32 in place; returns this tensor."""
        self._F = self._F.float()
        return self

    def double(self):
        """Converts the features to float64 in place; returns this tensor."""
        self._F = self._F.double()
        return self

    def __pow__(self, power):
        """The features to `power`, on these coordinates. The reference names
        it __power__ (a name ``**`` never calls); both work here."""
        return self._with(self._F ** power)

    __power__ = __pow__

    # -- per batch item --------------------------------------------------------
    # A SparseTensor's item b is batch index b (its own _rows_of). A field's
    # item i is its i-th present batch index, ascending, as the reference's
    # field reads its origin field map's i-th row list: with indices 0 .. B-1
    # that is batch i; with gaps ({0, 5}) item 1 is batch 5, and features_at(i)
    # is decomposed_features[i] for every i.
    def _rows_of(self, i):
        perms = self.decomposition_permutations
        if not -len(perms) <= i < len(perms):
            raise IndexError(f"batch item {i} of {len(perms)} (the present batch indices, "
                             f"ascending)")
        return perms[i]

    def coordinates_at(self, batch_index):
        return self.C[self._rows_of(batch_index), 1:]

    def features_at(self, batch_index):
        return self._F[self._rows_of(batch_index)]

    def coordinates_and_features_at(self, batch_index):
        rows = self._rows_of(batch_index)
        return self.C[rows, 1:], self._F[rows]

    @property
    def decomposition_permutations(self):
        """The rows of each batch item with points, in ascending batch index
        (row order within an item): the items of the reference's origin map,
        so entry i lines up with row i of a global pooling of this tensor."""
        c = self.C
        kept = getattr(self, "_decomposition", None)
        if kept is not None and kept[0] is c:  # one pass for a loop over the items
            return kept[1]
        b = batch_ids(c, "decomposition_permutations")
        perms = [(b == v).nonzero().flatten() for v in torch.unique(b).tolist()]
        self._decomposition = (c, perms)
        return perms

    @property
    def decomposed_coordinates(self):
        return [self.C[r, 1:] for r in self.decomposition_permutations]

    @property
    def decomposed_features(self):
        return [self._F[r] for r in self.decomposition_permutations]

    @property
    def decomposed_coordinates_and_features(self):
        perms = self.decomposition_permutations
        return [self.C[r, 1:] for r in perms], [self._F[r] for r in perms]
