import Foundation
import GRDB
import WorkoutModel
import WorkoutStore

/// A deterministic store of 100,000 finished workouts (about 300,000 activities) for the query
/// benchmark: half swim/bike/run-like (three activities), half a mix of 1–5 activities of cycling,
/// running, swimming or walking. Each activity has heart rate (average ~ N(135, 12) bpm), power
/// (cycling and running) and distance statistics; no samples. Workout `i` is a pure function of
/// the seed and `i`.
///
/// Built once through `WorkoutStore.save(_:)` (one transaction per workout: the store has no batch
/// save) and kept in `.build/store-bench/`; reused while its row counts match.
enum QueryCorpus {
    static let workouts = 100_000
    static let seed: UInt64 = 0x5EED_2026_0001

    static var path: String {
        // …/Benchmarks/Benchmarks/Store/QueryCorpus.swift → …/Benchmarks/.build/store-bench/
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return package.appendingPathComponent(".build/store-bench/query-corpus-v3-\(workouts).sqlite").path
    }

    struct Counts: Equatable, Sendable, CustomStringConvertible {
        var workouts: Int
        var activities: Int
        var statistics: Int
        var description: String { "\(workouts) workouts, \(activities) activities, \(statistics) statistics" }
    }

    /// What the generator writes, computed without writing.
    static func expectedCounts() -> Counts {
        var counts = Counts(workouts: 0, activities: 0, statistics: 0)
        for index in 0..<workouts {
            let workout = workout(index)
            counts.workouts += 1
            counts.activities += workout.activities.count
            counts.statistics += workout.statistics.count + workout.activities.reduce(0) { $0 + $1.statistics.count }
        }
        return counts
    }

    /// Opens the cached corpus, building it first when it is missing or incomplete.
    static func open(log: (String) -> Void) throws -> (store: WorkoutStore, counts: Counts) {
        let clock = ContinuousClock()
        let planned = clock.now
        let expected = expectedCounts()
        log("query corpus: \(workouts) workouts generated in memory in \(format(clock.now - planned)) s (\(expected))")
        let path = self.path
        if FileManager.default.fileExists(atPath: path) {
            let found = try counts(at: path)
            if found == expected {
                log("query corpus: reusing \(path) (\(found))")
                return (try WorkoutStore(path: path), found)
            }
            log("query corpus: \(path) has \(found), expected \(expected): rebuilding")
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        }
        let started = clock.now
        let store = try WorkoutStore(path: path)
        for index in 0..<workouts {
            try store.save(workout(index))
            if (index + 1).isMultiple(of: 10_000) {
                log("query corpus: \(index + 1) workouts saved in \(format(clock.now - started)) s")
            }
        }
        log("query corpus: built \(path) in \(format(clock.now - started)) s (one save per workout)")
        let found = try counts(at: path)
        guard found == expected else {
            throw CorpusError.wrongCounts(found: found, expected: expected)
        }
        return (store, found)
    }

    enum CorpusError: Error {
        case wrongCounts(found: Counts, expected: Counts)
    }

