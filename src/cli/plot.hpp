// treedyn — plots of a run's results (the files ResultWriter writes), drawn by gnuplot.
//
// write_plot_script() writes plots.gp into a results directory: a gnuplot script that reads
// metrics.csv and trajectory.csv there and draws, as SVG,
//   energy.svg        kinetic, potential and total energy over time
//   energy_drift.svg  the total energy's change from its initial value, less the work of
//                     non-conservative loads (metrics.csv's energy_drift)
//   constraints.svg   the largest position, velocity and acceleration constraint errors, log scale
//   <body>.svg        the last body's centre-of-mass position (for a chain: its tip)
// In a `treedyn compare` directory (one holding compare.csv) the plots overlay the formulations
// instead: deviation.svg (each body position's largest deviation from the reference run, from
// deviation.csv), energy_drift.svg (its magnitude) and position_error.svg, velocity_error.svg,
// acceleration_error.svg, all on log scales. In a `treedyn bench scaling` directory (one holding
// scaling.csv) it is scaling.svg: wall seconds per simulated second against the number of
// bodies, log-log, one curve per formulation and thread count.
// The script is kept, so that a user can edit it and redraw with `gnuplot plots.gp` in the
// directory. run_plot_script() runs gnuplot on it.
#pragma once

#include <string>
#include <vector>

namespace treedyn {

/// Writes <dir>/plots.gp and returns the names of the SVG files it draws. Throws
/// std::runtime_error naming the file and the column when a CSV file is missing or lacks a
/// column the plots need.
std::vector<std::string> write_plot_script(const std::string& dir);

/// Runs gnuplot on <dir>/plots.gp in <dir>. Throws std::runtime_error when gnuplot is not
/// installed (saying which package provides it) or fails.
void run_plot_script(const std::string& dir);

}  // namespace treedyn
