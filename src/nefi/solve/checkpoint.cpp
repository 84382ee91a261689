#include "nefi/solve/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "fk/error.h"
#include "fk/factory.h"
#include "fk/io/replace_file.h"

namespace nefi {
namespace {

constexpr char kMagic[8] = {'N', 'E', 'F', 'I', 'C', 'K', 'P', 'T'};
// 2 added the EMA shadow and L-BFGS's state after Adam's moments, 3 the run
// so far (its history after them); the reader goes by the header's keys, so
// an older file reads without them.
constexpr uint32_t kVersion = 3;

nlohmann::json describe(const std::vector<fk::Tensor>& ts) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& t : ts) {
    FK_CHECK(t.dtype() == fk::DType::F32 || t.dtype() == fk::DType::F64, "nefi::save_checkpoint",
             "f32/f64 tensors", fk::name(t.dtype()));
    a.push_back({{"dtype", fk::name(t.dtype())}, {"shape", t.shape().vec()}});
  }
  return a;
}

template <typename T>
void put(std::ostream& f, const T& v) {
  f.write(reinterpret_cast<const char*>(&v), sizeof(T));
}

template <typename T>
T get(std::istream& f, const std::string& path) {
  T v{};
  f.read(reinterpret_cast<char*>(&v), sizeof(T));
  FK_CHECK(f.good(), "nefi::load_checkpoint", "a complete checkpoint file", "a truncated " + path);
  return v;
}

// The shape a tensor description claims, checked before anything is
// allocated: at most kMaxDims non-negative dimensions whose byte size fits 63
// bits and the rest of the file holds (a header must not make the reader
// allocate what the file cannot back).
fk::Dims claimed_shape(const nlohmann::json& d, int64_t itemsize, std::istream& f,
                       const std::string& path) {
  const auto shape = d.at("shape").get<std::vector<int64_t>>();
  const std::string text = nlohmann::json(shape).dump();
  FK_CHECK(shape.size() <= static_cast<size_t>(fk::kMaxDims), "nefi::load_checkpoint",
           "tensors of at most " + fk::to_text(fk::kMaxDims) + " dimensions", text + " in " + path);
  int64_t spanned = 1, bytes = 0;
  bool fits = true, empty = false;
  for (int64_t s : shape) {
    fits = fits && s >= 0 && !__builtin_mul_overflow(spanned, std::max<int64_t>(s, 1), &spanned);
    empty = empty || s == 0;
  }
  fits = fits && !__builtin_mul_overflow(spanned, itemsize, &bytes);
  FK_CHECK(fits, "nefi::load_checkpoint", "non-negative dimensions whose size fits 63 bits",
           text + " in " + path);
  const std::streamoff here = f.tellg();
  f.seekg(0, std::ios::end);
  const std::streamoff left = f.tellg() - here;
  f.seekg(here);
  FK_CHECK(empty || bytes <= left, "nefi::load_checkpoint", "a complete checkpoint file",
           "a truncated " + path + " (a tensor of " + fk::to_text(bytes) + " bytes, " +
               fk::to_text(left) + " left)");
  return fk::Dims(shape);
}

std::vector<fk::Tensor> read_tensors(std::istream& f, const nlohmann::json& desc,
                                     const std::string& path, uint64_t& payload) {
  std::vector<fk::Tensor> out;
  for (const auto& d : desc) {
    const std::string dt = d.at("dtype").get<std::string>();
    FK_CHECK(dt == "f32" || dt == "f64", "nefi::load_checkpoint", "f32/f64 tensors",
             dt + " in " + path);
    const fk::DType dtype = dt == "f64" ? fk::DType::F64 : fk::DType::F32;
    fk::Tensor t =
        fk::empty(claimed_shape(d, static_cast<int64_t>(fk::itemsize(dtype)), f, path), {dtype});
    f.read(static_cast<char*>(t.data_ptr()), static_cast<std::streamsize>(t.nbytes()));
    FK_CHECK(f.good(), "nefi::load_checkpoint", "a complete checkpoint file",
             "a truncated " + path);
    payload += t.nbytes();
    out.push_back(std::move(t));
  }
  return out;
}

