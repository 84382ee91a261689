// fieldkit._core.minkowski: the coordinate machinery (managers, maps, kernel
// maps) and the pure forward/backward pairs of every sparse op. The Python
// side (fieldkit.minkowski) wraps each pair in a torch.autograd.Function, so
// torch's tape, not fk's, records the graph: features and weights cross here
// detached, as zero-copy DLPack views.
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>
#include <algorithm>
#include <string>
#include "fk/error.h"
#include "fk/factory.h"
#include "minkowski/coords/coordinate_manager.h"
#include "minkowski/ops/broadcast.h"
#include "minkowski/ops/conv.h"
#include "minkowski/ops/conv_kernel.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/ops/pooling.h"
#include "minkowski/ops/quantize.h"
#include "minkowski/sparse_tensor.h"
#include "tensor_bridge.h"

namespace fkpy {
namespace {

namespace mk = minkowski;
using Array = nb::ndarray<nb::ro>;

fk::Tensor in(const Array& a) {
  return from_dlpack(a);
}
fk::Tensor in_opt(const std::optional<Array>& a) {
  return a ? from_dlpack(*a) : fk::Tensor();
}

// fn() with the GIL released, so other Python threads run meanwhile: fn
// touches no Python object (its operands were converted before).
template <class Fn>
auto without_gil(Fn&& fn) {
  nb::gil_scoped_release nogil;
  return fn();
}

nb::object out_opt(const fk::Tensor& t) {
  return t.defined() ? to_torch(t) : nb::none();
}
nb::object index_out(const std::vector<int64_t>& v) {
  return to_torch(fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}));
}

// Offset k's pairs as a 2 x n int32 tensor: row 0 the input rows, row 1 the
// output rows (the reference's kernel_map entry); an identity map's are (p, p).
nb::object offset_pairs(const mk::KernelMap& m, int64_t k) {
  FK_CHECK(k >= 0 && k < m.volume, "minkowski::KernelMap::offset_pairs",
           "an offset in [0, " + std::to_string(m.volume) + ")", std::to_string(k));
  const int64_t begin = m.identity ? 0 : m.offset_begin[k];
  const int64_t n = m.identity ? m.in_size : m.count(k);
  std::vector<int32_t> rows(static_cast<size_t>(2 * n));
  for (int64_t p = 0; p < n; ++p) {
    rows[p] = m.identity ? static_cast<int32_t>(p) : m.in_rows[begin + p];
    rows[n + p] = m.identity ? static_cast<int32_t>(p) : m.out_rows[begin + p];
  }
  return to_torch(fk::from_vector(rows, fk::Dims{2, n}));
}

// A key is set once union_map (or a map) gave it a positive tensor stride;
// CoordinateMapKey(coordinate_size) makes one with stride 0 on every axis.
bool key_is_set(const mk::MapKey& k) {
  return std::all_of(k.tensor_stride.begin(), k.tensor_stride.end(),
                     [](int32_t s) { return s > 0; });
}

