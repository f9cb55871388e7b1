import Foundation
import Testing
import WorkoutEngine
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutStore
import WorkoutStorePostgres
@_exported import StoreTestSupport

/// The test PostgreSQL of scripts/test.sh (WorkoutTestSupport): missing under CI=true is a failure, never a
/// silent skip.
extension TestPostgres {
    /// A new database of the test's own in the test cluster (ending its connections or changing its schema
    /// disturbs no other suite): its name, its URL, and the cluster's URL; `drop` removes it.
    static func ownDatabase(_ prefix: String) throws -> (name: String, url: String, base: String) {
        let base = try #require(url, "WORKOUT_TEST_POSTGRES_URL is not set: run scripts/test.sh")
        let name = prefix + "_" + UUID().uuidString.prefix(8).lowercased()
        var components = try #require(URLComponents(string: base))
        components.path = "/" + name
        let own = try #require(components.string)
        try TestPostgres.psql(base, "CREATE DATABASE \(name)")
        return (name, own, base)
    }

    static func drop(_ database: (name: String, url: String, base: String)) {
        _ = try? TestPostgres.psql(database.base, "DROP DATABASE IF EXISTS \(database.name) WITH (FORCE)")
    }
}

/// A new, empty store of each backend (StoreTestSupport's `StoreFixture`): a SQLite file, or a new athlete's
/// partitions in the test database.
func freshStore(_ backend: Backend) throws -> (WorkoutStore, cleanup: () -> Void) {
    let fixture = try StoreFixture(backend)
    return (fixture.store, fixture.cleanup)
}

