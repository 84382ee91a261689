#pragma once
// The outline of a star-shaped polygon about its centre (the reference's
// polygon field), for shapes with corners and straight sides that the
// stars' smooth harmonics round off: V vertices at the fixed angles
// theta_j = 2 pi j / V in the shape's own frame u (its centre and matrix M
// place, stretch and turn it), vertex j at radius exp(c_j), straight edges
// between neighbours. Along the direction theta of u, in the sector
// theta_j <= theta < theta_j+1 (phi = theta - theta_j, D = 2 pi / V), the
// edge's radius is
//   r = r_j r_j+1 sin D / (r_j sin phi + r_j+1 sin(D - phi)),
// and h = log r is what the caller's profile reads, as the stars' log
// radius: q = |u|^2 exp(-2 h). At c = 0 the outline is the regular V-gon
// inscribed in the unit circle.
namespace nefi {

constexpr int kPolygonMinVertices = 3;
constexpr int kPolygonMaxVertices = 16;

// h at u (2 entries) for the V vertex log radii c. dh_du (2; null: the
// value alone) gets its gradient in u; dh_dc the two nonzero entries of its
// gradient in c, for vertices *first and (*first + 1) mod V. At u = 0 the
// direction is undefined: h and every derivative are 0 there; a non-finite
// u gives NaN.
double polygon_log_radius(int vertices, const double* u, const double* c, double* dh_du, int* first,
                          double* dh_dc);

// The vertices' log radius at which the regular V-gon has the unit
// circle's area, (1/2) log(2 pi / (V sin(2 pi / V))): a polygon starts
// there, so that opening its gate keeps the size its ellipse found (the
// inscribed V-gon has 0.41 of the area at V = 3, 0.83 at 6).
double polygon_start_log_radius(int vertices);

// The share of the polygon in the outline at `progress` in [0, 1]: a raised
// cosine from 0 to 1 over the first half, so a polygon starts as the
// ellipse its matrix draws, finds its place and size, then takes its
// corners (the outline's log radius is gate * h).
double polygon_gate(double progress);

}  // namespace nefi
