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

/// The legs of a multisport session (`BuilderOptions.legs`): a sequence of sports with a transition between
/// two, stated by the caller or found from the sensors.
public enum LegSequence: Sendable, Hashable, Codable {
    /// The sports in the order they are raced (swimming, cycling, running), a transition between two: a race
    /// format the athlete states (a duathlon is `[.running, .cycling, .running]`, a pool swim-run-swim
    /// `[.swimming, .running, .swimming]`). The lap button and the detector move along it as along a
    /// triathlon's plan.
    case stated([WorkoutActivityType])
    /// Found from the sensors: the first leg is the sport the first window of cues shows, each leg ends as a
    /// window shows another sport (a run also once it stands still before it), and a transition lies between
    /// two legs. The plan grows as the legs are found (`WorkoutSession.plannedLegs`).
    case detected

    /// The sports a leg can be: what the transition detector has cues for.
    public static let sports: Set<WorkoutActivityType> = [.swimming, .cycling, .running, .paddleSports]

    /// The planned legs of `sports` raced in `configuration` (its locations; a swim takes its swimming location
    /// and lap length, as a triathlon's does), a transition between two.
    public static func legs(_ sports: [WorkoutActivityType], in configuration: WorkoutConfiguration)
        -> [WorkoutConfiguration]
    {
        var legs: [WorkoutConfiguration] = []
        for (index, sport) in sports.enumerated() {
            if index > 0 { legs.append(WorkoutConfiguration(activityType: .transition, locationType: configuration.locationType)) }
            legs.append(leg(sport, in: configuration))
        }
        return legs
    }

    /// One leg of `sport` raced in `configuration` (see `legs(_:in:)`).
    public static func leg(_ sport: WorkoutActivityType, in configuration: WorkoutConfiguration) -> WorkoutConfiguration {
        guard sport == .swimming else {
            return WorkoutConfiguration(activityType: sport, locationType: configuration.locationType)
        }
        return WorkoutConfiguration(
            activityType: .swimming,
            locationType: configuration.swimmingLocationType == .pool ? .indoor : configuration.locationType,
            swimmingLocationType: configuration.swimmingLocationType, lapLength: configuration.lapLength)
    }

    func validate() throws(EngineError) {
        guard case .stated(let sports) = self else { return }
        guard sports.count >= 2, sports.allSatisfy(Self.sports.contains),
            zip(sports, sports.dropFirst()).allSatisfy({ $0 != $1 })
        else {
            throw .invalidOption(
                "a stated leg sequence needs two or more sports of swimming, cycling, running and paddleSports, "
                    + "no sport twice in a row (a transition lies between two legs); got \(sports.map(\.rawValue))")
        }
    }
}

