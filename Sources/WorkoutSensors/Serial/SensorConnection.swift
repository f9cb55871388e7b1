import Dispatch
import Foundation
import Synchronization

/// One sensor's device, kept open: reads its bytes on a thread of its own, reports when it comes
/// and goes, and reopens it with exponential back-off after a disconnect.
///
/// ```swift
/// let gps = SensorConnection(path: "/dev/ttyACM0", tag: "nmea", settings: try SerialSettings(parsing: "4800"))
/// try gps.start()                          // opens now: a missing or busy device throws here
/// for await event in gps.events {
///     switch event {
///     case .bytes(let chunk, let date): decoder.feed(chunk, at: date)
///     case .availability(.connected): print("gps up")
///     case .availability(.disconnected(let reason)): print("gps down: \(reason)")
///     }
/// }
/// ```
///
/// Events come in order on ``events`` (and to the optional handler): `.availability(.connected)`
/// first, then byte chunks, each read exactly once with the time the read returned. A hang-up (end
/// of file or POLLHUP: unplugged, the pseudo-terminal's other end closed), an I/O error (EIO, ENXIO,
/// ENODEV) or any other read error closes the device and emits `.disconnected(reason)`; the
/// connection then retries opening the same path after ``Backoff`` delays (0.1 s doubling up to
/// 5 s by default) until it opens (`.connected` again) or ``stop()`` is called. A path that is a
/// symbolic link is resolved anew at each attempt, so a replugged device or a new pseudo-terminal
/// behind the same link is found. Nothing is invented across the gap: bytes lost while the device
/// was away are simply absent.
///
/// A ``ConnectionDriver`` speaks for the protocol: it may write on every connect (a USB ANT stick
/// is silent until configured), sees every chunk before it is delivered, and is called after every
/// read so it can resend or time out; its notes arrive as `.driver` events. The default driver
/// writes nothing.
public final class SensorConnection: Sendable {
    /// Something that happened on the connection.
    public enum Event: Sendable, Equatable {
        /// Bytes read, in order, with the time the read returned.
        case bytes([UInt8], at: Date)
        /// The device became available or unavailable.
        case availability(Availability)
        /// The protocol's driver has something to say (a sensor found or lost, a refused configuration).
        case driver(DriverNote)
    }

    /// Whether the device is open.
    public enum Availability: Sendable, Equatable, CustomStringConvertible {
        /// Opened (first at ``start(waitForDevice:)``, then after each reconnect).
        case connected
        /// Lost, and closed; reconnect attempts follow.
        case disconnected(DisconnectReason)

        public var description: String {
            switch self {
            case .connected: "connected"
            case .disconnected(let reason): "disconnected: \(reason)"
            }
        }
    }

    /// The waits between reconnect attempts: `initial`, then multiplied by `multiplier` after each
    /// failed attempt, at most `maximum`; back to `initial` after a successful reconnect.
    public struct Backoff: Sendable, Equatable {
        /// The wait before the first attempt.
        public var initial: Duration
        /// The factor between successive waits (at least 1).
        public var multiplier: Double
        /// The longest wait.
        public var maximum: Duration

        /// A back-off; `multiplier` below 1 counts as 1 and `maximum` below `initial` as `initial`.
        public init(initial: Duration = .milliseconds(100), multiplier: Double = 2, maximum: Duration = .seconds(5)) {
            self.initial = max(.zero, initial)
            self.multiplier = max(1, multiplier.isFinite ? multiplier : 1)
            self.maximum = max(self.initial, maximum)
        }

        /// 0.1 s, 0.2 s, 0.4 s … up to 5 s.
        public static let standard = Backoff()

        /// The wait before attempt `attempt` (1, 2, …) since the device was lost.
        public func delay(beforeAttempt attempt: Int) -> Duration {
            var delay = initial
            var step = 1
            while step < attempt && delay < maximum {
                delay = delay * multiplier
                step += 1
            }
            return min(delay, maximum)
        }
    }

    /// What the connection has done so far.
    public struct Counters: Sendable, Equatable {
        /// Opens tried after a disconnect (or while waiting for a device that was not there).
        public var reconnectAttempts = 0
        /// Reconnect attempts that opened the device.
        public var reconnects = 0
        /// Times the device was lost.
        public var disconnects = 0
        /// Bytes delivered.
        public var bytesRead = 0
        /// Reads that failed with an error (EIO and the like included; a clean hang-up is not one).
        public var readErrors = 0
        /// Bytes the driver wrote to the device.
        public var bytesWritten = 0
        /// Driver writes that failed.
        public var writeErrors = 0

