import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel

// The FIT plan on the format-neutral live path (Foundation, Model, Engine and Formats only: the FIT
// fuzz target compiles this file with them).

extension SessionScript {
    /// The script of a planned FIT import.
    public init(_ plan: FITImportPlan) {
        self.init(
            configuration: plan.configuration, builderOptions: plan.builderOptions, start: plan.start, end: plan.end,
            activities: plan.legs.map(\.configuration), steps: SessionSteps(count: plan.stepCount) { plan.makeStepIterator() }, recoveryHeartRate: plan.recoveryHeartRate,
            metadata: plan.metadata, sampleCount: plan.sampleCount, routePointCount: plan.routePointCount)
    }
}

extension FITImportPlan {
    /// Starts `session` at the workout's start and applies every step on `clock`, then stops and ends it
    /// (`SessionScript.replay(into:clock:onStep:)`).
    @discardableResult
    public func replay(
        into session: WorkoutSession, clock: ManualClock, onStep: ((Int, Date) -> Bool)? = nil
    ) throws(EngineError) -> Bool {
        try SessionScript(self).replay(into: session, clock: clock, onStep: onStep)
    }

    /// Feeds the heart rate recorded after the end into the session's heart-rate recovery and
    /// finishes it (`SessionScript.finishRecovery(of:)`).
    public func finishRecovery(of session: WorkoutSession) throws(EngineError) -> HeartRateRecoveryResult? {
        try SessionScript(self).finishRecovery(of: session)
    }
}
