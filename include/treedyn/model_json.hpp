// treedyn — model files (JSON, comments allowed). The format is documented in
// docs/model-format.md. The reader goes through ModelBuilder, so a file and the equivalent builder
// calls produce the same Model; the writer emits the canonical form (frames on bodies), so
// write-then-read reproduces the Model exactly.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "treedyn/model.hpp"

namespace treedyn {

/// Parses a model from JSON text. `source` names the text in error messages (a file name).
/// Throws ModelError: JSON syntax (with line and column), unknown or mistyped fields, and every
/// problem build() finds.
Model parse_model_json(const std::string& text, const std::string& source = "<model>");

/// Reads a model file; throws ModelError (also when the file cannot be read). A file ending in
/// .urdf, .xml/.mjcf or .sdf is imported (model_import.hpp); its import warnings (what the file
/// holds that treedyn does not model) are lost here: read it with the overload that takes
/// `import_warnings` to keep them.
Model read_model_file(const std::string& path);

/// A body's shape from its JSON object text ({"type": "cylinder", "radius": 0.02, ...}, as in a
/// model file), checked as the file reader checks it; `who` names it in errors (ModelError).
Shape parse_shape_json(const std::string& text, const std::string& who);
/// A load's frame by name, "global" or "body"; ModelError naming `who` otherwise.
LoadFrame load_frame_named(const std::string& name, const std::string& who);

/// A change to one value of a model document before it is read, addressed by path:
///   "gravity", "name", "simulation.t_end",
///   "bodies.<body>.<field>", "joints.<joint>.<field>", "forces.<element>.<field>",
///   "drivers.<driver>.<field>", and deeper fields ("bodies.arm.orientation.angle_deg",
///   "forces.motor.function.amplitude").
/// The value is JSON text ("2.5", "[0, 0, 1]", "\"revolute\""); text that is not JSON is taken as
/// a string (revolute). The model is then validated exactly as the file is, and a problem names
/// the override.
struct ModelOverride {
  std::string path;
  std::string value;
};

/// "PATH=VALUE" as an override; throws ModelError naming the text without an '='.
ModelOverride parse_override(const std::string& text);

/// As above, with `overrides` applied in order to the document before it is read. Throws
/// ModelError naming the override for an unknown path or item, and naming it beside the
/// validation problems its value causes.
Model parse_model_json(const std::string& text, const std::string& source, const std::vector<ModelOverride>& overrides);
Model read_model_file(const std::string& path, const std::vector<ModelOverride>& overrides);
/// As above; an imported file's warnings are appended to `import_warnings` (not null).
Model read_model_file(const std::string& path, const std::vector<ModelOverride>& overrides,
                      std::vector<std::string>* import_warnings);

/// Canonical JSON text of a model. Throws ModelError if the model holds a C++ callback function,
/// which has no JSON form.
std::string write_model_json(const Model& model);
/// The same text written to `out` as it is made, a body or joint at a time, for models too large
/// to hold their text whole (30 MB at 65,536 bodies). Throws as above (for a callback, before
/// anything is written); a failed write is left in out's state for the caller to check.
void write_model_json(const Model& model, std::ostream& out);

void write_model_file(const Model& model, const std::string& path);

}  // namespace treedyn
