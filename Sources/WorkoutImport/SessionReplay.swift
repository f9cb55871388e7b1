import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel

/// The inputs of one live session, whatever file they came from: what to configure, and every
/// state change, sample, event and route point in time order. Each reader (FIT, Apple Health)
/// produces these; `SessionScript.replay(into:clock:onStep:)` is the one path into the engine.
///
/// Nothing of a device's summaries goes in: the engine recomputes every statistic.
public struct SessionScript: Sendable {
    public var configuration: WorkoutConfiguration
    public var builderOptions: BuilderOptions
    public var start: Date
    public var end: Date
    /// The activities' configurations: `ImportStep.beginLeg(i)` begins `activities[i]`.
    public var activities: [WorkoutConfiguration]
    /// Every input in time order (made as the replay goes, for a reader that can).
    public var steps: SessionSteps
    /// Heart rate after the end (for the heart-rate recovery).
    public var recoveryHeartRate: [QuantitySample]
    /// Metadata set on the workout at its start.
    public var metadata: Metadata
    /// Samples and route points the steps feed.
    public var sampleCount: Int
    public var routePointCount: Int
    /// What the file states for the workout and its activities, kept where the engine has no sample
    /// of the type (an Apple Health export's statistics without their records).
    public var statedStatistics = StatedStatistics()

    public init(
        configuration: WorkoutConfiguration, builderOptions: BuilderOptions, start: Date, end: Date,
        activities: [WorkoutConfiguration], steps: SessionSteps, recoveryHeartRate: [QuantitySample] = [],
        metadata: Metadata = [:], sampleCount: Int = 0, routePointCount: Int = 0
    ) {
        self.configuration = configuration
        self.builderOptions = builderOptions
        self.start = start
        self.end = end
        self.activities = activities
        self.steps = steps
        self.recoveryHeartRate = recoveryHeartRate
        self.metadata = metadata
        self.sampleCount = sampleCount
        self.routePointCount = routePointCount
    }
}

/// A session's inputs in time order, made as they are iterated when the reader can (a large FIT
/// file's record steps are decoded into samples one record at a time, so they are never all held).
public struct SessionSteps: Sequence, Sendable {
    /// How many steps the sequence yields.
    public let count: Int
    private let make: @Sendable () -> AnyIterator<TimedStep>

    /// Steps held whole.
    public init(_ steps: [TimedStep]) {
        count = steps.count
        make = { AnyIterator(steps.makeIterator()) }
    }

    /// Steps made by a fresh iterator each time the sequence is iterated; `count` is how many it yields.
    public init(count: Int, make: @escaping @Sendable () -> AnyIterator<TimedStep>) {
        self.count = count
        self.make = make
    }

    public func makeIterator() -> AnyIterator<TimedStep> { make() }
}

extension SessionSteps: ExpressibleByArrayLiteral {
    public init(arrayLiteral elements: TimedStep...) { self.init(elements) }
}

/// Statistics a file states, for the workout and per activity (in `SessionScript.activities` order).
public struct StatedStatistics: Sendable {
    public var workout: [Statistics] = []
    public var activities: [[Statistics]] = []

    public init(workout: [Statistics] = [], activities: [[Statistics]] = []) {
        self.workout = workout
        self.activities = activities
    }
}

extension SessionScript {
    /// Applies one step to a session: the calls a live recording makes (leg changes, pauses, samples,
    /// events, route points).
    public func apply(_ step: ImportStep, at time: Date, to session: WorkoutSession) throws(EngineError) {
        switch step {
        case .beginLeg(let index):
            try session.beginNewActivity(configuration: activities[index], at: time)
        case .endLeg:
            try session.endCurrentActivity(at: time)
        case .pause(let motion):
            if motion {
                try session.builder.add([WorkoutEvent(type: .motionPaused, start: time)])
            } else {
                try session.pause(at: time)
            }
        case .resume(let motion):
            if motion {
                try session.builder.add([WorkoutEvent(type: .motionResumed, start: time)])
            } else {
                try session.resume(at: time)
            }
        case .samples(let samples):
            try session.builder.add(samples)
        case .events(let events):
            try session.builder.add(events)
        case .route(let points):
            try session.builder.addRoute(points)
        }
    }

    /// Starts `session` at the workout's start, applies every step in time order on `clock`, then
    /// stops and ends it at the workout's end: the path of a live recording, on a virtual clock.
    ///
    /// - Parameter onStep: called after each step with its index and time; returning false stops the
    ///   replay early (the caller's commit failed), leaving the session running.
    /// - Returns: false when `onStep` stopped the replay.
    @discardableResult
    public func replay(
        into session: WorkoutSession, clock: ManualClock, onStep: ((Int, Date) -> Bool)? = nil
    ) throws(EngineError) -> Bool {
        clock.set(start)
        try session.start(at: start)
        try session.builder.addMetadata(metadata)
        // A reader may make its steps as they come (`SessionSteps`): a step's samples are released once applied.
        for (index, step) in steps.enumerated() {
            clock.set(step.time)
            try apply(step.step, at: step.time, to: session)
            if let onStep, !onStep(index, step.time) { return false }
        }
        clock.set(end)
        try session.stop(at: end)
        try session.end(at: end)
        return true
    }

    /// Feeds the heart rate recorded after the end into the session's heart-rate recovery and
    /// finishes it; nil when the script has fewer readings after the end than a recovery needs.
    public func finishRecovery(of session: WorkoutSession) throws(EngineError) -> HeartRateRecoveryResult? {
        guard recoveryHeartRate.count >= builderOptions.heartRateRecovery.minimumReadings,
            let last = recoveryHeartRate.map(\.start).max()
        else { return nil }
        session.addRecoveryHeartRate(recoveryHeartRate)
        let windowEnd = session.heartRateRecoveryWindowEnd ?? last
        return try session.finishHeartRateRecovery(at: min(windowEnd, last.addingTimeInterval(1)))
    }
}
