import Foundation
import WorkoutEngine
import WorkoutModel

/// A workout's data arranged for export: per-second points (what a FIT record, a GPX track point or
/// a TCX track point holds), legs, pool lengths and pauses.
struct ExportTimeline {
    /// The values of one whole second.
    struct Point {
        /// Whole FIT seconds.
        var second: UInt32
        var heartRate: Double?
        var speed: Double?
        var cadence: Double?
        /// Running cadence is in steps per minute; FIT, GPX and TCX take strides (half of it).
        var cadenceIsSteps = false
        var power: Double?
        var stepLength: Double?
        var latitude: Double?
        var longitude: Double?
        var altitude: Double?
        /// Cumulative metres of every distance sample that ended by this second.
        var distance: Double?
        /// Cumulative open-water strokes that ended by this second.
        var strokes: Double?
    }

    /// A leg of the export: an activity, or the whole workout when it has none.
    struct Leg {
        var configuration: WorkoutConfiguration
        var start: Date
        var end: Date
        var duration: TimeInterval
        var statistics: [QuantityType: Statistics]
    }

    let workout: Workout
    var points: [Point] = []
    var legs: [Leg] = []
    /// Pool lengths in time order.
    var lengths: [(event: WorkoutEvent, length: PoolLength)] = []
    /// Lap events that are not pool lengths.
    var laps: [WorkoutEvent] = []
    /// Paused spans (user or motion), and whether each was a motion pause.
    var pauses: [(start: Date, end: Date?, motion: Bool)] = []
    let heartRate: [QuantitySample]
    let distances: [QuantitySample]
    /// Heart-rate readings of the recovery window (`MetadataKey.heartRateRecoveryReading`), in time
    /// order: never in `points` (track points and in-session records are exercise); FIT writes them as
    /// records after the last session.
    let recoveryHeartRate: [QuantitySample]

    init(workout: Workout, samples: [QuantitySample], route: [RoutePoint]) {
        self.workout = workout
        if workout.activities.isEmpty {
            legs = [
                Leg(
                    configuration: workout.configuration, start: workout.start, end: workout.end,
                    duration: workout.duration, statistics: workout.statistics)
            ]
        } else {
            legs = workout.activities.map {
                Leg(
                    configuration: $0.configuration, start: $0.start, end: $0.end ?? workout.end, duration: $0.duration,
                    statistics: $0.statistics)
            }
        }
        for event in workout.events where event.type == .lap {
            if let length = PoolLength(event) { lengths.append((event, length)) } else { laps.append(event) }
        }
        var user = false
        var motion = false
        for event in workout.events.sorted(by: { $0.start < $1.start }) {
            let wasPaused = user || motion
            switch event.type {
            case .pause: user = true
            case .resume: user = false
            case .motionPaused: motion = true
            case .motionResumed: motion = false
            default: continue
            }
            if user || motion, !wasPaused {
                pauses.append((event.start, nil, !user))
            } else if !(user || motion), wasPaused, !pauses.isEmpty {
                pauses[pauses.count - 1].end = event.start
            }
        }
        let exercise = samples.filter { !$0.isHeartRateRecoveryReading }
        recoveryHeartRate = samples.filter { $0.type == .heartRate && $0.isHeartRateRecoveryReading }
            .sorted { $0.start < $1.start }
        heartRate = exercise.filter { $0.type == .heartRate }.sorted { $0.start < $1.start }
        distances = exercise.filter { FITComparison.distanceTypes.contains($0.type) }
        points = Self.points(samples: exercise, route: route, workout: workout)
    }

    /// The activity type in force at `date`.
    func legType(at date: Date) -> WorkoutActivityType {
        legs.last { $0.start <= date }?.configuration.activityType ?? workout.activityType
    }

    static func second(_ date: Date) -> UInt32? {
        let value = FITTime.seconds(date).rounded(.down)
        guard value >= 0, value <= Double(UInt32.max) else { return nil }
        return UInt32(value)
    }

