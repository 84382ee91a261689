#include "minkowski/ops/union.h"

#include <string>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/ops/index.h"
#include "fk/ops/join.h"
#include "fk/profile.h"

namespace minkowski {

UnionMap union_map(const std::vector<SparseTensor>& xs, const char* where) {
  FK_CHECK(xs.size() >= 2, where, "at least 2 sparse tensors", fk::to_text(xs.size()));
  // Global pools (maps tagged "@origin": one row (b, 0, .., 0) per batch
  // item) keep their input's stride where the reference puts every one on
  // its one stride-0 origin map; any two of them unite, onto an "@origin"
  // map at the first's stride (pools of two stages whose batch items differ,
  // a pruned item, were refused).
  bool origins = true;
  for (const auto& x : xs) origins = origins && x.key().tag.ends_with("@origin");
  for (size_t i = 1; i < xs.size(); ++i) {
    check_same_manager(xs[0], xs[i], where);
    FK_CHECK(origins || xs[i].tensor_stride() == xs[0].tensor_stride(), where,
             "tensors of one tensor stride (input 0 is " + xs[0].key().str() + ")",
             "input " + fk::to_text(i) + " at " + xs[i].key().str());
  }
  auto& mgr = xs[0].manager();
  std::string tag = "union";
  if (origins) {  // a free tag keeps its "@origin" ending (a taken one gets "~n" appended)
    tag = "union@origin";
    for (int i = 1; mgr->has(MapKey{xs[0].tensor_stride(), tag}); ++i)
      tag = "union" + std::to_string(i) + "@origin";
  }
  const int w = mgr->dimension() + 1;
  std::vector<int32_t> coords;
  for (const auto& x : xs) {
    const auto& c = mgr->map(x.key())->coordinates();
    coords.insert(coords.end(), c.begin(), c.end());
  }
  const int64_t n = static_cast<int64_t>(coords.size()) / w;
  auto ins = mgr->insert_rows(coords.data(), n, xs[0].tensor_stride(), tag);
  UnionMap u;
  u.key = ins.key;
  u.size = static_cast<int64_t>(ins.unique_rows.size());
  int64_t at = 0;
  for (const auto& x : xs) {
    u.rows_of.emplace_back(ins.inverse.begin() + at, ins.inverse.begin() + at + x.size());
    at += x.size();
  }
  return u;
}

SparseTensor sparse_union(const std::vector<SparseTensor>& xs) {
  const char* where = "minkowski::sparse_union";
  fk::profile::OpScope scope("minkowski.union");
  UnionMap u = union_map(xs, where);
  std::vector<fk::Tensor> feats;
  std::vector<int64_t> rows;
  for (size_t i = 0; i < xs.size(); ++i) {
    FK_CHECK(xs[i].channels() == xs[0].channels(), where,
             fk::to_text(xs[0].channels()) + " channels (as input 0)",
             fk::to_text(xs[i].channels()) + " in input " + fk::to_text(i));
    FK_CHECK(xs[i].F().dtype() == xs[0].F().dtype(), where,
             std::string("features of one dtype (input 0: ") + fk::name(xs[0].F().dtype()) + ")",
             std::string(fk::name(xs[i].F().dtype())) + " in input " + fk::to_text(i));
    feats.push_back(xs[i].F());
    rows.insert(rows.end(), u.rows_of[i].begin(), u.rows_of[i].end());
  }
  // on the features' device (fk's index_add and cat run on either and say so
  // when the inputs' devices differ)
  const auto& f0 = xs[0].F();
  const fk::Device dev = f0.device();
  fk::Tensor out = fk::index_add(fk::zeros({u.size, f0.size(1)}, {f0.dtype(), dev}), 0, rows,
                                 fk::cat(feats, 0));  // checked on the host, uploaded
  return SparseTensor(out, u.key, xs[0].manager());
}

}  // namespace minkowski
