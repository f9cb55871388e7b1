import Foundation
import Synchronization
import Testing
import WorkoutTestSupport

@testable import WorkoutSensors

/// The events a connection's handler saw, for waiting on them.
final class EventLog: Sendable {
    private let events = Mutex<[SensorConnection.Event]>([])

    func append(_ event: SensorConnection.Event) {
        events.withLock { $0.append(event) }
    }

    var all: [SensorConnection.Event] { events.withLock { $0 } }

    /// Waits until `condition` holds for the events so far; false after `timeout`.
    func wait(timeout: Duration = .seconds(10), until condition: ([SensorConnection.Event]) -> Bool) async -> Bool {
        await waitUntil(Double(timeout.components.seconds), every: .milliseconds(5)) { condition(all) }
    }
}

/// The bytes of the events, in order.
func bytes(_ events: some Collection<SensorConnection.Event>) -> [UInt8] {
    events.flatMap { event -> [UInt8] in
        if case .bytes(let chunk, _) = event { return chunk }
        return []
    }
}

/// The availability changes among the events, in order.
func availability(_ events: [SensorConnection.Event]) -> [SensorConnection.Availability] {
    events.compactMap { event in
        if case .availability(let change) = event { return change }
        return nil
    }
}

/// Fast back-off for tests.
let quick = SensorConnection.Backoff(initial: .milliseconds(10), multiplier: 2, maximum: .milliseconds(40))

@Suite("sensor connection")
struct SensorConnectionTests {
    @Test func backoffDoublesUpToTheCap() {
        let delays = (1...8).map { SensorConnection.Backoff.standard.delay(beforeAttempt: $0) }
        #expect(
            delays == [
                .milliseconds(100), .milliseconds(200), .milliseconds(400), .milliseconds(800), .milliseconds(1600),
                .milliseconds(3200), .seconds(5), .seconds(5),
            ])
        #expect(SensorConnection.Backoff.standard.delay(beforeAttempt: 1_000_000) == .seconds(5))
        let flat = SensorConnection.Backoff(initial: .seconds(1), multiplier: 0.5, maximum: .zero)
        #expect(flat.delay(beforeAttempt: 3) == .seconds(1))
    }

    @Test func aPseudoTerminalReplacedBehindTheSameLinkIsReconnected() async throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let link = folder.appendingPathComponent("gps").path
        var first: PseudoTerminal? = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: try #require(first?.path))

        let log = EventLog()
        let connection = SensorConnection(
            path: link, tag: "nmea", backoff: quick, readTimeout: .milliseconds(20), handler: log.append)
        try connection.start()
        #expect(await log.wait { availability($0) == [.connected] })
        #expect(connection.isAvailable)

        let before = Array("$GPGGA,120000.00,4807.038,N*00\r\n".utf8) + (0...255).map { UInt8($0) }
        try first?.write(before)
        #expect(await log.wait { bytes($0) == before })

        // Unplug: the master closes (the reader sees a hang-up), the link dangles for a while.
        first = nil
        try FileManager.default.removeItem(atPath: link)
        #expect(await log.wait { availability($0).count == 2 })
        #expect(!connection.isAvailable)
        _ = await waitUntil(10, every: .milliseconds(5)) {
            connection.counters.reconnectAttempts >= 1 && connection.lastOpenError != nil
        }
        #expect(connection.counters.reconnectAttempts >= 1)
        guard case .deviceMissing = connection.lastOpenError else {
            Issue.record(
                "no missing-device error while the link dangles: \(String(describing: connection.lastOpenError))")
            return
        }

        // Replug: a new pseudo-terminal behind the same link.
        let second = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: second.path)
        #expect(await log.wait { availability($0).count == 3 })
        let after = Array("$GPRMC,120001.00,A*00\r\n".utf8)
        try second.write(after)
        #expect(await log.wait { bytes($0) == before + after })

        let events = log.all
        #expect(availability(events) == [.connected, .disconnected(.hangUp), .connected])
        // Each side of the gap has exactly its own bytes: nothing repeated, nothing invented.
        let gap = try #require(events.firstIndex(of: .availability(.disconnected(.hangUp))))
        #expect(bytes(events[..<gap]) == before)
        #expect(bytes(events[gap...]) == after)
        let counters = connection.counters
        #expect(counters.bytesRead == before.count + after.count)
        #expect(counters.disconnects == 1)
        #expect(counters.reconnects == 1)
        #expect(counters.reconnectAttempts >= 2)
        #expect(counters.readErrors == 0)

        connection.stop()
        var streamed: [SensorConnection.Event] = []
        for await event in connection.events { streamed.append(event) }
        #expect(streamed == events)
        #expect(!connection.isAvailable)
        // Stopping released the device.
        try SerialPorts.open(second.path).close()
    }

    @Test func aMissingDeviceFailsTheStartWithItsPath() throws {
        let path = "/dev/ttyACM-not-there-\(getpid())"
        let connection = SensorConnection(path: path, tag: "nmea")
        #expect {
            try connection.start()
        } throws: { error in
            isSensorError(error, naming: path) {
                if case .deviceMissing = $0 { return true }
                return false
            }
        }
        #expect(!connection.isAvailable)
        connection.stop()
    }

    @Test func waitingForADeviceConnectsWhenItAppears() async throws {
        let folder = try temporaryFolder("transport")
        defer { try? FileManager.default.removeItem(at: folder) }
        let link = folder.appendingPathComponent("ant").path
        let log = EventLog()
        let connection = SensorConnection(path: link, tag: "ant", backoff: quick, handler: log.append)
        try connection.start(waitForDevice: true)
        _ = await waitUntil(10, every: .milliseconds(5)) { connection.lastOpenError != nil }
        #expect(log.all.isEmpty)
        #expect(connection.lastOpenError != nil)
        let terminal = try PseudoTerminal()
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: terminal.path)
        #expect(await log.wait { availability($0) == [.connected] })
        try terminal.write([0xA4, 0x03])
        #expect(await log.wait { bytes($0) == [0xA4, 0x03] })
        #expect(connection.counters.reconnects == 1)
        connection.stop()
        for await _ in connection.events {}
    }

    @Test func readErrorsAreCountedAndReconnected() async throws {
        let script = ScriptedOpener(
            transports: [
                [.bytes([1, 2]), .endOfStream(.ioError("Input/output error, EIO"))],
                [.failure(.read(path: "fake", detail: "EBADF")), .bytes([3])],
                [.bytes([4])],
            ],
            failuresBefore: [0, 2, 1])
        let log = EventLog()
        let connection = SensorConnection(
            path: "fake", tag: "ant", backoff: quick, opener: script.open, handler: log.append)
        try connection.start()
        #expect(await log.wait { bytes($0) == [1, 2, 4] && availability($0).count == 5 })
        #expect(
            availability(log.all) == [
                .connected, .disconnected(.ioError("Input/output error, EIO")), .connected,
                .disconnected(.readFailed(.read(path: "fake", detail: "EBADF"))), .connected,
            ])
        let counters = connection.counters
        #expect(counters.readErrors == 2)
        #expect(counters.disconnects == 2)
        #expect(counters.reconnects == 2)
        #expect(counters.reconnectAttempts == 2 + 2 + 1)
        #expect(counters.bytesRead == 3)
        connection.stop()
        for await _ in connection.events {}
        #expect(script.closed == 3)
    }

    @Test func cancellingTheIteratingTaskStopsTheConnection() async throws {
        let terminal = try PseudoTerminal()
        let connection = SensorConnection(path: terminal.path, tag: "watch", readTimeout: .milliseconds(10))
        try connection.start()
        let reader = Task {
            var count = 0
            for await event in connection.events {
                if case .bytes(let chunk, _) = event { count += chunk.count }
            }
            return count
        }
        try terminal.write(Array("LEN 1\n".utf8))
        let log = connection
        _ = await waitUntil(30, every: .milliseconds(5)) { log.counters.bytesRead >= 6 }
        reader.cancel()
        _ = await reader.value
        // The stream terminated: the device closes within the read timeout.
        _ = await waitUntil(30, every: .milliseconds(5)) { !connection.isAvailable }
        #expect(!connection.isAvailable)
        // Released: the device opens again.
        _ = await waitUntil(30, every: .milliseconds(5)) {
            guard let port = try? SerialPorts.open(terminal.path) else { return false }
            port.close()
            return true
        }
        try SerialPorts.open(terminal.path).close()
    }
}