void bind_coordinates(nb::module_& m) {
  nb::class_<mk::MapKey>(m, "MapKey")
      .def(nb::init<std::vector<int32_t>, std::string>(), nb::arg("tensor_stride"),
           nb::arg("tag") = "")
      // The reference's CoordinateMapKey(coordinate_size): a key not yet set
      // (tensor stride 0 on every axis, which no map has), for union_map to fill.
      .def(
          "__init__",
          [](mk::MapKey* k, int coordinate_size) {
            FK_CHECK(coordinate_size >= 2, "CoordinateMapKey",
                     "a coordinate size of at least 2 (batch and one axis)",
                     std::to_string(coordinate_size));
            new (k)
                mk::MapKey{std::vector<int32_t>(static_cast<size_t>(coordinate_size - 1), 0), ""};
          },
          nb::arg("coordinate_size"))
      .def_rw("tensor_stride", &mk::MapKey::tensor_stride)
      .def_rw("tag", &mk::MapKey::tag)
      // The reference's CoordinateMapKey accessors.
      .def("get_tensor_stride", [](const mk::MapKey& k) { return k.tensor_stride; })
      .def("get_key", [](const mk::MapKey& k) { return nb::make_tuple(k.tensor_stride, k.tag); })
      .def("get_coordinate_size",
           [](const mk::MapKey& k) { return static_cast<int>(k.tensor_stride.size()) + 1; })
      .def("is_key_set", &key_is_set)
      // As the reference: two keys are unequal when either is unset.
      .def("__eq__", [](const mk::MapKey& a,
                        const mk::MapKey& b) { return key_is_set(a) && key_is_set(b) && a == b; })
      .def("__hash__", [](const mk::MapKey& k) { return nb::hash(nb::make_tuple(k.str())); })
      .def("__repr__", &mk::MapKey::str);

  nb::enum_<mk::RegionType>(m, "RegionType")
      .value("HYPER_CUBE", mk::RegionType::HyperCube)
      .value("HYPER_CROSS", mk::RegionType::HyperCross)
      .value("CUSTOM", mk::RegionType::Custom);
  nb::class_<mk::KernelRegion>(m, "KernelRegion")
      .def_static("cube", &mk::KernelRegion::cube, nb::arg("size"),
                  nb::arg("dilation") = std::vector<int32_t>{1})
      .def_static("cross", &mk::KernelRegion::cross, nb::arg("size"),
                  nb::arg("dilation") = std::vector<int32_t>{1})
      .def_static("custom", &mk::KernelRegion::custom, nb::arg("offsets"), nb::arg("dimension"),
                  nb::arg("dilation") = std::vector<int32_t>{1})
      .def_ro("type", &mk::KernelRegion::type)
      .def("volume", &mk::KernelRegion::volume, nb::arg("dimension"))
      .def("offsets", &mk::KernelRegion::offsets, nb::arg("tensor_stride"))
      .def("is_identity", &mk::KernelRegion::is_identity, nb::arg("dimension"))
      .def("str", &mk::KernelRegion::str, nb::arg("dimension"));
  m.def("pooling_region", &mk::pooling_region, nb::arg("kernel"), nb::arg("stride"),
        nb::arg("dimension"));

  nb::class_<mk::KernelMap>(m, "KernelMap")
      .def_ro("volume", &mk::KernelMap::volume)
      .def_ro("in_size", &mk::KernelMap::in_size)
      .def_ro("out_size", &mk::KernelMap::out_size)
      .def("pairs", &mk::KernelMap::pairs)
      .def("count", &mk::KernelMap::count, nb::arg("k"))
      .def("offset_pairs", &offset_pairs, nb::arg("k"));

  nb::class_<mk::RowGroups>(m, "RowGroups")
      .def_ro("groups", &mk::RowGroups::groups)
      .def_ro("items", &mk::RowGroups::items)
      .def("__len__", [](const mk::RowGroups& g) { return g.group.size(); });

  using Mgr = mk::CoordinateManager;
  nb::class_<Mgr>(m, "CoordinateManager")
      .def(nb::init<int>(), nb::arg("dimension"))
      .def_prop_ro("dimension", &Mgr::dimension)
      .def(
          "insert",
          [](Mgr& mgr, const Array& coords, const std::vector<int32_t>& stride,
             const std::string& tag) {
            const fk::Tensor c = in(coords);
            auto r = without_gil([&] { return mgr.insert(c, stride, tag); });
            return nb::make_tuple(r.key, index_out(r.unique_rows), index_out(r.inverse));
          },
          nb::arg("coordinates"), nb::arg("tensor_stride") = std::vector<int32_t>{1},
          nb::arg("tag") = "")
      .def("has", &Mgr::has, nb::arg("key"))
      .def("size", &Mgr::size, nb::arg("key"))
      .def(
          "coordinates",
          [](const Mgr& mgr, const mk::MapKey& k) { return to_torch(mgr.coordinates(k)); },
          nb::arg("key"))
      .def("stride", &Mgr::stride, nb::arg("key"), nb::arg("stride"),
           nb::call_guard<nb::gil_scoped_release>())
      .def("expand", &Mgr::expand, nb::arg("key"), nb::arg("region"), nb::arg("out_tensor_stride"),
           nb::call_guard<nb::gil_scoped_release>())
      // The engine's map for a KernelRegion (what the layers use); the Python
      // subclass's kernel_map is the reference's form over it.
      .def("region_kernel_map", &Mgr::kernel_map, nb::arg("in_key"), nb::arg("out_key"),
           nb::arg("region"), nb::arg("transpose") = false,
           nb::call_guard<nb::gil_scoped_release>())
      .def(
          "batch_groups",
          [](const Mgr& mgr, const mk::MapKey& k) {
            return std::make_shared<mk::RowGroups>(
                mk::batch_groups(*mgr.map(k), "minkowski::global_pooling"));
          },
          nb::arg("key"))
      .def(
          "origin_key",
          [](Mgr& mgr, const mk::MapKey& k, const std::vector<int32_t>& items) {
            return mk::origin_key(mgr, k, items);
          },
          nb::arg("key"), nb::arg("items"))
      .def("clear", &Mgr::clear)
      .def("bytes", &Mgr::bytes)
      .def("num_maps", &Mgr::num_maps)
      .def("num_kernel_maps", &Mgr::num_kernel_maps);

  m.def(
      "field_batch_groups",
      [](const Array& batch) {
        return std::make_shared<mk::RowGroups>(
            mk::batch_groups(in(batch).contiguous().to_vector<int32_t>(),
                             "minkowski::global_pooling (TensorField)"));
      },
      nb::arg("batch"));
  m.def(
      "subsample_rows",
      [](const Array& inverse, int64_t m, uint64_t seed) {
        return index_out(
            mk::subsample_rows(in(inverse).contiguous().to_vector<int64_t>(), m, seed));
      },
      nb::arg("inverse"), nb::arg("m"), nb::arg("seed") = mk::kSubsampleSeed);
  m.def(
      "broadcast_groups",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& x_key, const Array& x_features,
         const mk::MapKey& glob_key, const Array& glob_features) {
        mk::SparseTensor x(in(x_features), x_key, mgr), g(in(glob_features), glob_key, mgr);
        return std::make_shared<mk::RowGroups>(mk::broadcast_groups(x, g, "minkowski::broadcast"));
      },
      nb::arg("manager"), nb::arg("x_key"), nb::arg("x_features"), nb::arg("glob_key"),
      nb::arg("glob_features"));
}

