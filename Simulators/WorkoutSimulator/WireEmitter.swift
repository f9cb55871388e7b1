import Foundation
import WorkoutModel
import WorkoutSensors

/// The serial ports a simulated watch and its sensors talk on.
public enum WirePort: String, Sendable, Hashable, CaseIterable, Codable {
    /// NMEA 0183 from the GPS (GGA and RMC once per second).
    case gps
    /// ANT serial messages with ANT+ pages: heart rate (channel 0), bike speed and cadence (1),
    /// bicycle power (2), foot pod (3).
    case ant
    /// The watch-link protocol: lengths, strokes, buttons.
    case watch
}

/// Turns a simulated race into bytes in real wire formats, one stream per port. Deterministic: the
/// same seconds give the same bytes.
///
/// Sensor state is kept as real sensors keep it: heart beats and their event times (1/1024 s), wheel
/// and crank revolutions, accumulated power and event count, strides; counters roll over on the
/// wire as the profiles say.
public struct WireEmitter: Sendable {
    public static let wheelCircumference = 2.105  // metres

    /// The simulated ANT+ sensors, by the channel the byte-file output puts them on.
    public enum ANTSensorSlot: UInt8, Sendable, Hashable, CaseIterable {
        case heartRate = 0
        case speedCadence = 1
        case power = 2
        case footPod = 3

        /// The sensor's channel id on the air (device number, ANT+ device type, transmission type 1).
        public var sensor: ANTStickEmulation.Sensor {
            switch self {
            case .heartRate: ANTStickEmulation.Sensor(number: 101, type: 120)
            case .speedCadence: ANTStickEmulation.Sensor(number: 102, type: 121)
            case .power: ANTStickEmulation.Sensor(number: 103, type: 11)
            case .footPod: ANTStickEmulation.Sensor(number: 104, type: 124)
            }
        }
    }

    /// The main page each ANT+ sensor sent during the last encoded second (none while the ANT port
    /// is disconnected or the sensor out of range): what an emulated stick passes on.
    public private(set) var antPages: [ANTSensorSlot: [UInt8]] = [:]

    private let start: Date
    private var beats = 0.0
    private var beatTime = 0.0  // seconds since start, of the last whole beat
    private var previousBeatTime = 0.0
    private var heartRateMessages = 0
    private var wheelRevolutions = 0.0
    private var wheelTime = 0.0
    private var crankRevolutions = 0.0
    private var crankTime = 0.0
    private var powerEvents = 0
    private var accumulatedPower = 0
    private var footPodDistance = 0.0
    private var strides = 0.0
    private var lastPoint: RoutePoint?
    private var stopped = false
    /// Watch-link lines produced while the watch was disconnected: a watch stores them and sends
    /// them when the link is back (buttons must not be lost).
    private var watchBacklog: [UInt8] = []

    public init(start: Date) {
        self.start = start
    }

    /// What each port sends when it connects: the watch's hello and the ANT channel ids.
    public func preamble() -> [WirePort: [UInt8]] {
        [
            .watch: WatchLink.hello(device: "workout-engine simulated watch"),
            .ant: ANT.channelID(channel: 0, deviceNumber: 101, type: .heartRate)
                + ANT.channelID(channel: 1, deviceNumber: 102, type: .bikeSpeedCadence)
                + ANT.channelID(channel: 2, deviceNumber: 103, type: .bicyclePower)
                + ANT.channelID(channel: 3, deviceNumber: 104, type: .footPod),
            .gps: [],
        ]
    }

    private func milliseconds(_ date: Date) -> Int { Int((date.timeIntervalSince(start) * 1000).rounded()) }

    /// The bytes each port sends during `second`.
    public mutating func encode(_ second: SimulatedSecond) -> [WirePort: [UInt8]] {
        antPages = [:]
        var out = encodeConnected(second)
        if second.disconnected.contains(.ant) { antPages = [:] }
        if second.disconnected.contains(.watch) {
            watchBacklog += out[.watch] ?? []
        } else if !watchBacklog.isEmpty {
            out[.watch] = watchBacklog + (out[.watch] ?? [])
            watchBacklog = []
        }
        for port in second.disconnected { out[port] = [] }  // a disconnected port sends nothing
        return out
    }