        /// All zero.
        public init() {}
    }

    /// Opens a device path; the default opens it with ``SerialPorts/open(_:settings:backend:)``.
    public typealias Opener = @Sendable (_ path: String) throws(SensorError) -> any ByteTransport

    /// The device path as given (a link is followed at each open).
    public let path: String
    /// The protocol the caller reads on this device (`nmea`, `ant`, `watch` …); carried, not used.
    public let tag: String
    /// Events in order; single consumer. Finishes after ``stop()`` once the device is closed.
    /// Cancelling the task that iterates it stops the connection.
    public let events: AsyncStream<Event>

    private let continuation: AsyncStream<Event>.Continuation
    private let handler: (@Sendable (Event) -> Void)?
    private let opener: Opener
    private let backoff: Backoff
    private let readTimeout: Duration
    private let chunkSize: Int
    private let now: @Sendable () -> Date
    private let driver: any ConnectionDriver
    private let writeTimeout: Duration
    /// Signalled by `stop` to cut a back-off wait short.
    private let wake = DispatchSemaphore(value: 0)
    private let state = Mutex(State())

    private struct State {
        var started = false
        var stopped = false
        var available = false
        var counters = Counters()
        var lastOpenError: SensorError?
    }

    /// A connection to `path`, not yet open (see ``start(waitForDevice:)``).
    ///
    /// - Parameters:
    ///   - settings, backend: how to open the device (``SerialPorts/open(_:settings:backend:)``).
    ///   - backoff: waits between reconnect attempts.
    ///   - readTimeout: the longest a read waits; bounds how long ``stop()`` takes to close.
    ///   - chunkSize: the most bytes one `.bytes` event carries.
    ///   - now: the clock that dates chunks.
    ///   - opener: replaces how the path is opened (tests, other transports).
    ///   - driver: what the protocol writes on connect and in answer (``PassiveDriver``: nothing).
    ///   - writeTimeout: the longest a driver's write waits for the device.
    ///   - handler: called with every event too, on the connection's thread, before it is queued on
    ///     ``events``.
    public init(
        path: String, tag: String, settings: SerialSettings = .standard, backend: SerialBackend = .automatic,
        backoff: Backoff = .standard, readTimeout: Duration = .milliseconds(100), chunkSize: Int = 4096,
        now: @escaping @Sendable () -> Date = { Date() }, opener: Opener? = nil,
        driver: any ConnectionDriver = PassiveDriver(), writeTimeout: Duration = .milliseconds(500),
        handler: (@Sendable (Event) -> Void)? = nil
    ) {
        self.path = path
        self.driver = driver
        self.writeTimeout = writeTimeout
        self.tag = tag
        self.backoff = backoff
        self.readTimeout = max(.milliseconds(1), readTimeout)
        self.chunkSize = max(1, chunkSize)
        self.now = now
        self.handler = handler
        if let opener {
            self.opener = opener
        } else {
            self.opener = { (path) throws(SensorError) -> any ByteTransport in
                try SerialPorts.open(path, settings: settings, backend: backend)
            }
        }
        (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .unbounded)
        continuation.onTermination = { [weak self] _ in self?.stop() }
    }

    /// Opens the device and starts reading on a thread of the connection's own.
    ///
    /// By default the first open happens here, and its failure is thrown (`deviceMissing`,
    /// `deviceBusy`, `permissionDenied`, `notASerialDevice`, `unsupportedSetting` …, naming the
    /// path) with nothing started, so a caller can refuse to record with a bad device. With
    /// `waitForDevice`, a failed first open is not an error: the connection keeps trying with the
    /// back-off. Calling it again once started does nothing.
    public func start(waitForDevice: Bool = false) throws(SensorError) {
        let proceed = state.withLock { state in
            guard !state.started && !state.stopped else { return false }
            state.started = true
            return true
        }
        guard proceed else { return }
        var transport: (any ByteTransport)?
        do {
            transport = try opener(path)
        } catch {
            guard waitForDevice else {
                state.withLock { $0.started = false }
                throw error
            }
            state.withLock { $0.lastOpenError = error }
        }
        let first = transport
        let thread = Thread { [self] in run(first) }
        thread.name = "sensor \(path)"
        thread.start()
    }

