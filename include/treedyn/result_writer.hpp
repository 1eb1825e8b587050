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
  /// Creates `directory` if needed and removes what an earlier run wrote there (its CSVs,
  /// summary.json, plots.gp and the plots it names), so that no stale file sits beside the new
  /// run's; throws std::runtime_error if files cannot be opened. Refers to
  /// `model`, which must outlive the writer.
  ResultWriter(const Model& model, const std::string& directory);
  ResultWriter(const Model&&, const std::string&) = delete;  // keeps a reference: not to a temporary
  ~ResultWriter() override;
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  /// Appends one sample; throws std::runtime_error naming the file and the system's error when a
  /// write fails (run_simulation then ends the run "failed" with that message).
  void write(const Snapshot& snapshot, const MetricsSample& metrics, const SolverStats& stats) override;
  /// Closes the CSVs and writes summary.json atomically. Throws std::runtime_error if a write
  /// fails (for a run that was ok; a failed run's own message already says what went wrong).
  void finish(const SimulationResult& result);
  const std::string& directory() const { return directory_; }

 private:
  void write_headers(bool with_reactions, bool with_efforts);
  /// Closes both CSVs; after a failed write, cuts them back to the last sample written whole.
  void close_files();

  const Model& model_;
  std::string directory_;
  std::FILE* trajectory_ = nullptr;
  std::FILE* metrics_ = nullptr;
  long trajectory_good_ = 0, metrics_good_ = 0;  // bytes of whole rows written and flushed
  bool headers_written_ = false;
  bool with_reactions_ = false, with_efforts_ = false;
};

/// Writes `text` to `path` whole or not at all (a temporary file beside it, then renamed over it);
/// throws std::runtime_error naming the file and the system's error.
void write_file_atomically(const std::string& path, const std::string& text);

/// summary.json text for a result.
std::string summary_json(const Model& model, const SimulationResult& result);

}  // namespace treedyn
