// Coordinate maps built on the device against the CPU's: the unique rows (and
// unique_rows / inverse), strided and expanded maps must equal the
// CoordinateMap / CoordinateManager results row for row, lookups must answer
// as CoordinateMap::find, and kernel maps between device maps must equal the
// manager's (submanifold, strided, transposed, generative transposed) bit for
// bit. Clouds: 2-D, 3-D and 4-D, several batches, negative coordinates and
// duplicates.
#include <gtest/gtest.h>

#include <climits>
#include <random>
#include <string>
#include <vector>

#include "device_test_util.h"
#include "fk/test_util.h"
#include "minkowski/cuda/device_coordinates.h"

namespace minkowski {
namespace {

using cuda_test::kGpu;
using fk::test::error_of;

// n rows [batch, x_1..x_D] with coordinates ts * [-range, range] in random
// order; about a quarter repeat an earlier row (more repeat by chance when
// the range is small).
std::vector<int32_t> cloud(int d, int64_t n, int range, int ts, int batches, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_int_distribution<int> u(-range, range), ub(0, batches - 1);
  std::uniform_real_distribution<double> p(0, 1);
  const int w = d + 1;
  std::vector<int32_t> rows;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int32_t> r(w);
    if (i > 0 && p(g) < 0.25) {
      const int64_t j = std::uniform_int_distribution<int64_t>(0, i - 1)(g);
      std::copy(rows.begin() + j * w, rows.begin() + (j + 1) * w, r.begin());
    } else {
      r[0] = ub(g);
      for (int a = 1; a <= d; ++a) r[a] = u(g) * ts;
    }
    rows.insert(rows.end(), r.begin(), r.end());
  }
  return rows;
}

fk::Tensor on_gpu(const std::vector<int32_t>& rows, int w) {
  return fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / w, w}, kGpu);
}
fk::Tensor on_cpu(const std::vector<int32_t>& rows, int w) {
  return fk::from_vector(rows, fk::Dims{static_cast<int64_t>(rows.size()) / w, w});
}

std::vector<int64_t> widen(const fk::Tensor& t) {
  const std::vector<int32_t> v = t.to_vector<int32_t>();
  return std::vector<int64_t>(v.begin(), v.end());
}

void expect_same_map(const cuda::DeviceCoordinateMap& dev, const CoordinateMap& cpu) {
  ASSERT_EQ(dev.size, cpu.size());
  ASSERT_EQ(dev.width, cpu.width());
  EXPECT_EQ(dev.tensor_stride, cpu.tensor_stride());
  ASSERT_EQ(dev.coordinates.to_vector<int32_t>(), cpu.coordinates());
  for (int c = 0; c < cpu.width() && cpu.size() > 0; ++c) {
    EXPECT_EQ(dev.lo[c], cpu.packer().min(c)) << "column " << c;
    EXPECT_EQ(int64_t{dev.hi[c]}, cpu.packer().min(c) + cpu.packer().extent(c)) << "column " << c;
  }
}

struct CloudCase {
  int d;
  int64_t n;
  int range, batches;
};
const CloudCase kClouds[] = {{2, 3000, 20, 3}, {3, 4000, 9, 2}, {4, 2500, 3, 4}};

TEST(MinkowskiCudaCoordinates, UniqueMatchesCpuRowForRow) {
  MK_SKIP_WITHOUT_GPU();
  unsigned seed = 1;
  for (const CloudCase& cc : kClouds)
    for (RowOrder order : {RowOrder::kFirstOccurrence, RowOrder::kKeys}) {
      SCOPED_TRACE(std::to_string(cc.d) + "-D, order " + std::to_string(static_cast<int>(order)));
      const int w = cc.d + 1;
      const std::vector<int32_t> rows = cloud(cc.d, cc.n, cc.range, 1, cc.batches, seed++);
      std::vector<int64_t> unique_rows, inverse;
      CoordinateMap cpu(rows.data(), cc.n, w, std::vector<int32_t>(cc.d, 1), &unique_rows, &inverse,
                        order);
      ASSERT_LT(cpu.size(), cc.n);  // the cloud has duplicates
      cuda::DeviceUnique dev = cuda::unique_coordinates(on_gpu(rows, w), {1}, order);
      expect_same_map(dev.map, cpu);
      EXPECT_EQ(widen(dev.unique_rows), unique_rows);
      EXPECT_EQ(widen(dev.inverse), inverse);
      // The same run to run.
      cuda::DeviceUnique again = cuda::unique_coordinates(on_gpu(rows, w), {1}, order);
      EXPECT_EQ(again.inverse.to_vector<int32_t>(), dev.inverse.to_vector<int32_t>());
    }
}

