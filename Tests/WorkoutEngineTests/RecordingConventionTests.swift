import Foundation
import Testing
import WorkoutEngine
import WorkoutModel

/// The builder options a recording's import sets to average as its device does (issue 13):
/// readings interpolated between sparse records, pool rests left out of the averages, and the
/// open-water SWOLF conventions.
@Suite("Recording conventions")
struct RecordingConventionTests {
    /// 100 bpm at 0 s and 120 bpm at 10 s, then the end at 10 s.
    private func average(_ options: BuilderOptions) throws -> Double? {
        let (builder, _) = try collectingBuilder(options: options)
        try builder.add([hr(100, at: 0), hr(120, at: 10)])
        try builder.endCollection(at: t(10))
        return try builder.finishWorkout().statistics[.heartRate]?.averageValue
    }

    @Test func linearInterpolationAveragesTheLineBetweenReadings() throws {
        // Held: 100 for 10 s. Interpolated: the line from 100 to 120, mean 110.
        #expect(try average(BuilderOptions(holdCap: 30)) == 100)
        #expect(try average(BuilderOptions(holdCap: 30, interpolation: .linear)) == 110)
        // A gap beyond the hold cap is a dropout: held for the cap, never interpolated.
        #expect(try average(BuilderOptions(holdCap: 5, interpolation: .linear)) == 100)
    }

    @Test func interpolationStopsAtAPauseWithTheLinesValueThere() throws {
        let (builder, _) = try collectingBuilder(options: BuilderOptions(holdCap: 30, interpolation: .linear))
        try builder.add([hr(100, at: 0)])
        try builder.add([WorkoutEvent(type: .pause, start: t(5))])
        try builder.add([hr(120, at: 10)])
        try builder.endCollection(at: t(10))
        let workout = try builder.finishWorkout()
        // Over [0, 5] the line runs from 100 to 110: mean 105.
        #expect(workout.statistics[.heartRate]?.averageValue == 105)
        // The reading taken while paused counts nowhere, not even in the maximum.
        #expect(workout.statistics[.heartRate]?.maximum?.value == 100)
    }

    private func poolSwim(excludingRests: Bool) throws -> Workout {
        let configuration = WorkoutConfiguration(
            activityType: .swimming, locationType: .indoor, swimmingLocationType: .pool,
            lapLength: Quantity(25, .meter))
        let builder = try {
            let clock = ManualClock(t(0))
            let builder = try LiveWorkoutBuilder(
                configuration: configuration, clock: clock,
                options: BuilderOptions(averagesExcludeRests: excludingRests))
            try builder.beginCollection(at: t(0))
            return builder
        }()
        func length(_ start: Double, _ duration: Double, _ kind: LengthKind) -> WorkoutEvent {
            WorkoutEvent(
                type: .lap, start: t(start), duration: duration,
                metadata: [SwimMetadataKey.lengthKind: .string(kind.rawValue)])
        }
        // Swim 0–20 s at 150 bpm, rest 20–40 s (the rest is known when it begins) at 100 bpm.
        try builder.add([length(0, 20, .active)])
        try builder.add([length(20, 20, .rest)])
        try builder.add((0..<40).map { hr($0 < 20 ? 150 : 100, at: Double($0)) })
        try builder.endCollection(at: t(40))
        return try builder.finishWorkout()
    }

    @Test func poolRestsLeaveTheAveragesButNotTheTimer() throws {
        let kept = try poolSwim(excludingRests: false)
        let left = try poolSwim(excludingRests: true)
        #expect(kept.statistics[.heartRate]?.averageValue == 125)
        #expect(left.statistics[.heartRate]?.averageValue == 150)
        #expect(kept.duration == 40 && left.duration == 40)
        // The maximum and minimum take every reading either way.
        #expect(left.statistics[.heartRate]?.minimum?.value == 100)
    }

    @Test func openWaterSWOLFFollowsTheChosenConvention() {
        // 212.262 s, 124 strokes, 182.88 m: the Forerunner 255's first open-water lap (its SWOLF: 18).
        let classic = OpenWaterSWOLF.secondsAndStrokesPer25m.value(seconds: 212.262, strokes: 124, meters: 182.88)
        let fr255 = OpenWaterSWOLF.strokesPer25mPlusOne.value(seconds: 212.262, strokes: 124, meters: 182.88)
        #expect(abs((classic ?? 0) - 45.97) < 0.01)
        #expect(abs((fr255 ?? 0) - 17.95) < 0.01)
        #expect(OpenWaterSWOLF.strokesPer25mPlusOne.value(seconds: 10, strokes: 0, meters: 25) == nil)
        #expect(OpenWaterSWOLF.secondsAndStrokesPer25m.value(seconds: 10, strokes: 5, meters: 0) == nil)
    }

    @Test func anOpenWaterSwimCarriesItsSWOLFStatistic() throws {
        let configuration = WorkoutConfiguration(
            activityType: .swimming, locationType: .outdoor, swimmingLocationType: .openWater)
        let builder = try LiveWorkoutBuilder(
            configuration: configuration, clock: ManualClock(t(0)), options: BuilderOptions(openWaterSWOLF: .strokesPer25mPlusOne))
        try builder.beginCollection(at: t(0))
        try builder.add([
            QuantitySample(.distanceSwimming, 100, at: t(0), end: t(100), source: strap),
            QuantitySample(.swimmingStrokeCount, 80, at: t(0), end: t(100), source: strap),
        ])
        try builder.endCollection(at: t(100))
        let workout = try builder.finishWorkout()
        // 80 strokes over 100 m: 20 per 25 m, + 1.
        #expect(workout.statistics[.swimmingSWOLF]?.averageValue == 21)
    }
}
