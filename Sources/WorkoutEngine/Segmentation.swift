import Foundation
import WorkoutModel

/// Auto-pause thresholds for one activity type.
public struct AutoPauseRule: Sendable, Hashable, Codable {
    /// Below this speed (m/s) the athlete counts as stopped.
    public var speedThreshold: Double
    /// Seconds of continuous slow readings before a motion pause begins; it is dated at the first
    /// slow reading, so the stopped time is excluded in full.
    public var holdTime: TimeInterval

    public init(speedThreshold: Double, holdTime: TimeInterval) {
        self.speedThreshold = speedThreshold
        self.holdTime = holdTime
    }
}

/// Auto-pause (<doc:SessionAndBuilder#Swimming-recovery-and-multisport-detection>): motionPaused / motionResumed
/// events when moving stops and starts.
///
/// Speed comes from the activity's own speed samples (cyclingSpeed while cycling, runningSpeed
/// while running or walking) and from the GPS route's speed. Activity types without a rule (swims,
/// transitions by default) are never auto-paused. Motion pauses are excluded from active duration.
public struct AutoPauseSettings: Sendable, Hashable, Codable {
    public var rules: [WorkoutActivityType: AutoPauseRule]

    public init(rules: [WorkoutActivityType: AutoPauseRule]) {
        self.rules = rules
    }

    /// Cycling below 1.0 m/s (3.6 km/h), running below 0.5 m/s, walking below 0.3 m/s, each for 3 s.
    public static let standard = AutoPauseSettings(rules: [
        .cycling: AutoPauseRule(speedThreshold: 1.0, holdTime: 3),
        .running: AutoPauseRule(speedThreshold: 0.5, holdTime: 3),
        .walking: AutoPauseRule(speedThreshold: 0.3, holdTime: 3),
    ])

    func validate() throws(EngineError) {
        for (type, rule) in rules {
            guard rule.speedThreshold.isFinite, rule.speedThreshold > 0, rule.holdTime.isFinite, rule.holdTime >= 0,
                rule.holdTime <= 600
            else {
                throw .invalidOption(
                    "auto-pause rule for \(type.rawValue) needs a speed threshold > 0 m/s and a hold time of "
                        + "0...600 s, got \(rule.speedThreshold) m/s and \(rule.holdTime) s")
            }
        }
    }
}

/// Automatic swim → T1 → bike → T2 → run detection for swim-bike-run sessions
/// (<doc:SessionAndBuilder#Swimming-recovery-and-multisport-detection>).
///
/// Cues: swimming distance, strokes and pool lengths mean swimming; cycling speed ≥ 2 m/s, cadence,
/// power or cycling distance mean riding; running cadence, speed, power or stride mean running;
/// moving on foot is walking/running distance, running speed, or a GPS speed between 1.2 and 6.5 m/s.
/// - Swim → T1 at the end of the last swim cue, once `quietWindow` seconds passed without one while
///   the athlete moves on foot (a rest at the pool wall is not a transition).
/// - T1 → bike at the first riding cue; bike → T2 at the end of the last riding cue, once
///   `quietWindow` seconds passed without one while the athlete moves on foot (a red light, where
///   the athlete stands still, is not a transition); T2 → run at the first running cue.
/// - A transition shorter than the quiet window is still found: the next sport's first cue ends it.
/// Boundaries lie in the past, so the builder keeps `lookback` seconds of each stream unfolded
/// (its reorder window grows to at least that); reads still see everything. The first explicit leg
/// change (a button, `advanceToNextLeg`, `beginNewActivity`) turns detection off for the session.
public struct TransitionDetectionOptions: Sendable, Hashable, Codable {
    public var enabled = true
    /// Seconds without the current sport's cues (while moving on foot) that end swim and bike.
    public var quietWindow: TimeInterval = 10
    /// How far back a detected boundary may be placed; becomes the builder's minimum reorder window.
    public var lookback: TimeInterval = 30

    public init(enabled: Bool = true, quietWindow: TimeInterval = 10, lookback: TimeInterval = 30) {
        self.enabled = enabled
        self.quietWindow = quietWindow
        self.lookback = lookback
    }

    func validate() throws(EngineError) {
        guard quietWindow.isFinite, quietWindow > 0, lookback.isFinite, lookback >= quietWindow + 2,
            lookback <= 600
        else {
            throw .invalidOption(
                "transition detection needs quietWindow > 0 and lookback >= quietWindow + 2 s (at most 600 s), "
                    + "got \(quietWindow) s and \(lookback) s")
        }
    }
}

/// What a detector asks the session to do.
enum DetectedChange: Sendable, Hashable {
    /// Begin planned leg `leg` at the instant.
    case beginLeg(Int, at: Seconds)
    case motionPaused(at: Seconds)
    case motionResumed(at: Seconds)
}

/// The auto-pause state for the current activity.
struct AutoPauseDetector: Sendable {
    var firstSlow: Seconds?
    var paused = false
    var latest = -Double.infinity

    /// Forgets the readings (a new leg); `paused` stays as the timeline is.
    mutating func reset() {
        firstSlow = nil
        latest = -Double.infinity
        lastFast = -Double.infinity
    }

