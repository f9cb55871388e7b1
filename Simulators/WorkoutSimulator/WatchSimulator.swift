import Foundation
import WorkoutModel

/// One second of simulated race: what the watch and its sensors report during [time, time + 1).
public struct SimulatedSecond: Sendable {
    /// Race seconds since the start.
    public var offset: Int
    public var time: Date
    /// Index of the leg this second belongs to; nil after the finish (recovery).
    public var leg: Int?
    /// True on the first second of a leg after the first: the lap / transition button.
    public var beginsLeg: Bool
    public var samples: [QuantitySample]
    /// Pool lengths (lap events) that ended during this second.
    public var events: [WorkoutEvent]
    public var route: [RoutePoint]
    /// Ports disconnected during this second (scenario `disconnects`): nothing from their sensors.
    public var disconnected: Set<WirePort> = []
    /// The athlete's true heart rate (the model, noise-free): a strap counts these beats even when
    /// its radio does not get through.
    public var heartRate: Double = 0
}

/// The simulated athlete and sensors: a deterministic stream of `SimulatedSecond`s for a scenario and
/// a seed, plus the ground truth it was generated from.
///
/// Heart rate follows intensity with first-order kinetics (`heartRateTimeConstant`) and, after the
/// finish, decays to rest with `recoveryTimeConstant`, so the true one-minute recovery is known.
/// Leg boundaries fall on whole seconds. Nothing is held beyond the current second, so a 24-hour
/// scenario needs no more memory than a 1-hour one.
public struct WatchSimulator: Sequence, IteratorProtocol, Sendable {
    public let scenario: Scenario
    public let seed: UInt64
    public let start: Date

    public static let strap = SourceDevice(name: "Sim HRM", manufacturer: "workout-engine", identifier: "ant:120:101")
    public static let bikeSensor = SourceDevice(
        name: "Sim Speed/Cadence", manufacturer: "workout-engine", identifier: "ant:121:102")
    public static let powerMeter = SourceDevice(
        name: "Sim Power", manufacturer: "workout-engine", identifier: "ant:11:103")
    public static let footPod = SourceDevice(
        name: "Sim Foot Pod", manufacturer: "workout-engine", identifier: "ant:124:104")
    public static let watch = SourceDevice(
        name: "Sim Watch", manufacturer: "workout-engine", identifier: "watch-link:1")

    private var random: SplitMix
    private var second = 0
    private var legIndex = 0
    private var segmentIndex = 0
    private var segmentDone = 0.0  // metres or seconds covered in the current segment
    private var heartRate: Double
    private var finishOffset: Int?
    /// The model's (noise-free) heart rate when the last leg ended; set once the race is over.
    public private(set) var heartRateAtFinish = 0.0
    private var distanceTotal = 0.0
    private var lengthDistance = 0.0
    private var lengthStart = 0.0
    private var lengthStrokes = 0.0
    private var openWaterStrokes = 0.0
    private var strokeWindowStart = 0
    private var pendingLegStart = false

    /// - Parameters:
    ///   - start: the race's start instant (a fixed default keeps replays bit-identical).
    public init(scenario: Scenario, seed: UInt64, start: Date = Date(timeIntervalSinceReferenceDate: 800_000_000)) {
        self.scenario = scenario
        self.seed = seed
        self.start = start
        random = SplitMix(seed)
        heartRate =
            scenario.athlete.restingHeartRate + 0.25
            * (scenario.athlete.maxHeartRate - scenario.athlete.restingHeartRate)
    }

    private var recoverySeconds: Int { Swift.max(scenario.recoverySeconds ?? 150, 0) }

    public mutating func next() -> SimulatedSecond? {
        if let finishOffset {
            guard second - finishOffset < recoverySeconds else { return nil }
            return recoverySecond(since: finishOffset)
        }
        return raceSecond()
    }

    // MARK: the race

