import Foundation
import Synchronization
import WorkoutModel

/// A session's state machine and its builder, changed together under one lock.
struct RecordingCore: Sendable {
    /// nil for a builder used without a session.
    var machine: SessionStateMachine?
    var builder: BuilderCore
    /// Index into the configuration's planned legs of the current leg, once a plan is running.
    var legIndex: Int?
}

/// The shared, locked home of one recording; the session and its builder are views onto it.
///
/// Every operation runs under the lock; accepted changes are handed to the sink and to
/// state-change subscribers before the lock is released, so they see the order of application.
final class RecordingStorage: Sendable {
    let clock: any WorkoutClock
    let sink: (any WorkoutRecordingSink)?
    private let core: Mutex<RecordingCore>
    private let subscribers = Mutex<Subscribers>(Subscribers())

    private struct Subscribers: Sendable {
        var continuations: [Int: AsyncStream<SessionStateChange>.Continuation] = [:]
        var nextID = 0
        var finished = false
    }

    init(core: RecordingCore, clock: any WorkoutClock, sink: (any WorkoutRecordingSink)?) {
        self.clock = clock
        self.sink = sink
        self.core = Mutex(core)
    }

    /// Reads the core.
    func read<R: Sendable>(_ body: (borrowing RecordingCore) -> R) -> R {
        core.withLock { body($0) }
    }

    /// Runs `body` on a copy and keeps it only if it succeeds: all or nothing.
    ///
    /// Copying is cheap (copy-on-write arrays) but not free: use it for the rare multi-step
    /// operations, not for the per-sample path.
    func transaction<R: Sendable>(_ body: (inout RecordingCore) throws(EngineError) -> R) throws(EngineError) -> R {
        try core.withLock { (current: inout RecordingCore) throws(EngineError) -> R in
            var trial = current
            let result = try body(&trial)
            let changes = trial.builder.takeOutbox()
            current = trial
            deliver(changes)
            return result
        }
    }

    /// Runs `body` in place; `body` must not throw after its first mutation.
    func mutate<R: Sendable>(_ body: (inout RecordingCore) throws(EngineError) -> R) throws(EngineError) -> R {
        try core.withLock { (current: inout RecordingCore) throws(EngineError) -> R in
            let result = try body(&current)
            if !current.builder.outbox.isEmpty { deliver(current.builder.takeOutbox()) }
            return result
        }
    }

    private func deliver(_ changes: [RecordingChange]) {
        for change in changes {
            sink?.record(change)
            if case .sessionState(let stateChange) = change { publish(stateChange) }
        }
    }

    private func publish(_ change: SessionStateChange) {
        let ended = change.to == .ended
        let toFinish: [AsyncStream<SessionStateChange>.Continuation] = subscribers.withLock { subscribers in
            for continuation in subscribers.continuations.values { continuation.yield(change) }
            guard ended else { return [] }
            subscribers.finished = true
            defer { subscribers.continuations.removeAll() }
            return Array(subscribers.continuations.values)
        }
        // Finished outside the subscribers lock: finishing runs onTermination, which takes it.
        for continuation in toFinish { continuation.finish() }
    }

    /// A new stream of state changes from now on; it finishes after the change to `ended`.
    func stateChanges() -> AsyncStream<SessionStateChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: SessionStateChange.self)
        let id: Int? = subscribers.withLock { subscribers in
            guard !subscribers.finished else { return nil }
            let id = subscribers.nextID
            subscribers.nextID += 1
            subscribers.continuations[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }
}
