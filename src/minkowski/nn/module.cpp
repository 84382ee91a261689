#include "minkowski/nn/module.h"

#include <cstdint>

#include "fk/error.h"
#include "minkowski/nn/move_in_place.h"

namespace minkowski::nn {
namespace {

void check_new_name(const std::string& name, const NamedTensors& params,
                    const NamedTensors& buffers,
                    const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& children) {
  FK_CHECK(!name.empty() && name.find('.') == std::string::npos, "Module::register",
           "a non-empty name without '.'", "'" + name + "'");
  auto taken = [&](const auto& list) {
    for (const auto& entry : list) {
      if (entry.first == name) return true;
    }
    return false;
  };
  FK_CHECK(!taken(params) && !taken(buffers) && !taken(children), "Module::register",
           "a name not yet registered", "'" + name + "' again");
}

}  // namespace

fk::Tensor Module::register_parameter(std::string name, fk::Tensor t) {
  check_new_name(name, parameters_, buffers_, children_);
  FK_CHECK(t.defined(), "Module::register_parameter", "a defined tensor",
           "undefined '" + name + "'");
  t.set_requires_grad(true);
  parameters_.emplace_back(std::move(name), t);
  return t;
}

fk::Tensor Module::register_buffer(std::string name, fk::Tensor t) {
  check_new_name(name, parameters_, buffers_, children_);
  FK_CHECK(t.defined(), "Module::register_buffer", "a defined tensor", "undefined '" + name + "'");
  buffers_.emplace_back(std::move(name), t);
  return t;
}

void Module::add_child(std::string name, std::shared_ptr<Module> m) {
  check_new_name(name, parameters_, buffers_, children_);
  FK_CHECK(m != nullptr, "Module::register_module", "a module", "null '" + name + "'");
  m->train(training_);
  children_.emplace_back(std::move(name), std::move(m));
}

void Module::collect(const std::string& prefix, bool parameters, NamedTensors& out) const {
  for (const auto& [name, t] : parameters ? parameters_ : buffers_)
    out.emplace_back(prefix + name, t);
  for (const auto& [name, child] : children_) child->collect(prefix + name + ".", parameters, out);
}

NamedTensors Module::named_parameters() const {
  NamedTensors out;
  collect("", true, out);
  return out;
}

std::vector<fk::Tensor> Module::parameters() const {
  std::vector<fk::Tensor> out;
  for (auto& [name, t] : named_parameters()) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers() const {
  NamedTensors out;
  collect("", false, out);
  return out;
}

NamedTensors Module::state() const {
  NamedTensors out = named_parameters();
  collect("", false, out);
  return out;
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

void Module::zero_grad() {
  for (auto& t : parameters()) t.set_grad(fk::Tensor());
}

void Module::to(fk::Device device) {
  std::vector<fk::Tensor> tensors;
  for (const auto& [name, t] : state()) tensors.push_back(t);
  move_in_place(tensors, device);
}

int64_t Module::num_parameters() const {
  int64_t n = 0;
  for (auto& t : parameters()) n += t.numel();
  return n;
}

Sequential::Sequential(std::vector<std::shared_ptr<SparseModule>> layers) {
  for (auto& l : layers) push_back(std::move(l));
}

void Sequential::push_back(std::shared_ptr<SparseModule> layer) {
  register_module(std::to_string(layers_.size()), layer);
  layers_.push_back(std::move(layer));
}

SparseTensor Sequential::forward(const SparseTensor& x) {
  SparseTensor y = x;
  for (auto& l : layers_) y = l->forward(y);
  return y;
}

}  // namespace minkowski::nn
