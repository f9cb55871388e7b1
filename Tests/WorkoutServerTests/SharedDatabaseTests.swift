import Foundation
import Testing
import WorkoutServer

/// Several servers on one PostgreSQL database see the same athletes, tokens, workouts and sessions' owners (all in
/// the database, nothing of the servers' own).
@Suite("servers sharing one PostgreSQL database", .serialized)
struct SharedDatabaseTests {
    @Test(.enabled(if: TestPostgres.available, "no WORKOUT_TEST_POSTGRES_URL: run scripts/test.sh (it starts one)"))
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
        _ = await waitUntil(60) { (try? await second.send("GET", "/v1/me", token: annToken).status) == 401 }
        let revoked = try await second.send("GET", "/v1/me", token: annToken)
        #expect(revoked.status == 401 && revoked.errorCode == "unknown_token", "\(revoked.text)")
        // Tokens are stored only as hashes in the database too.
        let stored = try TestPostgres.psql(url, "SELECT string_agg(hash, ',') FROM token")
        #expect(!stored.contains(annToken) && !stored.contains(bea) && !stored.contains(coach))
        await first.stop()
        await second.stop()
    }
}
