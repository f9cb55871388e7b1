import Foundation
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutReplay
import WorkoutSimulator
import WorkoutStore
import WorkoutTestSupport

/// Runs `executable` with `arguments`; returns the process with its standard output piped.
private func launch(_ executable: String, _ arguments: [String]) throws -> (Process, Pipe) {
    let process = Process()
    process.executableURL = BuiltProducts.executable(executable)
    process.arguments = arguments
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    // The GPS speed `record` finds is remembered in the state folder: a scratch one, not the user's.
    var environment = ProcessInfo.processInfo.environment
    environment["XDG_STATE_HOME"] = FileManager.default.temporaryDirectory.appendingPathComponent("e2e-state").path
    process.environment = environment
    try process.run()
    return (process, output)
}

/// Waits for `process` to exit, at most `seconds`; kills it after that.
private func wait(_ process: Process, seconds: Double) -> Bool {
    _ = waitFor(seconds, every: 0.1) { !process.isRunning }
    if process.isRunning {
        process.terminate()
        return false
    }
    return true
}

/// The ANT network key the tests' emulated stick and recorder share (not the ANT+ key: the
/// emulation only checks that both sides use the same one).
private let testANTNetworkKey = "0123456789ABCDEF"

/// Plays `scenario` (a name or a JSON path) with watch-sim on pseudo-terminals at `speed` and records
/// it with `workout record` on the other end; returns the saved workout, the store and the record
/// command's output lines.
private func recordSimulated(
    _ scenario: String, seed: UInt64, speed: Double, lapLength: Double?, folder: URL
) throws -> (Workout, WorkoutStore, [String]) {
    let links = folder.appendingPathComponent("links").path
    let database = folder.appendingPathComponent("recorded.sqlite").path
    let (simulator, _) = try launch(
        "watch-sim",
        [
            scenario, "--seed", "\(seed)", "--speed", "\(speed)", "--link-dir", links, "--wait", "3",
            "--ant-network-key", testANTNetworkKey,
        ])
    defer { if simulator.isRunning { simulator.terminate() } }
    _ = waitFor(10) { ["gps", "ant", "watch"].allSatisfy { FileManager.default.fileExists(atPath: "\(links)/\($0)") } }
    var arguments = [
        "record", "--sensor", "\(links)/gps:nmea", "--sensor", "\(links)/ant:ant", "--sensor", "\(links)/watch:watch",
        "--activity", "swimBikeRun", "--time-scale", "\(speed)", "--db", database,
        "--ant-network-key", testANTNetworkKey,
    ]
    if let lapLength { arguments += ["--lap-length", "\(lapLength)"] }
    let (recorder, output) = try launch("workout", arguments)
    let finished = wait(recorder, seconds: 300)
    let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    try #require(finished, "workout record did not finish: \(text)")
    try #require(recorder.terminationStatus == 0, "workout record failed: \(text)")
    let store = try WorkoutStore(path: database)
    let workouts = try store.workouts(matching: WorkoutQuery())
    try #require(workouts.count == 1, "\(text)")
    return (workouts[0], store, text.split(separator: "\n").map(String.init))
}

/// A short triathlon (about 15 minutes) with the athlete of the sprint: pool or open water.
private func miniTriathlon(pool: Bool, folder: URL) throws -> (Scenario, String) {
    var scenario = try Scenario.load(pool ? "sprint-pool" : "sprint")
    scenario.name = pool ? "mini-pool" : "mini-open-water"
    scenario.legs = [
        Scenario.Leg(
            type: .swimming,
            segments: [
                Scenario.Segment(distance: 100, intensity: 0.7, style: .freestyle),
                Scenario.Segment(duration: 20, intensity: 0.2, kind: .rest),
                Scenario.Segment(distance: 100, intensity: 0.75, style: .backstroke),
            ]),
        Scenario.Leg(type: .transition, segments: [Scenario.Segment(duration: 30, intensity: 0.6)]),
        Scenario.Leg(type: .cycling, segments: [Scenario.Segment(distance: 3000, intensity: 0.75)]),
        Scenario.Leg(type: .transition, segments: [Scenario.Segment(duration: 30, intensity: 0.6)]),
        Scenario.Leg(type: .running, segments: [Scenario.Segment(distance: 1000, intensity: 0.8)]),
    ]
    let path = folder.appendingPathComponent("\(scenario.name).json")
    try JSONEncoder().encode(scenario).write(to: path)
    return (scenario, path.path)
}

private func legDistance(_ activity: WorkoutActivity) -> Double {
    [QuantityType.distanceSwimming, .distanceCycling, .distanceWalkingRunning].compactMap {
        activity.statistics[$0]?.sum?.value
    }.reduce(0, +)
}

