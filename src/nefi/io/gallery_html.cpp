#include "nefi/io/gallery_html.h"

#include <cmath>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace nefi {
namespace {

constexpr const char* kStyle =
    "body{font-family:'DejaVu Sans',sans-serif;margin:2em auto;max-width:1400px;color:#222}"
    "h1{font-size:1.6em}h2{font-size:1.25em;margin-top:2em;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #ccc;padding:.25em .6em;"
    "text-align:right}th:first-child,td:first-child{text-align:left}"
    "img{max-width:100%;display:block;margin:.6em 0;border:1px solid #eee}"
    ".err{color:#a00}.meta{color:#666}nav a{margin-right:1em}";

std::string metric_cell(const std::string& name, double v) {
  if (!std::isfinite(v)) return "–";
  if (name == "psnr") return fmt::format("{:.2f} dB", v);
  return fmt::format("{:.4g}", v);
}

std::string metrics_table(const GalleryEntry& e) {
  std::set<std::string> names;
  for (const auto& m : e.methods)
    for (const auto& [k, v] : m.metrics) names.insert(k);
  std::string s = "<table><tr><th>method</th>";
  for (const auto& n : names) s += "<th>" + html_escape(n) + "</th>";
  s += "<th>solve (s)</th><th>steps</th></tr>\n";
  for (const auto& m : e.methods) {
    s += "<tr><td>" + html_escape(m.name) + "</td>";
    for (const auto& n : names)
      s += "<td>" + (m.metrics.count(n) ? metric_cell(n, m.metrics.at(n)) : "–") + "</td>";
    s += fmt::format("<td>{:.3f}</td><td>{}</td></tr>\n", m.total_s, m.steps);
  }
  return s + "</table>\n";
}

}  // namespace

std::string html_escape(const std::string& text) {
  std::string s;
  for (char c : text) {
    switch (c) {
      case '&':
        s += "&amp;";
        break;
      case '<':
        s += "&lt;";
        break;
      case '>':
        s += "&gt;";
        break;
      case '"':
        s += "&quot;";
        break;
      case '\'':
        s += "&#39;";
        break;
      default:
        s += c;
    }
  }
  return s;
}

std::string gallery_html(const std::vector<GalleryEntry>& entries, const std::string& title) {
  double total = 0;
  for (const auto& e : entries) total += e.wall_s;
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" +
                  html_escape(title) + "</title><style>" + kStyle + "</style></head><body>\n<h1>" +
                  html_escape(title) + "</h1>\n" +
                  fmt::format("<p class=\"meta\">{} instances, {:.1f} s in all.</p>\n<nav>",
                              entries.size(), total);
  for (const auto& e : entries)
    s += "<a href=\"#" + html_escape(e.instance) + "\">" + html_escape(e.instance) + "</a>";
  s += "</nav>\n";
  for (const auto& e : entries) {
    s += "<section id=\"" + html_escape(e.instance) + "\"><h2>" + html_escape(e.instance) +
         "</h2>\n<p>" + html_escape(e.summary) + "</p>\n";
    if (!e.error.empty()) {
      s += "<p class=\"err\">failed: " + html_escape(e.error) + "</p></section>\n";
      continue;
    }
    s += metrics_table(e);
    s += fmt::format("<p class=\"meta\">run {:.2f} s, files in <a href=\"{}/\">{}</a></p>\n",
                     e.wall_s, html_escape(e.dir), html_escape(e.dir));
    for (const auto& img : e.images)
      s += "<img src=\"" + html_escape(img) + "\" alt=\"" + html_escape(e.instance + " " + img) +
           "\">\n";
    s += "</section>\n";
  }
  return s + "</body></html>\n";
}

std::string gallery_json(const std::vector<GalleryEntry>& entries) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& e : entries) {
    nlohmann::json x{{"instance", e.instance}, {"summary", e.summary}, {"dir", e.dir},
                     {"images", e.images},     {"wall_s", e.wall_s},   {"error", e.error}};
    x["methods"] = nlohmann::json::object();
    for (const auto& m : e.methods) {
      nlohmann::json metrics = nlohmann::json::object();
      for (const auto& [k, v] : m.metrics)
        metrics[k] = std::isfinite(v) ? nlohmann::json(v) : nlohmann::json();
      x["methods"][m.name] = {{"metrics", metrics}, {"total_s", m.total_s}, {"steps", m.steps}};
    }
    j.push_back(x);
  }
  // A byte that is not UTF-8 (an error naming a path in another encoding)
  // becomes U+FFFD: dump threw mid-write and left gallery.json empty.
  return nlohmann::json{{"instances", j}}.dump(2, ' ', false,
                                               nlohmann::json::error_handler_t::replace) +
         "\n";
}

}  // namespace nefi
