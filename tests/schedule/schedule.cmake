# Which tests run first, and which long scenarios the sanitized build leaves out.
#
# Order. ctest -j starts tests in descending COST. A build tree that has run its tests before
# keeps their times (Testing/Temporary/CTestCostData.txt) and orders by those; a clean clone, as
# in CI, has none, so every test costs 0 and they start in the order declared, which leaves the
# longest (declared late: the step-choice runs, the CLI, the examples, the Python suite) running
# alone at the end while the other core waits. treedyn_test_costs gives them their seconds so that
# they start first. Only the order changes.
#
# Each entry: name | whole seconds in the Release build | whole seconds in the sanitized build
# (make sanitize), "-" where that build has no such test or leaves it out: the tests of at least
# 8 s in Release or 20 s sanitized in a clean clone's .ci/run on dev-2c (ctest -j2;
# docs/benchmarks.md, "CI's time, session 21").
set(treedyn_test_costs
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/chain128  # GetParam() = "chain128"|297|-]=]
  [=[Examples.BuiltAgainstTheInstalledPackageTheyRunAndPrintTheExpected|69|159]=]
  [=[Simulation.ARunLeftToChooseItsStepRunsAgainAtTheAdvisedStepAndIsOk|8|130]=]
  [=[Python.PytestSuite|127|-]=]
  [=[Simulation.ARunNearASingularPositionOfItsLoopsIsCheckedByARefinedCompanionFromThere|4|67]=]
  [=[Models/Ali3AtDefaults.EveryShippedModelRunsToItsEndWithThePenaltyItChose/chain128  # GetParam() = "chain128"|3|51]=]
  [=[Reference.ConservesEnergyToTheIntegrationTolerance|4|48]=]
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/loop8  # GetParam() = "loop8"|43|-]=]
  [=[Reference.RedundantFourBarRunsThirtySecondsThroughItsSingularPositions|3|33]=]
  [=[Simulator.PdControllerHoldsThePendulumAtItsStaticEquilibrium|2|32]=]
  [=[Dca.DefaultStabilisationKeepsTheFourBarOnItsBranch|2|28]=]
  [=[Cli.BigRunsAreDecimatedToTheirSizeBudget|1|27]=]
  [=[Models/Ali3AtDefaults.EveryShippedModelRunsToItsEndWithThePenaltyItChose/planar_four_bar  # GetParam() = "planar_four_bar"|2|26]=]
  [=[ImportMjcf.TheFilesOwnHumanoidGoesThroughConnectorBodiesWithinTheirStatedMassFraction|2|25]=]
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/planar_four_bar  # GetParam() = "planar_four_bar"|21|-]=]
  [=[Models/Ali3AtDefaults.EveryShippedModelRunsToItsEndWithThePenaltyItChose/slider_crank  # GetParam() = "slider_crank"|2|21]=]
  [=[Models/Ali3AtDefaults.EveryShippedModelRunsToItsEndWithThePenaltyItChose/four_link  # GetParam() = "four_link"|1|20]=]
  [=[Cli.JointsCsvIsTheJointCoordinatesOfTheBodyStates|1|20]=]
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/double_loop8  # GetParam() = "double_loop8"|20|-]=]
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/four_bar  # GetParam() = "four_bar"|17|-]=]
  [=[Ali3.LongChainsRunAtTheirDefaultPenalty|16|-]=]
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/hi_double_pendulum  # GetParam() = "hi_double_pendulum"|14|-]=]
  [=[Cli.ProgressReachesALogEveryFewSeconds|10|11]=]
  [=[Simulation.ARunWhoseEstimateShrankFarSlowerThanItsOrderIsAdvisedAMethodNotAStep|11|-]=]
  [=[Cli.EstimateErrorCatchesTheFourBarsBranchSwitchThatTheConstraintsCannotSee|11|-]=]
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/spatial_double_pendulum  # GetParam() = "spatial_double_pendulum"|10|-]=]
  [=[Simulation.ARunThatCameNearASingularPositionIsAdvisedAMethodNotAStep|10|-]=]
  [=[Models/EveryModel.EveryFormulationAtItsDefaultsIsOkAndRightOrSaysWhyNot/loop4  # GetParam() = "loop4"|9|-]=]
)

# Left out of the sanitized build. Under the sanitizers (-O1, ASan + UBSan) the tests run 25 to 60
# times slower than in Release; these seven ran 114 to 277 s each there on dev-2c (session 20's
# record, with a build running beside), 1,390 s of the suite's ~3,000, for long runs (10 to 30 s of
# simulated time, up to 219,000 steps, or 2,048 bodies) whose code the sanitized build runs in
# shorter tests, named with each. The Release build runs them all. ctest lists them as
# "Not Run (Disabled)".
set(treedyn_sanitized_left_out
  # 2,048-body chain, 100 steps: ali3's code on chains in Ali3.ChainsLoseNoEnergyUnderBothProjections
  # and Models/Ali3AtDefaults.*/chain128.
  [=[Ali3.LongChainsRunAtTheirDefaultPenalty]=]
  # Backward Euler on the four-bar over 30 s, 219,000 steps to its Newton failure: the failure at
  # an aligned position in Implicit.ANewtonFailureAtASingularPositionSaysSoAndNamesWhatPassesIt,
  # the judgement near singular positions in Simulation.ARunNearASingularPosition...FromThere.
  [=[Simulation.ARunThatCameNearASingularPositionIsAdvisedAMethodNotAStep]=]
  # The step choice's stop when the estimate shrinks slower than the order: the step choice itself
  # runs in Simulation.ARunLeftToChooseItsStepRunsAgainAtTheAdvisedStepAndIsOk.
  [=[Simulation.ARunWhoseEstimateShrankFarSlowerThanItsOrderIsAdvisedAMethodNotAStep]=]
  # The advised step of a fixed-step run: computed, then run, in ARunLeftToChooseItsStep... too.
  [=[Simulation.AFixedStepRunBeyondItsAccuracyNamesAStepThatMeetsIt]=]
  # Four formulations at 1e-10 on a ladder of eight loops: coupled loops in
  # {Dca,Hdca}.MatchesReferenceOnCoupledLoops and Hdca.MatchesDcaOnATreeAndCoupledLoops.
  [=[Simulator.ALadderOfCoupledFourBarsSwingsAsItsEquivalentCompoundPendulum]=]
  # The CLI's warning and its checks over 30 s runs: the CLI's judgement and exit codes in the
  # other Cli tests, the companion run in Simulation.ARunNearASingularPosition...FromThere.
  [=[Cli.ARunThatLeftItsAccuracyEndsWarningWithTheCheckThatFailed]=]
  [=[Cli.EstimateErrorCatchesTheFourBarsBranchSwitchThatTheConstraintsCannotSee]=]
)

# treedyn_test_cost(ENTRY SANITIZED NAME_VAR COST_VAR): the entry's name and its seconds in this
# build ("-" where it has no such test).
function(treedyn_test_cost entry sanitized name_var cost_var)
  # The name may hold anything but "|"; the seconds are the last two fields.
  if(NOT entry MATCHES "^([^|]+)\\|([0-9]+|-)\\|([0-9]+|-)$")
    message(FATAL_ERROR "tests/schedule/schedule.cmake: the entry '${entry}' is not "
                        "name|whole seconds in Release|whole seconds sanitized (or - for none)")
  endif()
  set(name "${CMAKE_MATCH_1}")
  set(release_cost "${CMAKE_MATCH_2}")
  set(sanitized_cost "${CMAKE_MATCH_3}")
  set(${name_var} "${name}" PARENT_SCOPE)
  if(sanitized)
    set(${cost_var} "${sanitized_cost}" PARENT_SCOPE)
  else()
    set(${cost_var} "${release_cost}" PARENT_SCOPE)
  endif()
endfunction()

# treedyn_apply_test_costs(SANITIZED WHICH): gives each test of treedyn_test_costs its COST in this
# build. WHICH is "defined" at configure time (the tests tests/CMakeLists.txt adds itself; if(TEST)
# works only there) and "all" when ctest includes apply_schedule.cmake, after gtest_discover_tests'
# lists (a test not defined yet is passed over there).
function(treedyn_apply_test_costs sanitized which)
  foreach(entry IN LISTS treedyn_test_costs)
    treedyn_test_cost("${entry}" "${sanitized}" name cost)
    if(cost STREQUAL "-")
      continue()
    endif()
    if(which STREQUAL "defined")
      if(NOT TEST "${name}")
        continue()
      endif()
    endif()
    set_tests_properties("${name}" PROPERTIES COST ${cost})
  endforeach()
endfunction()
