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
/// Cues: swimming distance, strokes and pool lengths mean swimming; cycling speed ≥ 1 m/s, cadence,
/// power or cycling distance mean riding; running cadence, speed, power or stride mean running;
/// moving on foot is walking/running distance at 0.5–6.5 m/s, running speed, or a GPS speed between
/// 1.2 and 6.5 m/s. The detector keeps, per second of the last `lookback` seconds, which cues it saw.
/// - A swim or a ride ends at its last cue after which a window of the following seconds (at least
///   `quietWindow`, and at least 10 seconds with a cue) consistently shows another sport: at most a
///   fifth of those seconds carry the current sport's cues. One record typed otherwise (a slow crank
///   turn read as steps, a stroke rate between strides) decides nothing; a rest at the pool wall or a
///   red light, where no cue comes, is no transition; a swim recorded a minute apart (smart recording)
///   ends only once the records come densely from the shore.
/// - The next leg (T1 → bike, T2 → run) begins at its sport's first cue after that end; with no
///   swim cue at all, the bike begins at the first riding cue.
/// - A transition shorter than the window is still found: it lies between the end and the next
///   sport's first cue.
/// Boundaries lie in the past, so the builder keeps `lookback` seconds of each stream unfolded
/// (its reorder window grows to at least that); reads still see everything. The first explicit leg
/// change (a button, `advanceToNextLeg`, `beginNewActivity`) turns detection off for the session.
public struct TransitionDetectionOptions: Sendable, Hashable, Codable {
    public var enabled = true
    /// Seconds after the current sport's last cue that must consistently show another sport before
    /// a swim or a ride ends.
    public var quietWindow: TimeInterval = 60
    /// How far back a detected boundary may be placed; becomes the builder's minimum reorder window.
    ///
    /// At least `max(quietWindow, 10) + 2` seconds (`validate`), and the window after a sport's last cue,
    /// seconds without cues (a transition) included, must fit in it: with 300 s a transition of up to about
    /// 288 s (lookback − 12 s) without cues is found; a shorter lookback misses longer ones.
    public var lookback: TimeInterval = 300

    public init(enabled: Bool = true, quietWindow: TimeInterval = 60, lookback: TimeInterval = 300) {
        self.enabled = enabled
        self.quietWindow = quietWindow
        self.lookback = lookback
    }

