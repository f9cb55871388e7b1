import Foundation
import WorkoutStore

/// A PostgreSQL database of workouts for many athletes: one `WorkoutStore` per athlete, all in one database.
///
/// Opening it connects, applies the schema's migrations (refusing a database of a newer version) and keeps a
/// bounded pool of connections shared by every athlete's store. An athlete's store sees and writes only that
/// athlete's partitions, with the same API and semantics as a SQLite store.
public final class PostgresWorkoutDatabase: Sendable {
    let pool: ConnectionPool
    /// The URL without its password.
    public var location: String { pool.url.redacted }

    /// Connects to `url` (`postgres://user[:password]@host[:port]/database`) with at most `poolSize` connections.
    public init(url: String, poolSize: Int = 16) throws(StoreError) {
        pool = ConnectionPool(url: try PostgresURL(url), size: poolSize)
        try PostgresSchema.migrate(pool)
    }

    /// The store of one athlete (its partitions are created on first use).
    public func store(athlete: UUID) throws(StoreError) -> WorkoutStore {
        try PostgresSchema.ensurePartitions(pool, athlete: athlete)
        return WorkoutStore(backend: PostgresBackend(pool: pool, athlete: athlete))
    }

    /// A store that reads the workouts of several athletes at once (a coach's team) and writes nothing: one
    /// statement per query over their partitions. Every write throws.
    public func teamStore(athletes: [UUID]) throws(StoreError) -> WorkoutStore {
        guard !athletes.isEmpty else { throw .invalidQuery("a team store needs at least one athlete") }
        for athlete in athletes { try PostgresSchema.ensurePartitions(pool, athlete: athlete) }
        return WorkoutStore(backend: PostgresBackend(pool: pool, team: athletes))
    }

    /// Whether the database answers (readiness).
    public func ping() -> Bool {
        (try? pool.transaction(readOnly: true) { try $0.run("SELECT 1") }) != nil
    }
}
