#include "nefi/instances/instance.h"

#include "fk/error.h"

namespace nefi {

const std::vector<InstancePtr>& all_instances() {
  static const std::vector<InstancePtr> list{make_toy1d(), make_deconvolution(),
                                             make_thermal_tomography()};
  return list;
}

InstancePtr find_instance(const std::string& name) {
  std::string names;
  for (const auto& i : all_instances()) {
    if (i->name() == name) return i;
    names += (names.empty() ? "" : ", ") + i->name();
  }
  throw fk::Error("target", "an instance (" + names + ") or a config file", "'" + name + "'");
}

void declare_curriculum_keys(Params& p, std::vector<double> steps, double lr) {
  p.declare("steps", steps, "steps per stage; stage i runs at n / 2^(stages-1-i)");
  p.declare("lr", lr, "learning rate of the first stage");
  p.declare("lr_decay", 0.5, "lr factor per later stage");
  p.declare("lr_schedule", std::string("cosine"), "cosine | step | constant");
  p.declare("anneal_fraction", 1.0, "fraction of each stage over which bands open");
  p.declare("optimizer", std::string("adamw"), "adam | adamw | lbfgs");
  p.declare("weight_decay", 1e-4, "AdamW decoupled weight decay");
  p.declare("grad_clip", 1.0, "global gradient-norm clip (<= 0: off)");
  p.declare("min_coarse", int64_t{8}, "smallest stage grid size");
}

std::optional<fk::DType> autocast_from(const Params& p) {
  const std::string& a = p.s("autocast");
  if (a == "none") return std::nullopt;
  if (a == "bf16") return fk::DType::BF16;
  if (a == "fp16") return fk::DType::F16;
  throw fk::Error("config key 'autocast'", "none, bf16 or fp16", a);
}

NeuralFieldConfig neural_field_config_from(const Params& p) {
  NeuralFieldConfig fc;
  fc.hidden = static_cast<int>(p.i("hidden"));
  fc.depth = static_cast<int>(p.i("depth"));
  fc.skip_at = static_cast<int>(p.i("skip_at"));
  fc.activation = p.s("activation");
  fc.n_octaves = static_cast<int>(p.i("n_octaves"));
  fc.out_init_scale = p.d("out_init_scale");
  if (p.has("autocast")) fc.autocast = autocast_from(p);
  if (p.has("include_input")) fc.include_input = p.b("include_input");
  return fc;
}

Curriculum curriculum_from(const Params& p, const fk::Dims& shape, double lr) {
  std::vector<int> steps;
  for (double s : p.list("steps")) {
    FK_CHECK(s >= 1 && s == static_cast<int>(s), "config key 'steps'", "positive integers",
             Params::render(p.list("steps")));
    steps.push_back(static_cast<int>(s));
  }
  Curriculum c = Curriculum::multiscale(shape, steps, lr, p.d("lr_decay"), p.i("min_coarse"));
  for (Stage& s : c.stages) {
    s.anneal_fraction = p.d("anneal_fraction");
    s.lr_schedule = p.s("lr_schedule");
  }
  c.optim.optimizer = p.s("optimizer");
  c.optim.weight_decay = p.d("weight_decay");
  c.optim.grad_clip = p.d("grad_clip");
  c.validate();
  return c;
}

}  // namespace nefi
