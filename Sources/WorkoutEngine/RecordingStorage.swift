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
    /// Session detectors (nil when off or without a session): transitions, auto-pause, recovery.
    var transitions: TransitionDetector?
    var autoPauseSettings: AutoPauseSettings?
    var autoPause = AutoPauseDetector()
    var recovery: RecoveryCollector?
    /// Detected changes the builder refused (should stay 0; shown to the user when not).
    var detectorFailures = 0
    /// The session's leg sequence (`BuilderOptions.legs`), nil for a configuration's own plan or none.
    var legs: LegSequence?

    /// A builder without a session: no detectors.
    init(builder: BuilderCore) {
        self.builder = builder
    }

    /// A session's core with the detectors its options turn on.
    init(machine: SessionStateMachine, builder: BuilderCore, options: BuilderOptions) {
        self.machine = machine
        self.builder = builder
        if options.automaticTransitions.enabled, options.hasPlan(for: builder.configuration) {
            transitions = TransitionDetector(
                options: options.automaticTransitions, general: options.legs != nil)
        }
        autoPauseSettings = options.autoPause
        legs = options.legs
        if options.heartRateRecovery.enabled { recovery = RecoveryCollector(options: options.heartRateRecovery) }
    }
}

/// The shared, locked home of one recording; the session and its builder are views onto it.
///
/// Every operation runs under the lock; accepted changes are handed to the sink and to
/// state-change subscribers before the lock is released, so they see the order of application.
final class RecordingStorage: Sendable {
    let clock: any WorkoutClock
    let sink: (any WorkoutRecordingSink)?
    private let core: Mutex<RecordingCore>
    private let stateChangeBroadcaster = AsyncBroadcaster<SessionStateChange>()

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

    /// Runs a non-throwing `body` in place (state the sink does not see, such as recovery readings).
    func mutateInPlace<R: Sendable>(_ body: (inout RecordingCore) -> R) -> R {
        core.withLock { body(&$0) }
    }

    private func deliver(_ changes: [RecordingChange]) {
        for change in changes {
            sink?.record(change)
            if case .sessionState(let stateChange) = change { publish(stateChange) }
        }
    }

    private func publish(_ change: SessionStateChange) {
        stateChangeBroadcaster.publish(change)
        if change.to == .ended { stateChangeBroadcaster.finish() }
    }

    /// A new stream of state changes from now on; it finishes after the change to `ended`.
    func stateChanges() -> AsyncStream<SessionStateChange> { stateChangeBroadcaster.subscribe() }
}
