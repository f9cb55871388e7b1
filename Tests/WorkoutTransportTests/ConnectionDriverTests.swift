import Foundation
import Synchronization
import Testing
import WorkoutTestSupport

@testable import WorkoutSensors

/// A driver that says `HI` on every connect, answers `PING` with `PONG`, and records what it saw.
private final class EchoDriver: ConnectionDriver {
    let seen = Mutex<[String]>([])

    func connected() -> [UInt8] {
        seen.withLock { $0.append("connected") }
        return Array("HI".utf8)
    }

    func received(_ bytes: [UInt8]) -> [UInt8] {
        let text = String(decoding: bytes, as: UTF8.self)
        seen.withLock { $0.append("received \(text)") }
        return text.contains("PING") ? Array("PONG".utf8) : []
    }

    func idle() -> [UInt8] { [] }

    func disconnected() {
        seen.withLock { $0.append("disconnected") }
    }

    func takeNotes() -> [DriverNote] {
        seen.withLock { $0.last == "disconnected" } ? [DriverNote("gone", available: false)] : []
    }
}

/// Reads what the connection wrote to the terminal until it contains `text`, at most `seconds`.
private func readUntil(_ terminal: PseudoTerminal, contains text: String, seconds: Double = 10) -> String {
    var collected = ""
    let deadline = Date().addingTimeInterval(seconds)
    while !collected.contains(text), Date() < deadline {
        collected += String(decoding: (try? terminal.read(timeout: .milliseconds(50))) ?? [], as: UTF8.self)
    }
    return collected
}

@Suite("connection drivers", .serialized)
struct ConnectionDriverTests {
    /// A driver writes on connect and on every reconnect (a new terminal behind the same link), and sees
    /// each chunk before it is delivered, so it can answer.
    @Test func aDriverWritesOnEveryConnectAndAnswersWhatItReads() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("driver-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let link = folder.appendingPathComponent("device").path
        var first: PseudoTerminal? = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: try #require(first?.path))
        let driver = EchoDriver()
        let log = EventLog()
        let connection = SensorConnection(
            path: link, tag: "test", backoff: quick, readTimeout: .milliseconds(20), driver: driver
        ) { log.append($0) }
        try connection.start()
        defer { connection.stop() }
        if let terminal = first {
            #expect(readUntil(terminal, contains: "HI").contains("HI"))
            try terminal.write(Array("PING".utf8))
            #expect(readUntil(terminal, contains: "PONG").contains("PONG"))
        }
        #expect(await log.wait { bytes($0) == Array("PING".utf8) })
        #expect(driver.seen.withLock { $0.contains("received PING") })

        // Unplugged and plugged back: the driver is told, and writes again on the new terminal.
        first = nil
        try FileManager.default.removeItem(atPath: link)
        #expect(await log.wait { availability($0).contains { $0 != .connected } })
        #expect(await log.wait { $0.contains(.driver(DriverNote("gone", available: false))) })
        let second = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: second.path)
        #expect(readUntil(second, contains: "HI").contains("HI"))
        #expect(driver.seen.withLock { $0.filter { $0 == "connected" }.count } == 2)
        // The terminal can read the second "HI" before the connection counts its write: waited for, with a deadline.
        #expect(await waitUntil(10) { connection.counters.bytesWritten >= 8 }, "\(connection.counters.bytesWritten)")
    }

    /// The passive driver (NMEA, watch-link) writes nothing.
    @Test func thePassiveDriverWritesNothing() {
        let driver = PassiveDriver()
        #expect(driver.connected().isEmpty && driver.received([1, 2]).isEmpty && driver.idle().isEmpty)
        #expect(driver.takeNotes().isEmpty)
    }
}
