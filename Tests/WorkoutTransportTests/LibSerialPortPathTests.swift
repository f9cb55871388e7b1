import Foundation
import Synchronization
import Testing
import WorkoutTestSupport

@testable import WorkoutSensors

/// The lines a child process printed, collected on a thread of their own.
final class OutputLines: Sendable {
    private let state = Mutex<(pending: [UInt8], lines: [String])>(([], []))

    func feed(_ data: Data) {
        state.withLock { state in
            state.pending += data
            while let newline = state.pending.firstIndex(of: 0x0A) {
                state.lines.append(String(decoding: state.pending[..<newline], as: UTF8.self))
                state.pending.removeSubrange(...newline)
            }
        }
    }

    var all: [String] { state.withLock { $0.lines } }

    /// Waits for a line that starts with `prefix`, the `index`-th such (0-based); nil after `timeout`.
    func line(startingWith prefix: String, index: Int = 0, timeout: Duration = .seconds(20)) async -> String? {
        var found: String?
        _ = await waitUntil(Double(timeout.components.seconds), every: .milliseconds(5)) {
            let matches = all.filter { $0.hasPrefix(prefix) }
            found = matches.count > index ? matches[index] : nil
            return found != nil
        }
        return found
    }
}

/// The SerialProbe executable (Tests/SerialProbe) running with `arguments`.
struct Probe {
    let process = Process()
    let output = OutputLines()

    init(_ arguments: [String]) throws {
        process.executableURL = BuiltProducts.executable("SerialProbe")
        process.arguments = arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let handle = pipe.fileHandleForReading
        let output = output
        Thread.detachNewThread {
            while true {
                let data = handle.availableData
                if data.isEmpty { return }
                output.feed(data)
            }
        }
    }

    /// Waits for the process to exit and returns its status (the process is killed after `timeout`).
    func exitStatus(timeout: Duration = .seconds(20)) async -> Int32 {
        _ = await waitUntil(Double(timeout.components.seconds), every: .milliseconds(5)) { !process.isRunning }
        if process.isRunning { process.terminate() }
        process.waitUntilExit()
        return process.terminationStatus
    }
}

/// Lowercase hexadecimal, as the probe prints bytes.
func hex(_ bytes: [UInt8]) -> String {
    bytes.map { String(format: "%02x", $0) }.joined()
}

/// Reads `count` bytes from the master side of `terminal`.
func readMaster(_ terminal: PseudoTerminal, count: Int) throws -> [UInt8] {
    var bytes: [UInt8] = []
    let deadline = ContinuousClock.now + .seconds(10)
    while bytes.count < count && ContinuousClock.now < deadline {
        bytes += try terminal.read(upTo: count - bytes.count, timeout: .milliseconds(50))
    }
    return bytes
}

/// libserialport's real open, configure, read and write code over real bytes: the probe process
/// links an emulation of the two things a pseudo-terminal lacks (modem-line ioctls, a sysfs entry);
/// see Tests/CModemLineEmulation and the README's Development section. One test at a time: each makes
/// pseudo-terminals and starts a probe process, and one test's pseudo-terminal once vanished (its slave path
/// ENOENT for the probe) while the others did the same beside it.
@Suite("libserialport transport (probe process)", .serialized)
struct LibSerialPortPathTests {
    @Test func opensConfiguresReadsWritesAndSeesTheHangUp() async throws {
        var terminal: PseudoTerminal? = try PseudoTerminal()
        let path = try #require(terminal?.path)
        let sent = (0...255).map { UInt8($0) }
        let probe = try Probe(["transport", path, "9600,8N2,flow=rtscts", "\(sent.count)"])
        #expect(await probe.output.line(startingWith: "ready") != nil, "\(probe.output.all)")
        #expect(probe.output.all.first == "opened libserialport serialPort 9600,8N2,flow=rtscts")

        try terminal?.write(sent)
        #expect(await probe.output.line(startingWith: "read ") == "read \(hex(sent))")
        #expect(await probe.output.line(startingWith: "echoed") != nil)
        #expect(try readMaster(try #require(terminal), count: sent.count) == sent)

        terminal = nil
        #expect(await probe.output.line(startingWith: "end") == "end hangUp")
        let emulated = await probe.output.line(startingWith: "emulated")
        #expect((emulated?.split(separator: " ").last.flatMap { Int($0) } ?? 0) > 0)
        #expect(await probe.exitStatus() == 0)
    }