/// What a detector asks the session to do.
enum DetectedChange: Sendable, Hashable {
    /// Begin planned leg `leg` at the instant.
    case beginLeg(Int, at: Seconds)
    /// Begin a leg of the sport (or a transition) at the instant, appending it to a detected plan.
    case beginSport(WorkoutActivityType, at: Seconds)
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
        /// (A leg sequence's detector only: `general`.)
        var runEnd = -Double.infinity
        var swimStart = Double.infinity
        /// (A leg sequence's detector only: a boat's cues.)
        var boatEnd = -Double.infinity
        var boatStart = Double.infinity
        /// (A leg sequence's detector only: the steps and running paces of speed samples on foot held in a row,
        /// `FootSpeeds`; set again whenever a sample changes its rows, and merged into the cues by `cues`.)
        var speedFlags: UInt8 = 0
        var speedRunStart = Double.infinity
        var speedRunEnd = -Double.infinity
    }
    static let swim: UInt8 = 1
    static let ride: UInt8 = 2
    static let run: UInt8 = 4
    static let foot: UInt8 = 8
    /// Standing still (a leg sequence's detector only): a speed under `slowestOnFoot`, counted only in a second
    /// without a sport's cue.
    static let still: UInt8 = 16
    /// Moving at an on-foot speed by GPS alone (a leg sequence's detector only): no sport (a bike moves so too).
    static let gpsFoot: UInt8 = 32
    /// On foot at a running pace, `runningPace` and more (a leg sequence's detector only): where a run begins
    /// (a walk through a transition zone is no run yet).
    static let pace: UInt8 = 64
    /// Paddling a boat (a leg sequence's detector only): a paddled boat's distance or speed.
    static let boat: UInt8 = 128
    /// The cues of a sport other than on foot: a run's window ends with them.
    static let notOnFoot: UInt8 = swim | ride | boat
    /// The cues of any sport.
    static let sports: UInt8 = swim | ride | run | foot | boat
    /// The slowest running pace (m/s): slower on foot is walking (through a transition zone).
    static let runningPace = 2.0
    /// Seconds a speed on foot holds before it is a step, and at `runningPace` a running pace (a leg sequence's: one
    /// speed sample, or one second's GPS jump, is no run; `FootSpeeds`).
    static let paceHeld = 2.0
    /// The most seconds between two of a source's speed samples on foot that are still a row (`FootSpeeds`): smart
    /// recording leaves an on-foot record's samples up to 30 s apart.
    static let speedRowGap = 30.0
    /// Seconds of standing still (no sport's cue between) that make a stop in a transition zone.
    static let stillStretch = 10.0
    /// The slowest speed (m/s) that is moving on foot.
    static let slowestOnFoot = 0.5
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
    /// A run's window being counted after a step (`windowedRunEnd`): its second, how far, and its counts so far.
    var pendingRun: (second: Int64, probe: Int64, same: Int, other: Int, quiet: Int)?
    /// The newest instant with a swim's, a ride's or a boat's cue: a run's window can end only after one.
    var latestSwimOrRide = -Double.infinity
    /// The seconds that hold a swim's, a ride's or a boat's cue (`notOnFoot`), ascending (the ring's reach and more): a
    /// run's window can end only with `minimumEvidence` of them after its step.
    var swimOrRideSeconds: [Int64] = []
    /// Where the last on-foot distance span at a running pace ended (a leg sequence's): the next span at one makes the
    /// pace.
    var lastPacedSpanEnd = -Double.infinity
    /// Each source's speed samples on foot (a leg sequence's): their rows make steps and running paces.
    var footSpeeds: [FootSpeeds] = []
    /// The source of the last speed sample on foot (an index in `footSpeeds`).
    var lastFootSpeeds = 0

    /// Whether this detector serves a leg sequence (`BuilderOptions.legs`: stated or detected) rather than a
    /// swim-bike-run configuration's own plan: it then also keeps where swims begin and runs end, standing
    /// still, and GPS speed apart from the feet (`decide(plan:open:leg:legStart:)`).
    let general: Bool

    init(options: TransitionDetectionOptions, general: Bool = false) {
        self.options = options
        self.general = general
        ring = Array(repeating: CueSecond(), count: Int(options.lookback.rounded(.up)) + 4)
    }

    /// Forgets the judgement of the previous leg (called when a leg begins at `t`).
    mutating func legBegan(at t: Seconds) {
        judgedUntil = -Double.infinity
        pending = nil
        pendingRun = nil
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
        setFlags(flag, at: index)
    }

    /// Sets cues of a slot, noting a second's first swim, ride or boat cue (`swimOrRideSeconds`).
    @inline(__always)
    private mutating func setFlags(_ flag: UInt8, at index: Int) {
        let before = ring[index].flags
        ring[index].flags |= flag
        guard before & Self.notOnFoot == 0, flag & Self.notOnFoot != 0 else { return }
        let second = ring[index].second
        if let last = swimOrRideSeconds.last, last > second {
            // A cue marked into an older second (a span): kept in order.
            swimOrRideSeconds.insert(second, at: firstIndex(after: second - 1))
        } else {
            swimOrRideSeconds.append(second)
        }
        if swimOrRideSeconds.count > 2 * ring.count { swimOrRideSeconds.removeFirst(ring.count) }
    }

    /// The index in `swimOrRideSeconds` (ascending) of the first second after `second`.
    private func firstIndex(after second: Int64) -> Int {
        var low = 0
        var high = swimOrRideSeconds.count
        while low < high {
            let middle = (low + high) / 2
            if swimOrRideSeconds[middle] > second { high = middle } else { low = middle + 1 }
        }
        return low
    }

    /// Whether at least `minimumEvidence` seconds after `second` hold a swim's or a ride's cue.
    private func swimOrRideSeconds(after second: Int64) -> Bool {
        swimOrRideSeconds.count - firstIndex(after: second) >= Self.minimumEvidence
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
            if value > 0 {
                swim(end)
                // (A leg sequence counts every second of the span swum: smart recording leaves an open-water
                // swim's records a minute apart.)
                if general { swimBegan(start, until: end) }
            }
        case .cyclingSpeed:
            if value >= Self.slowestRide {
                ride(start, end)
            } else if general, value < Self.slowestOnFoot {
                mark(Self.still, at: start)
            }
        case .cyclingCadence, .cyclingPower:
            if value > 0 { ride(start, end) }
        case .distanceCycling:
            if duration > 0, value / duration >= Self.slowestRide {
                ride(start, end)
            } else if general, duration > 0, value / duration < Self.slowestOnFoot {
                stood(start, until: end)
            }
        case .distancePaddleSports:
            if duration > 0, value / duration >= Self.slowestRide {
                paddle(start, end)
            } else if general, duration > 0, value / duration < Self.slowestOnFoot {
                stood(start, until: end)
            }
        case .paddleSportsSpeed:
            if value >= Self.slowestRide {
                paddle(start, end)
            } else if general, value < Self.slowestOnFoot {
                mark(Self.still, at: start)
            }
        case .runningCadence, .runningPower, .runningStrideLength:
            if value > 0 { run(start) }
        case .runningSpeed:
            if value >= 0.5 {
                // (A leg sequence's speed on foot is a step, or a running pace, only once it holds: `footSpeed`.)
                if general { footSpeed(value, at: start, from: sample.source) } else { run(start) }
                mark(Self.foot, at: start)
            } else if general {
                mark(Self.still, at: start)
                footSpeed(value, at: start, from: sample.source)
            }
        case .distanceWalkingRunning:
            if duration > 0, value / duration >= 0.5, value / duration <= Self.fastestOnFoot {
                mark(Self.foot, at: end)
                // A running pace holds for 2 s and more (one span, or two in a row): one second's GPS distance
                // jumping 2.5 m while the athlete stands (a fenix 2 at 0.25 m/s in its T1) is no run.
                if general {
                    let atPace = value / duration >= Self.runningPace
                    footEnds(end, pace: atPace && (duration >= 2 || lastPacedSpanEnd == start))
                    if atPace { lastPacedSpanEnd = end }
                }
            } else if general, duration > 0, value / duration < Self.slowestOnFoot {
                stood(start, until: end)
            }
        default:
            break
        }
    }

    @inline(__always)
    private mutating func swim(_ end: Seconds) {
        sawSwim = true
        if end > latestSwimOrRide { latestSwimOrRide = end }
        guard let index = slot(end) else { return }
        setFlags(Self.swim, at: index)
        ring[index].swimEnd = Swift.max(ring[index].swimEnd, end)
    }

    @inline(__always)
    private mutating func ride(_ start: Seconds, _ end: Seconds) {
        if end > latestSwimOrRide { latestSwimOrRide = end }
        if let index = slot(end) {
            setFlags(Self.ride, at: index)
            ring[index].rideEnd = Swift.max(ring[index].rideEnd, end)
        }
        if let index = slot(start) {
            setFlags(Self.ride, at: index)
            ring[index].rideStart = Swift.min(ring[index].rideStart, start)
        }
    }

    /// Paddling from `start` until `end` (a leg sequence's boat: every second of the span).
    @inline(__always)
    private mutating func paddle(_ start: Seconds, _ end: Seconds) {
        guard general else { return }
        if end > latestSwimOrRide { latestSwimOrRide = end }
        if let index = slot(start) {
            setFlags(Self.boat, at: index)
            ring[index].boatStart = Swift.min(ring[index].boatStart, start)
            ring[index].boatEnd = Swift.max(ring[index].boatEnd, start)
        }
        guard end - start < Double(ring.count) else { return }
        var t = start.rounded(.down) + 1
        while t <= end {
            if let index = slot(t) {
                setFlags(Self.boat, at: index)
                ring[index].boatEnd = Swift.max(ring[index].boatEnd, Swift.min(end, t))
            }
            t += 1
        }
        if let index = slot(end) {
            setFlags(Self.boat, at: index)
            ring[index].boatEnd = Swift.max(ring[index].boatEnd, end)
        }
    }

    /// A speed sample on foot in a leg sequence (slow ones too: they break their source's rows), added to its source's
    /// samples (`FootSpeeds`); the seconds whose samples changed their rows get their steps and paces again.
    private mutating func footSpeed(_ value: Double, at t: Seconds, from source: SourceDevice) {
        // Older than the ring: no cue is kept there.
        guard slot(t) != nil else { return }
        var index = lastFootSpeeds
        if index >= footSpeeds.count || footSpeeds[index].source != source {
            if let known = footSpeeds.firstIndex(where: { $0.source == source }) {
                index = known
            } else {
                footSpeeds.append(FootSpeeds(source: source))
                index = footSpeeds.count - 1
            }
            lastFootSpeeds = index
        }
        let keep = t - 2 * Double(ring.count)
        guard let (low, high) = footSpeeds[index].add(value, at: t, keepingFrom: keep) else { return }
        var second = low.rounded(.down)
        while second <= high {
            settleFootSpeeds(second)
            second += 1
        }
    }

    /// Sets the steps and running paces of `second` (`CueSecond.speedFlags`) from every source's samples in it.
    private mutating func settleFootSpeeds(_ second: Seconds) {
        guard let index = slot(second) else { return }
        var flags: UInt8 = 0
        var start = Double.infinity
        var end = -Double.infinity
        for source in footSpeeds.indices {
            footSpeeds[source].forEach(from: second, to: second + 1) { time, held in
                if held & FootSpeeds.step != 0 {
                    flags |= Self.run
                    start = Swift.min(start, time)
                    end = Swift.max(end, time)
                }
                if held & FootSpeeds.pace != 0 { flags |= Self.pace }
            }
        }
        ring[index].speedFlags = flags
        ring[index].speedRunStart = start
        ring[index].speedRunEnd = end
    }

    @inline(__always)
    private mutating func run(_ start: Seconds) {
        guard let index = slot(start) else { return }
        ring[index].flags |= Self.run
        ring[index].runStart = Swift.min(ring[index].runStart, start)
        if general { ring[index].runEnd = Swift.max(ring[index].runEnd, start) }
    }

    /// On foot until `end` (a leg sequence's run ends at its last step; at a running pace it may begin there).
    @inline(__always)
    private mutating func footEnds(_ end: Seconds, pace: Bool) {
        guard let index = slot(end) else { return }
        ring[index].runEnd = Swift.max(ring[index].runEnd, end)
        if pace {
            ring[index].flags |= Self.pace
            ring[index].runStart = Swift.min(ring[index].runStart, end)
        }
    }

    /// Standing still from `start` until `end` (a leg sequence's slow distance span): every second after the
    /// span's first, as smart recording leaves records 5–15 s apart and the athlete stood from the first second
    /// after the last moving record (the fenix 3 duathlon's rack: 4022 s moving, 4037 s 0.8 m on).
    @inline(__always)
    private mutating func stood(_ start: Seconds, until end: Seconds) {
        guard end - start < Double(ring.count) else {
            mark(Self.still, at: end)
            return
        }
        var t = start.rounded(.down) + 1
        while t < end {
            mark(Self.still, at: t)
            t += 1
        }
        mark(Self.still, at: end)
    }

    /// A swim from `start` until its end cue (a leg sequence's swim begins at its first length's start, and
    /// every second of a length is swimming).
    @inline(__always)
    private mutating func swimBegan(_ start: Seconds, until end: Seconds? = nil) {
        guard let index = slot(start) else { return }
        setFlags(Self.swim, at: index)
        ring[index].swimStart = Swift.min(ring[index].swimStart, start)
        guard let end, end - start < Double(ring.count) else { return }
        var t = start.rounded(.down) + 1
        while t < end {
            mark(Self.swim, at: t)
            t += 1
        }
    }

    mutating func observe(route point: RoutePoint) {
        let t = seconds(point.date)
        if t > now { now = t }
        if let speed = point.speed, speed >= 1.2, speed <= Self.fastestOnFoot {
            mark(general ? Self.gpsFoot : Self.foot, at: t)
        }
        if general, let speed = point.speed, speed >= 0, speed < Self.slowestOnFoot { mark(Self.still, at: t) }
    }

    mutating func observe(length event: WorkoutEvent) {
        guard let length = PoolLength(event), length.kind != .rest else { return }
        let end = seconds(event.end)
        swim(end)
        if general { swimBegan(seconds(event.start), until: end) }
        if end > now { now = end }
    }

    /// The cue second of `second`, if the ring holds it (with the steps and paces of its speed samples on foot).
    @inline(__always)
    private func cues(_ second: Int64) -> CueSecond? {
        let count = Int64(ring.count)
        var entry = ring[Int(((second % count) + count) % count)]
        guard entry.second == second else { return nil }
        if entry.speedFlags != 0 {
            entry.flags |= entry.speedFlags
            entry.runStart = Swift.min(entry.runStart, entry.speedRunStart)
            entry.runEnd = Swift.max(entry.runEnd, entry.speedRunEnd)
        }
        return entry
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
        // The window of the cue judged before, slid on to the next cue (its counts less the seconds between; `probe`
        // the first second not counted): a later cue's window ends no earlier, so it is counted on, not recounted.
        var carry: (from: Int64, probe: Int64, same: Int, other: Int)?
        while second <= newest {
            defer { second += 1 }
            guard let entry = cues(second), entry.flags & flag != 0 else { continue }
            let end = Self.end(of: flag, entry)
            guard end > legStart, end > judgedUntil else { continue }
            // The window after this cue: at least `quietWindow` seconds and `minimumEvidence` seconds with a cue.
            var same = 0
            var other = 0
            var probe = second + 1
            var complete = false
            // Counts made in an earlier call (`pending`) may miss cues marked since into the seconds they cover: they
            // decide this window, as before, but are not carried on.
            var counted = true
            if let pending, pending.second == second {
                (same, other, probe) = (pending.same, pending.other, pending.probe)
                counted = false
            } else if let carried = carry, carried.probe > second + 1 {
                (same, other, probe) = (carried.same, carried.other, carried.probe)
                var dropped = carried.from + 1
                while dropped <= second {
                    if let old = cues(dropped), old.flags & ~Self.still != 0 {
                        if old.flags & flag != 0 { same -= 1 } else { other -= 1 }
                    }
                    dropped += 1
                }
                // The window up to the last second counted may already hold enough.
                if Double(probe - 1 - second) >= options.quietWindow, same + other >= Self.minimumEvidence {
                    complete = true
                    probe -= 1
                }
            }
            carry = nil
            while !complete, probe <= newest, probe - second < Int64(ring.count) - 3 {
                // Standing still (a leg sequence's cue) says nothing about a swim's or a ride's end.
                if let next = cues(probe), next.flags & ~Self.still != 0 {
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
                if counted { carry = (second, probe, same, other) }
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
                    if let next = cues(index), next.flags & ~Self.still != 0 {
                        if next.flags & flag != 0 {
                            score += 1
                            if score > bestScore {
                                bestScore = score
                                best = Swift.max(best, Self.end(of: flag, next))
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
            if counted { carry = (second, probe + 1, same, other) }
        }
        return nil
    }

    /// Where the cues of a swim, a ride or a boat (`flag`) in a second end.
    @inline(__always)
    static func end(of flag: UInt8, _ entry: CueSecond) -> Seconds {
        flag == swim ? entry.swimEnd : flag == boat ? entry.boatEnd : entry.rideEnd
    }

    /// The first cue of `flag` (ride, run, or in a leg sequence swim, boat and on foot) at or after `from`, among the
    /// seconds the ring holds.
    private func firstStart(of flag: UInt8, from: Seconds) -> Seconds? {
        guard now.isFinite, abs(now) < 1e15, from.isFinite, abs(from) < 1e15 else { return nil }
        let newest = Int64(now.rounded(.down))
        var second = Swift.max(Int64(from.rounded(.down)), newest - Int64(ring.count) + 1)
        while second <= newest {
            if let entry = cues(second), entry.flags & flag != 0 {
                let start =
                    flag == Self.ride
                    ? entry.rideStart
                    : flag == Self.swim ? entry.swimStart : flag == Self.boat ? entry.boatStart : entry.runStart
                // (A second holding only the end of a longer cue has no start of it.)
                if start >= from, start.isFinite { return start }
            }
            second += 1
        }
        return nil
    }

    /// The end of a run in a leg sequence (`general`) begun at `legStart`: its last cue (a step, on foot) after
    /// which a window of at least `quietWindow` seconds, reaching `minimumEvidence` seconds with another sport's
    /// cues (a ride, a swim), holds at most a fifth of run seconds among its seconds with cues, standing still
    /// counted among them; nil while none does. A run stops in its transition before the next sport shows (the
    /// athlete stands at the rack): the stillness places the end, the next sport confirms it; a stop at a drink
    /// station or a red light with more running after it ends nothing. The end is the cue up to which the run's
    /// seconds outnumber the others' (stillness included) most.
    private mutating func windowedRunEnd(legStart: Seconds) -> Seconds? {
        guard now.isFinite, abs(now) < 1e15, legStart.isFinite, abs(legStart) < 1e15 else { return nil }
        // No swim or ride since the leg began or the last judged step: no window can show another sport yet.
        guard latestSwimOrRide > Swift.max(judgedUntil, legStart) else { return nil }
        let newest = Int64(now.rounded(.down)) - 1
        let oldest = Int64((now - options.lookback).rounded(.up))
        var second = Swift.max(Int64(Swift.max(judgedUntil, legStart).rounded(.down)), oldest)
        // Fewer than `minimumEvidence` seconds of another sport after the first step in reach: no window can end
        // the run yet (a run's stray riding cues, a wrist's power standing still, kept it judging every second).
        guard swimOrRideSeconds(after: second) else { return nil }
        // The window of the step judged before, slid on to the next step (its counts less the seconds between; `probe`
        // the first second not counted): a later step's window ends no earlier, so it is counted on, not recounted.
        var carry: (from: Int64, probe: Int64, same: Int, other: Int, quiet: Int)?
        while second <= newest {
            defer { second += 1 }
            guard let entry = cues(second), Self.isOnFoot(entry.flags) else { continue }
            let end = entry.runEnd
            guard end > legStart, end > judgedUntil else { continue }
            var same = 0
            var other = 0
            var quiet = 0
            var probe = second + 1
            var complete = false
            // Counted on from where the last call stopped (each call would count the same seconds again); those
            // counts may miss cues marked since (standing over a slow span): not carried on.
            var counted = true
            if let pendingRun, pendingRun.second == second {
                (same, other, quiet, probe) = (pendingRun.same, pendingRun.other, pendingRun.quiet, pendingRun.probe)
                counted = false
            } else if let carried = carry, carried.probe > second + 1 {
                (same, other, quiet, probe) = (carried.same, carried.other, carried.quiet, carried.probe)
                var dropped = carried.from + 1
                while dropped <= second {
                    if let old = cues(dropped) {
                        if Self.isOnFoot(old.flags) {
                            same -= 1
                        } else if old.flags & Self.notOnFoot != 0 {
                            other -= 1
                        } else if Self.isStill(old.flags) {
                            quiet -= 1
                        }
                    }
                    dropped += 1
                }
                // The window up to the last second counted may already hold enough (a later step's window ends no
                // earlier).
                if Double(probe - 1 - second) >= options.quietWindow, other >= Self.minimumEvidence {
                    complete = true
                    probe -= 1
                }
            }
            carry = nil
            while !complete, probe <= newest, probe - second < Int64(ring.count) - 3 {
                if let next = cues(probe) {
                    if Self.isOnFoot(next.flags) {
                        same += 1
                    } else if next.flags & Self.notOnFoot != 0 {
                        other += 1
                    } else if Self.isStill(next.flags) {
                        quiet += 1
                    }
                }
                if Double(probe - second) >= options.quietWindow, other >= Self.minimumEvidence {
                    complete = true
                    break
                }
                probe += 1
            }
            if !complete {
                if probe > newest {
                    pendingRun = (second, probe, same, other, quiet)
                    return nil
                }
                pendingRun = nil
                judgedUntil = end
                if counted { carry = (second, probe, same, other, quiet) }
                continue
            }
            pendingRun = nil
            guard Double(same) <= Self.largestShare * Double(same + other + quiet) else {
                judgedUntil = end
                if counted { carry = (second, probe + 1, same, other, quiet) }
                continue
            }
            var best = end
            var score = 0
            var bestScore = 0
            var index = second + 1
            while index <= probe {
                if let next = cues(index) {
                    if Self.isOnFoot(next.flags) {
                        score += 1
                        if score > bestScore {
                            bestScore = score
                            best = Swift.max(best, next.runEnd)
                        }
                    } else if next.flags & Self.notOnFoot != 0 || Self.isStill(next.flags) {
                        score -= 1
                    }
                }
                index += 1
            }
            return best
        }
        return nil
    }

    /// The sport a window of cues holds, from `from` on: from a second with a sport's cue, the next
    /// `minimumEvidence` seconds with sports' cues (the ring's reach), at least four fifths of them one sport's
    /// (swim, ride, or on foot); slid on second by second. Returns that sport's flag and its first cue at or after
    /// the window's start (a swim's first length's start, a ride's first turn, a run's first step); nil while no
    /// window does.
    private func dominantSport(from: Seconds, excluding: UInt8 = 0, span: Int64 = 0) -> (flag: UInt8, start: Seconds)? {
        guard now.isFinite, abs(now) < 1e15, from.isFinite, abs(from) < 1e15 else { return nil }
        let newest = Int64(now.rounded(.down)) - 1
        var second = Swift.max(Int64(from.rounded(.down)), Int64(now.rounded(.down)) - Int64(ring.count) + 4)
        let sports: [UInt8] = [Self.swim, Self.ride, Self.run | Self.foot, Self.boat]
        while second <= newest {
            defer { second += 1 }
            guard let entry = cues(second), Self.hasSport(entry.flags) else { continue }
            var counts = [0, 0, 0, 0]
            var total = 0
            var probe = second
            while probe <= newest, total < Self.minimumEvidence || probe - second < span {
                if let next = cues(probe), Self.hasSport(next.flags) {
                    total += 1
                    if next.flags & Self.swim != 0 { counts[0] += 1 }
                    if next.flags & Self.ride != 0 { counts[1] += 1 }
                    if Self.isOnFoot(next.flags) { counts[2] += 1 }
                    if next.flags & Self.boat != 0 { counts[3] += 1 }
                }
                probe += 1
            }
            guard total >= Self.minimumEvidence, probe - second >= span else { return nil }
            for (index, flag) in sports.enumerated()
            where flag & excluding == 0 && Double(counts[index]) >= (1 - Self.largestShare) * Double(total) {
                guard let start = firstStart(of: Self.startFlag(flag), from: Swift.max(from, Double(second))) else {
                    continue
                }
                return (flag, start)
            }
        }
        return nil
    }

    /// The leg changes the cues call for in a leg sequence (`general`): the plan's legs so far (`open`: found
    /// from the sensors, growing), the current leg (nil before the first of a detected plan) and its start (the
    /// workout's before the first).
    ///
    /// A sport's leg ends as a window shows another sport (`windowedEnd`; a run: `windowedRunEnd`) and a
    /// transition begins there; the next sport begins at its first cue after that (a stated plan's next sport;
    /// a detected plan's, the sport a window of cues then holds: `dominantSport`). A detected plan's first leg is
    /// the sport its first window holds, from the workout's start. A stated plan's last leg never ends.
    mutating func decide(plan: [WorkoutConfiguration], open: Bool, leg: Int?, legStart: Seconds) -> [DetectedChange] {
        let second = now.isFinite && abs(now) < 1e15 ? Int64(now.rounded(.down)) : Int64.min
        if second == unchangedSecond, legStart == unchangedLegStart { return [] }
        let changes = generalChanges(plan: plan, open: open, leg: leg, legStart: legStart)
        if changes.isEmpty { (unchangedSecond, unchangedLegStart) = (second, legStart) }
        return changes
    }

    private mutating func generalChanges(plan: [WorkoutConfiguration], open: Bool, leg: Int?, legStart: Seconds)
        -> [DetectedChange]
    {
        guard let leg, leg < plan.count else {
            guard open, let (flag, _) = dominantSport(from: legStart) else { return [] }
            return [.beginSport(Self.sport(flag), at: legStart)]
        }
        let type = plan[leg].activityType
        if type == .transition {
            if open {
                // Not the sport before the transition again (the athlete runs out beside the bike).
                let before = leg > 0 ? Self.flag(plan[leg - 1].activityType) : nil
                guard let (flag, start) = nextStart(from: legStart, previous: before), start > legStart else {
                    return []
                }
                return [.beginSport(Self.sport(flag), at: start)]
            }
            guard leg + 1 < plan.count, let flag = Self.flag(plan[leg + 1].activityType),
                let start = start(of: flag, from: legStart), start > legStart
            else { return [] }
            return [.beginLeg(leg + 1, at: start)]
        }
        guard let flag = Self.flag(type), open || leg + 1 < plan.count else { return [] }
        let end: Seconds
        if flag & Self.notOnFoot != 0 {
            guard let found = windowedEnd(of: flag, legStart: legStart) else { return [] }
            end = found
        } else {
            guard let found = windowedRunEnd(legStart: legStart) else { return [] }
            end = runEndBeforeStops(found, legStart: legStart)
        }
        if open {
            var changes: [DetectedChange] = [.beginSport(.transition, at: end)]
            if let (next, start) = nextStart(from: end, previous: flag), start > end {
                changes.append(.beginSport(Self.sport(next), at: start))
            }
            return changes
        }
        guard plan[leg + 1].activityType == .transition else { return [.beginLeg(leg + 1, at: end)] }
        var changes: [DetectedChange] = [.beginLeg(leg + 1, at: end)]
        if leg + 2 < plan.count, let next = Self.flag(plan[leg + 2].activityType),
            let start = start(of: next, from: end), start > end
        {
            changes.append(.beginLeg(leg + 2, at: start))
        }
        return changes
    }

    /// Where a leg of `flag`'s sport begins from `from` on: its first cue (`startFlag`), a run's after the stops
    /// of its transition zone (`runStartAfterStops`); nil while not known.
    private func start(of flag: UInt8, from: Seconds) -> Seconds? {
        guard let first = firstStart(of: Self.startFlag(flag), from: from) else { return nil }
        return flag & (Self.run | Self.foot) != 0 ? runStartAfterStops(first) : first
    }

    /// The sport a detected plan goes on with from `from` after the sport `previous` (`dominantSport`, never
    /// `previous` again) and where it begins (`start(of:from:)`).
    ///
    /// Out of the water an athlete runs to the transition area (the device's T1 holds it): on foot after a
    /// swim is a run only once, within `lookback - quietWindow` (240 s) of its first step, neither another
    /// sport's window (the bike, held half a window) nor a stop (the rack: a Forerunner 935 stood 4.5 minutes
    /// after running 110 s from the water) follows; after a stop it is looked at again. nil while not known.
    private func nextStart(from: Seconds, previous: UInt8?) -> (flag: UInt8, start: Seconds)? {
        var from = from
        let confirmation = options.lookback - options.quietWindow
        let held = Int64(options.quietWindow / 2)
        for _ in 0..<8 {
            guard let (flag, first) = dominantSport(from: from, excluding: previous ?? 0) else { return nil }
            guard flag & (Self.run | Self.foot) != 0 else { return (flag, first) }
            guard let start = runStartAfterStops(first) else { return nil }
            guard previous == Self.swim else { return (flag, start) }
            if let (other, otherStart) = dominantSport(
                from: start, excluding: Self.swim | Self.run | Self.foot, span: held),
                otherStart <= start + confirmation
            {
                return (other, otherStart)
            }
            var wait = false
            let second = Int64(start.rounded(.down))
            if let stopEnd = stop(after: second + 1, upTo: second + Int64(confirmation), wait: &wait) {
                from = Double(stopEnd)
                continue
            }
            guard !wait, now >= start + confirmation + Double(held) else { return nil }
            return (flag, start)
        }
        return nil
    }

    /// Whether a second's cues are on foot in a leg sequence: a step, or a foot cue that standing still (a GPS
    /// speed of 0 beside a drifting distance) does not contradict.
    @inline(__always)
    static func isOnFoot(_ flags: UInt8) -> Bool {
        flags & run != 0 || (flags & foot != 0 && flags & still == 0)
    }

    /// Whether a second's cues are standing still, no sport's.
    @inline(__always)
    static func isStill(_ flags: UInt8) -> Bool { flags & still != 0 && flags & (notOnFoot | run) == 0 }

    /// Whether a second holds a sport's cue (in a leg sequence).
    @inline(__always)
    static func hasSport(_ flags: UInt8) -> Bool { flags & notOnFoot != 0 || isOnFoot(flags) }

    /// The start second of a stop (`stillStretch` seconds standing, no sport's cue between) among the seconds
    /// `from` down to `to` (scanned backwards, the ring's reach); nil when none.
    private func stop(before from: Int64, downTo to: Int64) -> Int64? {
        var stretchEnd: Int64?
        var stretchStart: Int64?
        var second = from
        let floor = Swift.max(to, Int64(now.rounded(.down)) - Int64(ring.count) + 4)
        while second >= floor {
            if let entry = cues(second) {
                if Self.isStill(entry.flags) {
                    if stretchEnd == nil { stretchEnd = second }
                    stretchStart = second
                } else if Self.hasSport(entry.flags) {
                    if let end = stretchEnd, let start = stretchStart, Double(end - start) >= Self.stillStretch {
                        return start
                    }
                    (stretchEnd, stretchStart) = (nil, nil)
                }
            }
            second -= 1
        }
        if let end = stretchEnd, let start = stretchStart, Double(end - start) >= Self.stillStretch { return start }
        return nil
    }

    /// The last second of a stop (`stillStretch` seconds standing) that begins among the seconds `from` to
    /// `to`; nil when none. `wait` is set when the stop or the seconds to scan run past the newest input.
    private func stop(after from: Int64, upTo to: Int64, wait: inout Bool) -> Int64? {
        let newest = Int64(now.rounded(.down)) - 1
        var stretchStart: Int64?
        var stretchEnd: Int64?
        var second = from
        while second <= newest {
            if let entry = cues(second) {
                if Self.isStill(entry.flags) {
                    if stretchStart == nil {
                        if second > to { return nil }
                        stretchStart = second
                    }
                    stretchEnd = second
                } else if Self.hasSport(entry.flags) {
                    if let start = stretchStart, let end = stretchEnd, Double(end - start) >= Self.stillStretch {
                        return end
                    }
                    (stretchStart, stretchEnd) = (nil, nil)
                    if second > to { return nil }
                }
            }
            second += 1
        }
        wait = true
        return nil
    }

    /// A run's end moved back over its transition zone: while a stop lies within twice `quietWindow` before
    /// the end, the run ends at its last step before the stop (the athlete ran in, stood at the rack, then ran
    /// out beside the bike: the device's transition begins as the athlete enters the zone).
    private func runEndBeforeStops(_ end: Seconds, legStart: Seconds) -> Seconds {
        var end = end
        for _ in 0..<8 {
            let last = Int64(end.rounded(.down))
            guard let start = stop(before: last - 1, downTo: last - Int64(2 * options.quietWindow)) else { return end }
            var second = start - 1
            var earlier: Seconds?
            let floor = Swift.max(Int64(legStart.rounded(.down)), Int64(now.rounded(.down)) - Int64(ring.count) + 4)
            while second >= floor {
                if let entry = cues(second), Self.isOnFoot(entry.flags) {
                    earlier = entry.runEnd.isFinite ? entry.runEnd : Double(second)
                    break
                }
                second -= 1
            }
            guard let earlier, earlier > legStart else { return end }
            end = earlier
        }
        return end
    }

    /// A run's start moved on over its transition zone: when a stop begins within a `quietWindow` after the
    /// first step, the run begins at its first step (or running pace) after the stop (the first "steps" were
    /// the bike rolling in, or the athlete running the bike from the dismount line to the rack: a fenix 6S
    /// duathlon's bike at 5 m/s without a cadence, then 2 minutes standing; a fenix 3 duathlon's 49 s running
    /// beside the bike, then 64 s standing where it stood in T1). nil while the seconds to look at have not all
    /// come. A stop later than that is the run's own (an aid station 80 s into a Forerunner 935's run): the run
    /// began. (One stop: the step after it begins the run at once, so that a timer stop soon after, which
    /// settles the data before it, does not push the start past itself.)
    private func runStartAfterStops(_ start: Seconds) -> Seconds? {
        let first = Int64(start.rounded(.down))
        var wait = false
        let horizon = first + Int64(options.quietWindow)
        guard let stopEnd = stop(after: first + 1, upTo: horizon, wait: &wait) else { return wait ? nil : start }
        return firstStart(of: Self.run | Self.pace, from: Double(stopEnd))
    }

    /// The cues a sport's leg begins with: a run with a step or at a running pace (`pace`), not a walk.
    static func startFlag(_ flag: UInt8) -> UInt8 {
        flag & (run | foot) != 0 ? run | pace : flag
    }

    /// The cue flag of a sport's leg (on foot for a run); nil for a transition or another type.
    static func flag(_ type: WorkoutActivityType) -> UInt8? {
        switch type {
        case .swimming: swim
        case .cycling: ride
        case .running, .walking: run | foot
        case .paddleSports: boat
        default: nil
        }
    }

    /// The sport of a cue flag (`flag(_:)`).
    static func sport(_ flag: UInt8) -> WorkoutActivityType {
        flag == swim ? .swimming : flag == ride ? .cycling : flag == boat ? .paddleSports : .running
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

extension TransitionDetector {
    /// One source's speed samples on foot (`runningSpeed`) in a leg sequence, slow ones too, in time order (the same
    /// time: the slower first), and which of them are held in a row.
    ///
    /// A row is a source's samples one after the other, each from a class's speed on (`slowestOnFoot`: a step;
    /// `runningPace`: a running pace), at most `speedRowGap` apart; it is broken only by that source's own slower
    /// sample. A row that spans `paceHeld` seconds is held: its samples are steps (paces). So one sample at a pace
    /// (a foot pod's jump, a record's GPS speed) begins no run, another source's 0 m/s beside a foot pod (an indoor
    /// brick) breaks none of the foot pod's rows, and the same samples in any order, in any batches, give the same
    /// rows.
    struct FootSpeeds: Sendable {
        static let step: UInt8 = 1
        static let pace: UInt8 = 2
        let source: SourceDevice
        var times: [Seconds] = []
        var values: [Double] = []
        /// Per sample: `step` and `pace` when its row of that class is held.
        var held: [UInt8] = []
        /// The newest sample dropped (`add`'s `keepingFrom`), and where its rows began: a kept sample's row may reach
        /// back over it. Older samples are no longer taken.
        var dropped: (time: Seconds, value: Double, held: UInt8, stepSince: Seconds, paceSince: Seconds)?

        init(source: SourceDevice) { self.source = source }

        /// Adds a sample and settles the rows it changes; drops the samples older than `keep` (in chunks). The first
        /// and last time of the samples whose steps or paces changed; nil when none did.
        mutating func add(_ value: Double, at t: Seconds, keepingFrom keep: Seconds) -> (Seconds, Seconds)? {
            if let dropped, t <= dropped.time { return nil }
            var low = 0
            var high = times.count
            while low < high {
                let middle = (low + high) / 2
                if times[middle] < t || (times[middle] == t && values[middle] <= value) {
                    low = middle + 1
                } else {
                    high = middle
                }
            }
            times.insert(t, at: low)
            values.insert(value, at: low)
            held.insert(0, at: low)
            var changed: (Seconds, Seconds)?
            settle(low, Self.step, from: TransitionDetector.slowestOnFoot, changed: &changed)
            settle(low, Self.pace, from: TransitionDetector.runningPace, changed: &changed)
            if let first = times.first, first < keep - 300 { drop(before: keep) }
            return changed
        }

        /// The sample before `index` (the dropped one before the first kept).
        private func previous(_ index: Int) -> (time: Seconds, value: Double, held: UInt8)? {
            if index > 0 { return (times[index - 1], values[index - 1], held[index - 1]) }
            return dropped.map { ($0.time, $0.value, $0.held) }
        }

        /// Whether sample `index` is in the row of the sample before it (of the class from `bound`).
        private func linked(_ index: Int, from bound: Double) -> Bool {
            guard values[index] >= bound, let before = previous(index) else { return false }
            return before.value >= bound && times[index] - before.time <= TransitionDetector.speedRowGap
        }

        /// Where the dropped sample's row of class `bit` began.
        private func droppedSince(_ bit: UInt8) -> Seconds {
            guard let dropped else { return -.infinity }
            return bit == Self.step ? dropped.stepSince : dropped.paceSince
        }

        private mutating func set(_ index: Int, _ bit: UInt8, _ on: Bool, changed: inout (Seconds, Seconds)?) {
            let before = held[index]
            held[index] = on ? before | bit : before & ~bit
            guard held[index] != before else { return }
            let t = times[index]
            changed = changed.map { (Swift.min($0.0, t), Swift.max($0.1, t)) } ?? (t, t)
        }

        private mutating func setDropped(_ bit: UInt8, _ on: Bool) {
            guard let before = dropped?.held else { return }
            dropped?.held = on ? before | bit : before & ~bit
        }

        /// Settles the rows of class `bit` (speeds from `bound`) around the sample just inserted at `index`.
        private mutating func settle(
            _ index: Int, _ bit: UInt8, from bound: Double, changed: inout (Seconds, Seconds)?
        ) {
            let count = times.count
            if values[index] >= bound {
                let left = linked(index, from: bound)
                let right = index + 1 < count && linked(index + 1, from: bound)
                let leftHeld = left && (previous(index)?.held ?? 0) & bit != 0
                let rightHeld = right && held[index + 1] & bit != 0
                if leftHeld || rightHeld {
                    // Joined to a held row: the whole row is held (the other side's samples span under `paceHeld`).
                    set(index, bit, true, changed: &changed)
                    if left && !leftHeld {
                        // Linked to the dropped sample itself (at the first kept place): its summary is held too.
                        if index == 0 { setDropped(bit, true) }
                        var position = index - 1
                        while position >= 0 {
                            set(position, bit, true, changed: &changed)
                            guard linked(position, from: bound) else { break }
                            if position == 0 { setDropped(bit, true) }
                            position -= 1
                        }
                    }
                    if right && !rightHeld {
                        var position = index + 1
                        while position < count {
                            set(position, bit, true, changed: &changed)
                            guard position + 1 < count, linked(position + 1, from: bound) else { break }
                            position += 1
                        }
                    }
                    return
                }
                // Neither side held: the row spans under `paceHeld` either side of the sample.
                var first = index
                while first > 0, linked(first, from: bound) { first -= 1 }
                let reachesDropped = first == 0 && linked(0, from: bound)
                let since = reachesDropped ? droppedSince(bit) : times[first]
                var last = index
                while last + 1 < count, linked(last + 1, from: bound) { last += 1 }
                guard times[last] - since >= TransitionDetector.paceHeld else { return }
                for position in first...last { set(position, bit, true, changed: &changed) }
                if reachesDropped { setDropped(bit, true) }
                return
            }
            // A slower sample breaks the row the samples either side were in, when that row was held.
            guard index + 1 < count, let before = previous(index), before.held & bit != 0, before.value >= bound,
                values[index + 1] >= bound, times[index + 1] - before.time <= TransitionDetector.speedRowGap
            else { return }
            // The part before: held while it still spans `paceHeld`.
            let end = before.time
            if index == 0 {
                setDropped(bit, end - droppedSince(bit) >= TransitionDetector.paceHeld)
            } else {
                var position = index - 1
                var stillHeld = false
                while true {
                    if end - times[position] >= TransitionDetector.paceHeld {
                        stillHeld = true
                        break
                    }
                    guard linked(position, from: bound) else { break }
                    if position == 0 {
                        stillHeld = end - droppedSince(bit) >= TransitionDetector.paceHeld
                        break
                    }
                    position -= 1
                }
                if !stillHeld {
                    for part in position...(index - 1) { set(part, bit, false, changed: &changed) }
                    if position == 0, linked(0, from: bound) { setDropped(bit, false) }
                }
            }
            // The part after.
            let start = times[index + 1]
            var position = index + 1
            var stillHeld = false
            while true {
                if times[position] - start >= TransitionDetector.paceHeld {
                    stillHeld = true
                    break
                }
                guard position + 1 < count, linked(position + 1, from: bound) else { break }
                position += 1
            }
            if !stillHeld {
                for part in (index + 1)...position { set(part, bit, false, changed: &changed) }
            }
        }

        /// Drops the samples older than `keep`, keeping where the rows of the newest of them began.
        private mutating func drop(before keep: Seconds) {
            var count = 0
            var stepSince = droppedSince(Self.step)
            var paceSince = droppedSince(Self.pace)
            while count < times.count, times[count] < keep {
                if !linked(count, from: TransitionDetector.slowestOnFoot) { stepSince = times[count] }
                if !linked(count, from: TransitionDetector.runningPace) { paceSince = times[count] }
                count += 1
            }
            guard count > 0 else { return }
            dropped = (times[count - 1], values[count - 1], held[count - 1], stepSince, paceSince)
            times.removeFirst(count)
            values.removeFirst(count)
            held.removeFirst(count)
        }

        /// Calls `body` with each sample from `start` up to before `end` and its steps and paces.
        func forEach(from start: Seconds, to end: Seconds, _ body: (Seconds, UInt8) -> Void) {
            var low = 0
            var high = times.count
            while low < high {
                let middle = (low + high) / 2
                if times[middle] < start { low = middle + 1 } else { high = middle }
            }
            while low < times.count, times[low] < end {
                body(times[low], held[low])
                low += 1
            }
        }
    }
}