// Rows already in key order (the CPU skips its sort), one row repeated, one
// row, no rows.
TEST(MinkowskiCudaCoordinates, UniqueEdgeCases) {
  MK_SKIP_WITHOUT_GPU();
  const std::vector<std::vector<int32_t>> cases = {
      cuda_test::random_rows(3, 500, 7, 1, 2, 11, false),
      {0, -3, 4, 5, 0, -3, 4, 5, 0, -3, 4, 5},
      {2, 1, -1, 7},
      {}};
  for (const auto& rows : cases) {
    SCOPED_TRACE(std::to_string(rows.size()) + " values");
    const int64_t n = static_cast<int64_t>(rows.size()) / 4;
    std::vector<int64_t> unique_rows, inverse;
    CoordinateMap cpu(rows.data(), n, 4, {1, 1, 1}, &unique_rows, &inverse);
    cuda::DeviceUnique dev = cuda::unique_coordinates(on_gpu(rows, 4), {1, 1, 1});
    expect_same_map(dev.map, cpu);
    EXPECT_EQ(widen(dev.unique_rows), unique_rows);
    EXPECT_EQ(widen(dev.inverse), inverse);
  }
}

TEST(MinkowskiCudaCoordinates, StrideMatchesManager) {
  MK_SKIP_WITHOUT_GPU();
  unsigned seed = 20;
  for (const CloudCase& cc : kClouds)
    for (int ts : {1, 2})
      for (const std::vector<int32_t>& s : {std::vector<int32_t>{2}, std::vector<int32_t>{4}}) {
        SCOPED_TRACE(std::to_string(cc.d) + "-D, ts " + std::to_string(ts) + ", stride " +
                     std::to_string(s[0]));
        const int w = cc.d + 1;
        const std::vector<int32_t> rows = cloud(cc.d, cc.n, cc.range, ts, cc.batches, seed++);
        CoordinateManager mgr(cc.d);
        const MapKey key = mgr.insert(on_cpu(rows, w), {ts}).key;
        const MapKey skey = mgr.stride(key, s);
        const cuda::DeviceCoordinateMap in = cuda::unique_coordinates(on_gpu(rows, w), {ts}).map;
        expect_same_map(in, *mgr.map(key));
        const cuda::DeviceCoordinateMap out = cuda::stride_coordinates(in, s);
        expect_same_map(out, *mgr.map(skey));
        // First-occurrence order: the strided map as the tests' helper builds it.
        const cuda::DeviceCoordinateMap first =
            cuda::stride_coordinates(in, s, RowOrder::kFirstOccurrence);
        expect_same_map(first, *cuda_test::strided_map(*mgr.map(key), ts, s[0]));
      }
  // A different stride per axis.
  const std::vector<int32_t> rows = cloud(3, 2000, 12, 1, 2, 99);
  CoordinateManager mgr(3);
  const MapKey key = mgr.insert(on_cpu(rows, 4), {1}).key;
  const cuda::DeviceCoordinateMap in = cuda::unique_coordinates(on_gpu(rows, 4), {1}).map;
  expect_same_map(cuda::stride_coordinates(in, {2, 4, 1}), *mgr.map(mgr.stride(key, {2, 4, 1})));
}

