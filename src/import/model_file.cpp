// Which reader a model file needs, from its extension.
#include <algorithm>
#include <cctype>
#include <filesystem>

#include "treedyn/model_import.hpp"

namespace treedyn {

ModelFormat model_format_of(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (ext == ".urdf") return ModelFormat::Urdf;
  if (ext == ".xml" || ext == ".mjcf") return ModelFormat::Mjcf;
  if (ext == ".sdf") return ModelFormat::Sdf;
  return ModelFormat::Json;
}

const char* to_string(ModelFormat format) {
  switch (format) {
    case ModelFormat::Json: return "JSON";
    case ModelFormat::Urdf: return "URDF";
    case ModelFormat::Mjcf: return "MJCF";
    case ModelFormat::Sdf: return "SDFormat";
  }
  return "?";
}

bool format_supported(ModelFormat format) {
  switch (format) {
    case ModelFormat::Json: return true;
#ifdef TREEDYN_HAVE_URDFDOM
    case ModelFormat::Urdf: return true;
#endif
#ifdef TREEDYN_HAVE_MUJOCO
    case ModelFormat::Mjcf: return true;
#endif
#ifdef TREEDYN_HAVE_SDFORMAT
    case ModelFormat::Sdf: return true;
#endif
    default: return false;
  }
}

namespace {

ImportedModel import_by_format(const std::string& path, const ImportOptions& options) {
  switch (model_format_of(path)) {
    case ModelFormat::Urdf: return import_urdf_file(path, options);
    case ModelFormat::Mjcf: return import_mjcf_file(path, options);
    case ModelFormat::Sdf: return import_sdf_file(path, options);
    case ModelFormat::Json: break;
  }
  throw ModelError(path + ": not a URDF (.urdf), MJCF (.xml, .mjcf) or SDFormat (.sdf) file; read treedyn's JSON with read_model_file");
}

}  // namespace

ImportedModel import_model_file(const std::string& path, const ImportOptions& options,
                                const std::vector<ModelOverride>& overrides) {
  ImportedModel imported = import_by_format(path, options);
  if (!overrides.empty()) imported.model = parse_model_json(write_model_json(imported.model), path, overrides);
  return imported;
}

}  // namespace treedyn
