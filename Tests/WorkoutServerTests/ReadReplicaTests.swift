import Foundation
import Testing
import WorkoutServer

/// A streaming-replication hot standby as the read URL answers the reads, and lags while its replay is paused.
@Suite("a streaming replica as the read URL", .serialized)
struct ReadReplicaTests {
    /// Polls `condition` every 100 ms for up to `seconds`; whether it came true.
    static func eventually(_ seconds: Double, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(100))
        }
        return try await condition()
    }


    @Test(.enabled(if: TestPostgres.replicaAvailable, "no WORKOUT_TEST_POSTGRES_REPLICA_URL: run scripts/test.sh"))
    func aStreamingReplicaAnswersTheReadsAndLagsWhileItsReplayIsPaused() async throws {
        let replicaBase = try #require(
            TestPostgres.replicaURL, "CI=true but WORKOUT_TEST_POSTGRES_REPLICA_URL is not set: run scripts/test.sh")
        let url = try TestPostgres.freshDatabase()
        let name = String(url[url.index(after: try #require(url.lastIndex(of: "/")))...])
        let replica = try TestPostgres.url(replicaBase, database: name)
        _ = try ServerDirectory(postgresURL: url)  // the schema, on the primary
        let migrations = try TestPostgres.psql(url, "SELECT count(*) FROM schema_migration")
        #expect(
            try await Self.eventually(30) {
                (try? TestPostgres.psql(replica, "SELECT count(*) FROM schema_migration")) == migrations
            },
            "the new database and its schema reach the replica")
        #expect(try TestPostgres.psql(replica, "SELECT pg_is_in_recovery()") == "t", "a hot standby")
        let server = try await TestServer.start(backend: .postgres, postgresURL: url, readURL: replica)
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "dee").token
        func listed() async throws -> Int {
            ((try await server.send("GET", "/v1/workouts", token: token).json["workouts"] as? [Any]) ?? []).count
        }
        let first = try await server.send(
            "POST", "/v1/workouts", token: token, body: try SharedData.bytes("fp_sample-activity-indoor-trainer"))
        #expect(first.status == 201, "\(first.text)")
        #expect(try await Self.eventually(30) { try await listed() == 1 }, "the upload is listed once replicated")

        // Replay paused: the primary takes a second upload, the reads (from the replica) do not see it yet.
        try TestPostgres.psql(replica, "SELECT pg_wal_replay_pause()")
        let second = try await server.send(
            "POST", "/v1/workouts", token: token, body: try SharedData.bytes("fp_activity-small-fenix2-run"))
        #expect(second.status == 201, "\(second.text)")
        let id = try #require((second.json["workout"] as? [String: Any])?["id"] as? String)
        try await Task.sleep(for: .milliseconds(500))
        let lagging = try await listed()
        let shown = try await server.send("GET", "/v1/workouts/\(id)", token: token).status
        try TestPostgres.psql(replica, "SELECT pg_wal_replay_resume()")
        #expect(lagging == 1, "reads come from the paused replica")
        #expect(shown == 404, "the new workout is not on the replica yet")
        #expect(try await Self.eventually(30) { try await listed() == 2 }, "replay resumed: both are listed")
        #expect(try await server.send("GET", "/v1/workouts/\(id)/report", token: token).status == 200)
        await server.stop()
    }
}
