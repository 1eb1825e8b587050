// dopri5's own continuous extension: Dormand and Prince's fourth-order interpolant of a step from
// its seven stage derivatives (Hairer, Norsett and Wanner, Solving Ordinary Differential Equations
// I, 2nd ed., Sect. II.6, Eq. 6.12 and the coefficients of their DOPRI5 code's dense output).
//
// ARKODE 6 offers only its own interpolants for outputs inside a step. Its Hermite interpolant of
// degree 4, the one it takes for dopri5, evaluates the right-hand side once more at every output
// (at tau = -1/3, from a cubic): with an output every 0.01 s that was one evaluation in four of a
// dca run on a spherical chain. This interpolant is as accurate and needs nothing but the stages
// the step made (docs/benchmarks.md, "Session 36").
//
// With theta = (t - t0) / h and the step's ends y0 and y1 (y1 as the step's projection left it):
//   y(theta) = y0 + theta (dy + (1 - theta) (r3 + theta (r4 + (1 - theta) r5))),  dy = y1 - y0,
//   r3 = h k1 - dy,   r4 = dy - h k7 - r3,   r5 = h sum_i d_i k_i.
// It meets y0 and y1 at theta = 0 and 1 with the slopes h k1 and h k7 there.
#pragma once

#include <Eigen/Core>
#include <array>

namespace treedyn::dopri5 {

/// The stages' abscissae c_i (the Dormand-Prince 5(4) table, as ARKODE's DORMAND_PRINCE_7_4_5).
inline constexpr std::array<double, 7> kC = {0.0, 1.0 / 5.0, 3.0 / 10.0, 4.0 / 5.0, 8.0 / 9.0, 1.0, 1.0};

/// The dense output's weights d_i (d_2 = 0).
inline constexpr std::array<double, 7> kD = {-12715105075.0 / 11282082432.0, 0.0,
                                              87487479700.0 / 32700410799.0,  -10690763975.0 / 1880347072.0,
                                              701980252875.0 / 199316789632.0, -1453857185.0 / 822651844.0,
                                              69997945.0 / 29380423.0};

/// The interpolant of the last step. Holds its own copies (five state-sized vectors), so the
/// stage vectors it was built from may change afterwards.
class DenseOutput {
 public:
  /// No step yet: the interpolant is the point (t0, y0) alone.
  void start(double t0, const Eigen::Ref<const Eigen::VectorXd>& y0) {
    t0_ = t1_ = t0;
    y1_ = y0;
    y0_ = y0;
    r3_.setZero(y0.size());
    r4_.setZero(y0.size());
    r5_.setZero(y0.size());
  }

  /// The step from the previous step's end (t0, y0) to (t1, y1), with its stage derivatives
  /// k[0..6] (k[6] at the end before any projection). Each k points to y1.size() numbers.
  void step(double t1, const Eigen::Ref<const Eigen::VectorXd>& y1, const std::array<const double*, 7>& k) {
    y0_.swap(y1_);
    y1_ = y1;
    t0_ = t1_;
    t1_ = t1;
    const double h = t1_ - t0_;
    const Eigen::Index n = y1.size();
    using ConstMap = Eigen::Map<const Eigen::ArrayXd>;
    const ConstMap k1(k[0], n), k3(k[2], n), k4(k[3], n), k5(k[4], n), k6(k[5], n), k7(k[6], n);
    r3_.array() = h * k1 - (y1_.array() - y0_.array());
    r4_.array() = (y1_.array() - y0_.array()) - h * k7 - r3_.array();
    r5_.array() = h * (kD[0] * k1 + kD[2] * k3 + kD[3] * k4 + kD[4] * k5 + kD[5] * k6 + kD[6] * k7);
  }

  double t0() const { return t0_; }
  double t1() const { return t1_; }

  /// y(t) for t in [t0, t1]; the ends exactly.
  void evaluate(double t, Eigen::VectorXd& out) const {
    if (t == t1_) {
      out = y1_;
      return;
    }
    if (t == t0_) {
      out = y0_;
      return;
    }
    const double theta = (t - t0_) / (t1_ - t0_), rest = 1.0 - theta;
    out.resize(y1_.size());
    out.array() = y0_.array() + theta * ((y1_.array() - y0_.array()) +
                                         rest * (r3_.array() + theta * (r4_.array() + rest * r5_.array())));
  }

 private:
  double t0_ = 0.0, t1_ = 0.0;
  Eigen::VectorXd y0_, y1_, r3_, r4_, r5_;
};

}  // namespace treedyn::dopri5
