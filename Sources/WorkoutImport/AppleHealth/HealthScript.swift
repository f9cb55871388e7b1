import Foundation
import WorkoutEngine
import WorkoutFormats
import WorkoutModel

/// Metadata keys an Apple Health import writes.
public enum HealthMetadataKey {
    /// HealthKit's activity type as the export names it (`HKWorkoutActivityTypeFunctionalStrengthTraining`).
    public static let activityType = "HealthActivityType"
    /// The IANA time zone of the workout (`Europe/Luxembourg`, from `HKTimeZone`).
    public static let timeZone = "HealthTimeZone"
    /// The workout's local start as the time zone gives it (`2025-09-13T15:39:17+02:00`).
    public static let localStart = "HealthLocalStart"
    /// The source app or device name as exported (`Apple Watch`, `Strava`).
    public static let sourceName = "HealthSourceName"
    /// The recording hardware (`Watch7,2`).
    public static let hardware = "HealthHardware"
    /// Apple's stated duration in seconds (pauses excluded).
    public static let duration = "HealthDuration"
    /// The workout's identity (`HealthWorkoutIdentity`), from which its id derives.
    public static let identity = "HealthIdentity"
    /// Apple's one-minute heart-rate recovery (count/min) from a record that follows the workout.
    public static let heartRateRecoveryOneMinute = "HealthHeartRateRecoveryOneMinute"

    /// What the export states for a span: `HealthStated.<span>.<type>.<field>` where span is
    /// `workout` or `activity<N>` (1-based) and field `sum`, `average`, `minimum`, `maximum` or
    /// `duration`; values are doubles in the type's canonical unit (seconds for duration).
    public static func stated(span: String, type: String, field: String) -> String {
        "HealthStated.\(span).\(type).\(field)"
    }
}

/// Apple Health activity types in the engine's.
enum HealthActivityTypes {
    static func engineType(_ name: String) -> WorkoutActivityType {
        switch name {
        case "HKWorkoutActivityTypeRunning": .running
        case "HKWorkoutActivityTypeWalking", "HKWorkoutActivityTypeHiking": .walking
        case "HKWorkoutActivityTypeCycling", "HKWorkoutActivityTypeHandCycling": .cycling
        case "HKWorkoutActivityTypeSwimming": .swimming
        case "HKWorkoutActivityTypeSwimBikeRun": .swimBikeRun
        case "HKWorkoutActivityTypeTransition": .transition
        case "HKWorkoutActivityTypePaddleSports": .paddleSports
        default: .other
        }
    }

    /// HealthKit's stroke styles (HKSwimmingStrokeStyle) by the names pool lengths carry.
    static func strokeStyle(_ code: String) -> String? {
        switch code {
        case "1": "mixed"
        case "2": "freestyle"
        case "3": "backstroke"
        case "4": "breaststroke"
        case "5": "butterfly"
        case "6": "kickboard"
        default: nil
        }
    }
}

/// A quantity `Record` kept for a workout, with the rank of its source.
struct KeptRecord: Sendable {
    var record: HealthRecord
    var sourceRank: Int
    var sourceName: String
}

/// Which source's samples a workout keeps where several sources recorded the same type.
///
/// Per workout and per quantity type, only the records of the best-ranked source are kept: the
/// workout's own source (the app or watch that recorded it) first, then any Apple Watch, then any
/// iPhone, then other apps by name. The export writes every source's samples side by side (a
/// watch and its phone both count steps and distance), so summing them would double them.
enum HealthSourcePreference {
    static func rank(_ source: String, device: String?, workoutSource: String) -> Int {
        if source == workoutSource { return 0 }
        let text = (source + " " + (device ?? "")).lowercased()
        if text.contains("watch") { return 1 }
        if text.contains("iphone") { return 2 }
        return 3
    }
}

/// Turns one workout of an export into the inputs of one live session.
struct HealthScriptBuilder {
    var workout: HealthWorkout
    var records: [KeptRecord]
    var route: [RoutePoint]
    var recovery: HealthRecoveryRecord?
    var anomalies: [ImportAnomaly] = []

    /// The workout's identity: source, HealthKit activity type and its UTC start and end, to the
    /// second. The same workout in a newer export (even written with another UTC offset) has the
    /// same identity, hence the same id.
    var identity: String {
        "\(workout.sourceName)|\(workout.activityType)|\(Int(workout.start.timeIntervalSince1970))|"
            + "\(Int(workout.end.timeIntervalSince1970))"
    }