// A forward's inputs as fk views, kept by the autograd Function for its
// backward, so the backward does not wrap them again (a DLPack export and
// import each, about a microsecond a tensor). They view the torch tensors'
// memory (no copies); torch's saved tensors still guard against in-place
// changes.
struct SavedInputs {
  fk::Tensor features, other;  // other: convolution's weight, broadcast's glob
};
// Max pooling's arg-max rows (undefined for average and sum), kept in C++
// from the forward to the backward instead of crossing out and back.
struct SavedArgmax {
  fk::Tensor argmax;
};

fk::Tensor conv_out(const fk::Tensor& f, const fk::Tensor& w, const mk::KernelMap& map,
                    bool channelwise) {
  nb::gil_scoped_release nogil;  // other Python threads run meanwhile
  return mk::conv_features_forward(f, w, map, channelwise);
}

nb::tuple conv_grads(const fk::Tensor& g, const fk::Tensor& f, const fk::Tensor& w,
                     const mk::KernelMap& map, bool channelwise, bool need_f, bool need_w) {
  mk::ConvGrads r;
  {
    nb::gil_scoped_release nogil;
    r = mk::conv_features_backward(g, f, w, map, channelwise, need_f, need_w);
  }
  return nb::make_tuple(out_opt(r.features), out_opt(r.weight));
}

