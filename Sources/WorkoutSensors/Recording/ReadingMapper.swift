import Foundation
import WorkoutEngine
import WorkoutModel

/// The wire protocols a sensor port can speak.
public enum SensorProtocol: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// NMEA 0183 from a GPS receiver.
    case nmea
    /// ANT serial messages (a USB ANT stick, an ANT UART module) with ANT+ pages.
    case ant
    /// The watch-link protocol (docs/watch-link.md), including tunnelled BLE GATT values.
    case watch

    public var description: String { rawValue }

    /// A fresh decoder for this protocol.
    public func makeDecoder() -> any SensorDecoder {
        switch self {
        case .nmea: NMEADecoder()
        case .ant: ANTDecoder()
        case .watch: WatchLinkDecoder()
        }
    }
}

/// What decoded readings become for the engine: samples, events, route points and button presses.
public struct RecordedInput: Sendable {
    public var samples: [QuantitySample] = []
    public var events: [WorkoutEvent] = []
    public var route: [RoutePoint] = []
    /// Watch buttons with the instant they were pressed.
    public var buttons: [(button: WatchLink.Button, date: Date)] = []

    public init() {}

    public var isEmpty: Bool { samples.isEmpty && events.isEmpty && route.isEmpty && buttons.isEmpty }
}

/// Turns decoded sensor readings into engine input, for every sensor of one recording.
///
/// Times: ANT readings carry no clock and take their chunk's arrival time. Watch-link times
/// (milliseconds on the watch's clock) and NMEA UTC times keep their own spacing: each device's
/// clock is mapped to ours by the smallest (arrival − device time) seen so far (so a watch's lengths
/// and buttons, and a receiver's fixes, are dated by the device, not by when the bytes got through,
/// and a first reading that was held up does not shift the rest).
/// Amounts: sensors send running totals (wheel revolutions × circumference, a foot pod's distance, a
/// receiver's distance between fixes); each new total becomes a cumulative sample of the increase
/// since the previous reading of the same source. A GPS receiver is one source whatever talker (GP,
/// GN, GL …) its sentences carry, and its GGA and RMC of one fix count once; each GPS port of a
/// recording is a receiver of its own (`receiver` of `map`: `nmea:gps`, then `nmea:gps:2` …), with its
/// own distance, clock mapping and sentences, and one receiver at a time counts (distance and route): the one that
/// reported within 10 s, else the next (`ownsGPS`). After a disconnect (`connectionLost`) the next
/// total only re-bases: no amount is invented across a gap. Distance comes from the best source
/// that reported within 10 s: a speed sensor or foot pod, else the watch's own distance (`DST`),
/// else GPS; typed by the current leg. Pool lengths become lap events (with kind, style and strokes), a
/// swimming-distance sample of one pool length (rests excepted) and a stroke-count sample.
public struct ReadingMapper: Sendable {
    /// Pool length in metres for pool swims; nil in open water.
    public var lapLength: Double?
    private var totals: [String: (value: Double, at: Date)] = [:]
    private var watchAnchor: Date?
    /// Each GPS receiver's state, by its number among the recording's GPS ports.
    private var receivers: [Int: Receiver] = [:]
    /// The receiver of the readings being mapped (`map`'s `receiver`).
    private var receiver = 0
    /// The GPS receiver whose fixes count (distance and route), and its last fix: one at a time (`ownsGPS`).
    private var gpsOwner: (receiver: Int, at: Date)?
    private var watchName = "watch"
    /// The source measuring each distance type, and when it last reported: one source per type.
    private var distanceOwners: [QuantityType: (key: String, at: Date)] = [:]
    private var lastWatchDistance: Date?
    /// Samples emitted by the current `map` call per source and type, to merge a chunk's amounts.
    private var chunkAmounts: [String: Int] = [:]
    private var lastLengthEnd: Date?
    /// What ANT+ devices said about themselves (common pages 80/81), by source identifier.
    private var antInfo: [String: ANTDeviceInfo] = [:]
    /// The ANT port (its number among the recording's ANT ports) that last reported each ANT source: a disconnect
    /// forgets the totals of that port's sources only.
    private var antPorts: [String: Int] = [:]
    /// Readings that could not be used (no value, no position, a time that cannot be anchored).
    public private(set) var unusable = 0