    var configuration: WorkoutConfiguration {
        let type = HealthActivityTypes.engineType(workout.activityType)
        var configuration = WorkoutConfiguration(activityType: type)
        switch workout.metadata["HKIndoorWorkout"] {
        case "1": configuration.locationType = .indoor
        case "0": configuration.locationType = .outdoor
        default: break
        }
        if type == .swimming || type == .swimBikeRun {
            switch workout.metadata["HKSwimmingLocationType"] {
            case "1": configuration.swimmingLocationType = .pool
            case "2": configuration.swimmingLocationType = .openWater
            default: break
            }
            if let text = workout.metadata["HKLapLength"] {
                let parts = text.split(separator: " ")
                if parts.count == 2, let value = Double(parts[0]), value > 0, value.isFinite,
                    let unit = HealthUnits.unit(String(parts[1])), unit.dimension == .length
                {
                    configuration.lapLength = Quantity(value, unit)
                    if configuration.swimmingLocationType == .unknown { configuration.swimmingLocationType = .pool }
                }
            }
            if configuration.swimmingLocationType == .pool { configuration.locationType = .indoor }
        }
        return configuration
    }

    /// The configuration of an activity: the workout's, or for a swim-bike-run the leg its
    /// statistics show (the export names no activity type).
    func configuration(of activity: HealthActivity, workout configuration: WorkoutConfiguration) -> WorkoutConfiguration {
        guard configuration.activityType == .swimBikeRun else { return configuration }
        let types = Set(activity.statistics.map(\.type))
        if types.contains("HKQuantityTypeIdentifierDistanceSwimming") {
            return configuration.plannedLegs.first ?? configuration
        }
        if types.contains("HKQuantityTypeIdentifierDistanceCycling") {
            return WorkoutConfiguration(activityType: .cycling, locationType: configuration.locationType)
        }
        if types.contains("HKQuantityTypeIdentifierDistanceWalkingRunning") {
            return WorkoutConfiguration(activityType: .running, locationType: configuration.locationType)
        }
        return WorkoutConfiguration(activityType: .transition, locationType: configuration.locationType)
    }

    /// A statistic in the engine's type and canonical unit; nil for a type or unit it does not know.
    static func stated(_ statistic: HealthStatistic) -> (QuantityType, HealthStatistic)? {
        guard let type = QuantityType(healthKitIdentifier: statistic.type) else { return nil }
        let unit = statistic.unit ?? type.canonicalUnit.symbol
        func convert(_ value: Double?) -> Double? {
            value.flatMap { HealthUnits.canonicalValue($0, unit: unit, type: type) }
        }
        var converted = statistic
        converted.sum = convert(statistic.sum)
        converted.average = convert(statistic.average)
        converted.minimum = convert(statistic.minimum)
        converted.maximum = convert(statistic.maximum)
        converted.unit = type.canonicalUnit.symbol
        guard converted.sum != nil || converted.average != nil || converted.minimum != nil || converted.maximum != nil
        else { return nil }
        return (type, converted)
    }

    /// The old shape's totals as statistics.
    var oldShapeStatistics: [HealthStatistic] {
        var statistics: [HealthStatistic] = []
        if let (value, unit) = workout.totalDistance {
            let type: String =
                switch configuration.activityType {
                case .swimming: "HKQuantityTypeIdentifierDistanceSwimming"
                case .cycling: "HKQuantityTypeIdentifierDistanceCycling"
                case .paddleSports: "HKQuantityTypeIdentifierDistancePaddleSports"
                default: "HKQuantityTypeIdentifierDistanceWalkingRunning"
                }
            if value > 0 { statistics.append(HealthStatistic(type: type, start: workout.start, end: workout.end, sum: value, unit: unit)) }
        }
        if let (value, unit) = workout.totalEnergy, value > 0 {
            statistics.append(
                HealthStatistic(
                    type: "HKQuantityTypeIdentifierActiveEnergyBurned", start: workout.start, end: workout.end, sum: value,
                    unit: unit))
        }
        return statistics
    }