TEST(MinkowskiCudaCoordinates, ExpandMatchesManager) {
  MK_SKIP_WITHOUT_GPU();
  unsigned seed = 40;
  for (const CloudCase& cc : kClouds)
    for (int k : {2, 3}) {
      SCOPED_TRACE(std::to_string(cc.d) + "-D, kernel " + std::to_string(k));
      const int w = cc.d + 1;
      const std::vector<int32_t> rows = cloud(cc.d, cc.n / 4, cc.range, 4, cc.batches, seed++);
      CoordinateManager mgr(cc.d);
      const MapKey key = mgr.insert(on_cpu(rows, w), {4}).key;
      const KernelRegion region = KernelRegion::cube({k});
      const std::vector<int32_t> out_ts(cc.d, 2);
      const MapKey gkey = mgr.expand(key, region, out_ts);
      const cuda::DeviceCoordinateMap in = cuda::unique_coordinates(on_gpu(rows, w), {4}).map;
      const cuda::DeviceCoordinateMap gen =
          cuda::expand_coordinates(in, region.offsets(out_ts), out_ts);
      expect_same_map(gen, *mgr.map(gkey));
    }
}

TEST(MinkowskiCudaCoordinates, LookupMatchesFind) {
  MK_SKIP_WITHOUT_GPU();
  unsigned seed = 60;
  for (const CloudCase& cc : kClouds) {
    SCOPED_TRACE(std::to_string(cc.d) + "-D");
    const int w = cc.d + 1;
    const std::vector<int32_t> rows = cloud(cc.d, cc.n, cc.range, 1, cc.batches, seed++);
    CoordinateMap cpu(rows.data(), cc.n, w, std::vector<int32_t>(cc.d, 1));
    const cuda::DeviceCoordinateMap dev = cuda::unique_coordinates(on_gpu(rows, w), {1}).map;
    // Every inserted row (duplicates included), then rows in and around the
    // bounding box (batches and coordinates one past it, so misses too).
    std::vector<int32_t> queries = rows;
    const std::vector<int32_t> around = cloud(cc.d, 3000, cc.range + 1, 1, cc.batches + 1, seed++);
    queries.insert(queries.end(), around.begin(), around.end());
    queries.insert(queries.end(), {-1, INT32_MAX});  // far outside
    queries.resize(queries.size() + w - 2, INT32_MIN);
    const std::vector<int32_t> found =
        cuda::lookup_coordinates(dev, on_gpu(queries, w)).to_vector<int32_t>();
    const int64_t q = static_cast<int64_t>(queries.size()) / w;
    ASSERT_EQ(static_cast<int64_t>(found.size()), q);
    int64_t misses = 0;
    for (int64_t i = 0; i < q; ++i) {
      ASSERT_EQ(found[i], cpu.find(queries.data() + i * w)) << "query " << i;
      misses += found[i] < 0;
    }
    EXPECT_GT(misses, 0);
  }
}

// A device kernel map against the manager's, bit for bit.
void expect_same_kernel_map(const cuda::DeviceKernelMap& dev, const KernelMap& cpu) {
  ASSERT_FALSE(cpu.identity);
  EXPECT_EQ(dev.in_size, cpu.in_size);
  EXPECT_EQ(dev.out_size, cpu.out_size);
  ASSERT_EQ(dev.offset_begin, cpu.offset_begin);
  const std::vector<int32_t> in = dev.in_rows.to_vector<int32_t>();
  const std::vector<int32_t> out = dev.out_rows.to_vector<int32_t>();
  EXPECT_TRUE(std::equal(in.begin(), in.end(), cpu.in_rows.begin(), cpu.in_rows.end()));
  EXPECT_TRUE(std::equal(out.begin(), out.end(), cpu.out_rows.begin(), cpu.out_rows.end()));
  // The row indices: pair ids per output / input row, as the CPU's.
  const std::vector<int32_t> ob = dev.by_out.begin.to_vector<int32_t>();
  const std::vector<int32_t> op = dev.by_out.pair.to_vector<int32_t>();
  ASSERT_EQ(static_cast<int64_t>(ob.size()), cpu.out_size + 1);
  for (int64_t r = 0; r <= cpu.out_size; ++r) ASSERT_EQ(ob[r], cpu.by_out().begin[r]) << r;
  for (size_t e = 0; e < op.size(); ++e) ASSERT_EQ(op[e], cpu.by_out().entries[e].pair) << e;
  const std::vector<int32_t> ib = dev.by_in.begin.to_vector<int32_t>();
  ASSERT_EQ(static_cast<int64_t>(ib.size()), cpu.in_size + 1);
  for (int64_t r = 0; r <= cpu.in_size; ++r) ASSERT_EQ(ib[r], cpu.by_in().begin[r]) << r;
}

