// batchable_reason (solve/batch.h): what keeps problems from one batched loop.
#include <cmath>

#include "fk/autograd.h"
#include "fk/factory.h"
#include "fk/random.h"
#include "nefi/field/grid_field.h"
#include "nefi/field/neural_field.h"
#include "nefi/solve/batch.h"
#include "nefi/solve/batch_device.h"

namespace nefi {
namespace {

std::string head_signature(const std::vector<HeadPtr>& heads) {
  std::string s;
  for (const HeadPtr& h : heads) s += h->signature() + ";";
  return s;
}

std::string field_signature(const NeuralField& f) {
  const NeuralFieldConfig& c = f.config();
  std::string periodic;
  for (int a : c.periodic_axes) periodic += " periodic " + std::to_string(a);
  return std::to_string(c.hidden) + "x" + std::to_string(c.depth) + " skip " +
         std::to_string(c.skip_at) + " octaves " + std::to_string(c.n_octaves) +
         (c.annealed ? " annealed" : "") + (c.include_input ? " input" : "") + periodic + " " +
         c.activation + (c.autocast ? std::string(" autocast ") + fk::name(*c.autocast) : "") +
         " params " + std::to_string(f.n_parameters()) + " heads " + head_signature(f.heads());
}

std::optional<std::string> field_reason(const InverseProblem& p, const InverseProblem& first,
                                        size_t i) {
  if (const auto* g = dynamic_cast<const GridField*>(p.field.get())) {
    const auto* g0 = dynamic_cast<const GridField*>(first.field.get());
    if (!g0 || !(g->shape() == g0->shape()) ||
        head_signature(g->heads()) != head_signature(g0->heads()))
      return "problem " + std::to_string(i) + "'s grid field (" + g->shape().str() + " heads " +
             head_signature(g->heads()) + ") differs from problem 0's field";
    return std::nullopt;
  }
  const auto* f = dynamic_cast<const NeuralField*>(p.field.get());
  if (!f)
    return "problem " + std::to_string(i) + " has a '" + p.field->kind() +
           "' field (batch_invert batches neural and grid fields)";
  const NeuralFieldConfig& c = f->config();
  if (c.autocast && *c.autocast != fk::DType::BF16)
    return "problem " + std::to_string(i) + "'s neural field has " + fk::name(*c.autocast) +
           " autocast (the batched MLP runs f32 trunks or bf16 autocast ones)";
  const auto* f0 = dynamic_cast<const NeuralField*>(first.field.get());
  if (!f0)
    return "problem " + std::to_string(i) + "'s neural field differs from problem 0's '" +
           first.field->kind() + "' field";
  if (field_signature(*f) != field_signature(*f0))
    return "problem " + std::to_string(i) + "'s field (" + field_signature(*f) +
           ") differs from problem 0's (" + field_signature(*f0) + ")";
  return std::nullopt;
}

// Problem i's operator must compute problem 0's map (the batch calls one
// operator): compared on a random probe at the domain grid.
bool same_map(const Operator& a, const Operator& b, const Domain& d) {
  fk::autograd::NoGradGuard ng;
  fk::Generator gen(12345);
  const fk::Tensor x = fk::uniform(d.shape(), 0.0, 1.0, {fk::DType::F64}, &gen);
  const std::vector<double> ya = a.apply(x).to_vector<double>();
  const std::vector<double> yb = b.apply(x).to_vector<double>();
  if (ya.size() != yb.size()) return false;
  for (size_t k = 0; k < ya.size(); ++k)
    if (std::abs(ya[k] - yb[k]) > 1e-12 * (1.0 + std::abs(ya[k]))) return false;
  return true;
}

std::optional<std::string> operator_reason(const InverseProblem& p, const InverseProblem& first,
                                           size_t i) {
  const std::string who = "problem " + std::to_string(i) + "'s operator '" + p.op->kind() + "'";
  if (!p.op->parameters().empty())
    return who +
           " has trainable parameters (nuisance gain/offset; batch_invert shares one "
           "operator with no trainable state)";
  if (!p.op->batchable())
    return who +
           " is not batchable (time-stepping and implicit-solve operators such as heat solve one "
           "problem per call)";
  if (p.op->kind() != first.op->kind())
    return who + " differs from problem 0's '" + first.op->kind() +
           "' (the batch calls one operator on every problem)";
  if (!same_map(*p.op, *first.op, first.domain))
    return who +
           " maps fields otherwise than problem 0's (another kernel, sampling or "
           "geometry: the batch calls one operator on every problem)";
  return std::nullopt;
}

}  // namespace

bool detail::loss_sets_match(const std::vector<const LossSet*>& sets,
                             const std::vector<char>& masked) {
  const auto& t0 = sets.at(0)->terms();
  for (size_t b = 0; b < sets.size(); ++b) {
    const auto& t = sets[b]->terms();
    if (t.size() != t0.size() || masked[b] != masked[0]) return false;
    for (size_t i = 0; i < t.size(); ++i) {
      // A weight may differ per problem (a row weight), not whether it is 0.
      if ((t[i].weight == 0.0) != (t0[i].weight == 0.0) || t[i].loss->name() != t0[i].loss->name())
        return false;
      if (t[i].weight == 0.0) continue;
      const std::string sig = t[i].loss->signature();
      if (sig.empty() || sig != t0[i].loss->signature()) return false;
    }
  }
  return true;
}

std::vector<std::vector<double>> detail::term_row_weights(const std::vector<const LossSet*>& sets) {
  std::vector<std::vector<double>> w(sets.at(0)->terms().size());
  for (size_t i = 0; i < w.size(); ++i)
    for (const LossSet* s : sets) w[i].push_back(s->terms().at(i).weight);
  return w;
}

std::optional<std::string> batch_device_reason(const std::vector<InverseProblem>& problems,
                                               const Curriculum& cur, const BatchOptions& opt) {
  if (opt.device.is_cpu()) return std::nullopt;
  const std::string on = " (batch_invert on " + opt.device.str() + ")";
  if (cur.optim.ema) return "optim.ema set: its shadow update is a host loop" + on;
  if (opt.chunk_size != 0)
    return "chunk_size " + std::to_string(opt.chunk_size) +
           ": a device batch runs every problem in each step (use 0)" + on;
  if (opt.loss_mode == "loop")
    return "loss_mode loop: each problem's own loss set reads its values on the host (use auto "
           "or shared with matching loss sets)" +
           on;
  for (size_t i = 0; i < problems.size(); ++i) {
    const InverseProblem& p = problems[i];
    const std::string who = "problem " + std::to_string(i);
    if (!p.field || !p.op) return who + " has no field or no operator";
    const auto* f = dynamic_cast<const NeuralField*>(p.field.get());
    if (!f && !dynamic_cast<const GridField*>(p.field.get()))
      return who + " has a '" + p.field->kind() +
             "' field: only neural and grid fields train in a device batch" + on;
    if (f && f->config().autocast == fk::DType::F16)
      return who + "'s field has fp16 autocast: loss scaling is not wired for a device solve" + on;
    const std::string refusal = device_solve_refusal(*p.op, opt.device);
    if (!refusal.empty()) return who + "'s " + refusal;
  }
  std::vector<char> masked;
  for (const InverseProblem& p : problems) masked.push_back(p.measurement.mask.defined());
  for (const Stage& st : cur.stages) {
    std::vector<LossSet> sets;
    for (const InverseProblem& p : problems) sets.push_back(p.losses.with_weights(st.loss_weights));
    std::vector<const LossSet*> ptrs;
    for (const LossSet& s : sets) ptrs.push_back(&s);
    if (!detail::loss_sets_match(ptrs, masked))
      return "stage " + st.name +
             ": the problems' loss sets (or masks) do not match term by term with batched "
             "forms, so the losses cannot run as one shared set" +
             on;
  }
  return std::nullopt;
}

std::optional<std::string> batchable_reason(const std::vector<InverseProblem>& problems,
                                            const Curriculum& cur) {
  if (problems.empty()) return std::string("no problems");
  const std::string& opt = cur.optim.optimizer;
  if (opt != "adam" && opt != "adamw")
    return "optimizer '" + opt + "' (batch_invert keeps per-problem Adam/AdamW state only)";
  if (cur.restarts != 1)
    return "restarts " + std::to_string(cur.restarts) + " (batch_invert runs one attempt)";
  if (!cur.optim.lr_mult.empty())
    return std::string("optim.lr_mult (batch_invert trains every parameter at the stage's lr)");
  for (const Stage& s : cur.stages)
    if (!s.freeze.empty())
      return "stage '" + s.name + "' freezes parameters (batch_invert trains them all)";
  const InverseProblem& first = problems.front();
  for (size_t i = 0; i < problems.size(); ++i) {
    const InverseProblem& p = problems[i];
    const std::string who = "problem " + std::to_string(i);
    if (!p.field || !p.op) return who + " has no field or no operator";
    // Each problem's field is reset to its seed and its row copied into it
    // at the end: a field two problems share would hold the last one's.
    for (size_t j = 0; j < i; ++j)
      if (problems[j].field == p.field)
        return who + " shares its field with problem " + std::to_string(j) +
               " (the same problem twice: build each one anew)";
    if (!p.measurement.data.defined()) return who + " has no measurement";
    if (!(p.domain.shape() == first.domain.shape()) || p.domain.extent() != first.domain.extent())
      return who + "'s domain " + p.domain.str() + " differs from problem 0's " +
             first.domain.str();
    if (auto r = field_reason(p, first, i)) return r;
    if (auto r = operator_reason(p, first, i)) return r;
  }
  return std::nullopt;
}

}  // namespace nefi
