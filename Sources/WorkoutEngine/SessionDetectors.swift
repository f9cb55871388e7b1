import Foundation
import WorkoutModel

/// The live path of a session's input: detectors look at each batch before the builder takes it.
///
/// Detectors run only for live input (not when a journal is replayed: what they decided was
/// journaled as the events and activities it produced).
extension RecordingCore {
    /// Adds samples: the detectors see them first (a detected leg exists before its samples land).
    mutating func ingest(samples: [QuantitySample]) throws(EngineError) -> IngestReport {
        if machine != nil, builder.state == .collecting {
            try builder.precheck(samples: samples)
            observe(samples)
        }
        return try builder.add(samples: samples)
    }

    /// Adds events; pool lengths are swim cues for transition detection.
    mutating func ingest(events: [WorkoutEvent]) throws(EngineError) {
        try builder.add(events: events)
        guard transitions != nil, machine != nil, builder.state == .collecting else { return }
        for event in events where event.type == .lap { transitions?.observe(length: event) }
        detectLegs()
    }

    /// Adds route points; their speed feeds transition detection and auto-pause.
    mutating func ingest(route points: [RoutePoint]) throws(EngineError) -> IngestReport {
        let report = try builder.add(route: points)
        guard machine != nil, builder.state == .collecting else { return report }
        let context = currentContext()
        var speeds: [(time: Seconds, speed: Double)] = []
        for point in points where point.isValid && isInsideWorkout(seconds(point.date)) {
            transitions?.observe(route: point)
            if context.rule != nil, let speed = point.speed { speeds.append((seconds(point.date), speed)) }
        }
        detectMotion(speeds, rule: context.rule)
        detectLegs()
        return report
    }

    private func isInsideWorkout(_ t: Seconds) -> Bool {
        t >= builder.workoutStart && t <= (builder.workoutEnd ?? .infinity)
    }

    /// Feeds the heart-rate readings of valid samples to the recovery's exercise tail.
    mutating func observeHeartRateTail(_ samples: [QuantitySample]) {
        guard recovery != nil else { return }
        for sample in samples where sample.type == .heartRate {
            guard let value = try? sample.validate(), isInsideWorkout(seconds(sample.start)) else { continue }
            recovery?.observeExercise(
                HeartRateReading(time: seconds(sample.start), value: value, source: sample.source))
        }
    }

    private struct Context {
        var legStart: Seconds
        var activityType: WorkoutActivityType
        var rule: AutoPauseRule?
    }

    private func currentContext() -> Context {
        let current = builder.currentActivityIndex
        let type = current.map { builder.activities[$0].configuration.activityType } ?? builder.configuration.activityType
        return Context(
            legStart: current.map { builder.activities[$0].start } ?? builder.workoutStart, activityType: type,
            rule: autoPauseSettings?.rules[type])
    }

    private mutating func observe(_ samples: [QuantitySample]) {
        var context = currentContext()
        var speeds: [(time: Seconds, speed: Double)] = []
        let end = builder.workoutEnd ?? .infinity
        // A large batch is judged second by second, as if it came so: the detector's window holds only
        // `lookback` seconds of cues.
        var judged = transitions?.now ?? 0
        for sample in samples {
            // Only what the builder can take: an impossible or out-of-workout sample decides nothing.
            guard let value = try? sample.validate() else { continue }
            let start = seconds(sample.start)
            guard start >= builder.workoutStart, seconds(sample.end) <= end else { continue }
            if transitions != nil, start >= judged + 1 {
                // The speeds so far belong to the leg under way: judged by its rule before a leg change, and
                // the rest of the batch by the new leg's sport and rule.
                detectMotion(speeds, rule: context.rule)
                speeds.removeAll(keepingCapacity: true)
                detectLegs()
                context = currentContext()
                judged = start.rounded(.down)
            }
            switch sample.type {
            case .heartRate:
                if recovery != nil {
                    recovery?.observeExercise(HeartRateReading(time: start, value: value, source: sample.source))
                }
            case .cyclingSpeed where context.activityType == .cycling,
                .runningSpeed where context.activityType == .running || context.activityType == .walking:
                if context.rule != nil { speeds.append((start, value)) }
            default:
                break
            }
            if transitions != nil { transitions?.observe(sample, value: value, legStart: context.legStart) }
        }
        detectMotion(speeds, rule: context.rule)
        detectLegs()
    }

    /// Auto-pause on a batch's speeds, in time order (a batch may carry them out of order).
    private mutating func detectMotion(_ speeds: [(time: Seconds, speed: Double)], rule: AutoPauseRule?) {
        guard let rule, !speeds.isEmpty, machine?.state == .running else { return }
        var changes: [DetectedChange] = []
        for reading in speeds.sorted(by: { $0.time < $1.time }) {
            autoPause.observe(speed: reading.speed, at: reading.time, rule: rule, into: &changes)
        }
        applyDetected(changes)
    }

