import Foundation
import Testing
@testable import WorkoutEngine
import WorkoutModel

/// A pool length (lap event) of `duration` seconds starting at `start`.
private func length(
    _ start: Double, _ duration: Double, _ kind: LengthKind, style: String? = "freestyle", strokes: Int? = nil
) -> WorkoutEvent {
    var metadata: Metadata = [SwimMetadataKey.lengthKind: .string(kind.rawValue)]
    if let style { metadata[SwimMetadataKey.strokeStyle] = .string(style) }
    if let strokes { metadata[SwimMetadataKey.strokes] = .int(strokes) }
    return WorkoutEvent(type: .lap, start: t(start), duration: duration, metadata: metadata)
}

private func poolSwim() throws -> WorkoutSession {
    let configuration = WorkoutConfiguration(
        activityType: .swimming, locationType: .indoor, swimmingLocationType: .pool, lapLength: Quantity(25, .meter))
    let session = try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)))
    try session.start(at: t(0))
    return session
}

@Suite("SWOLF from pool lengths")
struct SwolfTests {
    @Test func lengthsSetsAndTheWorkoutCarrySwolfDrillsAndRestsDoNot() throws {
        let session = try poolSwim()
        try session.builder.add([
            length(0, 20, .active, strokes: 15),  // 35
            length(20, 22.5, .active, strokes: 16),  // 38.5
            length(42.5, 30, .drill),  // no SWOLF, still part of the freestyle set
            length(72.5, 30, .rest, style: nil),  // ends the set
            length(102.5, 25, .active, style: "backstroke", strokes: 18),  // 43
            length(127.5, 24, .active, style: "breaststroke", strokes: 20),  // 44: a new style, a new set
        ])
        try session.stop(at: t(200))
        let workout = try session.builder.finishWorkout()
        let laps = workout.events.filter { $0.type == .lap }
        #expect(laps.map { number($0.metadata[SwimMetadataKey.swolf]) } == [35, 38.5, nil, nil, 43, 44])
        let sets = workout.events.filter { $0.type == .segment }
        #expect(sets.count == 3)
        #expect(sets.map(\.start) == [t(0), t(102.5), t(127.5)])
        #expect(sets.map(\.duration) == [72.5, 25, 24])
        #expect(sets.map { number($0.metadata[SwimMetadataKey.swolf]) } == [36.75, 43, 44])
        #expect(sets.map { number($0.metadata[SwimMetadataKey.lengths]) } == [3, 1, 1])
        #expect(sets.map { number($0.metadata[SwimMetadataKey.activeLengths]) } == [2, 1, 1])
        let swolf = try #require(workout.statistics[.swimmingSWOLF])
        #expect(swolf.average?.value == (35 + 38.5 + 43 + 44) / 4)
        #expect(swolf.minimum?.value == 35)
        #expect(swolf.maximum?.value == 44)
        #expect(swolf.sampleCount == 4)
        // The builder's own events stay as given; SWOLF is derived, not stored twice.
        #expect(session.builder.events.allSatisfy { $0.metadata[SwimMetadataKey.swolf] == nil })
    }

    @Test func aSwimOfOnlyDrillsHasNoSwolfAnywhere() throws {
        let session = try poolSwim()
        try session.builder.add([length(0, 30, .drill), length(30, 31, .drill), length(61, 29, .drill)])
        try session.stop(at: t(100))
        let workout = try session.builder.finishWorkout()
        #expect(workout.statistics[.swimmingSWOLF] == nil)
        #expect(workout.events.allSatisfy { $0.metadata[SwimMetadataKey.swolf] == nil })
        let sets = workout.events.filter { $0.type == .segment }
        #expect(sets.count == 1)
        #expect(number(sets.first?.metadata[SwimMetadataKey.activeLengths]) == 0)
    }

    @Test func perActivitySwolfInATriathlonAndLegsEndSets() throws {
        let configuration = WorkoutConfiguration(
            activityType: .swimBikeRun, swimmingLocationType: .pool, lapLength: Quantity(50, .meter))
        let session = try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)))
        try session.start(at: t(0))
        try session.builder.add([length(0, 40, .active, strokes: 30), length(40, 42, .active, strokes: 32)])
        try session.advanceToNextLeg(at: t(90))
        try session.stop(at: t(200))
        let workout = try session.builder.finishWorkout()
        #expect(workout.activities[0].statistics[.swimmingSWOLF]?.average?.value == 72)
        #expect(workout.activities[1].statistics[.swimmingSWOLF] == nil)
        #expect(workout.statistics[.swimmingSWOLF]?.average?.value == 72)
    }

    @Test func malformedLengthMetadataIsRefusedAndNothingIsStored() throws {
        let session = try poolSwim()
        var bad = length(0, 20, .active, strokes: 10)
        bad.metadata[SwimMetadataKey.strokes] = .int(-3)
        #expect(throws: EngineError.self) { try session.builder.add([length(30, 20, .active, strokes: 9), bad]) }
        var unknown = length(0, 20, .active)
        unknown.metadata[SwimMetadataKey.lengthKind] = .string("floating")
        #expect(throws: EngineError.self) { try session.builder.add([unknown]) }
        #expect(session.builder.events.isEmpty)
        // SWOLF samples are never collected: SWOLF comes from lengths only.
        let report = try session.builder.add([QuantitySample(.swimmingSWOLF, 40, at: t(5), source: watch)])
        #expect(report.dropped[.notCollected] == 1)
    }
}
