import Dispatch
import Foundation
import NIOPosix
import Synchronization
import Testing
import WorkoutModel
import WorkoutStore
import WorkoutStorePostgres

/// The pool's connections when PostgreSQL ends them (a restart, `pg_terminate_backend`): the next call connects
/// again instead of waiting forever on a closed connection.
@Suite("PostgreSQL connection pool", .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh"))
struct ConnectionPoolTests {
    @Test func aStoreAnswersAgainAfterPostgreSQLEndedItsIdleConnections() throws {
        let database = try TestPostgres.ownDatabase("pool")
        defer { TestPostgres.drop(database) }
        let (name, url, base) = database
        let store = try PostgresWorkoutDatabase(url: url, poolSize: 4).store(athlete: UUID())
        #expect(try store.workouts(matching: WorkoutQuery()).isEmpty)

        try TestPostgres.psql(base, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = '\(name)'")
        // Each call runs on its own thread: before the fix the first never returned (a query on the closed
        // connection). One call may still fail (the server's notice can arrive while it runs); the next answers.
        for attempt in 1...2 {
            let answered = DispatchSemaphore(value: 0)
            let result = Mutex<Result<Int, StoreError>?>(nil)
            DispatchQueue.global().async {
                let outcome = Result { () throws(StoreError) -> Int in try store.workouts(matching: WorkoutQuery()).count }
                result.withLock { $0 = outcome }
                answered.signal()
            }
            guard answered.wait(timeout: .now() + 60) == .success else {
                Issue.record("call \(attempt) did not return within 60 s after PostgreSQL ended the connections")
                return
            }
            if attempt == 2 {
                let count = try #require(result.withLock { $0 })
                #expect(try count.get() == 0, "the store connects again and answers")
            }
        }
    }

    /// Holds a database and its store so that the last references can be dropped on a chosen thread.
    final class Holder: Sendable {
        let slot: Mutex<(PostgresWorkoutDatabase, WorkoutStore)?>
        init(_ value: (PostgresWorkoutDatabase, WorkoutStore)) { slot = Mutex(value) }
    }

    @Test func aStoreReleasedOnAnEventLoopThreadDoesNotWaitThere() async throws {
        let url = try #require(TestPostgres.url, "WORKOUT_TEST_POSTGRES_URL is not set: run scripts/test.sh")
        let holder = try { () throws -> Holder in
            let database = try PostgresWorkoutDatabase(url: url, poolSize: 2)
            let store = try database.store(athlete: UUID())
            // One call leaves an idle connection in the pool, which its deinit must close.
            #expect(try store.workouts(matching: WorkoutQuery()).isEmpty)
            return Holder((database, store))
        }()
        // A server's last reference can go on an event loop thread (a handler finishing during shutdown); the
        // pool's deinit waited on the close there, which NIO traps on, ending the whole test process.
        try await MultiThreadedEventLoopGroup.singleton.next().submit { holder.slot.withLock { $0 = nil } }.get()
        #expect(holder.slot.withLock { $0 == nil })
    }
}
