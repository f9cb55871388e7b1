import Foundation
import Testing
import WorkoutEngine
import WorkoutImport
import WorkoutModel
import WorkoutReplay
import WorkoutStore
import WorkoutStorePostgres

/// Observers and live queries across connections: a change committed through one store (another server, its
/// own pool) reaches the observers of every other store of the same athlete through LISTEN/NOTIFY.
@Suite("changes across connections (LISTEN/NOTIFY)", .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct ChangeFeedTests {
    /// Collects `count` elements of `stream`, or what came within `seconds` (a broken feed fails, never hangs).
    static func collect<Stream: AsyncSequence & Sendable>(
        _ stream: Stream, count: Int, within seconds: Double = 60
    ) -> Task<[Stream.Element], Never> where Stream.Element: Sendable {
        let task = Task {
            var got: [Stream.Element] = []
            do {
                for try await element in stream {
                    got.append(element)
                    if got.count == count { break }
                }
            } catch {}
            return got
        }
        Task {
            try? await Task.sleep(for: .seconds(seconds))
            task.cancel()
        }
        return task
    }

    @Test func aSaveThroughAnotherServerReachesObserversAndAnchoredLiveQueries() async throws {
        let url = try #require(TestPostgres.url, "WORKOUT_TEST_POSTGRES_URL is not set: run scripts/test.sh")
        let athlete = UUID()
        // Two databases = two pools, as two server processes would have.
        let writerDatabase = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        let readerDatabase = try PostgresWorkoutDatabase(url: url, poolSize: 2)
        let writer = try writerDatabase.store(athlete: athlete)
        let reader = try readerDatabase.store(athlete: athlete)
        let stranger = try readerDatabase.store(athlete: UUID())

        let changes = Self.collect(reader.changes(), count: 4)
        // The live query's first answer (the state when it started) comes before the writes.
        let (started, signal) = AsyncStream.makeStream(of: Void.self)
        let updates = reader.anchoredWorkoutUpdates()
        let live = Task {
            var got: [AnchoredWorkouts] = []
            do {
                for try await update in updates {
                    got.append(update)
                    signal.yield()
                    if got.count == 3 { break }
                }
            } catch {}
            signal.finish()
            return got
        }
        Task {
            try? await Task.sleep(for: .seconds(60))
            live.cancel()
        }
        for await _ in started { break }
        let strangers = Self.collect(stranger.changes(), count: 1, within: 60)

        let first = try FileImport.run(path: SharedData.fitPath(TwoBackendTests.files[0]), into: writer).workout
        try writer.delete(workout: first.id)
        // The reader's own save: seen once (published by the store itself, its notification not delivered back).
        let second = try FileImport.run(path: SharedData.fitPath(TwoBackendTests.files[1]), into: reader).workout
        try writer.delete(workout: second.id)

        #expect(await changes.value == [.added([first.id]), .deleted([first.id]), .added([second.id]), .deleted([second.id])])
        let answers = await live.value
        // The state when the query started (nothing), then what the other server's save and delete brought
        // (the second answer may already hold both: the query runs again after each notification).
        #expect(answers.count == 3)
        #expect(answers.first?.added.isEmpty == true && answers.first?.deleted.isEmpty == true)
        #expect(answers.dropFirst().flatMap(\.deleted).contains(first.id))
        #expect(try reader.workout(id: second.id) == nil)
        strangers.cancel()
        #expect(await strangers.value.isEmpty, "another athlete's store hears nothing")
    }

    @Test func aJournaledSessionFinishedElsewhereReachesObservers() async throws {
        let url = try #require(TestPostgres.url, "WORKOUT_TEST_POSTGRES_URL is not set: run scripts/test.sh")
        let athlete = UUID()
        let writer = try PostgresWorkoutDatabase(url: url, poolSize: 2).store(athlete: athlete)
        let reader = try PostgresWorkoutDatabase(url: url, poolSize: 2).store(athlete: athlete)
        let changes = Self.collect(reader.changes(), count: 1)
        let start = Date(timeIntervalSinceReferenceDate: 800_000_000)
        let recording = try writer.beginRecording(
            configuration: WorkoutConfiguration(activityType: .running), clock: ManualClock(start), commitInterval: 0)
        try recording.session.start(at: start)
        try recording.builder.add([QuantitySample(.heartRate, 120, at: start, source: SourceDevice(name: "strap"))])
        try recording.session.end(at: start.addingTimeInterval(10))
        let workout = try recording.finish()
        #expect(await changes.value == [.added([workout.id])])
    }

    @Test func theFeedListensAgainAfterPostgreSQLEndedItsConnection() async throws {
        let database = try TestPostgres.ownDatabase("feed")
        defer { TestPostgres.drop(database) }
        let (name, url, base) = database
        let athlete = UUID()
        let writer = try PostgresWorkoutDatabase(url: url, poolSize: 2).store(athlete: athlete)
        let reader = try PostgresWorkoutDatabase(url: url, poolSize: 2).store(athlete: athlete)
        let changes = Self.collect(reader.changes(), count: 1, within: 60)
        // The feed's connection: the one whose last statement is its LISTEN.
        let listening =
            "SELECT coalesce(string_agg(pid::text, ','), '') FROM pg_stat_activity WHERE datname = '\(name)' "
            + "AND query LIKE 'LISTEN %'"
        #expect(await waitUntil(20) { ((try? TestPostgres.psql(base, listening)) ?? "") != "" }, "the feed never listened")
        let before = try TestPostgres.psql(base, listening)
        try TestPostgres.psql(
            base, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)' AND pid <> pg_backend_pid()")
        // The feed connects again a second after its connection closed (a new LISTEN connection); the writer's pool
        // on its next call.
        #expect(
            await waitUntil(20, every: .milliseconds(100)) {
                let now = (try? TestPostgres.psql(base, listening)) ?? ""
                return now != "" && now != before
            }, "the feed did not listen again")
        let file = SharedData.fitPath(TwoBackendTests.files[0])
        let saved = try (try? FileImport.run(path: file, into: writer)) ?? FileImport.run(path: file, into: writer)
        #expect(await changes.value == [.added([saved.workout.id])])
    }
}
