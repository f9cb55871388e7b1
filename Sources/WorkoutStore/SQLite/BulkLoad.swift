import GRDB

/// What `SQLiteBackend` knows of the bulk loads under way.
struct BulkLoadState {
    /// Loads begun and not ended.
    var active = 0
    /// The smallest threshold of the loads under way: workouts saved before the indexes may be dropped.
    var threshold = Int.max
    /// Workouts saved by `saveEach` since the first of the loads under way began.
    var saved = 0
    /// Whether the loads under way have decided (dropped the indexes or found it not worth it).
    var decided = false
}

// Bulk loads: the statistics' four value indexes, kept row by row, cost an import more than anything else on a
// large store (each workout's rows land at random places in four b-trees ordered by value, far larger than the page
// cache: a third of a 2 GB Apple Health export's import). Made again at the end, by sorting, they cost seconds.
extension SQLiteBackend {
    package func beginBulkLoad(threshold: Int) {
        bulk.withLock { state in
            if state.active == 0 { state = BulkLoadState() }
            state.active += 1
            state.threshold = min(state.threshold, max(0, threshold))
        }
    }

    package func endBulkLoad() throws(StoreError) {
        let last = bulk.withLock { state in
            state.active = max(0, state.active - 1)
            return state.active == 0
        }
        guard last else { return }
        try write { db in
            // Sorting each index's rows with helper threads (SQLite's sorter): on a 2 GB Apple Health export's
            // import, 3.8 s → 3.1 s for the four.
            try db.execute(sql: "PRAGMA threads = 2")
            defer { try? db.execute(sql: "PRAGMA threads = 0") }
            try Self.makeMissingIndexes(db)
        }
    }

    /// Counts the workouts a `saveEach` saved, for the loads under way.
    func noteBulkSaves(_ count: Int) {
        bulk.withLock { state in if state.active > 0 { state.saved += count } }
    }

    /// Once the loads under way have saved their threshold of workouts, and those are at least a fifth of the
    /// store's (making the indexes again sorts every row: a small import into a large store keeps them), drops the
    /// statistics' value indexes, in the caller's transaction (rolled back with it).
    func deferIndexesIfWorthIt(_ db: Database) throws {
        let saved = bulk.withLock { state -> Int? in
            state.active > 0 && !state.decided && state.saved >= state.threshold ? state.saved : nil
        }
        guard let saved else { return }
        let workouts = try Int.fetchOne(db, sql: "SELECT count(*) FROM workout") ?? 0
        let worthIt = workouts - saved <= 4 * saved
        if worthIt {
            for index in Schema.statisticValueIndexes { try db.execute(sql: "DROP INDEX IF EXISTS \(index.name)") }
        }
        bulk.withLock { state in state.decided = true }
    }

    /// Makes the statistics' value indexes that are missing.
    static func makeMissingIndexes(_ db: Database) throws {
        for index in Schema.statisticValueIndexes { try db.execute(sql: index.sql) }
    }
}
