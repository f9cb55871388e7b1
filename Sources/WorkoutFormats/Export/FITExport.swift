import Foundation
import WorkoutEngine
import WorkoutModel

/// Writes a workout as a FIT activity file.
///
/// Layout (summary last, as devices write it): `file_id`, `file_creator`, a timer start event, then in
/// time order the records (one per second with data: heart rate, speed, cadence, power, step length,
/// position, altitude, cumulative distance and strokes), pool lengths and timer stop/start events
/// for pauses (auto-pauses with the `auto` timer trigger), a timer stop at the end, a `recovery_hr`
/// event when the workout has a heart-rate recovery, the heart-rate readings of the recovery window as
/// records after the last session's end (heart rate only, one per whole second, from 1 s to 129 s
/// after the end: a record less than a second after the end is read as the session's last, and a
/// re-import feeds the rest to its heart-rate recovery), then the laps, one session per activity
/// (transitions included; a workout without activities is one session) and the `activity` message.
/// Summaries hold our statistics; times are whole seconds where FIT has whole seconds
/// (timestamps, start times) and milliseconds where it has them (elapsed and timer times).
public enum FITExport {
    /// The FIT bytes of `workout` with its saved samples and route.
    public static func encode(_ workout: Workout, samples: [QuantitySample], route: [RoutePoint]) -> [UInt8] {
        let timeline = ExportTimeline(workout: workout, samples: samples, route: route)
        var writer = FITWriter()
        let start = ExportTimeline.second(workout.start) ?? 0
        let end = ExportTimeline.second(workout.end) ?? start
        let serial = workout.id.uuid
        let serialNumber =
            UInt32(serial.0) << 24 | UInt32(serial.1) << 16 | UInt32(serial.2) << 8 | UInt32(serial.3) | 1
        writer.write(
            FITProfile.Message.fileID,
            [
                .enumeration(0, FITProfile.FileType.activity), .uint16(1, FITProfile.Manufacturer.development),
                .uint16(2, 1), .uint32z(3, serialNumber), .uint32(4, start),
                .string(8, "workout-engine", size: 16),
            ])
        writer.write(FITProfile.Message.fileCreator, [.uint16(0, 1)])
        writer.write(FITProfile.Message.event, timerEvent(start, type: FITProfile.EventType.start, motion: false))

        // Records, lengths and pause events in time order.
        var stream: [(time: Double, order: Int, fields: [FITWriter.Field?], global: UInt16)] = []
        for point in timeline.points {
            stream.append((Double(point.second), 1, recordFields(point), FITProfile.Message.record))
        }
        for (index, entry) in timeline.lengths.enumerated() {
            stream.append(
                (
                    FITTime.seconds(entry.event.end), 2, lengthFields(entry.event, entry.length, index: index),
                    FITProfile.Message.length
                ))
        }
        for pause in timeline.pauses {
            if let second = ExportTimeline.second(pause.start), second < end {
                stream.append(
                    (
                        Double(second), 0, timerEvent(second, type: FITProfile.EventType.stopAll, motion: pause.motion),
                        FITProfile.Message.event
                    ))
            }
            if let resume = pause.end, let second = ExportTimeline.second(resume), second < end {
                stream.append(
                    (
                        Double(second), 0, timerEvent(second, type: FITProfile.EventType.start, motion: pause.motion),
                        FITProfile.Message.event
                    ))
            }
        }
        stream.sort { ($0.time, $0.order) < ($1.time, $1.order) }
        for entry in stream { writer.write(entry.global, entry.fields) }
        writer.write(FITProfile.Message.event, timerEvent(end, type: FITProfile.EventType.stopAll, motion: false))
        if case .double(let drop)? = workout.metadata[MetadataKey.heartRateRecoveryOneMinute], drop.isFinite,
            let second = ExportTimeline.second(workout.end.addingTimeInterval(60))
        {
            writer.write(
                FITProfile.Message.event,
                [
                    .uint32(253, second), .enumeration(0, FITProfile.Event.recoveryHeartRate),
                    .enumeration(1, FITProfile.EventType.marker),
                    .uint32(3, UInt32(exactly: max(0, min(255, drop.rounded()))) ?? 0),
                ])
        }

        // Recovery readings: records after the end, outside every session.
        let endSeconds = FITTime.seconds(workout.end)
        var recoveryRecords: [UInt32: Double] = [:]
        for reading in timeline.recoveryHeartRate {
            guard let second = ExportTimeline.second(reading.start), let value = reading.canonicalValue else { continue }
            let offset = Double(second) - endSeconds
            guard offset >= 1, offset <= 129 else { continue }
            recoveryRecords[second] = value
        }
        for (second, value) in recoveryRecords.sorted(by: { $0.key < $1.key }) {
            writer.write(FITProfile.Message.record, [.uint32(253, second), .uint8(3, byte(value))])
        }

        // Laps, then sessions.
        var lapIndex: UInt16 = 0
        var sessions: [[FITWriter.Field?]] = []
        for (legIndex, leg) in timeline.legs.enumerated() {
            let firstLap = lapIndex
            for lap in laps(of: leg, timeline: timeline) {
                writer.write(FITProfile.Message.lap, lap.fields(index: lapIndex))
                lapIndex &+= 1
            }
            sessions.append(
                sessionFields(
                    leg, index: legIndex, firstLap: firstLap, lapCount: lapIndex &- firstLap, timeline: timeline,
                    last: legIndex == timeline.legs.count - 1, multisport: timeline.legs.count > 1))
        }
        for fields in sessions { writer.write(FITProfile.Message.session, fields) }
        writer.write(
            FITProfile.Message.activity,
            [
                .uint32(253, end), .scaled(0, workout.duration, scale: 1000, size: 4),
                .uint16(1, UInt16(clamping: timeline.legs.count)),
                .enumeration(2, timeline.legs.count > 1 ? 1 : 0), .enumeration(3, FITProfile.Event.activity),
                .enumeration(4, FITProfile.EventType.stop), .uint32(5, end),
            ])
        return writer.finish()
    }

