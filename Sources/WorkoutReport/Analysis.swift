import Foundation
import WorkoutEngine
import WorkoutModel

/// A leg of the report: an activity, or the whole workout when it has none.
struct Leg: Sendable {
    var number: Int
    var type: WorkoutActivityType
    var start: TimeInterval
    var end: TimeInterval
    var active: TimeInterval
    var statistics: [QuantityType: Statistics]
    /// `Swim`, `T1`, `Bike`, `T2`, `Run` …
    var label: String
}

/// A span of the workout's time (seconds from its start).
struct Span: Sendable, Hashable {
    var start: TimeInterval
    var end: TimeInterval
    var duration: TimeInterval { end - start }
}

/// A chart series: the samples of some types, decimated to min/max/mean per pixel column.
struct Series: Sendable {
    enum Kind: String, CaseIterable {
        case heartRate, speed, power, cadence
    }

    var kind: Kind
    var title: String
    var unit: String
    /// Per column with data: column index, min, max, mean.
    var columns: [(index: Int, min: Double, max: Double, mean: Double)]
    var sampleCount: Int
    var minimum: Double
    var maximum: Double

    var isEmpty: Bool { columns.isEmpty }
}

/// The pure computations behind a report, each a function of the input.
enum Analysis {
    /// The legs: activities in order, or the whole workout as one leg.
    static func legs(_ workout: Workout) -> [Leg] {
        guard !workout.activities.isEmpty else {
            return [
                Leg(
                    number: 1, type: workout.activityType, start: 0, end: workout.elapsed, active: workout.duration,
                    statistics: workout.statistics, label: Text.sport(workout.activityType))
            ]
        }
        var transitions = 0
        return workout.activities.enumerated().map { index, activity in
            let type = activity.configuration.activityType
            var label = Text.sport(type)
            if type == .transition {
                transitions += 1
                label = "T\(transitions)"
            }
            return Leg(
                number: index + 1, type: type, start: activity.start.timeIntervalSince(workout.start),
                end: (activity.end ?? workout.end).timeIntervalSince(workout.start), active: activity.duration,
                statistics: activity.statistics, label: label)
        }
    }

    /// User pauses and motion pauses as spans (an unclosed one lasts to the workout's end).
    static func pauses(_ workout: Workout) -> (user: [Span], motion: [Span]) {
        func spans(_ begin: WorkoutEventType, _ finish: WorkoutEventType) -> [Span] {
            var result: [Span] = []
            var open: TimeInterval?
            for event in workout.events.sorted(by: { $0.start < $1.start }) {
                let time = event.start.timeIntervalSince(workout.start)
                if event.type == begin, open == nil { open = time }
                if event.type == finish, let start = open {
                    result.append(Span(start: start, end: time))
                    open = nil
                }
            }
            if let start = open { result.append(Span(start: start, end: workout.elapsed)) }
            return result
        }
        return (spans(.pause, .resume), spans(.motionPaused, .motionResumed))
    }

    /// The quantity types each chart draws.
    static func types(_ kind: Series.Kind) -> [QuantityType] {
        switch kind {
        case .heartRate: [.heartRate]
        case .speed: [.cyclingSpeed, .runningSpeed, .paddleSportsSpeed]
        case .power: [.cyclingPower, .runningPower]
        case .cadence: [.cyclingCadence, .runningCadence]
        }
    }

    /// Decimates the samples of `kind` to min/max/mean per column of `columns` over the workout's
    /// elapsed time (speed in km/h; without speed samples, the route's GPS speed).
    static func series(
        _ kind: Series.Kind, samples: [QuantitySample], route: [RoutePoint], workout: Workout, columns: Int
    ) -> Series {
        let types = Set(types(kind))
        var values: [(TimeInterval, Double)] = samples.compactMap { sample in
            guard types.contains(sample.type), let value = sample.quantity.doubleValue(for: sample.type.canonicalUnit),
                value.isFinite
            else { return nil }
            return (sample.start.timeIntervalSince(workout.start), kind == .speed ? value * 3.6 : value)
        }
        if kind == .speed, values.isEmpty {
            values = route.compactMap { point in
                guard let speed = point.speed, speed.isFinite else { return nil }
                return (point.date.timeIntervalSince(workout.start), speed * 3.6)
            }
        }
        let (title, unit): (String, String) =
            switch kind {
            case .heartRate: ("Heart rate", "bpm")
            case .speed: ("Speed", "km/h")
            case .power: ("Power", "W")
            case .cadence: ("Cadence", "rpm/spm")
            }
        let elapsed = max(workout.elapsed, 1)
        var minimum = [Double](repeating: .infinity, count: columns)
        var maximum = [Double](repeating: -.infinity, count: columns)
        var sum = [Double](repeating: 0, count: columns)
        var count = [Int](repeating: 0, count: columns)
        var used = 0
        for (time, value) in values where time >= 0 && time <= elapsed {
            let column = min(columns - 1, Int(time / elapsed * Double(columns)))
            minimum[column] = Swift.min(minimum[column], value)
            maximum[column] = Swift.max(maximum[column], value)
            sum[column] += value
            count[column] += 1
            used += 1
        }
        var result: [(index: Int, min: Double, max: Double, mean: Double)] = []
        for column in 0..<columns where count[column] > 0 {
            result.append((column, minimum[column], maximum[column], sum[column] / Double(count[column])))
        }
        return Series(
            kind: kind, title: title, unit: unit, columns: result, sampleCount: used,
            minimum: result.map(\.min).min() ?? 0, maximum: result.map(\.max).max() ?? 0)
    }

