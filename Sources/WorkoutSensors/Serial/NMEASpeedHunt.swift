import Foundation
import Synchronization

/// Finds the speed of an NMEA 0183 receiver on a serial port while reading from it, as gpsd does.
///
/// GPS receivers talk at a speed of their own (4800 bit/s for most older ones and for USB-serial
/// GPS mice, 9600 for most modules, more when configured), and bytes read at another speed are
/// noise with nothing to say so. The hunt opens the port at one speed after another: the device's
/// remembered speed first (``SerialSpeedMemory``), then 4800, 9600, 19200, 38400, 57600 and 115200
/// (``speeds``), moving on when ``window`` passes without one sentence with a good checksum, and
/// round again while nothing is found (a receiver still starting up is found when it talks). The
/// first good sentence settles the speed: ``status`` becomes `.found`, the speed is remembered for
/// the device and `onFound` is called (once per speed found, not again on a reconnect at the same
/// speed).
///
/// Use ``open(_:)`` as a ``SensorConnection``'s opener: every byte read while hunting goes on to
/// the caller unchanged (a decoder counts the noise and keeps the good sentences), except what was
/// already waiting when a speed was set (received before it); a reconnect starts at the speed found. A speed the port refuses (a driver that keeps its own) is skipped.
public final class NMEASpeedHunt: Sendable {
    /// The speeds tried after the remembered one, in order (gpsd's order).
    public static let speeds = [4800, 9600, 19200, 38400, 57600, 115_200]

    /// Where the hunt is.
    public enum Status: Sendable, Equatable, CustomStringConvertible {
        /// Reading at this speed, no good sentence yet.
        case trying(Int)
        /// Good sentences arrive at this speed.
        case found(Int)

        public var description: String {
            switch self {
            case .trying(let speed): "hunting the speed, trying \(speed) bit/s"
            case .found(let speed): "\(speed) bit/s"
            }
        }
    }

    /// A speed found, for the caller to report.
    public struct Finding: Sendable, Equatable {
        /// The speed in bits per second.
        public var speed: Int
        /// The name the device is remembered by (``SerialSpeedMemory/deviceName(for:)``).
        public var device: String
        /// The memory file the speed was written to; nil without a memory or when writing failed.
        public var rememberedIn: String?
        /// Why the speed could not be remembered, if it could not.
        public var memoryProblem: String?

        public init(speed: Int, device: String, rememberedIn: String? = nil, memoryProblem: String? = nil) {
            self.speed = speed
            self.device = device
            self.rememberedIn = rememberedIn
            self.memoryProblem = memoryProblem
        }
    }

    /// The device path as given.
    public let path: String
    /// The name the device is remembered by.
    public let device: String
    /// How long one speed is read without a good sentence before the next is tried.
    public let window: Duration

    private let settings: SerialSettings
    private let backend: SerialBackend
    private let memory: SerialSpeedMemory?
    private let onFound: @Sendable (Finding) -> Void
    private let state: Mutex<State>

    private struct State {
        /// The remembered speed (if any), then ``speeds`` without it.
        var order: [Int]
        var index = 0
        var found: Int?
        var announced: Int?
    }

    /// A hunt on `path`; nothing is opened until ``open(_:)``.
    ///
    /// - Parameters:
    ///   - settings: the frame and flow control (8N1 unless given); the speed is the hunt's.
    ///   - memory: where speeds are remembered across runs; nil remembers nothing.
    ///   - window: how long each speed is given (2 s: a receiver sends at least one sentence a second).
    ///   - onFound: called on the reading thread when a speed is found.
    public init(
        path: String, settings: SerialSettings = .standard, backend: SerialBackend = .automatic,
        memory: SerialSpeedMemory?, window: Duration = .seconds(2),
        onFound: @escaping @Sendable (Finding) -> Void = { _ in }
    ) {
        self.path = path
        self.settings = settings
        self.backend = backend
        self.memory = memory
        self.window = max(.milliseconds(10), window)
        self.onFound = onFound
        let device = SerialSpeedMemory.deviceName(for: path)
        self.device = device
        let remembered = memory?.speed(for: device)
        let order = (remembered.map { [$0] } ?? []) + Self.speeds.filter { $0 != remembered }
        state = Mutex(State(order: order))
    }

    /// Where the hunt is now.
    public var status: Status {
        state.withLock { state in
            state.found.map(Status.found) ?? .trying(state.order[state.index])
        }
    }

    /// The speeds in the order they are tried (the remembered one first).
    public var order: [Int] { state.withLock { $0.order } }

    /// Opens `path` at the speed to try now (the one found, after a reconnect); for a
    /// ``SensorConnection``'s opener. Throws what opening throws (missing, busy, no permission …);
    /// a speed the port does not take is skipped, and when it takes none, the last refusal is thrown.
    public func open(_ path: String) throws(SensorError) -> any ByteTransport {
        var refusal: SensorError?
        for _ in 0..<order.count {
            let speed = state.withLock { $0.order[$0.index] }
            do throws(SensorError) {
                let transport = try SerialPorts.open(path, settings: settings(at: speed), backend: backend)
                return HuntingTransport(hunt: self, transport: transport, speed: speed)
            } catch {
                guard case .unsupportedSetting = error else { throw error }
                refusal = error
                _ = advance(from: speed)
            }
        }
        throw refusal ?? .open(path: path, detail: "no speed to try")
    }