    /// A GPS receiver's own state: its clock's mapping to ours, the altitude of its last GGA, whether it sends RMC.
    private struct Receiver: Sendable {
        var anchor: TimeInterval?
        var pendingAltitude: (secondsOfDay: Double, altitude: Double)?
        var sawRMC = false
    }

    public init(lapLength: Double? = nil) {
        self.lapLength = lapLength
    }

    /// The source identifier of the GPS receiver numbered `receiver` (0: the recording's first GPS port).
    static func gpsIdentifier(_ receiver: Int) -> String {
        receiver == 0 ? "nmea:gps" : "nmea:gps:\(receiver + 1)"
    }

    /// Forgets the running totals of `port`'s sources (a disconnect): the next totals re-base. A
    /// watch's clock is mapped afresh when it is back (it may have restarted), and so is a GPS
    /// receiver's. `receiver` is the port's number among the recording's ports of its protocol, as `map` was told:
    /// for `nmea` only that GPS receiver is forgotten, for `ant` only the sources that port reported last (another
    /// ANT stick's wheel keeps its total).
    public mutating func connectionLost(_ port: SensorProtocol, receiver: Int) {
        switch port {
        case .nmea:
            let key = Self.gpsIdentifier(receiver)
            totals[key] = nil
            receivers[receiver] = nil
            if gpsOwner?.receiver == receiver { gpsOwner = nil }
            return
        case .ant:
            let lost = Set(antPorts.filter { $0.value == receiver }.keys)
            antPorts = antPorts.filter { $0.value != receiver }
            totals = totals.filter { !lost.contains($0.key) }
            distanceOwners = distanceOwners.filter { !lost.contains($0.value.key) }
            return
        case .watch:
            break
        }
        totals = totals.filter { !$0.key.hasPrefix("gatt:") }
        distanceOwners = distanceOwners.filter { !$0.value.key.hasPrefix("gatt:") }
        if port == .watch {
            watchAnchor = nil
            lastWatchDistance = nil
            lastLengthEnd = nil
        }
    }

    /// Maps `readings` (one chunk's, arrived at `arrival`) with `leg` the current activity type.
    ///
    /// - Parameter receiver: which port of the recording's ports of the readings' protocol they came from (0 the
    ///   first, 1 the second …). Each GPS receiver is a source of its own, whose distance never mixes with
    ///   another's; an ANT port's disconnect (`connectionLost`) forgets the totals of the sources it reported.
    public mutating func map(
        _ readings: some Collection<SensorReading>, arrival: Date, leg: WorkoutActivityType?, receiver: Int,
        into input: inout RecordedInput
    ) {
        chunkAmounts.removeAll(keepingCapacity: true)
        self.receiver = receiver
        for reading in readings {
            map(reading, arrival: arrival, leg: leg, into: &input)
        }
    }

