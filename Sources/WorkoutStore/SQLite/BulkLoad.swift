import Foundation
import GRDB

/// What `SQLiteBackend` knows of the bulk loads under way.
struct BulkLoadState {
    /// Loads begun and not ended.
    var active = 0
    /// The smallest threshold of the loads under way: workouts saved before the indexes may be dropped.
    var threshold = Int.max
    /// Workouts saved by `saveEach` since the first of the loads under way began.
    var saved = 0
    /// The saved count at which to ask again whether dropping is worth it (an import can outgrow the store).
    var nextCheck = 0
    /// Whether this backend dropped the statistics' value indexes and has not made them again.
    var dropped = false
}

// Bulk loads: the statistics' four value indexes, kept row by row, cost an import more than anything else on a
// large store (each workout's rows land at random places in four b-trees ordered by value, far larger than the page
// cache: a third of a 2 GB Apple Health export's import). Made again at the end, by sorting, they cost seconds.
//
// While they are dropped, `meta` holds the process that dropped them (`bulk_load_pid`): opening the store in another
// process makes them again only when that process is gone (an import killed), never under a running import, whose
// next batch would wait seconds for the writer's lock.
extension SQLiteBackend {
    package func beginBulkLoad(threshold: Int) {
        bulk.withLock { state in
            if state.active == 0 {
                state.saved = 0
                state.threshold = Int.max
            }
            state.active += 1
            state.threshold = min(state.threshold, max(0, threshold))
            state.nextCheck = state.threshold
        }
    }

    package func endBulkLoad() throws(StoreError) {
        let rebuild = bulk.withLock { state in
            state.active = max(0, state.active - 1)
            return state.active == 0 && state.dropped
        }
        guard rebuild else { return }
        try makeIndexesAgain()
    }

    /// Makes the dropped indexes again, whatever the caller's cancellation (`StoreCancellation`): the saves are
    /// done, and the indexes must not stay dropped because the caller gave up at the end.
    private func makeIndexesAgain() throws(StoreError) {
        let made = StoreCancellation.$current.withValue(nil) {
            Result { () throws(StoreError) in
                try write { db in
                    // Sorting each index's rows with helper threads (SQLite's sorter): on a 2 GB Apple Health
                    // export's import, 3.8 s → 3.1 s for the four.
                    try db.execute(sql: "PRAGMA threads = 2")
                    defer { try? db.execute(sql: "PRAGMA threads = 0") }
                    try Self.makeMissingIndexes(db)
                }
            }
        }
        try made.get()
        // A later load may drop them again; until then, the next end has nothing to do.
        bulk.withLock { state in if state.active == 0 { state.dropped = false } }
    }

    /// Counts the workouts a `saveEach` saved, for the loads under way.
    func noteBulkSaves(_ count: Int) {
        bulk.withLock { state in if state.active > 0 { state.saved += count } }
    }

    /// Once the loads under way have saved their threshold of workouts, and those are at least a fifth of the
    /// store's (making the indexes again sorts every row: a small import into a large store keeps them; asked again
    /// each time the import doubles), drops the statistics' value indexes, in the caller's transaction (rolled
    /// back with it, the indexes then still there).
    func deferIndexesIfWorthIt(_ db: Database) throws {
        let saved = bulk.withLock { state -> Int? in
            state.active > 0 && !state.dropped && state.saved >= state.nextCheck ? state.saved : nil
        }
        guard let saved else { return }
        let workouts = try Int.fetchOne(db, sql: "SELECT count(*) FROM workout") ?? 0
        guard workouts - saved <= 4 * saved else {
            bulk.withLock { state in state.nextCheck = max(state.nextCheck, 2 * saved) }
            return
        }
        for index in Schema.statisticValueIndexes { try db.execute(sql: "DROP INDEX IF EXISTS \(index.name)") }
        try db.execute(
            sql: "INSERT OR REPLACE INTO meta(key, value) VALUES ('bulk_load_pid', ?)", arguments: [getpid()])
        bulk.withLock { state in state.dropped = true }
    }

    /// Makes the statistics' value indexes that are missing, and forgets who dropped them.
    static func makeMissingIndexes(_ db: Database) throws {
        for index in Schema.statisticValueIndexes { try db.execute(sql: index.sql) }
        try db.execute(sql: "DELETE FROM meta WHERE key = 'bulk_load_pid'")
    }

    /// At open: makes the indexes a bulk load left dropped, unless the process that dropped them is still running
    /// (its import makes them when it ends; this one's queries are slower meanwhile).
    static func repairIndexesAtOpen(_ db: Database) throws {
        if let owner = try Int32.fetchOne(db, sql: "SELECT value FROM meta WHERE key = 'bulk_load_pid'"),
            owner != getpid(), kill(owner, 0) == 0 || errno == EPERM
        {
            return
        }
        try makeMissingIndexes(db)
    }
}