// A header count: a whole number in [0, max] (nlohmann would wrap 2^32 + 4
// to 4 and truncate 4.7 to 4 into an int).
int64_t header_count(const nlohmann::json& h, const char* key, const std::string& path,
                     int64_t max = std::numeric_limits<int>::max()) {
  const nlohmann::json& v = h.at(key);
  const bool whole = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
  FK_CHECK(whole && v.get<uint64_t>() <= static_cast<uint64_t>(max), "nefi::load_checkpoint",
           std::string(key) + " a whole number in [0, " + fk::to_text(max) + "]",
           v.dump() + " in " + path);
  return v.get<int64_t>();
}

// L-BFGS's vectors as f64 tensors: its pairs s and y (k rows of n, flat),
// rho, the last direction and gradient, and the iterate.
std::vector<fk::Tensor> lbfgs_tensors(const LbfgsState& st, const std::vector<double>& x) {
  auto flat = [](const std::vector<std::vector<double>>& rows) {
    std::vector<double> v;
    for (const auto& r : rows) v.insert(v.end(), r.begin(), r.end());
    return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())});
  };
  auto vec = [](const std::vector<double>& v) {
    return fk::from_vector(v, fk::Dims{static_cast<int64_t>(v.size())});
  };
  return {flat(st.s), flat(st.y), vec(st.rho), vec(st.d), vec(st.prev_g), vec(x)};
}

LbfgsState lbfgs_state(const nlohmann::json& h, const std::vector<fk::Tensor>& t,
                       const std::string& path, std::vector<double>& x) {
  LbfgsState st;
  st.t = h.at("t").get<double>();
  st.h_diag = h.at("h_diag").get<double>();
  st.n_iter = static_cast<int>(header_count(h, "n_iter", path));
  st.n_eval = static_cast<int>(header_count(h, "n_eval", path));
  FK_CHECK(t.size() == 6 && t[0].dtype() == fk::DType::F64, "nefi::load_checkpoint",
           "L-BFGS's six f64 vectors (s, y, rho, d, prev_g, x)",
           fk::to_text(t.size()) + " tensors in " + path);
  x = t[5].to_vector<double>();
  const auto s = t[0].to_vector<double>(), y = t[1].to_vector<double>();
  st.rho = t[2].to_vector<double>();
  st.d = t[3].to_vector<double>();
  st.prev_g = t[4].to_vector<double>();
  const size_t k = st.rho.size();
  FK_CHECK(s.size() == y.size() && (k == 0 ? s.empty() : s.size() % k == 0),
           "nefi::load_checkpoint", "L-BFGS pairs of one length, as many as rho's values",
           fk::to_text(s.size()) + " values of s, " + fk::to_text(y.size()) + " of y, " +
               fk::to_text(k) + " of rho in " + path);
  const size_t n = k == 0 ? 0 : s.size() / k;
  for (size_t i = 0; i < k; ++i) {
    st.s.emplace_back(s.begin() + i * n, s.begin() + (i + 1) * n);
    st.y.emplace_back(y.begin() + i * n, y.begin() + (i + 1) * n);
  }
  return st;
}

// A number JSON can hold: a non-finite one is written null and read as NaN.
nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}
double number_or_nan(const nlohmann::json& v) {
  return v.is_null() ? std::numeric_limits<double>::quiet_NaN() : v.get<double>();
}

nlohmann::json stage_json(const StageResult& s) {
  return {{"name", s.name},
          {"shape", s.shape.vec()},
          {"steps", s.steps},
          {"seconds", s.seconds},
          {"stop", s.stop},
          {"final_total", finite_or_null(s.final_total)},
          {"final_data_loss", finite_or_null(s.final_data_loss)},
          {"lr_mult", s.lr_mult},
          {"final_progress", s.final_progress},
          {"ops", s.ops},
          {"launches", s.launches},
          {"device_note", s.device_note},
          {"graph_steps", s.graph_steps}};
}

