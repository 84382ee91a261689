// fieldkit._core.minkowski, second half: normalization, pruning, union,
// interpolation, splatting and spmm (the pure pairs and the coordinate side of each),
// and whole C++ ops (`engine_*`) that the tests hold the Python layers to.
#include <nanobind/nanobind.h>
#include <nanobind/stl/array.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <string>
#include "fk/autograd.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "minkowski/ops/broadcast.h"
#include "minkowski/ops/conv.h"
#include "minkowski/ops/dense.h"
#include "minkowski/ops/global_pooling.h"
#include "minkowski/ops/interpolation.h"
#include "minkowski/ops/normalization.h"
#include "minkowski/ops/pooling.h"
#include "minkowski/ops/pooling_transpose.h"
#include "minkowski/ops/prune.h"
#include "minkowski/ops/splat.h"
#include "minkowski/ops/spmm.h"
#include "minkowski/ops/union.h"
#include "minkowski/sparse_tensor.h"
#include "tensor_bridge.h"

namespace fkpy {
namespace {

namespace mk = minkowski;
using Array = nb::ndarray<nb::ro>;
using Mgr = mk::CoordinateManager;

fk::Tensor in(const Array& a) {
  return from_dlpack(a);
}
nb::object out_opt(const fk::Tensor& t) {
  return t.defined() ? to_torch(t) : nb::none();
}
nb::object index_out(const std::vector<int64_t>& v) {
  return to_torch(fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())}));
}
// A C++ SparseTensor on (manager, key) viewing the given features.
mk::SparseTensor sparse(const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key,
                        const Array& features) {
  return mk::SparseTensor(in(features), key, mgr);
}

void bind_normalization(nb::module_& m) {
  nb::class_<mk::Segments>(m, "Segments").def_ro("count", &mk::Segments::count);
  nb::class_<mk::NormStats>(m, "NormStats");
  m.def(
      "batch_segments",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key, const Array& f) {
        return mk::batch_segments(sparse(mgr, key, f));
      },
      nb::arg("manager"), nb::arg("key"), nb::arg("features"));
  // A TensorField's items: its coordinates' batch column (no map).
  m.def(
      "field_batch_segments",
      [](const Array& f, const Array& coordinates) {
        return mk::batch_segments(mk::TensorField(in(f), in(coordinates)));
      },
      nb::arg("features"), nb::arg("coordinates"));
  m.def("single_segment", &mk::single_segment, nb::arg("rows"));
  m.def(
      "normalize_statistics",
      [](const Array& x, const mk::Segments& seg, double eps) {
        return mk::normalize_statistics(in(x), seg, eps);
      },
      nb::arg("x"), nb::arg("segments"), nb::arg("eps"));
  m.def(
      "normalize_forward",
      [](const Array& x, const mk::Segments& seg, const mk::NormStats& stats, const Array& w,
         const Array& b) {
        return to_torch(mk::normalize_forward(in(x), seg, stats, in(w), in(b)));
      },
      nb::arg("x"), nb::arg("segments"), nb::arg("stats"), nb::arg("weight"), nb::arg("bias"));
  m.def(
      "normalize_backward",
      [](const Array& g, const Array& x, const mk::Segments& seg, const mk::NormStats& stats,
         const Array& w, bool need_x, bool need_w, bool need_b) {
        auto r =
            mk::normalize_backward(in(g), in(x), seg, stats, in(w), true, need_x, need_w, need_b);
        return nb::make_tuple(out_opt(r.x), out_opt(r.weight), out_opt(r.bias));
      },
      nb::arg("grad"), nb::arg("x"), nb::arg("segments"), nb::arg("stats"), nb::arg("weight"),
      nb::arg("need_x"), nb::arg("need_weight"), nb::arg("need_bias"));
}

void bind_coordinates_ops(nb::module_& m) {
  // Pruning's coordinate side: the kept rows and the map of their coordinates.
  m.def(
      "prune_map",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key, const Array& f,
         const Array& mask) {
        mk::SparseTensor y = mk::prune(sparse(mgr, key, f), in(mask));
        auto rows = mk::kept_rows(in(mask), mgr->size(key));
        return nb::make_tuple(y.key(), index_out(rows));
      },
      nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("mask"));
  // Union's coordinate side: the union map and each input's rows in it.
  m.def(
      "union_map",
      [](const std::shared_ptr<Mgr>& mgr, const std::vector<mk::MapKey>& keys,
         const std::vector<Array>& features) {
        std::vector<mk::SparseTensor> xs;
        for (size_t i = 0; i < keys.size(); ++i) xs.push_back(sparse(mgr, keys[i], features[i]));
        mk::UnionMap u = mk::union_map(xs, "minkowski::union");
        nb::list rows;
        for (const auto& r : u.rows_of) rows.append(index_out(r));
        return nb::make_tuple(u.key, u.size, rows);
      },
      nb::arg("manager"), nb::arg("keys"), nb::arg("features"));
}

