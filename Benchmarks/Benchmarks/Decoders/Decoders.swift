import Benchmark
import Foundation
import WorkoutSensors
import WorkoutSimulator

/// Decoding throughput per protocol, in MB/s (10^6 bytes per second), over multi-megabyte streams
/// decoded in 4 KiB reads as from a serial port:
///
/// - NMEA: the simulator's GPS output of a full-distance triathlon (GGA + RMC each second).
/// - ANT: the simulator's ANT output of a full-distance triathlon followed by a 24-hour ultra run
///   (ANT+ heart rate, speed and cadence, power and foot-pod broadcasts, each race's channel ids first).
/// - Watch-link: a BLE bridge's stream built with the encoders: GATT heart rate (with RR), CSC,
///   cycling power and RSC values four times a second, plus lengths, strokes and buttons.
/// - GATT: the payloads of that stream parsed alone (`GATT.Session`), bytes counted as payload bytes.
///
/// Streams are built once, outside the measurement.
private struct Streams: Sendable {
    var nmea: [UInt8]
    var ant: [UInt8]
    var watchLink: [UInt8]
    var gatt: [(UInt16, [UInt8])]
    var gattBytes: Int
}

private func simulatorStreams(_ name: String) -> [WirePort: [UInt8]] {
    guard let scenario = try? Scenario.load(name) else { return [:] }
    var simulator = WatchSimulator(scenario: scenario, seed: 1)
    var emitter = WireEmitter(start: simulator.start)
    var streams = emitter.preamble()
    while let second = simulator.next() {
        for (port, bytes) in emitter.encode(second) { streams[port, default: []] += bytes }
    }
    return streams
}

private func bridgeStream(seconds: Int) -> (watchLink: [UInt8], gatt: [(UInt16, [UInt8])]) {
    func le16(_ value: Int) -> [UInt8] { [UInt8(truncatingIfNeeded: value), UInt8(truncatingIfNeeded: value >> 8)] }
    func le32(_ value: Int) -> [UInt8] { le16(value) + le16(value >> 16) }
    var lines: [UInt8] = WatchLink.hello(device: "bridge")
    var values: [(UInt16, [UInt8])] = []
    for quarter in 0..<(seconds * 4) {
        let milliseconds = quarter * 250
        let ticks = quarter * 256
        var batch: [(UInt16, [UInt8])] = [
            (0x2A37, [0x10, UInt8(120 + quarter % 40)] + le16(420 + quarter % 50)),
            (0x2A5B, [0x03] + le32(quarter * 2) + le16(ticks) + le16(quarter * 3 / 2) + le16(ticks)),
            (
                0x2A63,
                le16(0x30) + le16(200 + quarter % 100) + le32(quarter * 2) + le16(quarter * 512) + le16(quarter)
                    + le16(ticks)
            ),
        ]
        if quarter % 4 == 0 {
            batch.append((0x2A53, [0x07] + le16(900 + quarter % 200) + [170] + le16(120) + le32(quarter * 9)))
        }
        for (uuid, payload) in batch {
            lines += WatchLink.gatt(milliseconds: milliseconds, characteristic: uuid, payload: payload)
        }
        values += batch
        if quarter % 120 == 0 {
            lines += WatchLink.length(
                endMilliseconds: milliseconds, durationMilliseconds: 30_000, kind: .active, style: .freestyle,
                strokes: 15)
            lines += WatchLink.strokes(endMilliseconds: milliseconds, durationMilliseconds: 10_000, count: 5)
            lines += WatchLink.button(milliseconds: milliseconds, .lap)
        }
    }
    return (lines, values)
}

private let streams: Streams = {
    let full = simulatorStreams("full")
    let ultra = simulatorStreams("ultra-24h")
    let bridge = bridgeStream(seconds: 8 * 3600)
    return Streams(
        nmea: full[.gps] ?? [], ant: (full[.ant] ?? []) + (ultra[.ant] ?? []), watchLink: bridge.watchLink,
        gatt: bridge.gatt,
        gattBytes: bridge.gatt.reduce(0) { $0 + $1.1.count })
}()