    private mutating func raceSecond() -> SimulatedSecond? {
        let leg = scenario.legs[legIndex]
        let segment = leg.segments[segmentIndex]
        let athlete = scenario.athlete
        let t = Double(second)
        let time = start.addingTimeInterval(t)
        var result = SimulatedSecond(
            offset: second, time: time, leg: legIndex, beginsLeg: pendingLegStart, samples: [], events: [], route: [],
            disconnected: disconnectedPorts(at: t))
        pendingLegStart = false

        let resting = segment.kind == .rest
        let stopped = segment.kind == .stop
        let intensity = resting ? 0.15 : stopped ? 0.3 : segment.intensity
        // Heart rate: first-order approach to the intensity's target.
        let target = athlete.restingHeartRate + intensity * (athlete.maxHeartRate - athlete.restingHeartRate)
        heartRate += (target - heartRate) * (1 - exp(-1 / athlete.heartRateTimeConstant))
        result.heartRate = heartRate
        if !droppedOut(.heartRate, at: t) {
            result.samples.append(
                QuantitySample(.heartRate, observedHeartRate(), at: time, source: Self.strap))
        }

        // Movement this second.
        let factor = 0.5 + 0.5 * intensity / 0.7
        var speed: Double
        switch leg.type {
        case .swimming: speed = resting ? 0 : 100 / athlete.swimPace100m * factor * (segment.kind == .drill ? 0.8 : 1)
        case .cycling: speed = athlete.cyclingSpeed * factor
        case .running, .walking, .other, .swimBikeRun, .paddleSports: speed = 1000 / athlete.runPaceKm * factor
        case .transition: speed = 2.0 * factor
        }
        if stopped { speed = 0 }
        var moved = speed
        var segmentEnds = false
        if let distance = segment.distance, !resting {
            moved = Swift.min(speed, distance - segmentDone)
            segmentDone += moved
            segmentEnds = segmentDone >= distance - 1e-9
        } else {
            segmentDone += 1
            segmentEnds = segmentDone >= (segment.duration ?? 0) - 1e-9
        }
        distanceTotal += moved
        emitMovement(leg: leg, segment: segment, speed: speed, moved: moved, at: t, into: &result)

        if scenario.swimmingLocation == .pool, leg.type == .swimming {
            poolLengths(segment: segment, moved: moved, at: t, segmentEnds: segmentEnds, into: &result)
        }
        let legEnds = segmentEnds && segmentIndex + 1 == leg.segments.count
        if leg.type == .swimming, scenario.swimmingLocation != .pool, legEnds, openWaterStrokes >= 1 {
            // The strokes of the last, partial window of the swim.
            let strokes = openWaterStrokes.rounded(.down)
            result.samples.append(
                QuantitySample(
                    .swimmingStrokeCount, strokes, at: start.addingTimeInterval(Double(strokeWindowStart)),
                    end: time.addingTimeInterval(1), source: Self.watch))
            openWaterStrokes = 0
        }
        if result.disconnected.contains(.watch) {
            // The watch's own data (swim distance and strokes, lengths, transition distance) is lost.
            result.samples.removeAll { $0.source == Self.watch }
            result.events.removeAll()
        }

        second += 1
        if segmentEnds {
            segmentIndex += 1
            segmentDone = 0
            if segmentIndex == leg.segments.count {
                segmentIndex = 0
                legIndex += 1
                pendingLegStart = true
                // Per-leg swim state starts afresh at the next leg's first second.
                lengthStart = Double(second)
                lengthDistance = 0
                lengthStrokes = 0
                openWaterStrokes = 0
                strokeWindowStart = second
                if legIndex == scenario.legs.count {
                    finishOffset = second
                    heartRateAtFinish = heartRate
                }
            }
        }
        return result
    }

    private mutating func observedHeartRate() -> Double {
        let noise = (scenario.heartRateNoise ?? 0) * random.gaussian()
        return Swift.min(Swift.max((heartRate + noise).rounded(), 30), 240)
    }

    private func droppedOut(_ sensor: Scenario.Dropout.Sensor, at t: Double) -> Bool {
        let port: WirePort = sensor == .gps ? .gps : .ant
        return disconnected(port, at: t)
            || (scenario.dropouts ?? []).contains { $0.sensor == sensor && t >= $0.start && t < $0.start + $0.duration }
    }

