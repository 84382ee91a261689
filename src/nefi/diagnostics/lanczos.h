#pragma once
// The leading singular values of a linear map known only through its
// products J v and J^T u (the linearized forward operator: nefi.md §2.9,
// "Lanczos on JVP/VJP"), by Golub–Kahan–Lanczos bidiagonalisation:
//   v1 random unit;  a1 u1 = J v1;
//   b_j v_{j+1} = J^T u_j - a_j v_j;  a_{j+1} u_{j+1} = J v_{j+1} - b_j u_j,
// each new vector re-orthogonalised against all earlier ones (full
// reorthogonalisation, two passes), so n_iter steps cost about n_iter products
// each way (a restart one J v more) and O(n_iter^2 (n + m)) flops; the last
// row's coupling b is taken too, so its value converges like the others. The singular values of B =
// U^T J V (a on the diagonal, b above; one-sided Jacobi) converge to J's largest first; with n_iter
// >= rank(J) they are exact to round-off. A breakdown (a or b below 1e-13 of the largest seen)
// means the start's Krylov space is invariant under J^T J: it holds one copy of each singular value
// it meets, so the iteration restarts from a random vector orthogonal to every v so far (the next
// copies of a repeated value lie there; the blocks of B decouple). A restart whose image is zero
// means J vanishes on all that is left (with probability one): that ends the iteration, every value
// found. Vectors are host f64; the start vector comes from std::mt19937_64(seed). For a symmetric
// map (a Hessian, hessian.h), extreme_eigenvalues runs the symmetric Lanczos recurrence with the
// same full reorthogonalisation (and the same orthogonal restart on a breakdown, so repeated
// eigenvalues are found once per copy) and reads the Ritz values of its tridiagonal by cyclic
// Jacobi rotations: both ends of the spectrum converge first. Memory: n_iter vectors of length n
// (and m) in either.
#include <cstdint>
#include <functional>
#include <vector>

namespace nefi::diagnostics {

using Vec = std::vector<double>;

struct LinearMap {
  int64_t n = 0;                           // input length (the field's cells)
  int64_t m = 0;                           // output length (the prediction's cells)
  std::function<Vec(const Vec&)> apply;    // J v, v of length n
  std::function<Vec(const Vec&)> adjoint;  // J^T u, u of length m
};

struct Spectrum {
  std::vector<double> singular_values;  // the k largest Ritz values, descending
  int iterations = 0;                   // bidiagonalisation steps taken
  bool invariant = false;               // J exhausted: the values are all there are
};

Spectrum leading_singular_values(const LinearMap& J, int k, int n_iter, uint64_t seed);

// All singular values (descending) of a small dense rows x cols matrix,
// row-major, by one-sided Jacobi rotations to round-off.
std::vector<double> dense_singular_values(std::vector<double> a, int rows, int cols);

// A symmetric map known only through its products H v (a Hessian).
struct SymmetricMap {
  int64_t n = 0;
  std::function<Vec(const Vec&)> apply;
};

struct Eigenvalues {
  std::vector<double> largest;   // up to k, descending
  std::vector<double> smallest;  // up to k, ascending
  int iterations = 0;
  bool invariant = false;  // the q's span the whole space (the Ritz values are exact)
};

// The extreme eigenvalues of H by symmetric Lanczos (q1 random unit from
// seed; b_j q_{j+1} = H q_j - a_j q_j - b_{j-1} q_{j-1}, each new vector
// re-orthogonalised twice against all earlier ones): the Ritz values of the
// tridiagonal (a, b), whose ends converge to H's first.
Eigenvalues extreme_eigenvalues(const SymmetricMap& H, int k, int n_iter, uint64_t seed);

// All eigenvalues (descending) of a small dense symmetric n x n matrix,
// row-major, by cyclic Jacobi rotations to round-off.
std::vector<double> dense_symmetric_eigenvalues(std::vector<double> a, int n);

}  // namespace nefi::diagnostics