    // MARK: heart-rate zones

    /// Zone lower bounds (count/min) from the heart-rate reserve (Karvonen): zone n (1…5) starts at
    /// resting + (40 + 10·n) % of (maximum − resting); below zone 1 is zone 0.
    static func zoneBounds(_ options: ReportOptions) -> [Double] {
        let reserve = options.maximumHeartRate - options.restingHeartRate
        return [0.5, 0.6, 0.7, 0.8, 0.9].map { options.restingHeartRate + $0 * reserve }
    }

    /// The zone (0…5) of a heart rate.
    static func zone(_ heartRate: Double, bounds: [Double]) -> Int {
        bounds.lastIndex { heartRate >= $0 }.map { $0 + 1 } ?? 0
    }

    /// Seconds in each zone (0…5) per leg: each reading holds until the next one, for at most 5 s
    /// (the builder's hold cap), inside the leg and outside pauses.
    static func zoneSeconds(
        legs: [Leg], samples: [QuantitySample], workout: Workout, inactive: [Span], options: ReportOptions
    ) -> [[Double]] {
        let bounds = zoneBounds(options)
        let readings = samples.filter { $0.type == .heartRate }.compactMap { sample -> (TimeInterval, Double)? in
            guard let value = sample.quantity.doubleValue(for: .countPerMinute), value.isFinite else { return nil }
            return (sample.start.timeIntervalSince(workout.start), value)
        }.sorted { $0.0 < $1.0 }
        return legs.map { leg in
            var seconds = [Double](repeating: 0, count: 6)
            for (index, reading) in readings.enumerated() where reading.0 >= leg.start && reading.0 < leg.end {
                let next = index + 1 < readings.count ? readings[index + 1].0 : leg.end
                let until = Swift.min(next, reading.0 + 5, leg.end)
                guard until > reading.0 else { continue }
                let paused = inactive.reduce(0.0) { total, span in
                    total + Swift.max(0, Swift.min(until, span.end) - Swift.max(reading.0, span.start))
                }
                seconds[zone(reading.1, bounds: bounds)] += Swift.max(0, until - reading.0 - paused)
            }
            return seconds
        }
    }

    // MARK: pool lengths

    /// Pool lengths in time order, with their offset from the workout's start.
    static func lengths(_ workout: Workout) -> [(offset: TimeInterval, length: PoolLength)] {
        workout.events.compactMap { event in
            PoolLength(event).map { (event.start.timeIntervalSince(workout.start), $0) }
        }.sorted { $0.offset < $1.offset }
    }

    /// The swim sets the engine derived (segment events with `SegmentKind` = `swimSet`).
    static func swimSets(_ workout: Workout) -> [WorkoutEvent] {
        workout.events.filter { $0.metadata[MetadataKey.segmentKind] == .string("swimSet") }
            .sorted { $0.start < $1.start }
    }

    // MARK: heart-rate recovery

    /// What the recovery chart draws: exercise readings of the last two minutes, the engine's
    /// levels at the stop, +60 s and +120 s, and the readings of the recovery window the store keeps
    /// with the workout (`MetadataKey.heartRateRecoveryReading`), all of them.
    struct Recovery {
        var exercise: [(TimeInterval, Double)]
        var after: [(TimeInterval, Double)]
        var atEnd: Double?
        var oneMinute: Double?
        var twoMinutes: Double?
        var drop: Double?
        var twoMinuteDrop: Double?
        var reasons: [String]
    }