    private func disconnected(_ port: WirePort, at t: Double) -> Bool {
        (scenario.disconnects ?? []).contains { $0.port == port && t >= $0.start && t < $0.start + $0.duration }
    }

    private func disconnectedPorts(at t: Double) -> Set<WirePort> {
        Set(WirePort.allCases.filter { disconnected($0, at: t) })
    }

    private mutating func emitMovement(
        leg: Scenario.Leg, segment: Scenario.Segment, speed: Double, moved: Double, at t: Double,
        into result: inout SimulatedSecond
    ) {
        let time = start.addingTimeInterval(t)
        let end = time.addingTimeInterval(1)
        let intensity = segment.kind == .rest ? 0 : segment.intensity
        let stopped = segment.kind == .stop
        switch leg.type {
        case .cycling:
            if !droppedOut(.bike, at: t) {
                result.samples.append(
                    QuantitySample(.distanceCycling, moved, at: time, end: end, source: Self.bikeSensor))
                result.samples.append(QuantitySample(.cyclingSpeed, speed, at: time, source: Self.bikeSensor))
                result.samples.append(
                    QuantitySample(
                        .cyclingCadence, stopped ? 0 : (70 + 25 * intensity).rounded(), at: time,
                        source: Self.bikeSensor))
                result.samples.append(
                    QuantitySample(
                        .cyclingPower, stopped ? 0 : (scenario.athlete.thresholdPower * intensity / 0.9).rounded(),
                        at: time, source: Self.powerMeter))
            }
        case .running, .walking, .other, .swimBikeRun, .paddleSports:
            if !droppedOut(.footPod, at: t) {
                let cadence = stopped ? 0 : (150 + 30 * intensity).rounded()
                result.samples.append(
                    QuantitySample(.distanceWalkingRunning, moved, at: time, end: end, source: Self.footPod))
                result.samples.append(QuantitySample(.runningSpeed, speed, at: time, source: Self.footPod))
                result.samples.append(QuantitySample(.runningCadence, cadence, at: time, source: Self.footPod))
                result.samples.append(
                    QuantitySample(
                        .runningStrideLength, cadence > 0 ? speed * 60 / cadence : 0, at: time, source: Self.footPod))
                result.samples.append(
                    QuantitySample(.runningPower, (75 * speed).rounded(), at: time, source: Self.footPod))
            }
        case .transition:
            result.samples.append(
                QuantitySample(.distanceWalkingRunning, moved, at: time, end: end, source: Self.watch))
        case .swimming:
            result.samples.append(QuantitySample(.distanceSwimming, moved, at: time, end: end, source: Self.watch))
            if scenario.swimmingLocation != .pool, moved > 0 {
                // Open water: strokes counted by the watch, reported every 10 s.
                openWaterStrokes += moved / Self.distancePerStroke(segment.style ?? .freestyle)
                if second + 1 - strokeWindowStart >= 10 {
                    let strokes = openWaterStrokes.rounded(.down)
                    result.samples.append(
                        QuantitySample(
                            .swimmingStrokeCount, strokes, at: start.addingTimeInterval(Double(strokeWindowStart)),
                            end: end, source: Self.watch))
                    openWaterStrokes -= strokes
                    strokeWindowStart = second + 1
                }
            }
        }
        if leg.type != .swimming || scenario.swimmingLocation != .pool, !droppedOut(.gps, at: t) {
            result.route.append(routePoint(at: end, speed: speed))
        }
    }

