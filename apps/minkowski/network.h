#pragma once
// The network a `minkowski train` / `minkowski predict` command line names:
// --model minkunet (segmentation, layout --variant) or resnet14 / 18 / 34 / 50
// / 101 (shape classification, stage widths --planes), with 3 input channels.
#include <cstdint>
#include <memory>
#include <string>

#include "minkowski/nn/minkunet.h"
#include "minkowski/nn/module.h"
#include "minkowski/nn/resnet.h"

namespace minkowski_app {

struct NetworkChoice {
  std::string model = "minkunet";  // minkunet or resnet14, 18, 34, 50, 101
  std::string variant;             // MinkUNet layout (minkunet_options); empty: 14A
  std::string planes;              // ResNet stage widths "a,b,c,d"; empty: 64,128,256,512
  int64_t classes = 0;
};

// Whether `model` is one of the ResNet classifiers (one label per shape).
bool is_classifier(const std::string& model);
// Throws an fk::Error naming `command`'s --model unless it is minkunet or
// one of the ResNets.
void check_model(const std::string& model, const std::string& command);
// The ResNet of `n` (its --planes parsed; an error names `command`).
minkowski::nn::ResNetOptions resnet_options_of(const NetworkChoice& n, const std::string& command);
// The MinkUNet of a --variant (empty: 14A); an unknown one names `command`'s --variant.
minkowski::nn::MinkUNetOptions minkunet_options_of(const std::string& variant, int64_t classes,
                                                   const std::string& command);
// The checks make_network runs before building (an error names `command`'s
// option): for a command that reads files first.
void check_network_choice(const NetworkChoice& n, const std::string& command);
std::unique_ptr<minkowski::nn::SparseModule> make_network(const NetworkChoice& n,
                                                          const std::string& command);
// "MinkUNet14A", "ResNet18", ...
std::string network_name(const NetworkChoice& n);

}  // namespace minkowski_app
