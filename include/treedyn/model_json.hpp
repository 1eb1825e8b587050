// treedyn — model files (JSON, comments allowed). The format is documented in
// docs/model-format.md. The reader goes through ModelBuilder, so a file and the equivalent builder
// calls produce the same Model; the writer emits the canonical form (frames on bodies), so
// write-then-read reproduces the Model exactly.
#pragma once

#include <string>

#include "treedyn/model.hpp"

namespace treedyn {

/// Parses a model from JSON text. `source` names the text in error messages (a file name).
/// Throws ModelError: JSON syntax (with line and column), unknown or mistyped fields, and every
/// problem build() finds.
Model parse_model_json(const std::string& text, const std::string& source = "<model>");

/// Reads a model file; throws ModelError (also when the file cannot be read).
Model read_model_file(const std::string& path);

/// Canonical JSON text of a model. Throws ModelError if the model holds a C++ callback function,
/// which has no JSON form.
std::string write_model_json(const Model& model);

void write_model_file(const Model& model, const std::string& path);

}  // namespace treedyn