    static func timerEvent(_ second: UInt32, type: UInt8, motion: Bool) -> [FITWriter.Field?] {
        [
            .uint32(253, second), .enumeration(0, FITProfile.Event.timer), .enumeration(1, type),
            .uint32(3, motion ? FITProfile.TimerTrigger.auto : FITProfile.TimerTrigger.manual), .uint8(4, 0),
        ]
    }

    static func recordFields(_ point: ExportTimeline.Point) -> [FITWriter.Field?] {
        var cadence: UInt8?
        var fraction: UInt8?
        if let value = point.cadence, value.isFinite, value >= 0 {
            let rpm = point.cadenceIsSteps ? value / 2 : value
            let whole = rpm.rounded(.down)
            if whole <= 254 {
                cadence = UInt8(whole)
                let parts = ((rpm - whole) * 128).rounded()
                if parts > 0, parts < 128 { fraction = UInt8(parts) }
            }
        }
        return [
            .uint32(253, point.second),
            .sint32(0, point.latitude.flatMap { semicircles($0) }),
            .sint32(1, point.longitude.flatMap { semicircles($0) }),
            .scaled(78, point.altitude, scale: 5, offset: 500, size: 4),
            .uint8(3, point.heartRate.flatMap { byte($0) }),
            .uint8(4, cadence), .uint8(53, fraction),
            .scaled(5, point.distance, scale: 100, size: 4),
            .scaled(73, point.speed, scale: 1000, size: 4),
            .uint16(7, point.power.flatMap { word($0) }),
            .scaled(85, point.stepLength, scale: 10_000, size: 2),
            .uint32(
                19,
                point.strokes.flatMap { value in
                    value.isFinite && value >= 0 && value < 4e9 ? UInt32(value.rounded()) : nil
                }),
        ]
    }

    static func semicircles(_ degrees: Double) -> Int32? {
        guard degrees.isFinite, abs(degrees) <= 180 else { return nil }
        return Int32(exactly: (degrees * 2_147_483_648 / 180).rounded()) ?? (degrees > 0 ? Int32.max - 1 : Int32.min)
    }

    static func byte(_ value: Double, limit: Double = 254) -> UInt8? {
        guard value.isFinite, value >= 0, value.rounded() <= limit else { return nil }
        return UInt8(value.rounded())
    }

    static func word(_ value: Double, limit: Double = 65534) -> UInt16? {
        guard value.isFinite, value >= 0, value.rounded() <= limit else { return nil }
        return UInt16(value.rounded())
    }

    /// The FIT `swim_stroke` of an engine stroke style.
    static func swimStroke(_ style: String?, kind: LengthKind) -> UInt8? {
        if kind == .drill { return FITProfile.SwimStroke.drill }
        switch style {
        case "freestyle": return FITProfile.SwimStroke.freestyle
        case "backstroke": return FITProfile.SwimStroke.backstroke
        case "breaststroke": return FITProfile.SwimStroke.breaststroke
        case "butterfly": return FITProfile.SwimStroke.butterfly
        case "drill": return FITProfile.SwimStroke.drill
        case "mixed": return FITProfile.SwimStroke.mixed
        case "im": return FITProfile.SwimStroke.im
        default: return nil
        }
    }

