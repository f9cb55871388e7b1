import Foundation
import WorkoutEngine
import GRDB
import Testing
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres
@_exported import StoreTestSupport

let strap = SourceDevice(name: "HRM", manufacturer: "Garmin", identifier: "ant:120:1")
let bike = SourceDevice(name: "Bike", identifier: "ant:121:2")

/// A heart-rate reading of the strap at `t(seconds)`.
func pulse(_ bpm: Double, at seconds: Double) -> QuantitySample {
    QuantitySample(.heartRate, bpm, at: t(seconds), source: strap)
}

/// A fresh store of `backend` and a fresh temporary folder (the SQLite file's), removed by the caller's `defer`.
func freshStore(_ backend: Backend = .sqlite) throws -> (WorkoutStore, URL) {
    let fixture = try StoreFixture(backend)
    return (fixture.store, fixture.folder)
}

extension StoreFixture {
    /// The athlete as a SQL literal, for `postgres` statements of `execute`.
    var athleteLiteral: String { "'\(athlete.uuidString.lowercased())'" }

    /// Runs a statement on the store's own rows behind its back (to damage them on purpose): `sqlite` on the
    /// file, or `postgres` (scoped by the test with `athleteLiteral`; binds are text). Returns the rows as text.
    @discardableResult
    func execute(
        sqlite: String, _ arguments: StatementArguments = [], postgres: String, _ binds: [String] = []
    ) throws -> [[String?]] {
        switch backend {
        case .sqlite:
            let queue = try DatabaseQueue(path: store.path)
            defer { try? queue.close() }
            return try queue.write { db in
                guard sqlite.uppercased().hasPrefix("SELECT") else {
                    try db.execute(sql: sqlite, arguments: arguments)
                    return []
                }
                return try Row.fetchAll(db, sql: sqlite, arguments: arguments).map { row in
                    row.databaseValues.map { String.fromDatabaseValue($0) ?? ($0.isNull ? nil : $0.description) }
                }
            }
        case .postgres:
            return try TestPostgres.database().executeForTests(postgres, binds)
        }
    }
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

/// A cycling recording of heart rate alone, started at t(0), committing on every `commit()` call.
func startedHeartRateRecording(
    _ store: WorkoutStore, clock: ManualClock, chunking: JournalChunking = .live
) throws -> JournaledRecording {
    let recording = try store.beginRecording(
        configuration: WorkoutConfiguration(activityType: .cycling), clock: clock,
        options: BuilderOptions(dataSource: WorkoutDataSource(explicitTypes: [.heartRate])), commitInterval: 0,
        chunking: chunking)
    try recording.session.start(at: t(0))
    return recording
}

/// Bytes as hexadecimal text and back (raw chunk bytes through either backend's SQL).
enum Hex {
    static func string(_ bytes: [UInt8]) -> String { bytes.map { String(format: "%02x", $0) }.joined() }

    static func bytes(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        for index in stride(from: 0, to: digits.count, by: 2) {
            guard let byte = UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) else { return nil }
            bytes.append(byte)
        }
        return bytes
    }
}
