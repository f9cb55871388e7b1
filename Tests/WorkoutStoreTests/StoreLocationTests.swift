import Foundation
import GRDB
import Testing
import WorkoutEngine
import WorkoutModel
import WorkoutStore

/// Where the store is when no path is given: $WORKOUT_DB, then the XDG data folder.
@Suite("Store: the default location")
struct StoreLocationTests {
    @Test func defaultLocationFollowsEnvironmentThenXDG() {
        #expect(StoreLocation.defaultPath(environment: ["WORKOUT_DB": "/x/y.sqlite", "HOME": "/h"]) == "/x/y.sqlite")
        #expect(
            StoreLocation.defaultPath(environment: ["XDG_DATA_HOME": "/data", "HOME": "/h"])
                == "/data/workout-engine/workouts.sqlite")
        #expect(
            StoreLocation.defaultPath(environment: ["HOME": "/h"]) == "/h/.local/share/workout-engine/workouts.sqlite")
    }
}
