import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

@Suite("Store: an import's workouts are saved without a journal, many in one transaction and each whole or not at all")
struct ImportSaveTests {
    /// A workout replayed into `store` without saving it: `count` heart-rate readings a second from `offset`.
    private func replayed(
        _ store: WorkoutStore, offset: Double, count: Int, id: UUID = UUID()
    ) throws -> ImportedWorkout {
        let recording = try store.beginImport(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(t(offset)),
            options: BuilderOptions(workoutID: id))
        try recording.session.start(at: t(offset))
        try recording.builder.add((0..<count).map { pulse(120 + Double($0 % 40), at: offset + Double($0)) })
        // Half of them laid out in chunks before the rest come: the chunks hold all of them, in order.
        recording.flush()
        try recording.builder.add((count..<(2 * count)).map { pulse(120 + Double($0 % 40), at: offset + Double($0)) })
        try recording.session.end(at: t(offset + Double(2 * count)))
        return try recording.complete()
    }

    @Test(arguments: Backend.available)
    func aWorkoutWhoseIdIsTakenIsLeftOutWholeAndTheOthersAreKept(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let taken = try replayed(store, offset: 0, count: 50)
        #expect(try store.saveImported([taken]) == [nil])
        // Replaying gave the store nothing: no journal, no workout until saved.
        let first = try replayed(store, offset: 1_000, count: 5_000)
        let again = try replayed(store, offset: 9_000, count: 30, id: taken.workout.id)
        let last = try replayed(store, offset: 20_000, count: 70)
        #expect(try store.journaledSessions().isEmpty)
        #expect(try store.workout(id: first.workout.id) == nil)

        let errors = try store.saveImported([first, again, last])
        #expect(errors == [nil, .workoutExists(taken.workout.id), nil])
        // The one refused wrote nothing: the workout with its id is still the first one saved, its samples only.
        #expect(try store.workout(id: taken.workout.id)?.start == t(0))
        #expect(try store.samples(workout: taken.workout.id).count == 100)
        for (item, count) in [(first, 10_000), (last, 140)] {
            let saved = try #require(try store.workout(id: item.workout.id))
            #expect(saved.statistics[.heartRate]?.sampleCount == count)
            let samples = try store.samples(workout: item.workout.id)
            #expect(samples.count == count)
            #expect(samples.map(\.start) == (0..<count).map { t(item.workout.start.timeIntervalSince(t(0)) + Double($0)) })
        }
        #expect(try store.workouts(matching: WorkoutQuery()).count == 3)
        #expect(try store.journaledSessions().isEmpty)
    }

    @Test(arguments: Backend.available)
    func anImportDiscardedHalfwayLeavesNothingAndHoldsNoId(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let id = UUID()
        let recording = try store.beginImport(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(t(0)),
            options: BuilderOptions(workoutID: id))
        try recording.session.start(at: t(0))
        try recording.builder.add((0..<100).map { pulse(130, at: Double($0)) })
        try recording.discard()
        #expect(try store.journaledSessions().isEmpty)
        #expect(try store.workouts(matching: WorkoutQuery()).isEmpty)
        // The id is free: the same workout imports.
        let again = try replayed(store, offset: 0, count: 10, id: id)
        #expect(try store.saveImported([again]) == [nil])
        #expect(try store.samples(workout: id).count == 20)
    }
}
