import Foundation
import SensorTestSupport
import Testing
import WorkoutSensors
import WorkoutTestSupport

/// `workout record --sensor PATH:nmea` with no speed, against a receiver that talks at 9600 bit/s only.
@Suite("workout record: GPS speed hunt", .serialized)
struct RecordSpeedHuntTests {
    @Test func theSpeedIsHuntedSaidAndRememberedInTheStateFolder() throws {
        let folder = try temporaryFolder("record-hunt")
        defer { try? FileManager.default.removeItem(at: folder) }
        let receiver = try FixedSpeedGPS(speed: 9600)
        defer { receiver.stop() }
        let output = folder.appendingPathComponent("output")
        try Data().write(to: output)
        let process = Process()
        process.executableURL = workoutExecutable()
        process.arguments = [
            "record", "--sensor", "\(receiver.terminal.path):nmea", "--activity", "cycling", "--recovery", "0",
            "--db", folder.appendingPathComponent("store.sqlite").path,
        ]
        var environment = ProcessInfo.processInfo.environment
        environment["XDG_STATE_HOME"] = folder.appendingPathComponent("state").path
        process.environment = environment
        process.standardInput = FileHandle.nullDevice
        let handle = try FileHandle(forWritingTo: output)
        process.standardOutput = handle
        process.standardError = handle
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        let text = { (try? String(contentsOf: output, encoding: .utf8)) ?? "" }

        // 4800 gives noise for 2 s, then 9600: found well within 15 s.
        let memory = folder.appendingPathComponent("state/workout-engine/serial-speeds.json").path
        let line =
            "sensor nmea \(receiver.terminal.path): 9600 bit/s found (remembered in \(memory) for "
            + "\(receiver.terminal.path); give @SPEED to skip the hunt)"
        _ = waitFor(15) { text().contains(line) }
        #expect(text().contains(line), "\(text())")
        #expect(SerialSpeedMemory(file: memory).speed(for: receiver.terminal.path) == 9600)

        // SIGTERM stops and saves; the noise read at 4800 was skipped, not recorded.
        process.terminate()
        _ = waitFor(60) { !process.isRunning }
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 0, "\(text())")
        #expect(text().contains("saved "), "\(text())")
        #expect(text().contains(" 0 disconnects"), "\(text())")
    }
}