    /// A whole number for the wire from a value the scenario bounds; never traps.
    private static func whole(_ value: Double) -> Int {
        guard value.isFinite else { return 0 }
        return Int(Swift.min(Swift.max(value, -1e15), 1e15))
    }

    /// The event time of the last whole revolution (or beat) when `count` grew by `perSecond` during
    /// the second ending at `end`; nil when no new whole one completed (the time stays as it was).
    private static func eventTime(previous: Double, count: Double, perSecond: Double, end: Double) -> Double? {
        guard perSecond > 0, count.rounded(.down) > previous.rounded(.down) else { return nil }
        return end - (count - count.rounded(.down)) / perSecond
    }

    private mutating func encodeConnected(_ second: SimulatedSecond) -> [WirePort: [UInt8]] {
        var out: [WirePort: [UInt8]] = [.gps: [], .ant: [], .watch: []]
        let t = second.time.timeIntervalSince(start)
        if second.beginsLeg {
            out[.watch, default: []] += WatchLink.button(milliseconds: milliseconds(second.time), .next)
        }
        if second.leg == nil, !stopped {
            stopped = true
            out[.watch, default: []] += WatchLink.button(milliseconds: milliseconds(second.time), .stop)
        }
        var byType: [QuantityType: QuantitySample] = [:]
        for sample in second.samples { byType[sample.type] = sample }

        // The heart beats whether or not the radio gets through: count beats from the model's rate.
        let beatingRate = second.heartRate
        if beatingRate > 0 {
            let previousBeats = beats
            beats += beatingRate / 60
            if let last = Self.eventTime(previous: previousBeats, count: beats, perSecond: beatingRate / 60, end: t + 1)
            {
                previousBeatTime = last - 60 / beatingRate
                beatTime = last
            }
        }
        if let heartRate = byType[.heartRate]?.quantity.value, heartRate > 0 {
            heartRateMessages += 1
            out[.ant, default: []] += antBroadcast(
                .heartRate,
                ANT.heartRatePage(
                    page4: true, toggle: (heartRateMessages / 4) % 2 == 1, beatTime: Self.ticks(beatTime),
                    previousBeatTime: Self.ticks(previousBeatTime), beatCount: Self.whole(beats),
                    heartRate: Self.whole(heartRate)))
        }
        if let distance = byType[.distanceCycling]?.quantity.value {
            // ANT+ event times are the instants the last whole revolution completed; they only move
            // when a revolution completes.
            let wheelPerSecond = distance / Self.wheelCircumference
            let previousWheel = wheelRevolutions
            wheelRevolutions += wheelPerSecond
            if let time = Self.eventTime(
                previous: previousWheel, count: wheelRevolutions, perSecond: wheelPerSecond, end: t + 1)
            {
                wheelTime = time
            }
            let cadence = byType[.cyclingCadence]?.quantity.value ?? 0
            let previousCrank = crankRevolutions
            crankRevolutions += cadence / 60
            if let time = Self.eventTime(
                previous: previousCrank, count: crankRevolutions, perSecond: cadence / 60, end: t + 1)
            {
                crankTime = time
            }
            out[.ant, default: []] += antBroadcast(
                .speedCadence,
                ANT.speedCadencePage(
                    crankTime: Self.ticks(crankTime), crankRevolutions: Self.whole(crankRevolutions),
                    wheelTime: Self.ticks(wheelTime), wheelRevolutions: Self.whole(wheelRevolutions)))
            if let power = byType[.cyclingPower]?.quantity.value {
                powerEvents += 1
                accumulatedPower = (accumulatedPower + Self.whole(power)) & 0xFFFF
                out[.ant, default: []] += antBroadcast(
                    .power,
                    ANT.powerPage(
                        eventCount: powerEvents, cadence: Self.whole(cadence), accumulatedPower: accumulatedPower,
                        power: Self.whole(power)))
            }
        }
        if let distance = byType[.distanceWalkingRunning], distance.source == WatchSimulator.footPod {
            footPodDistance += distance.quantity.value
            strides += (byType[.runningCadence]?.quantity.value ?? 0) / 120
            out[.ant, default: []] += antBroadcast(
                .footPod,
                ANT.footPodPage(
                    time: t + 1, distance: footPodDistance, speed: byType[.runningSpeed]?.quantity.value ?? 0,
                    strides: Self.whole(strides)))
        }
        for sample in second.samples where sample.source == WatchSimulator.watch
            && (sample.type == .distanceSwimming || sample.type == .distanceWalkingRunning) && sample.quantity.value > 0
        {
            // The watch's own distance (open-water GPS, pool, transitions on foot).
            out[.watch, default: []] += WatchLink.distance(
                endMilliseconds: milliseconds(sample.end),
                durationMilliseconds: milliseconds(sample.end) - milliseconds(sample.start), meters: sample.quantity.value)
        }
        if let strokes = byType[.swimmingStrokeCount], second.events.isEmpty {
            out[.watch, default: []] += WatchLink.strokes(
                endMilliseconds: milliseconds(strokes.end),
                durationMilliseconds: milliseconds(strokes.end) - milliseconds(strokes.start),
                count: Self.whole(strokes.quantity.value))
        }
        for event in second.events where event.type == .lap {
            out[.watch, default: []] += lengthLine(event)
        }
        for point in second.route {
            out[.gps, default: []] += NMEA.gga(
                time: point.date, latitude: point.latitude, longitude: point.longitude, altitude: point.altitude ?? 0)
            out[.gps, default: []] += NMEA.rmc(
                time: point.date, latitude: point.latitude, longitude: point.longitude, speed: point.speed ?? 0,
                course: course(to: point))
            lastPoint = point
        }
        return out
    }