    static func lengthFields(_ event: WorkoutEvent, _ length: PoolLength, index: Int) -> [FITWriter.Field?] {
        let rest = length.kind == .rest
        return [
            .uint16(254, UInt16(clamping: index)), .uint32(253, ExportTimeline.second(event.end)),
            .enumeration(0, FITProfile.Event.length), .enumeration(1, FITProfile.EventType.stop),
            .uint32(2, ExportTimeline.second(event.start)),
            .scaled(3, event.duration, scale: 1000, size: 4), .scaled(4, event.duration, scale: 1000, size: 4),
            .uint16(5, rest ? nil : length.strokes.map { UInt16(clamping: $0) } ?? (length.kind == .drill ? 0 : nil)),
            .enumeration(7, rest ? nil : swimStroke(length.style, kind: length.kind)),
            .enumeration(12, rest ? FITProfile.LengthType.idle : FITProfile.LengthType.active),
        ]
    }

    /// A lap about to be written.
    struct Lap {
        var start: Date
        var end: Date
        var sport: UInt8
        var subSport: UInt8
        var timerTime: TimeInterval
        var distance: Double?
        var averageHeartRate: Double?
        var maximumHeartRate: Double?
        var strokes: Int?
        var firstLength: Int?
        var lengths: Int?
        var swolf: Double?
        var style: UInt8?

        func fields(index: UInt16) -> [FITWriter.Field?] {
            [
                .uint16(254, index), .uint32(253, ExportTimeline.second(end)), .enumeration(0, FITProfile.Event.lap),
                .enumeration(1, FITProfile.EventType.stop), .uint32(2, ExportTimeline.second(start)),
                .scaled(7, end.timeIntervalSince(start), scale: 1000, size: 4),
                .scaled(8, timerTime, scale: 1000, size: 4), .scaled(9, distance, scale: 100, size: 4),
                .uint32(10, strokes.map { UInt32(clamping: $0) }),
                .uint8(15, averageHeartRate.flatMap { FITExport.byte($0) }),
                .uint8(16, maximumHeartRate.flatMap { FITExport.byte($0) }),
                .enumeration(24, 7), .enumeration(25, sport), .enumeration(39, subSport),
                .uint16(32, lengths.map { UInt16(clamping: $0) }),
                .uint16(35, firstLength.map { UInt16(clamping: $0) }),
                .uint16(40, lengths.map { UInt16(clamping: $0) }),
                .enumeration(38, style),
                .uint16(73, swolf.flatMap { FITExport.word($0) }),
            ]
        }
    }

    static func sport(_ configuration: WorkoutConfiguration) -> (UInt8, UInt8) {
        let indoor = configuration.locationType == .indoor
        switch configuration.activityType {
        case .swimming:
            let sub: UInt8 =
                switch configuration.swimmingLocationType {
                case .pool: FITProfile.SubSport.lapSwimming
                case .openWater: FITProfile.SubSport.openWater
                case .unknown: FITProfile.SubSport.generic
                }
            return (FITProfile.Sport.swimming, sub)
        case .cycling:
            return (FITProfile.Sport.cycling, indoor ? FITProfile.SubSport.indoorCycling : 0)
        case .running:
            return (FITProfile.Sport.running, indoor ? FITProfile.SubSport.treadmill : 0)
        case .walking:
            return (FITProfile.Sport.walking, indoor ? FITProfile.SubSport.indoorWalking : 0)
        case .transition: return (FITProfile.Sport.transition, 0)
        case .swimBikeRun: return (FITProfile.Sport.multisport, 0)
        case .other: return (FITProfile.Sport.generic, 0)
        case .paddleSports: return (FITProfile.Sport.paddling, 0)
        }
    }

