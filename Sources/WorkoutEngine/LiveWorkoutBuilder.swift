import Foundation
import WorkoutModel

/// Collects a workout as it happens, as HKLiveWorkoutBuilder does, with live statistics.
///
/// Lifecycle: notStarted → collecting (`beginCollection`) → ended (`endCollection`) → finished
/// (`finishWorkout`) or discarded (`discardWorkout`). Samples, events, route points, metadata and
/// activities are accepted while collecting and, when they lie inside the workout, after
/// collection ended (late arrivals) until the workout is finished.
///
/// Thread-safe: every call is synchronous and atomic; a call that throws changed nothing.
/// Statistics are updated in O(1) per sample and readable at any moment. Invalid samples and route
/// points follow `BuilderOptions.invalidInput` (dropped and counted, or rejected); invalid events
/// and activities always throw. Dates default to the injected clock's `now()`.
public final class LiveWorkoutBuilder: Sendable {
    let storage: RecordingStorage

    init(storage: RecordingStorage) {
        self.storage = storage
    }

    /// A builder without a session (imports, tests, tools that drive the timeline themselves).
    ///
    /// - Throws: `EngineError.invalidOption` / `.invalidConfiguration` for impossible settings.
    public convenience init(
        configuration: WorkoutConfiguration, clock: any WorkoutClock = SystemClock(),
        options: BuilderOptions = BuilderOptions(), sink: (any WorkoutRecordingSink)? = nil
    ) throws(EngineError) {
        let core = try BuilderCore(configuration: configuration, options: options, recordsChanges: sink != nil)
        self.init(storage: RecordingStorage(core: RecordingCore(builder: core), clock: clock, sink: sink))
    }

    private func now(_ date: Date?) -> Date { date ?? storage.clock.now() }

    // MARK: state

    public var state: BuilderState { storage.read { $0.builder.state } }
    /// The id the finished workout will have.
    public var workoutID: UUID { storage.read { $0.builder.workoutID } }
    public var configuration: WorkoutConfiguration { storage.read { $0.builder.configuration } }
    public var startDate: Date? {
        storage.read { $0.builder.state == .notStarted ? nil : date($0.builder.workoutStart) }
    }
    public var endDate: Date? { storage.read { $0.builder.workoutEnd.map(date) } }
    /// What was taken and dropped so far, by reason.
    public var counters: IngestCounters { storage.read { $0.builder.counters } }
    public var metadata: Metadata { storage.read { $0.builder.metadata } }
    /// The end of the latest data accepted (samples, events, route, activities); nil before any.
    public var latestDataDate: Date? {
        storage.read { $0.builder.latestData.isFinite ? date($0.builder.latestData) : nil }
    }
    /// Events stored so far, in the order they were added.
    public var events: [WorkoutEvent] { storage.read { $0.builder.events } }

    // MARK: lifecycle