    static func counts(at path: String) throws -> Counts {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            func count(_ table: String) throws -> Int {
                try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0
            }
            return Counts(
                workouts: try count("workout"), activities: try count("activity"), statistics: try count("statistic"))
        }
    }

    // MARK: generator

    private static let origin = Date(timeIntervalSinceReferenceDate: 600_000_000)
    private static let mixedTypes: [(WorkoutActivityType, Double)] = [
        (.cycling, 0.40), (.running, 0.30), (.swimming, 0.15), (.walking, 0.15),
    ]

    /// Workout number `index`.
    static func workout(_ index: Int) -> Workout {
        var rng = SplitMix64(seed: seed ^ (UInt64(index) &* 0x9E37_79B9_7F4A_7C15))
        let workoutID = rng.uuid()
        // About one workout every 40 minutes over 7.6 years, with jitter.
        let start = origin.addingTimeInterval(Double(index) * 2_400 + rng.uniform() * 1_200)
        let triathlon = rng.uniform() < 0.5
        let types: [WorkoutActivityType] =
            triathlon
            ? [.swimming, .cycling, .running]
            : (0..<(1 + Int(rng.next() % 5))).map { _ in rng.pick(mixedTypes) }
        var activities: [WorkoutActivity] = []
        var cursor = start
        for type in types {
            let minutes: Double
            switch type {
            case .swimming: minutes = 20 + rng.uniform() * 40
            case .cycling: minutes = 30 + rng.uniform() * 150
            case .running: minutes = 20 + rng.uniform() * 70
            default: minutes = 15 + rng.uniform() * 60
            }
            let duration = (minutes * 60).rounded()
            let end = cursor.addingTimeInterval(duration)
            activities.append(
                WorkoutActivity(
                    id: rng.uuid(), configuration: WorkoutConfiguration(activityType: type), start: cursor, end: end,
                    duration: duration, statistics: activityStatistics(type, from: cursor, to: end, &rng)))
            cursor = end.addingTimeInterval(30 + (rng.uniform() * 90).rounded())
        }
        let end = activities.last?.end ?? start
        let duration = activities.reduce(0) { $0 + $1.duration }
        let configuration = WorkoutConfiguration(
            activityType: triathlon ? .swimBikeRun : (types.count == 1 ? types[0] : .other))
        var counters = IngestCounters()
        counters.accepted = activities.reduce(0) { total, activity in
            total + activity.statistics.values.reduce(0) { $0 + $1.sampleCount }
        }
        return Workout(
            id: workoutID, configuration: configuration, start: start, end: end, duration: duration,
            activities: activities, events: [], metadata: [:],
            statistics: workoutStatistics(activities, from: start, to: end, duration: duration), counters: counters)
    }

    private static func activityStatistics(
        _ type: WorkoutActivityType, from start: Date, to end: Date, _ rng: inout SplitMix64
    ) -> [QuantityType: Statistics] {
        let duration = end.timeIntervalSince(start)
        let samples = Int(duration)
        func discrete(_ quantityType: QuantityType, average: Double, spread: Double) -> Statistics {
            let unit = quantityType.canonicalUnit
            let minimum = (average - spread * (0.5 + rng.uniform())).rounded()
            let maximum = (average + spread * (0.5 + rng.uniform())).rounded()
            return Statistics(
                quantityType: quantityType, start: start, end: end, minimum: Quantity(minimum, unit),
                maximum: Quantity(maximum, unit), average: Quantity(average, unit),
                mostRecent: Quantity((average + minimum) / 2, unit), mostRecentDate: end.addingTimeInterval(-1),
                duration: duration, coveredTime: duration, sampleCount: samples)
        }
        func cumulative(_ quantityType: QuantityType, metersPerSecond: Double) -> Statistics {
            Statistics(
                quantityType: quantityType, start: start, end: end,
                sum: Quantity((metersPerSecond * duration).rounded(), quantityType.canonicalUnit), duration: duration,
                coveredTime: duration, sampleCount: samples)
        }
        var statistics: [QuantityType: Statistics] = [:]
        let heartRate = (135 + 12 * rng.normal()).rounded()
        statistics[.heartRate] = discrete(.heartRate, average: heartRate, spread: 25)
        switch type {
        case .cycling:
            statistics[.cyclingPower] = discrete(
                .cyclingPower, average: (200 + 40 * rng.normal()).rounded(), spread: 150)
            statistics[.distanceCycling] = cumulative(.distanceCycling, metersPerSecond: 7 + 3 * rng.uniform())
        case .running:
            statistics[.runningPower] = discrete(
                .runningPower, average: (250 + 30 * rng.normal()).rounded(), spread: 80)
            statistics[.distanceWalkingRunning] = cumulative(
                .distanceWalkingRunning, metersPerSecond: 2.5 + 1.5 * rng.uniform())
        case .swimming:
            statistics[.distanceSwimming] = cumulative(.distanceSwimming, metersPerSecond: 0.8 + 0.6 * rng.uniform())
        default:
            statistics[.distanceWalkingRunning] = cumulative(
                .distanceWalkingRunning, metersPerSecond: 1.2 + 0.5 * rng.uniform())
        }
        return statistics
    }

    /// Heart rate over the workout (duration-weighted) and each distance summed.
    private static func workoutStatistics(
        _ activities: [WorkoutActivity], from start: Date, to end: Date, duration: TimeInterval
    ) -> [QuantityType: Statistics] {
        var statistics: [QuantityType: Statistics] = [:]
        let rates = activities.compactMap { activity in
            activity.statistics[.heartRate].map { (activity.duration, $0) }
        }
        if !rates.isEmpty {
            let unit = QuantityType.heartRate.canonicalUnit
            let weighted = rates.reduce(0) { $0 + $1.0 * ($1.1.average?.value ?? 0) } / max(1, duration)
            statistics[.heartRate] = Statistics(
                quantityType: .heartRate, start: start, end: end,
                minimum: Quantity(rates.map { $0.1.minimum?.value ?? 0 }.min() ?? 0, unit),
                maximum: Quantity(rates.map { $0.1.maximum?.value ?? 0 }.max() ?? 0, unit),
                average: Quantity(weighted.rounded(), unit), duration: duration, coveredTime: duration,
                sampleCount: rates.reduce(0) { $0 + $1.1.sampleCount })
        }
        for type in [QuantityType.distanceCycling, .distanceWalkingRunning, .distanceSwimming] {
            let parts = activities.compactMap { $0.statistics[type] }
            guard !parts.isEmpty else { continue }
            statistics[type] = Statistics(
                quantityType: type, start: start, end: end,
                sum: Quantity(parts.reduce(0) { $0 + ($1.sum?.value ?? 0) }, type.canonicalUnit), duration: duration,
                coveredTime: duration, sampleCount: parts.reduce(0) { $0 + $1.sampleCount })
        }
        return statistics
    }
}

/// SplitMix64: small, fast and deterministic on every platform.
struct SplitMix64 {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    mutating func uniform() -> Double { Double(next() >> 11) / Double(1 << 53) }

    /// Standard normal (Box–Muller).
    mutating func normal() -> Double {
        let u = max(uniform(), .leastNonzeroMagnitude)
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * uniform())
    }

    mutating func pick<T>(_ weighted: [(T, Double)]) -> T {
        var draw = uniform()
        for (value, weight) in weighted {
            if draw < weight { return value }
            draw -= weight
        }
        return weighted[weighted.count - 1].0
    }

    /// A version-4-shaped UUID from the stream.
    mutating func uuid() -> UUID {
        let high = next()
        let low = next()
        var bytes = [UInt8](repeating: 0, count: 16)
        for i in 0..<8 {
            bytes[i] = UInt8(truncatingIfNeeded: high >> (8 * UInt64(i)))
            bytes[8 + i] = UInt8(truncatingIfNeeded: low >> (8 * UInt64(i)))
        }
        bytes[6] = (bytes[6] & 0x0F) | 0x40
        bytes[8] = (bytes[8] & 0x3F) | 0x80
        return UUID(
            uuid: (
                bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7], bytes[8], bytes[9],
                bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15]
            ))
    }
}

func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

func format(_ duration: Duration) -> String { String(format: "%.1f", seconds(duration)) }
