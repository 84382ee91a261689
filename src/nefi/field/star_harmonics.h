#pragma once
// The outline of a star-shaped region about its centre: its log radius
// along a direction n, h(n) = sum_j c_j g_l(j) Y_j(n), over the angular
// harmonics of degrees 3..L (the reference's star-shape field). Degrees 0,
// 1 and 2 are, to first order, the shape's size, a shift of its centre and
// a stretch, which the caller's centre and matrix M already hold: a fit
// that also had them wandered along those directions (the centre drifted
// off while degree 1 carried the shape back) and took four times the steps.
//   2-D  Y = sqrt(2) cos(l theta), sqrt(2) sin(l theta) per degree l
//        (2 per degree, 2 (L - 2) in all)
//   3-D  the real spherical harmonics of degree l, m = 0, then cos and sin
//        of m phi for m = 1..l (2 l + 1 per degree, (L + 1)^2 - 9 in all),
//        from the associated Legendre recurrence in n_z times the real and
//        imaginary parts of (n_x + i n_y)^m
// Both are polynomials in n scaled to mean square 1 over the circle or the
// sphere, so a coefficient is the log radius's RMS change whatever its
// degree. g_l in [0, 1] gates degree l (the caller opens the degrees one by
// one as the fit anneals: place and size first, detail last).
// The gradient in u (the point relative to the centre, n = u / |u|) comes
// from dual numbers carried through the same polynomials, so the value and
// its derivative cannot disagree.
namespace nefi {

// The outline's degrees run from kStarMinDegree to L <= kStarMaxDegree.
constexpr int kStarMinDegree = 3;
constexpr int kStarMaxDegree = 8;

// Harmonic coefficients of degrees 3..L in `ndim` dimensions (0 in 1-D).
int star_harmonic_count(int ndim, int degree);

// Degree l (3..L) of coefficient j.
int star_harmonic_degree(int ndim, int j);

// The L - 2 degree gates (degrees 3..L) at `progress` in [0, 1]: the i-th
// opens (a raised cosine from 0 to 1) while progress goes from i / (L - 2)
// to (i + 1) / (L - 2).
void star_degree_gates(int degree, double progress, double* gates);

// h at u (ndim entries) for coefficients c and degree gates (L - 2
// entries); dh_du (ndim; null: the value alone, in plain doubles) gets its
// gradient in u and basis (star_harmonic_count entries, required) the
// values Y_j(n). At u = 0
// the direction is undefined: h, dh_du and basis are 0 there.
double star_log_radius(int ndim, int degree, const double* u, const double* c, const double* gates,
                       double* dh_du, double* basis);

}  // namespace nefi