StageResult stage_result(const nlohmann::json& j, const std::string& path) {
  StageResult s;
  s.name = j.at("name").get<std::string>();
  s.shape = fk::Dims(j.at("shape").get<std::vector<int64_t>>());
  s.steps = static_cast<int>(header_count(j, "steps", path));
  s.seconds = j.at("seconds").get<double>();
  s.stop = j.at("stop").get<std::string>();
  s.final_total = number_or_nan(j.at("final_total"));
  s.final_data_loss = number_or_nan(j.at("final_data_loss"));
  s.lr_mult = j.at("lr_mult").get<double>();
  s.final_progress = j.at("final_progress").get<double>();
  s.ops = header_count(j, "ops", path, std::numeric_limits<int64_t>::max());
  s.launches = header_count(j, "launches", path, std::numeric_limits<int64_t>::max());
  s.device_note = j.at("device_note").get<std::string>();
  s.graph_steps = header_count(j, "graph_steps", path, std::numeric_limits<int64_t>::max());
  return s;
}

// The history's rows as one f64 tensor [rows, columns].
fk::Tensor history_tensor(const History& h) {
  std::vector<double> v;
  for (const auto& r : h.rows) {
    FK_CHECK(r.size() == h.columns.size(), "nefi::save_checkpoint",
             "history rows of " + fk::to_text(h.columns.size()) + " values",
             "one of " + fk::to_text(r.size()));
    v.insert(v.end(), r.begin(), r.end());
  }
  return fk::from_vector(
      v, fk::Dims{static_cast<int64_t>(h.rows.size()), static_cast<int64_t>(h.columns.size())});
}

// The header's "run" (the run so far) and its history tensor, checked: one
// summary for each stage before the checkpoint's, a history of rows as long
// as its named columns.
void read_run_so_far(const nlohmann::json& r, std::istream& f, const std::string& path,
                     uint64_t& payload, Checkpoint& ck) {
  const auto columns = r.at("history_columns").get<std::vector<std::string>>();
  const std::vector<fk::Tensor> t = read_tensors(f, r.at("history"), path, payload);
  FK_CHECK(t.size() == 1 && t[0].dtype() == fk::DType::F64 && t[0].dim() == 2 &&
               t[0].shape()[1] == static_cast<int64_t>(columns.size()),
           "nefi::load_checkpoint",
           "a history of f64 rows of " + fk::to_text(columns.size()) + " values",
           (t.empty() ? std::string("none") : t[0].shape().str()) + " in " + path);
  History h;
  h.columns = columns;
  const std::vector<double> v = t[0].to_vector<double>();
  const size_t n = columns.size();
  for (size_t i = 0; n > 0 && i < v.size(); i += n)
    h.rows.emplace_back(v.begin() + i, v.begin() + i + n);
  for (const auto& s : r.at("stages_done")) ck.stages_done.push_back(stage_result(s, path));
  FK_CHECK(ck.stages_done.size() == static_cast<size_t>(ck.stage), "nefi::load_checkpoint",
           "a summary of each of the " + fk::to_text(ck.stage) + " stages before the checkpoint's",
           fk::to_text(ck.stages_done.size()) + " in " + path);
  ck.history = std::move(h);
  ck.stage_steps = static_cast<int>(header_count(r, "stage_steps", path));
  ck.stage_seconds = r.at("stage_seconds").get<double>();
  ck.run_seconds = r.at("run_seconds").get<double>();
  ck.stage_ops = header_count(r, "stage_ops", path, std::numeric_limits<int64_t>::max());
  ck.stage_launches = header_count(r, "stage_launches", path, std::numeric_limits<int64_t>::max());
  ck.stage_graph_steps =
      header_count(r, "stage_graph_steps", path, std::numeric_limits<int64_t>::max());
  FK_CHECK(ck.stage_seconds >= 0 && ck.run_seconds >= 0, "nefi::load_checkpoint",
           "seconds >= 0 in the run so far",
           fk::to_text(ck.stage_seconds) + " and " + fk::to_text(ck.run_seconds) + " in " + path);
}

}  // namespace

