import Foundation
import WorkoutEngine

/// A change to the stored workouts, as observers see it.
public enum StoreChange: Sendable, Hashable {
    case added([UUID])
    case deleted([UUID])
}

extension WorkoutStore {
    /// Observer query: every change made through this store from now on.
    /// Changes made through this store instance are seen; another process writing the same file is not.
    public func changes() -> AsyncStream<StoreChange> { broadcaster.subscribe() }
}