    /// Metadata of what the export states (device figures) and of the workout itself.
    func metadata(activities: [HealthActivity]) -> Metadata {
        var metadata: Metadata = [
            ImportMetadataKey.format: .string("Apple Health"),
            HealthMetadataKey.activityType: .string(workout.activityType),
            HealthMetadataKey.sourceName: .string(workout.sourceName),
            HealthMetadataKey.identity: .string(identity),
        ]
        metadata[ImportMetadataKey.device] = .string(
            [workout.deviceName, workout.hardware].compactMap { $0 }.joined(separator: " ").isEmpty
                ? workout.sourceName : [workout.deviceName, workout.hardware].compactMap { $0 }.joined(separator: " "))
        if let hardware = workout.hardware { metadata[HealthMetadataKey.hardware] = .string(hardware) }
        if let duration = workout.duration { metadata[HealthMetadataKey.duration] = .double(duration) }
        if let zone = workout.metadata["HKTimeZone"], let timeZone = TimeZone(identifier: zone) {
            metadata[HealthMetadataKey.timeZone] = .string(zone)
            metadata[HealthMetadataKey.localStart] = .string(HealthDate.internetDateTime(workout.start, in: timeZone))
        }
        for (key, value) in workout.metadata where key.hasPrefix("HK") && key != "HKTimeZone" {
            metadata["Health." + key] = .string(value)
        }
        func state(_ span: String, _ statistics: [HealthStatistic], duration: TimeInterval?) {
            if let duration { metadata[HealthMetadataKey.stated(span: span, type: "time", field: "duration")] = .double(duration) }
            for statistic in statistics {
                guard let (type, value) = Self.stated(statistic) else { continue }
                let fields: [(String, Double?)] = [
                    ("sum", value.sum), ("average", value.average), ("minimum", value.minimum), ("maximum", value.maximum),
                ]
                for (field, number) in fields {
                    if let number { metadata[HealthMetadataKey.stated(span: span, type: type.rawValue, field: field)] = .double(number) }
                }
            }
        }
        state("workout", workout.statistics + oldShapeStatistics, duration: workout.duration)
        for (index, activity) in activities.enumerated() {
            state("activity\(index + 1)", activity.statistics, duration: activity.duration)
        }
        if let recovery {
            metadata[HealthMetadataKey.heartRateRecoveryOneMinute] = .double(recovery.value)
        }
        return metadata
    }

