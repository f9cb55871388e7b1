import Foundation
import Synchronization

/// A change to the stored workouts, as observers see it.
public enum StoreChange: Sendable, Hashable {
    case added([UUID])
    case deleted([UUID])
}

/// Fans store changes out to any number of AsyncStream subscribers (observer queries, live
/// anchored and statistics-collection queries). Changes made through this store instance are
/// seen; another process writing the same file is not.
final class StoreBroadcaster: Sendable {
    private struct Subscribers: Sendable {
        var continuations: [Int: AsyncStream<StoreChange>.Continuation] = [:]
        var nextID = 0
    }

    private let subscribers = Mutex(Subscribers())

    func publish(_ change: StoreChange) {
        subscribers.withLock { subscribers in
            for continuation in subscribers.continuations.values { continuation.yield(change) }
        }
    }

    func subscribe() -> AsyncStream<StoreChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreChange.self)
        let id = subscribers.withLock { subscribers in
            let id = subscribers.nextID
            subscribers.nextID += 1
            subscribers.continuations[id] = continuation
            return id
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.subscribers.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }
}

extension WorkoutStore {
    /// Observer query: every change made through this store from now on.
    public func changes() -> AsyncStream<StoreChange> { broadcaster.subscribe() }
}
