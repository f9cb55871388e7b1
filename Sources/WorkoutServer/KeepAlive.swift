import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOHTTP1

/// Hummingbird's HTTP/1 channel, with HTTP/1.0's connection rule kept: a connection whose request did not ask to
/// be kept alive (HTTP/1.0 without `Connection: keep-alive`, or any request with `Connection: close`) is closed
/// after its response, which says so (`Connection: close`).
///
/// Hummingbird turns requests into HTTP types that carry no version, and kept every HTTP/1.0 connection open
/// after its response: a client reading to the end of the connection waited forever.
struct KeepAliveHTTP1Channel: ServerChildChannel {
    let inner: HTTP1Channel

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<HTTP1Channel.Value> {
        inner.setup(channel: channel, logger: logger).flatMapThrowing { value in
            // Between the request decoder and the conversion to HTTP types: it sees each request's version.
            let decoder = try channel.pipeline.syncOperations.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
            try channel.pipeline.syncOperations.addHandler(KeepAliveHandler(), position: .after(decoder))
            return value
        }
    }

    func handle(value: HTTP1Channel.Value, logger: Logger) async {
        await inner.handle(value: value, logger: logger)
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
