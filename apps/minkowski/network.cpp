#include "network.h"

#include <algorithm>
#include <sstream>
#include <vector>

#include "fk/error.h"
#include "minkowski/nn/minkunet.h"

namespace minkowski_app {

using namespace minkowski;

bool is_classifier(const std::string& model) {
  return model == "resnet14" || model == "resnet18" || model == "resnet34" || model == "resnet50" ||
         model == "resnet101";
}

void check_model(const std::string& model, const std::string& command) {
  FK_CHECK(model == "minkunet" || is_classifier(model), command + " --model",
           "minkunet, resnet14, resnet18, resnet34, resnet50 or resnet101", "'" + model + "'");
}

nn::ResNetOptions resnet_options_of(const NetworkChoice& n, const std::string& command) {
  nn::ResNetOptions r = nn::resnet_options(n.model.substr(6), 3, n.classes, 3);
  if (n.planes.empty()) return r;
  std::vector<int64_t> widths;
  std::stringstream list(n.planes);
  for (std::string item; std::getline(list, item, ',');) {
    size_t used = 0;
    int64_t w = 0;
    try {
      w = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    FK_CHECK(used > 0 && used == item.size() && w > 0, command + " --planes",
             "four positive widths a,b,c,d", "'" + n.planes + "'");
    widths.push_back(w);
  }
  FK_CHECK(widths.size() == 4, command + " --planes", "four positive widths a,b,c,d",
           "'" + n.planes + "'");
  std::copy(widths.begin(), widths.end(), r.planes.begin());
  r.init_dim = widths[0];
  return r;
}

nn::MinkUNetOptions minkunet_options_of(const std::string& variant, int64_t classes,
                                        const std::string& command) {
  try {
    return nn::minkunet_options(variant.empty() ? "14A" : variant, 3, classes, 3);
  } catch (const fk::Error& e) {  // named by the option, not the library function
    throw fk::Error(command + " --variant", e.expected(), e.given());
  }
}

void check_network_choice(const NetworkChoice& n, const std::string& command) {
  check_model(n.model, command);
  // Each option shapes one architecture; given to the other it would be
  // ignored without a word (14A too: an empty variant is the one not given).
  FK_CHECK(!is_classifier(n.model) || n.variant.empty(), command + " --variant",
           "no --variant with a ResNet (its widths are --planes)", "'" + n.variant + "'");
  FK_CHECK(is_classifier(n.model) || n.planes.empty(), command + " --planes",
           "no --planes with minkunet (its layout is --variant)", "'" + n.planes + "'");
  if (is_classifier(n.model))
    (void)resnet_options_of(n, command);
  else
    (void)minkunet_options_of(n.variant, std::max<int64_t>(n.classes, 1), command);
}

std::unique_ptr<nn::SparseModule> make_network(const NetworkChoice& n, const std::string& command) {
  check_network_choice(n, command);
  if (is_classifier(n.model)) return std::make_unique<nn::ResNet>(resnet_options_of(n, command));
  return std::make_unique<nn::MinkUNet>(minkunet_options_of(n.variant, n.classes, command));
}

std::string network_name(const NetworkChoice& n) {
  return is_classifier(n.model) ? "ResNet" + n.model.substr(6)
                                : "MinkUNet" + (n.variant.empty() ? "14A" : n.variant);
}

}  // namespace minkowski_app