void bind_conv(nb::module_& m) {
  nb::class_<SavedInputs>(m, "SavedInputs");
  m.def(
      "saved_inputs",
      [](const Array& f, const Array& other) {
        return SavedInputs{in(f), in(other)};
      },
      nb::arg("features"), nb::arg("other"));
  nb::class_<SavedArgmax>(m, "SavedArgmax");
  m.def(
      "conv_forward",
      [](const Array& f, const Array& w, const mk::KernelMap& map, bool channelwise) {
        return to_torch(conv_out(in(f), in(w), map, channelwise));
      },
      nb::arg("features"), nb::arg("weight"), nb::arg("map"), nb::arg("channelwise") = false);
  m.def(
      "conv_forward_saving",
      [](const Array& f, const Array& w, const mk::KernelMap& map, bool channelwise) {
        SavedInputs s{in(f), in(w)};
        nb::object out = to_torch(conv_out(s.features, s.other, map, channelwise));
        return nb::make_tuple(out, nb::cast(std::move(s)));
      },
      nb::arg("features"), nb::arg("weight"), nb::arg("map"), nb::arg("channelwise") = false);
  m.def(
      "conv_backward",
      [](const Array& g, const Array& f, const Array& w, const mk::KernelMap& map, bool channelwise,
         bool need_features, bool need_weight) {
        return conv_grads(in(g), in(f), in(w), map, channelwise, need_features, need_weight);
      },
      nb::arg("grad_out"), nb::arg("features"), nb::arg("weight"), nb::arg("map"),
      nb::arg("channelwise"), nb::arg("need_features"), nb::arg("need_weight"));
  m.def(
      "conv_backward_saved",
      [](const Array& g, const SavedInputs& s, const mk::KernelMap& map, bool channelwise,
         bool need_features, bool need_weight) {
        return conv_grads(in(g), s.features, s.other, map, channelwise, need_features, need_weight);
      },
      nb::arg("grad_out"), nb::arg("saved"), nb::arg("map"), nb::arg("channelwise"),
      nb::arg("need_features"), nb::arg("need_weight"));
}