void save_checkpoint(const std::string& path, const Checkpoint& ck) {
  FK_CHECK(ck.adam_m.size() == ck.adam_v.size(), "nefi::save_checkpoint",
           "as many second moments as first", fk::to_text(ck.adam_v.size()));
  const nlohmann::json h = {{"stage", ck.stage},
                            {"step", ck.step},
                            {"global_step", ck.global_step},
                            {"field_kind", ck.field_kind},
                            {"run_identity", ck.run_identity},
                            {"run_config", ck.run_identity_text},
                            {"stop", ck.stop},
                            {"since_best", ck.since_best},
                            {"lr_mult", ck.lr_mult},
                            {"adam_steps", ck.adam_steps},
                            {"params", describe(ck.params)},
                            {"adam_m", describe(ck.adam_m)},
                            {"adam_v", describe(ck.adam_v)},
                            {"ema", describe(ck.ema)}};
  // JSON has no inf or NaN: a non-finite number is left out (read back as
  // the default: an infinite best, a NaN loss).
  nlohmann::json full = h;
  for (const auto& [key, v] : {std::pair{"best_data_loss", ck.best_data_loss},
                               {"final_total", ck.final_total},
                               {"final_data_loss", ck.final_data_loss}})
    if (std::isfinite(v)) full[key] = v;
  if (ck.loss_scale > 0) {
    full["loss_scale"] = ck.loss_scale;
    full["loss_scale_tracker"] = ck.loss_scale_tracker;
  }
  const std::vector<fk::Tensor> lbfgs =
      ck.lbfgs ? lbfgs_tensors(*ck.lbfgs, ck.lbfgs_x) : std::vector<fk::Tensor>{};
  if (ck.lbfgs) {
    full["lbfgs"] = {{"t", ck.lbfgs->t},
                     {"h_diag", ck.lbfgs->h_diag},
                     {"n_iter", ck.lbfgs->n_iter},
                     {"n_eval", ck.lbfgs->n_eval},
                     {"tensors", describe(lbfgs)}};
  }
  const std::vector<fk::Tensor> history =
      ck.history ? std::vector<fk::Tensor>{history_tensor(*ck.history)} : std::vector<fk::Tensor>{};
  if (ck.history) {
    nlohmann::json done = nlohmann::json::array();
    for (const StageResult& s : ck.stages_done) done.push_back(stage_json(s));
    full["run"] = {{"history_columns", ck.history->columns},
                   {"history", describe(history)},
                   {"stages_done", done},
                   {"stage_steps", ck.stage_steps},
                   {"stage_seconds", ck.stage_seconds},
                   {"run_seconds", ck.run_seconds},
                   {"stage_ops", ck.stage_ops},
                   {"stage_launches", ck.stage_launches},
                   {"stage_graph_steps", ck.stage_graph_steps}};
  }
  const std::string header = full.dump();
  fk::replace_file(
      path,
      [&](const std::string& tmp) {
        std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
        FK_CHECK(f.good(), "nefi::save_checkpoint", "a writable path", path);
        f.write(kMagic, sizeof kMagic);
        put(f, kVersion);
        put(f, static_cast<uint64_t>(header.size()));
        f << header;
        uint64_t payload = 0;
        for (const auto* group : {&ck.params, &ck.adam_m, &ck.adam_v, &ck.ema, &lbfgs, &history})
          for (const auto& t : *group) {
            const fk::Tensor c = t.contiguous();
            f.write(static_cast<const char*>(c.data_ptr()),
                    static_cast<std::streamsize>(c.nbytes()));
            payload += c.nbytes();
          }
        put(f, payload);
        f.close();  // the last buffered bytes fail only here on a full disk
        FK_CHECK(!f.fail(), "nefi::save_checkpoint", "a successful write", path);
      },
      "nefi::save_checkpoint");
}

