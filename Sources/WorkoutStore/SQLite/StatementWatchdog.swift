import Foundation
import GRDBSQLite

/// Interrupts SQLite statements that run longer than a limit, or whose caller's `StoreCancellation` is cancelled
/// (a server request whose client hung up): a trace callback notes when each statement begins, a progress handler
/// (every 1,000 virtual-machine steps, on the thread running the statement) interrupts it once the limit has
/// passed or the cancellation bound to that thread is cancelled. The statement then fails with SQLITE_INTERRUPT
/// (`StoreError.timedOut`) and its changes are rolled back.
enum StatementWatchdog {
    /// Installs the watchdog on a connection (called once per connection, as it opens); `limit` 0: no time limit,
    /// cancellation only. The two words it keeps (start, limit in nanoseconds) live as long as the process:
    /// connections are few and kept open.
    static func install(on connection: OpaquePointer?, limit: TimeInterval) {
        guard let connection else { return }
        let words = UnsafeMutablePointer<UInt64>.allocate(capacity: 2)
        words[0] = 0
        words[1] = limit > 0 && limit.isFinite ? max(1, UInt64(min(limit, 1e9) * 1e9)) : 0
        if words[1] > 0 {
            sqlite3_trace_v2(
                connection, UInt32(SQLITE_TRACE_STMT),
                { _, context, _, _ in
                    context?.assumingMemoryBound(to: UInt64.self).pointee = StatementWatchdog.now()
                    return 0
                }, words)
        }
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

    /// The monotonic clock in nanoseconds.
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