void bind_spmm(nb::module_& m) {
  nb::class_<mk::CooList>(m, "CooList")
      .def_ro("m", &mk::CooList::m)
      .def_ro("k", &mk::CooList::k)
      .def("nnz", [](const mk::CooList& c) { return c.rows.size(); })
      .def("rows", [](const mk::CooList& c) { return index_out(c.rows); })
      .def("cols", [](const mk::CooList& c) { return index_out(c.cols); });
  m.def(
      "coo_list",
      [](const Array& rows, const Array& cols, std::array<int64_t, 2> size) {
        return mk::coo_list(in(rows), in(cols), size);
      },
      nb::arg("rows"), nb::arg("cols"), nb::arg("size"));
  m.def(
      "spmm_forward",
      [](const mk::CooList& a, const Array& values, const Array& dense) {
        return to_torch(mk::spmm_forward(a, in(values), in(dense)));
      },
      nb::arg("coo"), nb::arg("values"), nb::arg("dense"));
  m.def(
      "spmm_backward",
      [](const Array& g, const mk::CooList& a, const Array& values, const Array& dense,
         bool need_values, bool need_dense) {
        auto r = mk::spmm_backward(in(g), a, in(values), in(dense), need_values, need_dense);
        return nb::make_tuple(out_opt(r.values), out_opt(r.dense));
      },
      nb::arg("grad"), nb::arg("coo"), nb::arg("values"), nb::arg("dense"), nb::arg("need_values"),
      nb::arg("need_dense"));

  nb::enum_<mk::InterpolationMode>(m, "InterpolationMode")
      .value("MULTILINEAR", mk::InterpolationMode::Multilinear)
      .value("NEAREST", mk::InterpolationMode::Nearest);
  // The interpolation's list (rows: points, cols: rows of x) and its weights.
  m.def(
      "interpolation_weights",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key, const Array& f,
         const Array& points, mk::InterpolationMode mode) {
        auto w = mk::interpolation_weights(sparse(mgr, key, f), in(points), mode);
        auto weights = fk::from_vector(w.weight, fk::Dims{static_cast<int64_t>(w.weight.size())});
        return nb::make_tuple(w.list, to_torch(weights));
      },
      nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("points"), nb::arg("mode"));
}

// Splatting: the map (new coordinates + weights) and the pure pair over it.
void bind_splat(nb::module_& m) {
  nb::class_<mk::SplatMap>(m, "SplatMap")
      .def_ro("key", &mk::SplatMap::key)
      .def_prop_ro("size", [](const mk::SplatMap& s) { return s.list.m; })
      .def("nnz", [](const mk::SplatMap& s) { return s.list.rows.size(); })
      .def("weights", [](const mk::SplatMap& s) { return to_torch(s.weight); });
  m.def(
      "splat_map",
      [](const std::shared_ptr<Mgr>& mgr, const Array& points, const std::vector<int32_t>& ts) {
        return mk::splat_map(in(points), ts, mgr);
      },
      nb::arg("manager"), nb::arg("points"), nb::arg("tensor_stride"));
  m.def(
      "splat_forward",
      [](const mk::SplatMap& map, const Array& f) {
        return to_torch(mk::splat_forward(map, in(f)));
      },
      nb::arg("map"), nb::arg("features"));
  m.def(
      "splat_backward",
      [](const Array& g, const mk::SplatMap& map, const Array& f) {
        return to_torch(mk::splat_backward(in(g), map, in(f)));
      },
      nb::arg("grad"), nb::arg("map"), nb::arg("features"));
}

