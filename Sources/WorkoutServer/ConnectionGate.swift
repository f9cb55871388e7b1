import Foundation
import NIOCore
import NIOHTTPTypes
import Synchronization

/// The server's open client connections, bounded: past `capacity` the longest-idle connection (no request in
/// progress) is closed to make room for a new one, or the new one is closed at once when every connection has a
/// request in progress. So idle connections, however many a client opens, never exhaust the process's file
/// descriptors, and a new client (a health check) is always accepted and answered.
final class ConnectionGate: Sendable {
    private struct Entry {
        var channel: any Channel
        /// Whether a request is in progress (its head read, its answer not yet written).
        var busy: Bool
        /// When the connection last became idle (monotonic nanoseconds): the oldest is closed first.
        var idleSince: UInt64
    }

    let capacity: Int
    let maxRequests: Int
    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])
    /// Connections admitted, closed to make room (idle ones) or refused (all busy): `/metrics`.
    let counters: ServerMetrics.Connections

    init(capacity: Int, maxRequests: Int, counters: ServerMetrics.Connections) {
        self.capacity = max(1, capacity)
        self.maxRequests = max(1, maxRequests)
        self.counters = counters
    }

    /// How many connections are open.
    var count: Int { entries.withLock { $0.count } }

    /// Registers a new connection; false when it must be closed (every open connection is busy).
    func admit(_ channel: any Channel) -> Bool {
        let now = MonotonicClock.now()
        let (admitted, victim): (Bool, (any Channel)?) = entries.withLock { entries in
            var victim: (any Channel)?
            if entries.count >= capacity {
                // The longest-idle connection makes room (a scan, only when full).
                var oldest: (key: ObjectIdentifier, since: UInt64)?
                for (key, entry) in entries where !entry.busy && entry.idleSince < (oldest?.since ?? .max) {
                    oldest = (key, entry.idleSince)
                }
                guard let oldest else { return (false, nil) }
                victim = entries.removeValue(forKey: oldest.key)?.channel
            }
            entries[ObjectIdentifier(channel)] = Entry(channel: channel, busy: false, idleSince: now)
            return (true, victim)
        }
        if let victim {
            counters.evicted.increment()
            victim.close(promise: nil)
        }
        if admitted { counters.admitted.increment() } else { counters.refused.increment() }
        return admitted
    }

    func forget(_ channel: any Channel) {
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    func mark(_ channel: any Channel, busy: Bool) {
        let now = busy ? 0 : MonotonicClock.now()
        entries.withLock { entries in
            entries[ObjectIdentifier(channel)]?.busy = busy
            if !busy { entries[ObjectIdentifier(channel)]?.idleSince = now }
        }
    }

    /// The connection limit for a process whose descriptor limit is `descriptors`: `configured`, but never more
    /// than the limit less a quarter of it (at least 64) kept for database files, connections and uploads.
    static func capacity(configured: Int, descriptors: Int) -> Int {
        let reserve = max(64, descriptors / 4)
        return max(16, min(configured, descriptors - reserve))
    }

    /// Raises the process's soft descriptor limit to its hard limit (as far as `wanted`) and returns the soft
    /// limit then in force.
    static func raiseDescriptorLimit(wanted: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        let target = min(limit.rlim_max, rlim_t(max(wanted, 0)))
        if target > limit.rlim_cur {
            var raised = limit
            raised.rlim_cur = target
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return Int(clamping: limit.rlim_cur)
    }
}

/// One per connection (after the HTTP codec): registers it with the gate, marks it busy from a request's head to
/// its answer's end, and closes it after `maxRequests` answers.
final class ConnectionGateHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    let gate: ConnectionGate
    private var requests = 0

    init(gate: ConnectionGate) { self.gate = gate }

    private var admitted = false

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { admit(context: context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        admit(context: context)
        context.fireChannelActive()
    }

    /// Registers the connection once it is active; closes it when the gate refuses it.
    private func admit(context: ChannelHandlerContext) {
        guard !admitted else { return }
        admitted = true
        let channel = context.channel
        guard gate.admit(channel) else {
            context.close(promise: nil)
            return
        }
        let gate = gate
        channel.closeFuture.whenComplete { _ in gate.forget(channel) }
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) {
            requests += 1
            gate.mark(context.channel, busy: true)
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        guard case .end = unwrapOutboundIn(data) else {
            context.write(data, promise: promise)
            return
        }
        gate.mark(context.channel, busy: false)
        guard requests >= gate.maxRequests else {
            context.write(data, promise: promise)
            return
        }
        // The last answer this connection gets: closed once it is written.
        let written = context.eventLoop.makePromise(of: Void.self)
        written.futureResult.cascade(to: promise)
        let channel = context.channel
        written.futureResult.whenComplete { _ in channel.close(promise: nil) }
        context.write(data, promise: written)
    }
}

/// The monotonic clock in nanoseconds.
enum MonotonicClock {
    static func now() -> UInt64 {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec)
    }
}
