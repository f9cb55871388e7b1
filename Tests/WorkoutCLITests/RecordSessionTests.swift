import Foundation
import Testing
import WorkoutModel
import WorkoutSensors
import WorkoutStore
import WorkoutTestSupport

/// `workout record` of a running session from a watch on `watch` into the store `db`, its standard output written to
/// the file `output` (read by `output()`), its standard error dropped: the run every test of the suite starts.
private struct WatchRecording {
    let process = Process()
    let outURL: URL

    init(watch: PseudoTerminal, db: String, recovery: Int, output outURL: URL) throws {
        self.outURL = outURL
        try Data().write(to: outURL)
        let out = try FileHandle(forWritingTo: outURL)
        process.executableURL = workoutExecutable()
        process.arguments = [
            "record", "--sensor", "\(watch.path):watch", "--activity", "running", "--recovery", "\(recovery)",
            "--db", db,
        ]
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = out
        process.standardError = FileHandle.nullDevice
        try process.run()
    }

    /// What the command has written to its standard output so far.
    func output() -> String { (try? String(contentsOf: outURL, encoding: .utf8)) ?? "" }
}

/// `workout record` from a watch on a pseudo-terminal (the test writes its frames): stop, recovery, crash.
@Suite("workout record: a session from a watch", .serialized)
struct RecordSessionTests {
    /// After the watch's STOP the command collects the heart-rate recovery ("Ctrl-C skips"): one Ctrl-C
    /// skips the rest of the window (here 10 minutes) and the command ends.
    @Test func oneCtrlCSkipsTheRecoveryWindowAfterTheWatchsStop() async throws {
        let folder = try temporaryFolder("record")
        defer { try? FileManager.default.removeItem(at: folder) }
        let watch = try PseudoTerminal()
        let recording = try WatchRecording(
            watch: watch, db: folder.appendingPathComponent("store.sqlite").path, recovery: 600,
            output: folder.appendingPathComponent("stdout"))
        let (process, output) = (recording.process, recording.output)
        defer { if process.isRunning { process.terminate() } }
        try #require(await waitUntil(60) { output().contains("connected") }, "\(output())")
        try await Task.sleep(for: .seconds(0.5))
        try watch.write(WatchLink.hello(device: "test watch") + WatchLink.button(milliseconds: 1000, .stop))
        try #require(await waitUntil(60) { output().contains("Ctrl-C skips") }, "\(output())")
        process.interrupt()  // one SIGINT
        let exited = await waitUntil(60) { !process.isRunning }
        #expect(exited, "still collecting 60 s after Ctrl-C (the recovery window is 600 s): \(output())")
    }

    /// `workout record` stores the heart rate of the recovery window with the workout, marked as
    /// recovery readings: after the watch's STOP, what the strap sends until the window (here 4 s)
    /// closes; the exercise's own readings stay unmarked.
    @Test func recordStoresTheRecoveryWindowsReadings() async throws {
        let folder = try temporaryFolder("record")
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("store.sqlite").path
        let watch = try PseudoTerminal()
        let recording = try WatchRecording(
            watch: watch, db: db, recovery: 4, output: folder.appendingPathComponent("stdout"))
        let (process, output) = (recording.process, recording.output)
        defer { if process.isRunning { process.terminate() } }
        try #require(await waitUntil(60) { output().contains("connected") }, "\(output())")
        try watch.write(WatchLink.hello(device: "test watch"))
        // The watch is paced on a thread of its own: the recovery window is 4 s of wall clock, and a Task.sleep on
        // the busy cooperative pool could wake late enough for most beats to miss it.
        try await onOwnThread {
            func beat(_ tick: Int, _ bpm: UInt8) throws {
                try watch.write(
                    WatchLink.gatt(
                        milliseconds: tick * 200, characteristic: GATT.heartRateMeasurement, payload: [0x00, bpm]))
                Thread.sleep(forTimeInterval: 0.2)
            }
            for tick in 1...15 { try beat(tick, 150) }
            try watch.write(WatchLink.button(milliseconds: 3100, .stop))
            for tick in 16...45 where process.isRunning { try beat(tick, UInt8(150 - (tick - 15))) }
        }
        try #require(await waitUntil(60) { !process.isRunning }, "\(output())")
        #expect(process.terminationStatus == 0, "\(output())")
        let store = try WorkoutStore(path: db)
        let workout = try #require(try store.workouts(matching: WorkoutQuery()).first)
        let samples = try store.samples(workout: workout.id).filter { $0.type == .heartRate }
        let recovery = samples.filter(\.isHeartRateRecoveryReading)
        #expect(recovery.count >= 5, "\(recovery.count) recovery readings of \(samples.count)")
        // Only the beats sent after STOP fall below 150 bpm.
        #expect(recovery.allSatisfy { $0.quantity.value < 150 })
        let exercise = samples.filter { !$0.isHeartRateRecoveryReading }
        #expect(exercise.count >= 10 && exercise.allSatisfy { $0.quantity.value == 150 })
        #expect(workout.statistics[.heartRate]?.minimum?.value == 150)
    }

