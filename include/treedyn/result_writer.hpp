// treedyn — result files of a simulation, written as the samples arrive (so a failed run keeps
// everything up to its failure). Every column is named "<name> [<SI unit>]" ("-" for none):
//   trajectory.csv  t; per body: x y z, qw qx qy qz, vx vy vz, wx wy wz (global frame)
//   metrics.csv     t; energies and work; largest constraint errors at three levels; solver
//                   counters; per joint/driver: errors at three levels; per joint: reaction
//                   force and torque on the child at its joint frame (when the formulation
//                   computes them); per driver: its effort; per force element: its length or
//                   angle and its force or torque
//   joints.csv      t; every joint coordinate, then every rate, in each joint's own sense
//                   (CoordinateMap: crank angle, slider travel), then each joint's reaction on its
//                   child in the axes of its child frame (when computed); when a map is given
//   summary.json    what run_simulation returned, the model's name, and what was written
//   model.json      the model (canonical JSON; not for a model holding C++ callbacks), which
//                   `treedyn view` draws
#pragma once

#include <cstdio>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "treedyn/coordinate_map.hpp"
#include "treedyn/simulation.hpp"

namespace treedyn {

/// Csv: text, one row per line, a header line of "name [unit]" cells. Npy: NumPy's binary .npy
/// (float64 matrices, one row per sample; numpy.load reads them, gnuplot too), the column names in
/// columns.json; about 2.5 times smaller and exact.
enum class OutputFormat { Csv, Npy };

/// Bytes of a .npy file's header as ResultWriter writes it (fixed, so that it is rewritten in place).
inline constexpr std::size_t kNpyHeaderBytes = 128;

class ResultWriter : public SampleSink {
 public:
  /// Creates `directory` if needed and removes what an earlier run wrote there (its CSVs,
  /// summary.json, model.json, viewer.html, plots.gp and the plots it names), so that no stale
  /// file sits beside the new run's, then writes model.json; throws std::runtime_error if files
  /// cannot be opened. Refers to `model` and to `coordinates` (optional: joints.csv is written
  /// only with one), which must outlive the writer.
  ResultWriter(const Model& model, const std::string& directory, const CoordinateMap* coordinates = nullptr,
               OutputFormat format = OutputFormat::Csv);
  ResultWriter(const Model&&, const std::string&, const CoordinateMap* = nullptr, OutputFormat = OutputFormat::Csv) = delete;
  ~ResultWriter() override;
  ResultWriter(const ResultWriter&) = delete;
  ResultWriter& operator=(const ResultWriter&) = delete;

  /// Writes only every k-th sample it receives, and the last (held until finish): decimation of
  /// the files, not of the run, whose metrics and maxima still see every sample. k >= 1.
  void set_write_every(int k);
  /// Rows a sample takes in the files, in bytes, estimated from the model's size (for choosing k).
  double bytes_per_sample() const;

  /// Appends one sample; throws std::runtime_error naming the file and the system's error when a
  /// write fails (run_simulation then ends the run "failed" with that message).
  void write(const Snapshot& snapshot, const MetricsSample& metrics, const SolverStats& stats) override;
  /// Writes the sample held back by decimation, closes the CSVs and writes summary.json
  /// atomically. Throws std::runtime_error if a write fails (for a run that was ok; a failed
  /// run's own message already says what went wrong).
  void finish(const SimulationResult& result);
  /// Empties the files for a run made again from its start (RunOptions::choose_step).
  bool restart() override;
  const std::string& directory() const { return directory_; }
  long rows_written() const { return rows_; }

 private:
  struct Output {
    std::string path;
    std::FILE* file = nullptr;
    long good = 0;                 // bytes of whole rows written and flushed
    std::size_t columns = 0;       // in the header
    std::string text;              // CSV text on its way to the file, a piece at a time (reused)
    int error = 0;                 // the system's error of the first write that failed, if any
  };
  struct Held {
    Snapshot snapshot;
    MetricsSample metrics;
    SolverStats stats;
  };
  /// Calls column(table, pieces, unit) for every column in order: out_[table] gets the column
  /// named by the pieces put together, "<pieces> [<unit>]" (built by no one: a 65,536-body run's
  /// 1.3 million names as strings cost 1 KB of memory a body and a second to write).
  template <class Column>
  void visit_columns(bool with_reactions, bool with_efforts, Column&& column) const;
  void write_headers(bool with_reactions, bool with_efforts);
  /// One row of every file; joints.csv's angles unwrapped against `reference` (none: the first
  /// sample), and reference_ then becomes the row's q where there are angles (without, no
  /// reference is held or read: a ball-joint chain's would be 32 bytes a body held for nothing).
  void write_row(const Snapshot& snapshot, const MetricsSample& metrics, const SolverStats& stats,
                 const Eigen::VectorXd* reference);
  /// Flushes every file (a .npy's header then says `rows`); on a failure cuts them all back to the
  /// last sample written whole and throws.
  void check_rows(long rows);
  /// Closes the CSVs; after a failed write, cuts them back to the last sample written whole.
  void close_files();

  const Model& model_;
  const CoordinateMap* coordinates_;
  std::string directory_;
  OutputFormat format_;
  std::vector<Output> out_;  // trajectory, metrics, then joints when a map is given
  bool headers_written_ = false;
  bool with_reactions_ = false, with_efforts_ = false;
  int write_every_ = 1;
  long received_ = 0, rows_ = 0;
  // The last sample received and not written (written by finish if it is the run's last). Copied
  // into the storage it holds, not made anew: at 1,024 bodies a sample's copy took 200 KB of heap
  // each time.
  Held held_;
  bool holding_ = false;
  Eigen::VectorXd reference_;           // joints.csv: angles continuous from row to row (nq, or empty without angles)
  Eigen::VectorXd held_reference_;      // reference_ as the held sample found it
};

/// Writes `text` to `path` whole or not at all (a temporary file beside it, then renamed over it);
/// throws std::runtime_error naming the file and the system's error.
void write_file_atomically(const std::string& path, const std::string& text);
/// As above, the text being what `write` puts into the stream it is given, for text too large
/// to hold whole. An exception from `write` removes the temporary file and passes on.
void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write);

/// summary.json text for a result.
std::string summary_json(const Model& model, const SimulationResult& result);

/// A CSV header cell: "name [unit]". column_name strips the unit again ("t [s]" -> "t").
std::string column(const std::string& name, const std::string& unit);
std::string column_name(const std::string& header_cell);

}  // namespace treedyn
