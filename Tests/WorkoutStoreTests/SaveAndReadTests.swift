import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// A saved workout reads back equal, on each backend.
@Suite("Store: a saved workout reads back equal")
struct SaveAndReadTests {
    @Test(arguments: Backend.available) func saveThenReadBackEqual(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (workout, samples) = try recordWorkout([
            LegPlan(type: .cycling, seconds: 120, heartRate: 140, maxHeartRate: 171),
            LegPlan(type: .running, seconds: 60, heartRate: 150, maxHeartRate: 160),
        ])
        let route = [RoutePoint(date: t(1), latitude: 48.1, longitude: 11.5, altitude: 520, speed: 8)]
        try store.save(workout, samples: samples, route: route)
        #expect(try store.workout(id: workout.id) == workout)
        #expect(try store.samples(workout: workout.id) == samples)
        #expect(try store.route(workout: workout.id) == route)
        #expect(throws: StoreError.workoutExists(workout.id)) { try store.save(workout) }
    }
}