    /// README: "the journal is committed every second, so a crash loses at most the last second and the
    /// session is recovered on the next start": a recording killed mid-race is saved by the next
    /// `workout record` and listed.
    @Test func aRecordingKilledMidRaceIsRecoveredByTheNextStart() async throws {
        let folder = try temporaryFolder("record")
        defer { try? FileManager.default.removeItem(at: folder) }
        let db = folder.appendingPathComponent("store.sqlite").path
        func launch(_ watch: PseudoTerminal, _ name: String) throws -> (Process, () -> String) {
            let recording = try WatchRecording(
                watch: watch, db: db, recovery: 0, output: folder.appendingPathComponent(name))
            return (recording.process, recording.output)
        }

        // First recording: heart rate for 3 s, then the machine dies (SIGKILL).
        let firstWatch = try PseudoTerminal()
        let (first, firstOutput) = try launch(firstWatch, "first")
        defer { if first.isRunning { first.terminate() } }
        try #require(await waitUntil(60) { firstOutput().contains("connected") }, "\(firstOutput())")
        try firstWatch.write(WatchLink.hello(device: "test watch"))
        for tick in 1...15 {
            try firstWatch.write(
                WatchLink.gatt(milliseconds: tick * 200, characteristic: GATT.heartRateMeasurement, payload: [0x00, 140]))
            try await Task.sleep(for: .seconds(0.2))
        }
        try await Task.sleep(for: .seconds(1.5))  // past a group commit
        kill(first.processIdentifier, SIGKILL)
        await onOwnThread { first.waitUntilExit() }
        let crash = Date()
        // The journal holds the killed session.
        let journaled = try WorkoutStore(path: db).journaledSessions()
        try #require(journaled.count == 1, "journal: \(journaled)")

        // Next start: the watch stops at once.
        let secondWatch = try PseudoTerminal()
        let (second, secondOutput) = try launch(secondWatch, "second")
        defer { if second.isRunning { second.terminate() } }
        try #require(await waitUntil(60) { secondOutput().contains("connected") }, "\(secondOutput())")
        try await Task.sleep(for: .seconds(0.3))
        try secondWatch.write(WatchLink.hello(device: "test watch") + WatchLink.button(milliseconds: 500, .stop))
        try #require(await waitUntil(60) { !second.isRunning }, "\(secondOutput())")
        #expect(second.terminationStatus == 0)

        let listed = try decodeJSON([Workout].self, try runCommand(["list", "--db", db, "--json"]).stdout)
        #expect(
            listed.contains { $0.start < crash.addingTimeInterval(-2) },
            "workouts after the restart: \(listed.map { ($0.start, $0.statistics[.heartRate]?.average?.value as Double?) }); crash at \(crash)"
        )
    }
}