    @Test(arguments: [
        ("9600,7E1", "7 data bits"), ("flow=dtrdsr", "flow=dtrdsr"),
    ])
    func settingsThePortCannotKeepAreRefusedWithThePath(spec: String, setting: String) async throws {
        let terminal = try PseudoTerminal()
        let probe = try Probe(["transport", terminal.path, spec, "1"])
        let error = await probe.output.line(startingWith: "error")
        #expect(error?.contains("\(terminal.path) does not support \(setting)") == true, "\(probe.output.all)")
        #expect(await probe.exitStatus() == 1)
        // Nothing stays locked after the refusal.
        try SerialPorts.open(terminal.path).close()
    }

    /// An ANT USB2/USB-m stick on Linux: usb_serial_simple answers modem-line queries with ENOTTY and keeps
    /// 9600 bit/s whatever is set. `PATH:ant` opens it at the default settings (termios, kind terminal, at the
    /// port's 9600) and bytes go both ways.
    @Test func anANTStickPortWithoutModemLinesPinnedAt9600OpensForANT() async throws {
        var terminal: PseudoTerminal? = try PseudoTerminal()
        let path = try #require(terminal?.path)
        let startup: [UInt8] = [0xA4, 0x01, 0x6F, 0x00, 0xCA]
        let probe = try Probe(["simple:ant", path, "115200,8N1", "\(startup.count)"])
        #expect(await probe.output.line(startingWith: "ready") != nil, "\(probe.output.all)")
        #expect(probe.output.all.first == "opened termios terminal 9600,8N1")
        #expect(try terminal?.readerSettings().baudRate == 9600)

        try terminal?.write(startup)
        #expect(await probe.output.line(startingWith: "read ") == "read \(hex(startup))")
        #expect(await probe.output.line(startingWith: "echoed") != nil)
        #expect(try readMaster(try #require(terminal), count: startup.count) == startup)
        terminal = nil
        #expect(await probe.output.line(startingWith: "end") == "end hangUp")
        // The emulation answered the modem-line query (ENOTTY) and pinned the speed.
        let emulated = await probe.output.line(startingWith: "emulated")
        #expect((emulated?.split(separator: " ").last.flatMap { Int($0) } ?? 0) >= 2, "\(probe.output.all)")
        #expect(await probe.exitStatus() == 0)
    }

    /// The same port for a protocol that needs its speed: refused, naming the speed it keeps as the one to
    /// give, never the speed just refused; at that speed it opens.
    @Test func aPortPinnedAt9600RefusesAnotherSpeedAndProposesTheOneItKeeps() async throws {
        let terminal = try PseudoTerminal()
        let probe = try Probe(["simple:nmea", terminal.path, "115200,8N1", "1"])
        let error = try #require(await probe.output.line(startingWith: "error"), "\(probe.output.all)")
        #expect(error.contains("\(terminal.path) does not support 115200 bit/s"), "\(error)")
        #expect(error.contains("keeps 9600 bit/s") && error.contains("@9600"), "\(error)")
        let advice = try #require(error.components(separatedBy: "115200 bit/s:").last)
        #expect(!advice.contains("115200"), "\(error)")
        #expect(await probe.exitStatus() == 1)

        let atItsSpeed = try Probe(["simple:nmea", terminal.path, "9600", "1"])
        #expect(await atItsSpeed.output.line(startingWith: "ready") != nil, "\(atItsSpeed.output.all)")
        #expect(atItsSpeed.output.all.first == "opened termios terminal 9600,8N1")
        try terminal.write([0x24])
        #expect(await atItsSpeed.output.line(startingWith: "read ") == "read 24")
        #expect(await atItsSpeed.output.line(startingWith: "echoed") != nil)
        _ = try readMaster(terminal, count: 1)
    }

