import Synchronization

/// Fans values out to any number of `AsyncStream` subscribers, in the order published.
///
/// Each `subscribe()` returns an independent stream (unbounded buffer) that sees every value
/// published after it subscribed; `finish()` ends every stream, and later subscriptions end at once.
/// `publish` never blocks and may be called while holding other locks.
public final class AsyncBroadcaster<Element: Sendable>: Sendable {
    private struct Subscribers: Sendable {
        var continuations: [Int: AsyncStream<Element>.Continuation] = [:]
        var nextID = 0
        var finished = false
    }

    private let subscribers = Mutex(Subscribers())

    public init() {}

    /// A new stream of everything published from now on.
    public func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self)
        let id: Int? = subscribers.withLock { subscribers in
            guard !subscribers.finished else { return nil }
            let id = subscribers.nextID
            subscribers.nextID += 1
            subscribers.continuations[id] = continuation
            return id
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Delivers `value` to every current subscriber.
    public func publish(_ value: Element) {
        subscribers.withLock { subscribers in
            for continuation in subscribers.continuations.values { continuation.yield(value) }
        }
    }

    /// Ends every stream; later subscriptions end at once.
    public func finish() {
        let ending = subscribers.withLock { subscribers -> [AsyncStream<Element>.Continuation] in
            subscribers.finished = true
            defer { subscribers.continuations.removeAll() }
            return Array(subscribers.continuations.values)
        }
        // Outside the lock: finishing runs onTermination, which takes it.
        for continuation in ending { continuation.finish() }
    }
}
