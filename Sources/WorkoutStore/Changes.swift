import Foundation
import WorkoutEngine

/// A change to the stored workouts, as observers see it.
public enum StoreChange: Sendable, Hashable {
    case added([UUID])
    case deleted([UUID])
}

extension WorkoutStore {
    /// Observer query: every change to the stored workouts from now on.
    ///
    /// What is seen depends on the backend. SQLite: the changes made through this store instance only;
    /// another instance or process writing the same file is not seen. PostgreSQL: also every change that
    /// other store instances and processes (a second server) commit for the same athlete(s), delivered
    /// through LISTEN/NOTIFY once committed; changes committed while the notification connection is being
    /// re-established after PostgreSQL went away are not delivered (an anchored query catches up).
    public func changes() -> AsyncStream<StoreChange> { subscribeToChanges() }
}