    private mutating func map(
        _ reading: SensorReading, arrival chunkArrival: Date, leg: WorkoutActivityType?,
        into input: inout RecordedInput
    ) {
        let source = sourceDevice(reading.source)
        let key = source.identifier ?? source.name
        if case .ant = reading.source { antPorts[key] = receiver }
        // Tunnelled GATT values carry the watch's time: they are dated by it, not by arrival.
        var arrival = chunkArrival
        if case .watchLinkGATT = reading.source, case .watchMilliseconds(let milliseconds)? = reading.time {
            guard let date = checkedWatchDate(milliseconds, arrival: chunkArrival) else { return }
            arrival = date
        }
        switch reading.value {
        case .heartRate(let heartRate):
            guard heartRate.beatsPerMinute > 0 else { return }
            input.samples.append(
                QuantitySample(.heartRate, Double(heartRate.beatsPerMinute), at: arrival, source: source))
        case .speedCadence(let reading):
            if let speed = reading.speed { input.samples.append(QuantitySample(.cyclingSpeed, speed, at: arrival, source: source)) }
            if let cadence = reading.cadence {
                input.samples.append(QuantitySample(.cyclingCadence, cadence, at: arrival, source: source))
            }
            if let distance = reading.distance {
                amount(.distanceCycling, total: distance, key: key, at: arrival, source: source, into: &input)
            }
        case .power(let reading):
            if let power = reading.instantaneousPower ?? reading.averagePower.map({ Int($0.rounded()) }) {
                input.samples.append(QuantitySample(.cyclingPower, Double(max(0, power)), at: arrival, source: source))
            }
            if let cadence = reading.cadence {
                input.samples.append(QuantitySample(.cyclingCadence, cadence, at: arrival, source: source))
            }
            if let speed = reading.speed { input.samples.append(QuantitySample(.cyclingSpeed, speed, at: arrival, source: source)) }
        case .stride(let reading):
            if let speed = reading.speed { input.samples.append(QuantitySample(.runningSpeed, speed, at: arrival, source: source)) }
            if let cadence = reading.stepsPerMinute {
                input.samples.append(QuantitySample(.runningCadence, cadence, at: arrival, source: source))
            }
            if let stride = reading.strideLength {
                input.samples.append(QuantitySample(.runningStrideLength, stride, at: arrival, source: source))
            }
            if let distance = reading.totalDistance {
                amount(.distanceWalkingRunning, total: distance, key: key, at: arrival, source: source, into: &input)
            }
        case .fix(let fix):
            mapFix(fix, time: reading.time, arrival: arrival, leg: leg, source: source, key: key, into: &input)
        case .swimLength(let length):
            guard let end = checkedWatchDate(length.endMilliseconds, arrival: arrival) else { return }
            var start = end.addingTimeInterval(-Double(max(0, length.durationMilliseconds)) / 1000)
            // Lengths follow each other; when the clock mapping moved earlier since the last one,
            // this one starts where that one ended rather than overlap it.
            if let previous = lastLengthEnd, start < previous, previous.timeIntervalSince(start) <= 5, previous < end {
                start = previous
            }
            lastLengthEnd = end
            var metadata: Metadata = [SwimMetadataKey.lengthKind: .string(Self.kind(length.kind).rawValue)]
            if let style = length.style { metadata[SwimMetadataKey.strokeStyle] = .string(Self.style(style)) }
            if let strokes = length.strokes, strokes >= 0 { metadata[SwimMetadataKey.strokes] = .int(strokes) }
            input.events.append(
                WorkoutEvent(type: .lap, start: start, duration: end.timeIntervalSince(start), metadata: metadata))
            if length.kind != .rest, let lapLength {
                input.samples.append(
                    QuantitySample(.distanceSwimming, lapLength, at: start, end: end, source: source))
            }
            if let strokes = length.strokes, strokes > 0 {
                input.samples.append(
                    QuantitySample(.swimmingStrokeCount, Double(strokes), at: start, end: end, source: source))
            }
        case .distance(let distance):
            guard let end = checkedWatchDate(distance.endMilliseconds, arrival: arrival) else { return }
            let start = end.addingTimeInterval(-Double(max(0, distance.durationMilliseconds)) / 1000)
            // A watch that measures distance is trusted over GPS even where its distance is not used
            // (a pool swim counts lengths): GPS distance stays off while it reports.
            defer { lastWatchDistance = end }
            guard let type = distanceType(leg: leg, from: .watch, at: end), distance.meters > 0 else { return }
            input.samples.append(QuantitySample(type, distance.meters, at: start, end: end, source: source))
        case .strokes(let count):
            guard let end = checkedWatchDate(count.endMilliseconds, arrival: arrival) else { return }
            let start = end.addingTimeInterval(-Double(max(0, count.durationMilliseconds)) / 1000)
            guard count.count > 0 else { return }
            input.samples.append(
                QuantitySample(.swimmingStrokeCount, Double(count.count), at: start, end: end, source: source))
        case .button(let button):
            var date = arrival
            if case .watchMilliseconds(let milliseconds)? = reading.time {
                guard let checked = checkedWatchDate(milliseconds, arrival: arrival) else { return }
                date = checked
            }
            input.buttons.append((button, date))
        case .hello(let device):
            // A watch says hello after (re)connecting: its clock may have restarted.
            watchName = device
            watchAnchor = nil
            lastLengthEnd = nil
        case .antChannelEvent(let messageID, let code):
            // Search timeout, channel closed, RX fail go to search: the device is gone; its next
            // total only re-bases (nothing is invented across the gap).
            if messageID == 0x01, code == 0x01 || code == 0x07 || code == 0x08, case .ant(_, let device?) = reading.source {
                totals[device.description] = nil
            }
        case .antDeviceInfo(let info):
            var known = antInfo[key] ?? ANTDeviceInfo()
            if let manufacturer = info.manufacturer { known.manufacturer = manufacturer }
            if let model = info.model { known.model = model }
            if let serial = info.serial { known.serial = serial }
            if let version = info.hardwareVersion { known.hardwareVersion = version }
            if let version = info.softwareVersion { known.softwareVersion = version }
            antInfo[key] = known
        case .fitnessEquipment(let reading):
            let treadmill = reading.isTreadmill
            if let speed = reading.speed {
                input.samples.append(QuantitySample(treadmill ? .runningSpeed : .cyclingSpeed, speed, at: arrival, source: source))
            }
            if let power = reading.instantaneousPower ?? reading.averagePower.map({ Int($0.rounded()) }) {
                input.samples.append(QuantitySample(.cyclingPower, Double(max(0, power)), at: arrival, source: source))
            }
            if let cadence = reading.cadence {
                input.samples.append(
                    QuantitySample(
                        treadmill ? .runningCadence : .cyclingCadence, Double(cadence), at: arrival, source: source))
            }
            if let heartRate = reading.heartRate {
                input.samples.append(QuantitySample(.heartRate, Double(heartRate), at: arrival, source: source))
            }
            if let distance = reading.totalDistance {
                amount(
                    treadmill ? .distanceWalkingRunning : .distanceCycling, total: distance, key: key, at: arrival,
                    source: source, into: &input)
            }
        case .antChannelID, .antStartup, .antSerialError:
            break
        }
    }