/// Transports that play scripted reads, opened after scripted numbers of failed attempts.
final class ScriptedOpener: Sendable {
    enum Step: Sendable {
        case bytes([UInt8])
        case endOfStream(DisconnectReason)
        case failure(SensorError)
    }

    private struct State {
        var transports: [[Step]]
        var failuresBefore: [Int]
        var closed = 0
    }

    private let state: Mutex<State>

    init(transports: [[Step]], failuresBefore: [Int]) {
        state = Mutex(State(transports: transports, failuresBefore: failuresBefore))
    }

    var closed: Int { state.withLock { $0.closed } }

    func didClose() {
        state.withLock { $0.closed += 1 }
    }

    func open(_ path: String) throws(SensorError) -> any ByteTransport {
        let steps = try state.withLock { (state) throws(SensorError) -> [Step] in
            guard !state.transports.isEmpty else { throw .deviceMissing(path: path, detail: "script over") }
            if let failures = state.failuresBefore.first, failures > 0 {
                state.failuresBefore[0] -= 1
                throw .deviceMissing(path: path, detail: "not yet")
            }
            if !state.failuresBefore.isEmpty { state.failuresBefore.removeFirst() }
            return state.transports.removeFirst()
        }
        return ScriptedTransport(path: path, steps: steps, owner: self)
    }
}

/// A transport that plays its steps, then times out.
final class ScriptedTransport: ByteTransport {
    let path: String
    var kind: SerialDeviceKind { .serialPort }
    var backend: SerialBackend { .automatic }
    private let steps: Mutex<[ScriptedOpener.Step]>
    private let owner: ScriptedOpener

    init(path: String, steps: [ScriptedOpener.Step], owner: ScriptedOpener) {
        self.path = path
        self.steps = Mutex(steps)
        self.owner = owner
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(SensorError) -> ReadOutcome {
        let step = steps.withLock { $0.isEmpty ? nil : $0.removeFirst() }
        switch step {
        case .bytes(let bytes):
            buffer.copyBytes(from: bytes)
            return .bytes(bytes.count)
        case .endOfStream(let reason): return .endOfStream(reason)
        case .failure(let error): throw error
        case nil:
            Thread.sleep(forTimeInterval: 0.005)
            return .timeout
        }
    }

    func write(_ bytes: [UInt8], timeout: Duration) throws(SensorError) {}

    func currentSettings() throws(SensorError) -> SerialSettings { .standard }

    func close() {
        owner.didClose()
    }
}
