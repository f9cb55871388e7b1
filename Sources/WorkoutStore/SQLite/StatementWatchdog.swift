import Foundation
import GRDBSQLite

/// Interrupts SQLite statements that run longer than a limit, or whose caller's `StoreCancellation` is cancelled
/// (a server request whose client hung up): a trace callback runs as each statement begins (it notes the time, and
/// interrupts a cancelled caller's statement before its first step), a progress handler (every 1,000
/// virtual-machine steps, on the thread running the statement) interrupts a running one once the limit has passed or
/// the cancellation bound to that thread is cancelled. The statement then fails with SQLITE_INTERRUPT
/// (`StoreError.timedOut`) and its transaction's changes are rolled back.
///
/// A cancelled caller's work thus stops within its running statement or before its next one, however short its
/// statements are (a transaction of many small inserts, a list decoding each workout with three lookups): the
/// progress handler alone never runs for a statement of fewer than 1,000 steps. The statements that end a
/// transaction (COMMIT, RELEASE, ROLLBACK, END) and GRDB's read-only switch (`PRAGMA query_only`) always run: a
/// rollback cut short would leave the connection inside its transaction (GRDB stops the process on that), and a
/// commit has no work left to save.
enum StatementWatchdog {
    /// Installs the watchdog on a connection (called once per connection, as it opens); `limit` 0: no time limit,
    /// cancellation only. The two words it keeps (start, limit in nanoseconds) live as long as the process:
    /// connections are few and kept open.
    static func install(on connection: OpaquePointer?, limit: TimeInterval) {
        guard let connection else { return }
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: 2)
        words[0] = 0
        words[1] = limit > 0 && limit.isFinite ? max(1, UInt64(min(limit, 1e9) * 1e9)) : 0
        sqlite3_trace_v2(
            connection, UInt32(SQLITE_TRACE_STMT),
            { _, context, statement, _ in
                if StoreCancellation.current?.isCancelled == true, let statement = OpaquePointer(statement),
                    !StatementWatchdog.alwaysRuns(statement), !StatementWatchdog.othersRunning(besides: statement)
                {
                    // Sets the connection's interrupt flag: SQLite checks it as the statement's program jumps past
                    // its first instruction, and clears it once no statement of the connection is running. With
                    // another statement still running (a cursor not yet reset) the flag would outlive this one and
                    // could stop a later ROLLBACK: then only the progress handler interrupts, within the statement.
                    sqlite3_interrupt(sqlite3_db_handle(statement))
                }
                if let words = context?.assumingMemoryBound(to: UInt64.self), words[1] != 0 {
                    words[0] = StatementWatchdog.now()
                }
                return 0
            }, words)
        sqlite3_progress_handler(
            connection, 1000,
            { context in
                if StoreCancellation.current?.isCancelled == true { return 1 }
                guard let words = context?.assumingMemoryBound(to: UInt64.self), words[0] != 0, words[1] != 0 else {
                    return 0
                }
                return StatementWatchdog.now() &- words[0] > words[1] ? 1 : 0
            }, words)
    }

    /// Whether a statement of `statement`'s connection other than it has begun and not been reset (a cursor being
    /// read): the connection's interrupt flag stays set until every such statement is done.
    static func othersRunning(besides statement: OpaquePointer) -> Bool {
        let connection = sqlite3_db_handle(statement)
        var other = sqlite3_next_stmt(connection, nil)
        while let candidate = other {
            if candidate != statement, sqlite3_stmt_busy(candidate) != 0 { return true }
            other = sqlite3_next_stmt(connection, candidate)
        }
        return false
    }

    /// Whether `statement` ends a transaction or switches GRDB's read-only mode: never interrupted for a
    /// cancellation (see the type's summary).
    static func alwaysRuns(_ statement: OpaquePointer) -> Bool {
        guard var text = sqlite3_sql(statement) else { return false }
        while text.pointee == 0x20 || text.pointee == 0x0A || text.pointee == 0x09 || text.pointee == 0x0D {
            text += 1
        }
        for prefix in ["COMMIT", "END", "ROLLBACK", "RELEASE", "PRAGMA query_only"]
        where strncasecmp(text, prefix, prefix.utf8.count) == 0 {
            return true
        }
        return false
    }

    /// The monotonic clock in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
