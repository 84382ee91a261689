#pragma once
// Reading point files into a PointCloud, each problem a one-line fk::Error
// naming the file (and the line or vertex):
//
//   .ply  ASCII or binary_little_endian, format 1.0; the vertex element must
//         come first and hold x, y, z (any scalar type), optionally
//         red/green/blue (uchar: /255; ushort: /65535; float: as is) and
//         label (or class, not both); other vertex properties are skipped,
//         list properties refused; later elements (faces) are ignored, and
//         without one, data past the declared vertices is an error.
//   .npy  N x 3 (x y z), N x 4 (+ label), N x 6 (+ r g b) or N x 7 (+ r g b
//         label), any real or integer dtype (fk::read_npy); positions keep
//         a double file's precision (point_cloud.h).
//   .xyz / .txt  one point per line: x y z, x y z label, x y z r g b or
//         x y z r g b label (colours in [0, 1]); every line the same width;
//         blank lines and lines starting with '#' are skipped.
//
// Errors: unknown extension, malformed header, a non-number, a missing value
// (truncated file), a NaN or infinite coordinate, a negative label other than
// -100, lines of different widths.
#include <string>

#include "minkowski/data/point_cloud.h"

namespace minkowski::data {

PointCloud read_points(const std::string& path);
// A point file's extension as read_points picks its reader: the file name's
// last one, lower case (".PLY" is .ply; a dot in a folder name is none).
std::string point_file_extension(const std::string& path);
PointCloud read_ply(const std::string& path);
PointCloud read_xyz(const std::string& path);
PointCloud read_npy_points(const std::string& path);

}  // namespace minkowski::data
