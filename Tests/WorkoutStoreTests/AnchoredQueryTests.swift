import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// Anchored queries: what changed since an anchor, across deletes and re-saves, then live.
@Suite("Store: anchored queries")
struct AnchoredQueryTests {
    @Test(arguments: Backend.available) func anchoredQueryAcrossADelete(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, _) = try recordWorkout([LegPlan(type: .running, seconds: 60, heartRate: 140, maxHeartRate: 150)])
        let (b, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 60, heartRate: 140, maxHeartRate: 150)], startingAt: 1000)
        let (c, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 60, heartRate: 140, maxHeartRate: 150)], startingAt: 2000)
        try store.save(a)
        try store.save(b)
        let first = try store.anchoredWorkouts()
        #expect(first.added.map(\.id) == [a.id, b.id])
        #expect(first.deleted.isEmpty)
        // The anchor is persistable.
        let anchor = try JSONDecoder().decode(QueryAnchor.self, from: JSONEncoder().encode(first.anchor))
        try store.delete(workout: a.id)
        try store.save(c)
        let second = try store.anchoredWorkouts(since: anchor)
        #expect(second.added.map(\.id) == [c.id])
        #expect(second.deleted == [a.id])
        let limited = try store.anchoredWorkouts(since: anchor, limit: 1)
        #expect(limited.deleted == [a.id] && limited.added.isEmpty)
        let rest = try store.anchoredWorkouts(since: limited.anchor)
        #expect(rest.added.map(\.id) == [c.id] && rest.deleted.isEmpty)
        #expect(try store.anchoredWorkouts(since: second.anchor).added.isEmpty)
        #expect(try store.workout(id: a.id) == nil)
        #expect(throws: StoreError.workoutNotFound(a.id)) { try store.delete(workout: a.id) }
    }

    @Test(arguments: Backend.available) func anchoredUpdatesYieldTheCurrentStateThenLiveChanges(_ backend: Backend) async throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, _) = try recordWorkout([LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)])
        let (b, _) = try recordWorkout(
            [LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)], startingAt: 500)
        try store.save(a)
        var iterator = store.anchoredWorkoutUpdates().makeAsyncIterator()
        let initial = try await iterator.next()
        #expect(initial?.added.map(\.id) == [a.id])
        try store.save(b)
        let live = try await iterator.next()
        #expect(live?.added.map(\.id) == [b.id])
        try store.delete(workout: a.id)
        let deleted = try await iterator.next()
        #expect(deleted?.deleted == [a.id] && deleted?.added.isEmpty == true)
    }

    // Anchored: delete then re-save the same id.
    @Test(arguments: Backend.available) func anchoredDeleteThenResave(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (a, _) = try recordWorkout([LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)])
        try store.save(a)
        let anchor = try store.anchoredWorkouts().anchor
        try store.delete(workout: a.id)
        try store.save(a)
        let changes = try store.anchoredWorkouts(since: anchor)
        // The workout exists now; a consumer applying added then deleted would drop it.
        #expect(!(changes.added.map(\.id) == [a.id] && changes.deleted == [a.id]))
    }
}