    /// Pool lengths: a lap event per length (strokes, style, kind), strokes as a cumulative sample.
    private mutating func poolLengths(
        segment: Scenario.Segment, moved: Double, at t: Double, segmentEnds: Bool, into result: inout SimulatedSecond
    ) {
        guard let lapLength = scenario.lapLength else { return }
        let style = segment.style ?? .freestyle
        let kind = segment.kind ?? .active
        if kind == .rest {
            if segmentEnds {
                let duration = t + 1 - lengthStart
                result.events.append(
                    WorkoutEvent(
                        type: .lap, start: start.addingTimeInterval(lengthStart), duration: duration,
                        metadata: [SwimMetadataKey.lengthKind: .string("rest")]))
                lengthStart = t + 1
            }
            return
        }
        var remaining = moved
        var clock = t
        let speed = moved  // metres this second
        while remaining > 1e-9 {
            let need = lapLength - lengthDistance
            let step = Swift.min(need, remaining)
            lengthDistance += step
            remaining -= step
            let spent = speed > 0 ? step / speed : 0
            clock += spent
            if kind != .drill { lengthStrokes += step / Self.distancePerStroke(style) }
            if lengthDistance >= lapLength - 1e-9 {
                // The last length of a segment ends with the second (the swimmer touches the wall);
                // others end on the millisecond a watch would report.
                let end = (segmentEnds && remaining <= 1e-9) ? t + 1 : (clock * 1000).rounded() / 1000
                var metadata: Metadata = [
                    SwimMetadataKey.strokeStyle: .string(style.rawValue),
                    SwimMetadataKey.lengthKind: .string(kind.rawValue),
                ]
                let lengthBegin = start.addingTimeInterval(lengthStart)
                let lengthEnd = start.addingTimeInterval(end)
                if kind != .drill {
                    let strokes = lengthStrokes.rounded()
                    metadata[SwimMetadataKey.strokes] = .int(Int(strokes))
                    result.samples.append(
                        QuantitySample(
                            .swimmingStrokeCount, strokes, at: lengthBegin, end: lengthEnd, source: Self.watch))
                }
                result.events.append(
                    WorkoutEvent(type: .lap, start: lengthBegin, duration: end - lengthStart, metadata: metadata))
                lengthStart = end
                lengthDistance = 0
                lengthStrokes = 0
            }
        }
        if segmentEnds { lengthStart = t + 1 }
    }

    static func distancePerStroke(_ style: Scenario.StrokeStyle) -> Double {
        switch style {
        case .freestyle: 2.0
        case .backstroke: 1.9
        case .breaststroke: 1.6
        case .butterfly: 1.8
        case .mixed: 1.8
        }
    }

    /// A point on a 2 km-radius loop around Lake Starnberg's shore, by distance covered.
    private func routePoint(at date: Date, speed: Double) -> RoutePoint {
        let radius = 2000.0
        let angle = distanceTotal / radius
        let latitude = 47.9 + radius * sin(angle) / 111_320
        let longitude = 11.3 + radius * (1 - cos(angle)) / (111_320 * cos(47.9 * .pi / 180))
        return RoutePoint(date: date, latitude: latitude, longitude: longitude, altitude: 600, speed: speed)
    }

    // MARK: after the finish

    private mutating func recoverySecond(since finish: Int) -> SimulatedSecond {
        let elapsed = Double(second - finish)
        let athlete = scenario.athlete
        heartRate = Self.recoveryHeartRate(
            atFinish: heartRateAtFinish, resting: athlete.restingHeartRate, seconds: elapsed,
            timeConstant: athlete.recoveryTimeConstant)
        let time = start.addingTimeInterval(Double(second))
        var result = SimulatedSecond(
            offset: second, time: time, leg: nil, beginsLeg: false, samples: [], events: [], route: [],
            disconnected: disconnectedPorts(at: Double(second)), heartRate: heartRate)
        if !droppedOut(.heartRate, at: Double(second)) {
            result.samples.append(QuantitySample(.heartRate, observedHeartRate(), at: time, source: Self.strap))
        }
        second += 1
        return result
    }

    static func recoveryHeartRate(atFinish: Double, resting: Double, seconds: Double, timeConstant: Double) -> Double {
        resting + (atFinish - resting) * exp(-seconds / timeConstant)
    }
}

/// SplitMix64 with a Box–Muller gaussian: small, fast, and the same on every platform.
struct SplitMix: Sendable {
    private var state: UInt64

    init(_ seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    mutating func uniform() -> Double { (Double(next() >> 11) + 0.5) / 9_007_199_254_740_992 }

    mutating func gaussian() -> Double { sqrt(-2 * log(uniform())) * cos(2 * .pi * uniform()) }
}