    static func recovery(_ workout: Workout, samples: [QuantitySample]) -> Recovery? {
        let metadata = workout.metadata
        let sample = samples.first { $0.type == .heartRateRecoveryOneMinute }
        let levels = sample?.metadata ?? [:]
        var reasons: [String] = []
        for key in [
            MetadataKey.heartRateRecoveryOneMinuteUnavailable, MetadataKey.heartRateRecoveryTwoMinutesUnavailable,
        ] {
            if let raw = metadata[key]?.stringValue {
                reasons.append(HeartRateRecoveryUnavailable(rawValue: raw)?.description ?? raw)
            }
        }
        let drop = metadata[MetadataKey.heartRateRecoveryOneMinute]?.numberValue ?? sample?.quantity.value
        let twoMinuteDrop = metadata[MetadataKey.heartRateRecoveryTwoMinutes]?.numberValue
        guard drop != nil || twoMinuteDrop != nil || !reasons.isEmpty else { return nil }
        let end = sample?.start ?? workout.end
        var exercise: [(TimeInterval, Double)] = []
        var after: [(TimeInterval, Double)] = []
        for reading in samples where reading.type == .heartRate {
            let offset = reading.start.timeIntervalSince(end)
            guard let value = reading.quantity.doubleValue(for: .countPerMinute), value.isFinite else { continue }
            if reading.isHeartRateRecoveryReading {
                after.append((offset, value))
            } else if offset >= -120, offset <= 0 {
                exercise.append((offset, value))
            }
        }
        return Recovery(
            exercise: exercise.sorted { $0.0 < $1.0 }, after: after.sorted { $0.0 < $1.0 },
            atEnd: levels[MetadataKey.heartRateAtEndOfExercise]?.numberValue,
            oneMinute: levels[MetadataKey.heartRateOneMinuteLater]?.numberValue,
            twoMinutes: levels[MetadataKey.heartRateTwoMinutesLater]?.numberValue, drop: drop,
            twoMinuteDrop: twoMinuteDrop, reasons: reasons)
    }

    // MARK: route

    /// Route points projected to a `size`×`size` box (equirectangular around the middle latitude,
    /// north up), as lines per leg. Drawn at pixel resolution: a point in the same `cell`-pixel square
    /// as the last one kept is skipped, and a stretch over squares the leg already passed through (a
    /// second lap of a loop) is not drawn again.
    static func route(
        _ points: [RoutePoint], workout: Workout, legs: [Leg], size: Double, cell: Double = 1.5
    ) -> [(leg: Int, paths: [[(Double, Double)]])] {
        let valid = points.filter(\.isValid).sorted { $0.date < $1.date }
        guard valid.count >= 2, let minLat = valid.map(\.latitude).min(), let maxLat = valid.map(\.latitude).max(),
            let minLon = valid.map(\.longitude).min(), let maxLon = valid.map(\.longitude).max()
        else { return [] }
        let scaleX = cos((minLat + maxLat) / 2 * .pi / 180)
        let width = Swift.max((maxLon - minLon) * scaleX, 1e-9)
        let height = Swift.max(maxLat - minLat, 1e-9)
        let scale = (size - 20) / Swift.max(width, height)
        let offsetX = (size - width * scale) / 2
        let offsetY = (size - height * scale) / 2
        var result: [(leg: Int, paths: [[(Double, Double)]])] = []
        var visited = Set<Int>()
        var lastCell: Int?
        var previous: (Double, Double)?
        var penUp = false
        for point in valid {
            let time = point.date.timeIntervalSince(workout.start)
            let leg = legs.last { $0.start <= time }?.number ?? 1
            let xy = (
                offsetX + (point.longitude - minLon) * scaleX * scale, offsetY + (maxLat - point.latitude) * scale
            )
            defer { previous = xy }
            if result.last?.leg != leg {
                // A leg's line starts where the last one ended, so the route stays connected.
                result.append((leg, [previous.map { [$0] } ?? []]))
                visited = []
                lastCell = nil
                penUp = false
            }
            let key = Int(xy.0 / cell) * 100_000 + Int(xy.1 / cell)
            if key == lastCell { continue }
            lastCell = key
            if !visited.insert(key).inserted {
                penUp = true
                continue
            }
            let last = result.count - 1
            if penUp {
                result[last].paths.append(previous.map { [$0] } ?? [])
                penUp = false
            }
            result[last].paths[result[last].paths.count - 1].append(xy)
        }
        return result.map { ($0.leg, $0.paths.filter { $0.count >= 2 }) }.filter { !$0.paths.isEmpty }
    }
}