TEST(MinkowskiCudaCoordinates, KernelMapsMatchManager) {
  MK_SKIP_WITHOUT_GPU();
  unsigned seed = 80;
  for (const CloudCase& cc : kClouds) {
    SCOPED_TRACE(std::to_string(cc.d) + "-D");
    const int w = cc.d + 1;
    const std::vector<int32_t> rows = cloud(cc.d, cc.n / 2, cc.range, 2, cc.batches, seed++);
    CoordinateManager mgr(cc.d);
    const MapKey fine = mgr.insert(on_cpu(rows, w), {2}).key;
    const MapKey coarse = mgr.stride(fine, {2});
    const cuda::DeviceCoordinateMap df = cuda::unique_coordinates(on_gpu(rows, w), {2}).map;
    const cuda::DeviceCoordinateMap dc = cuda::stride_coordinates(df, {2});
    const std::vector<int32_t> ts_f(cc.d, 2), ts_c(cc.d, 4), ts_g(cc.d, 2);
    for (int k : {2, 3}) {
      SCOPED_TRACE("kernel " + std::to_string(k));
      const KernelRegion cube = KernelRegion::cube({k});
      // Submanifold (odd kernels) and strided.
      if (k == 3)
        expect_same_kernel_map(cuda::build_device_kernel_map(df, df, cube.offsets(ts_f)),
                               *mgr.kernel_map(fine, fine, cube, false));
      const cuda::DeviceKernelMap down = cuda::build_device_kernel_map(df, dc, cube.offsets(ts_f));
      expect_same_kernel_map(down, *mgr.kernel_map(fine, coarse, cube, false));
      // Transposed: coarse -> fine, the strided map swapped.
      expect_same_kernel_map(cuda::transposed(down), *mgr.kernel_map(coarse, fine, cube, true));
      // Generative transposed: coarse -> its expansion at the finer stride.
      const MapKey gen = mgr.expand(coarse, cube, ts_g);
      const cuda::DeviceCoordinateMap dg = cuda::expand_coordinates(dc, cube.offsets(ts_g), ts_g);
      expect_same_map(dg, *mgr.map(gen));
      expect_same_kernel_map(
          cuda::transposed(cuda::build_device_kernel_map(dg, dc, cube.offsets(ts_g))),
          *mgr.kernel_map(coarse, gen, cube, true));
    }
  }
}

