import Foundation
import Synchronization
import Testing

@testable import WorkoutSensors
import SensorTestSupport
import WorkoutTestSupport

/// A decoder shared with a connection's handler.
private final class SharedDecoder: Sendable {
    private let decoder = Mutex(NMEADecoder())
    func withLock<R>(_ body: (inout NMEADecoder) -> R) -> R { decoder.withLock { body(&$0) } }
}

/// Findings reported by a hunt.
private final class Findings: Sendable {
    private let list = Mutex<[NMEASpeedHunt.Finding]>([])
    func append(_ finding: NMEASpeedHunt.Finding) { list.withLock { $0.append(finding) } }
    var all: [NMEASpeedHunt.Finding] { list.withLock { $0 } }
}

/// A connection whose opener is `hunt`, decoding what it reads; returns it and the decoder.
private func huntingConnection(_ hunt: NMEASpeedHunt) -> (SensorConnection, SharedDecoder) {
    let decoder = SharedDecoder()
    let connection = SensorConnection(
        path: hunt.path, tag: "nmea", readTimeout: .milliseconds(50),
        opener: { (path) throws(SensorError) in try hunt.open(path) },
        handler: { event in
            if case .bytes(let chunk, _) = event { _ = decoder.withLock { $0.decode(chunk) } }
        })
    return (connection, decoder)
}

/// The NMEA speed hunt against receivers that talk at one speed only (pseudo-terminals). One test at a
/// time: each plays a receiver on a thread against the wall clock.
@Suite("NMEA speed hunt", .serialized)
struct NMEASpeedHuntTests {
    @Test func aGPSAt4800IsFoundWithinFifteenSecondsWithNoSpeedGivenAndRemembered() async throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let memory = SerialSpeedMemory(file: folder.appendingPathComponent("state/serial-speeds.json").path)
        let gps = try FixedSpeedGPS(speed: 4800)
        defer { gps.stop() }
        // Something else was on this path last time, at 115200: that is tried first, and gives noise.
        try memory.remember(115_200, for: gps.terminal.path)
        let findings = Findings()
        let hunt = NMEASpeedHunt(path: gps.terminal.path, memory: memory) { finding in findings.append(finding) }
        #expect(hunt.order == [115_200, 4800, 9600, 19200, 38400, 57600])
        let (connection, decoder) = huntingConnection(hunt)
        try connection.start()
        defer { connection.stop() }

        // The finding is reported after the status changes (it is remembered first): wait for both.
        let found = await waitUntil(30, every: .milliseconds(20)) {
            hunt.status == .found(4800) && decoder.withLock { $0.counters.framesDecoded } > 0 && !findings.all.isEmpty
        }
        #expect(found, "status \(hunt.status), written \(gps.written.withLock { $0 })")
        #expect(
            findings.all
                == [.init(speed: 4800, device: gps.terminal.path, rememberedIn: memory.file, memoryProblem: nil)])
        #expect(try gps.terminal.readerSettings().baudRate == 4800)
        // The noise of the wrong speed reached the decoder and was skipped, not decoded.
        #expect(decoder.withLock { $0.counters.resyncBytesSkipped + $0.counters.badChecksums } > 0)
        // Hunting reopens the port without a disconnect.
        #expect(connection.counters.disconnects == 0)
        // Remembered for the device: next time 4800 comes first.
        #expect(memory.speed(for: gps.terminal.path) == 4800)
        #expect(NMEASpeedHunt(path: gps.terminal.path, memory: memory).order.first == 4800)
    }

    @Test func aGPSAt38400IsFoundAfterTheSlowerSpeeds() async throws {
        let gps = try FixedSpeedGPS(speed: 38400)
        defer { gps.stop() }
        let hunt = NMEASpeedHunt(path: gps.terminal.path, memory: nil, window: .seconds(1))
        #expect(hunt.order == NMEASpeedHunt.speeds)
        let (connection, decoder) = huntingConnection(hunt)
        try connection.start()
        defer { connection.stop() }
        #expect(hunt.status == .trying(4800))
        let found = await waitUntil(30, every: .milliseconds(20)) {
            hunt.status == .found(38400) && decoder.withLock { $0.counters.framesDecoded } > 0
        }
        #expect(found, "status \(hunt.status), written \(gps.written.withLock { $0 })")
        // Settled: it stays at 38400 while good sentences come.
        let before = decoder.withLock { $0.counters.framesDecoded }
        #expect(await waitUntil(30, every: .milliseconds(20)) { decoder.withLock { $0.counters.framesDecoded } >= before + 10 })
        #expect(hunt.status == .found(38400))
        #expect(try gps.terminal.readerSettings().baudRate == 38400)
    }

    @Test func aMissingDeviceIsThrownAtOnceNotHunted() throws {
        let path = "/dev/ttyUSB-not-there-\(getpid())"
        let hunt = NMEASpeedHunt(path: path, memory: nil)
        #expect {
            _ = try hunt.open(path)
        } throws: { error in
            isSensorError(error, naming: path) { if case .deviceMissing = $0 { true } else { false } }
        }
        #expect(hunt.status == .trying(4800))
    }
}