    /// Applies leg changes until the cues call for none: one batch may hold several legs' cues.
    private mutating func detectLegs() {
        for _ in 0..<5 {
            let changes = decideTransitions()
            guard !changes.isEmpty else { return }
            let before = legIndex
            applyDetected(changes)
            guard legIndex != before else { return }
        }
    }

    private mutating func decideTransitions() -> [DetectedChange] {
        if transitions?.general == true, machine?.state == .running || machine?.state == .paused {
            // A leg sequence (stated or detected): before a detected plan's first leg, from the workout's start.
            var legStart = builder.workoutStart
            if legIndex != nil {
                guard let current = builder.currentActivityIndex else { return [] }
                legStart = builder.activities[current].start
            }
            return transitions?.decide(
                plan: builder.plan, open: builder.openPlan, leg: legIndex, legStart: legStart) ?? []
        }
        guard transitions != nil, let leg = legIndex, let current = builder.currentActivityIndex,
            machine?.state == .running || machine?.state == .paused
        else { return [] }
        return transitions?.decide(leg: leg, legStart: builder.activities[current].start) ?? []
    }

    private mutating func applyDetected(_ changes: [DetectedChange]) {
        for change in changes {
            switch change {
            case .beginLeg(let leg, let at): beginDetectedLeg(leg, at: at)
            case .beginSport(let type, let at): beginDetectedSport(type, at: at)
            case .motionPaused(let at): addMotionEvent(.motionPaused, at: at)
            case .motionResumed(let at): addMotionEvent(.motionResumed, at: at)
            }
        }
    }

    /// The earliest instant a detected change may take, from `t` on.
    private func placeable(_ t: Seconds) -> Seconds {
        var result = builder.earliestUnsettled(from: Swift.max(t, builder.workoutStart))
        if let last = machine?.lastChange { result = Swift.max(result, seconds(last)) }
        return result
    }

    private mutating func addMotionEvent(_ type: WorkoutEventType, at t: Seconds) {
        let time = Swift.max(placeable(t), builder.inactive.lastEventTime)
        do {
            try builder.add(events: [WorkoutEvent(type: type, start: date(time))])
        } catch {
            detectorFailures += 1
        }
    }

    /// Ends the current leg and begins planned leg `leg` at `t` (or the earliest instant allowed).
    private mutating func beginDetectedLeg(_ leg: Int, at t: Seconds) {
        let plan = builder.plan
        guard leg < plan.count, let current = builder.currentActivityIndex, leg > (legIndex ?? -1) else { return }
        var time = placeable(t)
        let currentStart = builder.activities[current].start
        if time <= currentStart { time = (currentStart + 0.001) }
        // On a copy: ending the current leg and beginning the next is all or nothing.
        var trial = self
        do {
            _ = try trial.beginNewActivity(
                configuration: plan[leg], at: date(time), metadata: [MetadataKey.detectedBy: .string("automatic")],
                call: .advanceLeg)
        } catch {
            detectorFailures += 1
            return
        }
        trial.legIndex = leg
        trial.transitions?.legBegan(at: time)
        trial.syncLookahead()
        self = trial
    }

    /// Begins a leg of `type` found in a detected plan at `t` (or the earliest instant allowed), ending the
    /// current one: the plan grows by it (`addActivity`).
    private mutating func beginDetectedSport(_ type: WorkoutActivityType, at t: Seconds) {
        guard builder.openPlan else { return }
        var time = placeable(t)
        if let current = builder.currentActivityIndex {
            let currentStart = builder.activities[current].start
            if time <= currentStart { time = currentStart + 0.001 }
        }
        var trial = self
        do {
            _ = try trial.beginNewActivity(
                configuration: LegSequence.leg(type, in: builder.configuration), at: date(time),
                metadata: [MetadataKey.detectedBy: .string("automatic")], call: .advanceLeg)
        } catch {
            detectorFailures += 1
            return
        }
        trial.transitions?.legBegan(at: time)
        trial.syncLookahead()
        self = trial
    }

    // MARK: heart-rate recovery

    /// Computes (once) the recovery with what was collected up to `end`.
    mutating func finishRecovery(at end: Date) throws(EngineError) -> HeartRateRecoveryResult {
        guard let stop = machine?.stopDate else {
            throw .recoveryState("exercise has not stopped yet; stop the session first")
        }
        guard var collector = recovery else {
            return HeartRateRecoveryResult(
                endOfExercise: stop, collectedUntil: stop, oneMinuteUnavailable: .disabled,
                twoMinutesUnavailable: .disabled)
        }
        if let result = collector.result { return result }
        let until = Swift.min(Swift.max(seconds(end), seconds(stop)), collector.windowEnd ?? seconds(stop))
        let workout = builder.snapshotWorkout(at: seconds(stop))
        guard
            let result = collector.compute(
                until: until, activityType: builder.configuration.activityType, activeDuration: workout.duration,
                maximumHeartRate: workout.statistics[.heartRate]?.maximum?.value)
        else {
            throw .recoveryState("exercise has not stopped yet; stop the session first")
        }
        collector.result = result
        recovery = collector
        return result
    }
}
