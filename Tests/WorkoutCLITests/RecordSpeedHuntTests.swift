import Foundation
import Synchronization
import Testing
import WorkoutSensors

/// `workout record --sensor PATH:nmea` with no speed, against a receiver that talks at 9600 bit/s only.
@Suite("workout record: GPS speed hunt", .serialized)
struct RecordSpeedHuntTests {
    /// A receiver behind a pseudo-terminal that sends good sentences only while the reader's side is set to
    /// `speed` (a pseudo-terminal carries bytes at any speed: the emulation reads the speed the reader set and
    /// sends noise otherwise, as a UART at the wrong rate would deliver). Sentences written from NMEA 0183.
    private final class Receiver: Sendable {
        let terminal: PseudoTerminal
        private let running = Mutex(true)
        private let done = DispatchSemaphore(value: 0)

        init(speed: Int) throws {
            let terminal = try PseudoTerminal()
            self.terminal = terminal
            Thread.detachNewThread { [self] in
                var second = 0
                var noise: UInt32 = 99
                while running.withLock({ $0 }) {
                    let time = String(format: "0930%02d.00", second % 60)
                    var bytes: [UInt8] = []
                    for body in [
                        "GPGGA,\(time),4807.0380,N,01131.3240,E,1,08,0.9,545.4,M,46.9,M,,",
                        "GPRMC,\(time),A,4807.0380,N,01131.3240,E,000.0,000.0,261126,,,A",
                    ] {
                        let sum = body.utf8.reduce(UInt8(0), ^)
                        bytes += Array("$\(body)*\(String(format: "%02X", sum))\r\n".utf8)
                    }
                    if (try? terminal.readerSettings().baudRate) != speed {
                        bytes = bytes.map { _ in
                            noise = noise &* 1_664_525 &+ 1_013_904_223
                            return UInt8(truncatingIfNeeded: noise >> 24)
                        }
                    }
                    _ = try? terminal.write(bytes, whenFull: .drop)
                    second += 1
                    Thread.sleep(forTimeInterval: 0.2)
                }
                done.signal()
            }
        }

        func stop() {
            running.withLock { $0 = false }
            done.wait()
        }
    }

    @Test func theSpeedIsHuntedSaidAndRememberedInTheStateFolder() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("record-hunt-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let receiver = try Receiver(speed: 9600)
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
        let deadline = Date().addingTimeInterval(15)
        while !text().contains(line), Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        #expect(text().contains(line), "\(text())")
        #expect(SerialSpeedMemory(file: memory).speed(for: receiver.terminal.path) == 9600)

        // SIGTERM stops and saves; the noise read at 4800 was skipped, not recorded.
        process.terminate()
        let end = Date().addingTimeInterval(60)
        while process.isRunning, Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        #expect(!process.isRunning)
        #expect(process.terminationStatus == 0, "\(text())")
        #expect(text().contains("saved "), "\(text())")
        #expect(text().contains(" 0 disconnects"), "\(text())")
    }
}
