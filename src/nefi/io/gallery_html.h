#pragma once
// The gallery page of `nefi gallery`: index.html, one section per instance
// (its summary, panel and history figures, a metrics table with each
// method's solve time and steps, the run's wall time, or the error that
// stopped it), with inline CSS and images referenced relative to the page;
// and gallery.json with the same numbers.
#include <map>
#include <string>
#include <vector>

namespace nefi {

struct GalleryMethod {
  std::string name;
  std::map<std::string, double> metrics;
  double total_s = 0;
  int steps = 0;
};

struct GalleryEntry {
  std::string instance, summary;
  std::string dir;                  // the run directory, relative to the page
  std::vector<std::string> images;  // relative to the page
  std::vector<GalleryMethod> methods;
  double wall_s = 0;
  std::string error;  // non-empty: the run failed
};

// Text with &, <, >, " and ' escaped for HTML.
std::string html_escape(const std::string& text);
std::string gallery_html(const std::vector<GalleryEntry>& entries, const std::string& title);
std::string gallery_json(const std::vector<GalleryEntry>& entries);

}  // namespace nefi
