import Dispatch
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import WorkoutStore

/// Changes that reach observers across connections: every saving or deleting transaction sends a NOTIFY on
/// `ChangeFeed.channel` (delivered by PostgreSQL when it commits), and one connection per database LISTENs
/// and hands each notification to the stores of its athlete, except to the backend instance that made it.
///
/// The payload is `athlete origin kind workout`: the athlete and workout UUIDs, the writing backend's
/// instance id, and `added` or `deleted`.
final class ChangeFeed: Sendable {
    static let channel = "workout_change"

    /// The NOTIFY statements of one change (run inside the writing transaction: sent when it commits).
    static func notifyStatements(athlete: UUID, origin: UUID, _ change: StoreChange) -> [SQL] {
        let (kind, ids) =
            switch change {
            case .added(let ids): ("added", ids)
            case .deleted(let ids): ("deleted", ids)
            }
        return ids.map { id in
            var sql = SQL()
            let payload = "\(athlete.uuidString.lowercased()) \(origin.uuidString.lowercased()) \(kind) \(id.uuidString.lowercased())"
            sql.text = "SELECT pg_notify('\(channel)', \(sql.bind(.text(payload))))"
            return sql
        }
    }

    struct Subscriber {
        var athletes: Set<UUID>
        var origin: UUID
        var deliver: @Sendable (StoreChange) -> Void
    }

    private struct State {
        var subscribers: [Int: Subscriber] = [:]
        var nextID = 0
        var connection: PostgresConnection?
        /// A connection attempt is under way (or scheduled).
        var connecting = false
        var stopped = false
    }

    private let url: PostgresURL
    private let logger: Logger
    private let state = Mutex(State())

    init(url: PostgresURL, logger: Logger) {
        self.url = url
        self.logger = logger
    }

    deinit {
        let connection = state.withLock { state -> PostgresConnection? in
            state.stopped = true
            return state.connection
        }
        // As the pool's: never wait here (the last reference may go on an event loop).
        connection?.close().whenComplete { _ in withExtendedLifetime(connection) {} }
    }

    /// Keeps a subscription: dropping it unsubscribes.
    final class Subscription: Sendable {
        let feed: ChangeFeed
        let id: Int
        init(feed: ChangeFeed, id: Int) {
            self.feed = feed
            self.id = id
        }
        deinit { _ = feed.state.withLock { $0.subscribers.removeValue(forKey: id) } }
    }

    /// Delivers other origins' changes of `athletes` to `deliver`. The first subscription connects and LISTENs
    /// before returning (so that nothing committed after it is missed); when that fails, it keeps trying.
    func subscribe(
        athletes: [UUID], origin: UUID, _ deliver: @escaping @Sendable (StoreChange) -> Void
    ) -> Subscription {
        let (id, connect) = state.withLock { state -> (Int, Bool) in
            let id = state.nextID
            state.nextID += 1
            state.subscribers[id] = Subscriber(athletes: Set(athletes), origin: origin, deliver: deliver)
            let connect = state.connection == nil && !state.connecting
            if connect { state.connecting = true }
            return (id, connect)
        }
        if connect { listen() }
        return Subscription(feed: self, id: id)
    }

    /// Connects, LISTENs and watches the connection: when it closes, connects again a second later.
    private func listen() {
        do {
            let connection = try PostgresConnection.connect(
                on: MultiThreadedEventLoopGroup.singleton.next(), configuration: url.configuration, id: 0,
                logger: logger
            ).wait()
            connection.addListener(channel: Self.channel) { [weak self] _, notification in
                self?.received(notification.payload)
            }
            _ = try connection.query(PostgresQuery(unsafeSQL: "LISTEN \(Self.channel)"), logger: logger).wait()
            let stopped = state.withLock { state -> Bool in
                state.connecting = false
                if !state.stopped { state.connection = connection }
                return state.stopped
            }
            if stopped {
                connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
                return
            }
            connection.closeFuture.whenComplete { [weak self] _ in
                guard let self else { return }
                let again = self.state.withLock { state -> Bool in
                    state.connection = nil
                    guard !state.stopped, !state.connecting else { return false }
                    state.connecting = true
                    return true
                }
                if again { self.retry() }
            }
        } catch {
            logger.warning("change notifications: cannot listen (\(ConnectionPool.describe(error))); trying again")
            retry()
        }
    }

    private func retry() {
        DispatchQueue.global().asyncAfter(deadline: .now() + 1) { [weak self] in self?.listen() }
    }

    private func received(_ payload: String) {
        let fields = payload.split(separator: " ")
        guard fields.count == 4, let athlete = UUID(uuidString: String(fields[0])),
            let origin = UUID(uuidString: String(fields[1])), let workout = UUID(uuidString: String(fields[3]))
        else { return }
        let change: StoreChange
        switch fields[2] {
        case "added": change = .added([workout])
        case "deleted": change = .deleted([workout])
        default: return
        }
        let targets = state.withLock { state in
            state.subscribers.values.filter { $0.origin != origin && $0.athletes.contains(athlete) }.map(\.deliver)
        }
        for deliver in targets { deliver(change) }
    }
}
