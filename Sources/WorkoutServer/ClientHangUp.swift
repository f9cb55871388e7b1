import NIOCore
import NIOHTTP1
import Synchronization

/// Tells the task serving a connection that its client hung up while a request was unanswered, so that the
/// request's work is cancelled (its store statements interrupted: `Offload.run`) instead of running on for no one.
///
/// Hummingbird does not cancel a request whose client goes away: a slow query kept its store thread until the
/// statement time limit, whoever was still waiting for it.
final class HangUpSignal: Sendable {
    private struct State {
        var hungUp = false
        var action: (@Sendable () -> Void)?
    }

    private let state = Mutex(State())

    /// Calls `action` once the client hangs up with a request unanswered (at once when it already has).
    func whenHungUp(_ action: @escaping @Sendable () -> Void) {
        let already = state.withLock { state -> Bool in
            if !state.hungUp { state.action = action }
            return state.hungUp
        }
        if already { action() }
    }

    func hangUp() {
        let action = state.withLock { state -> (@Sendable () -> Void)? in
            guard !state.hungUp else { return nil }
            state.hungUp = true
            defer { state.action = nil }
            return state.action
        }
        action?()
    }
}

/// One per connection (after the request decoder): counts the requests read and not yet answered, and signals a
/// hang-up when the connection's input ends (the client closed it, or shut down its sending side) or the
/// connection closes while one is unanswered. A client that half-closes after its request is taken as gone, as
/// nginx and Go's server take it.
final class HangUpHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    let signal: HangUpSignal
    private var unanswered = 0

    init(signal: HangUpSignal) { self.signal = signal }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { unanswered += 1 }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { unanswered = max(0, unanswered - 1) }
        context.write(data, promise: promise)
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if event as? ChannelEvent == .some(.inputClosed), unanswered > 0 { signal.hangUp() }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        if unanswered > 0 { signal.hangUp() }
        context.fireChannelInactive()
    }
}
