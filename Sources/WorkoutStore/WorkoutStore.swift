import Foundation
import Synchronization
import WorkoutEngine
import WorkoutModel

/// The workout store (<doc:SavingRecordingQuerying>): finished workouts (with activities, events, samples, route and
/// per-activity statistics), the journal of sessions being recorded, and the queries of
/// <doc:SavingRecordingQuerying#Queries>.
///
/// Samples and route points are kept as compressed chunks (docs/storage-chunks.md) in a backend:
/// an embedded SQLite file by default (`init(path:)`). Thread-safe; every save and delete is one
/// transaction.
public final class WorkoutStore: Sendable {
    /// Where the store is: the SQLite file, or the backend's description of itself.
    public let path: String
    let backend: any StoreBackend
    let broadcaster = AsyncBroadcaster<StoreChange>()
    /// The backend's feed of other writers' changes into `broadcaster`, started by the first observer.
    private let otherWriters = Mutex<OtherWriters>(.notStarted)

    private enum OtherWriters: Sendable {
        case notStarted
        /// The backend's handle (nil: the backend sees no other writers).
        case started((any AnyObject & Sendable)?)
    }

    /// Opens (creating when missing) the SQLite store at `path`.
    ///
    /// An existing file is checked read-only before anything is written: not SQLite, truncated,
    /// written by a newer schema, read-only or locked each throw a `StoreError` and leave it as it was.
    /// A file of an older schema is upgraded in place, in one transaction; when that fails it is left
    /// exactly as it was (`.migrationFailed`).
    /// - Parameters:
    ///   - path: the SQLite file, created when missing (the file 0600, a new folder 0700).
    ///   - busyTimeout: how long to wait for another program's lock before `.locked`.
    ///   - statementTimeout: the longest one statement may run, seconds (0: no limit); past it the
    ///     statement is interrupted and the call throws `.timedOut`.
    public convenience init(path: String, busyTimeout: TimeInterval = 2, statementTimeout: TimeInterval = 0)
        throws(StoreError)
    {
        self.init(backend: try SQLiteBackend(path: path, busyTimeout: busyTimeout, statementTimeout: statementTimeout))
    }

    /// A store over any backend (the PostgreSQL target uses this).
    package init(backend: any StoreBackend) {
        self.backend = backend
        path = backend.location
    }

    /// A new stream of every change from now on: this instance's, and other writers' when the backend sees
    /// them (PostgreSQL's LISTEN/NOTIFY); the first one starts the backend's feed.
    func subscribeToChanges() -> AsyncStream<StoreChange> {
        otherWriters.withLock { state in
            guard case .notStarted = state else { return }
            let broadcaster = broadcaster
            state = .started(backend.observeOtherWriters { broadcaster.publish($0) })
        }
        return broadcaster.subscribe()
    }

    /// Opens the store at `--db`, else `$WORKOUT_DB`, else the XDG default.
    public convenience init(explicitPath: String?) throws(StoreError) {
        try self.init(path: explicitPath ?? StoreLocation.defaultPath())
    }

    // MARK: saving

    /// Saves a finished workout with its samples and route in one transaction.
    ///
    /// - Throws: `.workoutExists` when a workout with the same id is already stored.
    public func save(_ workout: Workout, samples: [QuantitySample] = [], route: [RoutePoint] = []) throws(StoreError) {
        try backend.save(
            workout, sampleChunks: Series.chunks(samples, firstOrdinal: 0),
            routeChunks: Series.routeChunks(route, firstOrdinal: 0))
        broadcaster.publish(.added([workout.id]))
    }