Checkpoint load_checkpoint(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  FK_CHECK(f.good(), "nefi::load_checkpoint", "a readable checkpoint file", path);
  char magic[sizeof kMagic];
  f.read(magic, sizeof magic);
  FK_CHECK(f.good() && std::memcmp(magic, kMagic, sizeof kMagic) == 0, "nefi::load_checkpoint",
           "a nefi checkpoint (NEFICKPT)", "another kind of file: " + path);
  const auto version = get<uint32_t>(f, path);
  FK_CHECK(version >= 1 && version <= kVersion, "nefi::load_checkpoint",
           "checkpoint format version 1 to " + fk::to_text(kVersion), fk::to_text(version));
  const auto len = get<uint64_t>(f, path);
  FK_CHECK(len < (uint64_t{1} << 26), "nefi::load_checkpoint", "a header under 64 MiB",
           fk::to_text(len) + " bytes in " + path);
  std::string header(len, '\0');
  f.read(header.data(), static_cast<std::streamsize>(len));
  FK_CHECK(f.good(), "nefi::load_checkpoint", "a complete checkpoint file", "a truncated " + path);
  nlohmann::json h;
  try {
    h = nlohmann::json::parse(header);
  } catch (const nlohmann::json::exception& e) {
    throw fk::Error("nefi::load_checkpoint", "a JSON header",
                    std::string(e.what()) + " in " + path);
  }
  Checkpoint ck;
  uint64_t payload = 0;
  try {
    ck.stage = static_cast<int>(header_count(h, "stage", path));
    ck.step = static_cast<int>(header_count(h, "step", path));
    ck.global_step = static_cast<int>(header_count(h, "global_step", path));
    ck.field_kind = h.at("field_kind").get<std::string>();
    // Absent from a checkpoint written before they were kept: the defaults.
    ck.run_identity = h.value("run_identity", std::string());
    ck.run_identity_text = h.value("run_config", std::string());
    ck.stop = h.value("stop", std::string());
    ck.since_best =
        h.contains("since_best") ? static_cast<int>(header_count(h, "since_best", path)) : 0;
    const double nan = std::numeric_limits<double>::quiet_NaN();
    ck.final_total = h.contains("final_total") ? h.at("final_total").get<double>() : nan;
    ck.final_data_loss =
        h.contains("final_data_loss") ? h.at("final_data_loss").get<double>() : nan;
    if (h.contains("best_data_loss")) ck.best_data_loss = h.at("best_data_loss").get<double>();
    ck.lr_mult = h.at("lr_mult").get<double>();
    ck.adam_steps = header_count(h, "adam_steps", path, std::numeric_limits<int64_t>::max());
    ck.params = read_tensors(f, h.at("params"), path, payload);
    ck.adam_m = read_tensors(f, h.at("adam_m"), path, payload);
    ck.adam_v = read_tensors(f, h.at("adam_v"), path, payload);
    if (h.contains("ema")) ck.ema = read_tensors(f, h.at("ema"), path, payload);
    ck.loss_scale = h.value("loss_scale", 0.0);
    ck.loss_scale_tracker = h.value("loss_scale_tracker", int64_t{0});
    if (h.contains("lbfgs")) {
      const nlohmann::json& l = h.at("lbfgs");
      ck.lbfgs = lbfgs_state(l, read_tensors(f, l.at("tensors"), path, payload), path, ck.lbfgs_x);
    }
    if (h.contains("run")) read_run_so_far(h.at("run"), f, path, payload, ck);
  } catch (const nlohmann::json::exception& e) {
    throw fk::Error("nefi::load_checkpoint", "a header with the checkpoint fields",
                    std::string(e.what()) + " in " + path);
  }
  const auto stored = get<uint64_t>(f, path);
  FK_CHECK(stored == payload, "nefi::load_checkpoint", fk::to_text(payload) + " payload bytes",
           fk::to_text(stored) + " in " + path);
  // Bytes past the count (two files written into one, a copy appended to)
  // were read as nothing, as minkowski's checkpoints refuse them.
  FK_CHECK(f.peek() == std::char_traits<char>::eof(), "nefi::load_checkpoint",
           "the file to end after its payload count", "more bytes in " + path);
  FK_CHECK(ck.stop.empty() || ck.stop == "early_stop" || ck.stop == "discrepancy",
           "nefi::load_checkpoint", "a stop of early_stop, discrepancy or none",
           "'" + ck.stop + "' in " + path);
  // (The counts were read whole and >= 0 by header_count.)
  FK_CHECK(std::isfinite(ck.lr_mult) && ck.lr_mult > 0 && std::isfinite(ck.loss_scale) &&
               ck.loss_scale >= 0 && ck.loss_scale_tracker >= 0,
           "nefi::load_checkpoint", "a header with lr_mult > 0 and loss_scale >= 0",
           "lr_mult " + fk::to_text(ck.lr_mult) + ", loss_scale " + fk::to_text(ck.loss_scale) +
               ", tracker " + fk::to_text(ck.loss_scale_tracker) + " in " + path);
  return ck;
}

}  // namespace nefi
