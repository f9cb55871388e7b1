import Foundation
import WorkoutEngine
import WorkoutModel

extension FITImportPlan {
    /// Applies one step to a session: the calls a live recording makes (leg changes, pauses, samples,
    /// events, route points).
    public func apply(_ step: ImportStep, at time: Date, to session: WorkoutSession) throws(EngineError) {
        switch step {
        case .beginLeg(let index):
            try session.beginNewActivity(configuration: legs[index].configuration, at: time)
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
        // The record steps are made as they come (`orderedSteps`): a step's samples are released once applied.
        var steps = orderedSteps()
        var index = 0
        while let (key, step) = steps.next() {
            let time = FITTime.date(key.time)
            clock.set(time)
            try apply(step, at: time, to: session)
            if let onStep, !onStep(index, time) { return false }
            index += 1
        }
        clock.set(end)
        try session.stop(at: end)
        try session.end(at: end)
        return true
    }

    /// Feeds the heart rate recorded after the end into the session's heart-rate recovery and
    /// finishes it; nil when the file has fewer readings after the end than a recovery needs.
    public func finishRecovery(of session: WorkoutSession) throws(EngineError) -> HeartRateRecoveryResult? {
        guard recoveryHeartRate.count >= builderOptions.heartRateRecovery.minimumReadings,
            let last = recoveryHeartRate.map(\.start).max()
        else { return nil }
        session.addRecoveryHeartRate(recoveryHeartRate)
        let windowEnd = session.heartRateRecoveryWindowEnd ?? last
        return try session.finishHeartRateRecovery(at: min(windowEnd, last.addingTimeInterval(1)))
    }
}