    /// Starts collecting at `date` (now by default): the workout's start.
    public func beginCollection(at date: Date? = nil) throws(EngineError) {
        let start = now(date)
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.builder.beginCollection(at: start)
        }
    }

    /// Ends collection at `date` (now by default): the workout's end; an open activity ends there too.
    ///
    /// - Throws: `.endBeforeRecordedData` when data already recorded lies after `date`.
    public func endCollection(at date: Date? = nil) throws(EngineError) {
        let end = now(date)
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.builder.endCollection(at: end)
        }
    }

    /// Freezes and returns the workout; nothing can be added afterwards.
    public func finishWorkout() throws(EngineError) -> Workout {
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) -> Workout in
            try core.builder.finish()
        }
    }

    /// Abandons the workout; nothing can be added afterwards.
    public func discardWorkout() throws(EngineError) {
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.builder.discard()
        }
    }

    // MARK: adding

    /// Adds a batch of samples; returns what was accepted and what was dropped, by reason.
    ///
    /// Dropped (counted, never stored): impossible values, samples outside the workout, types the
    /// current activity does not collect, exact duplicates, and arrivals older than the reorder
    /// window for their stream. With `invalidInput == .reject`, an impossible or out-of-workout
    /// sample throws instead and nothing of the batch is taken.
    @discardableResult
    public func add(_ samples: [QuantitySample]) throws(EngineError) -> IngestReport {
        try storage.mutate { (core: inout RecordingCore) throws(EngineError) -> IngestReport in
            try core.ingest(samples: samples)
        }
    }

    /// Adds events (laps, markers, segments, pauses …); all or nothing.
    ///
    /// Pause-family events must come in time order; a pause while paused or a resume while running
    /// is normalised away and counted as `redundantPauseOrResume`, not stored.
    public func add(_ events: [WorkoutEvent]) throws(EngineError) {
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.ingest(events: events)
        }
    }

    /// Adds GPS route points; invalid ones follow `invalidInput` like samples.
    @discardableResult
    public func addRoute(_ points: [RoutePoint]) throws(EngineError) -> IngestReport {
        // In place, like samples: the route path validates everything before its first mutation.
        try storage.mutate { (core: inout RecordingCore) throws(EngineError) -> IngestReport in
            try core.ingest(route: points)
        }
    }

    /// Merges metadata into the workout's (new values win).
    public func addMetadata(_ metadata: Metadata) throws(EngineError) {
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.builder.add(metadata: metadata)
        }
    }

    /// Adds an activity; activities are ordered, never overlap, and lie inside the workout.
    ///
    /// An open activity (no end) must be the last one. To end the current activity and begin the
    /// next at one instant, use the session's `beginNewActivity`.
    @discardableResult
    public func addActivity(
        configuration: WorkoutConfiguration, start: Date, end: Date? = nil, metadata: Metadata = [:]
    ) throws(EngineError) -> WorkoutActivity {
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) -> WorkoutActivity in
            try core.addActivity(
                id: core.builder.nextID(), configuration: configuration, start: start, end: end, metadata: metadata)
        }
    }

    /// Sets an activity's end (when given) and merges metadata into it.
    public func updateActivity(id: UUID, end: Date? = nil, metadata: Metadata = [:]) throws(EngineError) {
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.builder.updateActivity(id: id, end: end, metadata: metadata)
        }
    }

    /// Re-applies a change recorded by a sink: how a journal rebuilds a builder after a crash.
    ///
    /// Replaying a builder's changes in order into a new builder with the same configuration and
    /// options gives the same workout, activities and statistics.
    public func apply(_ change: RecordingChange) throws(EngineError) {
        if case .samples(let samples) = change {
            // The sample path is applied in place, as `add` does (it never throws after mutating);
            // without the detectors: what they decided is in the changes already.
            _ = try storage.mutate { (core: inout RecordingCore) throws(EngineError) -> IngestReport in
                try core.builder.add(samples: samples)
            }
            return
        }
        try storage.transaction { (core: inout RecordingCore) throws(EngineError) in
            try core.apply(change)
        }
    }

    // MARK: reading

    /// Seconds from the start to `date` (now by default), or to the end once ended.
    public func elapsedTime(at date: Date? = nil) -> TimeInterval {
        let t = seconds(now(date))
        return storage.read { $0.builder.elapsed(now: t) }
    }

    /// Active seconds (pauses and motion pauses excluded) from the start to `date` or the end.
    public func activeDuration(at date: Date? = nil) -> TimeInterval {
        let t = seconds(now(date))
        return storage.read { $0.builder.activeDuration(now: t) }
    }

    /// The workout as it stands at `date` (now by default): activities, events and statistics.
    public func snapshot(at date: Date? = nil) -> Workout {
        let t = seconds(now(date))
        return storage.read { $0.builder.snapshotWorkout(at: t) }
    }

    /// Workout-level statistics of `type` at `date` (now by default); nil when nothing was recorded.
    public func statistics(for type: QuantityType, at date: Date? = nil) -> Statistics? {
        snapshot(at: date).statistics[type]
    }

    /// Every activity so far with its statistics at `date` (now by default).
    public func activities(at date: Date? = nil) -> [WorkoutActivity] {
        snapshot(at: date).activities
    }

    /// The open activity, if any, with its statistics at `date` (now by default).
    public func currentActivity(at date: Date? = nil) -> WorkoutActivity? {
        guard let last = snapshot(at: date).activities.last, last.end == nil else { return nil }
        return last
    }
}

