#pragma once
// L-BFGS on a host vector: two-loop recursion over the last `history`
// curvature pairs, then a backtracking (Armijo) line search starting at step
// lr (the first iteration scales the direction to unit length). One step() is
// one L-BFGS iteration and calls the objective 1..max_evals times. Pairs with
// s.y <= 0 are skipped (keeps the inverse Hessian positive definite).
// Deterministic. The solver uses it with optimizer: lbfgs (no NaN guard, no
// clipping, no f16 autocast).
#include <deque>
#include <functional>
#include <vector>

namespace nefi {

class Lbfgs {
 public:
  // f(x, grad) -> value, filling grad.
  using Objective = std::function<double(const std::vector<double>& x, std::vector<double>& grad)>;
  explicit Lbfgs(int history = 20, int max_evals = 20) : history_(history), max_evals_(max_evals) {}
  // One iteration from x (updated in place); returns the objective at the new x.
  double step(const Objective& f, std::vector<double>& x, double lr);
  void reset();

 private:
  int history_, max_evals_;
  std::deque<std::vector<double>> s_, y_;
  std::vector<double> g_;  // gradient at x (valid after the first step)
  double fx_ = 0;
  bool have_ = false;
};

}  // namespace nefi