    /// The newest fast reading.
    var lastFast = -Double.infinity

    /// One speed reading. A reading older than the newest (out of order inside the reorder window)
    /// corrects the slow run it belongs to: a slow one can move its start back, a fast one ends it.
    mutating func observe(speed: Double, at t: Seconds, rule: AutoPauseRule, into changes: inout [DetectedChange]) {
        guard t >= latest else {
            guard !paused else { return }
            if speed < rule.speedThreshold {
                if let start = firstSlow, t < start, t > lastFast { firstSlow = t }
            } else {
                lastFast = Swift.max(lastFast, t)
                if let start = firstSlow, t > start { firstSlow = nil }
            }
            return
        }
        latest = t
        if speed >= rule.speedThreshold {
            firstSlow = nil
            lastFast = t
            if paused {
                paused = false
                changes.append(.motionResumed(at: t))
            }
            return
        }
        let since = firstSlow ?? t
        firstSlow = since
        if !paused, t - since >= rule.holdTime {
            paused = true
            changes.append(.motionPaused(at: since))
        }
    }
}

/// The transition detector's state: the latest time of each cue.
struct TransitionDetector: Sendable {
    let options: TransitionDetectionOptions
    var lastSwim: Seconds?
    var firstRide: Seconds?
    var lastRide: Seconds?
    var firstRun: Seconds?
    var lastFootMotion = -Double.infinity
    /// Newest data instant seen.
    var now = -Double.infinity

    init(options: TransitionDetectionOptions) {
        self.options = options
    }

    /// Forgets cues of the previous leg (called when a leg begins at `t`).
    mutating func legBegan(at t: Seconds) {
        firstRide = firstRide.flatMap { $0 >= t ? $0 : nil }
        firstRun = firstRun.flatMap { $0 >= t ? $0 : nil }
    }

    @inline(__always)
    mutating func observe(_ sample: QuantitySample, value: Double, legStart: Seconds) {
        let start = seconds(sample.start)
        let end = seconds(sample.end)
        guard start >= legStart || end > legStart else { return }
        if end > now { now = end }
        let duration = end - start
        switch sample.type {
        case .distanceSwimming, .swimmingStrokeCount:
            if value > 0 { lastSwim = Swift.max(lastSwim ?? end, end) }
        case .cyclingSpeed:
            if value >= 2 { ride(start, end) }
        case .cyclingCadence, .cyclingPower:
            if value > 0 { ride(start, end) }
        case .distanceCycling:
            if duration > 0, value / duration >= 2 { ride(start, end) }
        case .runningCadence, .runningPower, .runningStrideLength:
            if value > 0 { run(start) }
        case .runningSpeed:
            if value >= 0.5 {
                run(start)
                lastFootMotion = Swift.max(lastFootMotion, end)
            }
        case .distanceWalkingRunning:
            if duration > 0, value / duration >= 0.5 { lastFootMotion = Swift.max(lastFootMotion, end) }
        default:
            break
        }
    }

    @inline(__always)
    private mutating func ride(_ start: Seconds, _ end: Seconds) {
        if firstRide.map({ start < $0 }) ?? true { firstRide = start }
        lastRide = Swift.max(lastRide ?? end, end)
    }

    @inline(__always)
    private mutating func run(_ start: Seconds) {
        if firstRun.map({ start < $0 }) ?? true { firstRun = start }
    }

    mutating func observe(route point: RoutePoint) {
        let t = seconds(point.date)
        if t > now { now = t }
        if let speed = point.speed, speed >= 1.2, speed <= 6.5 { lastFootMotion = Swift.max(lastFootMotion, t) }
    }

    mutating func observe(length event: WorkoutEvent) {
        guard let length = PoolLength(event), length.kind != .rest else { return }
        let end = seconds(event.end)
        lastSwim = Swift.max(lastSwim ?? end, end)
        if end > now { now = end }
    }

    /// The leg changes the cues call for, given the current planned leg (0 swim … 4 run).
    func decide(leg: Int, legStart: Seconds) -> [DetectedChange] {
        switch leg {
        case 0:
            if let ride = firstRide, ride > legStart {
                let t1 = Swift.min(lastSwim ?? ride, ride)
                return t1 < ride && t1 > legStart ? [.beginLeg(1, at: t1), .beginLeg(2, at: ride)] : [.beginLeg(2, at: ride)]
            }
            if let swim = lastSwim, swim > legStart, now - swim >= options.quietWindow, lastFootMotion > swim {
                return [.beginLeg(1, at: swim)]
            }
        case 1:
            if let ride = firstRide, ride > legStart { return [.beginLeg(2, at: ride)] }
        case 2:
            if let run = firstRun, run > legStart {
                let t2 = Swift.min(lastRide ?? run, run)
                return t2 < run && t2 > legStart ? [.beginLeg(3, at: t2), .beginLeg(4, at: run)] : [.beginLeg(4, at: run)]
            }
            if let ride = lastRide, ride > legStart, now - ride >= options.quietWindow, lastFootMotion > ride {
                return [.beginLeg(3, at: ride)]
            }
        case 3:
            if let run = firstRun, run > legStart { return [.beginLeg(4, at: run)] }
        default:
            break
        }
        return []
    }
}