    private mutating func mapFix(
        _ fix: GPSFix, time: SensorTime?, arrival: Date, leg: WorkoutActivityType?, source: SourceDevice, key: String,
        into input: inout RecordedInput
    ) {
        guard fix.isValid, let latitude = fix.latitude, let longitude = fix.longitude else {
            unusable += 1
            return
        }
        let date = time.map { self.time(of: $0, arrival: arrival) } ?? arrival
        var secondsOfDay: Double?
        if case .utc(let utc)? = time { secondsOfDay = utc.secondsOfDay }
        let counts = ownsGPS(at: date)
        switch fix.sentence {
        case .gga:
            // Altitude comes with GGA; the point is written with the RMC of the same second (speed,
            // course), or on its own when the receiver sends no RMC.
            if let altitude = fix.altitude, let secondsOfDay {
                receivers[receiver, default: Receiver()].pendingAltitude = (secondsOfDay, altitude)
            }
            if receivers[receiver]?.sawRMC != true {
                guard counts else {
                    totals[key] = (fix.totalDistance, date)
                    return
                }
                input.route.append(
                    RoutePoint(
                        date: date, latitude: latitude, longitude: longitude, altitude: fix.altitude,
                        horizontalAccuracy: fix.hdop.map { $0 * 5 }))
                gpsDistance(fix, at: date, leg: leg, source: source, key: key, into: &input)
            }
        case .rmc:
            receivers[receiver, default: Receiver()].sawRMC = true
            var altitude: Double?
            if let pending = receivers[receiver]?.pendingAltitude, pending.secondsOfDay == secondsOfDay {
                altitude = pending.altitude
            }
            guard counts else {
                totals[key] = (fix.totalDistance, date)
                return
            }
            input.route.append(
                RoutePoint(
                    date: date, latitude: latitude, longitude: longitude, altitude: altitude, speed: fix.speed,
                    course: fix.course))
            gpsDistance(fix, at: date, leg: leg, source: source, key: key, into: &input)
        }
    }

