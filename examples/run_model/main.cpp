// A JSON model run to its end with the results written, as `treedyn simulate` does:
//   run_model MODEL.json [FORMULATION] [OUTPUT_DIR]
// The formulation defaults to the model file's, else hdca; the end time and step to the model
// file's, else 2 s and 0.01 s.
#include <cstdio>
#include <exception>
#include <string>
#include <treedyn/model_json.hpp>
#include <treedyn/result_writer.hpp>
#include <treedyn/simulation.hpp>

int main(int argc, char** argv) {
  using namespace treedyn;
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s MODEL.json [FORMULATION] [OUTPUT_DIR]\n", argv[0]);
    return 1;
  }
  try {
    const ModelPtr model = share(read_model_file(argv[1]));
    const std::string formulation = argc > 2 ? argv[2] : model->defaults.formulation.value_or("hdca");
    const std::string output = argc > 3 ? argv[3] : "results/" + model->name;
    RunOptions run;
    run.t_end = model->defaults.t_end.value_or(2.0);
    run.dt = model->defaults.dt.value_or(0.01);
    FormulationSettings settings;
    settings.dt = run.dt;
    Simulator sim(model, formulation, settings);
    ResultWriter writer(*model, output);
    const SimulationResult r = run_simulation(sim, run, &writer);
    writer.finish(r);
    std::printf("%s with %s (%s): status %s\n", model->name.c_str(), r.formulation.c_str(), r.integrator.c_str(),
                r.status.c_str());
    std::printf("simulated %.6g s in %ld steps, %.3f s wall\n", r.t_reached, r.stats.steps, r.wall_seconds);
    std::printf("energy drift %.3e J, largest position constraint error %.3e\n", r.energy_drift_max,
                r.constraint_error_max.position);
    std::printf("results in %s\n", writer.directory().c_str());
    if (!r.ok()) std::fprintf(stderr, "failed: %s\n", r.message.c_str());
    return r.ok() ? 0 : 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "run_model: %s\n", e.what());
    return 1;
  }
}
