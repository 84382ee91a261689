"""Layers given the wrong input: a TypeError or ValueError naming the layer
and what it expected, never an AttributeError from deep inside."""
import numpy as np
import pytest
import torch

import fieldkit.minkowski as ME


@pytest.fixture
def x():
    c = torch.tensor([[0, 0, 0], [0, 1, 0], [1, 2, 2]], dtype=torch.int32)
    return ME.SparseTensor(torch.randn(3, 2), c)


def test_a_field_or_a_tensor_where_a_sparse_tensor_is_expected(x):
    tf = ME.TensorField(torch.randn(3, 2), x.C.float())
    with pytest.raises(TypeError, match="MinkowskiMaxPooling: expected a SparseTensor, got "
                                        "TensorField"):
        ME.MinkowskiMaxPooling(2, 2, dimension=2)(tf)
    with pytest.raises(TypeError, match="MinkowskiPoolingTranspose: expected a SparseTensor"):
        ME.MinkowskiPoolingTranspose(2, 2, dimension=2)(x.F)
    with pytest.raises(TypeError, match="expected a SparseTensor or a TensorField, got Tensor"):
        ME.MinkowskiGlobalAvgPooling()(x.F)
    with pytest.raises(TypeError, match="MinkowskiBroadcastAddition: expected a SparseTensor"):
        ME.MinkowskiBroadcastAddition()(tf, ME.MinkowskiGlobalAvgPooling()(tf))
    with pytest.raises(TypeError, match=r"\(the global tensor\): expected a SparseTensor"):
        ME.MinkowskiBroadcastMultiplication()(x, x.F)
    with pytest.raises(TypeError, match="MinkowskiChannelwiseConvolution: expected a Sparse"):
        ME.MinkowskiChannelwiseConvolution(2, kernel_size=3, dimension=2)(tf)
    with pytest.raises(TypeError, match="MinkowskiConvolution: expected a SparseTensor"):
        ME.MinkowskiConvolution(2, 2, kernel_size=3, dimension=2)(x.F)


@pytest.mark.parametrize("layer", [
    lambda: ME.MinkowskiMaxPooling(3, 2, dimension=3),
    lambda: ME.MinkowskiAvgPooling(3, 1, dimension=3),
    lambda: ME.MinkowskiConvolution(2, 2, kernel_size=3, dimension=3),
    lambda: ME.MinkowskiConvolution(2, 2, kernel_size=1, dimension=3),  # the 1x1 matmul
    lambda: ME.MinkowskiConvolutionTranspose(2, 2, kernel_size=3, dimension=3),
    lambda: ME.MinkowskiChannelwiseConvolution(2, kernel_size=3, dimension=3),
])
def test_a_layer_of_another_dimension_says_so(x, layer):
    with pytest.raises(ValueError, match="expected a 3-D input \\(the layer's dimension\\), got "
                                         "a 2-D one"):
        layer()(x)


@pytest.mark.parametrize("kw,name", [({"stride": 0}, "stride"), ({"dilation": [1, 0]}, "dilation"),
                                     ({"stride": [1, 2, 2]}, "stride")])
def test_strides_and_dilations_are_positive_and_one_per_axis(kw, name):
    with pytest.raises(ValueError, match=f"expected a {name} of 1 or 2 positive ints"):
        ME.MinkowskiConvolutionTranspose(2, 2, kernel_size=3, dimension=2, **kw)


def test_channel_counts_are_named(x):
    with pytest.raises(ValueError, match="MinkowskiConvolution: expected 4 input channels, got 2"):
        ME.MinkowskiConvolution(4, 2, kernel_size=1, dimension=2)(x)
    other = ME.SparseTensor(torch.randn(1, 3), torch.tensor([[0, 5, 5]], dtype=torch.int32),
                            coordinate_manager=x.coordinate_manager)
    with pytest.raises(ValueError, match="MinkowskiUnion: expected inputs of 2 torch.float32 "
                                         "channels, got 3 torch.float32"):
        ME.MinkowskiUnion()(x, other)


def test_sparse_quantize_never_hands_back_the_callers_features():
    # Every point in its own voxel: the features come back as they were, but
    # in a buffer of their own (an edit of the result left the input alone).
    coords = np.array([[0, 0], [1, 1], [2, 2]], dtype=np.int32)
    feats = np.arange(6, dtype=np.float32).reshape(3, 2)
    _, qf = ME.sparse_quantize(coords, feats)
    assert not np.shares_memory(qf, feats)
    qf *= 0
    assert feats.tolist() == [[0, 1], [2, 3], [4, 5]]


def test_a_pointwise_half_convolution_and_zero_channels_run_on_the_cpu(x):
    half = ME.SparseTensor(x.F.half(), coordinate_map_key=x.coordinate_map_key,
                           coordinate_manager=x.coordinate_manager)
    conv = ME.MinkowskiConvolution(2, 3, kernel_size=1, dimension=2).half()
    y = conv(half)
    assert y.F.dtype == torch.float16
    torch.testing.assert_close(y.F.float(), x.F @ conv.kernel.float(), rtol=2e-3, atol=2e-3)
    assert ME.MinkowskiConvolution(0, 2, kernel_size=3, dimension=2).kernel.shape == (9, 0, 2)
    assert ME.MinkowskiChannelwiseConvolution(0, kernel_size=3, dimension=2).kernel.shape == (9, 0)
