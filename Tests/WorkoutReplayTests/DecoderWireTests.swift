import Foundation
import Testing
import WorkoutModel
import WorkoutSensors
import WorkoutSimulator

/// A race's wire bytes per port, and what the simulator meant them to say.
private struct Race {
    var streams: [WirePort: [UInt8]] = [:]
    var heartRates: [Int] = []
    var powers: [Int] = []
    var cyclingDistance = 0.0
    var routeSeconds = 0
    var truth: GroundTruth
    var legs: Int
}

private func race(_ name: String, seed: UInt64) throws -> Race {
    let scenario = try Scenario.load(name)
    var simulator = WatchSimulator(scenario: scenario, seed: seed)
    var recorder = GroundTruthRecorder(scenario: scenario)
    var emitter = WireEmitter(start: simulator.start)
    var streams = emitter.preamble()
    var heartRates: [Int] = []
    var powers: [Int] = []
    var cyclingDistance = 0.0
    var routeSeconds = 0
    while let second = simulator.next() {
        recorder.observe(second)
        for (port, bytes) in emitter.encode(second) { streams[port, default: []] += bytes }
        // What the emitter puts on the wire: whole numbers of the samples it sends.
        for sample in second.samples where !second.disconnected.contains(.ant) {
            switch sample.type {
            case .heartRate where sample.quantity.value > 0: heartRates.append(Int(sample.quantity.value))
            case .cyclingPower: powers.append(Int(sample.quantity.value))
            case .distanceCycling: cyclingDistance += sample.quantity.value
            default: break
            }
        }
        if !second.route.isEmpty { routeSeconds += 1 }
    }
    return Race(
        streams: streams, heartRates: heartRates, powers: powers, cyclingDistance: cyclingDistance,
        routeSeconds: routeSeconds, truth: recorder.result(of: simulator), legs: scenario.legs.count)
}

/// Decodes `bytes` in pseudo-random chunks of 1 to 4096 bytes, as reads from a serial port come.
private func decodeInChunks<D: SensorDecoder>(_ decoder: inout D, _ bytes: [UInt8], seed: UInt64) -> [SensorReading] {
    var state = seed | 1
    var readings: [SensorReading] = []
    var offset = 0
    while offset < bytes.count {
        state ^= state << 13
        state ^= state >> 7
        state ^= state << 17
        let size = Int(state % 4096) + 1
        let end = min(bytes.count, offset + size)
        bytes[offset..<end].withUnsafeBytes { decoder.decode($0, into: &readings) }
        offset = end
    }
    return readings
}

@Suite("Decoders on the simulator's wire output")
struct DecoderWireTests {
    @Test(arguments: ["sprint", "sprint-pool", "half"])
    func everyPortDecodesToWhatTheSimulatorSent(_ name: String) throws {
        let race = try race(name, seed: 11)

        var ant = ANTDecoder()
        let antReadings = decodeInChunks(&ant, race.streams[.ant] ?? [], seed: 1)
        #expect(ant.counters.droppedFrames == 0 && ant.counters.resyncBytesSkipped == 0)
        #expect(ant.counters.unknownMessages == 0)
        #expect(ant.counters.bytesConsumed == race.streams[.ant]?.count)
        let heartRates = antReadings.compactMap { $0.heartRate?.beatsPerMinute }
        #expect(heartRates == race.heartRates, "every heart-rate sample, in order")
        #expect(antReadings.contains { $0.heartRate?.rrIntervals.isEmpty == false })
        let powers = antReadings.compactMap(\.power)
        #expect(powers.compactMap(\.instantaneousPower) == race.powers)
        #expect(
            powers.allSatisfy { power in power.averagePower.map { Int($0) == power.instantaneousPower } ?? true },
            "one event a message: the average is the message's power")
        if race.cyclingDistance > 0 {
            let bike = antReadings.compactMap(\.speedCadence)
            let distance = try #require(bike.last?.distance)
            #expect(
                abs(distance - race.cyclingDistance) / race.cyclingDistance < 0.01,
                "\(distance) vs \(race.cyclingDistance)")
            #expect(bike.allSatisfy { ($0.speed ?? 0) < 25 && ($0.cadence ?? 0) < 150 })
        }

        var gps = NMEADecoder()
        let fixes = decodeInChunks(&gps, race.streams[.gps] ?? [], seed: 2).compactMap(\.fix)
        #expect(gps.counters.droppedFrames == 0 && gps.counters.resyncBytesSkipped == 0)
        #expect(fixes.count == 2 * race.routeSeconds && fixes.allSatisfy(\.isValid))
        if race.routeSeconds > 0 {
            let outdoor = race.truth.legs.filter { $0.type != .swimming || name != "sprint-pool" }
            let expected = outdoor.map(\.distance).reduce(0, +)
            let total = gps.distance.total
            #expect(abs(total - expected) / expected < 0.01, "GPS \(total) m vs \(expected) m")
        }

        var watch = WatchLinkDecoder()
        let watchReadings = decodeInChunks(&watch, race.streams[.watch] ?? [], seed: 3)
        #expect(watch.counters.droppedFrames == 0 && watch.counters.unknownMessages == 0)
        #expect(watchReadings.first?.value == .hello(device: "workout-engine simulated watch"))
        let lengths = watchReadings.filter { if case .swimLength = $0.value { true } else { false } }
        #expect(lengths.count == race.truth.legs.flatMap(\.lengths).count)
        #expect(watchReadings.filter { $0.value == .button(.next) }.count == race.legs - 1)
        #expect(watchReadings.filter { $0.value == .button(.stop) }.count == 1)
    }
}
