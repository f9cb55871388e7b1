import Benchmark
import Foundation
import Synchronization
import WorkoutEngine
import WorkoutModel

/// Builder ingest (with heart-rate recovery and auto-pause on, as recordings run them; two more
/// benchmarks measure no detectors and every detector): a mixed 1 Hz stream (heart rate, speed, power, cadence, distance) over five
/// activities of 2,500 s each, added in batches of 50 with live statistics, then finished.
/// The figure is samples per second through `LiveWorkoutBuilder.add` (setup excluded).
private let legSeconds = 2_500
private let legs = 5
private let batchSize = 50
private let origin = Date(timeIntervalSinceReferenceDate: 800_000_000)

private func makeStream() -> [[QuantitySample]] {
    let strap = SourceDevice(name: "HRM", identifier: "ant:120:1")
    let bike = SourceDevice(name: "Bike", identifier: "ant:121:2")
    let meter = SourceDevice(name: "Power", identifier: "ant:11:3")
    var samples: [QuantitySample] = []
    samples.reserveCapacity(legSeconds * legs * 5)
    for second in 0..<(legSeconds * legs) {
        let at = origin.addingTimeInterval(Double(second))
        let wave = Double(second % 97)
        samples.append(QuantitySample(.heartRate, 120 + wave / 3, at: at, source: strap))
        samples.append(QuantitySample(.cyclingSpeed, 9 + wave / 50, at: at, source: bike))
        samples.append(QuantitySample(.cyclingPower, 180 + wave, at: at, source: meter))
        samples.append(QuantitySample(.cyclingCadence, 85 + wave / 10, at: at, source: meter))
        samples.append(
            QuantitySample(.distanceCycling, 9 + wave / 50, at: at, end: at.addingTimeInterval(1), source: bike))
    }
    return stride(from: 0, to: samples.count, by: batchSize).map {
        Array(samples[$0..<min($0 + batchSize, samples.count)])
    }
}

/// Counts what a journal would receive, doing as little as a real sink's hand-off.
private final class CountingSink: WorkoutRecordingSink {
    let count = Mutex(0)
    func record(_ change: RecordingChange) {
        if case .samples(let samples) = change { count.withLock { $0 += samples.count } }
    }
}

/// Which session detectors run (issue 6 measures what they add per sample).
private enum Detectors {
    /// None: no heart-rate recovery tail, no auto-pause (a cycling session, explicit activities).
    case off
    /// Heart-rate recovery and auto-pause on a cycling session with explicit activities.
    case recoveryAndAutoPause
    /// A swim-bike-run session whose legs are detected (the stream is a ride, so the detector moves
    /// to the bike at once), with auto-pause and heart-rate recovery: every detector looks at every sample.
    case all
}

/// Races the stream through a session; returns the number of samples ingested.
private func ingest(
    _ batches: [[QuantitySample]], sink: (any WorkoutRecordingSink)?, detectors: Detectors = .recoveryAndAutoPause
) throws -> Int {
    let clock = ManualClock(origin)
    var options = BuilderOptions(identifiers: .seeded(1))
    var configuration = WorkoutConfiguration(activityType: .cycling)
    switch detectors {
    case .off:
        options.heartRateRecovery.enabled = false
    case .recoveryAndAutoPause:
        options.autoPause = .standard
    case .all:
        options.autoPause = .standard
        configuration = WorkoutConfiguration(activityType: .swimBikeRun)
    }
    let session = try WorkoutSession(configuration: configuration, clock: clock, options: options, sink: sink)
    // With detection the race starts a second before the ride, so the detector has a swim to leave.
    try session.start(at: detectors == .all ? origin.addingTimeInterval(-1) : origin)
    var nextBoundary = detectors == .all ? Int.max : 0
    var count = 0
    for batch in batches {
        if let first = batch.first, nextBoundary < Int.max,
            first.start >= origin.addingTimeInterval(Double(nextBoundary))
        {
            try session.beginNewActivity(
                configuration: WorkoutConfiguration(activityType: .cycling),
                at: origin.addingTimeInterval(Double(nextBoundary)))
            nextBoundary += legSeconds
        }
        count += try session.builder.add(batch).accepted
    }
    try session.stop(at: origin.addingTimeInterval(Double(legSeconds * legs)))
    let workout = try session.builder.finishWorkout()
    precondition(detectors != .all || workout.activities.count == 2, "the detector should have found the bike")
    blackHole(workout)
    return count
}

let benchmarks: @Sendable () -> Void = {
    let samplesPerSecond = BenchmarkMetric.custom("samples/s", polarity: .prefersLarger, useScalingFactor: false)
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, samplesPerSecond, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 50)

    func measure(
        _ benchmark: Benchmark, sink: (any WorkoutRecordingSink)?, detectors: Detectors = .recoveryAndAutoPause
    ) throws {
        let batches = makeStream()
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        let count = try ingest(batches, sink: sink, detectors: detectors)
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        benchmark.measurement(samplesPerSecond, Int(Double(count) / seconds))
    }

    Benchmark("builder ingest, 5 streams x 5 activities, live statistics", configuration: configuration) { benchmark in
        try measure(benchmark, sink: nil)
    }

    Benchmark("builder ingest with a journal sink", configuration: configuration) { benchmark in
        try measure(benchmark, sink: CountingSink())
    }

    Benchmark("session ingest, no detectors", configuration: configuration) { benchmark in
        try measure(benchmark, sink: nil, detectors: .off)
    }

    Benchmark("session ingest, transitions + auto-pause + recovery detectors", configuration: configuration) {
        benchmark in
        try measure(benchmark, sink: nil, detectors: .all)
    }
}
