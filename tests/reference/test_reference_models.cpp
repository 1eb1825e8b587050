// Every shipped model runs under the reference formulation.
#include <gtest/gtest.h>

#include "support.hpp"
#include "treedyn/model_json.hpp"

using namespace treedyn;

class ShippedModel : public ::testing::TestWithParam<std::pair<const char*, double>> {};

TEST_P(ShippedModel, RunsUnderTheReferenceKeepingItsConstraints) {
  const auto [name, t_end] = GetParam();
  const Model m = read_model_file(test::model_path(name));
  FormulationSettings s;
  s.rtol = s.atol = 1e-9;
  const auto r = test::simulate(m, "reference", s, t_end, 0.01);
  ASSERT_TRUE(r.ok()) << r.message;
  EXPECT_LT(r.constraint_error_max.position, 1e-8);
  EXPECT_LT(r.constraint_error_max.velocity, 1e-7);
  EXPECT_TRUE(r.warnings.empty());
}

INSTANTIATE_TEST_SUITE_P(Models, ShippedModel,
                         ::testing::Values(std::pair{"spatial_double_pendulum", 1.0}, std::pair{"four_bar", 1.0},
                                           std::pair{"chain128", 0.03}, std::pair{"loop4", 1.0}, std::pair{"loop8", 1.0},
                                           std::pair{"double_loop8", 1.0}, std::pair{"hi_double_pendulum", 1.0},
                                           std::pair{"slider_crank", 1.0}, std::pair{"four_link", 1.0},
                                           std::pair{"planar_double_pendulum", 0.5}, std::pair{"planar_four_bar", 0.5}),
                         [](const auto& info) { return std::string(info.param.first); });