    /// The settings with `speed`.
    func settings(at speed: Int) -> SerialSettings {
        var settings = settings
        settings.baudRate = speed
        settings.acceptsFixedSpeed = false
        return settings
    }

    /// Moves on from `speed` (when it is still the one tried) and returns the next speed to try.
    func advance(from speed: Int) -> Int {
        state.withLock { state in
            if state.order[state.index] == speed {
                state.index = (state.index + 1) % state.order.count
                state.found = nil
            }
            return state.order[state.index]
        }
    }

    /// A good sentence arrived at `speed`: settles it, remembers it, reports it once.
    func found(_ speed: Int) {
        let isNew = state.withLock { state -> Bool in
            if let index = state.order.firstIndex(of: speed) { state.index = index }
            state.found = speed
            defer { state.announced = speed }
            return state.announced != speed
        }
        guard isNew else { return }
        var finding = Finding(speed: speed, device: device)
        if let memory {
            do {
                try memory.remember(speed, for: device)
                finding.rememberedIn = memory.file
            } catch {
                finding.memoryProblem = error.description
            }
        }
        onFound(finding)
    }
}

/// A port opened by a hunt: reads through, watching for a good NMEA sentence; reopens the port at
/// the next speed when the hunt's window passes without one.
final class HuntingTransport: ByteTransport {
    let path: String
    let kind: SerialDeviceKind
    let backend: SerialBackend
    private let hunt: NMEASpeedHunt
    private let state: Mutex<State>

    private struct State: Sendable {
        var transport: (any ByteTransport)?
        var speed: Int
        var deadline: ContinuousClock.Instant
        var settled = false
        /// Finds good sentences in the bytes read (a copy: the caller decodes them too).
        var probe = NMEADecoder()
        var scratch: [SensorReading] = []
    }

    init(hunt: NMEASpeedHunt, transport: any ByteTransport, speed: Int) {
        self.hunt = hunt
        path = transport.path
        kind = transport.kind
        backend = transport.backend
        Self.discardPending(transport)
        state = Mutex(State(transport: transport, speed: speed, deadline: .now + hunt.window))
    }

    /// Discards the bytes already waiting when a speed is set: they were received before it, at
    /// another speed (gpsd flushes the input at each speed change too). At most 64 KiB.
    private static func discardPending(_ transport: any ByteTransport) {
        var scratch = [UInt8](repeating: 0, count: 4096)
        for _ in 0..<16 {
            let outcome = scratch.withUnsafeMutableBytes { buffer in
                try? transport.read(into: buffer, timeout: .zero)
            }
            guard case .bytes? = outcome else { return }
        }
    }

    deinit {
        close()
    }

    func read(into buffer: UnsafeMutableRawBufferPointer, timeout: Duration) throws(SensorError) -> ReadOutcome {
        try state.withLock { (state) throws(SensorError) -> ReadOutcome in
            guard var transport = state.transport else { throw .closed(path: path) }
            if !state.settled && ContinuousClock.now >= state.deadline {
                // Nothing good within the window: the next speed.
                transport.close()
                state.transport = nil
                let next = hunt.advance(from: state.speed)
                do throws(SensorError) {
                    transport = try SerialPorts.open(path, settings: hunt.settings(at: next), backend: backend)
                } catch {
                    return .endOfStream(.readFailed(error))
                }
                Self.discardPending(transport)
                state.transport = transport
                state.speed = next
                state.deadline = .now + hunt.window
                state.probe = NMEADecoder()
            }
            let wait = state.settled ? timeout : min(timeout, max(.zero, state.deadline - .now))
            let outcome = try transport.read(into: buffer, timeout: wait)
            if !state.settled, case .bytes(let count) = outcome {
                let before = state.probe.counters.framesDecoded + state.probe.counters.unknownMessages
                state.scratch.removeAll(keepingCapacity: true)
                state.probe.decode(UnsafeRawBufferPointer(rebasing: buffer[..<count]), into: &state.scratch)
                if state.probe.counters.framesDecoded + state.probe.counters.unknownMessages > before {
                    state.settled = true
                    hunt.found(state.speed)
                }
            }
            return outcome
        }
    }

    func write(_ bytes: [UInt8], timeout: Duration) throws(SensorError) {
        try state.withLock { (state) throws(SensorError) in
            guard let transport = state.transport else { throw .closed(path: path) }
            try transport.write(bytes, timeout: timeout)
        }
    }

    func currentSettings() throws(SensorError) -> SerialSettings {
        try state.withLock { (state) throws(SensorError) -> SerialSettings in
            guard let transport = state.transport else { throw .closed(path: path) }
            return try transport.currentSettings()
        }
    }

    func close() {
        state.withLock { state in
            state.transport?.close()
            state.transport = nil
        }
    }
}