    /// One point per second that has a sample or a route point.
    static func points(samples: [QuantitySample], route: [RoutePoint], workout: Workout) -> [Point] {
        var bySecond: [UInt32: Point] = [:]
        func update(_ second: UInt32, _ body: (inout Point) -> Void) {
            var point = bySecond[second] ?? Point(second: second)
            body(&point)
            bySecond[second] = point
        }
        var cumulative: [(end: UInt32, distance: Double, strokes: Double)] = []
        for sample in samples.sorted(by: { $0.start < $1.start }) {
            guard let value = sample.canonicalValue, value.isFinite else { continue }
            switch sample.type {
            case .heartRate:
                if let second = second(sample.start) { update(second) { $0.heartRate = value } }
            case .cyclingSpeed, .runningSpeed, .paddleSportsSpeed:
                if let second = second(sample.start) { update(second) { $0.speed = value } }
            case .cyclingCadence:
                if let second = second(sample.start) { update(second) { $0.cadence = value } }
            case .runningCadence:
                if let second = second(sample.start) {
                    update(second) {
                        $0.cadence = value
                        $0.cadenceIsSteps = true
                    }
                }
            case .cyclingPower, .runningPower:
                if let second = second(sample.start) { update(second) { $0.power = value } }
            case .runningStrideLength:
                if let second = second(sample.start) { update(second) { $0.stepLength = value } }
            case .distanceSwimming, .distanceCycling, .distanceWalkingRunning, .distancePaddleSports:
                // Counted at the first whole second at or after its end (a record shows what was done by then).
                let end = FITTime.seconds(sample.end).rounded(.up)
                if end >= 0, end <= Double(UInt32.max) { cumulative.append((UInt32(end), value, 0)) }
            case .swimmingStrokeCount:
                let end = FITTime.seconds(sample.end).rounded(.up)
                if end >= 0, end <= Double(UInt32.max) { cumulative.append((UInt32(end), 0, value)) }
            default:
                break
            }
        }
        for point in route {
            guard let second = second(point.date) else { continue }
            update(second) {
                $0.latitude = point.latitude
                $0.longitude = point.longitude
                if let altitude = point.altitude { $0.altitude = altitude }
                if $0.speed == nil, let speed = point.speed { $0.speed = speed }
            }
        }
        for entry in cumulative where bySecond[entry.end] == nil { bySecond[entry.end] = Point(second: entry.end) }
        var points = bySecond.values.sorted { $0.second < $1.second }
        cumulative.sort { $0.end < $1.end }
        var distance = 0.0
        var strokes = 0.0
        var sawDistance = false
        var sawStrokes = false
        var next = 0
        for index in points.indices {
            while next < cumulative.count, cumulative[next].end <= points[index].second {
                distance += cumulative[next].distance
                strokes += cumulative[next].strokes
                if cumulative[next].distance > 0 { sawDistance = true }
                if cumulative[next].strokes > 0 { sawStrokes = true }
                next += 1
            }
            if sawDistance { points[index].distance = distance }
            if sawStrokes { points[index].strokes = strokes }
        }
        // Pool strokes are in the lengths; cumulative strokes stay for open water (and round trips of either).
        return points
    }

    /// The heart rate holding at `date`: the latest reading within the hold cap (5 s) before it.
    func heartRate(at date: Date) -> Double? {
        var low = 0
        var high = heartRate.count
        while low < high {
            let mid = (low + high) / 2
            if heartRate[mid].start <= date { low = mid + 1 } else { high = mid }
        }
        guard low > 0 else { return nil }
        let sample = heartRate[low - 1]
        guard date.timeIntervalSince(sample.start) <= 5 else { return nil }
        return sample.canonicalValue
    }

    /// Heart-rate and distance statistics of [start, end] with the workout's pauses, by the engine.
    func statistics(
        from start: Date, to end: Date
    ) -> (average: Double?, maximum: Double?, distance: Double?, duration: TimeInterval) {
        let inactive = pauses.map { ($0.start, $0.end ?? workout.end) }
        guard
            let result = FITComparison.spanStatistics(
                heartRate + distances, from: start, to: end, inactive: inactive, options: BuilderOptions())
        else { return (nil, nil, nil, 0) }
        let sums = FITComparison.distanceTypes.compactMap { result[$0]?.sum?.doubleValue(for: .meter) }
        return (
            result[.heartRate]?.average?.doubleValue(for: .countPerMinute),
            result[.heartRate]?.maximum?.doubleValue(for: .countPerMinute), sums.isEmpty ? nil : sums.reduce(0, +),
            result.duration
        )
    }
}

extension Dictionary where Key == QuantityType, Value == Statistics {
    /// Metres of every distance type together; nil when none was recorded.
    var totalDistance: Double? {
        let sums = FITComparison.distanceTypes.compactMap { self[$0]?.sum?.doubleValue(for: .meter) }
        return sums.isEmpty ? nil : sums.reduce(0, +)
    }

    func average(_ type: QuantityType) -> Double? { self[type]?.average?.doubleValue(for: type.canonicalUnit) }
    func maximum(_ type: QuantityType) -> Double? { self[type]?.maximum?.doubleValue(for: type.canonicalUnit) }
}
