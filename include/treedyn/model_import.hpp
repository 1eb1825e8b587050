// treedyn — models from other formats: URDF (through liburdfdom), MJCF (through MuJoCo's own
// compiler) and SDFormat (through libsdformat). Each format is read by its own library, so includes,
// defaults and inertia conventions are exactly the format's; treedyn maps the result (links,
// joints, inertias, gravity, loop-closing elements) onto a Model. docs/import.md lists the mapping
// and what is not modelled.
//
//   ImportedModel m = import_model_file("robot.urdf");
//   for (const auto& w : m.warnings) std::cerr << w << "\n";   // elements treedyn does not model
//   write_model_file(m.model, "robot.json");
//
// read_model_file (model_json.hpp) reads any of these formats by the file's extension.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "treedyn/model.hpp"
#include "treedyn/model_json.hpp"

namespace treedyn {

enum class ModelFormat { Json, Urdf, Mjcf, Sdf };

/// The format of a model file from its extension: .urdf -> URDF; .xml and .mjcf -> MJCF; .sdf ->
/// SDFormat; anything else (.json) -> treedyn's JSON.
ModelFormat model_format_of(const std::string& path);
const char* to_string(ModelFormat format);
/// Whether this build of treedyn can read the format (each needs its library at build time:
/// liburdfdom-dev, libmujoco-dev, libsdformat-dev). JSON always.
bool format_supported(ModelFormat format);

struct ImportOptions {
  /// Gravity when the file has none (URDF): ROS's convention, 9.81 m/s^2 along -z.
  Vec3 default_gravity{0.0, 0.0, -9.81};
  /// MJCF bodies with several joints that no single treedyn joint reproduces (hinges at
  /// different points, or not perpendicular) are joined through connector bodies, each carrying
  /// this fraction of the body's mass and inertia (taken from it). 0 refuses such bodies.
  double connector_mass_fraction = 1e-4;
};

struct ImportedModel {
  Model model;
  /// What the file holds that treedyn does not model (contacts, limits, damping, actuators,
  /// tendons, ...) and approximations made: one line per kind, each naming the elements.
  std::vector<std::string> warnings;
};

/// Reads a URDF, MJCF or SDFormat file (by its extension, as model_format_of). Throws ModelError
/// naming the file and the element: malformed XML (with its line), a moving link without mass, a
/// non-positive mass, an unknown joint type, a loop element naming an unknown link, a format this
/// build cannot read; and every problem ModelBuilder::build finds in the result. `overrides`
/// change the imported model's JSON document (model_json.hpp), which reads back exactly.
ImportedModel import_model_file(const std::string& path, const ImportOptions& options = {},
                                const std::vector<ModelOverride>& overrides = {});

ImportedModel import_urdf_file(const std::string& path, const ImportOptions& options = {});
ImportedModel import_mjcf_file(const std::string& path, const ImportOptions& options = {});
ImportedModel import_sdf_file(const std::string& path, const ImportOptions& options = {});

}  // namespace treedyn
