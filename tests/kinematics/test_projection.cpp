#include <gtest/gtest.h>

#include <random>

#include "support.hpp"
#include "treedyn/model_json.hpp"
#include "treedyn/projection.hpp"

using namespace treedyn;

namespace {

SystemState perturbed(const Model& m, double size, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-size, size);
  SystemState s = initial_state(m);
  for (auto& b : s) {
    b.r += Vec3(u(rng), u(rng), u(rng));
    b.q = (quat_exp<double>(Vec3(u(rng), u(rng), u(rng))) * b.q).normalized();
    b.v += Vec3(u(rng), u(rng), u(rng));
    b.w += Vec3(u(rng), u(rng), u(rng));
  }
  return s;
}

}  // namespace

TEST(ConstraintProjector, ProjectsTheRedundantFourBarOntoItsConstraints) {
  const Model m = read_model_file(test::model_path("four_bar"));
  SystemState s = perturbed(m, 0.02, 1);
  ConstraintProjector p(m);
  EXPECT_LT(p.project_positions(0.0, s, 1e-13, 20), 1e-13);
  p.project_velocities(0.0, s);
  ConstraintMatrix cm(m);
  cm.factorise(0.0, s);
  Eigen::VectorXd V(6 * m.body_count());
  for (int i = 0; i < m.body_count(); ++i) V.segment<6>(6 * i) << s[static_cast<std::size_t>(i)].v, s[static_cast<std::size_t>(i)].w;
  EXPECT_LT((cm.J() * V).cwiseAbs().maxCoeff(), 1e-12);
}

// project() is the two projections with one factorisation fewer: the same state to the last bit,
// on the redundant four-bar (a singular J M^-1 J': the minimum-norm path) and on loop4 (Cholesky),
// for a state already on the constraints (one position iteration) and for perturbed ones.
TEST(ConstraintProjector, ProjectGivesTheTwoProjectionsExactly) {
  for (const char* name : {"four_bar", "loop4"}) {
    const Model m = read_model_file(test::model_path(name));
    for (const double size : {0.0, 0.02, 0.1}) {
      const SystemState start = perturbed(m, size, 7);
      SystemState two = start, one = start;
      ConstraintProjector a(m), b(m);
      const double error_two = a.project_positions(0.3, two, 1e-13, 20);
      a.project_velocities(0.3, two);
      const double error_one = b.project(0.3, one, 1e-13, 20);
      EXPECT_EQ(error_one, error_two) << name << ", perturbed by " << size;
      for (std::size_t i = 0; i < start.size(); ++i) {
        EXPECT_EQ(one[i].r, two[i].r) << name << ", body " << i << ", perturbed by " << size;
        EXPECT_EQ(one[i].q.coeffs(), two[i].q.coeffs()) << name << ", body " << i;
        EXPECT_EQ(one[i].v, two[i].v) << name << ", body " << i;
        EXPECT_EQ(one[i].w, two[i].w) << name << ", body " << i;
      }
    }
  }
}

// The velocity projection is mass-orthogonal: the correction dV satisfies M dV = -J' mu, so it is
// M-orthogonal to every velocity the constraints allow (the null space of J).
TEST(ConstraintProjector, VelocityCorrectionIsMassOrthogonalToAdmissibleMotions) {
  const Model m = read_model_file(test::model_path("loop4"));
  SystemState s = initial_state(m);
  SystemState moved = perturbed(m, 0.0, 2);
  std::mt19937 rng(3);
  std::normal_distribution<double> n(0.0, 1.0);
  for (auto& b : moved) {
    b.v = Vec3(n(rng), n(rng), n(rng));
    b.w = Vec3(n(rng), n(rng), n(rng));
  }
  const SystemState before = moved;
  ConstraintProjector p(m);
  p.project_velocities(0.0, moved);
  ConstraintMatrix cm(m);
  cm.factorise(0.0, s);
  const Eigen::MatrixXd J = Eigen::MatrixXd(cm.J());
  const Eigen::MatrixXd N = J.fullPivLu().kernel();  // admissible velocities
  Eigen::VectorXd MdV(6 * m.body_count());
  for (int i = 0; i < m.body_count(); ++i) {
    const auto k = static_cast<std::size_t>(i);
    const Mat3 A = s[k].q.toRotationMatrix();
    MdV.segment<3>(6 * i) = m.bodies[k].mass * (moved[k].v - before[k].v);
    MdV.segment<3>(6 * i + 3) = A * m.bodies[k].inertia * A.transpose() * (moved[k].w - before[k].w);
  }
  EXPECT_LT((N.transpose() * MdV).cwiseAbs().maxCoeff(), 1e-12);
}

TEST(InitialState, InconsistentVelocitiesAreReportedAndAssembleFixesThem) {
  Model m = read_model_file(test::model_path("spatial_double_pendulum"));
  m.bodies[1].velocity = Vec3(0.3, 0.0, 0.0);  // B cannot slide away from A
  const ConsistencyReport r = check_initial_state(m, 1e-6);
  ASSERT_FALSE(r.consistent());
  EXPECT_NE(r.violations[0].find("joint 'joint2': initial velocities violate it"), std::string::npos) << r.violations[0];
  AssemblyReport a;
  const Model fixed = assemble_initial_state(m, a);
  EXPECT_TRUE(check_initial_state(fixed, 1e-12).consistent());
  EXPECT_GT(a.velocity_change[1], 0.0);
  EXPECT_EQ(a.moved[0], 0.0);
}

TEST(InitialState, AssembleMovesBodiesOntoTheirJointsAndSaysHowFar) {
  Model m = read_model_file(test::model_path("four_bar"));
  m.bodies[1].position += Vec3(0.01, -0.02, 0.005);  // B displaced from its joints
  EXPECT_FALSE(check_initial_state(m, 1e-6).consistent());
  AssemblyReport a;
  const Model fixed = assemble_initial_state(m, a);
  EXPECT_TRUE(check_initial_state(fixed, 1e-10).consistent());
  EXPECT_GT(a.moved[1], 1e-3);
  EXPECT_NE(a.summary(fixed).find("B: moved"), std::string::npos);
}