    /// Checks the options: a window after a cue spans at least `quietWindow` seconds and
    /// `TransitionDetector.minimumEvidence` seconds with a cue, and must fit in `lookback` with the
    /// second still filling and the one it began in: `lookback >= max(quietWindow, 10) + 2`
    /// (whole seconds), else a swim or a ride could never end.
    func validate() throws(EngineError) {
        let window = Swift.max(quietWindow, Double(TransitionDetector.minimumEvidence)).rounded(.up)
        guard quietWindow.isFinite, quietWindow > 0, lookback.isFinite, lookback >= window + 2, lookback <= 600
        else {
            throw .invalidOption(
                "transition detection needs quietWindow > 0 and lookback >= max(quietWindow, "
                    + "\(TransitionDetector.minimumEvidence) s of cues) + 2 s, at most 600 s (a shorter lookback "
                    + "can never end a swim or a ride); got quietWindow \(quietWindow) s and lookback \(lookback) s")
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

/// The transition detector's state: per second of the last `lookback` seconds, the cues seen.
struct TransitionDetector: Sendable {
    let options: TransitionDetectionOptions
    /// One second's cues: which sports, and the instants a leg boundary is placed at.
    struct CueSecond: Sendable {
        var second = Int64.min
        var flags: UInt8 = 0
        var swimEnd = -Double.infinity
        var rideEnd = -Double.infinity
        var rideStart = Double.infinity
        var runStart = Double.infinity
    }
    static let swim: UInt8 = 1
    static let ride: UInt8 = 2
    static let run: UInt8 = 4
    static let foot: UInt8 = 8
    /// Seconds with a cue a window needs before it decides.
    static let minimumEvidence = 10
    /// The largest share of a window's seconds with a cue that may still show the current sport.
    static let largestShare = 0.2
    /// The fastest a person moves on foot (m/s): faster is no stride.
    static let fastestOnFoot = 6.5
    /// The slowest cycling speed (m/s) that is riding: below it a bike stands (auto-pause's bound).
    static let slowestRide = 1.0

    var ring: [CueSecond]
    /// Cues of the current sport ending at or before this instant were judged: no end there.
    var judgedUntil = -Double.infinity
    /// Whether any swim cue came (without one, the bike begins at the first riding cue).
    var sawSwim = false
    /// Newest data instant seen.
    var now = -Double.infinity
    /// The second and leg of the last windowed judgement that found no end: until a new second completes, the
    /// same seconds give the same answer (`decide` skips it).
    var unchangedSecond = Int64.min
    /// The window being counted after a cue (its second), how far, and its counts so far.
    var pending: (second: Int64, probe: Int64, same: Int, other: Int)?
    var unchangedLegStart = -Double.infinity

    init(options: TransitionDetectionOptions) {
        self.options = options
        ring = Array(repeating: CueSecond(), count: Int(options.lookback.rounded(.up)) + 4)
    }

    /// Forgets the judgement of the previous leg (called when a leg begins at `t`).
    mutating func legBegan(at t: Seconds) {
        judgedUntil = -Double.infinity
        pending = nil
    }

    /// The slot of `second`, emptied when it held an older second; nil when `second` is older than the ring.
    @inline(__always)
    private mutating func slot(_ t: Seconds) -> Int? {
        // Sample times are finite (validated); the guard keeps a conversion from trapping all the same.
        guard t.isFinite, abs(t) < 1e15 else { return nil }
        let second = Int64(t.rounded(.down))
        let count = Int64(ring.count)
        let index = Int(((second % count) + count) % count)
        if ring[index].second == second { return index }
        guard second > ring[index].second else { return nil }
        ring[index] = CueSecond(second: second)
        return index
    }

    @inline(__always)
    private mutating func mark(_ flag: UInt8, at t: Seconds) {
        guard let index = slot(t) else { return }
        ring[index].flags |= flag
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
            if value > 0 { swim(end) }
        case .cyclingSpeed:
            if value >= Self.slowestRide { ride(start, end) }
        case .cyclingCadence, .cyclingPower:
            if value > 0 { ride(start, end) }
        case .distanceCycling:
            if duration > 0, value / duration >= Self.slowestRide { ride(start, end) }
        case .runningCadence, .runningPower, .runningStrideLength:
            if value > 0 { run(start) }
        case .runningSpeed:
            if value >= 0.5 {
                run(start)
                mark(Self.foot, at: start)
            }
        case .distanceWalkingRunning:
            if duration > 0, value / duration >= 0.5, value / duration <= Self.fastestOnFoot {
                mark(Self.foot, at: end)
            }
        default:
            break
        }
    }

    @inline(__always)
    private mutating func swim(_ end: Seconds) {
        sawSwim = true
        guard let index = slot(end) else { return }
        ring[index].flags |= Self.swim
        ring[index].swimEnd = Swift.max(ring[index].swimEnd, end)
    }

    @inline(__always)
    private mutating func ride(_ start: Seconds, _ end: Seconds) {
        if let index = slot(end) {
            ring[index].flags |= Self.ride
            ring[index].rideEnd = Swift.max(ring[index].rideEnd, end)
        }
        if let index = slot(start) {
            ring[index].flags |= Self.ride
            ring[index].rideStart = Swift.min(ring[index].rideStart, start)
        }
    }

    @inline(__always)
    private mutating func run(_ start: Seconds) {
        guard let index = slot(start) else { return }
        ring[index].flags |= Self.run
        ring[index].runStart = Swift.min(ring[index].runStart, start)
    }

    mutating func observe(route point: RoutePoint) {
        let t = seconds(point.date)
        if t > now { now = t }
        if let speed = point.speed, speed >= 1.2, speed <= Self.fastestOnFoot { mark(Self.foot, at: t) }
    }

    mutating func observe(length event: WorkoutEvent) {
        guard let length = PoolLength(event), length.kind != .rest else { return }
        let end = seconds(event.end)
        swim(end)
        if end > now { now = end }
    }

    /// The cue second of `second`, if the ring holds it.
    @inline(__always)
    private func cues(_ second: Int64) -> CueSecond? {
        let count = Int64(ring.count)
        let entry = ring[Int(((second % count) + count) % count)]
        return entry.second == second ? entry : nil
    }

    /// The end of the current sport (`flag`: swim or ride) in the leg begun at `legStart`: its
    /// last cue after which a window consistently shows another sport; nil while none does.
    private mutating func windowedEnd(of flag: UInt8, legStart: Seconds) -> Seconds? {
        guard now.isFinite, abs(now) < 1e15, legStart.isFinite, abs(legStart) < 1e15 else { return nil }
        let newest = Int64(now.rounded(.down)) - 1  // the current second may still fill
        // No earlier than `lookback` before the newest input: the builder's reorder window, where a boundary may
        // still be placed.
        let oldest = Int64((now - options.lookback).rounded(.up))
        var second = Swift.max(Int64(Swift.max(judgedUntil, legStart).rounded(.down)), oldest)
        while second <= newest {
            defer { second += 1 }
            guard let entry = cues(second), entry.flags & flag != 0 else { continue }
            let end = flag == Self.swim ? entry.swimEnd : entry.rideEnd
            guard end > legStart, end > judgedUntil else { continue }
            // The window after this cue: at least `quietWindow` seconds and `minimumEvidence` seconds with a cue.
            var same = 0
            var other = 0
            var probe = second + 1
            if let pending, pending.second == second {
                (same, other, probe) = (pending.same, pending.other, pending.probe)
            }
            var complete = false
            while probe <= newest, probe - second < Int64(ring.count) - 3 {
                if let next = cues(probe), next.flags != 0 {
                    if next.flags & flag != 0 { same += 1 } else { other += 1 }
                }
                if Double(probe - second) >= options.quietWindow, same + other >= Self.minimumEvidence {
                    complete = true
                    break
                }
                probe += 1
            }
            if !complete {
                // Still filling: decide later, counting on from here. Past the ring's reach: this cue can no
                // longer end the sport.
                if probe > newest {
                    pending = (second, probe, same, other)
                    return nil
                }
                pending = nil
                judgedUntil = end
                continue
            }
            pending = nil
            if other >= Self.minimumEvidence, Double(same) <= Self.largestShare * Double(same + other) {
                // The window's few cues of the sport may still be its last seconds (the last strokes before the
                // shore): the end is the cue up to which the sport's seconds outnumber the others' most.
                var best = end
                var score = 0
                var bestScore = 0
                var index = second + 1
                while index <= probe {
                    if let next = cues(index), next.flags != 0 {
                        if next.flags & flag != 0 {
                            score += 1
                            if score > bestScore {
                                bestScore = score
                                best = Swift.max(best, flag == Self.swim ? next.swimEnd : next.rideEnd)
                            }
                        } else {
                            score -= 1
                        }
                    }
                    index += 1
                }
                return best
            }
            judgedUntil = end
        }
        return nil
    }

    /// The first cue of `flag` (ride or run) at or after `from`, among the seconds the ring holds.
    private func firstStart(of flag: UInt8, from: Seconds) -> Seconds? {
        guard now.isFinite, abs(now) < 1e15, from.isFinite, abs(from) < 1e15 else { return nil }
        let newest = Int64(now.rounded(.down))
        var second = Swift.max(Int64(from.rounded(.down)), newest - Int64(ring.count) + 1)
        while second <= newest {
            if let entry = cues(second), entry.flags & flag != 0 {
                let start = flag == Self.ride ? entry.rideStart : entry.runStart
                if start >= from { return start }
            }
            second += 1
        }
        return nil
    }

    /// The leg changes the cues call for, given the current planned leg (0 swim … 4 run).
    mutating func decide(leg: Int, legStart: Seconds) -> [DetectedChange] {
        // The windowed ends look only at whole seconds before the newest one: judged once per second.
        let second = now.isFinite && abs(now) < 1e15 ? Int64(now.rounded(.down)) : Int64.min
        if leg == 0 || leg == 2, second == unchangedSecond, legStart == unchangedLegStart { return [] }
        switch leg {
        case 0:
            guard sawSwim else {
                if let ride = firstStart(of: Self.ride, from: legStart), ride > legStart { return [.beginLeg(2, at: ride)] }
                return []
            }
            guard let end = windowedEnd(of: Self.swim, legStart: legStart) else {
                (unchangedSecond, unchangedLegStart) = (second, legStart)
                return []
            }
            if let ride = firstStart(of: Self.ride, from: end), ride > end { return [.beginLeg(1, at: end), .beginLeg(2, at: ride)] }
            return [.beginLeg(1, at: end)]
        case 1:
            if let ride = firstStart(of: Self.ride, from: legStart), ride > legStart { return [.beginLeg(2, at: ride)] }
        case 2:
            guard let end = windowedEnd(of: Self.ride, legStart: legStart) else {
                (unchangedSecond, unchangedLegStart) = (second, legStart)
                return []
            }
            if let run = firstStart(of: Self.run, from: end), run > end { return [.beginLeg(3, at: end), .beginLeg(4, at: run)] }
            return [.beginLeg(3, at: end)]
        case 3:
            if let run = firstStart(of: Self.run, from: legStart), run > legStart { return [.beginLeg(4, at: run)] }
        default:
            break
        }
        return []
    }
}
