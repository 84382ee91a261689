// fieldkit._core.nefi.ForwardProblem: a bring-your-own problem whose forward
// model is Python code (nefi/byop/auto_problem.h). The model's two functions
// are called from the solve with the GIL taken for the call only (the solve
// itself releases it); each receives a numpy f64 array it may keep, and
// what it returns is copied into fk storage before the GIL is given back.
// A Python exception inside the model ends the solve as a fieldkit.Error
// naming the function and carrying the exception's type and message.
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "fk/autograd.h"
#include "fk/device.h"
#include "fk/error.h"
#include "fk/factory.h"
#include "forward_problem.h"
#include "interrupt.h"
#include "nefi/byop/auto_batch.h"
#include "nefi/byop/auto_problem.h"
#include "nefi/byop/custom_prior.h"
#include "nefi/byop/prior.h"
#include "nefi/byop/quick_report.h"
#include "nefi/operators/function_operator.h"
#include "nefi_operators.h"
#include "nefi_result_dict.h"
#include "tensor_bridge.h"

namespace fkpy {
namespace {

// A Python callable whose last reference may be dropped on a thread without
// the GIL (a solve's copies of the operator): the deleter takes it.
using Callable = std::shared_ptr<nb::object>;
Callable hold(nb::object o) {
  return Callable(new nb::object(std::move(o)), [](nb::object* p) {
    nb::gil_scoped_acquire gil;
    delete p;
  });
}

// The array a model function returned, as fk-owned f64 (no view of the
// producer's buffer outlives the GIL).
fk::Tensor owned_f64(const nb::object& r, const std::string& who) {
  nb::ndarray<nb::ro> a;
  if (!nb::try_cast(r, a))
    throw fk::Error(who, "an array (numpy or anything speaking DLPack)",
                    "a " + nb::cast<std::string>(r.type().attr("__name__")));
  const fk::Tensor view = from_dlpack(a);
  fk::Tensor out = view.to(fk::DType::F64).contiguous();
  // Own the values (copied once: a conversion or gather already made new storage).
  return out.storage() == view.storage() ? out.clone() : out;
}

// "TypeError: message" of a Python exception (the GIL held).
std::string python_error_text(nb::python_error& e) {
  return nb::cast<std::string>(e.type().attr("__name__")) + ": " +
         nb::cast<std::string>(nb::str(e.value()));
}

// A Python exception from a model call as the fk::Error that names the
// model; Ctrl-C and SystemExit stop the solve as fk::Interrupted and reach
// Python as raised (interrupt.h).
// `what`: the Python code that was called ("a model call", "a callback").
[[noreturn]] void rethrow_as_model_error(const std::string& who,
                                         const std::string& what = "a model call") {
  try {
    throw;
  } catch (nb::python_error& e) {
    if (e.matches(PyExc_KeyboardInterrupt) || e.matches(PyExc_SystemExit)) interrupt_with(e);
    throw fk::Error(who, what + " that succeeds", python_error_text(e));
  } catch (const nb::builtin_exception& e) {  // a cast or DLPack refusal of what it returned
    throw fk::Error(who, what + " that returns real arrays", e.what());
  }
}

template <typename F>
fk::Tensor call_python(const std::string& who, F&& f) {
  nb::gil_scoped_acquire gil;
  try {
    return owned_f64(f(), who);
  } catch (const fk::Error&) {
    throw;
  } catch (...) {
    rethrow_as_model_error(who);
  }
}

// The fields as the Python list the model's wrapper takes (numpy f64 copies).
nb::list numpy_list(const std::vector<fk::Tensor>& xs) {
  nb::list l;
  for (const fk::Tensor& x : xs) l.append(to_numpy(x));
  return l;
}

nefi::ForwardModel python_model(Callable forward, Callable vjp, const std::string& name) {
  nefi::ForwardModel m;
  m.forward = [forward, name](const std::vector<fk::Tensor>& xs) {
    return call_python("forward model '" + name + "'", [&] { return (*forward)(numpy_list(xs)); });
  };
  m.vjp = [vjp, name](const std::vector<fk::Tensor>& xs, const fk::Tensor& g) {
    const std::string who = "vjp of forward model '" + name + "'";
    nb::gil_scoped_acquire gil;
    try {
      nb::object r = (*vjp)(numpy_list(xs), to_numpy(g));
      std::vector<fk::Tensor> out;
      for (nb::handle h : r) out.push_back(owned_f64(nb::borrow(h), who));
      return out;
    } catch (const fk::Error&) {
      throw;
    } catch (...) {
      rethrow_as_model_error(who);
    }
  };
  return m;
}

// A Python callable as a step callback: called after every step with a dict
// of the step's numbers; returning False ends the stage (anything else goes
// on). Its exceptions end the solve as the model's do.
nefi::StepCallback python_step_callback(Callable cb) {
  return [cb](const nefi::StepInfo& s) {
    nb::gil_scoped_acquire gil;
    try {
      nb::dict d;
      d["stage"] = s.stage;
      d["step"] = s.step;
      d["global_step"] = s.global_step;
      d["total_steps"] = s.total_steps;
      d["lr"] = s.lr;
      d["progress"] = s.progress;
      d["total"] = s.total;
      d["data_loss"] = s.data_loss;
      d["step_ms"] = s.step_ms;
      const nb::object r = (*cb)(d);
      return !(r.is(nb::bool_(false)));
    } catch (...) {
      rethrow_as_model_error("solve callback", "a callback");
    }
  };
}

// A Python penalty as a registered prior term: called as fn(x, want_grad)
// with the field as a numpy f64 array, it returns (value, gradient or None).
nefi::PenaltyFunction python_penalty(Callable fn, const std::string& name) {
  return [fn, name](const fk::Tensor& x, fk::Tensor* grad) {
    const std::string who = "prior term '" + name + "'";
    nb::gil_scoped_acquire gil;
    try {
      const nb::tuple r = nb::cast<nb::tuple>((*fn)(to_numpy(x), grad != nullptr));
      const double v = nb::cast<double>(r[0]);
      if (grad != nullptr) *grad = owned_f64(r[1], who);
      return v;
    } catch (const fk::Error&) {
      throw;
    } catch (nb::python_error& e) {
      // register_prior's own checks (a non-finite value or gradient) already
      // name the prior: their message goes through as it is.
      if (nb::cast<std::string>(e.type().attr("__module__")) == "fieldkit._core")
        throw fk::Error(nb::cast<std::string>(nb::str(e.value())));
      rethrow_as_model_error(who, "a penalty call");
    } catch (...) {
      rethrow_as_model_error(who, "a penalty call");
    }
  };
}

// The model's own parameters as f64 host copies (taken under a solve's lock:
// a waiting solve resets them and may move them to its device).
std::vector<fk::Tensor> operator_parameter_copies(const nefi::AutoProblem& ap) {
  std::vector<fk::Tensor> out;
  for (const fk::Tensor& t : ap.problem.op->parameters())
    out.push_back(t.detach().to(fk::kCPU).to(fk::DType::F64).contiguous().clone());
  return out;
}

// {name: array} from Python as f64 host copies (fields or ground truths).
nefi::FieldMap f64_fields(nb::dict d) {
  nefi::FieldMap m;
  for (const auto& [k, v] : d)
    m[nb::cast<std::string>(k)] =
        from_dlpack(nb::cast<nb::ndarray<nb::ro>>(v)).to(fk::DType::F64).contiguous().clone();
  return m;
}

// A solve's result as ForwardProblem.solve returns it: solve_dict with the
// primary field, prediction, data fit, the model's own parameters as the
// solve left them, the field's parameters (when given) and the report (a
// failed batch problem: its error).
nb::dict result_dict(const nefi::AutoProblem& ap, const nefi::Result& r, const std::string& report,
                     const fk::Tensor& field_parameters,
                     const std::vector<fk::Tensor>& operator_parameters) {
  nb::dict d = solve_dict(r);
  const auto x = r.fields.find(ap.fields.front());
  d["reconstruction"] =
      x == r.fields.end() ? nb::none() : numpy_or_none(x->second.to(fk::DType::F64));
  d["prediction"] =
      r.prediction.defined() ? numpy_or_none(r.prediction.to(fk::DType::F64)) : nb::none();
  d["data_fit"] =
      r.prediction.defined() ? data_fit_dict(ap.problem.measurement, r.prediction) : nb::none();
  nb::list fitted;
  for (const fk::Tensor& t : operator_parameters) fitted.append(to_numpy(t));
  d["operator_parameters"] = fitted;
  // The field's parameters as the solve left them (hessian_spectrum's `at`),
  // copied under the solve's lock; none for a batch (its fields started at
  // the batch's constants, another parameterization than the problem's).
  d["field_parameters"] = numpy_or_none(field_parameters);
  d["report"] = r.error.empty() ? report : "failed: " + r.error;
  return d;
}

fk::Dims dims(const std::vector<int64_t>& v) {
  return fk::Dims(v);
}

}  // namespace

void bind_nefi_byop(nb::module_& m) {
  nb::class_<ForwardProblem> problem(m, "ForwardProblem");
  problem
      .def_prop_ro("decisions",
                   [](const ForwardProblem& p) {
                     nb::list out;
                     for (const auto& d : p.ap.decisions) {
                       nb::dict e;
                       e["key"] = d.key;
                       e["value"] = d.value;
                       e["why"] = d.why;
                       out.append(e);
                     }
                     return out;
                   })
      .def_prop_ro("noise_std", [](const ForwardProblem& p) { return p.ap.noise_std; })
      .def_prop_ro("noise_estimated", [](const ForwardProblem& p) { return p.ap.noise_estimated; })
      .def_prop_ro("constant_fits", [](const ForwardProblem& p) { return p.ap.constant_fits; })
      .def_prop_ro("head_scales", [](const ForwardProblem& p) { return p.ap.head_scales; })
      .def_prop_ro("priors",
                   [](const ForwardProblem& p) {
                     std::vector<std::string> out;
                     for (const auto& pr : p.ap.priors) out.push_back(pr.str());
                     return out;
                   })
      .def_prop_ro("steps", [](const ForwardProblem& p) { return p.ap.curriculum.total_steps(); })
      // quick_report's ground-truth lines for fields a solve returned.
      .def(
          "ground_truth_lines",
          [](const ForwardProblem& p, nb::dict fields, nb::dict truths) {
            return nefi::ground_truth_lines(p.ap, f64_fields(fields), f64_fields(truths));
          },
          nb::arg("fields"), nb::arg("truths"))
      .def(
          "solve",
          [](const ForwardProblem& p, std::optional<uint64_t> seed, nb::dict truths,
             std::optional<int> steps, std::optional<double> lr, nb::object callback,
             const std::string& device) {
            const fk::Device dev = fk::parse_device(device);
            fk::check_usable(dev, "ForwardProblem.solve device");  // before any work
            nefi::AutoProblem ap = p.ap;
            if (seed) ap.seed = *seed;
            // `steps` replaces the total (split over the stages as decided,
            // each at least 1) and `lr` the first stage's rate (a later
            // stage keeps its decided ratio to it): a short probe
            // (lr_range_test) of a multiscale problem is the same solve, shorter.
            std::vector<nefi::Stage>& stages = ap.curriculum.stages;
            FK_CHECK(!steps || *steps >= static_cast<int>(ap.curriculum.stages.size()),
                     "ForwardProblem.solve steps",
                     "at least one step for each of the " +
                         std::to_string(ap.curriculum.stages.size()) + " stages",
                     std::to_string(steps.value_or(0)));
            const int decided_total = ap.curriculum.total_steps();
            const double decided_lr = stages.front().lr;
            int left = steps ? *steps : 0;
            for (size_t i = 0; i < stages.size(); ++i) {
              nefi::Stage& st = stages[i];
              if (steps) {
                // This stage's share, leaving each later stage at least one.
                const int later = static_cast<int>(stages.size() - i - 1);
                const double share = static_cast<double>(*steps) * st.steps / decided_total;
                st.steps = later == 0 ? left
                                      : std::clamp(static_cast<int>(std::lround(share)), 1,
                                                   std::max(1, left - later));
                left -= st.steps;
              }
              if (lr) st.lr = *lr * st.lr / decided_lr;
              st.lr_warmup = std::min(st.lr_warmup, st.steps - 1);
            }
            if (steps || lr) ap.curriculum.validate();
            const nefi::FieldMap gt = f64_fields(truths);
            nefi::check_ground_truth(ap, gt);  // before the solve, not after it
            nefi::SolverOptions so;
            so.device = dev;
            if (!callback.is_none()) so.callbacks.push_back(python_step_callback(hold(callback)));
            nefi::Result r;
            std::string report;
            fk::Tensor field_parameters;
            std::vector<fk::Tensor> operator_parameters;
            {
              nb::gil_scoped_release nogil;
              const OneSolveAtATime one_at_a_time(*p.solving, "ForwardProblem.solve");
              r = ap.solve(so);
              report = nefi::quick_report(ap, r, gt);
              field_parameters = ap.problem.field->params()
                                     .flat()
                                     .detach()
                                     .to(fk::DType::F64)
                                     .contiguous()
                                     .clone();
              operator_parameters = operator_parameter_copies(ap);
            }
            return result_dict(ap, r, report, field_parameters, operator_parameters);
          },
          nb::arg("seed") = nb::none(), nb::arg("ground_truth") = nb::dict(),
          nb::arg("steps") = nb::none(), nb::arg("lr") = nb::none(),
          nb::arg("callback") = nb::none(), nb::arg("device") = "cpu");
  bind_forward_problem_studies(problem);

  m.def(
      "batch_forward",
      [](const nb::list& items, int chunk_size, const std::string& loss_mode, bool raise_on_error,
         const std::string& device) {
        const fk::Device dev = fk::parse_device(device);
        fk::check_usable(dev, "batch_invert device");  // before any problem is rebuilt
        std::vector<const ForwardProblem*> ps;
        for (nb::handle h : items) ps.push_back(&nb::cast<const ForwardProblem&>(h));
        std::vector<nefi::AutoInput> inputs;
        std::vector<nefi::FittedStart> fits;  // each problem's own, from its build
        std::vector<const nefi::AutoProblem*> built;
        for (const ForwardProblem* p : ps) {
          inputs.push_back({p->op, p->shape, p->measurement, p->options});
          fits.push_back({p->ap.constant_fits, p->ap.head_scales});
          built.push_back(&p->ap);
        }
        std::vector<nefi::AutoProblem> aps;
        std::vector<nefi::Result> results;
        std::vector<std::string> reports;
        {
          nb::gil_scoped_release nogil;
          // Each problem's lock, in one order (two batches sharing problems never deadlock).
          std::vector<SolvingLock*> locks;
          for (const ForwardProblem* p : ps) locks.push_back(p->solving.get());
          std::sort(locks.begin(), locks.end());
          locks.erase(std::unique(locks.begin(), locks.end()), locks.end());
          std::vector<std::unique_ptr<OneSolveAtATime>> held;
          for (SolvingLock* l : locks)
            held.push_back(std::make_unique<OneSolveAtATime>(*l, "batch_invert"));
          nefi::BatchOptions bo;
          bo.chunk_size = chunk_size;
          bo.loss_mode = loss_mode;
          bo.raise_on_error = raise_on_error;
          bo.device = dev;
          nefi::check_device_batch(built, bo);  // before the rebuild's fits and probes
          aps = nefi::shared_start_problems(inputs, fits);
          results = nefi::solve_together(aps, bo);
          for (size_t i = 0; i < aps.size(); ++i)
            reports.push_back(results[i].error.empty() ? nefi::quick_report(aps[i], results[i], {})
                                                       : "");
        }
        nb::list out;
        for (size_t i = 0; i < aps.size(); ++i) {
          nb::dict d = result_dict(aps[i], results[i], reports[i], fk::Tensor(),
                                   operator_parameter_copies(aps[i]));
          d["error"] = results[i].error;
          d["batch_size"] = results[i].batch_size;
          out.append(d);
        }
        return out;
      },
      nb::arg("problems"), nb::arg("chunk_size"), nb::arg("loss_mode"), nb::arg("raise_on_error"),
      nb::arg("device"));
  m.def(
      "register_prior",
      [](const std::string& name, nb::object fn) {
        nefi::register_prior_term(name, python_penalty(hold(std::move(fn)), name));
      },
      nb::arg("name"), nb::arg("fn"));
  m.def("unregister_prior", &nefi::unregister_prior_term, nb::arg("name"));
  // The values a prior's head gives the field, (head, lo, hi): from_forward's
  // dry run draws each field within them (a Python model of a diffusivity
  // need not take negative values).
  // A bad prior is refused as auto_problem refuses it (naming the field of
  // a problem of several).
  m.def(
      "prior_values",
      [](const std::string& text, const std::string& field) {
        try {
          const nefi::PriorSpec spec = nefi::parse_prior(text);
          return std::make_tuple(spec.head, spec.lo, spec.hi);
        } catch (const fk::Error& e) {
          if (field.empty()) throw;
          throw fk::Error("prior of field '" + field + "'", e.expected(), e.given());
        }
      },
      nb::arg("prior"), nb::arg("field") = "");
  m.def("registered_priors", &nefi::registered_prior_terms);
  m.def(
      "auto_problem",
      [](nb::object forward, nb::object vjp, const std::vector<int64_t>& shape,
         nb::ndarray<nb::ro> data, std::optional<nb::ndarray<nb::ro>> mask,
         std::optional<double> homogeneity, const std::string& name,
         const std::vector<std::string>& names, const std::vector<std::string>& priors,
         std::optional<double> noise_std, const std::vector<double>& extent,
         const std::string& representation, const std::string& budget, std::optional<double> lr,
         std::optional<int> hidden, std::optional<int> depth, std::optional<int> n_octaves,
         bool discrepancy, double discrepancy_tau, uint64_t seed, bool multiscale, int rank,
         int shapes, int harmonics, int layers, int layer_axis, int modes, double smoothness,
         int vertices, const std::map<std::string, nb::ndarray<nb::ro>>& supports,
         const std::vector<nb::ndarray<nb::ro>>& parameters) {
        nefi::Measurement meas;
        meas.data = from_dlpack(data).to(fk::DType::F64).contiguous().clone();
        if (mask) meas.mask = from_dlpack(*mask).to(fk::DType::F64).contiguous().clone();
        const fk::Dims in = dims(shape);
        FK_CHECK(!names.empty() && names.size() == priors.size(), "from_forward fields",
                 "one prior per field name",
                 std::to_string(names.size()) + " names and " + std::to_string(priors.size()) +
                     " priors");
        // A built-in operator runs as it is; Python code through its functions.
        nefi::OperatorPtr op;
        if (nb::isinstance<NativeOperator>(forward))
          op = nb::cast<const NativeOperator&>(forward).op;
        else {
          std::vector<fk::Tensor> start;  // a torch module's trainable parameters
          for (const auto& p : parameters)
            start.push_back(from_dlpack(p).to(fk::DType::F64).contiguous().clone());
          op = std::make_shared<nefi::FunctionOperator>(
              in, meas.data.shape(), python_model(hold(forward), hold(vjp), name), homogeneity,
              name, names, start);
        }
        nefi::AutoOptions o;
        if (names.size() == 1 && names[0] == "x")
          o.prior = priors[0];
        else
          for (size_t i = 0; i < names.size(); ++i)
            o.field_priors.emplace_back(names[i], priors[i]);
        o.extent = extent;
        o.representation = representation;
        o.noise_std = noise_std;
        o.budget = budget;
        o.lr = lr;
        o.hidden = hidden;
        o.depth = depth;
        o.n_octaves = n_octaves;
        o.discrepancy = discrepancy;
        o.discrepancy_tau = discrepancy_tau;
        o.seed = seed;
        o.multiscale = multiscale;
        o.rank = rank;
        o.shapes = shapes;
        o.harmonics = harmonics;
        o.vertices = vertices;
        o.layers = layers;
        o.layer_axis = layer_axis;
        o.modes = modes;
        o.smoothness = smoothness;
        for (const auto& [field, mask] : supports)
          o.supports[field] = from_dlpack(mask).to(fk::DType::F64).contiguous().clone();
        ForwardProblem p;
        // The GIL stays held: the constant fit calls the model from here.
        p.ap = nefi::auto_problem(op, in, meas, o);
        p.op = op;
        p.shape = in;
        p.measurement = meas;
        p.options = o;
        return p;
      },
      nb::arg("forward"), nb::arg("vjp"), nb::arg("shape"), nb::arg("data"), nb::arg("mask"),
      nb::arg("homogeneity"), nb::arg("name"), nb::arg("names"), nb::arg("priors"),
      nb::arg("noise_std"), nb::arg("extent"), nb::arg("representation"), nb::arg("budget"),
      nb::arg("lr"), nb::arg("hidden"), nb::arg("depth"), nb::arg("n_octaves"),
      nb::arg("discrepancy"), nb::arg("discrepancy_tau"), nb::arg("seed"),
      nb::arg("multiscale") = false, nb::arg("rank") = 8, nb::arg("shapes") = 4,
      nb::arg("harmonics") = 6, nb::arg("layers") = 3, nb::arg("layer_axis") = 0,
      nb::arg("modes") = 0, nb::arg("smoothness") = 2.0, nb::arg("vertices") = 6,
      nb::arg("supports") = std::map<std::string, nb::ndarray<nb::ro>>{},
      nb::arg("parameters") = std::vector<nb::ndarray<nb::ro>>{});
}

}  // namespace fkpy
