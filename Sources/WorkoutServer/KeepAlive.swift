import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1
import Synchronization

/// Hummingbird's HTTP/1 channel, with HTTP/1.0's connection rule kept: a connection whose request did not ask to
/// be kept alive (HTTP/1.0 without `Connection: keep-alive`, or any request with `Connection: close`) is closed
/// after its response, which says so (`Connection: close`).
///
/// Hummingbird turns requests into HTTP types that carry no version, and kept every HTTP/1.0 connection open
/// after its response: a client reading to the end of the connection waited forever.
///
/// Two more things Hummingbird's channel does not do: a connection accepted while the server stops is closed, not
/// dropped with its writer unfinished (`AcceptedConnection`), and a request whose client hangs up is cancelled
/// (`HangUpHandler`).
struct KeepAliveHTTP1Channel: ServerChildChannel {
    let inner: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<AcceptedConnection> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // First of all: should the rest throw, the connection is closed, not left with its writer unfinished.
            let hangUp = HangUpSignal()
            let accepted = AcceptedConnection(value, hangUp: hangUp)
            // Between the request decoder and the conversion to HTTP types: they see each request's version, and
            // the end of the input even while a request is being answered.
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            let keepAlive = KeepAliveHandler()
            try channel.pipeline.syncOperations.addHandler(keepAlive, position: .after(decoder))
            try channel.pipeline.syncOperations.addHandler(HangUpHandler(signal: hangUp), position: .after(keepAlive))
            return accepted
        }
    }

    /// Serves the connection in a task of its own, cancelled when the client hangs up with a request unanswered
    /// (`HangUpHandler`): the request's store work is then interrupted (`Offload.run`).
    func handle(value: AcceptedConnection, logger: Logger) async {
        let (inner, connection) = (inner, value.handOut())
        let serving = Task { await inner.handle(value: connection, logger: logger) }
        value.hangUp.whenHungUp { serving.cancel() }
        await withTaskCancellationHandler { await serving.value } onCancel: { serving.cancel() }
    }
}

/// An accepted connection on its way from the listening socket to the task that serves it: when it is released
/// without having been handed out (the server stopped in between), it finishes its writer and closes itself.
///
/// NIO's async server channel queues the connections it accepts until the accept loop takes them; when that loop
/// ends (the server stops: its task cancelled, or a graceful shutdown) the queued ones are dropped. A dropped
/// connection's outbound writer was never finished, and NIO traps on that: "Deinited NIOAsyncWriter without
/// calling finish()" (apple/swift-nio#2813), the whole process down for one connection opened at the wrong
/// moment. Served connections are untouched: Hummingbird finishes their writer when it is done with them.
final class AcceptedConnection: ServerChildChannelValue {
    private let value: HTTP1Channel.Value
    private let handedOut = Atomic<Bool>(false)
    /// Raised when the client hangs up with a request unanswered.
    let hangUp: HangUpSignal

    init(_ value: HTTP1Channel.Value, hangUp: HangUpSignal) {
        self.value = value
        self.hangUp = hangUp
    }

    var channel: any Channel { value.channel }

    /// The connection for the task that serves it (which then owns its writer).
    func handOut() -> HTTP1Channel.Value {
        handedOut.store(true, ordering: .releasing)
        return value
    }

    deinit {
        guard !handedOut.load(ordering: .acquiring) else { return }
        // Never served: the writer finished and the connection closed (`executeThenClose` does both). A task of
        // its own, as `deinit` runs on whichever thread dropped the connection (an event loop, maybe); the task
        // holds the writer until it is finished, so its last reference never goes unfinished.
        let value = value
        Task { try? await value.executeThenClose { _, _ in } }
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 as Hummingbird serves it, with `KeepAliveHTTP1Channel`'s connection rule.
    static func http1KeepingHTTP10Rules(configuration: HTTP1Channel.Configuration = .init()) -> HTTPServerBuilder {
        HTTPServerBuilder { responder in
            KeepAliveHTTP1Channel(inner: HTTP1Channel(responder: responder, configuration: configuration))
        }
    }
}

/// Notes whether each request asked to keep its connection alive, and closes the connection after the response
/// of one that did not.
final class KeepAliveHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart
    typealias OutboundIn = HTTPServerResponsePart
    typealias OutboundOut = HTTPServerResponsePart

    /// The requests read and not yet answered, in order: whether each keeps the connection, and its version.
    private var pending: [(keepAlive: Bool, version: HTTPVersion)] = []

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head(let head) = unwrapInboundIn(data) { pending.append((head.isKeepAlive, head.version)) }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var head):
            guard let request = pending.first else { break }
            if !request.keepAlive {
                head.headers.replaceOrAdd(name: "connection", value: "close")
            } else if request.version == .http1_0 {
                head.headers.replaceOrAdd(name: "connection", value: "keep-alive")
            }
            context.write(wrapOutboundOut(.head(head)), promise: promise)
            return
        case .end:
            guard !pending.isEmpty else { break }
            let request = pending.removeFirst()
            guard !request.keepAlive else { break }
            let written = context.eventLoop.makePromise(of: Void.self)
            written.futureResult.assumeIsolated().whenComplete { _ in context.close(promise: nil) }
            written.futureResult.cascade(to: promise)
            context.writeAndFlush(data, promise: written)
            return
        case .body:
            break
        }
        context.write(data, promise: promise)
    }
}
