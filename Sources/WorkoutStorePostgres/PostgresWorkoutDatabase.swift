import Foundation
import WorkoutStore

/// A PostgreSQL database of workouts for many athletes: one `WorkoutStore` per athlete, all in one database.
///
/// Opening it connects, applies the schema's migrations (refusing a database of a newer version) and keeps a
/// bounded pool of connections shared by every athlete's store. An athlete's store sees and writes only that
/// athlete's partitions, with the same API and semantics as a SQLite store.
public final class PostgresWorkoutDatabase: Sendable {
    let pool: ConnectionPool
    /// The LISTEN connection that brings other writers' changes to this database's stores (opened by the
    /// first observer).
    let feed: ChangeFeed
    /// Live sessions' commits waiting at the same moment, committed together (shared by every athlete's store).
    let commitGroups: JournalCommitGroups
    /// Opened for reading only (a streaming-replication replica): no migrations, no partitions created.
    public let readOnly: Bool
    /// The URL without its password.
    public var location: String { pool.url.redacted }

    /// Connects to `url` (`postgres://user[:password]@host[:port]/database`) with at most `poolSize` connections.
    ///
    /// `readOnly` opens a database that only answers reads (a hot-standby replica of the primary, a role
    /// without write rights): its schema is checked, not migrated, and an athlete's store reads the partitions
    /// the primary created (none yet: no workouts). Writing through such a store fails.
    /// - Parameter statementTimeout: each statement's time limit in seconds (PostgreSQL's `statement_timeout`;
    ///   0: none): a statement past it is cancelled and the call throws `StoreError.timedOut`.
    public init(url: String, poolSize: Int = 16, readOnly: Bool = false, statementTimeout: Double = 0) throws(StoreError) {
        let url = try PostgresURL(url)
        pool = ConnectionPool(url: url, size: poolSize, statementTimeout: statementTimeout)
        feed = ChangeFeed(url: url, logger: pool.logger)
        // Half the pool commits live batches at once, in groups; the other half stays for other work (sessions
        // opened, queries, imports). All 16 committing gave a higher median and a lower p99 (docs/live-load.md).
        commitGroups = JournalCommitGroups(committers: max(1, poolSize / 2))
        self.readOnly = readOnly
        if readOnly {
            try PostgresSchema.checkReadable(pool)
        } else {
            try PostgresSchema.migrate(pool)
        }
    }

    /// The store of one athlete (its partitions are created on first use, unless the database is read-only).
    public func store(athlete: UUID) throws(StoreError) -> WorkoutStore {
        if !readOnly { try PostgresSchema.ensurePartitions(pool, athlete: athlete) }
        return WorkoutStore(backend: PostgresBackend(pool: pool, feed: feed, commitGroups: commitGroups, athlete: athlete))
    }

    /// A store that reads the workouts of several athletes at once (a coach's team) and writes nothing: one
    /// statement per query over their partitions. Every write throws.
    public func teamStore(athletes: [UUID]) throws(StoreError) -> WorkoutStore {
        guard !athletes.isEmpty else { throw .invalidQuery("a team store needs at least one athlete") }
        if !readOnly { for athlete in athletes { try PostgresSchema.ensurePartitions(pool, athlete: athlete) } }
        return WorkoutStore(backend: PostgresBackend(pool: pool, feed: feed, commitGroups: commitGroups, team: athletes))
    }

    /// Closes the pool's idle connections (a server's last step when it stops); the database stays usable
    /// (the next call connects again). Blocks: call it off event-loop threads.
    public func closeConnections() {
        pool.closeIdle()
    }

    /// Whether the database answers (readiness).
    public func ping() -> Bool {
        (try? pool.transaction(readOnly: true) { try $0.run("SELECT 1") }) != nil
    }
}

extension PostgresWorkoutDatabase {
    /// Test support: runs `statement` as it is, unscoped (`$n` bound to `binds[n-1]` as text; cast in the
    /// statement, e.g. `$1::bytea` with `\x…` hex), and returns every row's columns as text.
    ///
    /// For the store's tests that damage rows on purpose, as they do with a SQLite file. Never for the server.
    package func executeForTests(_ statement: String, _ binds: [String] = []) throws(StoreError) -> [[String?]] {
        var sql = SQL(statement)
        sql.binds = binds.map { .text($0) }
        return try pool.transaction { transaction in
            try transaction.run(sql).map { record in
                try (0..<record.row.count).map { try record.row[$0].decode(String?.self) }
            }
        }
    }
}

extension PostgresWorkoutDatabase {
    /// Live commits taken together so far (`JournalCommitGroups`): group statements committed, the commits they
    /// held, and the commits of groups committed alone (after the group's statement failed, or their row was locked).
    package var liveCommitGroups: (groups: Int, commits: Int, alone: Int) {
        let statistics = commitGroups.statistics
        return (statistics.groups, statistics.grouped, statistics.alone)
    }

    /// Live commits queued and not taken by a committer yet.
    package var liveCommitsWaiting: Int { commitGroups.waiting }
}
