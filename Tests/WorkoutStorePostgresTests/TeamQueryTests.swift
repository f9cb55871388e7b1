import Foundation
import Testing
import WorkoutEngine
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutStore
import WorkoutStorePostgres
@_exported import StoreTestSupport

/// A team's activity predicates (answered from the teams' statistics table) find what its athletes' own
/// stores find, in the same order, and forget a deleted workout.
@Suite("team queries", .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct TeamQueryTests {
    @Test func aTeamsActivityQueriesFindWhatItsAthletesStoresFind() throws {
        let database = try TestPostgres.database()
        let athletes = [UUID(), UUID(), UUID()]
        var stores: [WorkoutStore] = []
        var imported: [UUID] = []
        for (athlete, name) in zip(athletes, TwoBackendTests.files) {
            let store = try database.store(athlete: athlete)
            stores.append(store)
            imported.append(try FileImport.run(path: SharedData.fitPath(name), into: store).workout.id)
        }
        let team = try database.teamStore(athletes: athletes)
        let bpm = QuantityUnit.countPerMinute
        let queries = [
            WorkoutQuery(activities: [
                ActivityPredicate(conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(60, bpm))])
            ]),
            WorkoutQuery(activities: [
                ActivityPredicate(
                    activityType: .cycling,
                    conditions: [
                        StatisticCondition(.heartRate, .average, .greaterThan, Quantity(60, bpm)),
                        StatisticCondition(.heartRate, .maximum, .lessThan, Quantity(250, bpm)),
                    ])
            ]),
            WorkoutQuery(
                minimumDuration: 60,
                activities: [
                    ActivityPredicate(conditions: [StatisticCondition(.heartRate, .minimum, .greaterThanOrEqual, Quantity(1, bpm))])
                ]),
        ]
        for query in queries {
            // The athletes' answers merged in the store's order: newest first, ties by id.
            var expected: [Workout] = []
            for store in stores { expected += try store.workouts(matching: query) }
            expected.sort { $0.start != $1.start ? $0.start > $1.start : $0.id.uuidString > $1.id.uuidString }
            #expect(try team.workoutIDs(matching: query) == expected.map(\.id))
            #expect(try team.workouts(matching: query).map(\.id) == expected.map(\.id))
        }
        #expect(!(try team.workoutIDs(matching: queries[0])).isEmpty)
        try stores[0].delete(workout: imported[0])
        #expect(!(try team.workoutIDs(matching: queries[0])).contains(imported[0]))
        #expect(!(try team.workoutIDs(matching: WorkoutQuery(minimumDuration: 0, activities: queries[0].activities))).contains(imported[0]))
    }
}
