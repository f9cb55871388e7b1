import Foundation
import WorkoutEngine
import WorkoutModel
import WorkoutStore

func t(_ seconds: Double) -> Date { Date(timeIntervalSinceReferenceDate: 800_000_000 + seconds) }

let strap = SourceDevice(name: "HRM", manufacturer: "Garmin", identifier: "ant:120:1")
let bike = SourceDevice(name: "Bike", identifier: "ant:121:2")

/// A fresh temporary folder, removed by the caller's `defer`.
func temporaryFolder() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("workout-store-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

/// A store in a fresh temporary file.
func freshStore() throws -> (WorkoutStore, URL) {
    let folder = try temporaryFolder()
    return (try WorkoutStore(path: folder.appendingPathComponent("test.sqlite").path), folder)
}

/// One leg of a synthetic multisport workout.
struct LegPlan {
    var type: WorkoutActivityType
    var seconds: Int
    var heartRate: Double
    var maxHeartRate: Double
}

/// Records a workout leg by leg through a session: 1 Hz heart rate (a peak of `maxHeartRate` once in
/// the middle of each leg), distance on cycling and running legs. Returns the workout and its samples.
func recordWorkout(
    _ legs: [LegPlan], startingAt offset: Double = 0, workoutType: WorkoutActivityType = .other
) throws -> (Workout, [QuantitySample]) {
    let sink = InMemoryRecording()
    let session = try WorkoutSession(
        configuration: WorkoutConfiguration(activityType: workoutType), clock: ManualClock(t(offset)),
        options: BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: Set(QuantityType.allCases))), sink: sink)
    try session.start(at: t(offset))
    var now = offset
    for leg in legs {
        try session.beginNewActivity(configuration: WorkoutConfiguration(activityType: leg.type), at: t(now))
        var batch: [QuantitySample] = []
        for second in 0..<leg.seconds {
            let at = now + Double(second)
            let value = second == leg.seconds / 2 ? leg.maxHeartRate : leg.heartRate
            batch.append(QuantitySample(.heartRate, value, at: t(at), source: strap))
            if leg.type == .cycling {
                batch.append(QuantitySample(.distanceCycling, 8, at: t(at), end: t(at + 1), source: bike))
            }
        }
        try session.builder.add(batch)
        now += Double(leg.seconds)
    }
    try session.stop(at: t(now))
    try session.end(at: t(now))
    let workout = try session.builder.finishWorkout()
    return (workout, sink.samples)
}