private func megabytes(_ bytes: Int) -> String { String(format: "%.1f MB", Double(bytes) / 1e6) }

let benchmarks: @Sendable () -> Void = {
    let megabytesPerSecond = BenchmarkMetric.custom("MB/s", polarity: .prefersLarger, useScalingFactor: false)
    let configuration = Benchmark.Configuration(
        metrics: [.wallClock, megabytesPerSecond, .mallocCountTotal], maxDuration: .seconds(5), maxIterations: 30)

    /// Runs `body` (which returns the number of readings) and records bytes / elapsed time.
    func measure(_ benchmark: Benchmark, bytes: Int, _ body: () -> Int) {
        let clock = ContinuousClock()
        benchmark.startMeasurement()
        let start = clock.now
        let readings = body()
        let elapsed = clock.now - start
        benchmark.stopMeasurement()
        blackHole(readings)
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        benchmark.measurement(megabytesPerSecond, Int(Double(bytes) / seconds / 1e6))
    }

    /// Decodes `bytes` in 4 KiB chunks, reusing one readings buffer as a recorder would.
    func decodeStream<D: SensorDecoder>(_ decoder: inout D, _ bytes: [UInt8]) -> Int {
        var readings: [SensorReading] = []
        readings.reserveCapacity(1024)
        var count = 0
        bytes.withUnsafeBytes { all in
            var offset = 0
            while offset < all.count {
                let end = min(all.count, offset + 4096)
                decoder.decode(UnsafeRawBufferPointer(rebasing: all[offset..<end]), into: &readings)
                count += readings.count
                readings.removeAll(keepingCapacity: true)
                offset = end
            }
        }
        return count
    }

    Benchmark(
        "NMEA 0183 decoder (GGA + RMC, full triathlon, \(megabytes(streams.nmea.count)))", configuration: configuration
    ) { benchmark in
        let bytes = streams.nmea
        measure(benchmark, bytes: bytes.count) {
            var decoder = NMEADecoder()
            return decodeStream(&decoder, bytes)
        }
    }

    Benchmark(
        "ANT decoder (HR, speed & cadence, power, foot pod; full triathlon + 24 h run, \(megabytes(streams.ant.count)))",
        configuration: configuration
    ) {
        benchmark in
        let bytes = streams.ant
        measure(benchmark, bytes: bytes.count) {
            var decoder = ANTDecoder()
            return decodeStream(&decoder, bytes)
        }
    }

    Benchmark(
        "watch-link decoder (bridge: GATT HR, CSC, power, RSC; 8 h, \(megabytes(streams.watchLink.count)))",
        configuration: configuration
    ) {
        benchmark in
        let bytes = streams.watchLink
        measure(benchmark, bytes: bytes.count) {
            var decoder = WatchLinkDecoder()
            return decodeStream(&decoder, bytes)
        }
    }

    Benchmark(
        "GATT payload parsers, pure (\(megabytes(streams.gattBytes)) of 0x2A37/2A5B/2A53/2A63 payloads)",
        configuration: configuration
    ) {
        benchmark in
        let values = streams.gatt
        measure(benchmark, bytes: streams.gattBytes) {
            var count = 0
            for (uuid, payload) in values {
                let parsed: Bool =
                    switch uuid {
                    case GATT.heartRateMeasurement: GATT.parseHeartRate(payload).map { _ in true } ?? false
                    case GATT.cscMeasurement: GATT.parseCSC(payload).map { _ in true } ?? false
                    case GATT.rscMeasurement: GATT.parseRSC(payload).map { _ in true } ?? false
                    default: GATT.parseCyclingPower(payload).map { _ in true } ?? false
                    }
                if parsed { count += 1 }
            }
            return count
        }
    }

    Benchmark("GATT payloads to readings (GATT.Session: parsers + speed/cadence state)", configuration: configuration) {
        benchmark in
        let values = streams.gatt
        measure(benchmark, bytes: streams.gattBytes) {
            var session = GATT.Session()
            var count = 0
            for (uuid, payload) in values {
                if case .some = session.reading(characteristic: uuid, payload: payload, milliseconds: nil) {
                    count += 1
                }
            }
            return count
        }
    }
}
