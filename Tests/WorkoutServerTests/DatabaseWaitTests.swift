import Foundation
import Synchronization
import Testing

@testable import WorkoutServer

/// Requests waiting on the database (a table locked by another client) hold none of the threads that answer requests.
@Suite("requests waiting on the database", .serialized)
struct DatabaseWaitTests {
    /// How many of the waiting reads have been answered.
    final class Answered: Sendable {
        private let count = Atomic<Int>(0)
        var value: Int { count.load(ordering: .acquiring) }
        func add() { count.add(1, ordering: .releasing) }
    }

    // No timing assumed: the table stays locked until /health has answered, so /health answers while every read
    // waits or not at all (a minute's deadline). It is asked on a thread and a socket of its own: the test
    // process's shared pool answered late on two busy cores (8 s in CI's first pass of e77cb22), which timed
    // the test process, not the server.
    @Test(
        "requests waiting on a locked database hold none of the threads that answer requests: /health answers meanwhile",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func requestsWaitingOnTheDatabaseLeaveTheServerAnswering() async throws {
        // No statement time limit: the reads wait for the lock however long the machine takes to answer /health.
        let server = try await TestServer.start(backend: .postgres) {
            $0.tokenCacheLifetime = 600
            $0.statementTimeout = 0
        }
        defer { server.remove() }
        let url = try #require(server.postgresURL)
        let port = try #require(URL(string: server.base)?.port.flatMap { UInt16(exactly: $0) })
        let token = try server.directory.addAthlete(name: "ida").token
        // Known to the server (its token looked up, its store opened) before the table is locked.
        #expect(try await server.send("GET", "/v1/workouts", token: token).status == 200)
        // Another client holds the workouts' table until this test ends its transaction: every read of it waits.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc",
            "BEGIN; LOCK TABLE workout IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(300); COMMIT;",
        ]
        holder.standardError = FileHandle.nullDevice
        try holder.run()
        let lockHolder = "SELECT pid FROM pg_locks WHERE relation = 'workout'::regclass AND mode = 'AccessExclusiveLock' AND granted"
        let release = { @Sendable () async throws in
            _ = try await onOwnThread { try TestPostgres.psql(url, "SELECT pg_terminate_backend(pid) FROM (\(lockHolder)) AS holder") }
            await onOwnThread { holder.waitUntilExit() }
        }
        do {
            let locked = await onOwnThread {
                waitFor(60, every: 0.02) { (try? TestPostgres.psql(url, lockHolder)).map { !$0.isEmpty } ?? false }
            }
            try #require(locked, "the table was not locked: the reads below would not wait")
            // More waiting reads than the machine has cores (the width of Swift's cooperative pool).
            let reads = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
            let answered = Answered()
            try await withThrowingTaskGroup(of: Int.self) { group in
                for _ in 0..<reads {
                    // Each on a client of its own (`timeout` other than the default): waiting reads hold none of the
                    // shared client's few connections, which the suites beside this one use.
                    group.addTask {
                        defer { answered.add() }
                        return try await server.send("GET", "/v1/workouts", token: token, timeout: 300).status
                    }
                }
                do {
                    // The reads reach PostgreSQL and wait there for the lock (else /health answering proves nothing).
                    let waiting = await onOwnThread {
                        waitFor(60, every: 0.02) {
                            (try? TestPostgres.psql(url, "SELECT count(*) FROM pg_locks WHERE relation = 'workout'::regclass AND NOT granted"))
                                .flatMap { Int($0) }.map { $0 > 0 } ?? false
                        }
                    }
                    #expect(waiting, "no read waited on the locked table")
                    let health = try await onOwnThread { try ConnectionLimitTests.health(port, timeout: 60) }
                    let answeredBefore = answered.value
                    #expect(health.code == 200, "/health did not answer while reads waited on the lock (\(health.took))")
                    #expect(answeredBefore == 0, "\(answeredBefore) reads were answered before /health: the lock did not hold")
                } catch {
                    // The reads end only once the lock is gone: released before the group waits for them.
                    try? await release()
                    throw error
                }
                try await release()
                for try await status in group { #expect(status == 200) }
            }
        } catch {
            try? await release()
            throw error
        }
        await server.stop()
    }
}
