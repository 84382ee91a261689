#pragma once
// The minkowski engine in one include: sparse tensors on integer coordinates,
// coordinate/kernel maps and sparse convolutions (CPU).
#include "minkowski/coords/coordinate_manager.h"
#include "minkowski/coords/coordinate_map.h"
#include "minkowski/coords/kernel_map.h"
#include "minkowski/coords/kernel_region.h"
#include "minkowski/ops/activation.h"
#include "minkowski/ops/conv.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/dense.h"
#include "minkowski/ops/elementwise.h"
#include "minkowski/ops/normalization.h"
#include "minkowski/ops/prune.h"
#include "minkowski/ops/quantize.h"
#include "minkowski/ops/spmm.h"
#include "minkowski/ops/union.h"
#include "minkowski/sparse_tensor.h"
#include "minkowski/tensor_field.h"
