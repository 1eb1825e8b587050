// treedyn — result files of a simulation, written as the samples arrive (so a failed run keeps
// everything up to its failure):
//   trajectory.csv  t; per body: x y z, qw qx qy qz, vx vy vz, wx wy wz (global frame)
//   metrics.csv     t; energies and work; largest constraint errors at three levels; solver
//                   counters; per joint/driver: errors at three levels; per joint: reaction
//                   force and torque on the child at its joint frame (when the formulation
//                   computes them); per driver: its effort
//   summary.json    what run_simulation returned, and the model's name
#pragma once

#include <cstdio>
#include <string>

#include "treedyn/simulation.hpp"

namespace treedyn {

class ResultWriter : public SampleSink {
 public:
  /// Creates `directory` if needed; throws std::runtime_error if files cannot be opened. Refers to
  /// `model`, which must outlive the writer.
  ResultWriter(const Model& model, const std::string& directory);
  ResultWriter(const Model&&, const std::string&) = delete;  // keeps a reference: not to a temporary
  ~ResultWriter() override;
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  void write(const Snapshot& snapshot, const MetricsSample& metrics, const SolverStats& stats) override;
  /// Writes summary.json.
  void finish(const SimulationResult& result);
  const std::string& directory() const { return directory_; }

 private:
  void write_headers(bool with_reactions, bool with_efforts);

  const Model& model_;
  std::string directory_;
  std::FILE* trajectory_ = nullptr;
  std::FILE* metrics_ = nullptr;
  bool headers_written_ = false;
  bool with_reactions_ = false, with_efforts_ = false;
};

/// summary.json text for a result.
std::string summary_json(const Model& model, const SimulationResult& result);

}  // namespace treedyn
