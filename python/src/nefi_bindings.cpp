// fieldkit._core.nefi: nefi's registered instances, solved as `nefi run` and
// benchmarked as `nefi bench` solve and benchmark them (the same config
// resolution: an instance's defaults or a YAML file, then KEY=VALUE sets),
// with results as numpy arrays and dicts, and N problems of one instance
// solved together by batch_invert. The GIL is released while C++ solves.
#include <nanobind/nanobind.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <filesystem>
#include <optional>
#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "fk/parallel.h"
#include "nefi/bench/campaign.h"
#include "nefi/bench/merge.h"
#include "nefi/bench/tables.h"
#include "nefi/bench/variants.h"
#include "nefi/instances/diagnose_instance.h"
#include "nefi/instances/instance.h"
#include "nefi/instances/run_method.h"
#include "nefi/io/run_config.h"
#include "nefi/solve/batch.h"
#include "nefi/tune/autotune_report.h"
#include "nefi_operators.h"
#include "nefi_result_dict.h"
#include "tensor_bridge.h"

namespace fkpy {
namespace {

nefi::RunConfig resolve(const std::string& target, const std::vector<std::string>& sets,
                        std::optional<uint64_t> seed) {
  // A directory named like an instance is not a config file (as the CLI).
  nefi::RunConfig cfg = nefi::is_config_file_target(target) ? nefi::load_run_config_file(target)
                                                            : nefi::default_run_config(target);
  for (const auto& s : sets) nefi::apply_set(cfg, s);
  if (seed) cfg.seed = *seed;
  return cfg;
}

nb::dict measurement_dict(const nefi::Measurement& m) {
  nb::dict d;
  d["data"] = numpy_or_none(m.data);
  d["mask"] = numpy_or_none(m.mask);
  d["noise_std"] = m.has_noise() ? nb::cast(m.noise_std) : nb::none();
  return d;
}

nb::dict output_dict(const nefi::RunOutput& o) {
  nb::dict d = solve_dict(o.result);
  d["method"] = o.method;
  d["measurement"] = measurement_dict(o.measurement);
  d["metrics"] = o.metrics;
  d["reconstruction"] = numpy_or_none(o.reconstruction);
  d["ground_truth"] = numpy_or_none(o.gt);
  d["data_fit"] = data_fit_dict(o.measurement, o.result.prediction);
  return d;
}

nb::dict run(const std::string& target, const std::vector<std::string>& sets,
             std::optional<uint64_t> seed, const std::vector<std::string>& methods) {
  nefi::RunConfig cfg = resolve(target, sets, seed);
  if (!methods.empty()) cfg.methods = methods;
  nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
  for (auto& m : cfg.methods) m = nefi::canonical_method(*inst, m, "run methods");
  for (const auto& m : cfg.methods)  // as nefi run: `neural` and its alias `nefi` are one method
    FK_CHECK(std::count(cfg.methods.begin(), cfg.methods.end(), m) == 1, "run methods",
             "each method once", "'" + m + "' twice");
  // All of the config's switches: the NaN guard, the step cap, cuda_graph,
  // run.device and the curriculum overrides.
  const nefi::SolverOptions so = nefi::solver_options(cfg);
  fk::check_usable(so.device, "run device (run.device)");
  std::vector<nefi::RunOutput> outs;
  {
    nb::gil_scoped_release nogil;
    for (const auto& m : cfg.methods) outs.push_back(inst->run(cfg.config, m, cfg.seed, so));
  }
  nb::dict d;
  d["instance"] = cfg.instance;
  d["seed"] = cfg.seed;
  d["config_yaml"] = nefi::to_yaml(cfg);
  nb::dict results;
  for (const auto& o : outs) {
    nb::dict r = output_dict(o);
    r["data_seed"] = cfg.seed;  // "seed" is the field's (run.init_seed, or a restart's)
    results[o.method.c_str()] = r;
  }
  d["results"] = results;
  return d;
}

struct BatchArgs {
  std::string method;
  std::vector<uint64_t> seeds, data_seeds;
  int chunk_size = 0;
  std::string loss_mode;
  bool raise_on_error = true;
  std::string device = "cpu";  // BatchOptions::device: cpu, cuda or cuda:N
};

// One problem per seed, built by Instance::setup as the batched benchmark
// builds them; each result is finished as `nefi run` finishes a solve.
nb::list batch(const std::string& target, const std::vector<std::string>& sets,
               const BatchArgs& a) {
  const nefi::RunConfig cfg = resolve(target, sets, std::nullopt);
  const nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
  FK_CHECK(cfg.data.empty(), "run.data",
           "no measured dataset in batch_invert (one problem per seed of the synthetic data; "
           "invert() solves a measured one)",
           "'" + cfg.data + "'");
  // A config file's run.seed would be dropped: seeds= (data_seeds=) give each problem's.
  FK_CHECK(cfg.seed == 0, "batch_invert run.seed",
           "no seed in the config (seeds= gives each problem's, data_seeds= its data's)",
           std::to_string(cfg.seed));
  FK_CHECK(!a.seeds.empty(), "batch_invert seeds", "at least one seed", "none");
  FK_CHECK(a.data_seeds.empty() || a.data_seeds.size() == a.seeds.size(), "batch_invert data_seeds",
           std::to_string(a.seeds.size()) + " (one per seed)", std::to_string(a.data_seeds.size()));
  // Before any problem is set up: a malformed or unusable device.
  const fk::Device device = fk::parse_device(a.device);
  fk::check_usable(device, "batch_invert device");
  const std::string method = nefi::canonical_method(*inst, a.method, "batch_invert method");
  std::vector<nefi::ProblemSetup> setups;
  std::vector<nefi::InverseProblem> problems;
  nefi::BatchOptions bo;
  bo.nan_guard = cfg.nan_guard;
  bo.checkpoint_every = static_cast<int>(cfg.checkpoint_every);
  bo.max_bad_steps = static_cast<int>(cfg.max_bad_steps);
  bo.raise_on_error = a.raise_on_error;
  bo.chunk_size = a.chunk_size;
  bo.loss_mode = a.loss_mode;
  // Each problem's start: the config's run.init_seed for all, as invert()
  // starts every seed's run from it; else its own seed.
  bo.seeds = cfg.init_seed ? std::vector<uint64_t>(a.seeds.size(), *cfg.init_seed) : a.seeds;
  bo.device = device;
  std::vector<nefi::Result> results;
  nefi::Curriculum cur;  // the one every problem ran
  {
    nb::gil_scoped_release nogil;
    for (size_t b = 0; b < a.seeds.size(); ++b) {
      const uint64_t data_seed = a.data_seeds.empty() ? a.seeds[b] : a.data_seeds[b];
      std::optional<nefi::ProblemSetup> s = inst->setup(cfg.config, method, data_seed);
      FK_CHECK(s.has_value(), "batch_invert method",
               "a method of " + cfg.instance + " that runs the solver loop", method);
      setups.push_back(std::move(*s));
      problems.push_back(setups.back().problem);
    }
    cur = nefi::run_curriculum(setups.front().curriculum, cfg.curriculum,
                               static_cast<int>(cfg.max_total_steps));
    results = nefi::batch_invert(problems, cur, bo);
  }
  nb::list out;
  for (size_t b = 0; b < results.size(); ++b) {
    const uint64_t data_seed = a.data_seeds.empty() ? a.seeds[b] : a.data_seeds[b];
    nefi::RunOutput o = nefi::start_run_output(method, setups[b].measurement, setups[b].gt);
    o.curriculum = cur;
    o.step_cap = static_cast<int>(cfg.max_total_steps);  // the refinement's too, as run()'s
    o.result = results[b];
    if (o.result.error.empty()) {  // finished and scored as run() does
      o.reconstruction = o.result.fields.at(problems[b].field->primary()).to(fk::DType::F64);
      nefi::finish_solved_output(*inst, cfg.config, setups[b].problem, data_seed, o);
    }
    nb::dict d = output_dict(o);
    d["data_seed"] = data_seed;
    d["batch_size"] = o.result.batch_size;
    d["error"] = o.result.error;
    out.append(d);
  }
  return out;
}

// The campaign bench(), sweep() and ablate() run (its methods aside).
nefi::bench::CampaignSpec campaign_spec(const std::string& target,
                                        const std::vector<std::string>& sets,
                                        const std::vector<std::string>& classes, int64_t n,
                                        const std::vector<uint64_t>& seeds, double budget_scale,
                                        bool allow_inverse_crime) {
  nefi::bench::CampaignSpec spec;
  spec.target = target;
  spec.sets = sets;
  spec.classes = classes;
  spec.n_samples = n;
  spec.seeds = seeds;
  spec.budget_scale = budget_scale;
  spec.allow_inverse_crime = allow_inverse_crime;
  return spec;
}

nb::list rows_list(const std::vector<nefi::bench::Row>& rows) {
  nb::list out;
  for (const auto& r : rows) {
    nb::dict d;
    d["unit"] = r.unit;
    d["method"] = r.method;
    d["class"] = r.cls;
    d["sample"] = r.sample;
    d["data_seed"] = r.data_seed;
    d["seed"] = r.seed;
    d["metrics"] = r.metrics;
    d["steps"] = r.steps;
    d["final_data_loss"] = r.final_data_loss;
    d["n_params"] = r.n_params;
    d["stop"] = r.stop;
    d["error"] = r.error;
    d["time_s"] = r.time_s;
    d["ms_per_step"] = r.ms_per_step;
    out.append(d);
  }
  return out;
}

nb::list bench(const nefi::bench::CampaignSpec& spec) {
  const nefi::bench::Protocol proto = nefi::bench::make_protocol(spec);
  const nefi::InstancePtr inst = nefi::find_instance(proto.instance);
  std::vector<nefi::bench::Row> rows;
  {
    nb::gil_scoped_release nogil;
    rows = nefi::bench::run_campaign(*inst, proto, nefi::bench::CampaignOptions{});
  }
  return rows_list(rows);
}

// `nefi ablate` (kind "ablate": modifiers) and `nefi sweep` (kind "sweep":
// axis and values) as one campaign per row of the base method, paired by
// unit: {rows (each row's method is its variant's label), variants (label,
// method, sets, modifiers), summary (summary.md's table)}.
struct VariantArgs {
  std::optional<std::string> base;
  std::string kind, axis;
  std::vector<std::string> values, modifiers;
  bool independent = false;
};

nb::dict variant_campaign(const nefi::bench::CampaignSpec& spec, const VariantArgs& a) {
  const nefi::RunConfig cfg = resolve(spec.target, spec.sets, std::nullopt);
  const nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
  const std::string method = a.base ? nefi::canonical_method(*inst, *a.base, a.kind + " base")
                                    : nefi::default_method(*inst);
  const std::vector<nefi::bench::Variant> variants =
      a.kind == "sweep"
          ? nefi::bench::sweep_variants(cfg, method, a.axis, a.values)
          : nefi::bench::ablation_variants(cfg, *inst, method, a.modifiers, a.independent);
  nefi::bench::VariantCampaign vc;
  {
    nb::gil_scoped_release nogil;
    vc = nefi::bench::run_variants(spec, variants, nefi::bench::CampaignOptions{});
  }
  nb::dict d;
  d["rows"] = rows_list(vc.rows);
  nb::list vs;
  for (const nefi::bench::Variant& v : variants) {
    nb::dict e;
    e["label"] = v.label;
    e["method"] = v.method;
    e["sets"] = v.sets;
    e["modifiers"] = v.modifiers;
    vs.append(e);
  }
  d["variants"] = vs;
  d["summary"] = nefi::bench::summary_md(vc.protocol, vc.rows, {});
  return d;
}

// The instance's method: the given one (the reference's names allowed), else
// the config's first, else the instance's default.
std::string study_method(const nefi::Instance& inst, const nefi::RunConfig& cfg,
                         const std::optional<std::string>& method, const std::string& who) {
  if (method) return nefi::canonical_method(inst, *method, who);
  return cfg.methods.empty() ? nefi::default_method(inst)
                             : nefi::canonical_method(inst, cfg.methods.front(), who);
}

struct DiagnoseArgs {
  std::optional<std::string> method;
  bool solve = false;
  nefi::diagnostics::DiagnoseOptions opt;
  std::string out;
  bool png = true;
};

nb::dict diagnose(const std::string& target, const std::vector<std::string>& sets,
                  std::optional<uint64_t> seed, const DiagnoseArgs& a) {
  const nefi::RunConfig cfg = resolve(target, sets, seed);
  const nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
  const std::string method = study_method(*inst, cfg, a.method, "diagnose method");
  nefi::diagnostics::Diagnostics d;
  {
    nb::gil_scoped_release nogil;
    d = nefi::diagnostics::diagnose_instance(*inst, cfg, method, a.solve, a.opt);
  }
  return diagnostics_dict(d, a.out, a.png);
}

// autotune.json's numbers as a dict, with `report` (autotune.md's text) and
// `tuned_config_yaml` (what `nefi run` and invert() reproduce); with a
// non-empty `out`, the three files of `nefi autotune` are written there too.
nb::dict autotune(const std::string& target, const std::vector<std::string>& sets,
                  std::optional<uint64_t> seed, const std::optional<std::string>& method_name,
                  const std::string& level, bool compare, const std::string& out) {
  const nefi::tune::LevelPlan plan = nefi::tune::level_plan(level, "autotune level");
  const nefi::RunConfig cfg = resolve(target, sets, seed);
  const nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
  const std::string method = study_method(*inst, cfg, method_name, "autotune method");
  if (!out.empty()) nefi::bench::prepare_out_dir(out, "autotune out");
  nefi::tune::AutotuneReport rep;
  {
    nb::gil_scoped_release nogil;
    rep = nefi::tune::autotune(*inst, cfg, method, plan);
    if (compare) rep.comparison = nefi::tune::compare(*inst, cfg, rep);
  }
  nb::dict d = json_dict(nefi::tune::autotune_json(rep));
  d["report"] = nefi::tune::autotune_md(rep, !out.empty());
  d["tuned_config_yaml"] = nefi::to_yaml(rep.tuned);
  if (out.empty())
    d.attr("pop")("tuned_config");  // no tuned_config.yaml written
  else
    d["files"] = nefi::tune::write_autotune(out, rep);
  return d;
}

}  // namespace

void bind_nefi_byop(nb::module_& m);
void bind_nefi_metrics(nb::module_& m);
void bind_nefi_operators(nb::module_& m);

void bind_nefi(nb::module_& parent) {
  nb::module_ m = parent.def_submodule("nefi", "nefi's inverse solvers, on fk");
  bind_nefi_operators(m);
  bind_nefi_byop(m);
  bind_nefi_metrics(m);
  m.def("instances", [] {
    nb::dict d;
    for (const auto& i : nefi::all_instances()) {
      nb::dict e;
      e["summary"] = i->summary();
      e["methods"] = i->methods();
      e["scenes"] = i->scenes();
      d[i->name().c_str()] = e;
    }
    return d;
  });
  m.def(
      "config_yaml",
      [](const std::string& target, const std::vector<std::string>& sets,
         std::optional<uint64_t> seed, const std::vector<std::string>& methods) {
        nefi::RunConfig cfg = resolve(target, sets, seed);
        if (!methods.empty()) {  // the methods invert() would run, as run() names them
          const nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
          cfg.methods.clear();
          for (const auto& m : methods)
            cfg.methods.push_back(nefi::canonical_method(*inst, m, "run methods"));
          for (const auto& m : cfg.methods)  // as run() refuses them
            FK_CHECK(std::count(cfg.methods.begin(), cfg.methods.end(), m) == 1, "run methods",
                     "each method once", "'" + m + "' twice");
        }
        return nefi::to_yaml(cfg);
      },
      nb::arg("target"), nb::arg("sets") = std::vector<std::string>{}, nb::arg("seed") = nb::none(),
      nb::arg("methods") = std::vector<std::string>{});
  m.def(
      "measurement",
      [](const std::string& target, const std::vector<std::string>& sets,
         std::optional<uint64_t> seed) {
        const nefi::RunConfig cfg = resolve(target, sets, seed);  // seed: else the config's
        // run.data (with run.mask, run.noise_std) in place of the synthetic
        // data, as invert() solves it: no ground truth then.
        const nefi::SolverOptions so = nefi::solver_options(cfg);
        auto [meas, gt] = nefi::measured_or(
            nefi::find_instance(cfg.instance)->make_measurement(cfg.config, cfg.seed),
            so.measured ? &*so.measured : nullptr);
        nb::dict d = measurement_dict(meas);
        d["ground_truth"] = numpy_or_none(gt);
        return d;
      },
      nb::arg("target"), nb::arg("sets"), nb::arg("seed").none());
  // The operator `method` inverts through for `seed` (the instance's own
  // solver method by default), and the field's grid: nefi.instance_operator.
  m.def(
      "instance_operator",
      [](const std::string& target, const std::vector<std::string>& sets,
         std::optional<uint64_t> seed, const std::string& method) {
        const nefi::RunConfig cfg = resolve(target, sets, seed);
        const nefi::InstancePtr inst = nefi::find_instance(cfg.instance);
        const std::string m = method.empty() ? nefi::default_method(*inst)
                                             : nefi::canonical_method(*inst, method, "method");
        std::optional<nefi::ProblemSetup> setup;
        {
          nb::gil_scoped_release nogil;
          setup = inst->setup(cfg.config, m, cfg.seed);
        }
        FK_CHECK(setup.has_value(), "instance_operator",
                 "a method of " + cfg.instance + " that solves one inverse problem", m);
        // The operator takes the primary field alone: a problem of several
        // fields (nv_relaxometry's rho and omega_L) would hand back a view
        // with the others fixed, which is not the model it solves.
        nefi::FieldMap fields;
        {
          nb::gil_scoped_release nogil;
          fk::autograd::NoGradGuard ng;
          fields = setup->problem.field->forward(setup->problem.domain, 1.0);
        }
        std::string names;
        for (const auto& [name, t] : fields) names += (names.empty() ? "" : ", ") + name;
        FK_CHECK(fields.size() == 1, "instance_operator",
                 "a method of " + cfg.instance + " that fits one field",
                 m + ", which fits " + names);
        return std::pair{NativeOperator{setup->problem.op}, setup->problem.domain.shape().vec()};
      },
      nb::arg("target"), nb::arg("sets"), nb::arg("seed").none(), nb::arg("method"));
  m.def("run", &run, nb::arg("target"), nb::arg("sets") = std::vector<std::string>{},
        nb::arg("seed") = nb::none(), nb::arg("methods") = std::vector<std::string>{});
  m.def(
      "bench",
      [](const std::string& target, const std::vector<std::string>& sets,
         const std::vector<std::string>& methods, const std::vector<std::string>& classes,
         int64_t n, const std::vector<uint64_t>& seeds, double budget_scale,
         bool allow_inverse_crime, const std::vector<std::string>& metrics) {
        nefi::bench::CampaignSpec spec =
            campaign_spec(target, sets, classes, n, seeds, budget_scale, allow_inverse_crime);
        spec.methods = methods;
        spec.metrics = metrics;
        return bench(spec);
      },
      nb::arg("target"), nb::arg("sets"), nb::arg("methods"), nb::arg("classes"), nb::arg("n"),
      nb::arg("seeds"), nb::arg("budget_scale"), nb::arg("allow_inverse_crime") = false,
      nb::arg("metrics") = std::vector<std::string>{});
  m.def(
      "batch_invert",
      [](const std::string& target, const std::vector<std::string>& sets, const std::string& method,
         const std::vector<uint64_t>& seeds, const std::vector<uint64_t>& data_seeds,
         int chunk_size, const std::string& loss_mode, bool raise_on_error,
         const std::string& device) {
        return batch(
            target, sets,
            BatchArgs{method, seeds, data_seeds, chunk_size, loss_mode, raise_on_error, device});
      },
      nb::arg("target"), nb::arg("sets"), nb::arg("method"), nb::arg("seeds"),
      nb::arg("data_seeds"), nb::arg("chunk_size"), nb::arg("loss_mode"), nb::arg("raise_on_error"),
      nb::arg("device") = "cpu");
  m.def(
      "diagnose",
      [](const std::string& target, const std::vector<std::string>& sets,
         std::optional<uint64_t> seed, std::optional<std::string> method, bool solve, int probes,
         int k, int n_iter, bool exact_sensitivity, const std::string& out, bool png, int hessian_k,
         int hessian_iter) {
        return diagnose(
            target, sets, seed,
            DiagnoseArgs{std::move(method),
                         solve,
                         {probes, k, n_iter, exact_sensitivity, 0, hessian_k, hessian_iter},
                         out,
                         png});
      },
      nb::arg("target"), nb::arg("sets"), nb::arg("seed").none(), nb::arg("method").none(),
      nb::arg("solve"), nb::arg("probes"), nb::arg("k"), nb::arg("n_iter"),
      nb::arg("exact_sensitivity"), nb::arg("out"), nb::arg("png"), nb::arg("hessian_k") = 0,
      nb::arg("hessian_iter") = 30);
  m.def("autotune", &autotune, nb::arg("target"), nb::arg("sets"), nb::arg("seed").none(),
        nb::arg("method").none(), nb::arg("level"), nb::arg("compare"), nb::arg("out"));
  m.def(
      "variant_campaign",
      [](const std::string& target, const std::vector<std::string>& sets,
         std::optional<std::string> base, const std::string& kind, const std::string& axis,
         const std::vector<std::string>& values, const std::vector<std::string>& modifiers,
         bool independent, const std::vector<std::string>& classes, int64_t n,
         const std::vector<uint64_t>& seeds, double budget_scale, bool allow_inverse_crime) {
        return variant_campaign(
            campaign_spec(target, sets, classes, n, seeds, budget_scale, allow_inverse_crime),
            VariantArgs{std::move(base), kind, axis, values, modifiers, independent});
      },
      nb::arg("target"), nb::arg("sets"), nb::arg("base").none(), nb::arg("kind"), nb::arg("axis"),
      nb::arg("values"), nb::arg("modifiers"), nb::arg("independent"), nb::arg("classes"),
      nb::arg("n"), nb::arg("seeds"), nb::arg("budget_scale"), nb::arg("allow_inverse_crime"));
  m.def("set_num_threads", &fk::set_num_threads, nb::arg("n"));
  m.def("get_num_threads", &fk::get_num_threads);
}

}  // namespace fkpy
