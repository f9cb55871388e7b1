import Foundation
import Testing
import WorkoutServer

/// Several servers on one PostgreSQL database (athletes, tokens and sessions' owners in the database, nothing
/// of the server's own) and reads routed to a read replica (`--read-url`).
@Suite("server scale-out on PostgreSQL", .serialized)
struct ScaleOutTests {
    static let enabled = TestPostgres.available

    @Test(.enabled(if: enabled, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func anAthleteAddedHasItsPartitionsBeforeItsFirstRequest() async throws {
        let url = try TestPostgres.freshDatabase()
        let server = try await TestServer.start(backend: .postgres, postgresURL: url)
        defer { server.remove() }
        let (athlete, token) = try server.directory.addAthlete(name: "cal")
        let id = athlete.id.uuidString.lowercased()
        let suffix = id.replacingOccurrences(of: "-", with: "")
        let found = try TestPostgres.psql(
            url,
            "SELECT (SELECT count(*) FROM athlete_partition WHERE athlete = '\(id)') || ' ' || "
                + "(to_regclass('workout_\(suffix)') IS NOT NULL) || ' ' || (to_regclass('journal_session_\(suffix)') IS NOT NULL)")
        #expect(found == "1 true true", "the athlete's partitions after `athletes add`: \(found)")
        // The server finds them (its first live session opens without creating anything).
        let opened = try await server.json("PUT", "/v1/sessions/\(UUID().uuidString)", token: token, ["activityType": "running"])
        #expect(opened.status == 201, "\(opened.text)")
        await server.stop()
    }

    @Test(.enabled(if: enabled, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func twoServersOnOneDatabaseSeeTheSameAthletesTokensAndWorkouts() async throws {
        let url = try TestPostgres.freshDatabase()
        let first = try await TestServer.start(backend: .postgres, postgresURL: url)
        let second = try await TestServer.start(backend: .postgres, postgresURL: url)
        defer {
            first.remove()
            second.remove()
        }
        // A token created through the first server's directory is known to the second, and the other way round.
        let (ann, annToken) = try first.directory.addAthlete(name: "ann", team: "club")
        let bea = try second.directory.addAthlete(name: "bea", team: "club").token
        for server in [first, second] {
            let me = try await server.send("GET", "/v1/me", token: annToken)
            #expect(me.status == 200 && me.json["athlete"] as? String == ann.name, "\(me.text)")
            #expect(try await server.send("GET", "/v1/me", token: bea).json["athlete"] as? String == "bea")
        }
        #expect(try second.directory.athletes().map(\.name) == ["ann", "bea"])
        #expect(throws: ServerSetupError.athleteExists("ann")) { try second.directory.addAthlete(name: "ann") }
        // The athletes' directory is not in the data folders: the servers keep nothing of their own.
        for server in [first, second] {
            #expect(!FileManager.default.fileExists(atPath: server.folder + "/directory.sqlite"))
        }
        // An upload through one is listed by the other; a coach token made through one reads through the other.
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let uploaded = try await first.send("POST", "/v1/workouts", token: annToken, body: fit)
        #expect(uploaded.status == 201, "\(uploaded.text)")
        let id = try #require((uploaded.json["workout"] as? [String: Any])?["id"] as? String)
        #expect(try await second.send("GET", "/v1/workouts/\(id)", token: annToken).status == 200)
        let coach = try first.directory.issueCoachToken(team: "club")
        #expect(try await second.send("GET", "/v1/workouts/\(id)", token: coach).status == 200)
        // A live session opened through one belongs to its athlete on both.
        let session = UUID().uuidString
        let opened = try await first.json("PUT", "/v1/sessions/\(session)", token: annToken, ["activityType": "running"])
        #expect(opened.status == 201, "\(opened.text)")
        let stolen = try await second.json("PUT", "/v1/sessions/\(session)", token: bea, ["activityType": "running"])
        #expect(stolen.status == 403 && stolen.errorCode == "session_of_another_athlete", "\(stolen.text)")
        // A token revoked through one is refused by the other once its token cache lifetime (1 s) has passed.
        try first.directory.revokeTokens(athlete: "ann")
        _ = await waitUntil(10) { (try? await second.send("GET", "/v1/me", token: annToken).status) == 401 }
        let revoked = try await second.send("GET", "/v1/me", token: annToken)
        #expect(revoked.status == 401 && revoked.errorCode == "unknown_token", "\(revoked.text)")
        // Tokens are stored only as hashes in the database too.
        let stored = try TestPostgres.psql(url, "SELECT string_agg(hash, ',') FROM token")
        #expect(!stored.contains(annToken) && !stored.contains(bea) && !stored.contains(coach))
        await first.stop()
        await second.stop()
    }

    @Test(.enabled(if: enabled, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
    func readsGoToTheReadURLAndWritesToTheDatabase() async throws {
        let url = try TestPostgres.freshDatabase()
        // The database's schema first (the server on --db migrates it), then a role that may only read it: the
        // read URL connects as that role, so a write routed there would fail, and cutting it off shows which
        // requests read through it.
        _ = try ServerDirectory(postgresURL: url)
        let role = "reader_" + UUID().uuidString.prefix(8).lowercased()
        try TestPostgres.psql(url, "CREATE ROLE \(role) LOGIN")
        try TestPostgres.psql(url, "GRANT SELECT ON ALL TABLES IN SCHEMA public TO \(role)")
        try TestPostgres.psql(url, "ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT SELECT ON TABLES TO \(role)")
        let readURL = try #require(
            url.range(of: "://postgres@").map { url.replacingCharacters(in: $0, with: "://\(role)@") })
        let server = try await TestServer.start(backend: .postgres, postgresURL: url, readURL: readURL)
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "cy").token
        let fit = try SharedData.bytes("fp_sample-activity-indoor-trainer")
        let uploaded = try await server.send("POST", "/v1/workouts", token: token, body: fit)
        #expect(uploaded.status == 201, "\(uploaded.text)")
        let id = try #require((uploaded.json["workout"] as? [String: Any])?["id"] as? String)
        let listed = try await server.send("GET", "/v1/workouts", token: token)
        #expect((listed.json["workouts"] as? [Any])?.count == 1, "\(listed.text)")
        #expect(try await server.send("GET", "/v1/workouts/\(id)", token: token).status == 200)
        let samples = try await server.send("GET", "/v1/samples?workout=\(id)&limit=3", token: token)
        #expect((samples.json["samples"] as? [Any])?.count == 3, "\(samples.text)")
        #expect(try await server.send("GET", "/v1/workouts/\(id)/report", token: token).status == 200)
        #expect(try await server.send("GET", "/ready", token: nil).status == 200)

        // The read role cut off: reads fail (503), writes and live sessions go on.
        try TestPostgres.psql(url, "ALTER ROLE \(role) NOLOGIN")
        try TestPostgres.psql(url, "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = '\(role)'")
        let cutOff = try await server.send("GET", "/v1/workouts", token: token)
        #expect(cutOff.status == 503 && cutOff.errorCode == "unavailable", "\(cutOff.text)")
        #expect(try await server.send("GET", "/v1/workouts/\(id)", token: token).status == 503)
        #expect(try await server.send("GET", "/ready", token: nil).status == 503)
        let other = try SharedData.bytes("fp_activity-small-fenix2-run")
        let written = try await server.send("POST", "/v1/workouts", token: token, body: other)
        #expect(written.status == 201, "\(written.text)")
        let session = UUID().uuidString
        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"]).status == 201)
        let batch = try await server.json(
            "POST", "/v1/sessions/\(session)/batches", token: token,
            heartRateBatch(seq: 1, start: Date(), count: 3, startSession: true))
        #expect(batch.status == 200 && batch.json["ack"] as? Int == 1, "\(batch.text)")
        await server.stop()
    }

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

    @Test func aReadURLWithoutAPostgresDatabaseIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-setup-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ServerConfiguration(dataFolder: folder)
        configuration.readURL = "postgres://reader@127.0.0.1:1/workouts"
        #expect(throws: ServerSetupError.self) { _ = try WorkoutServer(configuration: configuration) }
    }
}
