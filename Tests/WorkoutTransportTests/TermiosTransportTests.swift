import Foundation
import Testing
import WorkoutTestSupport

@testable import WorkoutSensors

#if canImport(Glibc)
    import Glibc
#endif

/// Reads from `transport` until `count` bytes came, the stream ended, or `timeout` passed.
func readAll(
    _ transport: any ByteTransport, count: Int, timeout: Duration = .seconds(5)
) throws -> (
    bytes: [UInt8], end: DisconnectReason?
) {
    let clock = ContinuousClock()
    let deadline = clock.now + timeout
    var bytes: [UInt8] = []
    while bytes.count < count && clock.now < deadline {
        switch try transport.read(upTo: 4096, timeout: .milliseconds(50)) {
        case .bytes(let chunk): bytes += chunk
        case .timeout: continue
        case .endOfStream(let reason): return (bytes, reason)
        }
    }
    return (bytes, nil)
}

/// Whether `error` is a `SensorError` whose message names `path`, matching `match`.
func isSensorError(_ error: any Error, naming path: String, _ match: (SensorError) -> Bool) -> Bool {
    guard let error = error as? SensorError else { return false }
    return match(error) && error.description.contains(path)
}

@Suite("pseudo-terminal transport (termios)")
struct TermiosTransportTests {
    @Test func aPseudoTerminalIsDetectedDirectlyAndThroughALink() throws {
        let terminal = try PseudoTerminal()
        #expect(try SerialPorts.kind(of: terminal.path) == .pseudoTerminal)
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let link = folder.appendingPathComponent("gps").path
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: terminal.path)
        #expect(try SerialPorts.kind(of: link) == .pseudoTerminal)
        let transport = try SerialPorts.open(link)
        defer { transport.close() }
        #expect(transport.kind == .pseudoTerminal)
        #expect(transport.backend == .termios)
        #expect(transport.path == link)
    }

    @Test func bytesWrittenOnTheMasterArriveUnchanged() throws {
        let terminal = try PseudoTerminal()
        let transport = try SerialPorts.open(terminal.path, settings: SerialSettings(parsing: "4800,8N1"))
        defer { transport.close() }
        // Every byte value, including CR, LF, XON/XOFF, ^C and ^D: raw mode passes them all through.
        let sent = (0...255).map { UInt8($0) } + Array("$GPGGA,1*00\r\n".utf8)
        try terminal.write(sent)
        let (received, end) = try readAll(transport, count: sent.count)
        #expect(received == sent)
        #expect(end == nil)
        #expect(try transport.read(upTo: 16, timeout: .milliseconds(20)) == .timeout)
    }

    @Test func bytesWrittenByTheTransportReachTheMaster() throws {
        let terminal = try PseudoTerminal()
        let transport = try SerialPorts.open(terminal.path)
        defer { transport.close() }
        let sent: [UInt8] = [0xA4, 0x01, 0x4A, 0x00, 0xEF, 0x0D, 0x0A]
        try transport.write(sent, timeout: .seconds(1))
        var received: [UInt8] = []
        let deadline = ContinuousClock.now + .seconds(5)
        while received.count < sent.count && ContinuousClock.now < deadline {
            received += try terminal.read(timeout: .milliseconds(50))
        }
        #expect(received == sent)
    }

    @Test func closingTheMasterIsAHangUp() throws {
        var terminal: PseudoTerminal? = try PseudoTerminal()
        let path = try #require(terminal?.path)
        let transport = try SerialPorts.open(path)
        defer { transport.close() }
        try terminal?.write(Array("last".utf8))
        let (before, _) = try readAll(transport, count: 4)
        #expect(before == Array("last".utf8))
        terminal = nil
        let (after, end) = try readAll(transport, count: 1)
        #expect(after.isEmpty)
        #expect(end == .hangUp)
    }

    @Test(arguments: ["9600,7E2,flow=rtscts", "115200,8O1,flow=xonxoff", "1200,5M2", "230400,6S1", "4800,8N1"])
    func settingsAreAppliedAndReadBack(spec: String) throws {
        let terminal = try PseudoTerminal()
        let settings = try SerialSettings(parsing: spec)
        let transport = try SerialPorts.open(terminal.path, settings: settings)
        defer { transport.close() }
        // Linux keeps a pseudo-terminal at 8 data bits and no parity: it carries bytes.
        var kept = settings
        kept.dataBits = 8
        kept.parity = .none
        #expect(try transport.currentSettings() == kept)
    }

    @Test func unsupportedSettingsNameTheDeviceAndTheSetting() throws {
        let terminal = try PseudoTerminal()
        #expect {
            try SerialPorts.open(terminal.path, settings: SerialSettings(parsing: "flow=dtrdsr"))
        } throws: { error in
            isSensorError(error, naming: terminal.path) {
                if case .unsupportedSetting(_, let setting, let detail) = $0 {
                    return setting == "flow=dtrdsr" && detail.contains("DTR/DSR")
                }
                return false
            }
        }
        #expect {
            try SerialPorts.open(terminal.path, settings: SerialSettings(parsing: "12345"))
        } throws: { error in
            isSensorError(error, naming: terminal.path) {
                if case .unsupportedSetting(_, let setting, _) = $0 { return setting == "12345 bit/s" }
                return false
            }
        }
        // Nothing was left open: the device opens normally afterwards.
        try SerialPorts.open(terminal.path).close()
    }

    @Test func aSecondOpenIsRefusedAsBusyUntilTheFirstCloses() throws {
        let terminal = try PseudoTerminal()
        let first = try SerialPorts.open(terminal.path)
        #expect {
            try SerialPorts.open(terminal.path)
        } throws: { error in
            isSensorError(error, naming: terminal.path) {
                if case .deviceBusy = $0 { return $0.description.contains("fuser") }
                return false
            }
        }
        first.close()
        first.close()
        let second = try SerialPorts.open(terminal.path)
        second.close()
    }

    @Test func aClosedTransportRefusesReads() throws {
        let terminal = try PseudoTerminal()
        let transport = try SerialPorts.open(terminal.path)
        transport.close()
        #expect(throws: SensorError.closed(path: terminal.path)) {
            try transport.read(upTo: 1, timeout: .milliseconds(1))
        }
        #expect(throws: SensorError.closed(path: terminal.path)) { try transport.write([1], timeout: .seconds(1)) }
    }

    @Test func libserialportRefusesAPseudoTerminal() throws {
        let terminal = try PseudoTerminal()
        #expect {
            try SerialPorts.open(terminal.path, backend: .libserialport)
        } throws: { error in
            isSensorError(error, naming: terminal.path) {
                if case .notASerialDevice(_, let detail) = $0 { return detail.contains("pseudo-terminal") }
                return false
            }
        }
        // The pseudo-terminal can still be opened (nothing was left locked).
        try SerialPorts.open(terminal.path).close()
    }
}
