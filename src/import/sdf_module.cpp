// import_sdf_file in a shared libtreedyn: loads the SDFormat reader, libtreedyn_sdf.so (sdf.cpp),
// from libtreedyn's own directory the first time a .sdf file is read, so that libsdformat and
// ignition-math, whose start-up compiles about twenty std::regex, load only for SDFormat files.
#include <dlfcn.h>

#include <filesystem>

#include "treedyn/errors.hpp"
#include "treedyn/model_import.hpp"

namespace treedyn {
namespace {

using ReadSdf = void (*)(const std::string& path, ImportedModel& out);

struct SdfModule {
  std::string file;   // where it was looked for
  ReadSdf read = nullptr;
  std::string error;  // why it could not be loaded (read == nullptr)
};

/// The directory of the library this function is in (libtreedyn's), where the module is installed
/// beside it (and built beside it).
std::filesystem::path library_directory() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<const void*>(&library_directory), &info) == 0 || info.dli_fname == nullptr) return {};
  return std::filesystem::path(info.dli_fname).parent_path();
}

/// Loaded once, on first use, and never unloaded (libsdformat keeps static state).
const SdfModule& sdf_module() {
  static const SdfModule module = [] {
    SdfModule m;
    m.file = (library_directory() / TREEDYN_SDF_MODULE).string();
    void* handle = dlopen(m.file.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (handle == nullptr) {
      m.error = dlerror();
      return m;
    }
    m.read = reinterpret_cast<ReadSdf>(dlsym(handle, "treedyn_read_sdf"));
    if (m.read == nullptr) m.error = dlerror();
    return m;
  }();
  return module;
}

}  // namespace

ImportedModel import_sdf_file(const std::string& path, const ImportOptions&) {
  const SdfModule& module = sdf_module();
  if (module.read == nullptr)
    throw ModelError(path + ": reading SDFormat needs treedyn's module " + module.file + ", which could not be loaded (" +
                     module.error + "); it is built and installed beside libtreedyn: build or install treedyn again");
  ImportedModel out;
  module.read(path, out);
  return out;
}

}  // namespace treedyn
