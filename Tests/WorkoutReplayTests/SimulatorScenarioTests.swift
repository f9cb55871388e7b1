import Foundation
import Testing
import WorkoutModel
import WorkoutReplay
import WorkoutStore

@testable import WorkoutSensors
@testable import WorkoutSimulator

let athleteJSON = """
    "athlete": {"restingHeartRate": 48, "maxHeartRate": 186, "heartRateTimeConstant": 35,
      "recoveryTimeConstant": 70, "swimPace100m": 100, "cyclingSpeed": 9.7, "thresholdPower": 260,
      "runPaceKm": 270}
    """

func scenario(_ body: String) throws -> Scenario {
    try Scenario.decode(Data("{\"name\":\"probe\",\"summary\":\"\",\(body)}".utf8), file: "probe.json")
}

private func antBroadcasts(_ bytes: [UInt8], channel: UInt8) -> [[UInt8]] {
    var pages: [[UInt8]] = []
    var i = 0
    while i + 3 < bytes.count {
        let end = i + 4 + Int(bytes[i + 1])
        if bytes[i + 2] == 0x4E && bytes[i + 3] == channel { pages.append(Array(bytes[(i + 4)..<(i + 12)])) }
        i = end
    }
    return pages
}

private func u16(_ p: [UInt8], _ at: Int) -> Int { Int(p[at]) | Int(p[at + 1]) << 8 }

/// What the simulator sends for a race: sensor pages, pool lengths, leg changes and strokes as the wire carries them.
@Suite("Simulator: sensor output of legs, pools and disconnects")
struct SimulatorOutputTests {
    /// ANT+ bike speed & cadence: the event time is the time of the last whole revolution, so
    /// circumference × Δrevs / Δtime gives the true speed and 60 × Δcrank / Δtime the true cadence.
    @Test func speedCadenceEventTimesAreRevolutionTimes() throws {
        let s = try scenario(
            """
            "activityType": "cycling", \(athleteJSON), "heartRateNoise": 0, "recoverySeconds": 120,
            "legs": [{"type": "cycling", "segments": [{"duration": 120, "intensity": 0.7}]}]
            """)
        var simulator = WatchSimulator(scenario: s, seed: 1)
        var emitter = WireEmitter(start: simulator.start)
        var ant: [UInt8] = []
        var trueSpeed = 0.0
        var trueCadence = 0.0
        while let second = simulator.next() {
            for sample in second.samples where sample.type == .cyclingSpeed { trueSpeed = sample.quantity.value }
            for sample in second.samples where sample.type == .cyclingCadence { trueCadence = sample.quantity.value }
            ant += emitter.encode(second)[.ant] ?? []
        }
        let pages = antBroadcasts(ant, channel: 1)
        var worstSpeed = 0.0
        var worstCadence = 0.0
        for (a, b) in zip(pages, pages.dropFirst()) {
            let dWheelT = Double((u16(b, 4) - u16(a, 4)) & 0xFFFF) / 1024
            let dWheel = Double((u16(b, 6) - u16(a, 6)) & 0xFFFF)
            if dWheel > 0 {
                worstSpeed = max(
                    worstSpeed, abs(WireEmitter.wheelCircumference * dWheel / dWheelT - trueSpeed) / trueSpeed)
            }
            let dCrankT = Double((u16(b, 0) - u16(a, 0)) & 0xFFFF) / 1024
            let dCrank = Double((u16(b, 2) - u16(a, 2)) & 0xFFFF)
            if dCrank > 0 { worstCadence = max(worstCadence, abs(60 * dCrank / dCrankT - trueCadence) / trueCadence) }
        }
        #expect(worstSpeed < 0.02, "speed from wheel page off by \(worstSpeed * 100) % (true \(trueSpeed) m/s)")
        #expect(worstCadence < 0.02, "cadence from crank page off by \(worstCadence * 100) % (true \(trueCadence) rpm)")
    }

    /// A pool swim leg that is not the race's first leg: its first length must start with the leg.
    @Test func poolLegAfterAnotherLegStartsItsLengthsAtTheLeg() throws {
        let s = try scenario(
            """
            "activityType": "swimming", "swimmingLocation": "pool", "lapLength": 25, \(athleteJSON),
            "recoverySeconds": 120,
            "legs": [{"type": "transition", "segments": [{"duration": 60, "intensity": 0.3}]},
                     {"type": "swimming", "segments": [{"distance": 100, "intensity": 0.7}]}]
            """)
        var simulator = WatchSimulator(scenario: s, seed: 3)
        var recorder = GroundTruthRecorder(scenario: s)
        while let second = simulator.next() { recorder.observe(second) }
        let truth = recorder.result(of: simulator)
        let swim = truth.legs[1]
        #expect(swim.lengths.first?.start == swim.start)
    }

    /// A watch-port disconnect over a leg boundary loses the NEXT button (the truth still changes leg).
    @Test func legChangeDuringWatchDisconnectStillReachesTheWire() throws {
        let s = try scenario(
            """
            "activityType": "swimBikeRun", \(athleteJSON), "recoverySeconds": 130,
            "disconnects": [{"port": "watch", "start": 55, "duration": 10}],
            "legs": [{"type": "swimming", "segments": [{"duration": 60, "intensity": 0.7}]},
                     {"type": "transition", "segments": [{"duration": 60, "intensity": 0.3}]},
                     {"type": "cycling", "segments": [{"duration": 60, "intensity": 0.7}]},
                     {"type": "transition", "segments": [{"duration": 60, "intensity": 0.3}]},
                     {"type": "running", "segments": [{"duration": 60, "intensity": 0.7}]}]
            """)
        var simulator = WatchSimulator(scenario: s, seed: 3)
        var emitter = WireEmitter(start: simulator.start)
        var watch: [UInt8] = []
        while let second = simulator.next() { watch += emitter.encode(second)[.watch] ?? [] }
        let text = String(decoding: watch, as: UTF8.self)
        #expect(text.components(separatedBy: ",NEXT*").count - 1 == 4)
    }

    /// Open-water strokes: what the watch reports over the swim covers the whole swim.
    @Test func openWaterStrokesAreNotLostAtTheEndOfTheSwim() throws {
        let s = try scenario(
            """
            "activityType": "swimming", "swimmingLocation": "openWater", \(athleteJSON), "recoverySeconds": 120,
            "legs": [{"type": "swimming", "segments": [{"duration": 19, "intensity": 0.7}]}]
            """)
        var simulator = WatchSimulator(scenario: s, seed: 3)
        var strokes = 0.0
        var distance = 0.0
        while let second = simulator.next() {
            for x in second.samples where x.type == .swimmingStrokeCount { strokes += x.quantity.value }
            for x in second.samples where x.type == .distanceSwimming { distance += x.quantity.value }
        }
        #expect(abs(strokes - distance / 2.0) <= 1, "strokes \(strokes) for \(distance) m at 2 m/stroke")
    }
}
