#pragma once
// L-BFGS on a host vector with the semantics of torch.optim.LBFGS, which the
// reference's solver uses (optimizer: lbfgs): one step() runs up to max_iter
// iterations and max_eval objective evaluations; the first iteration ever
// starts at step min(1, 1/|g|₁)·lr along −g, later ones at lr along the
// two-loop direction. Curvature pairs with y·s <= 1e-10 are skipped. A step
// stops early when max|g| <= tolerance_grad, when the directional derivative
// is above −tolerance_change, or when the step (max|t·d|) or the loss change
// falls under tolerance_change. The history, the last direction and step
// length persist across step() calls (one optimizer per stage).
//
// line_search "strong_wolfe": Nocedal & Wright's bracketing and zoom
// (Alg. 3.5 / 3.6) with safeguarded cubic interpolation, c1 = 1e-4, c2 = 0.9,
// at most 25 evaluations, its bracket tolerance 1e-9 whatever tolerance_change
// is (torch's step() passes it none); "none": a fixed step t (one evaluation
// per iteration). Deterministic. The solver uses it without the NaN guard,
// clipping or f16 autocast.
#include <deque>
#include <functional>
#include <string>
#include <vector>

namespace nefi {

struct LbfgsOptions {
  int history = 20;
  int max_iter = 20;  // iterations per step()
  int max_eval = 0;   // objective evaluations per step(); 0: max_iter · 5 / 4
  double tolerance_grad = 1e-7;
  double tolerance_change = 1e-9;
  std::string line_search = "strong_wolfe";  // strong_wolfe | none

  int eval_cap() const { return max_eval > 0 ? max_eval : max_iter * 5 / 4; }
  void validate() const;  // throws fk::Error naming the bad option
};

// φ(t) = f(x + t d), filling the gradient of f at x + t d.
using DirectionalObjective = std::function<double(double t, std::vector<double>& grad)>;

struct LineSearchResult {
  double t = 0, f = 0;
  std::vector<double> g;  // gradient of f at x + t d
  int evals = 0;
};

// A step length along the descent direction d (g0·d = gtd0 < 0) from the
// trial t that meets the strong Wolfe conditions f(t) <= f0 + c1 t gtd0 and
// |g(t)·d| <= c2 |gtd0|, unless the bracket shrinks under tolerance_change or
// max_ls evaluations run out (then the best point found).
LineSearchResult strong_wolfe(const DirectionalObjective& phi, double f0,
                              const std::vector<double>& g0, const std::vector<double>& d, double t,
                              double gtd0, double tolerance_change = 1e-9, int max_ls = 25,
                              double c1 = 1e-4, double c2 = 0.9);

// What persists across step() calls: the curvature pairs (oldest first),
// the last direction, gradient and step length, the history's diagonal scale
// and the counts. A checkpoint keeps it, so a resumed L-BFGS run continues
// as the uninterrupted one.
struct LbfgsState {
  std::vector<std::vector<double>> s, y;
  std::vector<double> rho, d, prev_g;
  double t = 0, h_diag = 1;
  int n_iter = 0, n_eval = 0;
};

class Lbfgs {
 public:
  // f(x, grad) -> value, filling grad.
  using Objective = std::function<double(const std::vector<double>& x, std::vector<double>& grad)>;
  explicit Lbfgs(LbfgsOptions options = {});
  // Runs one step from x (updated in place); returns the objective at the
  // last evaluated point (with the line search: the accepted one).
  double step(const Objective& f, std::vector<double>& x, double lr);
  void reset();
  LbfgsState state() const;
  // Throws fk::Error unless `st` is a state of x's length `n` (pairs of n
  // values, at most the history's count, as many rho; d and prev_g of n
  // values or none).
  void restore(const LbfgsState& st, size_t n);
  int iterations() const { return n_iter_; }  // since the last reset
  int evaluations() const { return n_eval_; }

 private:
  void update_direction(const std::vector<double>& g);

  LbfgsOptions o_;
  std::deque<std::vector<double>> s_, y_;
  std::deque<double> rho_;
  std::vector<double> d_, prev_g_;
  double t_ = 0, h_diag_ = 1;
  int n_iter_ = 0, n_eval_ = 0;
};

}  // namespace nefi
