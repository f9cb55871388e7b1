import Foundation
import Synchronization

/// The per-protocol side of a ``SensorConnection``: what must be said to the device, not only heard.
///
/// The connection calls a driver on its reader thread, in order: ``connected()`` after every open
/// (the first and each reconnect), ``received(_:)`` with every chunk read (before the chunk is
/// delivered as an event, so a driver can wait for the device's answers), ``idle()`` after every
/// read, bytes or not (at most the read timeout apart, so a driver can resend and time out), and
/// ``disconnected()`` when the device goes away. Bytes a call returns are written to the device at
/// once; a failed write is reported as a problem note, and the read that follows finds the
/// disconnect. Notes (``takeNotes()``) become ``SensorConnection/Event/driver(_:)`` events.
///
/// NMEA receivers and watch-link devices talk unasked: ``PassiveDriver``. A USB ANT stick says
/// nothing until configured: ``ANTDriver``. The next transport (Bluetooth LE: subscribe to
/// characteristics on connect) plugs in here the same way.
public protocol ConnectionDriver: AnyObject, Sendable {
    /// The device was opened; returns the bytes to write first.
    func connected() -> [UInt8]
    /// Bytes read from the device; returns the bytes to write in answer.
    func received(_ bytes: [UInt8]) -> [UInt8]
    /// A read returned (with bytes or after its timeout); returns the bytes to write now.
    func idle() -> [UInt8]
    /// The device went away (it is closed; `connected()` follows a reopen).
    func disconnected()
    /// What the driver has to tell since the last call.
    func takeNotes() -> [DriverNote]
}

/// Something a driver tells the user or the recorder.
public struct DriverNote: Sendable, Equatable, CustomStringConvertible {
    /// The message, for people.
    public var text: String
    /// True when something went wrong (a refused configuration, a device that did not answer).
    public var problem: Bool
    /// The sensor the note is about (`ant:120:4711`), when it is about one.
    public var source: String?
    /// Whether that sensor is delivering now (found: true; lost: false), when the note says.
    public var available: Bool?

    public init(_ text: String, problem: Bool = false, source: String? = nil, available: Bool? = nil) {
        self.text = text
        self.problem = problem
        self.source = source
        self.available = available
    }

    public var description: String { text }
}

/// The driver of devices that talk unasked (NMEA receivers, watch-link): writes nothing.
public final class PassiveDriver: ConnectionDriver {
    public init() {}
    public func connected() -> [UInt8] { [] }
    public func received(_ bytes: [UInt8]) -> [UInt8] { [] }
    public func idle() -> [UInt8] { [] }
    public func disconnected() {}
    public func takeNotes() -> [DriverNote] { [] }
}

/// The driver of a USB ANT stick: configures it on every connect (``ANTHost``) and keeps its
/// channels open. Times are the monotonic clock's (wall time), whatever clock dates the readings.
public final class ANTDriver: ConnectionDriver {
    private struct State: Sendable {
        var host: ANTHost
        var notes: [DriverNote] = []
    }

    private let state: Mutex<State>
    private let clock = ContinuousClock()
    private let origin: ContinuousClock.Instant

    /// A driver that configures the stick as `plan` says.
    public init(plan: ANTHostPlan) {
        state = Mutex(State(host: ANTHost(plan: plan)))
        origin = clock.now
    }

    private var now: Double {
        let (seconds, attoseconds) = (clock.now - origin).components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// The host's channels as configured now.
    public var channels: [ANTHost.Channel] { state.withLock { $0.host.channels } }

    /// Whether every channel is configured and opened.
    public var isConfigured: Bool { state.withLock { $0.host.configured } }

    /// The host's counters.
    public var counters: ANTHost.Counters { state.withLock { $0.host.counters } }

    public func connected() -> [UInt8] {
        let now = now
        return run { $0.connected(now: now) }
    }

    public func received(_ bytes: [UInt8]) -> [UInt8] {
        let now = now
        return run { $0.receive(bytes, now: now) }
    }

    public func idle() -> [UInt8] {
        let now = now
        return run { $0.tick(now: now) }
    }

    public func disconnected() {
        state.withLock { $0.host.disconnected() }
    }

    public func takeNotes() -> [DriverNote] {
        state.withLock { state in
            defer { state.notes.removeAll() }
            return state.notes
        }
    }

    private func run(_ body: (inout ANTHost) -> [UInt8]) -> [UInt8] {
        state.withLock { state in
            let out = body(&state.host)
            for event in state.host.takeEvents() { state.notes.append(Self.note(event)) }
            return out
        }
    }

    /// The user's words for a host event.
    static func note(_ event: ANTHostEvent) -> DriverNote {
        switch event {
        case .started:
            return DriverNote("ANT stick reset")
        case .capabilities(let channels, let networks):
            return DriverNote("ANT stick has \(channels) channels, \(networks) networks")
        case .configured(let profiles):
            return DriverNote(
                "ANT stick configured: searching for " + profiles.map(\.description).joined(separator: ", "))
        case .noExtendedData:
            return DriverNote("ANT stick sends no device ids with its data (no extended messages); asking per channel")
        case .found(let channel, let profile, let device):
            return DriverNote(
                "found \(profile?.description ?? "device") \(device) on channel \(channel)", source: device.description,
                available: true)
        case .lost(let channel, let profile, let device, let code):
            let why =
                code == ANT.EventCode.rxFailGoToSearch.rawValue
                ? "out of range, searching" : code == ANT.EventCode.rxSearchTimeout.rawValue ? "search timed out" : "channel closed"
            return DriverNote(
                "lost \(profile?.description ?? "device") \(device?.description ?? "") on channel \(channel) (\(why))",
                source: device?.description, available: false)
        case .searchTimedOut(let channel, let profile):
            return DriverNote("no \(profile?.description ?? "device") found on channel \(channel) yet; searching again")
        case .failed(let error):
            return DriverNote(error.description, problem: true)
        }
    }
}