// Rows at the packed keys' edges, against the CPU: 1-D coordinates spanning
// all of int32 (a 32-bit column, 33 bits once a kernel's reach pads it) in
// negative and positive batches, with duplicates (unique rows both orders,
// lookups, submanifold and strided kernel maps, flooring at INT32_MIN); one
// point in a negative batch; a 7-D cloud, the widest the device keys take.
TEST(MinkowskiCudaCoordinates, RowsAtTheKeyLayoutsEdges) {
  MK_SKIP_WITHOUT_GPU();
  std::vector<int32_t> line;
  for (int32_t b : {2, -3, 0})
    for (int32_t x :
         {INT32_MAX, INT32_MIN, 0, INT32_MIN + 1, -1, INT32_MAX - 1, 1, INT32_MAX, INT32_MIN})
      line.insert(line.end(), {b, x});
  const int64_t n = static_cast<int64_t>(line.size()) / 2;
  for (RowOrder order : {RowOrder::kFirstOccurrence, RowOrder::kKeys}) {
    SCOPED_TRACE("order " + std::to_string(static_cast<int>(order)));
    std::vector<int64_t> unique_rows, inverse;
    CoordinateMap cpu(line.data(), n, 2, {1}, &unique_rows, &inverse, order);
    ASSERT_EQ(cpu.size(), n - 6);
    cuda::DeviceUnique dev = cuda::unique_coordinates(on_gpu(line, 2), {1}, order);
    expect_same_map(dev.map, cpu);
    EXPECT_EQ(widen(dev.unique_rows), unique_rows);
    EXPECT_EQ(widen(dev.inverse), inverse);
  }
  const CoordinateMap cpu(line.data(), n, 2, {1});
  const cuda::DeviceCoordinateMap dev = cuda::unique_coordinates(on_gpu(line, 2), {1}).map;
  std::vector<int32_t> queries = line;  // every row, then batches and values around them
  queries.insert(queries.end(), {-4, INT32_MIN, 3, INT32_MAX, -1, 0, 1, 0, 2, INT32_MAX - 2});
  const std::vector<int32_t> found =
      cuda::lookup_coordinates(dev, on_gpu(queries, 2)).to_vector<int32_t>();
  ASSERT_EQ(found.size(), queries.size() / 2);
  for (size_t i = 0; i < found.size(); ++i)
    ASSERT_EQ(found[i], cpu.find(queries.data() + 2 * i)) << "query " << i;
  const auto off3 = KernelRegion::cube({3}).offsets({1});
  expect_same_kernel_map(cuda::build_device_kernel_map(dev, dev, off3),
                         *build_kernel_map(cpu, cpu, off3));
  const cuda::DeviceCoordinateMap down =
      cuda::stride_coordinates(dev, {2}, RowOrder::kFirstOccurrence);
  const auto cpu_down = cuda_test::strided_map(cpu, 1, 2);
  expect_same_map(down, *cpu_down);
  EXPECT_EQ(down.lo[1], INT32_MIN);
  const auto off2 = KernelRegion::cube({2}).offsets({1});
  expect_same_kernel_map(cuda::build_device_kernel_map(dev, down, off2),
                         *build_kernel_map(cpu, *cpu_down, off2));

  const std::vector<int32_t> point = {-5, 7, -8, 9};
  const CoordinateMap cpu_point(point.data(), 1, 4, {1, 1, 1});
  const cuda::DeviceCoordinateMap dev_point = cuda::unique_coordinates(on_gpu(point, 4), {1}).map;
  expect_same_map(dev_point, cpu_point);
  const auto cube = KernelRegion::cube({3}).offsets({1, 1, 1});
  const cuda::DeviceKernelMap one = cuda::build_device_kernel_map(dev_point, dev_point, cube);
  EXPECT_EQ(one.pairs(), 1);
  expect_same_kernel_map(one, *build_kernel_map(cpu_point, cpu_point, cube));

  const std::vector<int32_t> rows7 = cloud(7, 600, 2, 1, 2, 123);
  std::vector<int64_t> unique_rows, inverse;
  const CoordinateMap cpu7(rows7.data(), 600, 8, std::vector<int32_t>(7, 1), &unique_rows,
                           &inverse);
  cuda::DeviceUnique dev7 = cuda::unique_coordinates(on_gpu(rows7, 8), {1});
  expect_same_map(dev7.map, cpu7);
  EXPECT_EQ(widen(dev7.inverse), inverse);
  const auto cross = KernelRegion::cross({3}).offsets(std::vector<int32_t>(7, 1));
  expect_same_kernel_map(cuda::build_device_kernel_map(dev7.map, dev7.map, cross),
                         *build_kernel_map(cpu7, cpu7, cross));
}