extension RecordingCore {
    /// Applies one recorded change (journal replay).
    mutating func apply(_ change: RecordingChange) throws(EngineError) {
        switch change {
        case .sessionState(let stateChange):
            guard var machine else { return }
            let call: SessionCall =
                switch stateChange.to {
                case .notStarted: .prepare(at: stateChange.date)
                case .prepared: .prepare(at: stateChange.date)
                case .running:
                    stateChange.from == .paused ? .resume(at: stateChange.date) : .start(at: stateChange.date)
                case .paused: .pause(at: stateChange.date)
                case .stopped: .stop(at: stateChange.date)
                case .ended: .end(at: stateChange.date, reason: stateChange.endReason ?? .user)
                }
            let previous = machine.lastChange
            let applied = try machine.apply(call)
            self.machine = machine
            builder.emit(.sessionState(applied))
            exerciseMayHaveStopped(applied, previousChange: previous)
        case .collectionBegan(let start, let workoutID):
            builder.workoutID = workoutID
            try builder.beginCollection(at: start)
        case .samples(let samples):
            observeHeartRateTail(samples)
            _ = try builder.add(samples: samples)
        case .events(let events):
            try builder.add(events: events)
            autoPause.paused = builder.inactive.motionPaused
        case .route(let points):
            _ = try builder.add(route: points)
        case .activityBegan(let activity):
            // Keep a seeded id sequence in step with the original run, whose activity drew an id.
            _ = builder.nextID()
            _ = try addActivity(
                id: activity.id, configuration: activity.configuration, start: activity.start, end: activity.end,
                metadata: activity.metadata)
            // A leg the detector did not make was an explicit change: detection stayed off after it.
            if builder.activities.count > 1, activity.metadata[MetadataKey.detectedBy] != .string("automatic") {
                transitions = nil
            }
            syncLookahead()
        case .activityUpdated(let id, let end, let metadata):
            try builder.updateActivity(id: id, end: end, metadata: metadata)
        case .metadata(let metadata):
            try builder.add(metadata: metadata)
        case .dropped(let counts):
            for (reason, count) in counts { builder.counters.drop(reason, count: count) }
            builder.emit(.dropped(counts))
        case .collectionEnded(let end):
            if builder.state == .collecting { try builder.endCollection(at: end) }
        case .finished:
            _ = try builder.finish()
        case .discarded:
            try builder.discard()
        }
    }

    /// Adds an activity and, in a session with a multisport plan, moves the plan along when the
    /// activity is the plan's next leg: one rule for every path (session, builder, replay).
    mutating func addActivity(
        id: UUID, configuration: WorkoutConfiguration, start: Date, end: Date?, metadata: Metadata
    ) throws(EngineError) -> WorkoutActivity {
        let activity = try builder.addActivity(
            id: id, configuration: configuration, start: start, end: end, metadata: metadata)
        if machine != nil {
            let plan = builder.plan
            if builder.openPlan {
                // A detected plan grows with each leg begun (the detector's, or a journal's replayed).
                let next = (legIndex ?? -1) + 1
                if next == plan.count {
                    builder.plan.append(configuration)
                    builder.planMasks.append(builder.dataSource.mask(for: configuration))
                }
                legIndex = RecordingCore.nextLegIndex(after: legIndex, plan: builder.plan, beginning: configuration)
            } else if !plan.isEmpty {
                legIndex = RecordingCore.nextLegIndex(after: legIndex, plan: plan, beginning: configuration)
            }
        }
        return activity
    }

    /// The leg index after beginning an activity with `configuration` in a planned multisport.
    static func nextLegIndex(
        after current: Int?, plan: [WorkoutConfiguration], beginning configuration: WorkoutConfiguration
    )
        -> Int?
    {
        // The first later leg of that type (a detected race may skip a transition).
        var next = (current ?? -1) + 1
        while next < plan.count {
            if plan[next].activityType == configuration.activityType { return next }
            next += 1
        }
        return current
    }
}