    /// The session script; throws the reason when the workout cannot be replayed.
    mutating func script() -> SessionScript {
        let configuration = configuration
        let start = workout.start
        let end = workout.end
        var options = BuilderOptions()
        options.identifiers = .seeded(FITImportPlan.fnv1a(Array(identity.utf8)))
        // The watch recorded what it recorded: every type is kept in every activity.
        options.dataSource = WorkoutDataSource(
            explicitTypes: Set(QuantityType.allCases.filter { $0 != .swimmingSWOLF && $0 != .heartRateRecoveryOneMinute }))
        options.automaticTransitions.enabled = false
        options.heartRateRecovery.enabled = false
        // Records are sparse (a watch writes heart rate every few seconds, other apps far less):
        // a reading leads in a straight line to the next one within a minute.
        options.interpolation = .linear
        options.holdCap = 60
        options.invalidInput = .dropAndCount
        var steps: [(key: (Double, Int, Int), step: TimedStep)] = []
        var sequence = 0
        func add(_ time: Date, rank: Int, _ step: ImportStep) {
            let clamped = min(max(time, start), end)
            steps.append(((clamped.timeIntervalSince1970, rank, sequence), TimedStep(at: clamped, step)))
            sequence += 1
        }
        // Activities.
        let activities = workout.activities.filter { $0.end > start && $0.start < end }.sorted { $0.start < $1.start }
        var activityConfigurations: [WorkoutConfiguration] = []
        for (index, activity) in activities.enumerated() {
            activityConfigurations.append(self.configuration(of: activity, workout: configuration))
            let from = max(activity.start, index > 0 ? activities[index - 1].end : start)
            add(from, rank: 0, .beginLeg(index))
            let next = index + 1 < activities.count ? activities[index + 1].start : end
            if activity.end < next, activity.end < end { add(activity.end, rank: 0, .endLeg(index)) }
        }
        // Pauses: in time order, each only when it changes the state.
        var paused = false
        let events = workout.events.sorted { $0.date < $1.date }
        var laps: [WorkoutEvent] = []
        var poolSamples: [QuantitySample] = []
        let recordedTypes = Set(records.map(\.record.type))
        var otherEvents: [WorkoutEvent] = []
        let pool = configuration.swimmingLocationType == .pool
        for event in events {
            let type = event.type.replacingOccurrences(of: "HKWorkoutEventType", with: "")
            switch type {
            case "Pause":
                guard !paused, event.date < end else { continue }
                paused = true
                add(event.date, rank: 1, .pause(motion: false))
            case "Resume":
                guard paused else { continue }
                paused = false
                add(event.date, rank: 1, .resume(motion: false))
            case "MotionPaused", "MotionResumed":
                // Kept as markers: Apple's duration counts auto-paused time as active (a watchOS 8 run:
                // 18 motion pauses, duration = end - start), so they do not pause the session.
                guard event.date >= start, event.date <= end else { continue }
                otherEvents.append(
                    WorkoutEvent(type: .marker, start: event.date, metadata: ["Health.event": .string(type)]))
            case "Lap", "Segment", "Marker":
                guard event.date >= start, event.date <= end else { continue }
                var metadata: Metadata = [:]
                for (key, value) in event.metadata {
                    metadata["Health." + key] = .string(value)
                }
                let swolf = event.metadata["HKSWOLFScore"].flatMap(Double.init).flatMap { $0.isFinite ? $0 : nil }
                let duration = type == "Marker" ? 0 : min(event.duration, end.timeIntervalSince(event.date))
                if type == "Lap", pool {
                    // A pool length: its stroke style, and its strokes from Apple's SWOLF (seconds + strokes)
                    // when that leaves a whole number.
                    metadata[SwimMetadataKey.lengthKind] = .string(LengthKind.active.rawValue)
                    if let style = event.metadata["HKSwimmingStrokeStyle"].flatMap(HealthActivityTypes.strokeStyle) {
                        metadata[SwimMetadataKey.strokeStyle] = .string(style)
                    }
                    if let swolf {
                        let strokes = swolf - event.duration
                        if strokes >= -0.01, abs(strokes - strokes.rounded()) < 0.01 {
                            metadata[SwimMetadataKey.strokes] = .int(Int(strokes.rounded()))
                        }
                    }
                    laps.append(WorkoutEvent(type: .lap, start: event.date, duration: duration, metadata: metadata))
                    // The length's distance and strokes as samples over it (as a FIT pool swim's lengths
                    // give them): a pool swim's distance is its lengths times the pool length.
                    let lengthEnd = event.date.addingTimeInterval(duration)
                    // Only where the export holds no records of the type (a watch's own per-length records win).
                    if let lapLength = configuration.lapLength, !recordedTypes.contains(.distanceSwimming) {
                        poolSamples.append(
                            QuantitySample(
                                type: .distanceSwimming, quantity: lapLength, start: event.date, end: lengthEnd,
                                source: SourceDevice(name: workout.sourceName)))
                    }
                    if case .int(let strokes)? = metadata[SwimMetadataKey.strokes],
                        !recordedTypes.contains(.swimmingStrokeCount)
                    {
                        poolSamples.append(
                            QuantitySample(
                                .swimmingStrokeCount, Double(strokes), at: event.date, end: lengthEnd,
                                source: SourceDevice(name: workout.sourceName)))
                    }
                } else {
                    if let swolf { metadata[SwimMetadataKey.swolf] = .double(swolf) }
                    let eventType: WorkoutEventType = type == "Lap" ? .lap : type == "Segment" ? .segment : .marker
                    otherEvents.append(WorkoutEvent(type: eventType, start: event.date, duration: duration, metadata: metadata))
                }
            default:
                continue
            }
        }
        for event in (laps + otherEvents).sorted(by: { $0.start < $1.start }) {
            add(event.start, rank: 3, .events([event]))
        }
        // Samples, in batches, each once nothing before it can still move (see `SampleTiming`).
        var samples = poolSamples
        let source = SourceDevice(name: workout.sourceName, manufacturer: workout.deviceName == "Apple Watch" ? "Apple Inc." : nil,
            model: workout.hardware)
        for kept in records {
            let record = kept.record
            guard record.start >= start, record.end <= end else { continue }
            var sampleSource = source
            if kept.sourceName != workout.sourceName { sampleSource = SourceDevice(name: kept.sourceName) }
            samples.append(
                QuantitySample(
                    type: record.type, quantity: Quantity(record.value, record.type.canonicalUnit), start: record.start,
                    end: record.end, source: sampleSource))
        }
        let sampleCount = samples.count
        for batch in SampleTiming.batches(samples) {
            add(batch.time, rank: 2, .samples(batch.samples))
        }
        // Route points.
        var routeBatch: [RoutePoint] = []
        var routeCount = 0
        for point in route where point.date >= start && point.date <= end {
            routeBatch.append(point)
            routeCount += 1
            if routeBatch.count >= 64 {
                add(routeBatch[0].date, rank: 2, .route(routeBatch))
                routeBatch = []
            }
        }
        if let first = routeBatch.first { add(first.date, rank: 2, .route(routeBatch)) }
        let ordered = steps.sorted { $0.key < $1.key }.map(\.step)
        var script = SessionScript(
            configuration: configuration, builderOptions: options, start: start, end: end,
            activities: activityConfigurations, steps: SessionSteps(ordered), recoveryHeartRate: [],
            metadata: metadata(activities: activities), sampleCount: sampleCount, routePointCount: routeCount)
        script.statedStatistics = StatedStatistics(
            workout: Self.statistics(workout.statistics + oldShapeStatistics, start: start, end: end, duration: workout.duration),
            activities: activities.map {
                Self.statistics($0.statistics, start: $0.start, end: $0.end, duration: $0.duration)
            })
        return script
    }