    /// Whether the receiver being mapped counts its fix at `date` (distance and route): one GPS receiver at a time,
    /// the one that reported last within 10 s, else this one (it takes over). Two receivers on one athlete see one
    /// track: adding both doubled the workout's distance and zig-zagged its route. A receiver that does not count
    /// keeps its own total moving, so that when it takes over it counts from its own last fix, not a jump.
    private mutating func ownsGPS(at date: Date) -> Bool {
        if let owner = gpsOwner, owner.receiver != receiver, abs(date.timeIntervalSince(owner.at)) <= 10 {
            return false
        }
        gpsOwner = (receiver, date)
        return true
    }

    private mutating func gpsDistance(
        _ fix: GPSFix, at date: Date, leg: WorkoutActivityType?, source: SourceDevice, key: String,
        into input: inout RecordedInput
    ) {
        guard let type = distanceType(leg: leg, from: .gps, at: date) else {
            // Keep the total moving so that a later leg does not get this leg's distance.
            totals[key] = (fix.totalDistance, date)
            return
        }
        amount(type, total: fix.totalDistance, key: key, at: date, source: source, into: &input)
    }

    private enum DistanceSource { case watch, gps }

    /// The distance type a watch or GPS distance counts as in `leg`, or nil when a better source
    /// measures it: a speed sensor or foot pod (reported within 10 s) beats the watch, which beats
    /// GPS; pool lengths carry a pool swim's distance.
    private func distanceType(leg: WorkoutActivityType?, from source: DistanceSource, at date: Date) -> QuantityType? {
        func recent(_ last: Date?) -> Bool { last.map { abs(date.timeIntervalSince($0)) <= 10 } ?? false }
        let legType: QuantityType? =
            switch leg {
            case .cycling?: .distanceCycling
            case .running?, .walking?: .distanceWalkingRunning
            case .paddleSports?: .distancePaddleSports
            default: nil
            }
        // A sensor measuring the leg's own distance type beats the watch and GPS.
        if let legType, let owner = distanceOwners[legType], recent(owner.at) { return nil }
        // A watch that measures distance at all is preferred to GPS wherever it measures (swims,
        // transitions): deciding per reading would race the two ports at each leg's first second.
        if source == .gps, lastWatchDistance != nil, leg == .swimming || leg == .transition || recent(lastWatchDistance) {
            return nil
        }
        switch leg {
        case .swimming?: return lapLength == nil ? .distanceSwimming : nil
        case .transition?, .running?, .walking?: return .distanceWalkingRunning
        case .cycling?: return .distanceCycling
        case .paddleSports?: return .distancePaddleSports
        case .swimBikeRun?, .other?, nil: return nil
        }
    }

    /// A cumulative sample of the increase of `total` since the source's previous total.
    private mutating func amount(
        _ type: QuantityType, total: Double, key: String, at date: Date, source: SourceDevice,
        into input: inout RecordedInput
    ) {
        guard total.isFinite else { return }
        let merged = "\(key)|\(type.rawValue)"
        if let index = chunkAmounts[merged], index < input.samples.count {
            // Another reading of this source in the same chunk: add to the chunk's one sample.
            if let previous = totals[key], total >= previous.value {
                input.samples[index].quantity.value += total - previous.value
            }
            totals[key] = (total, date)
            return
        }
        let previousTotal = totals[key]
        totals[key] = (total, date)
        // One source per distance type: another one (a second radio hearing the same wheel) only
        // moves its total while the owner keeps reporting.
        if !key.hasPrefix("nmea") {
            if let owner = distanceOwners[type], owner.key != key, abs(date.timeIntervalSince(owner.at)) <= 10 {
                return
            }
            distanceOwners[type] = (key, date)
        }
        guard let previous = previousTotal, total >= previous.value, date >= previous.at else { return }
        let increase = total - previous.value
        guard increase > 0 else { return }
        chunkAmounts[merged] = input.samples.count
        input.samples.append(QuantitySample(type, increase, at: previous.at, end: date, source: source))
    }

    /// The instant of a watch-link time. The watch's clock is mapped to ours by the smallest
    /// arrival − watch time seen so far: nothing arrives before it happened, so a reading that was
    /// held up (a busy reader, a full buffer) never sets the mapping late.
    private mutating func watchDate(_ milliseconds: Int, arrival: Date) -> Date {
        checkedWatchDate(milliseconds, arrival: arrival) ?? arrival
    }