    /// A leg's laps: a pool swim's swim sets and rests (runs of lengths), the leg's lap events, or the leg.
    static func laps(of leg: ExportTimeline.Leg, timeline: ExportTimeline) -> [Lap] {
        let (sport, subSport) = sport(leg.configuration)
        let inLeg = { (date: Date) in date >= leg.start && date < leg.end }
        let lengths = timeline.lengths.enumerated().filter { inLeg($0.element.event.start) }
        if !lengths.isEmpty {
            var laps: [Lap] = []
            var group: [(offset: Int, element: (event: WorkoutEvent, length: PoolLength))] = []
            func close() {
                guard let first = group.first, let last = group.last else { return }
                let swum = group.filter { $0.element.length.kind != .rest }
                let swolfs = swum.compactMap { $0.element.length.swolf }
                let stats = timeline.statistics(from: first.element.event.start, to: last.element.event.end)
                laps.append(
                    Lap(
                        start: first.element.event.start, end: last.element.event.end, sport: sport, subSport: subSport,
                        timerTime: stats.duration,
                        distance: leg.configuration.lapLength.flatMap { $0.doubleValue(for: .meter) }.map {
                            $0 * Double(swum.count)
                        } ?? 0,
                        averageHeartRate: stats.average, maximumHeartRate: stats.maximum,
                        strokes: swum.compactMap { $0.element.length.strokes }.reduce(0, +), firstLength: first.offset,
                        lengths: swum.count,
                        swolf: swolfs.isEmpty ? nil : swolfs.reduce(0, +) / Double(swolfs.count),
                        style: swum.first.flatMap { swimStroke($0.element.length.style, kind: $0.element.length.kind) })
                )
                group.removeAll()
            }
            for entry in lengths {
                if let last = group.last {
                    let wasRest = last.element.length.kind == .rest
                    let isRest = entry.element.length.kind == .rest
                    if wasRest != isRest || (!isRest && last.element.length.style != entry.element.length.style) {
                        close()
                    }
                }
                group.append(entry)
            }
            close()
            return laps
        }
        var spans = timeline.laps.filter { inLeg($0.start) }.map { ($0.start, min($0.end, leg.end)) }
        if spans.isEmpty { spans = [(leg.start, leg.end)] }
        return spans.map { start, end in
            let stats = timeline.statistics(from: start, to: end)
            return Lap(
                start: start, end: end, sport: sport, subSport: subSport, timerTime: stats.duration,
                distance: stats.distance, averageHeartRate: stats.average, maximumHeartRate: stats.maximum)
        }
    }

    static func sessionFields(
        _ leg: ExportTimeline.Leg, index: Int, firstLap: UInt16, lapCount: UInt16, timeline: ExportTimeline, last: Bool,
        multisport: Bool
    ) -> [FITWriter.Field?] {
        let (sport, subSport) = sport(leg.configuration)
        let statistics = leg.statistics
        let distance = statistics.totalDistance
        let lengths = timeline.lengths.filter { $0.event.start >= leg.start && $0.event.start < leg.end }
        let swum = lengths.filter { $0.length.kind != .rest }
        let pool = !lengths.isEmpty
        let strokes = statistics[.swimmingStrokeCount]?.sum?.value
        let speed =
            statistics.average(.cyclingSpeed) ?? statistics.average(.runningSpeed)
            ?? statistics.average(.paddleSportsSpeed)
        let maxSpeed =
            statistics.maximum(.cyclingSpeed) ?? statistics.maximum(.runningSpeed)
            ?? statistics.maximum(.paddleSportsSpeed)
        let power = statistics.average(.cyclingPower) ?? statistics.average(.runningPower)
        let maxPower = statistics.maximum(.cyclingPower) ?? statistics.maximum(.runningPower)
        let cadence = statistics.average(.cyclingCadence) ?? statistics.average(.runningCadence).map { $0 / 2 }
        return [
            .uint16(254, UInt16(clamping: index)), .uint32(253, ExportTimeline.second(leg.end)),
            .enumeration(0, FITProfile.Event.session), .enumeration(1, FITProfile.EventType.stop),
            .uint32(2, ExportTimeline.second(leg.start)), .enumeration(5, sport), .enumeration(6, subSport),
            .scaled(7, leg.end.timeIntervalSince(leg.start), scale: 1000, size: 4),
            .scaled(8, leg.duration, scale: 1000, size: 4), .scaled(9, distance, scale: 100, size: 4),
            .uint32(10, strokes.flatMap { $0.isFinite && $0 >= 0 && $0 < 4e9 ? UInt32($0.rounded()) : nil }),
            .scaled(124, speed, scale: 1000, size: 4), .scaled(125, maxSpeed, scale: 1000, size: 4),
            .uint8(16, statistics.average(.heartRate).flatMap { byte($0) }),
            .uint8(17, statistics.maximum(.heartRate).flatMap { byte($0) }),
            .uint8(18, cadence.flatMap { byte($0) }),
            .uint16(20, power.flatMap { word($0) }),
            .uint16(21, maxPower.flatMap { word($0) }),
            .uint16(25, firstLap), .uint16(26, lapCount),
            .enumeration(28, last ? 0 : multisport ? 2 : 0),
            .uint16(33, pool ? UInt16(clamping: swum.count) : nil),
            .scaled(44, pool ? leg.configuration.lapLength?.doubleValue(for: .meter) : nil, scale: 100, size: 2),
            .enumeration(46, pool ? 0 : nil),
            .uint16(47, pool ? UInt16(clamping: swum.count) : nil),
            .uint16(80, (statistics[.swimmingSWOLF]?.average?.value).flatMap { word($0) }),
        ]
    }
}
