import Synchronization

/// Stops the store work done for one caller once it is cancelled (a server request whose client hung up): the
/// statement running for it is interrupted at once, later ones fail before they start.
///
/// The caller binds it to the thread doing the work (`run(_:)`), and cancels it from anywhere. The backends find it
/// while a statement runs: SQLite from its progress handler (every 1,000 virtual-machine steps, on the thread
/// running the statement) and as each statement begins (`StatementWatchdog`: the next statement of a transaction
/// fails, however short), PostgreSQL by registering how to stop the statement it waits for
/// (`whileWaiting(interrupt:_:)`). Interrupted work throws as a statement past its time limit does
/// (`StoreError.timedOut`, or a connection error) and keeps nothing it would have written.
package final class StoreCancellation: Sendable {
    private struct Interrupts: ~Copyable {
        var cancelled = false
        var next = 0
        var waiting: [Int: @Sendable () -> Void] = [:]
    }

    private let cancelled = Atomic<Bool>(false)
    private let interrupts = Mutex(Interrupts())
    /// Who the work is for (an athlete, a team), when the backend should share its connections fairly between
    /// callers: PostgreSQL's pool lends one caller at most half of its connections.
    package let caller: String?
    /// Connections the caller's work holds now (a backend's count: a transaction opened inside another one is
    /// already within the caller's share and never waits for it, which would wait for itself).
    package let connectionsHeld = Atomic<Int>(0)

    package init(caller: String? = nil) { self.caller = caller }

    /// The cancellation bound to the calling thread's store work, if any.
    @TaskLocal package static var current: StoreCancellation?

    /// Whether `cancel()` has been called.
    package var isCancelled: Bool { cancelled.load(ordering: .acquiring) }

    /// Interrupts the statement running for this caller and fails the ones it would start. Safe from any thread.
    ///
    /// The interrupts run under the lock that `whileWaiting` takes to unregister them, so none runs once its wait
    /// has returned (a PostgreSQL connection given back to the pool and lent to another caller is never closed
    /// by this one's late cancellation); each must therefore only schedule its work, never block.
    package func cancel() {
        cancelled.store(true, ordering: .releasing)
        interrupts.withLock { state in
            guard !state.cancelled else { return }
            state.cancelled = true
            for interrupt in state.waiting.values { interrupt() }
            state.waiting.removeAll()
        }
    }

    /// Runs `body` (store calls, synchronous) with this cancellation bound to the calling thread.
    package func run<T, Failure: Error>(_ body: () throws(Failure) -> T) throws(Failure) -> T {
        let result = Self.$current.withValue(self) { Result { () throws(Failure) -> T in try body() } }
        return try result.get()
    }

    /// Runs `body`, a blocking wait for a statement, calling `interrupt` (from the cancelling thread, under this
    /// cancellation's lock: it must not block) if this is cancelled meanwhile, and at once when it already is.
    package func whileWaiting<T>(interrupt: @escaping @Sendable () -> Void, _ body: () throws -> T) rethrows -> T {
        let key = interrupts.withLock { state -> Int? in
            guard !state.cancelled else { return nil }
            state.next += 1
            state.waiting[state.next] = interrupt
            return state.next
        }
        guard let key else {
            interrupt()
            return try body()
        }
        defer { _ = interrupts.withLock { $0.waiting.removeValue(forKey: key) } }
        return try body()
    }
}