@Suite("Recording from serial sensors, end to end", .serialized)
struct RecordEndToEndTests {
    /// The simulator's bytes through real pseudo-terminals into `workout record` give the workout the
    /// in-process replay of the same race gives.
    @Test func recordingTheSimulatorOnPseudoTerminalsMatchesTheReplay() throws {
        let folder = try temporaryFolder("e2e")
        defer { try? FileManager.default.removeItem(at: folder) }
        let (scenario, path) = try miniTriathlon(pool: true, folder: folder)
        let (recorded, _, lines) = try recordSimulated(path, seed: 7, speed: 50, lapLength: 25, folder: folder)
        let replayStore = try WorkoutStore(path: folder.appendingPathComponent("replay.sqlite").path)
        let replay = try RaceReplay.run(scenario, seed: 7, into: replayStore).workout

        try #require(recorded.activities.count == replay.activities.count, "\(lines)")
        for (ours, theirs) in zip(recorded.activities, replay.activities) {
            let type = ours.configuration.activityType
            #expect(type == theirs.configuration.activityType)
            let ourHR = try #require(ours.statistics[.heartRate]?.average?.value, "\(type)")
            let theirHR = try #require(theirs.statistics[.heartRate]?.average?.value, "\(type)")
            #expect(abs(ourHR - theirHR) <= 1, "\(type) avg HR \(ourHR) vs \(theirHR)")
            let ourDistance = legDistance(ours)
            let theirDistance = legDistance(theirs)
            // The serial sensors' samples are stamped when they arrive, so at 50× a port served 20 ms late moves a
            // sample one second, across a leg's boundary: a leg may differ by one second's distance (a 30 s
            // transition by 3 %), or by 1 % where that is more.
            let oneSecond = theirDistance / max(1, theirs.elapsed ?? 1)
            #expect(
                abs(ourDistance - theirDistance) <= max(0.01 * theirDistance, 1.05 * oneSecond),
                "\(type) distance \(ourDistance) vs \(theirDistance); legs \(ours.start)...\(String(describing: ours.end)) vs \(theirs.start)...\(String(describing: theirs.end)) elapsed \(ours.elapsed ?? 0) vs \(theirs.elapsed ?? 0); ours \(ours.statistics.compactMapValues { $0.sum?.value }) theirs \(theirs.statistics.compactMapValues { $0.sum?.value })")
        }
        let lengths = { (workout: Workout) in
            workout.events.filter { $0.type == .lap && $0.metadata[SwimMetadataKey.lengthKind] != nil }.count
        }
        #expect(lengths(recorded) == lengths(replay))
        #expect(lengths(recorded) > 0)
        // The recovery was collected after the STOP button and attached.
        #expect(recorded.metadata[MetadataKey.heartRateRecoveryOneMinute] != nil, "\(lines)")
        #expect(lines.contains { $0.hasPrefix("button STOP") })
    }

    /// The ANT port's pseudo-terminal closes for 60 s of race and comes back: the sensor is marked
    /// unavailable and available again, the session goes on, and nothing is invented in the gap.
    @Test func aPortThatClosesMidRaceIsReopenedAndTheGapStaysEmpty() throws {
        let folder = try temporaryFolder("e2e")
        defer { try? FileManager.default.removeItem(at: folder) }
        var (scenario, _) = try miniTriathlon(pool: false, folder: folder)
        scenario.name = "mini-ant-gap"
        scenario.disconnects = [Scenario.Disconnect(port: .ant, start: 350, duration: 60)]
        let path = folder.appendingPathComponent("mini-ant-gap.json")
        try JSONEncoder().encode(scenario).write(to: path)

        let (recorded, store, lines) = try recordSimulated(path.path, seed: 2, speed: 50, lapLength: nil, folder: folder)
        let disconnected = lines.firstIndex { $0.contains("sensor ant") && $0.contains("disconnected") }
        let reconnected = lines.lastIndex { $0.contains("sensor ant") && $0.hasSuffix("connected") && !$0.contains("disconnected") }
        #expect(disconnected != nil, "\(lines)")
        #expect(reconnected.map { index in disconnected.map { index > $0 } ?? false } == true, "\(lines)")
        #expect(recorded.activities.map(\.configuration.activityType) == [.swimming, .transition, .cycling, .transition, .running])

        // Heart rate (an ANT sensor) has one gap of about the disconnect, and no sample inside it
        // (the exercise's readings: those of the recovery window after the stop are stored too).
        let heartRate = try store.samples(workout: recorded.id).filter {
            $0.type == .heartRate && !$0.isHeartRateRecoveryReading
        }.map(\.start).sorted()
        let gaps = zip(heartRate, heartRate.dropFirst()).map { $1.timeIntervalSince($0) }
        let longest = gaps.max() ?? 0
        #expect(longest >= 55 && longest <= 75, "longest heart-rate gap \(longest) s")
        #expect(gaps.filter { $0 > 10 }.count == 1, "one gap only")
    }
}
