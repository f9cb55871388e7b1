import Foundation
#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
import Testing

@testable import WorkoutServer

/// Requests waiting on the database (a table locked by another client) hold none of the threads that answer requests.
@Suite("requests waiting on the database", .serialized)
struct DatabaseWaitTests {
    @Test(
        "requests waiting on a locked database hold none of the threads that answer requests: /health answers meanwhile",
        .enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func requestsWaitingOnTheDatabaseLeaveTheServerAnswering() async throws {
        let server = try await TestServer.start(backend: .postgres) { $0.tokenCacheLifetime = 600 }
        defer { server.remove() }
        let url = try #require(server.postgresURL)
        let token = try server.directory.addAthlete(name: "ida").token
        // Known to the server (its token looked up, its store opened) before the table is locked.
        #expect(try await server.send("GET", "/v1/workouts", token: token).status == 200)
        // Another client holds the workouts' table for four seconds: every read of it waits that long.
        let holder = Process()
        holder.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        holder.arguments = [
            "psql", url, "-v", "ON_ERROR_STOP=1", "-qAtc",
            "BEGIN; LOCK TABLE workout IN ACCESS EXCLUSIVE MODE; SELECT pg_sleep(4); COMMIT;",
        ]
        try holder.run()
        defer { holder.waitUntilExit() }
        var locked = false
        for _ in 0..<150 where !locked {
            locked = try TestPostgres.psql(
                url,
                "SELECT count(*) FROM pg_locks WHERE relation = 'workout'::regclass AND mode = 'AccessExclusiveLock' AND granted"
            ) == "1"
            if !locked { try await Task.sleep(for: .milliseconds(20)) }
        }
        try #require(locked, "the table was not locked: the reads below would not wait")
        let started = ContinuousClock.now
        // More waiting reads than the machine has cores (the width of Swift's cooperative pool).
        let reads = 2 * ProcessInfo.processInfo.activeProcessorCount + 2
        try await withThrowingTaskGroup(of: Int.self) { group in
            for _ in 0..<reads {
                group.addTask { try await server.send("GET", "/v1/workouts", token: token).status }
            }
            try await Task.sleep(for: .milliseconds(300))
            // On a client of its own: the shared one keeps at most a few connections to a host, all taken by the reads.
            let client = URLSession(configuration: .ephemeral)
            let health = try #require(URL(string: server.base + "/health"))
            let (_, response) = try await client.data(from: health)
            let answeredAfter = ContinuousClock.now - started
            #expect((response as? HTTPURLResponse)?.statusCode == 200)
            #expect(answeredAfter < .seconds(3), "/health took \(answeredAfter) while reads waited on the lock")
            for try await status in group { #expect(status == 200) }
            // The reads did wait for the lock (else /health answering proves nothing).
            #expect(ContinuousClock.now - started > .seconds(2), "the reads did not wait on the locked table")
        }
        // The lock's holder ends (its wait on a thread of its own, not on the cooperative pool).
        await onOwnThread { holder.waitUntilExit() }
        await server.stop()
    }
}
