import Foundation
import WorkoutModel

/// A live workout session (<doc:SessionAndBuilder#Session-states>), as HKWorkoutSession, with its associated live
/// builder.
///
/// Calls follow the state table; an illegal call throws `EngineError.illegalTransition` naming the
/// call and the state, and changes nothing. The session drives its builder: `start` begins
/// collection (and, for swim-bike-run, the first leg), `pause`/`resume` add pause and resume
/// events, `stop` ends collection at the stop instant (the end of exercise), `end` ends it if
/// still collecting. `finishWorkout` stays with the caller (the store saves what it returns).
/// Dates default to the injected clock's `now()`; each call's date must not precede the previous
/// state change. Thread-safe; every call is atomic across session and builder.
public final class WorkoutSession: Sendable {
    let storage: RecordingStorage
    /// The builder collecting this session's data.
    public let builder: LiveWorkoutBuilder

    /// Creates a session in state notStarted.
    ///
    /// - Parameters:
    ///   - configuration: what the workout is; swimBikeRun plans swim, T1, bike, T2, run.
    ///   - clock: the source of "now" for calls without a date.
    ///   - options: the builder's tunables (hold cap, reorder window, invalid-input policy …).
    ///   - sink: receives every accepted change in order (the journal).
    public init(
        configuration: WorkoutConfiguration, clock: any WorkoutClock = SystemClock(),
        options: BuilderOptions = BuilderOptions(), sink: (any WorkoutRecordingSink)? = nil
    ) throws(EngineError) {
        let core = try BuilderCore(configuration: configuration, options: options, recordsChanges: sink != nil)
        storage = RecordingStorage(
            core: RecordingCore(machine: SessionStateMachine(), builder: core, options: options), clock: clock,
            sink: sink)
        builder = LiveWorkoutBuilder(storage: storage)
    }

    public var configuration: WorkoutConfiguration { storage.read { $0.builder.configuration } }
    public var state: SessionState { storage.read { $0.machine?.state ?? .notStarted } }
    public var startDate: Date? { storage.read { $0.machine?.startDate } }
    /// When exercise stopped (stop, or end straight from running or paused).
    public var stopDate: Date? { storage.read { $0.machine?.stopDate } }
    public var endDate: Date? { storage.read { $0.machine?.endDate } }
    public var endReason: SessionEndReason? { storage.read { $0.machine?.endReason } }
    /// The planned legs of a multisport configuration (empty for single sports).
    /// A detected plan (`LegSequence.detected`) holds the legs found so far.
    public var plannedLegs: [WorkoutConfiguration] { storage.read { $0.builder.plan } }
    /// Index in `plannedLegs` of the current leg, once the plan runs.
    public var currentLegIndex: Int? { storage.read { $0.legIndex } }

    /// State changes from now on, with their dates; the stream finishes after `ended`.
    /// Each call returns an independent stream, so several observers can watch one session.
    public func stateChanges() -> AsyncStream<SessionStateChange> { storage.stateChanges() }

    private func now(_ date: Date?) -> Date { date ?? storage.clock.now() }

    public func prepare(at date: Date? = nil) throws(EngineError) {
        try perform(.prepare(at: now(date)))
    }

    public func start(at date: Date? = nil) throws(EngineError) {
        try perform(.start(at: now(date)))
    }

    public func pause(at date: Date? = nil) throws(EngineError) {
        try perform(.pause(at: now(date)))
    }

    public func resume(at date: Date? = nil) throws(EngineError) {
        try perform(.resume(at: now(date)))
    }

    /// Stops exercise at `date`: the builder's collection ends there (the workout's end).
    public func stop(at date: Date? = nil) throws(EngineError) {
        try perform(.stop(at: now(date)))
    }

    public func end(at date: Date? = nil, reason: SessionEndReason = .user) throws(EngineError) {
        try perform(.end(at: now(date), reason: reason))
    }