    /// Stops reading: the device is closed within the read timeout (or at once when waiting to
    /// reconnect), then ``events`` finishes. Returns at once; calling it again does nothing.
    public func stop() {
        let wasRunning = state.withLock { state in
            defer { state.stopped = true }
            return state.started && !state.stopped
        }
        if wasRunning {
            wake.signal()
        } else {
            continuation.finish()
        }
    }

    /// The counters so far.
    public var counters: Counters { state.withLock { $0.counters } }

    /// Whether the device is open now.
    public var isAvailable: Bool { state.withLock { $0.available } }

    /// Why the latest open attempt failed, while the device is unavailable.
    public var lastOpenError: SensorError? { state.withLock { $0.available ? nil : $0.lastOpenError } }

    private var isStopped: Bool { state.withLock { $0.stopped } }

    private func emit(_ event: Event) {
        handler?(event)
        continuation.yield(event)
    }

    /// The reader thread: read, report, reconnect, until stopped.
    private func run(_ first: (any ByteTransport)?) {
        var transport = first
        var failedAttempts = 0
        var buffer = [UInt8](repeating: 0, count: chunkSize)
        if let open = transport {
            connected(reconnect: false)
            drive(open) { $0.connected() }
        }
        while !isStopped {
            guard let open = transport else {
                let delay = backoff.delay(beforeAttempt: failedAttempts + 1)
                if wake.wait(timeout: .now() + .nanoseconds(nanoseconds(delay))) == .success || isStopped { break }
                state.withLock { $0.counters.reconnectAttempts += 1 }
                do {
                    let open = try opener(path)
                    transport = open
                    failedAttempts = 0
                    connected(reconnect: true)
                    drive(open) { $0.connected() }
                } catch {
                    failedAttempts += 1
                    state.withLock { $0.lastOpenError = error }
                }
                continue
            }
            let result = buffer.withUnsafeMutableBytes { bytes in
                Result { () throws(SensorError) -> ReadOutcome in try open.read(into: bytes, timeout: readTimeout) }
            }
            switch result {
            case .success(.bytes(let count)):
                state.withLock { $0.counters.bytesRead += count }
                let chunk = Array(buffer.prefix(count))
                let arrival = now()
                drive(open) { $0.received(chunk) }
                emit(.bytes(chunk, at: arrival))
                drive(open) { $0.idle() }
            case .success(.timeout):
                drive(open) { $0.idle() }
                continue
            case .success(.endOfStream(let reason)):
                disconnected(open, reason: reason, readError: reason != .hangUp)
                transport = nil
            case .failure(let error):
                disconnected(open, reason: .readFailed(error), readError: true)
                transport = nil
            }
        }
        transport?.close()
        state.withLock { $0.available = false }
        continuation.finish()
    }

    private func connected(reconnect: Bool) {
        state.withLock { state in
            state.available = true
            state.lastOpenError = nil
            if reconnect { state.counters.reconnects += 1 }
        }
        emit(.availability(.connected))
    }

    /// Runs a driver call, writes what it returns and emits its notes.
    private func drive(_ transport: any ByteTransport, _ call: (any ConnectionDriver) -> [UInt8]) {
        let out = call(driver)
        if !out.isEmpty {
            do {
                try transport.write(out, timeout: writeTimeout)
                state.withLock { $0.counters.bytesWritten += out.count }
            } catch {
                state.withLock { $0.counters.writeErrors += 1 }
                emit(.driver(DriverNote("cannot write to \(path): \(error.description)", problem: true)))
            }
        }
        for note in driver.takeNotes() { emit(.driver(note)) }
    }

    private func disconnected(_ transport: any ByteTransport, reason: DisconnectReason, readError: Bool) {
        driver.disconnected()
        transport.close()
        state.withLock { state in
            state.available = false
            state.counters.disconnects += 1
            if readError { state.counters.readErrors += 1 }
        }
        emit(.availability(.disconnected(reason)))
        for note in driver.takeNotes() { emit(.driver(note)) }
    }
}

/// Whole nanoseconds of a duration, for Dispatch (negative as 0, at most a year).
private func nanoseconds(_ duration: Duration) -> Int {
    let (seconds, attoseconds) = duration.components
    guard seconds >= 0 else { return 0 }
    return Int(min(seconds, 31_536_000)) * 1_000_000_000 + Int(attoseconds / 1_000_000_000)
}
