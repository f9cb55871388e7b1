import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// An observer of the store sees adds and deletes.
@Suite("Store: change observers")
struct ChangeObserverTests {
    @Test(arguments: Backend.available) func observerSeesAddsAndDeletes(_ backend: Backend) async throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        var changes = store.changes().makeAsyncIterator()
        let (workout, _) = try recordWorkout([LegPlan(type: .running, seconds: 30, heartRate: 140, maxHeartRate: 150)])
        try store.save(workout)
        try store.delete(workout: workout.id)
        #expect(await changes.next() == .added([workout.id]))
        #expect(await changes.next() == .deleted([workout.id]))
    }
}