TEST(MinkowskiCudaCoordinates, ErrorPaths) {
  MK_SKIP_WITHOUT_GPU();
  // D = 8: wider than the device keys allow.
  EXPECT_THROW(cuda::unique_coordinates(on_gpu(std::vector<int32_t>(18, 1), 9), {1}), fk::Error);
  // 3-D extents of 2^21 + 1 values: 66 key bits.
  const int32_t big = 1 << 20;
  const std::vector<int32_t> wide = {0, -big, -big, -big, 0, big, big, big};
  EXPECT_THROW(cuda::unique_coordinates(on_gpu(wide, 4), {1}), fk::Error);
  // 63 bits fit; a kernel's reach on top does not (padded layout of 66 bits).
  const int32_t edge = (1 << 21) - 1;
  const cuda::DeviceCoordinateMap full =
      cuda::unique_coordinates(on_gpu({0, 0, 0, 0, 0, edge, edge, edge}, 4), {1}).map;
  EXPECT_EQ(full.size, 2);
  EXPECT_THROW(
      cuda::build_device_kernel_map(full, full, KernelRegion::cube({3}).offsets({1, 1, 1})),
      fk::Error);
  // Bad tensors: dtype, shape, a query of the wrong width.
  EXPECT_THROW(cuda::unique_coordinates(fk::zeros({4, 3}, {fk::DType::I64, kGpu}), {1}), fk::Error);
  EXPECT_THROW(cuda::unique_coordinates(on_gpu({1, 2, 3}, 1), {1}), fk::Error);
  EXPECT_THROW(cuda::lookup_coordinates(full, on_gpu({0, 0, 0}, 3)), fk::Error);
  // Strided below int32, expanded past it, tensor strides past 2^30.
  const cuda::DeviceCoordinateMap low =
      cuda::unique_coordinates(on_gpu({0, INT32_MIN + 1, 0}, 3), {1}).map;
  EXPECT_THROW(cuda::stride_coordinates(low, {3}), fk::Error);
  EXPECT_THROW(cuda::expand_coordinates(low, {-2, 0}, {1}), fk::Error);
  const cuda::DeviceCoordinateMap ts2 = cuda::unique_coordinates(on_gpu({0, 2, 4}, 3), {2}).map;
  EXPECT_THROW(cuda::stride_coordinates(ts2, {1 << 30}), fk::Error);
  // Maps of different dimensions.
  const cuda::DeviceCoordinateMap plane = cuda::unique_coordinates(on_gpu({0, 1, 2}, 3), {1}).map;
  EXPECT_THROW(cuda::build_device_kernel_map(full, plane, {0, 0}), fk::Error);
  // Coordinate tensors the kernels cannot read as device int32 rows.
  const std::vector<int32_t> off = {0, 0};
  const KernelMapKeyLayout l = {{0, 0, 0}, {0, 0, 1}, 1};
  const fk::Tensor rows = on_gpu({0, 1, 2}, 3);
  const std::string i64 =
      error_of([&] { cuda::build_device_kernel_map(rows.to(fk::DType::I64), rows, l, off, 0); });
  EXPECT_NE(i64.find("input coordinates: contiguous int32"), std::string::npos) << i64;
  const std::string strided = error_of([&] {
    cuda::build_device_kernel_map(rows, fk::zeros({3, 6}, {fk::DType::I32, kGpu}).narrow(1, 0, 3),
                                  l, off, 0);
  });
  EXPECT_NE(strided.find("(strided)"), std::string::npos) << strided;
  const std::string layout = error_of([&] {
    cuda::build_device_kernel_map(rows, rows, {{0, 0}, {0, 0}, 1}, off, 0);
  });
  EXPECT_NE(layout.find("a key layout of 3 columns"), std::string::npos) << layout;
}

// Host coordinates are refused before any device work (no GPU needed).
TEST(MinkowskiCudaCoordinates, KernelMapFromHostTensorsIsAnError) {
  const fk::Tensor rows = on_cpu({0, 1, 2, 0, 2, 2}, 3);
  const std::string host = error_of([&] {
    cuda::build_device_kernel_map(rows, rows, {{0, 0, 0}, {0, 0, 2}, 3}, {0, 0}, 0);
  });
  EXPECT_NE(host.find("input coordinates on cuda:0"), std::string::npos) << host;
}

}  // namespace
}  // namespace minkowski
