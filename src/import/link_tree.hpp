// treedyn — what every importer produces before it becomes a Model: links placed at the file's
// reference configuration and joints given as frames on links, in the terms URDF, SDFormat and
// MJCF share. build_model() does the rest once for all formats: massless links welded to another
// are merged into it, link frames become treedyn's centroidal body frames, and the result goes
// through ModelBuilder (which validates it).
#pragma once

#include <string>
#include <vector>

#include "treedyn/model.hpp"

namespace treedyn::importing {

/// A rigid transform: x_outer = p + R x_inner.
struct Pose {
  Vec3 p = Vec3::Zero();
  Mat3 R = Mat3::Identity();
  Pose operator*(const Pose& inner) const { return {p + R * inner.p, R * inner.R}; }
  Pose inverse() const { return {-(R.transpose() * p), R.transpose()}; }
};

/// A rotation whose z axis is `axis` (normalised); its x axis is `x_hint` made perpendicular when
/// given and not parallel, else any perpendicular direction. Throws ModelError naming `who` for a
/// zero axis.
Mat3 frame_with_z(const Vec3& axis, const std::string& who, const Vec3& x_hint = Vec3::Zero());

struct Link {
  std::string name;
  std::string element;      // how the file names it, for messages ("link 'arm'", "body 'torso'")
  double mass = 0.0;        // 0: no inertial data
  Pose inertial;            // centre of mass and inertia axes in the link frame
  Mat3 inertia = Mat3::Zero();  // about the centre of mass, in the inertial axes
  Pose pose;                // the link frame, global, at the reference configuration
  Shape shape;              // in the inertial frame; Type::None: drawn as the inertia box
};

struct LinkJoint {
  std::string name;
  std::string element;      // for messages ("joint 'elbow'", "constraint 'loop'")
  JointType type = JointType::Revolute;
  std::string parent, child;  // link names; the world's name (LinkTree::world) is ground
  Pose on_parent;           // joint frame in the parent link's frame (z: the joint axis)
  Pose on_child;            // joint frame in the child link's frame
};

struct LinkTree {
  std::string name, description, source;  // source: the file, for messages
  std::string world = "world";
  Vec3 gravity = Vec3::Zero();
  std::vector<Link> links;
  std::vector<LinkJoint> joints;
};

/// The Model of a link tree. Links without mass welded (fixed joint) to another link or the
/// world are merged into it; a link without mass that moves is an error naming it.
Model build_model(LinkTree tree);

/// The box of uniform density with the given mass and principal inertia (the "inertia box"
/// MuJoCo's viewer draws), as a Shape; Type::None if the inertia has no such box.
Shape inertia_box(double mass, const Mat3& inertia);

/// "a, b, c" (at most `max` names, then "and N more").
std::string listed(const std::vector<std::string>& names, std::size_t max = 6);

/// What a file holds that treedyn does not model, gathered into the import's one warning line.
class LeftOut {
 public:
  /// "inactive equality constraints (a, b)": `kind`, then the names (nothing when there are none).
  void add(const std::string& kind, const std::vector<std::string>& names);
  /// "limits of 3 joints (a, b, c)": `what` ("limits of", or empty), the number of names, `noun`
  /// ("joints"), then the names.
  void counted(const std::string& what, const std::string& noun, const std::vector<std::string>& names);
  /// "<source>: treedyn does not model, and leaves out: ..." or nothing.
  std::vector<std::string> warning(const std::string& source) const;

 private:
  std::vector<std::string> parts_;
};

/// The import of a format this build has no reader for: a ModelError naming the package.
[[noreturn]] void not_built(const std::string& path, const std::string& format, const std::string& package);

}  // namespace treedyn::importing