    /// Applies a session call with its effects on the builder, all or nothing.
    public func perform(_ call: SessionCall) throws(EngineError) {
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.perform(call)
        }
    }

    /// Ends the current activity (if any) at `date` and begins one with `configuration` there.
    @discardableResult
    public func beginNewActivity(
        configuration: WorkoutConfiguration, at date: Date? = nil, metadata: Metadata = [:]
    ) throws(EngineError) -> WorkoutActivity {
        let at = now(date)
        return try storage.transaction { (core: inout RecordingCore) throws(EngineError) -> WorkoutActivity in
            core.transitions = nil  // an explicit change wins over detection
            return try core.beginNewActivity(
                configuration: configuration, at: at, metadata: metadata, call: .beginNewActivity)
        }
    }

    /// Ends the current activity at `date`; the session goes on between activities.
    public func endCurrentActivity(at date: Date? = nil) throws(EngineError) {
        let at = now(date)
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.requireActivityCall(.endCurrentActivity, at: at)
            core.transitions = nil
            core.syncLookahead()
            guard let index = core.builder.currentActivityIndex else { throw .noCurrentActivity }
            try core.builder.updateActivity(id: core.builder.activities[index].id, end: at, metadata: [:])
        }
    }

    /// Moves a planned multisport to its next leg at `date` (the lap / transition button).
    ///
    /// - Throws: `.noNextLeg` after the last leg of a configuration's plan, or for a configuration without a plan;
    ///   `.noNextPlannedLeg` past a leg sequence's (`BuilderOptions.legs`) last leg, and always for a detected
    ///   sequence's next leg, which is not planned ahead (begin it with `beginNewActivity`).
    @discardableResult
    public func advanceToNextLeg(at date: Date? = nil) throws(EngineError) -> WorkoutActivity {
        let at = now(date)
        return try storage.transaction { (core: inout RecordingCore) throws(EngineError) -> WorkoutActivity in
            let plan = core.builder.plan
            let next = (core.legIndex ?? -1) + 1
            guard next < plan.count else {
                if let legs = core.legs {
                    let sports: [WorkoutActivityType]
                    if case .stated(let stated) = legs { sports = stated } else { sports = plan.map(\.activityType) }
                    throw .noNextPlannedLeg(sports: sports, detected: legs == .detected)
                }
                throw .noNextLeg(core.builder.configuration.activityType)
            }
            core.transitions = nil
            return try core.beginNewActivity(configuration: plan[next], at: at, metadata: [:], call: .advanceLeg)
        }
    }

    // MARK: detectors

    /// Whether automatic transition detection is still on (swim-bike-run, no explicit change yet).
    public var detectsTransitions: Bool { storage.read { $0.transitions != nil } }

    /// Detected changes the builder could not take (0 unless something is wrong; shown to users).
    public var detectorFailures: Int { storage.read { $0.detectorFailures } }

    // MARK: heart-rate recovery

    /// When the heart-rate recovery window closes (stop + window); nil before stop or when off.
    public var heartRateRecoveryWindowEnd: Date? { storage.read { $0.recovery?.windowEnd.map(date) } }

    /// The recovery result once `finishHeartRateRecovery` computed it.
    public var heartRateRecovery: HeartRateRecoveryResult? { storage.read { $0.recovery?.result } }

    /// Adds heart-rate readings taken after stop, for the recovery
    /// (<doc:SessionAndBuilder#Swimming-recovery-and-multisport-detection>); returns how many
    /// were kept. Readings of other types, before the stop, after the window, impossible values or
    /// after the recovery finished are not kept (the return value says how many were).
    @discardableResult
    public func addRecoveryHeartRate(_ samples: [QuantitySample]) -> Int {
        storage.mutateInPlace { core in
            guard core.recovery?.endOfExercise != nil else { return 0 }
            var kept = 0
            for sample in samples where sample.type == .heartRate {
                guard let value = try? sample.validate() else { continue }
                if core.recovery?.observeRecovery(
                    HeartRateReading(time: seconds(sample.start), value: value, source: sample.source)) == true {
                    kept += 1
                }
            }
            return kept
        }
    }

    /// Computes the heart-rate recovery from what was collected up to `date` (now by default) and
    /// returns it; later calls return the same result.
    ///
    /// Call it when the window closes (`heartRateRecoveryWindowEnd`), or earlier to cut it short:
    /// values whose windows were not reached are unavailable with `.windowCutShort`.
    /// - Throws: `.recoveryState` before the session stopped.
    @discardableResult
    public func finishHeartRateRecovery(at date: Date? = nil) throws(EngineError) -> HeartRateRecoveryResult {
        let end = now(date)
        return try storage.transaction { (core: inout RecordingCore) throws(EngineError) -> HeartRateRecoveryResult in
            try core.finishRecovery(at: end)
        }
    }
}