    /// Records `page` as `slot`'s page of this second; returns it as a broadcast on the slot's channel.
    private mutating func antBroadcast(_ slot: ANTSensorSlot, _ page: [UInt8]) -> [UInt8] {
        antPages[slot] = page
        return ANT.broadcast(channel: slot.rawValue, page)
    }

    private func lengthLine(_ event: WorkoutEvent) -> [UInt8] {
        var kind = WatchLink.LengthKind.active
        if case .string(let value) = event.metadata[SwimMetadataKey.lengthKind] {
            kind = value == "rest" ? .rest : value == "drill" ? .drill : .active
        }
        var style: WatchLink.Style?
        if case .string(let value) = event.metadata[SwimMetadataKey.strokeStyle] {
            style =
                switch value {
                case "backstroke": .backstroke
                case "breaststroke": .breaststroke
                case "butterfly": .butterfly
                case "mixed": .mixed
                default: .freestyle
                }
        }
        var strokes: Int?
        if case .int(let value) = event.metadata[SwimMetadataKey.strokes] { strokes = value }
        return WatchLink.length(
            endMilliseconds: milliseconds(event.end),
            durationMilliseconds: milliseconds(event.end) - milliseconds(event.start), kind: kind, style: style,
            strokes: strokes)
    }

    private func course(to point: RoutePoint) -> Double {
        guard let last = lastPoint else { return 0 }
        let north = point.latitude - last.latitude
        let east = (point.longitude - last.longitude) * cos(point.latitude * .pi / 180)
        let degrees = atan2(east, north) * 180 / .pi
        return degrees < 0 ? degrees + 360 : degrees
    }

    /// Seconds as ANT event time: 1/1024 s, rolling over at 16 bits.
    static func ticks(_ seconds: Double) -> Int { whole((seconds * 1024).rounded(.down)) & 0xFFFF }
}
