#include "nefi/domain.h"

#include <algorithm>
#include <sstream>

#include "fk/error.h"
#include "fk/factory.h"

namespace nefi {

Domain::Domain(fk::Dims shape, std::vector<double> extent)
    : shape_(shape), extent_(std::move(extent)) {
  FK_CHECK(shape_.size() >= 1 && shape_.size() <= 3, "nefi::Domain", "1 to 3 axes",
           fk::to_text(shape_.size()));
  for (int i = 0; i < shape_.size(); ++i)
    FK_CHECK(shape_[i] > 0, "nefi::Domain", "positive sizes", shape_.str());
  if (extent_.empty()) extent_.assign(shape_.size(), 1.0);
  FK_CHECK(static_cast<int>(extent_.size()) == shape_.size(), "nefi::Domain",
           "one extent per axis (" + fk::to_text(shape_.size()) + ")",
           fk::to_text(extent_.size()) + " extents");
  for (double e : extent_) FK_CHECK(e > 0, "nefi::Domain", "positive extents", fk::to_text(e));
}

std::vector<double> Domain::spacing(const fk::Dims& shape) const {
  FK_CHECK(shape.size() == ndim(), "nefi::Domain::spacing", fk::to_text(ndim()) + " axes",
           shape.str());
  std::vector<double> h(ndim());
  for (int i = 0; i < ndim(); ++i) h[i] = extent_[i] / static_cast<double>(shape[i]);
  return h;
}

fk::Tensor Domain::coords(fk::DType dtype) const {
  const int d = ndim();
  fk::Dims out_shape = shape_;
  out_shape.push_back(d);
  std::vector<double> v(static_cast<size_t>(numel()) * d);
  std::vector<int64_t> idx(d, 0);
  for (int64_t p = 0; p < numel(); ++p) {
    for (int a = 0; a < d; ++a)
      v[p * d + a] = (2.0 * idx[a] + 1.0) / static_cast<double>(shape_[a]) - 1.0;
    for (int a = d - 1; a >= 0; --a) {
      if (++idx[a] < shape_[a]) break;
      idx[a] = 0;
    }
  }
  return fk::from_vector(v, out_shape).to(dtype);
}

Domain Domain::at(const fk::Dims& shape) const {
  return Domain(shape, extent_);
}

Domain Domain::coarsen(int factor, int64_t min_size) const {
  FK_CHECK(factor >= 1, "nefi::Domain::coarsen", "factor >= 1", fk::to_text(factor));
  fk::Dims s = shape_;
  for (int i = 0; i < s.size(); ++i) s[i] = std::min(s[i], std::max(min_size, s[i] / factor));
  return at(s);
}

Domain Domain::refine(int factor) const {
  FK_CHECK(factor >= 1, "nefi::Domain::refine", "factor >= 1", fk::to_text(factor));
  fk::Dims s = shape_;
  for (int i = 0; i < s.size(); ++i) s[i] *= factor;
  return at(s);
}

std::string Domain::str() const {
  std::ostringstream os;
  os << "Domain(shape=" << shape_.str() << ", extent=[";
  for (size_t i = 0; i < extent_.size(); ++i) os << (i ? ", " : "") << extent_[i];
  os << "])";
  return os.str();
}

}  // namespace nefi