/// One test suite, two backends: the same calls on SQLite and PostgreSQL give the same answers.
@Suite("store on SQLite and PostgreSQL", .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct TwoBackendTests {
    static let files = ["fp_sample-activity-indoor-trainer", "al2_920xt-run", "mk_triathlon_summary_first"]

    /// Everything a store answers about a set of imported files, as comparable values.
    struct Answers: Equatable {
        var all: [Workout]
        var ascendingIDs: [UUID]
        var cyclingOver100: [UUID]
        var runningHeartRateAndDuration: [UUID]
        var heartRate: [QuantitySample]
        var firstWorkoutSamples: [QuantitySample]
        var route: [RoutePoint]
        var anchored: AnchoredWorkouts
        var afterDelete: AnchoredWorkouts
        var remaining: [UUID]
    }

    static func answers(_ store: WorkoutStore) throws -> Answers {
        var imported: [UUID] = []
        for name in files {
            imported.append(try FileImport.run(path: SharedData.fitPath(name), into: store).workout.id)
        }
        let all = try store.workouts(matching: WorkoutQuery())
        let anchored = try store.anchoredWorkouts(since: nil)
        try store.delete(workout: imported[0])
        let afterDelete = try store.anchoredWorkouts(since: anchored.anchor)
        return Answers(
            all: all,
            ascendingIDs: try store.workoutIDs(matching: WorkoutQuery(ascending: true)),
            cyclingOver100: try store.workoutIDs(
                matching: WorkoutQuery(activities: [
                    ActivityPredicate(
                        activityType: .cycling,
                        conditions: [StatisticCondition(.heartRate, .average, .greaterThan, Quantity(100, .countPerMinute))])
                ])),
            runningHeartRateAndDuration: try store.workoutIDs(
                matching: WorkoutQuery(
                    minimumDuration: 60,
                    activities: [
                        ActivityPredicate(
                            activityType: .running,
                            conditions: [
                                StatisticCondition(.heartRate, .maximum, .greaterThanOrEqual, Quantity(2, .countPerSecond)),
                                StatisticCondition(.heartRate, .average, .lessThan, Quantity(250, .countPerMinute)),
                            ])
                    ])),
            heartRate: try store.samples(matching: SampleQuery(type: .heartRate, limit: 5000)),
            firstWorkoutSamples: try store.samples(workout: imported[1]),
            route: try store.route(workout: imported[1]),
            anchored: anchored, afterDelete: afterDelete,
            remaining: try store.workoutIDs(matching: WorkoutQuery()))
    }

    @Test func importsQueriesAnchorsAndDeletesGiveTheSameAnswersOnBothBackends() throws {
        let (sqlite, cleanup) = try freshStore(.sqlite)
        defer { cleanup() }
        let (postgres, _) = try freshStore(.postgres)
        let expected = try Self.answers(sqlite)
        let found = try Self.answers(postgres)
        #expect(expected.all.count == 3 && expected.afterDelete.deleted.count == 1 && !expected.heartRate.isEmpty)
        #expect(!expected.cyclingOver100.isEmpty && !expected.route.isEmpty)
        #expect(found.all == expected.all)
        #expect(found.ascendingIDs == expected.ascendingIDs)
        #expect(found.cyclingOver100 == expected.cyclingOver100)
        #expect(found.runningHeartRateAndDuration == expected.runningHeartRateAndDuration)
        #expect(found.heartRate == expected.heartRate)
        #expect(found.firstWorkoutSamples == expected.firstWorkoutSamples)
        #expect(found.route == expected.route)
        #expect(found.anchored == expected.anchored)
        #expect(found.afterDelete == expected.afterDelete)
        #expect(found.remaining == expected.remaining)
    }

    @Test(arguments: Backend.allCases)
    func errorsAreTheSameTypedStoreErrors(_ backend: Backend) throws {
        let (store, cleanup) = try freshStore(backend)
        defer { cleanup() }
        let result = try FileImport.run(path: SharedData.fitPath(Self.files[0]), into: store)
        #expect(throws: StoreError.workoutExists(result.workout.id)) { try store.save(result.workout) }
        let missing = UUID()
        #expect(throws: StoreError.workoutNotFound(missing)) { try store.delete(workout: missing) }
        #expect(try store.workout(id: missing) == nil)
        #expect(throws: StoreError.sessionNotFound(missing)) { try store.recoverActiveSession(id: missing) }
    }

    @Test(arguments: Backend.allCases)
    func aJournaledSessionRecoversEveryCommittedSampleAndFinishes(_ backend: Backend) throws {
        let (store, cleanup) = try freshStore(backend)
        defer { cleanup() }
        let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
        let clock = ManualClock(start)
        let strap = SourceDevice(name: "strap")
        let recording = try store.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: clock, commitInterval: 0)
        try recording.session.start(at: start)
        var added: [QuantitySample] = []
        for second in 0..<1500 {
            let sample = QuantitySample(.heartRate, Double(110 + second % 50), at: start.addingTimeInterval(Double(second)), source: strap)
            clock.set(start.addingTimeInterval(Double(second)))
            _ = try recording.builder.add([sample])
            added.append(sample)
            if second % 100 == 99 { try recording.commit() }
        }
        // Uncommitted samples are not recovered.
        _ = try recording.builder.add([QuantitySample(.heartRate, 99, at: start.addingTimeInterval(1500), source: strap)])
        #expect(try store.journaledSessions().map(\.id) == [recording.id])
        #expect(try store.workouts(matching: WorkoutQuery()).isEmpty, "a recording is not a workout yet")
        let recovered = try #require(try store.recoverActiveSession(id: recording.id, clock: clock, commitInterval: 0))
        #expect(try recovered.committedSamples() == added)
        clock.set(start.addingTimeInterval(1501))
        try recovered.session.stop(at: start.addingTimeInterval(1501))
        try recovered.session.end(at: start.addingTimeInterval(1501))
        let workout = try recovered.finish()
        #expect(try store.workout(id: workout.id) == workout)
        #expect(try store.samples(workout: workout.id) == added)
        #expect(try store.journaledSessions().isEmpty)
    }

    @Test func anAthletesStoreSeesOnlyItsOwnPartition() throws {
        let database = try TestPostgres.database()
        let alice = try database.store(athlete: UUID())
        let bob = try database.store(athlete: UUID())
        let result = try FileImport.run(path: SharedData.fitPath(Self.files[0]), into: alice)
        #expect(try bob.workout(id: result.workout.id) == nil)
        #expect(try !bob.containsWorkout(id: result.workout.id) && alice.containsWorkout(id: result.workout.id))
        #expect(try bob.workouts(matching: WorkoutQuery()).isEmpty)
        #expect(try bob.samples(matching: SampleQuery(type: .heartRate)).isEmpty)
        #expect(throws: StoreError.workoutNotFound(result.workout.id)) { try bob.delete(workout: result.workout.id) }
        // The same file for Bob is his own workout, with the same content-derived id.
        let again = try FileImport.run(path: SharedData.fitPath(Self.files[0]), into: bob)
        #expect(again.workout.id == result.workout.id)
        #expect(try alice.workouts(matching: WorkoutQuery()).count == 1)
        #expect(alice.path.contains("postgres://") && !alice.path.contains("password"))
    }

    @Test func aTeamStoreReadsItsAthletesInOneQueryAndWritesNothing() throws {
        let database = try TestPostgres.database()
        let (alice, bob, carol) = (UUID(), UUID(), UUID())
        let first = try FileImport.run(path: SharedData.fitPath(Self.files[0]), into: try database.store(athlete: alice))
        let second = try FileImport.run(path: SharedData.fitPath(Self.files[1]), into: try database.store(athlete: bob))
        _ = try FileImport.run(path: SharedData.fitPath(Self.files[2]), into: try database.store(athlete: carol))
        let team = try database.teamStore(athletes: [alice, bob])
        #expect(Set(try team.workoutIDs(matching: WorkoutQuery())) == [first.workout.id, second.workout.id])
        #expect(try team.workouts(matching: WorkoutQuery()).map(\.id).sorted { $0.uuidString < $1.uuidString }
            == [first.workout.id, second.workout.id].sorted { $0.uuidString < $1.uuidString })
        #expect(try team.workout(id: second.workout.id) == second.workout)
        #expect(!(try team.samples(matching: SampleQuery(type: .heartRate, limit: 10))).isEmpty)
        #expect(throws: StoreError.self) { try team.delete(workout: first.workout.id) }
        #expect(try database.store(athlete: alice).workout(id: first.workout.id) != nil, "the refused delete changed nothing")
        #expect(throws: StoreError.invalidQuery("a team store needs at least one athlete")) { try database.teamStore(athletes: []) }
    }
}