    /// Attaches a heart-rate recovery to a saved workout (WorkoutEngine's article "Session and builder semantics",
    /// heart-rate recovery): the heartRateRecoveryOneMinute
    /// sample when there is one, the heart-rate readings of the recovery window (`result.readings`,
    /// stored as heart-rate samples of the workout marked `MetadataKey.heartRateRecoveryReading`),
    /// and the values (or the reasons they are missing) merged into the workout's metadata. The
    /// workout's statistics are not touched. The workout's anchor moves, so anchored queries report
    /// it again.
    ///
    /// Attaching again replaces the earlier recovery: its sample, its readings (every stored
    /// heart-rate chunk whose samples all carry the marker; exercise readings never do) and its
    /// metadata; nothing is doubled.
    ///
    /// - Throws: `.workoutNotFound` when no finished workout has the id.
    public func attachHeartRateRecovery(_ result: HeartRateRecoveryResult, toWorkout id: UUID) throws(StoreError) {
        try backend.updateWorkout(id, replacing: [.heartRateRecoveryOneMinute, .heartRate]) {
            (chunk: SampleChunk) throws(StoreError) -> Bool in
            switch chunk.type {
            case .heartRateRecoveryOneMinute: return true
            case .heartRate:
                // Recovery readings are written in chunks of their own: a chunk is theirs when every
                // sample in it is marked.
                let samples = try Series.decode(chunk, workout: id)
                return !samples.isEmpty && samples.allSatisfy { $0.1.isHeartRateRecoveryReading }
            default: return false
            }
        } _: { (stored: Metadata, next: Int64) throws(StoreError) -> (Metadata, [SampleChunk]) in
            (result.replacingRecovery(in: stored), result.storedChunks(firstOrdinal: next))
        }
        broadcaster.publish(.added([id]))
    }

    // MARK: deleting

    /// Deletes a workout and everything attached to it; anchored queries report it as deleted.
    public func delete(workout id: UUID) throws(StoreError) {
        try backend.delete(workout: id)
        broadcaster.publish(.deleted([id]))
    }

    // MARK: reading

    /// The stored workout with `id`, or nil.
    public func workout(id: UUID) throws(StoreError) -> Workout? {
        try backend.workout(id: id)
    }

    /// Whether a finished workout with `id` is stored: `workout(id:) != nil` without reading the workout.
    public func containsWorkout(id: UUID) throws(StoreError) -> Bool {
        try backend.containsWorkout(id: id)
    }

    /// The samples saved with a workout, in time order.
    public func samples(workout id: UUID) throws(StoreError) -> [QuantitySample] {
        try samples(matching: SampleQuery(workout: id))
    }

    /// The route saved with a workout, in time order.
    public func route(workout id: UUID) throws(StoreError) -> [RoutePoint] {
        var points: [(Int64, RoutePoint)] = []
        for chunk in try backend.routeChunks(workout: id) { points += try Series.decode(chunk, workout: id) }
        // Time order; points at the same instant in the order they were recorded.
        points.sort { $0.1.date != $1.1.date ? $0.1.date < $1.1.date : $0.0 < $1.0 }
        return points.map(\.1)
    }
}

/// JSON for the store's text columns: sorted keys, so equal values store equal text.
/// Non-finite numbers, which the engine refuses, are still written as strings rather than making
/// a commit fail. Every backend writes its JSON columns with it, so equal values store equal text in
/// SQLite and PostgreSQL alike.
package enum JSON {
    /// Any other value, through JSONEncoder. Metadata, configurations and counters take the hand-written
    /// overloads (JSONText.swift), which write the same text.
    package static func encode<T: Encodable>(_ value: T) throws -> String {
        try encodeWithJSONEncoder(value)
    }

    /// JSONEncoder's text for `value` (what the hand-written overloads are checked against).
    package static func encodeWithJSONEncoder<T: Encodable>(_ value: T) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        // Metadata keeps its kind: an integral double stays a double, a date a date.
        encoder.userInfo[MetadataValue.typedCoding] = true
        encoder.nonConformingFloatEncodingStrategy = .convertToString(
            positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    package static func decode<T: Decodable>(_ type: T.Type, _ text: String) throws -> T {
        let decoder = JSONDecoder()
        decoder.nonConformingFloatDecodingStrategy = .convertFromString(
            positiveInfinity: "+inf", negativeInfinity: "-inf", nan: "nan")
        return try decoder.decode(type, from: Data(text.utf8))
    }
}