void bind_ops(nb::module_& m) {
  bind_conv(m);

  nb::enum_<mk::PoolingMode>(m, "PoolingMode")
      .value("MAX", mk::PoolingMode::Max)
      .value("AVG", mk::PoolingMode::Average)
      .value("SUM", mk::PoolingMode::Sum);
  m.def(
      "pool_forward",
      [](const Array& f, const mk::KernelMap& map, mk::PoolingMode mode) {
        const fk::Tensor x = in(f);
        auto r = without_gil([&] { return mk::pool_forward(x, map, mode); });
        return nb::make_tuple(to_torch(r.out), nb::cast(SavedArgmax{r.argmax}));
      },
      nb::arg("features"), nb::arg("map"), nb::arg("mode"));
  m.def(
      "pool_backward",
      [](const Array& g, const mk::KernelMap& map, mk::PoolingMode mode, const SavedArgmax& saved) {
        const fk::Tensor x = in(g);
        return to_torch(without_gil([&] { return mk::pool_backward(x, map, mode, saved.argmax); }));
      },
      nb::arg("grad_out"), nb::arg("map"), nb::arg("mode"), nb::arg("saved"));
  m.def(
      "global_pool_forward",
      [](const Array& f, const mk::RowGroups& groups, mk::PoolingMode mode) {
        const fk::Tensor x = in(f);
        auto r = without_gil([&] { return mk::global_pool_forward(x, groups, mode); });
        return nb::make_tuple(to_torch(r.out), nb::cast(SavedArgmax{r.argmax}));
      },
      nb::arg("features"), nb::arg("groups"), nb::arg("mode"));
  m.def(
      "global_pool_backward",
      [](const Array& g, const mk::RowGroups& groups, mk::PoolingMode mode,
         const SavedArgmax& saved) {
        const fk::Tensor x = in(g);
        return to_torch(
            without_gil([&] { return mk::global_pool_backward(x, groups, mode, saved.argmax); }));
      },
      nb::arg("grad_out"), nb::arg("groups"), nb::arg("mode"), nb::arg("saved"));

  nb::enum_<mk::BroadcastMode>(m, "BroadcastMode")
      .value("ADD", mk::BroadcastMode::Add)
      .value("MULTIPLY", mk::BroadcastMode::Multiply)
      .value("CONCATENATE", mk::BroadcastMode::Concatenate);
  // The forward keeps its inputs' fk views for the backward (SavedInputs).
  m.def(
      "broadcast_forward",
      [](const Array& f, const Array& g, const mk::RowGroups& groups, mk::BroadcastMode mode) {
        SavedInputs s{in(f), in(g)};
        nb::object out = to_torch(mk::broadcast_forward(s.features, s.other, groups, mode));
        return nb::make_tuple(out, nb::cast(std::move(s)));
      },
      nb::arg("features"), nb::arg("glob"), nb::arg("groups"), nb::arg("mode"));
  m.def(
      "broadcast_backward",
      [](const Array& go, const SavedInputs& s, const mk::RowGroups& groups, mk::BroadcastMode mode,
         bool need_features, bool need_glob) {
        auto r = mk::broadcast_backward(in(go), s.features, s.other, groups, mode, need_features,
                                        need_glob);
        return nb::make_tuple(out_opt(r.features), out_opt(r.glob));
      },
      nb::arg("grad_out"), nb::arg("saved"), nb::arg("groups"), nb::arg("mode"),
      nb::arg("need_features"), nb::arg("need_glob"));

  nb::enum_<mk::QuantizationMode>(m, "QuantizationMode")
      .value("RANDOM_SUBSAMPLE", mk::QuantizationMode::RandomSubsample)
      .value("UNWEIGHTED_AVERAGE", mk::QuantizationMode::UnweightedAverage)
      .value("UNWEIGHTED_SUM", mk::QuantizationMode::UnweightedSum)
      .value("MAX_POOL", mk::QuantizationMode::MaxPool)
      .value("FIRST_OCCURRENCE", mk::QuantizationMode::FirstOccurrence);
  m.def(
      "sparse_quantize",
      [](const Array& coords, const std::optional<Array>& features, const std::vector<double>& size,
         mk::QuantizationMode mode, const std::optional<Array>& labels, int64_t ignore_label,
         uint64_t seed) {
        const fk::Tensor c = in(coords), f = in_opt(features), l = in_opt(labels);
        auto q = without_gil(
            [&] { return mk::sparse_quantize(c, f, size, mode, l, ignore_label, seed); });
        return nb::make_tuple(to_torch(q.coordinates), out_opt(q.features), out_opt(q.labels),
                              index_out(q.unique_index), index_out(q.inverse));
      },
      nb::arg("coordinates"), nb::arg("features").none(), nb::arg("quantization_size"),
      nb::arg("mode"), nb::arg("labels").none(), nb::arg("ignore_label"), nb::arg("seed"));
  m.def(
      "batched_coordinates",
      [](const std::vector<Array>& coords) {
        std::vector<fk::Tensor> v;
        for (auto& c : coords) v.push_back(in(c));
        return to_torch(mk::batched_coordinates(v));
      },
      nb::arg("coordinates"));
  m.def("set_deterministic", &mk::set_deterministic, nb::arg("on"));
  m.def("is_deterministic", &mk::is_deterministic);
}

}  // namespace

void bind_minkowski_more(nb::module_& m);

void bind_minkowski(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("minkowski", "MinkowskiEngine's engine, on fk");
  bind_coordinates(m);
  bind_ops(m);
  bind_minkowski_more(m);
}

}  // namespace fkpy