    /// A watch time on our clock, or nil (counted as unusable) for a time that claims to lie more
    /// than 5 s after it arrived: one bogus line (a counter underflow) must not move the mapping
    /// for the rest of the session.
    private mutating func checkedWatchDate(_ milliseconds: Int, arrival: Date) -> Date? {
        let offset = Double(milliseconds) / 1000
        let candidate = arrival.addingTimeInterval(-offset)
        if let anchor = watchAnchor {
            if candidate < anchor.addingTimeInterval(-5) {
                unusable += 1
                return nil
            }
            if candidate < anchor { watchAnchor = candidate }
        } else {
            watchAnchor = candidate
        }
        return (watchAnchor ?? candidate).addingTimeInterval(offset)
    }

    private mutating func time(of time: SensorTime, arrival: Date) -> Date {
        switch time {
        case .watchMilliseconds(let milliseconds):
            return watchDate(milliseconds, arrival: arrival)
        case .utc(let utc):
            guard let instant = utc.instant else { return arrival }
            // The same rule for a receiver's UTC: the smallest arrival − UTC seen so far.
            let candidate = arrival.timeIntervalSince(instant)
            if let anchor = receivers[receiver]?.anchor {
                // A fix claiming to be from more than 5 s after it arrived keeps the mapping as is.
                if candidate < anchor, candidate >= anchor - 5 { receivers[receiver]?.anchor = candidate }
            } else {
                receivers[receiver, default: Receiver()].anchor = candidate
            }
            return instant.addingTimeInterval(receivers[receiver]?.anchor ?? candidate)
        }
    }

    private func sourceDevice(_ source: ReadingSource) -> SourceDevice {
        switch source {
        case .nmea:
            // One receiver whatever talker its sentences carry: a multi-constellation receiver
            // switches GP → GN → GP as satellites come and go, and its decoder's distance total
            // runs on across the switches. Keyed per talker, each switch back re-counted the
            // distance covered under the other talker. A second GPS port is another receiver.
            return SourceDevice(
                name: receiver == 0 ? "GPS" : "GPS \(receiver + 1)", model: "NMEA 0183",
                identifier: Self.gpsIdentifier(receiver))
        case .ant(let channel, let device):
            if let device {
                let name =
                    switch device.deviceType {
                    case .heartRate?: "ANT+ heart rate"
                    case .bikeSpeedCadence?: "ANT+ speed/cadence"
                    case .bikeCadence?: "ANT+ cadence"
                    case .bikeSpeed?: "ANT+ speed"
                    case .footPod?: "ANT+ foot pod"
                    case .bicyclePower?: "ANT+ power"
                    case .fitnessEquipment?: "ANT+ fitness equipment"
                    case nil: "ANT+ device"
                    }
                let info = antInfo[device.description]
                let maker = info?.manufacturer.map { ANTDeviceInfo.manufacturerName($0) ?? "manufacturer \($0)" }
                let model = info?.model.map { "model \($0)" }
                return SourceDevice(
                    name: maker.map { "\($0) \(name.dropFirst(5))" } ?? name, manufacturer: maker, model: model,
                    identifier: device.description)
            }
            return SourceDevice(name: "ANT channel \(channel.map(String.init) ?? "-")", identifier: "ant:channel:\(channel.map(String.init) ?? "-")")
        case .watchLink:
            return SourceDevice(name: watchName, identifier: "watch-link:1")
        case .watchLinkGATT(let characteristic):
            let hex = String(characteristic, radix: 16, uppercase: true)
            return SourceDevice(name: "\(watchName) BLE 0x\(hex)", identifier: "gatt:\(hex)")
        }
    }

    static func kind(_ kind: WatchLink.LengthKind) -> LengthKind {
        switch kind {
        case .active: .active
        case .drill: .drill
        case .rest: .rest
        }
    }

    static func style(_ style: WatchLink.Style) -> String {
        switch style {
        case .freestyle: "freestyle"
        case .backstroke: "backstroke"
        case .breaststroke: "breaststroke"
        case .butterfly: "butterfly"
        case .mixed: "mixed"
        }
    }
}
