// Helpers shared by compare.cpp and scaling.cpp.
#pragma once

#include <string>
#include <vector>

#include "treedyn/compare.hpp"

namespace treedyn::compare_detail {

/// Body positions at the sample times of one run (the reference's).
struct PositionTrack : SampleSink {
  std::vector<double> t;
  std::vector<std::vector<Vec3>> r;
  void write(const Snapshot& s, const MetricsSample&, const SolverStats&) override {
    t.push_back(s.t);
    auto& positions = r.emplace_back(s.bodies.size());
    for (std::size_t i = 0; i < s.bodies.size(); ++i) positions[i] = s.bodies[i].r;
  }
  bool restart() override {
    t.clear();
    r.clear();
    return true;
  }
};

/// Runs one formulation with suggested_settings: its row, with the largest body distance from
/// `reference` at common times when given; `record` (if any) receives every sample, and with
/// `output_dir` the run's files go to output_dir/<name>/.
CompareRow run_row(const std::shared_ptr<const Model>& model, const std::string& name, const CompareOptions& options,
                   const RunOptions& run,
                   const std::string& output_dir, const PositionTrack* reference, SampleSink* record);


/// x with `digits` significant digits; "-" for NaN.
std::string fmt(double x, int digits = 3);
/// A CSV field, quoted when it holds a comma, quote or newline.
std::string csv_field(const std::string& s);
/// x with 6 significant digits; empty for NaN or infinity.
std::string csv_number(double x);
/// The catalogue's names, or `requested` after checking each (std::invalid_argument if unknown).
std::vector<std::string> formulation_names(const std::vector<std::string>& requested);
/// Throws std::invalid_argument for a non-positive option.
void validate(const CompareOptions& options);
/// The interval of the common sample times: the option, else max(0.01 s, the step given as dt),
/// at most t_end. Not finer by default: every output costs the adaptive integrators an
/// interpolation, which would count in their wall time.
double sample_interval(const CompareOptions& options, double t_end);

}  // namespace treedyn::compare_detail
