import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore

@Suite("Store: recordings in progress")
struct RecordingInProgressTests {
    @Test(arguments: Backend.available) func samplesAreStoredOnceAndTheWorkoutAppearsOnlyWhenFinished(_ backend: Backend) throws {
        let (store, folder) = try freshStore(backend)
        defer { try? FileManager.default.removeItem(at: folder) }
        let ride = SyntheticRide(seed: 9)
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(ride.start),
            commitInterval: 0)
        try recording.session.start(at: ride.start)
        try recording.builder.add(ride.samples(0..<100))
        try recording.commit()
        // Like HealthKit's live builder: committed samples are in the store already…
        #expect(try store.samples(matching: SampleQuery(workout: recording.id)) == ride.samples(0..<100))
        // …but the workout is not, for any workout query, until it is finished.
        #expect(try store.workout(id: recording.id) == nil)
        #expect(try !store.containsWorkout(id: recording.id))
        #expect(try store.workouts(matching: WorkoutQuery()).isEmpty)
        #expect(try store.anchoredWorkouts().added.isEmpty)
        #expect(throws: StoreError.workoutNotFound(recording.id)) { try store.delete(workout: recording.id) }
        try recording.session.stop(at: ride.date(20))
        let workout = try recording.finish()
        #expect(try store.workout(id: workout.id) == workout)
        #expect(try store.containsWorkout(id: workout.id) && !store.containsWorkout(id: UUID()))
        #expect(try store.samples(workout: workout.id) == ride.samples(0..<100))

        let abandoned = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .cycling), clock: ManualClock(ride.date(100)),
            commitInterval: 0)
        try abandoned.session.start(at: ride.date(100))
        try abandoned.builder.add(ride.samples(500..<600))
        try abandoned.commit()
        try abandoned.discard()
        #expect(try store.samples(matching: SampleQuery(workout: abandoned.id)).isEmpty)
        #expect(try store.samples(matching: SampleQuery()).count == 100)
        #expect(try store.journaledSessions().isEmpty)
    }
}