    /// A port with modem lines whose driver ignores speed changes (it keeps 9600) opens through libserialport
    /// for `ant`, at the speed it keeps; for `nmea` at another speed it is refused, proposing 9600.
    @Test func aPortThatIgnoresSpeedChangesOpensThroughLibserialportForANT() async throws {
        var terminal: PseudoTerminal? = try PseudoTerminal()
        let path = try #require(terminal?.path)
        let probe = try Probe(["pinned:ant", path, "115200,8N1", "1"])
        #expect(await probe.output.line(startingWith: "ready") != nil, "\(probe.output.all)")
        #expect(probe.output.all.first == "opened libserialport serialPort 9600,8N1")
        try terminal?.write([0xA4])
        #expect(await probe.output.line(startingWith: "read ") == "read a4")
        #expect(await probe.output.line(startingWith: "echoed") != nil)
        _ = try readMaster(try #require(terminal), count: 1)
        terminal = nil
        #expect(await probe.output.line(startingWith: "end") == "end hangUp")
        #expect(await probe.exitStatus() == 0)

        let other = try PseudoTerminal()
        let refused = try Probe(["pinned:nmea", other.path, "57600", "1"])
        let error = try #require(await refused.output.line(startingWith: "error"), "\(refused.output.all)")
        #expect(error.contains("does not support 57600 bit/s") && error.contains("@9600"), "\(error)")
        #expect(!(error.components(separatedBy: "57600 bit/s:").last ?? "").contains("57600"), "\(error)")
        #expect(await refused.exitStatus() == 1)
    }

    @Test func aPortInUseIsBusyAndKeepsItsSettings() async throws {
        let terminal = try PseudoTerminal()
        let holder = try SerialPorts.open(terminal.path, settings: SerialSettings(parsing: "4800,8N1,flow=xonxoff"))
        defer { holder.close() }
        let probe = try Probe(["transport", terminal.path, "9600,8N2", "1"])
        let error = await probe.output.line(startingWith: "error")
        #expect(error?.contains("\(terminal.path) is in use by another program") == true, "\(probe.output.all)")
        #expect(await probe.exitStatus() == 1)
        // libserialport never opened it: the holder's settings are untouched.
        #expect(try holder.currentSettings() == SerialSettings(parsing: "4800,8N1,flow=xonxoff"))
    }

    @Test func aMissingPortIsReportedByTheProbeWithItsPath() async throws {
        let path = "/dev/ttyUSB-not-there-\(getpid())"
        let probe = try Probe(["transport", path, "115200,8N1", "1"])
        let error = await probe.output.line(startingWith: "error")
        #expect(error?.contains("no device at \(path)") == true, "\(probe.output.all)")
        #expect(await probe.exitStatus() == 1)
    }

    @Test func aConnectionReconnectsThroughLibserialport() async throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let link = folder.appendingPathComponent("ant").path
        var first: PseudoTerminal? = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: try #require(first?.path))
        let before: [UInt8] = [0xA4, 0x09, 0x4E, 0x00, 0x04, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x48, 0x00]
        let after: [UInt8] = [0xA4, 0x01, 0x6F, 0x20, 0xEA]
        let probe = try Probe(["connection", link, "57600,8N1", "\(before.count + after.count)"])
        #expect(await probe.output.line(startingWith: "connected") != nil, "\(probe.output.all)")

        let received = { (lines: ArraySlice<String>) in
            lines.filter { $0.hasPrefix("bytes ") }.map { $0.dropFirst("bytes ".count) }.joined()
        }
        try first?.write(before)
        _ = await waitUntil(10, every: .milliseconds(5)) { received(probe.output.all[...]) == hex(before) }
        first = nil
        try FileManager.default.removeItem(atPath: link)
        #expect(await probe.output.line(startingWith: "disconnected") == "disconnected hangUp")

        let second = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: second.path)
        #expect(await probe.output.line(startingWith: "connected", index: 1) != nil, "\(probe.output.all)")
        try second.write(after)
        let counters = await probe.output.line(startingWith: "counters")
        #expect(counters == "counters bytes=\(before.count + after.count) disconnects=1 reconnects=1 readErrors=0")

        let lines = probe.output.all
        let events = lines.filter { !$0.hasPrefix("counters") && !$0.hasPrefix("emulated") }
        let gap = try #require(events.firstIndex(of: "disconnected hangUp"))
        #expect(received(events[..<gap]) == hex(before))
        #expect(received(events[gap...]) == hex(after))
        #expect(events.first == "connected")
        #expect(events.filter { $0 == "connected" }.count == 2)
        #expect(await probe.exitStatus() == 0)
    }
}