    /// Stated statistics in the engine's form (canonical units; `sampleCount` 0: the device's figure).
    static func statistics(_ stated: [HealthStatistic], start: Date, end: Date, duration: TimeInterval?) -> [Statistics] {
        stated.compactMap { statistic -> Statistics? in
            guard let (type, value) = Self.stated(statistic) else { return nil }
            let unit = type.canonicalUnit
            switch type.aggregationStyle {
            case .cumulative:
                guard let sum = value.sum else { return nil }
                return Statistics(
                    quantityType: type, start: start, end: end, sum: Quantity(sum, unit),
                    duration: duration ?? end.timeIntervalSince(start))
            case .discrete:
                guard value.average != nil || value.minimum != nil || value.maximum != nil else { return nil }
                return Statistics(
                    quantityType: type, start: start, end: end, minimum: value.minimum.map { Quantity($0, unit) },
                    maximum: value.maximum.map { Quantity($0, unit) }, average: value.average.map { Quantity($0, unit) },
                    duration: duration ?? end.timeIntervalSince(start))
            }
        }
    }
}

/// When the replay hands an export's samples to the engine.
///
/// The engine settles a stream's sample into the statistics once a later one of the stream arrives
/// (past its reorder window), and from then on no pause, resume or activity boundary may be placed
/// before that sample's end. A phone's records cover minutes (steps, distance), so a record can
/// straddle a pause or an activity's end: given at its start, with the records after it, it was
/// settled before the pause arrived and the workout was refused ("cannot pause at …"). So a sample
/// is given only once every earlier sample of its stream (type and source) has ended: at its start,
/// or at the latest end of those before it when they overlap it; and a batch at its last sample's
/// time. Then every pause and boundary before those ends is already in the session when they
/// settle, and the engine shares each record by the active time it covers in each span (a pause's
/// share counts nowhere), as for a live recording. The records stay as the export states them (one
/// sample each, never split), and a stream's samples still arrive in start order.
enum SampleTiming {
    /// `samples` in batches of at most 64 spanning at most 30 s of their times, each with the time it
    /// is given at (never before any of its samples may be).
    static func batches(_ samples: [QuantitySample]) -> [(time: Date, samples: [QuantitySample])] {
        // The streams seen, with their latest end, searched in order: a workout has a few (its records keep one
        // source per type), and comparing a type and an equal source is cheaper than hashing the source's text for
        // each sample, which cost more than the rest of the timing.
        var streams: [(type: QuantityType, source: SourceDevice, latestEnd: Date)] = []
        func stream(of sample: QuantitySample) -> Int? {
            streams.firstIndex { $0.type == sample.type && $0.source == sample.source }
        }
        // In start order (stable), each sample's earliest time: its start, or the latest end before it in its stream.
        var ordered = samples.indices.map { (start: samples[$0].start, index: $0) }
        ordered.sort { ($0.start, $0.index) < ($1.start, $1.index) }
        var timed: [(time: Date, order: Int, index: Int)] = []
        timed.reserveCapacity(samples.count)
        for (order, entry) in ordered.enumerated() {
            let sample = samples[entry.index]
            guard let known = stream(of: sample) else {
                streams.append((sample.type, sample.source, sample.end))
                timed.append((sample.start, order, entry.index))
                continue
            }
            let earlier = streams[known].latestEnd
            timed.append((max(sample.start, earlier), order, entry.index))
            if sample.end > earlier { streams[known].latestEnd = sample.end }
        }
        // A stream's times never decrease in start order, so this keeps each stream in start order.
        timed.sort { ($0.time, $0.order) < ($1.time, $1.order) }
        var batches: [(time: Date, samples: [QuantitySample])] = []
        var batch: [QuantitySample] = []
        var first = Date.distantPast
        var last = Date.distantPast
        for entry in timed {
            if batch.isEmpty { first = entry.time }
            batch.append(samples[entry.index])
            last = entry.time
            if batch.count >= 64 || last.timeIntervalSince(first) > 30 {
                batches.append((last, batch))
                batch = []
            }
        }
        if !batch.isEmpty { batches.append((last, batch)) }
        return batches
    }
}