// Whole C++ ops on (manager, key, features): the engine's own results, for
// the tests to compare the Python layers with (forward only).
void bind_engine(nb::module_& m) {
  m.def(
      "engine_convolution",
      [](const std::string& kind, const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key,
         const Array& f, const Array& w, const mk::KernelRegion& region,
         const std::vector<int32_t>& stride) {
        fk::autograd::NoGradGuard ng;
        mk::SparseTensor x = sparse(mgr, key, f), y;
        if (kind == "conv")
          y = mk::convolution(x, in(w), fk::Tensor(), region, stride);
        else if (kind == "transpose")
          y = mk::convolution_transpose(x, in(w), fk::Tensor(), region, stride);
        else if (kind == "generative")
          y = mk::generative_convolution_transpose(x, in(w), fk::Tensor(), region, stride);
        else if (kind == "channelwise")
          y = mk::channelwise_convolution(x, in(w), fk::Tensor(), region, stride);
        else
          throw fk::Error("engine_convolution", "conv, transpose, generative or channelwise", kind);
        return nb::make_tuple(to_torch(y.F()), y.key());
      },
      nb::arg("kind"), nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("weight"),
      nb::arg("region"), nb::arg("stride"));
  m.def(
      "engine_pooling",
      [](const std::string& kind, mk::PoolingMode mode, const std::shared_ptr<Mgr>& mgr,
         const mk::MapKey& key, const Array& f, const mk::KernelRegion& region,
         const std::vector<int32_t>& stride) {
        fk::autograd::NoGradGuard ng;
        mk::SparseTensor x = sparse(mgr, key, f), y;
        if (kind == "local")
          y = mk::local_pooling(x, mode, region, stride);
        else if (kind == "transpose")
          y = mk::pooling_transpose(x, mode, region, stride);
        else if (kind == "generative")
          y = mk::generative_pooling_transpose(x, mode, region, stride);
        else if (kind == "global")
          y = mk::global_pooling(x, mode);
        else
          throw fk::Error("engine_pooling", "local, transpose, generative or global", kind);
        return nb::make_tuple(to_torch(y.F()), y.key());
      },
      nb::arg("kind"), nb::arg("mode"), nb::arg("manager"), nb::arg("key"), nb::arg("features"),
      nb::arg("region"), nb::arg("stride"));
  m.def(
      "engine_broadcast",
      [](mk::BroadcastMode mode, const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key,
         const Array& f, const mk::MapKey& glob_key, const Array& glob) {
        fk::autograd::NoGradGuard ng;
        mk::SparseTensor x = sparse(mgr, key, f), g = sparse(mgr, glob_key, glob);
        mk::SparseTensor y = mode == mk::BroadcastMode::Add ? mk::broadcast_add(x, g)
                             : mode == mk::BroadcastMode::Multiply
                                 ? mk::broadcast_multiply(x, g)
                                 : mk::broadcast_concatenation(x, g);
        return nb::make_tuple(to_torch(y.F()), y.key());
      },
      nb::arg("mode"), nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("glob_key"),
      nb::arg("glob"));
  m.def(
      "engine_instance_norm",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key, const Array& f, const Array& w,
         const Array& b, double eps) {
        fk::autograd::NoGradGuard ng;
        mk::SparseTensor x = sparse(mgr, key, f);
        mk::InstanceNorm norm(x.F().size(1), eps, true, x.F().dtype());
        norm.weight = in(w);
        norm.bias = in(b);
        return to_torch(norm.forward(x).F());
      },
      nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("weight"), nb::arg("bias"),
      nb::arg("eps"));
  m.def(
      "engine_prune",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key, const Array& f,
         const std::vector<bool>& mask) {
        fk::autograd::NoGradGuard ng;
        mk::SparseTensor y = mk::prune(sparse(mgr, key, f), mask);
        return nb::make_tuple(to_torch(y.F()), to_torch(y.C()));
      },
      nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("mask"));
  m.def(
      "engine_union",
      [](const std::shared_ptr<Mgr>& mgr, const std::vector<mk::MapKey>& keys,
         const std::vector<Array>& features) {
        fk::autograd::NoGradGuard ng;
        FK_CHECK(keys.size() == features.size(), "engine_union", "one feature tensor per key",
                 std::to_string(features.size()) + " for " + std::to_string(keys.size()));
        std::vector<mk::SparseTensor> xs;
        for (size_t i = 0; i < keys.size(); ++i) xs.push_back(sparse(mgr, keys[i], features[i]));
        mk::SparseTensor y = mk::sparse_union(xs);
        return nb::make_tuple(to_torch(y.F()), to_torch(y.C()));
      },
      nb::arg("manager"), nb::arg("keys"), nb::arg("features"));
  m.def(
      "engine_interpolate",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key, const Array& f,
         const Array& points) {
        fk::autograd::NoGradGuard ng;
        return to_torch(mk::interpolate(sparse(mgr, key, f), in(points)));
      },
      nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("points"));
  m.def(
      "engine_dense",
      [](const std::shared_ptr<Mgr>& mgr, const mk::MapKey& key, const Array& f,
         std::optional<std::vector<int32_t>> min_coordinate, bool contract_stride) {
        fk::autograd::NoGradGuard ng;
        mk::Dense d = mk::to_dense(sparse(mgr, key, f), min_coordinate, {}, contract_stride);
        return nb::make_tuple(to_torch(d.dense), d.min_coordinate, d.tensor_stride);
      },
      nb::arg("manager"), nb::arg("key"), nb::arg("features"), nb::arg("min_coordinate").none(),
      nb::arg("contract_stride"));
  m.def(
      "engine_to_sparse",
      [](const Array& dense, bool remove_zeros) {
        fk::autograd::NoGradGuard ng;
        mk::SparseTensor y = mk::to_sparse(in(dense), {1}, nullptr, {}, remove_zeros);
        return nb::make_tuple(to_torch(y.F()), to_torch(y.C()));
      },
      nb::arg("dense"), nb::arg("remove_zeros"));
  m.def(
      "engine_splat",
      [](const Array& f, const Array& points, const std::vector<int32_t>& ts) {
        fk::autograd::NoGradGuard ng;
        mk::SparseTensor y = mk::splat(mk::TensorField(in(f), in(points)), ts);
        return nb::make_tuple(to_torch(y.F()), to_torch(y.C()));
      },
      nb::arg("features"), nb::arg("points"), nb::arg("tensor_stride"));
}

}  // namespace

void bind_minkowski_more(nb::module_& m) {
  bind_normalization(m);
  bind_coordinates_ops(m);
  bind_spmm(m);
  bind_splat(m);
  bind_engine(m);
}

}  // namespace fkpy
