import Foundation
import Testing
import WorkoutServer

/// Reads routed to a read-only database (`--read-url`) and writes to the primary; a read URL needs a PostgreSQL database.
@Suite("reads routed to the read URL", .serialized)
struct ReadURLTests {
    @Test(.enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
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

    @Test func aReadURLWithoutAPostgresDatabaseIsRefused() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("workout-setup-\(UUID())").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var configuration = ServerConfiguration(dataFolder: folder)
        configuration.readURL = "postgres://reader@127.0.0.1:1/workouts"
        #expect(throws: ServerSetupError.self) { _ = try WorkoutServer(configuration: configuration) }
    }
}