extension RecordingCore {
    /// A session call and its builder effects; runs on a transaction copy.
    mutating func perform(_ call: SessionCall) throws(EngineError) {
        guard var machine else { return }
        let previous = machine.lastChange
        let change = try machine.apply(call)
        self.machine = machine
        builder.emit(.sessionState(change))
        switch call {
        case .start(let at):
            if builder.state == .notStarted { try builder.beginCollection(at: at) }
            let plan = builder.plan
            if let first = plan.first, builder.activities.isEmpty, builder.state == .collecting {
                _ = try addActivity(id: builder.nextID(), configuration: first, start: at, end: nil, metadata: [:])
            }
            syncLookahead()
        case .pause(let at), .resume(let at):
            // A motion event a detector placed at the newest reading may be later than a pause dated
            // inside the reorder window: the pause event then takes that instant.
            let type: WorkoutEventType = if case .pause = call { .pause } else { .resume }
            let time = Swift.max(seconds(at), builder.inactive.lastEventTime)
            if builder.state == .collecting { try builder.add(events: [WorkoutEvent(type: type, start: date(time))]) }
        case .stop(let at), .end(let at, _):
            if builder.state == .collecting { try builder.endCollection(at: at) }
        case .prepare:
            break
        }
        exerciseMayHaveStopped(change, previousChange: previous)
    }

    /// Starts the heart-rate recovery when `change` stopped exercise. Paused at the stop, exercise
    /// ended when the pause began (the heart rate already fell during it): the collector is told of
    /// pauses and resumes so that it keeps that pause's end window.
    mutating func exerciseMayHaveStopped(_ change: SessionStateChange, previousChange: Date?) {
        if change.to == .paused {
            recovery?.pause(at: seconds(change.date))
        } else if change.to == .running {
            recovery?.resume()
        }
        guard change.to == .stopped || change.to == .ended, change.from == .running || change.from == .paused else {
            return
        }
        let end = change.from == .paused ? (previousChange ?? change.date) : change.date
        recovery?.stop(at: seconds(end))
    }

    /// Sets the builder's next-leg collection mask: only while transitions are being detected.
    mutating func syncLookahead() {
        let masks = builder.planMasks
        if transitions != nil, builder.openPlan {
            builder.lookaheadMask = builder.openLookahead
        } else if transitions != nil, let leg = legIndex, leg + 1 < masks.count {
            // The transition and the sport after it: a windowed decision places both in the past.
            builder.lookaheadMask = masks[leg + 1] | (leg + 2 < masks.count ? masks[leg + 2] : 0)
        } else {
            builder.lookaheadMask = 0
        }
    }

    /// Checks an activity call is legal in the current state and not dated before the last change.
    func requireActivityCall(_ call: SessionCallKind, at date: Date) throws(EngineError) {
        let state = machine?.state ?? .notStarted
        guard SessionStateMachine.target(of: call, from: state) != nil else {
            throw .illegalTransition(call: call, state: state)
        }
        if let last = machine?.lastChange, date < last {
            throw .dateBeforePrevious(call: call, date: date, previous: last)
        }
    }

    mutating func beginNewActivity(
        configuration: WorkoutConfiguration, at date: Date, metadata: Metadata, call: SessionCallKind
    ) throws(EngineError) -> WorkoutActivity {
        try requireActivityCall(call, at: date)
        if let index = builder.currentActivityIndex {
            if builder.activities[index].start == seconds(date) { throw .activityWouldBeEmpty(start: date) }
            if autoPause.paused {
                // A motion pause ends with its leg: the next leg starts moving (or pauses by its own rule).
                let time = Swift.max(seconds(date), builder.inactive.lastEventTime)
                try builder.add(events: [WorkoutEvent(type: .motionResumed, start: Date(timeIntervalSinceReferenceDate: time))])
                autoPause.paused = false
            }
            autoPause.reset()
            try builder.updateActivity(id: builder.activities[index].id, end: date, metadata: [:])
        }
        let activity = try addActivity(
            id: builder.nextID(), configuration: configuration, start: date, end: nil, metadata: metadata)
        syncLookahead()
        return activity
    }
}
