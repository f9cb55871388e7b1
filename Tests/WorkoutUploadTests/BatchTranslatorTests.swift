import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutTestSupport

@testable import WorkoutUpload

private let strap = SourceDevice(name: "HRM", manufacturer: "Garmin", identifier: "ant:120:1")

/// Applies batch items to a new session the way the server's live session does (docs/openapi.yaml, Batch).
private func replay(_ items: [WireItem], configuration: WorkoutConfiguration) throws -> Workout {
    let session = try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)))
    func date(_ item: WireItem) throws -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require(item.at.flatMap { formatter.date(from: $0.text) }, "item \(item.kind) without a date")
    }
    func parse(_ date: WireDate) throws -> Date {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return try #require(formatter.date(from: date.text))
    }
    for item in items {
        switch item.kind {
        case "start": try session.start(at: date(item))
        case "pause": try session.pause(at: date(item))
        case "resume": try session.resume(at: date(item))
        case "stop": try session.stop(at: date(item))
        case "end": try session.end(at: date(item))
        case "samples":
            let samples = try (item.samples ?? []).map { body in
                QuantitySample(
                    type: try #require(QuantityType(rawValue: body.type)),
                    quantity: Quantity(body.value, try #require(QuantityUnit(symbol: body.unit))),
                    start: try parse(body.start),
                    end: try body.end.map(parse),
                    source: SourceDevice(
                        name: body.source.name, manufacturer: body.source.manufacturer, model: body.source.model,
                        identifier: body.source.identifier))
            }
            _ = try session.builder.add(samples)
        case "events":
            try session.builder.add(
                try (item.events ?? []).map { body in
                    WorkoutEvent(
                        type: try #require(WorkoutEventType(rawValue: body.type)), start: try parse(body.start),
                        duration: body.duration ?? 0)
                })
        case "leg":
            try session.beginNewActivity(
                configuration: WorkoutConfiguration(
                    activityType: try #require(WorkoutActivityType(rawValue: item.activityType ?? ""))),
                at: date(item))
        case "nextLeg": try session.advanceToNextLeg(at: date(item))
        case "endActivity": try session.endCurrentActivity(at: date(item))
        default: Issue.record("unknown kind \(item.kind)")
        }
    }
    return try session.builder.finishWorkout()
}

/// What a recording's committed changes become on the wire, checked by applying the batches to a new session as
/// the server does: the same workout comes out, no derived change sent twice.
@Suite("Live upload: changes to batch items")
struct BatchTranslatorTests {
    @Test func pausesLapsAndSamplesRebuildTheSameWorkoutWithoutDoubledEvents() throws {
        let sink = InMemoryRecording()
        let configuration = WorkoutConfiguration(activityType: .running, locationType: .outdoor)
        let session = try WorkoutSession(configuration: configuration, clock: ManualClock(t(0)), sink: sink)
        try session.start(at: t(0))
        _ = try session.builder.add(
            (0..<30).map { QuantitySample(.heartRate, 120 + Double($0), at: t(Double($0)), source: strap) })
        try session.pause(at: t(30))
        try session.resume(at: t(40))
        try session.builder.add([WorkoutEvent(type: .lap, start: t(0), duration: 45)])
        _ = try session.builder.add((41..<60).map { QuantitySample(.heartRate, 140, at: t(Double($0)), source: strap) })
        try session.stop(at: t(60))
        try session.end(at: t(60))
        let original = try session.builder.finishWorkout()

        // Committed in three groups, as the journal would.
        let changes = sink.changes.filter { if case .finished = $0 { return false } else { return true } }
        var translator = BatchTranslator(plannedLegs: [])
        let cut = [0, changes.count / 3, 2 * changes.count / 3, changes.count]
        var items: [WireItem] = []
        for index in 0..<3 { items += translator.items(for: Array(changes[cut[index]..<cut[index + 1]])) }

        #expect(items.filter { $0.kind == "pause" }.count == 1)
        let sentEvents = items.flatMap { $0.events ?? [] }.map(\.type)
        #expect(sentEvents == ["lap"], "the pause and resume events come from the session calls: \(sentEvents)")
        let rebuilt = try replay(items, configuration: configuration)
        #expect(rebuilt.events == original.events)
        #expect(rebuilt.duration == original.duration)
        #expect(rebuilt.statistics[.heartRate]?.average == original.statistics[.heartRate]?.average)
    }

    @Test func legChangesOfAPlannedMultisportAreNextLegsAndAnEndedLegIsEndActivity() throws {
        let sink = InMemoryRecording()
        let configuration = WorkoutConfiguration(activityType: .swimBikeRun, locationType: .outdoor)
        let options = BuilderOptions(automaticTransitions: TransitionDetectionOptions(enabled: false))
        let session = try WorkoutSession(
            configuration: configuration, clock: ManualClock(t(0)), options: options, sink: sink)
        try session.start(at: t(0))
        try session.advanceToNextLeg(at: t(100))
        try session.advanceToNextLeg(at: t(130))
        try session.endCurrentActivity(at: t(200))
        try session.stop(at: t(210))
        try session.end(at: t(210))
        let original = try session.builder.finishWorkout()

        var translator = BatchTranslator(plannedLegs: configuration.plannedLegs.map(\.activityType))
        // One change at a time: a leg's end and the next leg's beginning may come in different commits.
        let items = sink.changes.flatMap { translator.items(for: [$0]) }
        #expect(items.map(\.kind) == ["start", "nextLeg", "nextLeg", "endActivity", "stop", "end"])
        let rebuilt = try replay(items, configuration: configuration)
        #expect(
            rebuilt.activities.map(\.configuration.activityType)
                == original.activities.map(\.configuration.activityType))
        #expect(rebuilt.activities.map(\.start) == original.activities.map(\.start))
        #expect(rebuilt.activities.map(\.end) == original.activities.map(\.end))
    }

    @Test func routePointsAreCountedNotSent() throws {
        var translator = BatchTranslator(plannedLegs: [])
        let points = (0..<3).map { RoutePoint(date: t(Double($0)), latitude: 47, longitude: 11) }
        #expect(translator.items(for: [.route(points)]).isEmpty)
        #expect(translator.routePointsNotSent == 3)
    }
}
